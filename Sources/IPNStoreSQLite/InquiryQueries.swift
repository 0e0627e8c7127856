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

/// Reconciliation's rows in the SQLite store: claiming due orders from `orders_inquiry_due`,
/// recording inquiries through the one write path (`Recording.recordInquiry`), and reading them back.
enum InquiryQueries {
    /// The columns a due order is read from.
    private static let dueColumns = """
        id, provider, account, order_ref, provider_txn_id, state, amount_minor, currency, expected_amount_minor,
        expected_currency, created_at, inquiry_from, inquiry_step, inquiry_due_at
        """

    static func claim(_ db: Database, scope: Scope, limit: Int, now: String, leaseUntil: String) throws -> [DueOrder] {
        guard limit > 0 else { return [] }
        // The partial index (provider, account, inquiry_due_at) gives the earliest due orders of
        // the account in order; settled and given-up orders are not in it.
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: """
                UPDATE orders SET inquiry_due_at = ?
                WHERE id IN (SELECT id FROM orders INDEXED BY orders_inquiry_due
                             WHERE provider = ? AND account = ? AND inquiry_due_at IS NOT NULL AND inquiry_due_at <= ?
                             ORDER BY inquiry_due_at LIMIT ?)
                RETURNING \(dueColumns)
                """),
            arguments: [leaseUntil, scope.provider, scope.account, now, limit])
        return try rows.map { row in
            DueOrder(
                orderID: row["id"], scope: scope, orderRef: row["order_ref"], providerTxnID: row["provider_txn_id"],
                state: try Queries.state(row["state"]), amount: money(row["amount_minor"], row["currency"]),
                expected: money(row["expected_amount_minor"], row["expected_currency"]), createdAt: row["created_at"],
                schedule: InquiryScheduleState(from: row["inquiry_from"], step: row["inquiry_step"], dueAt: row["inquiry_due_at"]),
                lease: leaseUntil)
        }.sorted { ($0.schedule.dueAt ?? "", $0.orderID) < ($1.schedule.dueAt ?? "", $1.orderID) }
    }

    /// Whether any order of `scope` is due at `now` (one index entry read).
    static func anyDue(_ db: Database, scope: Scope, now: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: """
                SELECT EXISTS (SELECT 1 FROM orders INDEXED BY orders_inquiry_due
                               WHERE provider = ? AND account = ? AND inquiry_due_at IS NOT NULL AND inquiry_due_at <= ?)
                """),
            arguments: [scope.provider, scope.account, now]) ?? false
    }

    static func release(_ db: Database, _ claims: [InquiryClaim], now: String) throws {
        let statement = try db.cachedStatement(sql: "UPDATE orders SET inquiry_due_at = ? WHERE id = ? AND inquiry_due_at = ?")
        for claim in claims { try statement.execute(arguments: [now, claim.orderID, claim.lease]) }
    }

    /// Records `inquiry` inside the writer's transaction `tx`.
    static func record(_ inquiry: CompletedInquiry, in tx: WriteContext) throws -> InquiryRecord {
        try Recording.recordInquiry(inquiry, in: SQLiteSession(tx: tx)).record
    }

    /// Gives up on the order `claim` holds, inside the writer's transaction `tx`.
    static func giveUp(_ claim: InquiryClaim, scope: Scope, orderRef: String, in tx: WriteContext) throws -> Bool {
        try Recording.giveUp(claim, scope: scope, orderRef: orderRef, in: SQLiteSession(tx: tx)).gaveUp
    }

    // MARK: Reads

    static func list(_ db: Database, _ filter: InquiryFilter) throws -> [InquiryRecord] {
        var clauses: [String] = []
        var arguments: [DatabaseValue] = []
        if let orderRef = filter.orderRef {
            // One order's inquiries: its orders found by reference, then `inquiries_by_order`.
            clauses.append("order_id IN (SELECT id FROM orders INDEXED BY orders_by_ref WHERE order_ref = ?)")
            arguments.append(orderRef.databaseValue)
        }
        for (sql, value) in [("provider = ?", filter.provider), ("account = ?", filter.account),
                             ("outcome = ?", filter.outcome?.rawValue)] {
            guard let value else { continue }
            clauses.append(sql)
            arguments.append(value.databaseValue)
        }
        if let since = filter.since {
            clauses.append("asked_at >= ?")
            arguments.append(since.databaseValue)
        }
        if let beforeID = filter.beforeID {
            clauses.append("id < ?")
            arguments.append(beforeID.databaseValue)
        }
        arguments.append(max(0, filter.limit).databaseValue)
        let whereClause = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
        return try Row.fetchAll(
            db, sql: "SELECT * FROM inquiries \(whereClause) ORDER BY id DESC LIMIT ?", arguments: StatementArguments(arguments)
        ).map(record)
    }

    /// An order's newest inquiries.
    static func forOrder(_ db: Database, orderID: Int64, limit: Int = OrderDetail.inquiryLimit) throws -> [InquiryRecord] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM inquiries WHERE order_id = ? ORDER BY id DESC LIMIT ?"),
            arguments: [orderID, limit]
        ).map(record)
    }

    static func backlog(_ db: Database, scopes: [Scope], now: String) throws -> InquiryBacklog {
        var awaiting = 0
        var oldest: String?
        for scope in scopes {
            let row = try Row.fetchOne(
                db.cachedStatement(sql: """
                    SELECT COUNT(*) AS n, MIN(inquiry_due_at) AS oldest FROM orders INDEXED BY orders_inquiry_due
                    WHERE provider = ? AND account = ? AND inquiry_due_at IS NOT NULL AND inquiry_due_at <= ?
                    """),
                arguments: [scope.provider, scope.account, now])
            awaiting += row?["n"] ?? 0
            if let due: String = row?["oldest"], oldest.map({ due < $0 }) ?? true { oldest = due }
        }
        let unsettled = try ConsoleQueries.flaggedOrders(db, flag: OrderFlag.unsettled.rawValue, limit: 0).total
        return InquiryBacklog(awaiting: awaiting, oldestDueAt: oldest, unsettled: unsettled)
    }

    static func record(_ row: Row) throws -> InquiryRecord {
        let triggerText: String = row["trigger"]
        let outcomeText: String = row["outcome"]
        guard let trigger = InquiryTrigger(rawValue: triggerText), let outcome = InquiryOutcome(rawValue: outcomeText) else {
            throw StoreError(message: "inquiry \(row["id"] as Int64) has an unknown trigger or outcome in the store")
        }
        return InquiryRecord(
            id: row["id"], provider: row["provider"], account: row["account"], orderRef: row["order_ref"], askedAt: row["asked_at"],
            trigger: trigger, outcome: outcome, httpStatus: row["http_status"], providerStatus: row["provider_status"],
            notificationID: row["notification_id"], verdict: (row["verdict"] as String?).flatMap(Verdict.init(rawValue:)),
            error: row["error"], durationMs: row["duration_ms"], url: row["url"])
    }

    private static func money(_ minor: Int64?, _ currency: String?) -> Money? {
        zip(minor, currency).map { Money(minor: $0, currency: $1) }
    }
}
