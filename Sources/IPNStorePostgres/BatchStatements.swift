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

import IPNStore
import NIOCore
import PostgresNIO

/// The statements every batch runs, prepared once per connection (postgres-nio keeps them by
/// name): PostgreSQL parses and plans each once, not once per batch. A batch is BEGIN, `BatchLock`,
/// `BatchFactsRead` (and `BatchDependentFacts` when it read existing orders), `BatchWrite`, COMMIT:
/// every row of a kind in one array parameter, expanded with `unnest`.
///
/// A statement's text is made by the same code as its parameters (`SQL.bind` hands out the
/// placeholders in order), from a batch with no rows: it depends only on the shapes.

/// The batch's advisory locks (sorted, so batches never deadlock on them), no sequential scans for
/// the rest of the transaction (`TableStatistics`), and ids for the rows it may insert.
struct BatchLock: PostgresPreparedStatement {
    typealias Row = AllocatedIDs
    var keys: [Int64] = []
    var notifications: Int64 = 0
    var orders: Int64 = 0
    var inquiries: Int64 = 0

    static let sql = BatchLock().statement.text

    var statement: SQL {
        var sql = SQL()
        let (k, n, o, i) = (sql.bind(keys), sql.bind(notifications), sql.bind(orders), sql.bind(inquiries))
        sql.append("""
            SELECT set_config('enable_seqscan', 'off', true) AS seqscan,
                   (SELECT count(pg_advisory_xact_lock(k)) FROM unnest(\(k)::bigint[]) AS k) AS locked,
                   (SELECT array_agg(nextval('notifications_id_seq')) FROM generate_series(1, \(n)::bigint)) AS n,
                   (SELECT array_agg(nextval('orders_id_seq')) FROM generate_series(1, \(o)::bigint)) AS o,
                   (SELECT array_agg(nextval('inquiries_id_seq')) FROM generate_series(1, \(i)::bigint)) AS i
            """)
        return sql
    }

    func makeBindings() throws -> PostgresBindings { statement.bindings }

    func decodeRow(_ row: PostgresRow) throws -> AllocatedIDs {
        let (_, _, n, o, i) = try row.decode((String, Int64, [Int64]?, [Int64]?, [Int64]?).self)
        return AllocatedIDs(notifications: (n ?? []).sorted(), orders: (o ?? []).sorted(), inquiries: (i ?? []).sorted())
    }
}

/// Every fact a batch reads up front, in one statement: the first notification of each dedup key
/// (with its order as it is now), the orders named by reference and those behind the payment
/// links read (locked to the commit, `FOR NO KEY UPDATE`, in id order), the links, and the
/// notifications waiting for the links payments register (oldest first). One row per fact, `kind`
/// saying which (`d`, `o`, `l`, `w`); an order's row has the columns `OrderColumns` reads.
///
/// Every key read is one the batch holds the advisory lock of, taken before this statement's
/// snapshot: what another writer of the same key committed is seen. An order locked here may
/// also have been waited for (a writer that reached it through another key); the row lock
/// returns it as that writer left it, and its refunds and transitions are read after this
/// statement (`BatchDependentFacts`), with a snapshot taken once the lock is held.
struct BatchFactsRead: PostgresPreparedStatement {
    typealias Row = PGRow
    var dedupKeys: [FactsNeeded.ScopedKey] = []
    var orderRefs: [FactsNeeded.ScopedKey] = []
    var linkKeys: [FactsNeeded.ScopedKey] = []
    var waitingLinks: [FactsNeeded.ScopedKey] = []
    /// Whether orders are locked (a dry run reads without, and runs the statement unprepared).
    var lock = true

    static let sql = BatchFactsRead().statement.text

    /// An order's columns after `id, provider, account` (`OrderColumns.list`), with their types.
    private static let orderTail: [(name: String, type: String)] = [
        ("order_ref", "text"), ("provider_txn_id", "text"), ("state", "text"), ("amount_minor", "bigint"), ("currency", "text"),
        ("refunded_minor", "bigint"), ("expected_amount_minor", "bigint"), ("expected_currency", "text"), ("flags", "text"),
        ("created_at", "text"), ("updated_at", "text"), ("inquiry_from", "text"), ("inquiry_step", "integer"),
        ("inquiry_due_at", "text"),
    ]

    var statement: SQL {
        var sql = SQL()
        func wanted(_ keys: [FactsNeeded.ScopedKey]) -> String {
            let (p, a, k) = (sql.bind(keys.map(\.scope.provider)), sql.bind(keys.map(\.scope.account)), sql.bind(keys.map(\.key)))
            return "SELECT * FROM unnest(\(p)::text[], \(a)::text[], \(k)::text[]) AS w (provider, account, key)"
        }
        let (dedup, orders, links, waiting) = (wanted(dedupKeys), wanted(orderRefs), wanted(linkKeys), wanted(waitingLinks))
        let tail = Self.orderTail
        let nullTail = tail.map { "NULL::\($0.type)" }.joined(separator: ", ")
        // The dedup row's order reference and state are its order's, now.
        let dedupTail = tail.map { column in
            switch column.name {
            case "order_ref": "o.order_ref"
            case "state": "o.state"
            default: "NULL::\(column.type) AS \(column.name)"
            }
        }.joined(separator: ", ")
        // Each wanted key is looked up on its own (LATERAL, fenced by LIMIT or OFFSET), and the
        // orders to lock by their ids: a plan that joins the keys to a whole table, which a
        // generic plan made while a table was small would otherwise keep, never happens.
        sql.append("""
            WITH wanted_dedup AS (\(dedup)), wanted_orders AS (\(orders)), wanted_links AS (\(links)), wanted_waiting AS (\(waiting)),
            links AS (
                SELECT l.provider, l.account, l.link_key, l.order_id FROM wanted_links w,
                LATERAL (SELECT * FROM payment_links l
                         WHERE l.provider = w.provider AND l.account = w.account AND l.link_key = w.key LIMIT 1) AS l
            ), locked AS (
                SELECT o.id, o.provider, o.account, \(tail.map { "o.\($0.name)" }.joined(separator: ", ")) FROM orders o
                WHERE o.id = ANY (ARRAY(
                    SELECT r.id FROM wanted_orders w,
                    LATERAL (SELECT r.id FROM orders r
                             WHERE r.provider = w.provider AND r.account = w.account AND r.order_ref = w.key LIMIT 1) AS r
                    UNION SELECT order_id FROM links))
                ORDER BY o.id \(lock ? "FOR NO KEY UPDATE OF o" : "")
            )
            SELECT 'd' AS kind, d.dedup_key AS key, d.notification_id, n.order_ref AS stored_ref, o.id AS order_id,
                   NULL::text AS pending_effect, NULL::bigint AS id, d.provider, d.account, \(dedupTail)
            FROM wanted_dedup w,
            LATERAL (SELECT * FROM dedup_keys d
                     WHERE d.provider = w.provider AND d.account = w.account AND d.dedup_key = w.key LIMIT 1) AS d
            JOIN notifications n ON n.id = d.notification_id
            LEFT JOIN orders o ON o.id = n.order_id
            UNION ALL
            SELECT 'l', link_key, NULL, NULL, order_id, NULL, NULL, provider, account, \(nullTail) FROM links
            UNION ALL
            SELECT 'w', n.link_key, n.id, NULL, NULL, n.pending_effect, NULL, n.provider, n.account, \(nullTail)
            FROM wanted_waiting w,
            LATERAL (SELECT * FROM notifications n
                     WHERE n.provider = w.provider AND n.account = w.account AND n.link_key = w.key AND n.verdict = 'unlinked'
                     OFFSET 0) AS n
            UNION ALL
            SELECT 'o', NULL, NULL, NULL, NULL, NULL, id, provider, account, \(tail.map(\.name).joined(separator: ", ")) FROM locked
            """)
        return sql
    }

    func makeBindings() throws -> PostgresBindings { statement.bindings }
    func decodeRow(_ row: PostgresRow) throws -> PGRow { PGRow(row) }
}

/// What the planner needs of the existing orders a batch read: their refunds, whether the
/// pending ones have a transition, and the currency of the first applied refund of those whose
/// amount is not known. Rows of `kind` `r` (refund), `t` (has a transition), `c` (currency).
struct BatchDependentFacts: PostgresPreparedStatement {
    typealias Row = PGRow
    var orders: [Int64] = []
    var pending: [Int64] = []
    var unknownAmount: [Int64] = []

    static let sql = BatchDependentFacts().statement.text

    var statement: SQL {
        var sql = SQL()
        let (o, p, u) = (sql.bind(orders), sql.bind(pending), sql.bind(unknownAmount))
        sql.append("""
            SELECT 'r' AS kind, order_id, refund_id AS text, amount_minor FROM refunds WHERE order_id = ANY(\(o)::bigint[])
            UNION ALL
            SELECT 't', p.id, NULL, NULL FROM unnest(\(p)::bigint[]) AS p (id)
            WHERE EXISTS (SELECT 1 FROM transitions t WHERE t.order_id = p.id)
            UNION ALL
            (SELECT DISTINCT ON (order_id) 'c', order_id, currency, NULL FROM notifications
             WHERE order_id = ANY(\(u)::bigint[]) AND kind = 'refund' AND verdict = 'applied' AND currency IS NOT NULL
             ORDER BY order_id, id)
            """)
        return sql
    }

    func makeBindings() throws -> PostgresBindings { statement.bindings }
    func decodeRow(_ row: PostgresRow) throws -> PGRow { PGRow(row) }
}

/// A batch's common rows in one statement: new and changed orders, notifications, transitions,
/// refunds, dedup keys, payment links, and the events queued for the sequencer. Each kind is a
/// data-modifying CTE over its columns' arrays (empty when the batch has none); PostgreSQL checks
/// the foreign keys once the whole statement ran, so rows may name rows of the same statement.
/// The rare rows (waiting notifications, adopted duplicates, an inquiry's record and next step)
/// follow, one statement per kind, once these are written.
struct BatchWrite: PostgresPreparedStatement {
    typealias Row = ()
    var orderInserts: [[RowValue]] = []
    var orderUpdates: [[RowValue]] = []
    var notifications: [[RowValue]] = []
    var transitions: [[RowValue]] = []
    var refunds: [[RowValue]] = []
    var dedupKeys: [[RowValue]] = []
    var links: [[RowValue]] = []
    /// The events, each with its delivery targets joined by commas as the last value.
    var events: [[RowValue]] = []

    static let sql = BatchWrite().statement.text

    /// The queued event's columns: the event's, then its targets.
    static let queuedEvent = RowShape(table: "events_unsequenced", columns: EventRow.shape.columns + [("targets", .text)])

    var statement: SQL {
        var sql = SQL()
        var parts: [String] = []
        func part(_ name: String, _ shape: RowShape, _ rows: [[RowValue]]) {
            var batch = ColumnBatch(shape.columns.count)
            for row in rows { batch.add(row) }
            parts.append("\(name) AS (\(shape.postgresSQL(columns: batch.bindColumns(into: &sql, shape: shape))))")
        }
        part("new_orders", OrderRow.shape, orderInserts)
        part("changed_orders", OrderUpdateRow.shape, orderUpdates)
        part("new_notifications", NotificationRow.shape, notifications)
        part("new_transitions", TransitionRow.shape, transitions)
        part("new_refunds", RefundRow.shape, refunds)
        part("new_dedup_keys", DedupKeyRow.shape, dedupKeys)
        part("new_links", LinkRow.shape, links)
        // Each event takes the next row id in the order the plans wrote them (the select list is
        // evaluated after the ORDER BY); delivery target names are [a-z0-9_-], a comma separates them.
        var batch = ColumnBatch(Self.queuedEvent.columns.count)
        for row in events { batch.add(row) }
        let arrays = batch.bindColumns(into: &sql, shape: Self.queuedEvent)
        let names = (1...Self.queuedEvent.columns.count).map { "c\($0)" }
        parts.append("""
            queued_events AS (
                INSERT INTO events_unsequenced (row_id, \(EventRow.shape.columnList), targets)
                SELECT nextval('events_row_ids'), \(names.dropLast().joined(separator: ", ")), string_to_array(\(names[names.count - 1]), ',')
                FROM unnest(\(arrays)) WITH ORDINALITY AS u (\(names.joined(separator: ", ")), position)
                ORDER BY position)
            """)
        sql.append("WITH " + parts.joined(separator: ",\n") + "\nSELECT 1")
        return sql
    }

    func makeBindings() throws -> PostgresBindings { statement.bindings }
    func decodeRow(_ row: PostgresRow) throws {}
}

extension PostgresConnection {
    /// Runs a prepared statement and reads every row it returns.
    func rows<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws -> [Statement.Row] {
        var rows: [Statement.Row] = []
        for try await row in try await execute(statement, logger: logger) { rows.append(row) }
        return rows
    }
}
