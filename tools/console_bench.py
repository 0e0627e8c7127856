#!/usr/bin/env python3
##===----------------------------------------------------------------------===##
##
## This source file is part of the ipnd open source project
##
## Copyright (c) the ipnd authors
## Licensed under Apache License v2.0
##
## See LICENSE for license information
##
## SPDX-License-Identifier: Apache-2.0
##
##===----------------------------------------------------------------------===##

"""The ops console's page timings on a large store (scripts/bench-console.sh runs both steps).

  console_bench.py seed STORE [--orders 200000] [--notifications 1000000] [--days 10]
      fills a store that `ipnd serve` has created (the current schema) with orders,
      notifications, transitions, events and deliveries, by direct SQL inserts: realistic rows,
      spread over the last DAYS days, ids in time order as the daemon writes them. Then it fills
      notification_counts from the notifications, as the v6 migration does.

  console_bench.py measure BASE_URL TOKEN [--requests 200] [--warmup 20]
      signs in through the form, then requests each page REQUESTS times over one keep-alive
      connection (after WARMUP unmeasured ones) and prints p50 and p99 per page, in ms.
"""
import argparse
import http.client
import json
import random
import re
import sqlite3
import sys
import time
from urllib.parse import quote, urlencode, urlparse

PROVIDERS = ["citcon", "ipay88", "alipay", "unlimint", "juspay"]
CURRENCY = {"citcon": "USD", "ipay88": "MYR", "alipay": "SGD", "unlimint": "USD", "juspay": "INR"}
REJECT_REASONS = ["bad_signature"] * 6 + ["missing_header"] * 2 + ["malformed_body", "unknown_account", "ip_not_allowed"]


def stamp(ms):
    seconds, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def seed(args):
    rng = random.Random(32)
    db = sqlite3.connect(args.store, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("PRAGMA cache_size=-200000")
    if db.execute("SELECT COUNT(*) FROM notifications").fetchone()[0]:
        sys.exit(f"{args.store} already has notifications: seed a fresh store")
    now = int(time.time() * 1000)
    start = now - args.days * 86_400_000
    orders, notes_target = args.orders, args.notifications
    # Each order gets its notifications; rejected requests (no order) fill up to the total.
    per_order = max(1.0, (notes_target * 0.9) / orders)
    rejected_every = orders / max(1, notes_target - int(per_order * orders))
    headers = json.dumps([["content-type", "application/json"], ["user-agent", "provider-bench/1.0"],
                          ["signature", "[redacted]"], ["x-request-id", "0"]])
    db.execute("BEGIN")
    next_note = next_transition = next_event = 0
    note_rows, transition_rows, event_rows, order_rows = [], [], [], []
    delivery_events = []  # (seq, order_id, at)
    span = now - start - 60_000

    def flush():
        db.executemany("INSERT INTO orders (id, provider, account, order_ref, provider_txn_id, state, amount_minor, currency, "
                       "refunded_minor, expected_amount_minor, expected_currency, flags, created_at, updated_at) "
                       "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", order_rows)
        db.executemany("INSERT INTO notifications (id, provider, account, received_at, client_ip, target, headers, body, verdict, "
                       "reason, reason_detail, kind, provider_status, dedup_key, order_ref, order_id, provider_txn_id, amount_minor, "
                       "currency) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", note_rows)
        db.executemany("INSERT INTO transitions (id, order_id, from_state, to_state, at, notification_id) VALUES (?,?,?,?,?,?)",
                       transition_rows)
        db.executemany("INSERT INTO events (seq, id, type, occurred_at, provider, account, order_id, order_ref, order_json, "
                       "from_state, to_state, flag, notification_id, provider_status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       event_rows)
        for rows in (order_rows, note_rows, transition_rows, event_rows):
            rows.clear()

    rejected_debt = 0.0
    for index in range(orders):
        order_id = index + 1
        provider = PROVIDERS[index % 5]
        account = "shop2" if provider == "unlimint" and index % 50 == 3 else "default"
        ref = f"B-{provider}-{index:07d}"
        txn = f"T{index:09d}"
        currency = CURRENCY[provider]
        amount = rng.randrange(100, 500_000)
        created = start + span * index // orders
        at = created
        roll = rng.random()
        lifecycle = (["pending", "paid"] if roll < 0.55 else ["paid"] if roll < 0.70 else ["pending"] if roll < 0.78
                     else ["pending", "authorized"] if roll < 0.83 else ["pending", "failed"] if roll < 0.90
                     else ["pending", "canceled"] if roll < 0.93 else ["pending", "expired"] if roll < 0.95
                     else ["paid", "refunded"] if roll < 0.98 else ["paid", "partially_refunded"] if roll < 0.995
                     else ["paid", "charged_back"])
        mismatch = rng.random() < 0.005
        count = max(len(lifecycle), int(per_order + rng.random()))
        state = None
        verdicts = ["applied"] * len(lifecycle)
        extras = count - len(lifecycle)
        verdicts += [rng.choice(["duplicate", "duplicate", "duplicate", "stale", "recorded", "duplicate", "unknown_status"])
                     for _ in range(extras)]
        if mismatch:
            verdicts.append("mismatch")
        for position, verdict in enumerate(verdicts):
            next_note += 1
            at += rng.randrange(200, 90_000)
            status = (lifecycle[min(position, len(lifecycle) - 1)]).upper()
            body = json.dumps({"merchant_order": {"id": ref}, "payment_data": {"id": txn, "status": status,
                               "amount": amount / 100, "currency": currency}, "callback_time": stamp(at)})
            note_rows.append((next_note, provider, account, stamp(at), f"203.0.113.{index % 200}", f"/ipn/{provider}", headers,
                              body.encode(), verdict, "amount_mismatch" if verdict == "mismatch" else None, None, "payment",
                              status, f"{txn}|{status}|{position}", ref, order_id, txn, amount, currency))
            if verdict == "applied":
                to_state = lifecycle[position]
                next_transition += 1
                transition_rows.append((next_transition, order_id, state, to_state, stamp(at), next_note))
                next_event += 1
                order_json = json.dumps({"provider": provider, "account": account, "order_ref": ref, "state": to_state,
                                         "amount_minor": amount, "currency": currency})
                event_rows.append((next_event, f"{next_event:08x}-0000-4000-8000-{order_id:012x}", "order.state_changed", stamp(at),
                                   provider, account, order_id, ref, order_json, state, to_state, None, next_note, status))
                delivery_events.append((next_event, order_id, at))
                state = to_state
        flags = "amount_mismatch" if mismatch else ""
        refunded = amount if state == "refunded" else amount // 2 if state == "partially_refunded" else 0
        order_rows.append((order_id, provider, account, ref, txn, state, amount, currency, refunded,
                           amount + 1 if mismatch else None, currency if mismatch else None, flags, stamp(created), stamp(at)))
        rejected_debt += 1 / rejected_every if rejected_every > 0 else 0
        while rejected_debt >= 1 and next_note < notes_target:
            rejected_debt -= 1
            next_note += 1
            provider_r = PROVIDERS[rng.randrange(5)]
            note_rows.append((next_note, provider_r, "default", stamp(at), f"198.51.100.{rng.randrange(250)}", f"/ipn/{provider_r}",
                              headers, b'{"forged":true}', "rejected", rng.choice(REJECT_REASONS), "the signature does not verify",
                              None, None, None, None, None, None, None, None))
        if len(note_rows) >= 50_000:
            flush()
            print(f"  {index + 1} orders, {next_note} notifications", file=sys.stderr)
    flush()
    db.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'", (next_event,))
    db.execute("INSERT OR IGNORE INTO sqlite_sequence (name, seq) VALUES ('events', ?)", (next_event,))
    # One delivery target owed the last 50,000 events: most delivered, some pending, some failed.
    db.execute("INSERT OR IGNORE INTO delivery_targets (name) VALUES ('app')")
    deliveries = []
    for number, (seq, order_id, at) in enumerate(delivery_events[-50_000:]):
        created = stamp(at)
        if number >= 49_000:
            deliveries.append(("app", seq, order_id, "pending", 3, created, created, 503, "HTTP 503", created, None, created))
        elif number % 100 == 7:
            deliveries.append(("app", seq, order_id, "failed", 40, created, created, None, "connection refused", None, None, created))
        else:
            deliveries.append(("app", seq, order_id, "delivered", 1, created, created, 200, None, None, created, created))
    db.executemany("INSERT INTO deliveries (target, event_seq, order_id, state, attempts, first_attempt_at, last_attempt_at, "
                   "last_status, last_error, next_attempt_at, delivered_at, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                   deliveries)
    db.execute("DELETE FROM notification_counts")
    db.execute("INSERT INTO notification_counts (hour, provider, account, verdict, reason, count) "
               "SELECT substr(received_at, 1, 13) || ':00:00.000Z', provider, account, verdict, COALESCE(reason, ''), COUNT(*) "
               "FROM notifications GROUP BY 1, 2, 3, 4, 5")
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    counts = {table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
              for table in ("orders", "notifications", "transitions", "events", "deliveries")}
    print(json.dumps(counts))


class Client:
    def __init__(self, base):
        parsed = urlparse(base)
        self.connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
        self.cookies = {}

    def request(self, method, path, body=None):
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())} if self.cookies else {}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        data = response.read()
        for header, value in response.getheaders():
            if header.lower() == "set-cookie":
                name, _, rest = value.partition("=")
                cookie = rest.split(";")[0]
                if cookie and "Max-Age=0" not in value:
                    self.cookies[name] = cookie
                else:
                    self.cookies.pop(name, None)
        return response.status, data


def measure(args):
    client = Client(args.base_url)
    _, form = client.request("GET", "/sign-in")
    csrf = re.search(rb'name="csrf" value="([^"]*)"', form).group(1).decode()
    status, _ = client.request("POST", "/sign-in", urlencode({"csrf": csrf, "next": "/", "token": args.token}))
    if status != 303 or "ipnd_session" not in client.cookies:
        sys.exit(f"sign-in failed ({status})")
    # Pages named by what they read; the store's own rows pick the order and notification shown.
    _, orders_page = client.request("GET", "/orders?provider=unlimint")
    order_path = re.search(rb'<a class="ref" href="(/orders/[^"]+)"', orders_page).group(1).decode()
    _, notes_page = client.request("GET", "/notifications")
    note_path = re.search(rb'href="(/notifications/\d+)"', notes_page).group(1).decode()
    middle = re.search(rb'href="/orders\?before=(\d+)"', client.request("GET", "/orders")[1])
    hour_ago = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
    pages = [
        ("overview", "/"),
        ("orders", "/orders"),
        ("orders, next page", f"/orders?before={middle.group(1).decode() if middle else 1}"),
        ("orders, page 2000 deep", "/orders?before=100000"),
        ("orders state=paid", "/orders?state=paid"),
        ("orders state=charged_back", "/orders?state=charged_back"),
        ("orders provider=juspay", "/orders?provider=juspay"),
        ("orders unlimint/shop2", "/orders?provider=unlimint&account=shop2"),
        ("orders since 1 h", "/orders?since=" + quote(hour_ago)),
        ("orders search prefix", "/orders?q=B-unlimint-00012"),
        ("order", order_path),
        ("order, raw requests", order_path + "?raw=1"),
        ("notifications", "/notifications"),
        ("notifications rejected", "/notifications?verdict=rejected"),
        ("notifications citcon stale", "/notifications?provider=citcon&verdict=stale"),
        ("notifications unlimint/shop2", "/notifications?provider=unlimint&account=shop2"),
        ("notifications since 1 h", "/notifications?since=" + quote(hour_ago)),
        ("notification", note_path),
        ("deliveries", "/deliveries"),
        ("deliveries app failed", "/deliveries?target=app&state=failed"),
    ]
    results = []
    print(f"{'page':34} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  bytes")
    for name, path in pages:
        for _ in range(args.warmup):
            client.request("GET", path)
        timings = []
        size = 0
        for _ in range(args.requests):
            started = time.perf_counter()
            status, data = client.request("GET", path)
            timings.append((time.perf_counter() - started) * 1000)
            if status != 200:
                sys.exit(f"{name}: {path} answered {status}")
            size = len(data)
        timings.sort()
        p50 = timings[len(timings) // 2]
        p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
        results.append({"page": name, "path": path, "p50_ms": round(p50, 2), "p99_ms": round(p99, 2), "max_ms": round(timings[-1], 2)})
        print(f"{name:34} {p50:8.2f} {p99:8.2f} {timings[-1]:8.2f}  {size}")
    slowest = max(results, key=lambda r: r["p99_ms"])
    print(f"slowest p99: {slowest['page']} {slowest['p99_ms']} ms")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    seeding = commands.add_parser("seed")
    seeding.add_argument("store")
    seeding.add_argument("--orders", type=int, default=200_000)
    seeding.add_argument("--notifications", type=int, default=1_000_000)
    seeding.add_argument("--days", type=int, default=10)
    measuring = commands.add_parser("measure")
    measuring.add_argument("base_url")
    measuring.add_argument("token")
    measuring.add_argument("--requests", type=int, default=200)
    measuring.add_argument("--warmup", type=int, default=20)
    measuring.add_argument("--json")
    args = parser.parse_args()
    seed(args) if args.command == "seed" else measure(args)


if __name__ == "__main__":
    main()
