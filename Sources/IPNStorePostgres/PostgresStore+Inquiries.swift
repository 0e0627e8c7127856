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

/// Reconciliation on PostgreSQL: nodes share the schedule. A claim moves the due time of the
/// orders it takes to its lease's end in one statement that skips rows another node is
/// claiming or writing (`FOR NO KEY UPDATE SKIP LOCKED`: not the sequencer, whose foreign key
/// check of an event's order takes a key-share lock on it), so each order is asked by one node per
/// step, and one whose node died mid-inquiry is due again once the lease has passed.
extension PostgresStore {
    public func claimDueOrders(scope: Scope, limit: Int, now: String, leaseUntil: String) async throws(StoreError) -> [DueOrder] {
        guard limit > 0 else { return [] }
        var sql = SQL()
        sql.append("""
            WITH due AS (
                SELECT id, inquiry_due_at AS was_due FROM orders
                WHERE provider = \(sql.bind(scope.provider)) AND account = \(sql.bind(scope.account))
                  AND inquiry_due_at IS NOT NULL AND inquiry_due_at <= \(sql.bind(now))
                ORDER BY inquiry_due_at LIMIT \(sql.bind(Int64(limit)))
                FOR NO KEY UPDATE SKIP LOCKED
            )
            UPDATE orders AS o SET inquiry_due_at = \(sql.bind(leaseUntil))
            FROM due WHERE o.id = due.id
            RETURNING o.id, o.order_ref, o.provider_txn_id, o.state, o.amount_minor, o.currency, o.expected_amount_minor,
                      o.expected_currency, o.created_at, o.inquiry_from, o.inquiry_step, due.was_due
            """)
        let rows = try await rows(sql, doing: "claim due orders")
        return try rows.map { row throws(StoreError) in
            try record(row) { row in
                DueOrder(
                    orderID: try row.int("id"), scope: scope, orderRef: try row.text("order_ref"),
                    providerTxnID: try row.optionalText("provider_txn_id"), state: try row.state("state"),
                    amount: try row.money("amount_minor", "currency"), expected: try row.money("expected_amount_minor", "expected_currency"),
                    createdAt: try row.text("created_at"),
                    schedule: InquiryScheduleState(
                        from: try row.optionalText("inquiry_from"), step: Int(try row.int32("inquiry_step")),
                        dueAt: try row.optionalText("was_due")),
                    lease: leaseUntil)
            }
        }.sorted { ($0.schedule.dueAt ?? "", $0.orderID) < ($1.schedule.dueAt ?? "", $1.orderID) }
    }

    public func recordInquiry(_ inquiry: CompletedInquiry) async throws(StoreError) -> InquiryRecord {
        let now = timestamp()
        let routes = routesNow
        let schedule = scheduleNow
        let (record, events) = try await audited(doing: "record an inquiry") { [logger] connection in
            let (record, events) = try await BatchRecorder(connection: connection, logger: logger, now: now, routes: routes, schedule: schedule)
                .recordInquiry(inquiry)
            return ((record, events), inquiry.audit?.asking(record))
        }
        if events > 0 { eventsCommitted() }
        return record
    }

    public func giveUpInquiries(_ claim: InquiryClaim, scope: Scope, orderRef: String) async throws(StoreError) -> Bool {
        let now = timestamp()
        let routes = routesNow
        let schedule = scheduleNow
        let (gaveUp, events) = try await transaction(doing: "give up on an order's inquiries") { [logger] connection in
            try await BatchRecorder(connection: connection, logger: logger, now: now, routes: routes, schedule: schedule)
                .giveUpInquiries(claim, scope: scope, orderRef: orderRef)
        }
        if events > 0 { eventsCommitted() }
        return gaveUp
    }

    public func releaseInquiryClaims(_ claims: [InquiryClaim], now: String) async throws(StoreError) {
        guard !claims.isEmpty else { return }
        var sql = SQL()
        sql.append("""
            UPDATE orders AS o SET inquiry_due_at = \(sql.bind(now))
            FROM unnest(\(sql.bind(claims.map(\.orderID)))::bigint[], \(sql.bind(claims.map(\.lease)))::text[]) AS c (id, lease)
            WHERE o.id = c.id AND o.inquiry_due_at = c.lease
            """)
        try await execute(sql, doing: "give back inquiry claims")
    }

    public func inquiries(_ filter: InquiryFilter) async throws(StoreError) -> [InquiryRecord] {
        var sql = SQL("SELECT \(InquiryColumns.list) FROM inquiries")
        var clauses: [String] = []
        if let orderRef = filter.orderRef {
            clauses.append("order_id IN (SELECT id FROM orders WHERE order_ref = \(sql.bind(orderRef)))")
        }
        if let provider = filter.provider { clauses.append("provider = \(sql.bind(provider))") }
        if let account = filter.account { clauses.append("account = \(sql.bind(account))") }
        if let outcome = filter.outcome { clauses.append("outcome = \(sql.bind(outcome.rawValue))") }
        if let since = filter.since { clauses.append("asked_at >= \(sql.bind(since))") }
        if let beforeID = filter.beforeID { clauses.append("id < \(sql.bind(beforeID))") }
        if !clauses.isEmpty { sql.append(" WHERE " + clauses.joined(separator: " AND ")) }
        sql.append(" ORDER BY id DESC LIMIT \(sql.bind(Int64(max(0, filter.limit))))")
        return try await rows(sql, doing: "list inquiries").map { row throws(StoreError) in try record(row, InquiryColumns.record) }
    }

    /// An order's newest inquiries.
    func inquiries(orderID: Int64) async throws(StoreError) -> [InquiryRecord] {
        var sql = SQL("SELECT \(InquiryColumns.list) FROM inquiries WHERE order_id = ")
        sql.append("\(sql.bind(orderID)) ORDER BY id DESC LIMIT \(sql.bind(Int64(OrderDetail.inquiryLimit)))")
        return try await rows(sql, doing: "read an order's inquiries").map { row throws(StoreError) in try record(row, InquiryColumns.record) }
    }

    public func inquiryBacklog(scopes: [Scope], now: String) async throws(StoreError) -> InquiryBacklog {
        var awaiting = 0
        var oldest: String?
        if !scopes.isEmpty {
            var sql = SQL()
            sql.append("""
                SELECT count(o.id) AS n, min(o.inquiry_due_at) AS oldest
                FROM unnest(\(sql.bind(scopes.map(\.provider)))::text[], \(sql.bind(scopes.map(\.account)))::text[]) AS s (provider, account)
                JOIN orders o ON o.provider = s.provider AND o.account = s.account
                WHERE o.inquiry_due_at IS NOT NULL AND o.inquiry_due_at <= \(sql.bind(now))
                """)
            if let row = try await rows(sql, doing: "count orders awaiting an inquiry").first {
                awaiting = Int(try record(row) { try $0.int("n") })
                oldest = try record(row) { try $0.optionalText("oldest") }
            }
        }
        let unsettled = try await flaggedOrders(OrderFlag.unsettled.rawValue, limit: 0).total
        return InquiryBacklog(awaiting: awaiting, oldestDueAt: oldest, unsettled: unsettled)
    }
}

/// The columns an inquiry is read from.
enum InquiryColumns {
    static let list = """
        id, provider, account, order_ref, asked_at, trigger, outcome, http_status, provider_status, notification_id, verdict, error,
        duration_ms, url
        """

    static func record(_ row: PGRow) throws -> InquiryRecord {
        let triggerText = try row.text("trigger")
        let outcomeText = try row.text("outcome")
        guard let trigger = InquiryTrigger(rawValue: triggerText), let outcome = InquiryOutcome(rawValue: outcomeText) else {
            throw StoreError(message: "an inquiry has an unknown trigger or outcome in the store")
        }
        return InquiryRecord(
            id: try row.int("id"), provider: try row.text("provider"), account: try row.text("account"),
            orderRef: try row.text("order_ref"), askedAt: try row.text("asked_at"), trigger: trigger, outcome: outcome,
            httpStatus: try row.optionalInt32("http_status").map(Int.init), providerStatus: try row.optionalText("provider_status"),
            notificationID: try row.optionalInt("notification_id"), verdict: try row.optionalText("verdict").flatMap(Verdict.init(rawValue:)),
            error: try row.optionalText("error"), durationMs: try row.int("duration_ms"), url: try row.text("url"))
    }
}
