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

/// The queries: the same records, filters and paging as the SQLite store's.
extension PostgresStore {
    /// Up to how many rows new enough for `since` bound the ids a list reads (as SQLite's).
    static let sinceBoundRows: Int64 = 10_000

    public func orders(_ filter: OrderFilter) async throws(StoreError) -> [OrderRecord] {
        var sql = SQL("SELECT \(OrderColumns.list) FROM orders")
        var clauses: [String] = []
        if let provider = filter.provider { clauses.append("provider = \(sql.bind(provider))") }
        if let account = filter.account { clauses.append("account = \(sql.bind(account))") }
        if let state = filter.state { clauses.append("state = \(sql.bind(state.rawValue))") }
        if let since = filter.since { clauses.append("created_at >= \(sql.bind(since))") }
        if let beforeID = filter.beforeID { clauses.append("id < \(sql.bind(beforeID))") }
        if !clauses.isEmpty { sql.append(" WHERE " + clauses.joined(separator: " AND ")) }
        sql.append(" ORDER BY id DESC LIMIT \(sql.bind(Int64(max(0, filter.limit))))")
        return try await rows(sql, doing: "list orders").map { row throws(StoreError) in try record(row, OrderColumns.record) }
    }

    public func order(provider: String, account: String, orderRef: String, includeRaw: Bool) async throws(StoreError) -> OrderDetail? {
        var find = SQL("SELECT \(OrderColumns.list) FROM orders WHERE ")
        find.append("provider = \(find.bind(provider)) AND account = \(find.bind(account)) AND order_ref = \(find.bind(orderRef))")
        guard let row = try await rows(find, doing: "read an order").first else { return nil }
        let order = try record(row, OrderColumns.record)
        let nextInquiryAt = try record(row) { try $0.optionalText("inquiry_due_at") }
        var transitions = SQL("SELECT from_state, to_state, at, notification_id FROM transitions WHERE order_id = ")
        transitions.append("\(transitions.bind(order.id)) ORDER BY id")
        let transitionRecords = try await rows(transitions, doing: "read an order's transitions").map { row throws(StoreError) in
            try record(row) { row in
                TransitionRecord(from: try row.optionalState("from_state"), to: try row.state("to_state"), at: try row.text("at"),
                                 notificationID: try row.optionalInt("notification_id"))
            }
        }
        var notifications = SQL("SELECT \(NotificationColumns.list(includeRaw: includeRaw)) FROM notifications WHERE order_id = ")
        notifications.append("\(notifications.bind(order.id)) ORDER BY id")
        let notificationRecords = try await rows(notifications, doing: "read an order's notifications").map { row throws(StoreError) in
            try record(row) { try NotificationColumns.record($0, includeRaw: includeRaw) }
        }
        var events = SQL("SELECT \(EventColumns.list) FROM events WHERE order_id = ")
        events.append("\(events.bind(order.id)) ORDER BY seq")
        let eventRecords = try await rows(events, doing: "read an order's events").map { row throws(StoreError) in
            try record(row, EventColumns.record)
        }
        return OrderDetail(
            order: order, transitions: transitionRecords, notifications: notificationRecords, events: eventRecords,
            nextInquiryAt: nextInquiryAt, inquiries: try await inquiries(orderID: order.id))
    }

    public func notifications(_ filter: NotificationFilter, includeRaw: Bool) async throws(StoreError) -> [NotificationRecord] {
        var sql = SQL("SELECT \(NotificationColumns.list(includeRaw: includeRaw)) FROM notifications")
        var clauses: [String] = []
        if let provider = filter.provider { clauses.append("provider = \(sql.bind(provider))") }
        if let account = filter.account { clauses.append("account = \(sql.bind(account))") }
        if let verdict = filter.verdict { clauses.append("verdict = \(sql.bind(verdict.rawValue))") }
        if let since = filter.since {
            clauses.append("received_at >= \(sql.bind(since))")
            // As in SQLite: when few rows are that new, the lowest of their ids bounds the scan.
            var bound = SQL()
            bound.append("""
                SELECT count(*) AS n, min(id) AS lowest FROM (
                    SELECT id FROM notifications WHERE received_at >= \(bound.bind(since)) LIMIT \(bound.bind(Self.sinceBoundRows + 1))) AS recent
                """)
            if let row = try await rows(bound, doing: "list notifications").first {
                let count = try record(row) { try $0.int("n") }
                if count <= Self.sinceBoundRows {
                    let lowest = try record(row) { try $0.optionalInt("lowest") }
                    clauses.append(lowest.map { "id >= \(sql.bind($0))" } ?? "FALSE")
                }
            }
        }
        if let beforeID = filter.beforeID { clauses.append("id < \(sql.bind(beforeID))") }
        if !clauses.isEmpty { sql.append(" WHERE " + clauses.joined(separator: " AND ")) }
        sql.append(" ORDER BY id DESC LIMIT \(sql.bind(Int64(max(0, filter.limit))))")
        return try await rows(sql, doing: "list notifications").map { row throws(StoreError) in
            try record(row) { try NotificationColumns.record($0, includeRaw: includeRaw) }
        }
    }

    public func orderCountsByState() async throws(StoreError) -> [OrderState: Int] {
        var counts: [OrderState: Int] = [:]
        for row in try await rows(SQL("SELECT state, count(*) AS n FROM orders GROUP BY state"), doing: "count orders") {
            let (state, count) = try record(row) { (try $0.state("state"), try $0.int("n")) }
            counts[state] = Int(count)
        }
        return counts
    }

    public func events(_ filter: EventFilter) async throws(StoreError) -> EventPage {
        // One snapshot for the marker and the rows: retention between them could otherwise open a gap.
        let page = try await transaction(doing: "read events") { [logger] connection in
            try await Self.eventPage(filter, connection: connection, logger: logger)
        }
        return page
    }

    public func newestEventSeq() async throws(StoreError) -> Int64 {
        let sql = SQL("""
            SELECT greatest(coalesce((SELECT max(seq) FROM events), 0),
                            coalesce((SELECT value::bigint FROM store_meta WHERE key = 'events_pruned_through'), 0)) AS newest
            """)
        guard let row = try await rows(sql, doing: "read the newest event").first else { return 0 }
        return try record(row) { try $0.int("newest") }
    }

    static func eventPage(_ filter: EventFilter, connection: PostgresConnection, logger: Logger) async throws -> EventPage {
        _ = try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
        let pruned = try await connection.rows(SQL("SELECT value FROM store_meta WHERE key = 'events_pruned_through'"), logger: logger)
            .first.flatMap { try? $0.text("value") }.flatMap { Int64($0) } ?? 0
        if filter.after < pruned {
            return EventPage(events: [], nextAfter: filter.after, oldestSeq: pruned + 1)
        }
        var sql = SQL("SELECT \(EventColumns.list) FROM events WHERE ")
        var clauses = ["seq > \(sql.bind(filter.after))"]
        let window: Int64 = 10_000
        if !filter.isUnfiltered { clauses.append("seq <= \(sql.bind(filter.after + window))") }
        if let provider = filter.provider { clauses.append("provider = \(sql.bind(provider))") }
        if let account = filter.account { clauses.append("account = \(sql.bind(account))") }
        if let type = filter.type { clauses.append("type = \(sql.bind(type.rawValue))") }
        let limit = max(1, filter.limit)
        sql.append(clauses.joined(separator: " AND ") + " ORDER BY seq LIMIT \(sql.bind(Int64(limit)))")
        let events = try await connection.rows(sql, logger: logger).map(EventColumns.record)
        if events.count == limit, let last = events.last {
            return EventPage(events: events, nextAfter: last.seq)
        }
        let newest = try await connection.rows(SQL("SELECT coalesce(max(seq), 0) AS newest FROM events"), logger: logger)
            .first.map { try $0.int("newest") } ?? filter.after
        let examined = filter.isUnfiltered ? newest : min(newest, filter.after + window)
        return EventPage(events: events, nextAfter: max(filter.after, examined, events.last?.seq ?? 0))
    }

    public func deliveries(_ filter: DeliveryFilter) async throws(StoreError) -> [DeliveryRecord] {
        var sql = SQL("""
            SELECT d.id, d.target, d.event_seq, d.state, d.attempts, d.last_attempt_at, d.last_status, d.last_error,
                   d.next_attempt_at, d.delivered_at, d.created_at, e.id AS event_id, e.type, e.provider, e.account, e.order_ref,
                   (t.paused_at IS NOT NULL) AS paused
            FROM deliveries d JOIN events e ON e.seq = d.event_seq LEFT JOIN delivery_targets t ON t.name = d.target
            """)
        var clauses: [String] = []
        if let target = filter.target { clauses.append("d.target = \(sql.bind(target))") }
        switch filter.state {
        case .paused?: clauses.append("d.state = 'pending' AND t.paused_at IS NOT NULL")
        case .pending?: clauses.append("d.state = 'pending' AND t.paused_at IS NULL")
        case let state?: clauses.append("d.state = \(sql.bind(state.rawValue))")
        case nil: break
        }
        if let since = filter.since { clauses.append("d.created_at >= \(sql.bind(since))") }
        if let beforeID = filter.beforeID { clauses.append("d.id < \(sql.bind(beforeID))") }
        if !clauses.isEmpty { sql.append(" WHERE " + clauses.joined(separator: " AND ")) }
        sql.append(" ORDER BY d.id DESC LIMIT \(sql.bind(Int64(max(0, filter.limit))))")
        return try await rows(sql, doing: "list deliveries").map { row throws(StoreError) in try record(row, DeliveryColumns.record) }
    }

    public func deliveryTargets() async throws(StoreError) -> [DeliveryTargetStatus] {
        let sql = SQL("""
            SELECT t.name, t.paused_at, t.paused_reason,
                   (SELECT count(*) FROM deliveries d WHERE d.target = t.name AND d.state = 'pending') AS backlog,
                   (SELECT d.created_at FROM deliveries d WHERE d.target = t.name AND d.state = 'pending' ORDER BY d.id LIMIT 1) AS oldest,
                   (SELECT count(*) FROM deliveries d WHERE d.target = t.name AND d.state = 'failed') AS failed
            FROM delivery_targets t ORDER BY t.name
            """)
        return try await rows(sql, doing: "read the delivery targets").map { row throws(StoreError) in
            try record(row) { row in
                DeliveryTargetStatus(
                    name: try row.text("name"), pausedAt: try row.optionalText("paused_at"), pausedReason: try row.optionalText("paused_reason"),
                    backlog: Int(try row.int("backlog")), oldestPendingAt: try row.optionalText("oldest"), failed: Int(try row.int("failed")))
            }
        }
    }

    /// Reads a record out of `row`, a decoding error as a store error.
    func record<T>(_ row: PGRow, _ read: (PGRow) throws -> T) throws(StoreError) -> T {
        do {
            return try read(row)
        } catch {
            throw StoreError(postgres: error, doing: "read a row")
        }
    }
}

/// The columns a notification is read from.
enum NotificationColumns {
    static func list(includeRaw: Bool) -> String {
        """
        id, provider, account, order_ref, received_at, verdict, reason, reason_detail, kind, provider_status, dedup_key, client_ip,
        provider_txn_id, amount_minor, currency, detail, reverified_from, inquiry_id\(includeRaw ? ", body, headers" : "")
        """
    }

    static func record(_ row: PGRow, includeRaw: Bool) throws -> NotificationRecord {
        let verdictText = try row.text("verdict")
        guard let verdict = Verdict(rawValue: verdictText) else {
            throw StoreError(message: "notification has an unknown verdict \"\(verdictText)\" in the store")
        }
        return NotificationRecord(
            id: try row.int("id"), provider: try row.text("provider"), account: try row.text("account"),
            orderRef: try row.optionalText("order_ref"), receivedAt: try row.text("received_at"), verdict: verdict,
            reason: try row.optionalText("reason"), reasonDetail: try row.optionalText("reason_detail"), kind: try row.optionalText("kind"),
            providerStatus: try row.optionalText("provider_status"), dedupKey: try row.optionalText("dedup_key"),
            clientIP: try row.optionalText("client_ip"), providerTxnID: try row.optionalText("provider_txn_id"),
            amount: try row.money("amount_minor", "currency"), detail: try row.optionalText("detail"),
            body: includeRaw ? try row.bytes("body") : nil, headers: includeRaw ? try row.text("headers") : nil,
            reverifiedFrom: try row.optionalInt("reverified_from"), inquiryID: try row.optionalInt("inquiry_id"))
    }
}

/// The columns an event is read from.
enum EventColumns {
    static let list = """
        seq, id, type, occurred_at, provider, account, order_ref, order_json, from_state, to_state, flag, notification_id, provider_status
        """

    static func record(_ row: PGRow) throws -> EventRecord {
        let typeText = try row.text("type")
        guard let type = EventType(rawValue: typeText) else {
            throw StoreError(message: "an event has an unknown type \"\(typeText)\" in the store")
        }
        return EventRecord(
            seq: try row.int("seq"), id: try row.text("id"), type: type, occurredAt: try row.text("occurred_at"),
            provider: try row.text("provider"), account: try row.text("account"), orderRef: try row.text("order_ref"),
            orderJSON: try row.text("order_json"), from: try row.optionalState("from_state"), to: try row.state("to_state"),
            flag: try row.optionalText("flag"), notificationID: try row.optionalInt("notification_id"),
            providerStatus: try row.optionalText("provider_status"))
    }
}

/// The columns a delivery is listed from (with its event's and its target's).
enum DeliveryColumns {
    static func record(_ row: PGRow) throws -> DeliveryRecord {
        let stateText = try row.text("state")
        let typeText = try row.text("type")
        guard var state = DeliveryState(rawValue: stateText), let type = EventType(rawValue: typeText) else {
            throw StoreError(message: "a delivery has an unknown state or type in the store")
        }
        if state == .pending, try row.bool("paused") { state = .paused }
        return DeliveryRecord(
            id: try row.int("id"), target: try row.text("target"), eventID: try row.text("event_id"), seq: try row.int("event_seq"),
            type: type, provider: try row.text("provider"), account: try row.text("account"), orderRef: try row.text("order_ref"),
            state: state, attempts: Int(try row.int32("attempts")), lastAttemptAt: try row.optionalText("last_attempt_at"),
            lastStatus: try row.optionalInt32("last_status").map(Int.init), lastError: try row.optionalText("last_error"),
            nextAttemptAt: state == .pending ? try row.optionalText("next_attempt_at") : nil,
            deliveredAt: try row.optionalText("delivered_at"), createdAt: try row.text("created_at"))
    }
}
