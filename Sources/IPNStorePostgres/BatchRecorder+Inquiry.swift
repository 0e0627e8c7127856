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

extension BatchRecorder {
    /// Records `inquiry` inside the caller's transaction, as the SQLite store does: under the
    /// order's advisory lock (the one notification batches take), each fact planned from the
    /// rows as the previous one left them and written only when `InquiryPlanning` says so, then
    /// the order's next step (or the give-up), then the inquiry record. Returns the record and
    /// how many events were written.
    func recordInquiry(_ inquiry: CompletedInquiry) async throws -> (InquiryRecord, events: Int) {
        var factJobs: [WriteJob] = []
        var facts: [VerifiedNotification] = []
        let inquiryID = try await nextInquiryID()
        if case .facts(let told, let answer) = inquiry.result {
            facts = told
            factJobs = told.map { fact in
                .record(.verified(ReceivedRequest(
                    provider: inquiry.scope.provider, account: inquiry.scope.account, receivedAt: now, clientIP: nil,
                    target: inquiry.url, headers: answer.headers, body: answer.body, inquiryID: inquiryID), fact))
            }
        }
        try await lock(factJobs, alsoLocking: [LockKey.order(inquiry.scope, inquiry.orderRef)])
        let order = try await lockedOrder(inquiry.scope, inquiry.orderRef)

        var written: [RecordOutcome] = []
        var changed = false
        var events = 0
        for (job, fact) in zip(factJobs, facts) {
            let (notificationIDs, orderIDs) = try await allocateIDs(notifications: 1, orders: 1)
            let (planned, results) = try await plan([job], notificationIDs: notificationIDs, orderIDs: orderIDs, lockRows: true)
            guard let first = planned.first, case .recorded(let outcome)? = results.first,
                  InquiryPlanning.writes(first.plan, fact: fact)
            else { continue }
            if !first.plan.transitions.isEmpty { changed = true }
            try await write(planned)
            written.append(outcome)
            events += outcome.eventsWritten
        }
        let after = try await lockedOrder(inquiry.scope, inquiry.orderRef)
        switch InquiryPlanning.scheduleAction(inquiry, order: after, changed: changed, schedule: schedule) {
        case .none:
            break
        case .next(let dueAt, let step):
            var sql = SQL()
            sql.append("""
                UPDATE orders SET inquiry_step = \(sql.bind(Int64(step))), inquiry_due_at = \(sql.bind(dueAt))
                WHERE id = \(sql.bind(after?.id ?? 0))
                """)
            try await connection.run(sql, logger: logger)
        case .giveUp:
            if let after, let id = after.id { events += try await writeGiveUp(after, id: id) }
        }
        let conclusion = InquiryPlanning.conclusion(inquiry.result, written: written)
        let record = InquiryRecord(
            id: inquiryID, provider: inquiry.scope.provider, account: inquiry.scope.account, orderRef: inquiry.orderRef,
            askedAt: inquiry.askedAt, trigger: inquiry.trigger, outcome: conclusion.outcome, httpStatus: inquiry.httpStatus,
            providerStatus: inquiry.providerStatus, notificationID: conclusion.notificationID, verdict: conclusion.verdict,
            error: conclusion.error, durationMs: inquiry.durationMs, url: inquiry.url)
        var insert = SQL()
        insert.append("""
            INSERT INTO inquiries (id, provider, account, order_ref, order_id, asked_at, trigger, outcome, http_status, provider_status,
                                   notification_id, verdict, error, duration_ms, url)
            VALUES (\(insert.bind(record.id)), \(insert.bind(record.provider)), \(insert.bind(record.account)),
                    \(insert.bind(record.orderRef)), \(insert.bind(order?.id)), \(insert.bind(record.askedAt)),
                    \(insert.bind(record.trigger.rawValue)), \(insert.bind(record.outcome.rawValue)),
                    \(insert.bind(record.httpStatus.map(Int64.init))), \(insert.bind(record.providerStatus)),
                    \(insert.bind(record.notificationID)), \(insert.bind(record.verdict?.rawValue)), \(insert.bind(record.error)),
                    \(insert.bind(record.durationMs)), \(insert.bind(record.url)))
            """)
        try await connection.run(insert, logger: logger)
        return (record, events)
    }

    /// Gives up on the order `claim` holds, under the order's advisory lock. Returns whether it
    /// did and how many events were written.
    func giveUpInquiries(_ claim: InquiryClaim, scope: Scope, orderRef: String) async throws -> (Bool, events: Int) {
        try await lock([], alsoLocking: [LockKey.order(scope, orderRef)])
        guard let order = try await lockedOrder(scope, orderRef), let id = order.id, InquiryPlanning.holds(claim, order: order) else {
            return (false, 0)
        }
        return (true, try await writeGiveUp(order, id: id))
    }

    /// Writes the give-up on `order` (row `id`): the `unsettled` flag, its event, no schedule.
    /// Returns how many events were written.
    private func writeGiveUp(_ order: StoredOrder, id: Int64) async throws -> Int {
        let plan = RecordingPlanner(now: now, routes: routes, schedule: schedule).plan(giveUp: order)
        try await write([(plan, nil, id)])
        return plan.events.count
    }

    private func nextInquiryID() async throws -> Int64 {
        var id: Int64 = 0
        for try await value in try await connection.query("SELECT nextval('inquiries_id_seq')", logger: logger).decode(Int64.self) {
            id = value
        }
        return id
    }

    /// The order as it stands in this transaction, locked.
    private func lockedOrder(_ scope: Scope, _ orderRef: String) async throws -> StoredOrder? {
        var sql = SQL()
        sql.append("""
            SELECT \(OrderColumns.list) FROM orders
            WHERE provider = \(sql.bind(scope.provider)) AND account = \(sql.bind(scope.account)) AND order_ref = \(sql.bind(orderRef))
            FOR UPDATE
            """)
        return try await connection.rows(sql, logger: logger).first.map(OrderColumns.stored)
    }
}
