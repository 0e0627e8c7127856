//===----------------------------------------------------------------------===//
//
// This source file is part of the ipnd open source project
//
// Copyright (c) the ipnd authors
// Licensed under Apache License v2.0
//
// See LICENSE for license information
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

import Foundation
import IPNStore
import Logging
import PostgresNIO

/// The PostgreSQL store's tables: the same rows and columns as the SQLite store's, so every
/// command and answer reads the same. Migrations run under a session advisory lock, once,
/// whichever node starts first; a node refuses a schema newer than it knows.
enum PostgresSchema {
    /// The advisory lock that serialises migrations across nodes ('ipndmigr').
    static let migrationLock: Int64 = 0x6970_6E64_6D69_6772
    /// Held to its commit by every transaction that hands out seqs: the sequencer's rounds
    /// (`EventSequencer`), and the writers of ipnd versions before p6, which number their events
    /// themselves; while both run (a rolling upgrade), seqs still follow commit order ('ipndevnt').
    static let eventLock: Int64 = 0x6970_6E64_6576_6E74
    /// Taken by a transaction that appends audit records, just before it appends, and held until
    /// it commits: one hash chain for every node ('ipndaudt'). Never taken by a notification's
    /// transaction.
    static let auditLock: Int64 = 0x6970_6E64_6175_6474

    /// Text columns that are compared and sorted as text (times in the fixed `Timestamp` form,
    /// identifiers) use the C collation: byte order, as SQLite compares them.
    static let migrations: [(identifier: String, sql: [String])] = [
        ("p1: orders, notifications, transitions, dedup keys, links, refunds, events, deliveries", [
            """
            CREATE SEQUENCE orders_id_seq;
            CREATE SEQUENCE notifications_id_seq;
            CREATE SEQUENCE events_seq;
            CREATE TABLE orders (
                id BIGINT PRIMARY KEY,
                provider TEXT COLLATE "C" NOT NULL,
                account TEXT COLLATE "C" NOT NULL,
                order_ref TEXT COLLATE "C" NOT NULL,
                provider_txn_id TEXT,
                state TEXT COLLATE "C" NOT NULL,
                amount_minor BIGINT,
                currency TEXT,
                refunded_minor BIGINT NOT NULL DEFAULT 0,
                expected_amount_minor BIGINT,
                expected_currency TEXT,
                flags TEXT NOT NULL DEFAULT '',
                created_at TEXT COLLATE "C" NOT NULL,
                updated_at TEXT COLLATE "C" NOT NULL,
                UNIQUE (provider, account, order_ref)
            );
            CREATE INDEX orders_by_state ON orders (state, id);
            CREATE INDEX orders_by_created_at ON orders (created_at);
            CREATE TABLE notifications (
                id BIGINT PRIMARY KEY,
                provider TEXT COLLATE "C" NOT NULL,
                account TEXT COLLATE "C" NOT NULL,
                received_at TEXT COLLATE "C" NOT NULL,
                client_ip TEXT,
                method TEXT NOT NULL DEFAULT 'POST',
                target TEXT NOT NULL,
                headers TEXT NOT NULL,
                body BYTEA NOT NULL,
                verdict TEXT COLLATE "C" NOT NULL,
                reason TEXT COLLATE "C",
                reason_detail TEXT,
                kind TEXT COLLATE "C",
                provider_status TEXT,
                dedup_key TEXT COLLATE "C",
                order_ref TEXT COLLATE "C",
                order_id BIGINT REFERENCES orders (id),
                provider_txn_id TEXT,
                link_key TEXT COLLATE "C",
                amount_minor BIGINT,
                currency TEXT,
                detail TEXT,
                pending_effect TEXT,
                reverified_from BIGINT
            );
            CREATE INDEX notifications_by_order ON notifications (order_id);
            CREATE INDEX notifications_by_verdict ON notifications (verdict, id);
            CREATE INDEX notifications_unlinked ON notifications (provider, account, link_key) WHERE verdict = 'unlinked';
            CREATE INDEX notifications_waiting_duplicates ON notifications (provider, account, link_key)
                WHERE verdict = 'duplicate' AND order_id IS NULL;
            CREATE INDEX notifications_by_received_at ON notifications (received_at);
            CREATE TABLE transitions (
                id BIGSERIAL PRIMARY KEY,
                order_id BIGINT NOT NULL REFERENCES orders (id),
                from_state TEXT,
                to_state TEXT NOT NULL,
                at TEXT COLLATE "C" NOT NULL,
                notification_id BIGINT REFERENCES notifications (id)
            );
            CREATE INDEX transitions_by_order ON transitions (order_id);
            CREATE TABLE dedup_keys (
                provider TEXT COLLATE "C" NOT NULL,
                account TEXT COLLATE "C" NOT NULL,
                dedup_key TEXT COLLATE "C" NOT NULL,
                notification_id BIGINT NOT NULL REFERENCES notifications (id),
                PRIMARY KEY (provider, account, dedup_key)
            );
            CREATE TABLE payment_links (
                provider TEXT COLLATE "C" NOT NULL,
                account TEXT COLLATE "C" NOT NULL,
                link_key TEXT COLLATE "C" NOT NULL,
                order_id BIGINT NOT NULL REFERENCES orders (id),
                PRIMARY KEY (provider, account, link_key)
            );
            CREATE TABLE refunds (
                order_id BIGINT NOT NULL REFERENCES orders (id),
                refund_id TEXT COLLATE "C" NOT NULL,
                amount_minor BIGINT,
                notification_id BIGINT NOT NULL REFERENCES notifications (id),
                PRIMARY KEY (order_id, refund_id)
            );
            CREATE TABLE heartbeat (
                node TEXT PRIMARY KEY,
                at TEXT NOT NULL
            );
            CREATE TABLE events (
                seq BIGINT PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                type TEXT COLLATE "C" NOT NULL,
                occurred_at TEXT COLLATE "C" NOT NULL,
                provider TEXT COLLATE "C" NOT NULL,
                account TEXT COLLATE "C" NOT NULL,
                order_id BIGINT NOT NULL REFERENCES orders (id),
                order_ref TEXT COLLATE "C" NOT NULL,
                order_json TEXT NOT NULL,
                from_state TEXT,
                to_state TEXT NOT NULL,
                flag TEXT,
                notification_id BIGINT,
                provider_status TEXT
            );
            CREATE INDEX events_by_order ON events (order_id, seq);
            CREATE INDEX events_by_occurred_at ON events (occurred_at);
            CREATE TABLE deliveries (
                id BIGSERIAL PRIMARY KEY,
                target TEXT COLLATE "C" NOT NULL,
                event_seq BIGINT NOT NULL REFERENCES events (seq),
                order_id BIGINT NOT NULL,
                state TEXT COLLATE "C" NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                first_attempt_at TEXT COLLATE "C",
                last_attempt_at TEXT COLLATE "C",
                last_status INTEGER,
                last_error TEXT,
                next_attempt_at TEXT COLLATE "C",
                delivered_at TEXT COLLATE "C",
                lease_owner TEXT,
                lease_until TEXT COLLATE "C",
                created_at TEXT COLLATE "C" NOT NULL
            );
            CREATE INDEX deliveries_due ON deliveries (target, next_attempt_at) WHERE state = 'pending';
            CREATE INDEX deliveries_order_queue ON deliveries (target, order_id, event_seq) WHERE state = 'pending';
            CREATE INDEX deliveries_by_target ON deliveries (target, state, id);
            CREATE INDEX deliveries_by_event ON deliveries (event_seq);
            CREATE INDEX deliveries_by_state ON deliveries (state, id);
            CREATE TABLE delivery_targets (
                name TEXT COLLATE "C" PRIMARY KEY,
                paused_at TEXT,
                paused_reason TEXT
            );
            CREATE TABLE store_meta (
                key TEXT PRIMARY KEY,
                value TEXT NOT NULL
            );
            """,
        ]),
        ("p2: rejected notifications indexed by arrival; notifications by the rejected one they were reverified from", [
            """
            CREATE INDEX notifications_rejected_by_received_at ON notifications (received_at) WHERE verdict = 'rejected';
            CREATE INDEX notifications_by_reverified_from ON notifications (reverified_from) WHERE reverified_from IS NOT NULL;
            """,
        ]),
        // The console's order lists, as SQLite's v6: search by reference prefix across
        // providers, the few flagged orders, and a provider's (account's) orders newest first
        // read in index order.
        ("p3: the ops console's order indexes", [
            """
            CREATE INDEX orders_by_ref ON orders (order_ref, id);
            CREATE INDEX orders_flagged ON orders (id) WHERE flags <> '';
            CREATE INDEX orders_by_provider ON orders (provider, id);
            CREATE INDEX orders_by_account ON orders (provider, account, id);
            """,
        ]),
        // Reconciliation, as SQLite's v8: the orders' inquiry schedule with a partial index of
        // the scheduled ones (orders waiting today are due at once), inquiry records, and the
        // inquiry a notification came from.
        ("p4: reconciliation: the orders' inquiry schedule, inquiry records, notifications from inquiries", [
            """
            ALTER TABLE orders ADD COLUMN inquiry_from TEXT COLLATE "C";
            ALTER TABLE orders ADD COLUMN inquiry_step INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE orders ADD COLUMN inquiry_due_at TEXT COLLATE "C";
            UPDATE orders SET inquiry_from = updated_at, inquiry_due_at = updated_at
                WHERE state IN ('expected', 'pending', 'authorized') AND (',' || flags || ',') NOT LIKE '%,unsettled,%';
            CREATE INDEX orders_inquiry_due ON orders (provider, account, inquiry_due_at) WHERE inquiry_due_at IS NOT NULL;
            ALTER TABLE notifications ADD COLUMN inquiry_id BIGINT;
            CREATE TABLE inquiries (
                id BIGSERIAL PRIMARY KEY,
                provider TEXT COLLATE "C" NOT NULL,
                account TEXT COLLATE "C" NOT NULL,
                order_ref TEXT COLLATE "C" NOT NULL,
                order_id BIGINT REFERENCES orders (id),
                asked_at TEXT COLLATE "C" NOT NULL,
                trigger TEXT NOT NULL,
                outcome TEXT COLLATE "C" NOT NULL,
                http_status INTEGER,
                provider_status TEXT,
                notification_id BIGINT,
                verdict TEXT,
                error TEXT,
                duration_ms BIGINT NOT NULL,
                url TEXT NOT NULL
            );
            CREATE INDEX inquiries_by_order ON inquiries (order_id, id);
            CREATE INDEX inquiries_by_asked_at ON inquiries (asked_at)
            """,
        ]),
        ("p5: the audit trail", [
            """
            CREATE TABLE audit_records (
                id BIGINT PRIMARY KEY,
                at TEXT COLLATE "C" NOT NULL,
                actor TEXT COLLATE "C" NOT NULL,
                role TEXT,
                via TEXT NOT NULL,
                action TEXT COLLATE "C" NOT NULL,
                target TEXT,
                outcome TEXT COLLATE "C" NOT NULL,
                client_ip TEXT,
                detail TEXT NOT NULL,
                prev_hash TEXT NOT NULL,
                hash TEXT NOT NULL
            );
            CREATE INDEX audit_by_actor ON audit_records (actor, id);
            CREATE INDEX audit_by_action ON audit_records (action, id);
            CREATE INDEX audit_by_outcome ON audit_records (outcome, id);
            CREATE INDEX audit_by_at ON audit_records (at)
            """,
        ]),
        // Events numbered after commit (EventSequencer): writers queue their events here with a
        // row id and no seq, and the node holding the sequencer lock moves the committed ones
        // into `events`, numbered. `events` and `deliveries` stay as they are: the feed's
        // consumers keep their cursors, pending deliveries their events. The queue is small
        // and rewritten all the time, so autovacuum visits it every 10,000 dead rows.
        ("p6: events numbered after commit: the queue the sequencer numbers", [
            """
            CREATE SEQUENCE events_row_ids;
            CREATE TABLE events_unsequenced (
                row_id BIGINT PRIMARY KEY,
                id TEXT NOT NULL,
                type TEXT COLLATE "C" NOT NULL,
                occurred_at TEXT COLLATE "C" NOT NULL,
                provider TEXT COLLATE "C" NOT NULL,
                account TEXT COLLATE "C" NOT NULL,
                order_id BIGINT NOT NULL,
                order_ref TEXT COLLATE "C" NOT NULL,
                order_json TEXT NOT NULL,
                from_state TEXT,
                to_state TEXT NOT NULL,
                flag TEXT,
                notification_id BIGINT,
                provider_status TEXT,
                targets TEXT[] NOT NULL
            ) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000,
                    autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 10000);
            CREATE INDEX events_unsequenced_by_order ON events_unsequenced (order_id, row_id)
            """,
        ]),
    ]

    /// Brings the database to this version's schema, under the migration lock; refuses one a
    /// newer ipnd migrated.
    /// - Parameter last: migrate no further than this migration (tests build an older store).
    static func migrate(_ client: PostgresClient, logger: Logger, through last: String? = nil) async throws(StoreError) {
        do {
            try await client.withConnection { connection in
                _ = try await connection.query("SELECT pg_advisory_lock(\(migrationLock))", logger: logger)
                do {
                    try await migrateLocked(connection, logger: logger, through: last)
                    _ = try await connection.query("SELECT pg_advisory_unlock(\(migrationLock))", logger: logger)
                } catch {
                    _ = try? await connection.query("SELECT pg_advisory_unlock(\(migrationLock))", logger: logger)
                    throw error
                }
            }
        } catch {
            throw StoreError(postgres: error, doing: "migrate the PostgreSQL store")
        }
    }

    private static func migrateLocked(_ connection: PostgresConnection, logger: Logger, through last: String?) async throws {
        _ = try await connection.query(
            "CREATE TABLE IF NOT EXISTS ipnd_migrations (identifier TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
            logger: logger)
        var applied = Set<String>()
        for try await identifier in try await connection.query("SELECT identifier FROM ipnd_migrations", logger: logger).decode(String.self) {
            applied.insert(identifier)
        }
        let known = Set(migrations.map(\.identifier))
        let unknown = applied.subtracting(known)
        guard unknown.isEmpty else {
            throw StoreError(message: "the store was migrated by a newer ipnd (\(unknown.sorted().joined(separator: "; "))); "
                + "run that version, or restore a backup taken before the upgrade")
        }
        let wanted = last.flatMap { last in migrations.firstIndex { $0.identifier == last } }.map { migrations.prefix(through: $0) }
            ?? migrations[...]
        for migration in wanted where !applied.contains(migration.identifier) {
            _ = try await connection.query("BEGIN", logger: logger)
            do {
                // One statement per query: the extended protocol takes no more.
                for script in migration.sql {
                    for statement in script.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) })
                    where !statement.isEmpty {
                        _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                }
                var record = SQL("INSERT INTO ipnd_migrations (identifier) VALUES (")
                record.append(record.bind(migration.identifier) + ")")
                _ = try await connection.query(record.query, logger: logger)
                _ = try await connection.query("COMMIT", logger: logger)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
            logger.info("store migrated", metadata: ["migration": "\(migration.identifier)"])
        }
    }
}
