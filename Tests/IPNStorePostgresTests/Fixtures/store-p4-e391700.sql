-- A PostgreSQL store written by ipnd e391700 (migrations p1 to p4: seqs taken under the event
-- lock as each event was inserted): pg_dump --inserts --no-owner --no-privileges of a database
-- that daemon served, with targets app (never reachable: every delivery pending) and ledger
-- (every delivery made), after seven notifications sent by its own ipnd simulate: unlimint
-- OLD-A NEW, COMPLETED, REFUNDED; OLD-B; citcon OLD-C; juspay OLD-D; ipay88 OLD-E.
--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: dedup_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dedup_keys (
    provider text NOT NULL COLLATE pg_catalog."C",
    account text NOT NULL COLLATE pg_catalog."C",
    dedup_key text NOT NULL COLLATE pg_catalog."C",
    notification_id bigint NOT NULL
);


--
-- Name: deliveries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.deliveries (
    id bigint NOT NULL,
    target text NOT NULL COLLATE pg_catalog."C",
    event_seq bigint NOT NULL,
    order_id bigint NOT NULL,
    state text NOT NULL COLLATE pg_catalog."C",
    attempts integer DEFAULT 0 NOT NULL,
    first_attempt_at text COLLATE pg_catalog."C",
    last_attempt_at text COLLATE pg_catalog."C",
    last_status integer,
    last_error text,
    next_attempt_at text COLLATE pg_catalog."C",
    delivered_at text COLLATE pg_catalog."C",
    lease_owner text,
    lease_until text COLLATE pg_catalog."C",
    created_at text NOT NULL COLLATE pg_catalog."C"
);


--
-- Name: deliveries_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.deliveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: deliveries_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.deliveries_id_seq OWNED BY public.deliveries.id;


--
-- Name: delivery_targets; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.delivery_targets (
    name text NOT NULL COLLATE pg_catalog."C",
    paused_at text,
    paused_reason text
);


--
-- Name: events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.events (
    seq bigint NOT NULL,
    id text NOT NULL,
    type text NOT NULL COLLATE pg_catalog."C",
    occurred_at text NOT NULL COLLATE pg_catalog."C",
    provider text NOT NULL COLLATE pg_catalog."C",
    account text NOT NULL COLLATE pg_catalog."C",
    order_id bigint NOT NULL,
    order_ref text NOT NULL COLLATE pg_catalog."C",
    order_json text NOT NULL,
    from_state text,
    to_state text NOT NULL,
    flag text,
    notification_id bigint,
    provider_status text
);


--
-- Name: events_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.events_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: heartbeat; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.heartbeat (
    node text NOT NULL,
    at text NOT NULL
);


--
-- Name: inquiries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.inquiries (
    id bigint NOT NULL,
    provider text NOT NULL COLLATE pg_catalog."C",
    account text NOT NULL COLLATE pg_catalog."C",
    order_ref text NOT NULL COLLATE pg_catalog."C",
    order_id bigint,
    asked_at text NOT NULL COLLATE pg_catalog."C",
    trigger text NOT NULL,
    outcome text NOT NULL COLLATE pg_catalog."C",
    http_status integer,
    provider_status text,
    notification_id bigint,
    verdict text,
    error text,
    duration_ms bigint NOT NULL,
    url text NOT NULL
);


--
-- Name: inquiries_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.inquiries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: inquiries_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.inquiries_id_seq OWNED BY public.inquiries.id;


--
-- Name: ipnd_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.ipnd_migrations (
    identifier text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: notifications; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.notifications (
    id bigint NOT NULL,
    provider text NOT NULL COLLATE pg_catalog."C",
    account text NOT NULL COLLATE pg_catalog."C",
    received_at text NOT NULL COLLATE pg_catalog."C",
    client_ip text,
    method text DEFAULT 'POST'::text NOT NULL,
    target text NOT NULL,
    headers text NOT NULL,
    body bytea NOT NULL,
    verdict text NOT NULL COLLATE pg_catalog."C",
    reason text COLLATE pg_catalog."C",
    reason_detail text,
    kind text COLLATE pg_catalog."C",
    provider_status text,
    dedup_key text COLLATE pg_catalog."C",
    order_ref text COLLATE pg_catalog."C",
    order_id bigint,
    provider_txn_id text,
    link_key text COLLATE pg_catalog."C",
    amount_minor bigint,
    currency text,
    detail text,
    pending_effect text,
    reverified_from bigint,
    inquiry_id bigint
);


--
-- Name: notifications_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.notifications_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: orders; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orders (
    id bigint NOT NULL,
    provider text NOT NULL COLLATE pg_catalog."C",
    account text NOT NULL COLLATE pg_catalog."C",
    order_ref text NOT NULL COLLATE pg_catalog."C",
    provider_txn_id text,
    state text NOT NULL COLLATE pg_catalog."C",
    amount_minor bigint,
    currency text,
    refunded_minor bigint DEFAULT 0 NOT NULL,
    expected_amount_minor bigint,
    expected_currency text,
    flags text DEFAULT ''::text NOT NULL,
    created_at text NOT NULL COLLATE pg_catalog."C",
    updated_at text NOT NULL COLLATE pg_catalog."C",
    inquiry_from text COLLATE pg_catalog."C",
    inquiry_step integer DEFAULT 0 NOT NULL,
    inquiry_due_at text COLLATE pg_catalog."C"
);


--
-- Name: orders_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.orders_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: payment_links; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.payment_links (
    provider text NOT NULL COLLATE pg_catalog."C",
    account text NOT NULL COLLATE pg_catalog."C",
    link_key text NOT NULL COLLATE pg_catalog."C",
    order_id bigint NOT NULL
);


--
-- Name: refunds; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.refunds (
    order_id bigint NOT NULL,
    refund_id text NOT NULL COLLATE pg_catalog."C",
    amount_minor bigint,
    notification_id bigint NOT NULL
);


--
-- Name: store_meta; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.store_meta (
    key text NOT NULL,
    value text NOT NULL
);


--
-- Name: transitions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.transitions (
    id bigint NOT NULL,
    order_id bigint NOT NULL,
    from_state text,
    to_state text NOT NULL,
    at text NOT NULL COLLATE pg_catalog."C",
    notification_id bigint
);


--
-- Name: transitions_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.transitions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: transitions_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.transitions_id_seq OWNED BY public.transitions.id;


--
-- Name: deliveries id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.deliveries ALTER COLUMN id SET DEFAULT nextval('public.deliveries_id_seq'::regclass);


--
-- Name: inquiries id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inquiries ALTER COLUMN id SET DEFAULT nextval('public.inquiries_id_seq'::regclass);


--
-- Name: transitions id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.transitions ALTER COLUMN id SET DEFAULT nextval('public.transitions_id_seq'::regclass);


--
-- Data for Name: dedup_keys; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.dedup_keys VALUES ('unlimint', 'default', 'payment|SIMCB05EF45FE084C02|NEW', 1);
INSERT INTO public.dedup_keys VALUES ('unlimint', 'default', 'payment|SIMBA950726E5564D31|COMPLETED', 2);
INSERT INTO public.dedup_keys VALUES ('unlimint', 'default', 'payment|SIM85C1B076EC024B06|COMPLETED', 3);
INSERT INTO public.dedup_keys VALUES ('citcon', 'default', 'SIM3E29B56FD75B42AA|charge|success', 4);
INSERT INTO public.dedup_keys VALUES ('juspay', 'default', 'evt_SIM5D58B7B9EA634100', 5);
INSERT INTO public.dedup_keys VALUES ('ipay88', 'default', 'SIM4EA6B1B1056A4F5E|1', 6);
INSERT INTO public.dedup_keys VALUES ('unlimint', 'default', 'payment|SIM6E88B8ACD18D4FB0|REFUNDED', 7);


--
-- Data for Name: deliveries; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.deliveries VALUES (1, 'app', 1, 1, 'pending', 0, NULL, NULL, NULL, NULL, '2026-12-07T13:02:22.540Z', NULL, 'vm-27221-607032447', '2026-12-07T13:03:07.548Z', '2026-12-07T13:02:22.540Z');
INSERT INTO public.deliveries VALUES (2, 'ledger', 1, 1, 'delivered', 1, '2026-12-07T13:02:22.553Z', '2026-12-07T13:02:22.553Z', 204, NULL, NULL, '2026-12-07T13:02:22.553Z', NULL, NULL, '2026-12-07T13:02:22.540Z');
INSERT INTO public.deliveries VALUES (3, 'app', 2, 1, 'pending', 0, NULL, NULL, NULL, NULL, '2026-12-07T13:02:22.577Z', NULL, NULL, NULL, '2026-12-07T13:02:22.577Z');
INSERT INTO public.deliveries VALUES (4, 'ledger', 2, 1, 'delivered', 1, '2026-12-07T13:02:22.585Z', '2026-12-07T13:02:22.585Z', 204, NULL, NULL, '2026-12-07T13:02:22.585Z', NULL, NULL, '2026-12-07T13:02:22.577Z');
INSERT INTO public.deliveries VALUES (5, 'app', 3, 3, 'pending', 0, NULL, NULL, NULL, NULL, '2026-12-07T13:02:22.604Z', NULL, 'vm-27221-607032447', '2026-12-07T13:03:07.608Z', '2026-12-07T13:02:22.604Z');
INSERT INTO public.deliveries VALUES (6, 'ledger', 3, 3, 'delivered', 1, '2026-12-07T13:02:22.613Z', '2026-12-07T13:02:22.613Z', 204, NULL, NULL, '2026-12-07T13:02:22.613Z', NULL, NULL, '2026-12-07T13:02:22.604Z');
INSERT INTO public.deliveries VALUES (7, 'app', 4, 4, 'pending', 0, NULL, NULL, NULL, NULL, '2026-12-07T13:02:22.629Z', NULL, 'vm-27221-607032447', '2026-12-07T13:03:07.633Z', '2026-12-07T13:02:22.629Z');
INSERT INTO public.deliveries VALUES (8, 'ledger', 4, 4, 'delivered', 1, '2026-12-07T13:02:22.637Z', '2026-12-07T13:02:22.637Z', 204, NULL, NULL, '2026-12-07T13:02:22.637Z', NULL, NULL, '2026-12-07T13:02:22.629Z');
INSERT INTO public.deliveries VALUES (9, 'app', 5, 5, 'pending', 0, NULL, NULL, NULL, NULL, '2026-12-07T13:02:22.653Z', NULL, 'vm-27221-607032447', '2026-12-07T13:03:07.657Z', '2026-12-07T13:02:22.653Z');
INSERT INTO public.deliveries VALUES (10, 'ledger', 5, 5, 'delivered', 1, '2026-12-07T13:02:22.662Z', '2026-12-07T13:02:22.662Z', 204, NULL, NULL, '2026-12-07T13:02:22.662Z', NULL, NULL, '2026-12-07T13:02:22.653Z');
INSERT INTO public.deliveries VALUES (11, 'app', 6, 6, 'pending', 0, NULL, NULL, NULL, NULL, '2026-12-07T13:02:22.679Z', NULL, 'vm-27221-607032447', '2026-12-07T13:03:07.683Z', '2026-12-07T13:02:22.679Z');
INSERT INTO public.deliveries VALUES (12, 'ledger', 6, 6, 'delivered', 1, '2026-12-07T13:02:22.687Z', '2026-12-07T13:02:22.687Z', 204, NULL, NULL, '2026-12-07T13:02:22.687Z', NULL, NULL, '2026-12-07T13:02:22.679Z');
INSERT INTO public.deliveries VALUES (13, 'app', 7, 1, 'pending', 0, NULL, NULL, NULL, NULL, '2026-12-07T13:02:22.705Z', NULL, NULL, NULL, '2026-12-07T13:02:22.705Z');
INSERT INTO public.deliveries VALUES (14, 'ledger', 7, 1, 'delivered', 1, '2026-12-07T13:02:22.713Z', '2026-12-07T13:02:22.713Z', 204, NULL, NULL, '2026-12-07T13:02:22.713Z', NULL, NULL, '2026-12-07T13:02:22.705Z');


--
-- Data for Name: delivery_targets; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.delivery_targets VALUES ('app', NULL, NULL);
INSERT INTO public.delivery_targets VALUES ('ledger', NULL, NULL);


--
-- Data for Name: events; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.events VALUES (1, '4a9b805e-1b53-40b7-a7c8-d0218dd5b885', 'order.state_changed', '2026-12-07T13:02:22.540Z', 'unlimint', 'default', 1, 'OLD-A', '{"provider":"unlimint","account":"default","order_ref":"OLD-A","provider_txn_id":"SIMCB05EF45FE084C02","state":"pending","amount_minor":1000,"amount":"10.00","currency":"USD","refunded_minor":0,"expected":null,"flags":[],"created_at":"2026-12-07T13:02:22.540Z","updated_at":"2026-12-07T13:02:22.540Z"}', NULL, 'pending', NULL, 1, 'NEW');
INSERT INTO public.events VALUES (2, '5b1d89c6-2f99-4b4f-8337-c09009a34fa0', 'order.state_changed', '2026-12-07T13:02:22.577Z', 'unlimint', 'default', 1, 'OLD-A', '{"provider":"unlimint","account":"default","order_ref":"OLD-A","provider_txn_id":"SIMBA950726E5564D31","state":"paid","amount_minor":1000,"amount":"10.00","currency":"USD","refunded_minor":0,"expected":null,"flags":[],"created_at":"2026-12-07T13:02:22.540Z","updated_at":"2026-12-07T13:02:22.577Z"}', 'pending', 'paid', NULL, 2, 'COMPLETED');
INSERT INTO public.events VALUES (3, 'c607bec6-f504-44fa-9bcf-69871f205c66', 'order.state_changed', '2026-12-07T13:02:22.604Z', 'unlimint', 'default', 3, 'OLD-B', '{"provider":"unlimint","account":"default","order_ref":"OLD-B","provider_txn_id":"SIM85C1B076EC024B06","state":"paid","amount_minor":2550,"amount":"25.50","currency":"EUR","refunded_minor":0,"expected":null,"flags":[],"created_at":"2026-12-07T13:02:22.604Z","updated_at":"2026-12-07T13:02:22.604Z"}', NULL, 'paid', NULL, 3, 'COMPLETED');
INSERT INTO public.events VALUES (4, 'de634335-92a8-4295-9a5b-c118a9e5993a', 'order.state_changed', '2026-12-07T13:02:22.629Z', 'citcon', 'default', 4, 'OLD-C', '{"provider":"citcon","account":"default","order_ref":"OLD-C","provider_txn_id":"SIM3E29B56FD75B42AA","state":"paid","amount_minor":700,"amount":"7.00","currency":"USD","refunded_minor":0,"expected":null,"flags":[],"created_at":"2026-12-07T13:02:22.629Z","updated_at":"2026-12-07T13:02:22.629Z"}', NULL, 'paid', NULL, 4, 'success');
INSERT INTO public.events VALUES (5, 'e6b19f04-793a-4270-a9f6-0d229456337a', 'order.state_changed', '2026-12-07T13:02:22.653Z', 'juspay', 'default', 5, 'OLD-D', '{"provider":"juspay","account":"default","order_ref":"OLD-D","provider_txn_id":"ord_SIM5D58B7B9EA634100","state":"paid","amount_minor":10000,"amount":"100.00","currency":"INR","refunded_minor":0,"expected":null,"flags":[],"created_at":"2026-12-07T13:02:22.653Z","updated_at":"2026-12-07T13:02:22.653Z"}', NULL, 'paid', NULL, 5, 'CHARGED');
INSERT INTO public.events VALUES (6, '8545393e-c602-4ec2-a9b3-64f3f8c3c0b2', 'order.state_changed', '2026-12-07T13:02:22.679Z', 'ipay88', 'default', 6, 'OLD-E', '{"provider":"ipay88","account":"default","order_ref":"OLD-E","provider_txn_id":"SIM4EA6B1B1056A4F5E","state":"paid","amount_minor":100,"amount":"1.00","currency":"MYR","refunded_minor":0,"expected":null,"flags":[],"created_at":"2026-12-07T13:02:22.679Z","updated_at":"2026-12-07T13:02:22.679Z"}', NULL, 'paid', NULL, 6, '1');
INSERT INTO public.events VALUES (7, '4686d954-6c0f-4457-a392-ad1ff270a8b3', 'order.state_changed', '2026-12-07T13:02:22.705Z', 'unlimint', 'default', 1, 'OLD-A', '{"provider":"unlimint","account":"default","order_ref":"OLD-A","provider_txn_id":"SIM6E88B8ACD18D4FB0","state":"refunded","amount_minor":1000,"amount":"10.00","currency":"USD","refunded_minor":1000,"expected":null,"flags":[],"created_at":"2026-12-07T13:02:22.540Z","updated_at":"2026-12-07T13:02:22.705Z"}', 'paid', 'refunded', NULL, 7, 'REFUNDED');


--
-- Data for Name: heartbeat; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.heartbeat VALUES ('vm-27221-1484599089', '2026-12-07T13:02:22.514Z');


--
-- Data for Name: inquiries; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: ipnd_migrations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.ipnd_migrations VALUES ('p1: orders, notifications, transitions, dedup keys, links, refunds, events, deliveries', '2026-12-07 13:02:19.539216+00');
INSERT INTO public.ipnd_migrations VALUES ('p2: rejected notifications indexed by arrival; notifications by the rejected one they were reverified from', '2026-12-07 13:02:19.584816+00');
INSERT INTO public.ipnd_migrations VALUES ('p3: the ops console''s order indexes', '2026-12-07 13:02:19.593894+00');
INSERT INTO public.ipnd_migrations VALUES ('p4: reconciliation: the orders'' inquiry schedule, inquiry records, notifications from inquiries', '2026-12-07 13:02:19.597049+00');


--
-- Data for Name: notifications; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.notifications VALUES (1, 'unlimint', 'default', '2026-12-07T13:02:22.540Z', '127.0.0.1', 'POST', '/ipn/unlimint', '[["content-type","application/json"],["signature","026b509d86f342d96b41a409df6908479c366f6c6723376df26e7964addf6afc59b3f0d5787a4bac4b94368f6e48cad63b20fd7b2e0d3e4803c53ae2a8a56ebe"],["content-length","224"],["connection","close"]]', '\x7b2263616c6c6261636b5f74696d65223a22323032362d31322d30375431333a30323a32325a222c227061796d656e745f6d6574686f64223a2242414e4b43415244222c226d65726368616e745f6f72646572223a7b226964223a224f4c442d41227d2c227061796d656e745f64617461223a7b226964223a2253494d43423035454634354645303834433032222c22737461747573223a224e4557222c22616d6f756e74223a31302e30302c2263757272656e6379223a22555344222c2263726561746564223a22323032362d31322d30375431333a30323a32325a227d7d', 'applied', NULL, NULL, 'payment', 'NEW', 'payment|SIMCB05EF45FE084C02|NEW', 'OLD-A', 1, 'SIMCB05EF45FE084C02', NULL, 1000, 'USD', NULL, NULL, NULL, NULL);
INSERT INTO public.notifications VALUES (2, 'unlimint', 'default', '2026-12-07T13:02:22.576Z', '127.0.0.1', 'POST', '/ipn/unlimint', '[["content-type","application/json"],["signature","4cc49d2489ab5518cd67227ea1f17f052d4d6108c6929ec91f8b32d3f9de79324ac7047f6f58e3a05230008eebb3e9931f60a56f2b86bc29b8d06daae51c21cb"],["content-length","230"],["connection","close"]]', '\x7b2263616c6c6261636b5f74696d65223a22323032362d31322d30375431333a30323a32325a222c227061796d656e745f6d6574686f64223a2242414e4b43415244222c226d65726368616e745f6f72646572223a7b226964223a224f4c442d41227d2c227061796d656e745f64617461223a7b226964223a2253494d42413935303732364535353634443331222c22737461747573223a22434f4d504c45544544222c22616d6f756e74223a31302e30302c2263757272656e6379223a22555344222c2263726561746564223a22323032362d31322d30375431333a30323a32325a227d7d', 'applied', NULL, NULL, 'payment', 'COMPLETED', 'payment|SIMBA950726E5564D31|COMPLETED', 'OLD-A', 1, 'SIMBA950726E5564D31', NULL, 1000, 'USD', NULL, NULL, NULL, NULL);
INSERT INTO public.notifications VALUES (3, 'unlimint', 'default', '2026-12-07T13:02:22.604Z', '127.0.0.1', 'POST', '/ipn/unlimint', '[["content-type","application/json"],["signature","79ccb52735d4e827d39ea4b586dae3ead566bf5de80e323bfb391b3755870ce41715a2788c71f8163fb45494b2143b54689a0aacd86438ba9e3c2b16b610d927"],["content-length","230"],["connection","close"]]', '\x7b2263616c6c6261636b5f74696d65223a22323032362d31322d30375431333a30323a32325a222c227061796d656e745f6d6574686f64223a2242414e4b43415244222c226d65726368616e745f6f72646572223a7b226964223a224f4c442d42227d2c227061796d656e745f64617461223a7b226964223a2253494d38354331423037364543303234423036222c22737461747573223a22434f4d504c45544544222c22616d6f756e74223a32352e35302c2263757272656e6379223a22455552222c2263726561746564223a22323032362d31322d30375431333a30323a32325a227d7d', 'applied', NULL, NULL, 'payment', 'COMPLETED', 'payment|SIM85C1B076EC024B06|COMPLETED', 'OLD-B', 3, 'SIM85C1B076EC024B06', NULL, 2550, 'EUR', NULL, NULL, NULL, NULL);
INSERT INTO public.notifications VALUES (4, 'citcon', 'default', '2026-12-07T13:02:22.629Z', '127.0.0.1', 'POST', '/ipn/citcon', '[["content-type","application/json"],["content-length","413"],["connection","close"]]', '\x7b226964223a2253494d33453239423536464437354234324141222c227472616e73616374696f6e5f74797065223a22636861726765222c227265666572656e6365223a224f4c442d43222c22616d6f756e74223a3730302c2263757272656e6379223a22555344222c22737461747573223a2273756363657373222c2274696d655f63726561746564223a22323032362d31322d30375431333a30323a32325a222c2274696d655f636f6d706c65746564223a22323032362d31322d30375431333a30323a32325a222c227061796d656e745f6d6574686f64223a2273696d756c61746564222c226669656c6473223a2269642c7472616e73616374696f6e5f747970652c7265666572656e63652c616d6f756e742c63757272656e63792c7374617475732c74696d655f637265617465642c74696d655f636f6d706c657465642c7061796d656e745f6d6574686f64222c227369676e223a2235303639343031336630383437656164333532653762393763363634643663326437306436313232376538323261653761313661626263643366623930303161227d', 'applied', NULL, NULL, 'payment', 'success', 'SIM3E29B56FD75B42AA|charge|success', 'OLD-C', 4, 'SIM3E29B56FD75B42AA', NULL, 700, 'USD', '{"generation":"upi"}', NULL, NULL, NULL);
INSERT INTO public.notifications VALUES (5, 'juspay', 'default', '2026-12-07T13:02:22.653Z', '127.0.0.1', 'POST', '/ipn/juspay', '[["content-type","application/json"],["authorization","Basic [redacted]"],["content-length","302"],["connection","close"]]', '\x7b226964223a226576745f53494d35443538423742394541363334313030222c22646174655f63726561746564223a22323032362d31322d30375431333a30323a32325a222c226576656e745f6e616d65223a224f524445525f535543434545444544222c22636f6e74656e74223a7b226f72646572223a7b226964223a226f72645f53494d35443538423742394541363334313030222c226f726465725f6964223a224f4c442d44222c22737461747573223a2243484152474544222c22616d6f756e74223a3130302e30302c2263757272656e6379223a22494e52222c22616d6f756e745f726566756e646564223a302c2274786e5f6964223a224f4c442d442d31222c22646174655f63726561746564223a22323032362d31322d30375431333a30323a32325a227d7d7d', 'applied', NULL, NULL, 'payment', 'CHARGED', 'evt_SIM5D58B7B9EA634100', 'OLD-D', 5, 'ord_SIM5D58B7B9EA634100', NULL, 10000, 'INR', '{"event_name":"ORDER_SUCCEEDED","txn_id":"OLD-D-1"}', NULL, NULL, NULL);
INSERT INTO public.notifications VALUES (6, 'ipay88', 'default', '2026-12-07T13:02:22.679Z', '127.0.0.1', 'POST', '/ipn/ipay88', '[["content-type","application/x-www-form-urlencoded"],["content-length","221"],["connection","close"]]', '\x4d65726368616e74436f64653d4b483030303031265061796d656e7449643d32265265664e6f3d4f4c442d4526416d6f756e743d312e30302643757272656e63793d4d59522652656d61726b3d69706e642b73696d756c617465265472616e7349643d53494d344541364231423130353641344635452641757468436f64653d265374617475733d3126457272446573633d265369676e61747572653d66316162343162383238633732326162623661363562376331633662353437393036316433663265313663626263623763636439366137373532363165343166', 'applied', NULL, NULL, 'payment', '1', 'SIM4EA6B1B1056A4F5E|1', 'OLD-E', 6, 'SIM4EA6B1B1056A4F5E', NULL, 100, 'MYR', '{"signature":"sha256","signature_form":"canonical"}', NULL, NULL, NULL);
INSERT INTO public.notifications VALUES (7, 'unlimint', 'default', '2026-12-07T13:02:22.705Z', '127.0.0.1', 'POST', '/ipn/unlimint', '[["content-type","application/json"],["signature","20df279f20f102351a3a088adcb54cdc36e04b6ce52a19f582062753d34c86ff6ecef8330df125845a82f5397e705ff030a310a17bf9bad08b2296d496392384"],["content-length","229"],["connection","close"]]', '\x7b2263616c6c6261636b5f74696d65223a22323032362d31322d30375431333a30323a32325a222c227061796d656e745f6d6574686f64223a2242414e4b43415244222c226d65726368616e745f6f72646572223a7b226964223a224f4c442d41227d2c227061796d656e745f64617461223a7b226964223a2253494d36453838423841434431384434464230222c22737461747573223a22524546554e444544222c22616d6f756e74223a31302e30302c2263757272656e6379223a22555344222c2263726561746564223a22323032362d31322d30375431333a30323a32325a227d7d', 'applied', NULL, NULL, 'payment', 'REFUNDED', 'payment|SIM6E88B8ACD18D4FB0|REFUNDED', 'OLD-A', 1, 'SIM6E88B8ACD18D4FB0', NULL, 1000, 'USD', NULL, NULL, NULL, NULL);


--
-- Data for Name: orders; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.orders VALUES (3, 'unlimint', 'default', 'OLD-B', 'SIM85C1B076EC024B06', 'paid', 2550, 'EUR', 0, NULL, NULL, '', '2026-12-07T13:02:22.604Z', '2026-12-07T13:02:22.604Z', NULL, 0, NULL);
INSERT INTO public.orders VALUES (4, 'citcon', 'default', 'OLD-C', 'SIM3E29B56FD75B42AA', 'paid', 700, 'USD', 0, NULL, NULL, '', '2026-12-07T13:02:22.629Z', '2026-12-07T13:02:22.629Z', NULL, 0, NULL);
INSERT INTO public.orders VALUES (5, 'juspay', 'default', 'OLD-D', 'ord_SIM5D58B7B9EA634100', 'paid', 10000, 'INR', 0, NULL, NULL, '', '2026-12-07T13:02:22.653Z', '2026-12-07T13:02:22.653Z', NULL, 0, NULL);
INSERT INTO public.orders VALUES (6, 'ipay88', 'default', 'OLD-E', 'SIM4EA6B1B1056A4F5E', 'paid', 100, 'MYR', 0, NULL, NULL, '', '2026-12-07T13:02:22.679Z', '2026-12-07T13:02:22.679Z', NULL, 0, NULL);
INSERT INTO public.orders VALUES (1, 'unlimint', 'default', 'OLD-A', 'SIM6E88B8ACD18D4FB0', 'refunded', 1000, 'USD', 1000, NULL, NULL, '', '2026-12-07T13:02:22.540Z', '2026-12-07T13:02:22.705Z', NULL, 0, NULL);


--
-- Data for Name: payment_links; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: refunds; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: store_meta; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: transitions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.transitions VALUES (1, 1, NULL, 'pending', '2026-12-07T13:02:22.540Z', 1);
INSERT INTO public.transitions VALUES (2, 1, 'pending', 'paid', '2026-12-07T13:02:22.577Z', 2);
INSERT INTO public.transitions VALUES (3, 3, NULL, 'paid', '2026-12-07T13:02:22.604Z', 3);
INSERT INTO public.transitions VALUES (4, 4, NULL, 'paid', '2026-12-07T13:02:22.629Z', 4);
INSERT INTO public.transitions VALUES (5, 5, NULL, 'paid', '2026-12-07T13:02:22.653Z', 5);
INSERT INTO public.transitions VALUES (6, 6, NULL, 'paid', '2026-12-07T13:02:22.679Z', 6);
INSERT INTO public.transitions VALUES (7, 1, 'paid', 'refunded', '2026-12-07T13:02:22.705Z', 7);


--
-- Name: deliveries_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.deliveries_id_seq', 14, true);


--
-- Name: events_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.events_seq', 7, true);


--
-- Name: inquiries_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.inquiries_id_seq', 1, false);


--
-- Name: notifications_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.notifications_id_seq', 7, true);


--
-- Name: orders_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.orders_id_seq', 7, true);


--
-- Name: transitions_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.transitions_id_seq', 7, true);


--
-- Name: dedup_keys dedup_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dedup_keys
    ADD CONSTRAINT dedup_keys_pkey PRIMARY KEY (provider, account, dedup_key);


--
-- Name: deliveries deliveries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.deliveries
    ADD CONSTRAINT deliveries_pkey PRIMARY KEY (id);


--
-- Name: delivery_targets delivery_targets_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.delivery_targets
    ADD CONSTRAINT delivery_targets_pkey PRIMARY KEY (name);


--
-- Name: events events_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_id_key UNIQUE (id);


--
-- Name: events events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (seq);


--
-- Name: heartbeat heartbeat_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.heartbeat
    ADD CONSTRAINT heartbeat_pkey PRIMARY KEY (node);


--
-- Name: inquiries inquiries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inquiries
    ADD CONSTRAINT inquiries_pkey PRIMARY KEY (id);


--
-- Name: ipnd_migrations ipnd_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ipnd_migrations
    ADD CONSTRAINT ipnd_migrations_pkey PRIMARY KEY (identifier);


--
-- Name: notifications notifications_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.notifications
    ADD CONSTRAINT notifications_pkey PRIMARY KEY (id);


--
-- Name: orders orders_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orders
    ADD CONSTRAINT orders_pkey PRIMARY KEY (id);


--
-- Name: orders orders_provider_account_order_ref_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orders
    ADD CONSTRAINT orders_provider_account_order_ref_key UNIQUE (provider, account, order_ref);


--
-- Name: payment_links payment_links_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.payment_links
    ADD CONSTRAINT payment_links_pkey PRIMARY KEY (provider, account, link_key);


--
-- Name: refunds refunds_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.refunds
    ADD CONSTRAINT refunds_pkey PRIMARY KEY (order_id, refund_id);


--
-- Name: store_meta store_meta_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.store_meta
    ADD CONSTRAINT store_meta_pkey PRIMARY KEY (key);


--
-- Name: transitions transitions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.transitions
    ADD CONSTRAINT transitions_pkey PRIMARY KEY (id);


--
-- Name: deliveries_by_event; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX deliveries_by_event ON public.deliveries USING btree (event_seq);


--
-- Name: deliveries_by_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX deliveries_by_state ON public.deliveries USING btree (state, id);


--
-- Name: deliveries_by_target; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX deliveries_by_target ON public.deliveries USING btree (target, state, id);


--
-- Name: deliveries_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX deliveries_due ON public.deliveries USING btree (target, next_attempt_at) WHERE (state = 'pending'::text);


--
-- Name: deliveries_order_queue; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX deliveries_order_queue ON public.deliveries USING btree (target, order_id, event_seq) WHERE (state = 'pending'::text);


--
-- Name: events_by_occurred_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX events_by_occurred_at ON public.events USING btree (occurred_at);


--
-- Name: events_by_order; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX events_by_order ON public.events USING btree (order_id, seq);


--
-- Name: inquiries_by_asked_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inquiries_by_asked_at ON public.inquiries USING btree (asked_at);


--
-- Name: inquiries_by_order; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX inquiries_by_order ON public.inquiries USING btree (order_id, id);


--
-- Name: notifications_by_order; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX notifications_by_order ON public.notifications USING btree (order_id);


--
-- Name: notifications_by_received_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX notifications_by_received_at ON public.notifications USING btree (received_at);


--
-- Name: notifications_by_reverified_from; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX notifications_by_reverified_from ON public.notifications USING btree (reverified_from) WHERE (reverified_from IS NOT NULL);


--
-- Name: notifications_by_verdict; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX notifications_by_verdict ON public.notifications USING btree (verdict, id);


--
-- Name: notifications_rejected_by_received_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX notifications_rejected_by_received_at ON public.notifications USING btree (received_at) WHERE (verdict = 'rejected'::text);


--
-- Name: notifications_unlinked; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX notifications_unlinked ON public.notifications USING btree (provider, account, link_key) WHERE (verdict = 'unlinked'::text);


--
-- Name: notifications_waiting_duplicates; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX notifications_waiting_duplicates ON public.notifications USING btree (provider, account, link_key) WHERE ((verdict = 'duplicate'::text) AND (order_id IS NULL));


--
-- Name: orders_by_account; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orders_by_account ON public.orders USING btree (provider, account, id);


--
-- Name: orders_by_created_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orders_by_created_at ON public.orders USING btree (created_at);


--
-- Name: orders_by_provider; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orders_by_provider ON public.orders USING btree (provider, id);


--
-- Name: orders_by_ref; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orders_by_ref ON public.orders USING btree (order_ref, id);


--
-- Name: orders_by_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orders_by_state ON public.orders USING btree (state, id);


--
-- Name: orders_flagged; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orders_flagged ON public.orders USING btree (id) WHERE (flags <> ''::text);


--
-- Name: orders_inquiry_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orders_inquiry_due ON public.orders USING btree (provider, account, inquiry_due_at) WHERE (inquiry_due_at IS NOT NULL);


--
-- Name: transitions_by_order; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX transitions_by_order ON public.transitions USING btree (order_id);


--
-- Name: dedup_keys dedup_keys_notification_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dedup_keys
    ADD CONSTRAINT dedup_keys_notification_id_fkey FOREIGN KEY (notification_id) REFERENCES public.notifications(id);


--
-- Name: deliveries deliveries_event_seq_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.deliveries
    ADD CONSTRAINT deliveries_event_seq_fkey FOREIGN KEY (event_seq) REFERENCES public.events(seq);


--
-- Name: events events_order_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_order_id_fkey FOREIGN KEY (order_id) REFERENCES public.orders(id);


--
-- Name: inquiries inquiries_order_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inquiries
    ADD CONSTRAINT inquiries_order_id_fkey FOREIGN KEY (order_id) REFERENCES public.orders(id);


--
-- Name: notifications notifications_order_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.notifications
    ADD CONSTRAINT notifications_order_id_fkey FOREIGN KEY (order_id) REFERENCES public.orders(id);


--
-- Name: payment_links payment_links_order_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.payment_links
    ADD CONSTRAINT payment_links_order_id_fkey FOREIGN KEY (order_id) REFERENCES public.orders(id);


--
-- Name: refunds refunds_notification_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.refunds
    ADD CONSTRAINT refunds_notification_id_fkey FOREIGN KEY (notification_id) REFERENCES public.notifications(id);


--
-- Name: refunds refunds_order_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.refunds
    ADD CONSTRAINT refunds_order_id_fkey FOREIGN KEY (order_id) REFERENCES public.orders(id);


--
-- Name: transitions transitions_notification_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.transitions
    ADD CONSTRAINT transitions_notification_id_fkey FOREIGN KEY (notification_id) REFERENCES public.notifications(id);


--
-- Name: transitions transitions_order_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.transitions
    ADD CONSTRAINT transitions_order_id_fkey FOREIGN KEY (order_id) REFERENCES public.orders(id);


--
-- PostgreSQL database dump complete
--


