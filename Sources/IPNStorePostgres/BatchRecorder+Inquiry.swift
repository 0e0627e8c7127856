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
    /// Records `inquiry` inside the caller's transaction through `Recording.recordInquiry`, as the
    /// SQLite store does: under the order's advisory lock (the one notification batches take) and
    /// those of the facts it told, from facts read at once (each fact planned from the rows as the
    /// previous one left them). Returns the record and how many events were written.
    func recordInquiry(_ inquiry: CompletedInquiry) async throws -> (InquiryRecord, events: Int) {
        var factJobs: [WriteJob] = []
        var needed = FactsNeeded()
        needed.addExpectation(scope: inquiry.scope, orderRef: inquiry.orderRef)
        if case .facts(let told, _) = inquiry.result {
            for fact in told {
                // The request only matters for what it reads: its scope and the fact.
                let entry = InboxEntry.verified(ReceivedRequest(
                    provider: inquiry.scope.provider, account: inquiry.scope.account, receivedAt: now, clientIP: nil,
                    target: inquiry.url, headers: "", body: []), fact)
                factJobs.append(.record(entry))
                needed.add(entry)
            }
        }
        let ids = try await lock(
            factJobs, alsoLocking: [LockKey.order(inquiry.scope, inquiry.orderRef)], notifications: factJobs.count,
            orders: factJobs.count, inquiries: 1)
        let session = PostgresSession(facts: try await read(needed, lockRows: true), planner: planner, ids: ids)
        let (record, events) = try Recording.recordInquiry(inquiry, in: session)
        try await write(session.rows)
        return (record, events)
    }

    /// Gives up on the order `claim` holds, under the order's advisory lock. Returns whether it
    /// did and how many events were written.
    func giveUpInquiries(_ claim: InquiryClaim, scope: Scope, orderRef: String) async throws -> (Bool, events: Int) {
        _ = try await lock([], alsoLocking: [LockKey.order(scope, orderRef)])
        var needed = FactsNeeded()
        needed.addExpectation(scope: scope, orderRef: orderRef)
        let session = PostgresSession(facts: try await read(needed, lockRows: true), planner: planner, ids: AllocatedIDs())
        let (gaveUp, events) = try Recording.giveUp(claim, scope: scope, orderRef: orderRef, in: session)
        try await write(session.rows)
        return (gaveUp, events)
    }
}
