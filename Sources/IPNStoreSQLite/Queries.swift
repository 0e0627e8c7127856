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
import GRDB
import IPNCore
import IPNStore

/// Read queries shared by the daemon's ops API and the read-only CLI.
public enum Queries {
    public static func orders(_ db: Database, _ filter: OrderFilter) throws -> [OrderRecord] {
        try newestFirst(db, from: "orders", where: [
            ("provider = ?", filter.provider), ("account = ?", filter.account), ("state = ?", filter.state?.rawValue),
        ], since: filter.since.map { ("created_at", "orders_by_created_at", $0) }, beforeID: filter.beforeID,
           limit: filter.limit).map(orderRecord)
    }

    public static func order(
        _ db: Database, provider: String, account: String, orderRef: String, includeRaw: Bool = false
    ) throws -> OrderDetail? {
        guard let row = try Row.fetchOne(
            db, sql: "SELECT * FROM orders WHERE provider = ? AND account = ? AND order_ref = ?",
            arguments: [provider, account, orderRef]
        ) else { return nil }
        let order = try orderRecord(row)
        let transitions = try Row.fetchAll(
            db, sql: "SELECT from_state, to_state, at, notification_id FROM transitions WHERE order_id = ? ORDER BY id",
            arguments: [order.id]
        ).map { row throws -> TransitionRecord in
            TransitionRecord(
                from: try (row["from_state"] as String?).map(state), to: try state(row["to_state"]),
                at: row["at"], notificationID: row["notification_id"]
            )
        }
        let notifications = try Row.fetchAll(
            db, sql: "SELECT * FROM notifications WHERE order_id = ? ORDER BY id",
            arguments: [order.id]
        ).map { try notificationRecord($0, includeRaw: includeRaw) }
        return OrderDetail(
            order: order, transitions: transitions, notifications: notifications,
            events: try EventQueries.forOrder(db, orderID: order.id), nextInquiryAt: row["inquiry_due_at"],
            inquiries: try InquiryQueries.forOrder(db, orderID: order.id))
    }

    public static func notifications(_ db: Database, _ filter: NotificationFilter, includeRaw: Bool = false) throws
        -> [NotificationRecord]
    {
        try newestFirst(db, from: "notifications", where: [
            ("provider = ?", filter.provider), ("account = ?", filter.account), ("verdict = ?", filter.verdict?.rawValue),
        ], since: filter.since.map { ("received_at", "notifications_by_received_at", $0) }, beforeID: filter.beforeID,
           limit: filter.limit)
        .map { try notificationRecord($0, includeRaw: includeRaw) }
    }

    /// Rows of `table` meeting every condition whose value is given, newest (highest id) first,
    /// below the `beforeID` cursor: keyset pagination, stable while rows are inserted.
    ///
    /// `since` (a time column, its index, and a time) may also bound the ids read. Rows are read
    /// newest first, and a filter matching fewer rows than the page read the table back to its
    /// first row: seconds on a store of millions of notifications, tens from disk. When few rows
    /// are that new (the index tells), the lowest of their ids is where reading stops.
    private static func newestFirst(
        _ db: Database,
        from table: String,
        where conditions: [(sql: String, value: String?)],
        since: (column: String, index: String, time: String)? = nil,
        beforeID: Int64?,
        limit: Int
    ) throws -> [Row] {
        var clauses: [String] = []
        var arguments: [DatabaseValue] = []
        for (sql, value) in conditions {
            guard let value else { continue }
            clauses.append(sql)
            arguments.append(value.databaseValue)
        }
        if let (column, index, time) = since {
            clauses.append("\(column) >= ?")
            arguments.append(time.databaseValue)
            let newRows = try Row.fetchOne(
                db, sql: "SELECT COUNT(*) AS n, MIN(id) AS lowest FROM (SELECT id FROM \(table) INDEXED BY \(index) WHERE \(column) >= ? LIMIT ?)",
                arguments: [time, sinceBoundRows + 1])
            if let newRows, (newRows["n"] as Int) <= sinceBoundRows {
                // None at all: nothing can match, and `id >= NULL` reads nothing.
                clauses.append("id >= ?")
                arguments.append(newRows["lowest"] as DatabaseValue)
            }
        }
        if let beforeID {
            clauses.append("id < ?")
            arguments.append(beforeID.databaseValue)
        }
        arguments.append(max(0, limit).databaseValue)
        let whereClause = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
        return try Row.fetchAll(
            db, sql: "SELECT * FROM \(table) \(whereClause) ORDER BY id DESC LIMIT ?", arguments: StatementArguments(arguments))
    }

    /// Up to how many rows new enough for `since` bound the ids a list reads.
    static let sinceBoundRows = 10_000

    /// Order counts by state (metrics, status lines).
    public static func orderCountsByState(_ db: Database) throws -> [OrderState: Int] {
        var counts: [OrderState: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM orders GROUP BY state") {
            counts[try state(row["state"])] = row["n"]
        }
        return counts
    }

    static func orderRecord(_ row: Row) throws -> OrderRecord {
        OrderRecord(
            id: row["id"], provider: row["provider"], account: row["account"], orderRef: row["order_ref"],
            providerTxnID: row["provider_txn_id"], state: try state(row["state"]),
            amount: money(row["amount_minor"], row["currency"]), refundedMinor: row["refunded_minor"],
            expected: money(row["expected_amount_minor"], row["expected_currency"]),
            flags: (row["flags"] as String).split(separator: ",").map(String.init),
            createdAt: row["created_at"], updatedAt: row["updated_at"]
        )
    }

    static func notificationRecord(_ row: Row, includeRaw: Bool) throws -> NotificationRecord {
        let verdictText: String = row["verdict"]
        guard let verdict = Verdict(rawValue: verdictText) else {
            throw StoreError(message: "notification has an unknown verdict \"\(verdictText)\" in the store")
        }
        return NotificationRecord(
            id: row["id"], provider: row["provider"], account: row["account"], orderRef: row["order_ref"],
            receivedAt: row["received_at"], verdict: verdict, reason: row["reason"], reasonDetail: row["reason_detail"],
            kind: row["kind"], providerStatus: row["provider_status"], dedupKey: row["dedup_key"],
            clientIP: row["client_ip"], providerTxnID: row["provider_txn_id"],
            amount: money(row["amount_minor"], row["currency"]), detail: row["detail"],
            body: includeRaw ? (row["body"] as Data?).map { [UInt8]($0) } : nil,
            headers: includeRaw ? row["headers"] : nil, reverifiedFrom: row["reverified_from"], inquiryID: row["inquiry_id"]
        )
    }

    static func state(_ text: String) throws -> OrderState {
        guard let state = OrderState(rawValue: text) else {
            throw StoreError(message: "unknown order state \"\(text)\" in the store")
        }
        return state
    }

    private static func money(_ minor: Int64?, _ currency: String?) -> Money? {
        zip(minor, currency).map { Money(minor: $0, currency: $1) }
    }
}

/// The store opened read-only by the CLI while the daemon runs.
public final class SQLiteReadOnlyStore: StoreReading {
    private let queue: DatabaseQueue

    public init(path: String) throws(StoreError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(message: "no store at \(path) (has ipnd serve run with this config?)")
        }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(5)
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw StoreError(error, doing: "open \(path) read-only")
        }
    }

    public func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try queue.read(body)
        } catch {
            throw StoreError(error, doing: "read")
        }
    }

    public func orders(_ filter: OrderFilter) async throws(StoreError) -> [OrderRecord] {
        try read { db in try Queries.orders(db, filter) }
    }

    public func order(provider: String, account: String, orderRef: String, includeRaw: Bool) async throws(StoreError) -> OrderDetail? {
        try read { db in try Queries.order(db, provider: provider, account: account, orderRef: orderRef, includeRaw: includeRaw) }
    }

    public func notifications(_ filter: NotificationFilter, includeRaw: Bool) async throws(StoreError) -> [NotificationRecord] {
        try read { db in try Queries.notifications(db, filter, includeRaw: includeRaw) }
    }

    public func orderCountsByState() async throws(StoreError) -> [OrderState: Int] {
        try read { db in try Queries.orderCountsByState(db) }
    }

    public func events(_ filter: EventFilter) async throws(StoreError) -> EventPage {
        try read { db in try EventQueries.page(db, filter) }
    }

    public func newestEventSeq() async throws(StoreError) -> Int64 {
        try read { db in try EventQueries.newestSeq(db) }
    }

    public func deliveries(_ filter: DeliveryFilter) async throws(StoreError) -> [DeliveryRecord] {
        try read { db in try DeliveryQueries.list(db, filter) }
    }

    public func deliveryTargets() async throws(StoreError) -> [DeliveryTargetStatus] {
        try read { db in try DeliveryQueries.targets(db) }
    }

    public func notificationCounts(since: String) async throws(StoreError) -> [HourlyNotificationCount] {
        try read { db in try ConsoleQueries.notificationCounts(db, since: since) }
    }

    public func flaggedOrders(_ flag: String, limit: Int) async throws(StoreError) -> FlaggedOrders {
        try read { db in try ConsoleQueries.flaggedOrders(db, flag: flag, limit: limit) }
    }

    public func searchOrders(_ search: OrderSearch) async throws(StoreError) -> [OrderRecord] {
        try read { db in try ConsoleQueries.searchOrders(db, search) }
    }

    public func notification(id: Int64, includeRaw: Bool) async throws(StoreError) -> NotificationRecord? {
        try read { db in try ConsoleQueries.notification(db, id: id, includeRaw: includeRaw) }
    }

    public func deliveries(orderID: Int64) async throws(StoreError) -> [DeliveryRecord] {
        try read { db in try DeliveryQueries.forOrder(db, orderID: orderID) }
    }

    public func rejectedRequests(_ selection: RejectedSelection) async throws(StoreError) -> [RejectedRequest] {
        try read { db in try RejectedQueries.requests(db, selection) }
    }

    public func inquiries(_ filter: InquiryFilter) async throws(StoreError) -> [InquiryRecord] {
        try read { db in try InquiryQueries.list(db, filter) }
    }

    public func inquiryBacklog(scopes: [Scope], now: String) async throws(StoreError) -> InquiryBacklog {
        try read { db in try InquiryQueries.backlog(db, scopes: scopes, now: now) }
    }
}
