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

import GRDB
import IPNStore

/// The store's tables, created and evolved by `DatabaseMigrator`.
enum Schema {
    /// A store migrated by a newer ipnd is refused: this version would write rows without what
    /// the newer schema expects of them (going back a version is not supported).
    static func refuseNewerSchema(_ db: Database) throws {
        let unknown = try migrator.hasBeenSuperseded(db) ? migrator.appliedIdentifiers(db).subtracting(migrator.migrations) : []
        guard unknown.isEmpty else {
            throw StoreError(message: "the store was migrated by a newer ipnd (\(unknown.sorted().joined(separator: "; "))); "
                + "run that version, or restore a backup taken before the upgrade")
        }
    }

    /// A command writes only to a store `ipnd serve` has brought to this version's schema.
    static func requireCurrentSchema(_ db: Database, path: String) throws {
        guard try db.tableExists("orders") else {
            throw StoreError(message: "\(path) is not an ipnd store (no orders table)")
        }
        let missing = Set(migrator.migrations).subtracting(try migrator.appliedIdentifiers(db))
        guard missing.isEmpty else {
            throw StoreError(message: "the store at \(path) predates this ipnd (\(missing.sorted().joined(separator: "; ")) not applied); "
                + "start ipnd serve of this version once to upgrade it")
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: notifications, orders, transitions, dedup keys, links, refunds") { db in
            try db.execute(sql: """
                CREATE TABLE orders (
                    id INTEGER PRIMARY KEY,
                    provider TEXT NOT NULL,
                    account TEXT NOT NULL,
                    order_ref TEXT NOT NULL,
                    provider_txn_id TEXT,
                    state TEXT NOT NULL,
                    amount_minor INTEGER,
                    currency TEXT,
                    refunded_minor INTEGER NOT NULL DEFAULT 0,
                    expected_amount_minor INTEGER,
                    expected_currency TEXT,
                    flags TEXT NOT NULL DEFAULT '',
                    created_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL,
                    UNIQUE (provider, account, order_ref)
                );
                CREATE INDEX orders_by_state ON orders(state, id);

                CREATE TABLE notifications (
                    id INTEGER PRIMARY KEY,
                    provider TEXT NOT NULL,
                    account TEXT NOT NULL,
                    received_at TEXT NOT NULL,
                    client_ip TEXT,
                    method TEXT NOT NULL DEFAULT 'POST',
                    target TEXT NOT NULL,
                    headers TEXT NOT NULL,
                    body BLOB NOT NULL,
                    verdict TEXT NOT NULL,
                    reason TEXT,
                    reason_detail TEXT,
                    kind TEXT,
                    provider_status TEXT,
                    dedup_key TEXT,
                    order_ref TEXT,
                    order_id INTEGER REFERENCES orders(id),
                    provider_txn_id TEXT,
                    link_key TEXT,
                    amount_minor INTEGER,
                    currency TEXT,
                    detail TEXT,
                    pending_effect TEXT
                );
                CREATE INDEX notifications_by_order ON notifications(order_id);
                CREATE INDEX notifications_by_verdict ON notifications(verdict, id);
                CREATE INDEX notifications_unlinked ON notifications(provider, account, link_key)
                    WHERE verdict = 'unlinked';

                CREATE TABLE transitions (
                    id INTEGER PRIMARY KEY,
                    order_id INTEGER NOT NULL REFERENCES orders(id),
                    from_state TEXT,
                    to_state TEXT NOT NULL,
                    at TEXT NOT NULL,
                    notification_id INTEGER REFERENCES notifications(id)
                );
                CREATE INDEX transitions_by_order ON transitions(order_id);

                CREATE TABLE dedup_keys (
                    provider TEXT NOT NULL,
                    account TEXT NOT NULL,
                    dedup_key TEXT NOT NULL,
                    notification_id INTEGER NOT NULL REFERENCES notifications(id),
                    PRIMARY KEY (provider, account, dedup_key)
                ) WITHOUT ROWID;

                CREATE TABLE payment_links (
                    provider TEXT NOT NULL,
                    account TEXT NOT NULL,
                    link_key TEXT NOT NULL,
                    order_id INTEGER NOT NULL REFERENCES orders(id),
                    PRIMARY KEY (provider, account, link_key)
                ) WITHOUT ROWID;

                CREATE TABLE refunds (
                    order_id INTEGER NOT NULL REFERENCES orders(id),
                    refund_id TEXT NOT NULL,
                    amount_minor INTEGER,
                    notification_id INTEGER NOT NULL REFERENCES notifications(id),
                    PRIMARY KEY (order_id, refund_id)
                ) WITHOUT ROWID;

                CREATE TABLE heartbeat (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    at TEXT NOT NULL
                );
                """)
        }
        migrator.registerMigration("v2: orders created by notifications with no state effect carry no transition") { db in
            // Earlier versions gave such an order a transition from null to pending that no
            // notification caused; providers.md says they cause none, and the first notification
            // that moves the order is now its first transition.
            try db.execute(sql: """
                DELETE FROM transitions WHERE from_state IS NULL AND to_state = 'pending' AND notification_id IS NULL
                """)
        }
        migrator.registerMigration("v3: redeliveries of a notification waiting for its payment are linked with it") { db in
            // A redelivery of a refund or capture still waiting for its payment was stored with
            // no order, and stayed so once the payment linked the original: `orders show` did not
            // list it. The partial index finds such rows when the payment arrives; the update
            // links the ones earlier versions left behind.
            try db.execute(sql: """
                CREATE INDEX notifications_waiting_duplicates ON notifications(provider, account, link_key)
                    WHERE verdict = 'duplicate' AND order_id IS NULL;
                UPDATE notifications SET
                    order_id = (SELECT l.order_id FROM payment_links l WHERE l.provider = notifications.provider
                                AND l.account = notifications.account AND l.link_key = notifications.link_key),
                    order_ref = (SELECT o.order_ref FROM payment_links l JOIN orders o ON o.id = l.order_id
                                 WHERE l.provider = notifications.provider AND l.account = notifications.account
                                 AND l.link_key = notifications.link_key)
                WHERE verdict = 'duplicate' AND order_id IS NULL AND link_key IS NOT NULL
                    AND EXISTS (SELECT 1 FROM payment_links l WHERE l.provider = notifications.provider
                                AND l.account = notifications.account AND l.link_key = notifications.link_key);
                """)
        }
        migrator.registerMigration("v4: notifications are indexed by the time they were received") { db in
            // `notifications list --since` and `since=` find the oldest matching row through it,
            // instead of reading the table back to its first row (see Queries.newestFirst).
            // Orders, fewer and read less, are not: the index costs every insert.
            try db.execute(sql: "CREATE INDEX notifications_by_received_at ON notifications(received_at)")
        }
        migrator.registerMigration("v5: order events, their deliveries, delivery targets; reverified notifications") { db in
            // `seq` is AUTOINCREMENT: never reused, even once retention has removed every event.
            // One writer commits at a time, so seq order is commit order.
            try db.execute(sql: """
                CREATE TABLE events (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    type TEXT NOT NULL,
                    occurred_at TEXT NOT NULL,
                    provider TEXT NOT NULL,
                    account TEXT NOT NULL,
                    order_id INTEGER NOT NULL REFERENCES orders(id),
                    order_ref TEXT NOT NULL,
                    order_json TEXT NOT NULL,
                    from_state TEXT,
                    to_state TEXT NOT NULL,
                    flag TEXT,
                    notification_id INTEGER,
                    provider_status TEXT
                );
                CREATE INDEX events_by_order ON events(order_id, seq);
                CREATE INDEX events_by_occurred_at ON events(occurred_at);

                CREATE TABLE deliveries (
                    id INTEGER PRIMARY KEY,
                    target TEXT NOT NULL,
                    event_seq INTEGER NOT NULL REFERENCES events(seq),
                    order_id INTEGER NOT NULL,
                    state TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    first_attempt_at TEXT,
                    last_attempt_at TEXT,
                    last_status INTEGER,
                    last_error TEXT,
                    next_attempt_at TEXT,
                    delivered_at TEXT,
                    lease_owner TEXT,
                    lease_until TEXT,
                    created_at TEXT NOT NULL
                );
                -- What is due, per target; and, per target and order, what comes first.
                CREATE INDEX deliveries_due ON deliveries(target, next_attempt_at) WHERE state = 'pending';
                CREATE INDEX deliveries_order_queue ON deliveries(target, order_id, event_seq) WHERE state = 'pending';
                CREATE INDEX deliveries_by_target ON deliveries(target, state, id);
                CREATE INDEX deliveries_by_event ON deliveries(event_seq);
                CREATE INDEX deliveries_by_state ON deliveries(state, id);

                CREATE TABLE delivery_targets (
                    name TEXT PRIMARY KEY,
                    paused_at TEXT,
                    paused_reason TEXT
                ) WITHOUT ROWID;

                CREATE TABLE store_meta (
                    key TEXT PRIMARY KEY,
                    value TEXT NOT NULL
                ) WITHOUT ROWID;

                ALTER TABLE notifications ADD COLUMN reverified_from INTEGER;
                """)
        }
        migrator.registerMigration("v6: the ops console's hourly notification counts and order indexes") { db in
            // notification_counts: notifications per hour of received_at, provider, account,
            // verdict and reason ('' for none), kept by the write path in the notification's own
            // transaction (one upsert each; a waiting notification's verdict change moves one),
            // so the overview sums a day from a few hundred rows instead of counting a day's
            // notifications. Filled here from the notifications already stored.
            // orders_by_ref: the console's search by reference prefix, across providers.
            // orders_flagged: only orders with a flag (few): the overview counts amount_mismatch.
            // orders_by_created_at: `since` on orders stops reading at the first older order,
            // as notifications_by_received_at does for notifications (Queries.newestFirst).
            // orders_by_provider, orders_by_account: the orders list filtered by provider (and
            // account), newest first, read in index order; without them SQLite took the unique
            // (provider, account, order_ref) index and sorted all of a provider's orders by id
            // (a fifth of the table, 100 ms at 200,000 orders). Orders are written far less often
            // than notifications, which keep finding a page of any provider newest first.
            try db.execute(sql: """
                CREATE TABLE notification_counts (
                    hour TEXT NOT NULL,
                    provider TEXT NOT NULL,
                    account TEXT NOT NULL,
                    verdict TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    count INTEGER NOT NULL,
                    PRIMARY KEY (hour, provider, account, verdict, reason)
                ) WITHOUT ROWID;
                \(NotificationCounts.backfillSQL);

                CREATE INDEX orders_by_ref ON orders(order_ref, id);
                CREATE INDEX orders_flagged ON orders(id) WHERE flags <> '';
                CREATE INDEX orders_by_created_at ON orders(created_at);
                CREATE INDEX orders_by_provider ON orders(provider, id);
                CREATE INDEX orders_by_account ON orders(provider, account, id);
                """)
        }
        migrator.registerMigration("v7: rejected notifications indexed by arrival; notifications by the rejected one they were reverified from") { db in
            // Retention finds the rejected rows older than its cutoff, oldest first, without
            // reading the authentic ones; `notifications reverify` finds what it already recorded
            // from each rejected row. Both partial: the indexes cost only the rows they cover.
            try db.execute(sql: """
                CREATE INDEX notifications_rejected_by_received_at ON notifications(received_at)
                    WHERE verdict = 'rejected';
                CREATE INDEX notifications_by_reverified_from ON notifications(reverified_from)
                    WHERE reverified_from IS NOT NULL;
                """)
        }
        migrator.registerMigration("v8: reconciliation: the orders' inquiry schedule, inquiry records, notifications from inquiries") { db in
            // inquiry_from, inquiry_step, inquiry_due_at: where an order that has not settled
            // stands in the inquiry schedule (InquiryScheduleState). orders_inquiry_due holds only
            // the orders that are scheduled, so finding a batch of due orders of an account reads
            // a few index entries however many orders there are, and settled orders cost the
            // index nothing. Orders already waiting are due at once, counted from their last
            // update: an account given an `inquiry` section is asked about what went quiet before.
            // notifications.inquiry_id: a fact an inquiry recorded (`source: inquiry`); NULL for
            // the provider's own notifications, so the column costs them nothing.
            try db.execute(sql: """
                ALTER TABLE orders ADD COLUMN inquiry_from TEXT;
                ALTER TABLE orders ADD COLUMN inquiry_step INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE orders ADD COLUMN inquiry_due_at TEXT;
                UPDATE orders SET inquiry_from = updated_at, inquiry_due_at = updated_at
                    WHERE state IN ('expected', 'pending', 'authorized') AND (',' || flags || ',') NOT LIKE '%,unsettled,%';
                CREATE INDEX orders_inquiry_due ON orders(provider, account, inquiry_due_at) WHERE inquiry_due_at IS NOT NULL;

                ALTER TABLE notifications ADD COLUMN inquiry_id INTEGER;

                CREATE TABLE inquiries (
                    id INTEGER PRIMARY KEY,
                    provider TEXT NOT NULL,
                    account TEXT NOT NULL,
                    order_ref TEXT NOT NULL,
                    order_id INTEGER REFERENCES orders(id),
                    asked_at TEXT NOT NULL,
                    trigger TEXT NOT NULL,
                    outcome TEXT NOT NULL,
                    http_status INTEGER,
                    provider_status TEXT,
                    notification_id INTEGER,
                    verdict TEXT,
                    error TEXT,
                    duration_ms INTEGER NOT NULL,
                    url TEXT NOT NULL
                );
                CREATE INDEX inquiries_by_order ON inquiries(order_id, id);
                CREATE INDEX inquiries_by_asked_at ON inquiries(asked_at);
                """)
        }
        return migrator
    }
}
