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
import IPNCore
import IPNStore

/// The ops console's reads, shared by `SQLiteStore` and `SQLiteReadOnlyStore`. Each reads an
/// index range or a few rows, never a table: see the v6 migration for the indexes.
enum ConsoleQueries {
    static func notificationCounts(_ db: Database, since: String) throws -> [HourlyNotificationCount] {
        try Row.fetchAll(
            db, sql: "SELECT hour, provider, account, verdict, reason, count FROM notification_counts WHERE hour >= ? AND count > 0",
            arguments: [since]
        ).map { row in
            let verdictText: String = row["verdict"]
            guard let verdict = Verdict(rawValue: verdictText) else {
                throw StoreError(message: "notification_counts has an unknown verdict \"\(verdictText)\" in the store")
            }
            let reason: String = row["reason"]
            return HourlyNotificationCount(
                hour: row["hour"], provider: row["provider"], account: row["account"], verdict: verdict,
                reason: reason.isEmpty ? nil : reason, count: row["count"])
        }
    }

    /// Through `orders_flagged`, which holds only the orders with a flag.
    static func flaggedOrders(_ db: Database, flag: String, limit: Int) throws -> FlaggedOrders {
        let condition = "flags <> '' AND (',' || flags || ',') LIKE ? ESCAPE '\\'"
        let pattern = "%," + likeEscaped(flag) + ",%"
        let total = try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM orders INDEXED BY orders_flagged WHERE \(condition)", arguments: [pattern]) ?? 0
        let newest = try Row.fetchAll(
            db, sql: "SELECT * FROM orders INDEXED BY orders_flagged WHERE \(condition) ORDER BY id DESC LIMIT ?",
            arguments: [pattern, max(0, limit)]
        ).map(Queries.orderRecord)
        return FlaggedOrders(total: total, newest: newest)
    }

    /// A range of `orders_by_ref`: every reference starting with the prefix sorts at or after
    /// it and before it followed by the highest code point (SQLite compares text as bytes).
    static func searchOrders(_ db: Database, _ search: OrderSearch) throws -> [OrderRecord] {
        guard !search.referencePrefix.isEmpty else { return [] }
        var sql = "SELECT * FROM orders INDEXED BY orders_by_ref WHERE order_ref >= ? AND order_ref < ?"
        var arguments: [any DatabaseValueConvertible] = [search.referencePrefix, search.referencePrefix + "\u{10FFFF}"]
        if let after = search.after {
            sql += " AND (order_ref, id) > (?, ?)"
            arguments += [after.orderRef, after.id]
        }
        sql += " ORDER BY order_ref, id LIMIT ?"
        arguments.append(max(0, search.limit))
        return try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).map(Queries.orderRecord)
    }

    static func notification(_ db: Database, id: Int64, includeRaw: Bool) throws -> NotificationRecord? {
        try Row.fetchOne(db, sql: "SELECT * FROM notifications WHERE id = ?", arguments: [id]).map {
            try Queries.notificationRecord($0, includeRaw: includeRaw)
        }
    }

    private static func likeEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_")
    }
}

/// The hourly notification counts (`notification_counts`), kept in the write transaction.
enum NotificationCounts {
    /// The statement the write path runs once per key and batch, with the batch's count
    /// (`WriteSQL.notificationCount`, `WriteContext.writeCounts`).
    static let incrementSQL = """
        INSERT INTO notification_counts (hour, provider, account, verdict, reason, count) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (hour, provider, account, verdict, reason) DO UPDATE SET count = count + excluded.count
        """

    /// The columns of a stored notification's count, read from its row.
    private static let key = "substr(received_at, 1, 13) || ':00:00.000Z', provider, account, verdict, COALESCE(reason, '')"

    /// Takes notification `id` out of the count of its current verdict and reason (before an
    /// update changes them); a count that falls to zero goes, as if it had never been.
    static func remove(_ db: Database, notificationID id: Int64) throws {
        try db.cachedStatement(sql: """
            UPDATE notification_counts SET count = count - 1
            WHERE (hour, provider, account, verdict, reason) = (SELECT \(key) FROM notifications WHERE id = ?)
            """).execute(arguments: [id])
        try db.cachedStatement(sql: """
            DELETE FROM notification_counts
            WHERE (hour, provider, account, verdict, reason) = (SELECT \(key) FROM notifications WHERE id = ?) AND count <= 0
            """).execute(arguments: [id])
    }

    /// Counts notification `id` under its current verdict and reason (after an update).
    static func add(_ db: Database, notificationID id: Int64) throws {
        try db.cachedStatement(sql: """
            INSERT INTO notification_counts (hour, provider, account, verdict, reason, count)
            SELECT \(key), 1 FROM notifications WHERE id = ?
            ON CONFLICT (hour, provider, account, verdict, reason) DO UPDATE SET count = count + 1
            """).execute(arguments: [id])
    }

    /// Counts every stored notification (the migration that creates the table).
    static let backfillSQL = """
        INSERT INTO notification_counts (hour, provider, account, verdict, reason, count)
        SELECT \(key), COUNT(*) FROM notifications GROUP BY 1, 2, 3, 4, 5
        """
}
