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

import IPNCore
import IPNStore
import PostgresNIO

/// The ops console's reads (`StoreReading`), answering as the SQLite store does.
///
/// The order lists read through the p3 indexes. The overview's hourly counts are counted from
/// the notifications of the window (through `notifications_by_received_at`), where SQLite keeps
/// a `notification_counts` table in the write transaction: here a shared counter row per hour
/// would be a lock every node's batch waits on, so the count is paid by the page that shows it.
extension PostgresStore {
    public func notificationCounts(since: String) async throws(StoreError) -> [HourlyNotificationCount] {
        var sql = SQL()
        sql.append("""
            SELECT substr(received_at, 1, 13) || ':00:00.000Z' AS hour, provider, account, verdict, coalesce(reason, '') AS reason,
                   count(*) AS n
            FROM notifications WHERE received_at >= \(sql.bind(since)) GROUP BY 1, 2, 3, 4, 5
            """)
        return try await rows(sql, doing: "count notifications by hour").map { row throws(StoreError) in
            try record(row) { row in
                let verdictText = try row.text("verdict")
                guard let verdict = Verdict(rawValue: verdictText) else {
                    throw StoreError(message: "notification has an unknown verdict \"\(verdictText)\" in the store")
                }
                let reason = try row.text("reason")
                return HourlyNotificationCount(
                    hour: try row.text("hour"), provider: try row.text("provider"), account: try row.text("account"),
                    verdict: verdict, reason: reason.isEmpty ? nil : reason, count: Int(try row.int("n")))
            }
        }
    }

    public func flaggedOrders(_ flag: String, limit: Int) async throws(StoreError) -> FlaggedOrders {
        func condition(_ sql: inout SQL) -> String {
            "flags <> '' AND position(',' || \(sql.bind(flag)) || ',' in ',' || flags || ',') > 0"
        }
        var count = SQL()
        count.append("SELECT count(*) AS n FROM orders WHERE \(condition(&count))")
        let total = try await rows(count, doing: "count flagged orders").first.map { row throws(StoreError) in
            try record(row) { try $0.int("n") }
        } ?? 0
        var newest = SQL()
        newest.append("SELECT \(OrderColumns.list) FROM orders WHERE \(condition(&newest)) ORDER BY id DESC ")
        newest.append("LIMIT \(newest.bind(Int64(max(0, limit))))")
        let orders = try await rows(newest, doing: "list flagged orders").map { row throws(StoreError) in
            try record(row, OrderColumns.record)
        }
        return FlaggedOrders(total: Int(total), newest: orders)
    }

    /// References compared as bytes (`COLLATE "C"`), as SQLite compares them.
    public func searchOrders(_ search: OrderSearch) async throws(StoreError) -> [OrderRecord] {
        guard !search.referencePrefix.isEmpty else { return [] }
        var sql = SQL("SELECT \(OrderColumns.list) FROM orders WHERE ")
        sql.append("order_ref COLLATE \"C\" >= \(sql.bind(search.referencePrefix)) ")
        sql.append("AND order_ref COLLATE \"C\" < \(sql.bind(search.referencePrefix + "\u{10FFFF}"))")
        if let after = search.after {
            sql.append(" AND (order_ref COLLATE \"C\", id) > (\(sql.bind(after.orderRef)), \(sql.bind(after.id)))")
        }
        sql.append(" ORDER BY order_ref COLLATE \"C\", id LIMIT \(sql.bind(Int64(max(0, search.limit))))")
        return try await rows(sql, doing: "search orders").map { row throws(StoreError) in try record(row, OrderColumns.record) }
    }

    public func notification(id: Int64, includeRaw: Bool) async throws(StoreError) -> NotificationRecord? {
        var sql = SQL("SELECT \(NotificationColumns.list(includeRaw: includeRaw)) FROM notifications WHERE id = ")
        sql.append(sql.bind(id))
        return try await rows(sql, doing: "read a notification").first.map { row throws(StoreError) in
            try record(row) { try NotificationColumns.record($0, includeRaw: includeRaw) }
        }
    }

    public func deliveries(orderID: Int64) async throws(StoreError) -> [DeliveryRecord] {
        var sql = SQL("""
            SELECT d.id, d.target, d.event_seq, d.state, d.attempts, d.last_attempt_at, d.last_status, d.last_error,
                   d.next_attempt_at, d.delivered_at, d.created_at, e.id AS event_id, e.type, e.provider, e.account, e.order_ref,
                   (t.paused_at IS NOT NULL) AS paused
            FROM events e JOIN deliveries d ON d.event_seq = e.seq LEFT JOIN delivery_targets t ON t.name = d.target
            WHERE e.order_id =
            """)
        sql.append(" \(sql.bind(orderID)) ORDER BY d.id DESC")
        return try await rows(sql, doing: "list an order's deliveries").map { row throws(StoreError) in
            try record(row, DeliveryColumns.record)
        }
    }
}
