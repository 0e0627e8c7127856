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
import IPNCore
import IPNStore
@testable import IPNStoreTestSupport
import IPNTestSupport
import Testing

/// A request as a provider route stores it, with the parts a test varies.
private func received(
    provider: String = "test", account: String = "default", at receivedAt: String = "2026-11-21T00:00:00.000Z",
    client: String = "203.0.113.9", body: String = "{}", reverifiedFrom: Int64? = nil
) -> ReceivedRequest {
    ReceivedRequest(provider: provider, account: account, receivedAt: receivedAt, clientIP: client, target: "/ipn/\(provider)",
                    headers: #"[["content-type","application/json"]]"#, body: Array(body.utf8), reverifiedFrom: reverifiedFrom)
}

@Suite("Recovery at the store: planning without writing, the stored rejected requests (issue 33)", .heavy)
struct RecoveryStoreTests {
    @Test("plan decides as record would and writes nothing: the same verdict, no row, no event", arguments: Backend.allCases)
    func planWritesNothing(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend, routes: [DeliveryRoute(name: "app")])
        _ = try await test.record(notification("first", .transition(.authorized)))
        try await test.settle()
        let rowCounts = "SELECT (SELECT COUNT(*) FROM notifications) * 1000000 + (SELECT COUNT(*) FROM events) * 1000 + (SELECT COUNT(*) FROM deliveries)"
        let before = try await test.count(rowCounts)
        let paid = notification("paid", .transition(.paid))
        let planned = try await test.store.plan(.verified(request(), paid))
        #expect(planned.verdict == .applied && planned.orderState == .paid && planned.notificationID == 0)
        #expect(planned.eventsWritten == 1)
        #expect(try await test.count(rowCounts) == before)
        #expect(try await test.order("O1")?.order.state == .authorized)
        // Planned again, the same: nothing was claimed the first time.
        #expect(try await test.store.plan(.verified(request(), paid)).verdict == .applied)

        let recorded = try await test.record(paid)
        #expect(recorded.verdict == planned.verdict && recorded.orderState == planned.orderState)
        #expect(recorded.eventsWritten == planned.eventsWritten)
        // Now its dedup key is taken, and a late pending is stale.
        #expect(try await test.store.plan(.verified(request(), paid)).verdict == .duplicate)
        #expect(try await test.store.plan(.verified(request(), notification("late", .transition(.pending)))).verdict == .stale)
        #expect(try await test.store.plan(.rejected(request(), Rejection(.badSignature, "no"))).verdict == .rejected)
        #expect(try await test.count("SELECT COUNT(*) FROM notifications") == 2)
        try await test.close()
    }

    @Test("rejected requests: selected by id, provider, account, reason and time, ascending, a page at a time, with their bytes",
          arguments: Backend.allCases)
    func selection(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        var ids: [Int64] = []
        let rows: [(String, String, String, RejectReason)] = [
            ("unlimint", "default", "2026-11-20T10:00:00.000Z", .badSignature),
            ("unlimint", "shop2", "2026-11-21T10:00:00.000Z", .badSignature),
            ("juspay", "default", "2026-11-22T10:00:00.000Z", .badCredentials),
            ("unlimint", "default", "2026-11-23T10:00:00.000Z", .ipNotAllowed),
            ("unlimint", "default", "2026-11-24T10:00:00.000Z", .badSignature),
        ]
        for (index, (provider, account, at, reason)) in rows.enumerated() {
            let outcome = try await test.store.record(.rejected(
                received(provider: provider, account: account, at: at, body: "body-\(index)"), Rejection(reason, "detail \(index)")))
            ids.append(outcome.notificationID)
        }
        // An authentic notification is never among them.
        _ = try await test.record(notification("ok", .transition(.paid)), provider: "unlimint")

        func select(_ selection: RejectedSelection) async throws -> [Int64] {
            try await test.store.rejectedRequests(selection).map(\.id)
        }
        #expect(try await select(RejectedSelection()) == ids)
        #expect(try await select(RejectedSelection(provider: "unlimint")) == [ids[0], ids[1], ids[3], ids[4]])
        #expect(try await select(RejectedSelection(provider: "unlimint", account: "default")) == [ids[0], ids[3], ids[4]])
        #expect(try await select(RejectedSelection(reason: "bad_signature")) == [ids[0], ids[1], ids[4]])
        #expect(try await select(RejectedSelection(since: "2026-11-22T10:00:00.000Z")) == [ids[2], ids[3], ids[4]])
        #expect(try await select(RejectedSelection(since: "2026-11-25T00:00:00.000Z")).isEmpty)
        #expect(try await select(RejectedSelection(ids: [ids[4], ids[1], 9999]))  == [ids[1], ids[4]])
        #expect(try await select(RejectedSelection(ids: [ids[1]], provider: "juspay")).isEmpty)
        // Pages: ascending after the previous page's last id.
        #expect(try await select(RejectedSelection(limit: 2)) == [ids[0], ids[1]])
        #expect(try await select(RejectedSelection(afterID: ids[1], limit: 2)) == [ids[2], ids[3]])
        #expect(try await select(RejectedSelection(since: "2026-11-21T00:00:00.000Z", afterID: ids[2], limit: 10)) == [ids[3], ids[4]])

        let first = try #require(try await test.store.rejectedRequests(RejectedSelection(ids: [ids[0]])).first)
        #expect(first.provider == "unlimint" && first.account == "default" && first.receivedAt == rows[0].2)
        #expect(first.clientIP == "203.0.113.9" && first.target == "/ipn/unlimint")
        #expect(first.headers == #"[["content-type","application/json"]]"#)
        #expect(first.body == Array("body-0".utf8))
        #expect(first.reason == "bad_signature" && first.reasonDetail == "detail 0")
        #expect(first.reverifiedAs.isEmpty)
        try await test.close()
    }

    @Test("a notification recorded with reverified_from is listed with the rejected one it came from", arguments: Backend.allCases)
    func reverifiedCopies(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        let rejected = try await test.store.record(.rejected(received(), Rejection(.badSignature, "wrong secret")))
        let other = try await test.store.record(.rejected(received(), Rejection(.badSignature, "wrong secret")))
        let copy = try await test.store.record(.verified(received(reverifiedFrom: rejected.notificationID), notification("k", .transition(.paid))))
        let again = try await test.store.record(.verified(received(reverifiedFrom: rejected.notificationID), notification("k", .transition(.paid))))
        #expect(copy.verdict == .applied && again.verdict == .duplicate)
        let requests = try await test.store.rejectedRequests(RejectedSelection())
        #expect(requests.map(\.id) == [rejected.notificationID, other.notificationID])
        #expect(requests[0].reverifiedAs == [
            ReverifiedCopy(notificationID: copy.notificationID, verdict: .applied),
            ReverifiedCopy(notificationID: again.notificationID, verdict: .duplicate),
        ])
        #expect(requests[1].reverifiedAs.isEmpty)
        let listed = try await test.store.notifications(NotificationFilter(verdict: .applied), includeRaw: false)
        #expect(listed.first?.reverifiedFrom == rejected.notificationID)
        try await test.close()
    }
}

@Suite("Retention at the store: old rejected rows and delivered events go, nothing authentic (issue 33)", .heavy)
struct RetentionStoreTests {
    @Test("rejected notifications older than the cutoff are removed, oldest first, in batches; no other verdict ever",
          arguments: Backend.allCases)
    func rejected(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        for day in 10...19 {
            _ = try await test.store.record(.rejected(received(at: "2026-10-\(day)T12:00:00.000Z"), Rejection(.badSignature, "old")))
        }
        // Authentic notifications as old, of every kind of verdict.
        let old = "2026-10-01T00:00:00.000Z"
        _ = try await test.store.record(.verified(received(at: old), notification("a", .transition(.paid))))
        _ = try await test.store.record(.verified(received(at: old), notification("a", .transition(.paid))))
        _ = try await test.store.record(.verified(received(at: old), notification("b", .transition(.pending))))
        _ = try await test.store.record(.verified(received(at: old), notification("c", .unknownStatus)))
        let authentic = try await test.count("SELECT COUNT(*) FROM notifications WHERE verdict <> 'rejected'")
        let orders = try await test.count("SELECT COUNT(*) FROM orders")
        let transitions = try await test.count("SELECT COUNT(*) FROM transitions")

        #expect(try await test.store.pruneRejected(receivedBefore: "2026-10-15T00:00:00.000Z", limit: 3) == 3)
        #expect(try await test.store.pruneRejected(receivedBefore: "2026-10-15T00:00:00.000Z", limit: 3) == 2)
        #expect(try await test.store.pruneRejected(receivedBefore: "2026-10-15T00:00:00.000Z", limit: 3) == 0)
        let left = try await test.store.rejectedRequests(RejectedSelection()).map(\.receivedAt)
        #expect(left == (15...19).map { "2026-10-\($0)T12:00:00.000Z" })
        #expect(try await test.store.pruneRejected(receivedBefore: "2027-01-01T00:00:00.000Z", limit: 500) == 5)
        #expect(try await test.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected'") == 0)
        #expect(try await test.count("SELECT COUNT(*) FROM notifications WHERE verdict <> 'rejected'") == authentic)
        #expect(try await test.count("SELECT COUNT(*) FROM orders") == orders)
        #expect(try await test.count("SELECT COUNT(*) FROM transitions") == transitions)
        try await test.close()
    }

    @Test("events no target owes are removed with their deliveries; owed ones stay; the feed then answers 'gone' below the highest removed seq",
          arguments: Backend.allCases)
    func events(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend, routes: [DeliveryRoute(name: "app", providers: ["test"])])
        // Events 1-6 owed to `app` (provider test), 7-8 to nobody (provider other).
        for index in 1...6 { _ = try await test.record(notification("p\(index)", .transition(.paid), order: "P\(index)")) }
        for index in 7...8 {
            _ = try await test.record(notification("q\(index)", .transition(.paid), order: "Q\(index)"), provider: "other")
        }
        try await test.settle()
        // 1, 2, 4 delivered, 3 failed, 5 and 6 still pending.
        let now = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        let claimed = try await test.store.claimDeliveries(target: "app", limit: 10, now: "9999-01-01T00:00:00.000Z",
                                                            leaseUntil: "9999-01-02T00:00:00.000Z", owner: "test")
        #expect(claimed.map(\.event.seq).sorted() == [1, 2, 3, 4, 5, 6])
        let outcome: [Int64: DeliveryAttemptOutcome.Outcome] = [1: .delivered, 2: .delivered, 3: .failed, 4: .delivered]
        try await test.store.finishDeliveries(claimed.compactMap { attempt in
            outcome[attempt.event.seq].map { DeliveryAttemptOutcome(id: attempt.id, attemptedAt: now, status: 200, error: nil, outcome: $0) }
        }, owner: "test")
        let authentic = try await test.count("SELECT COUNT(*) FROM notifications")
        let transitions = try await test.count("SELECT COUNT(*) FROM transitions")

        // Nothing is older than a cutoff in the past.
        var batch = try await test.store.pruneEvents(occurredBefore: "2000-01-01T00:00:00.000Z", afterSeq: 0, limit: 100)
        #expect(batch.examined == 0 && batch.events == 0 && batch.prunedThrough == 0)
        // Every event is older than a cutoff in the future; batches of 3 walk the seqs.
        let future = "9999-01-01T00:00:00.000Z"
        batch = try await test.store.pruneEvents(occurredBefore: future, afterSeq: 0, limit: 3)
        #expect(batch.examined == 3 && batch.lastExamined == 3 && batch.events == 3 && batch.deliveries == 3 && batch.prunedThrough == 3)
        batch = try await test.store.pruneEvents(occurredBefore: future, afterSeq: 3, limit: 3)
        #expect(batch.examined == 3 && batch.lastExamined == 6 && batch.events == 1 && batch.deliveries == 1 && batch.prunedThrough == 4)
        batch = try await test.store.pruneEvents(occurredBefore: future, afterSeq: 6, limit: 3)
        #expect(batch.examined == 2 && batch.lastExamined == 8 && batch.events == 2 && batch.deliveries == 0 && batch.prunedThrough == 8)
        batch = try await test.store.pruneEvents(occurredBefore: future, afterSeq: 8, limit: 3)
        #expect(batch.examined == 0 && batch.lastExamined == nil && batch.prunedThrough == 8)

        #expect(try await test.allEventsKept().map(\.seq) == [5, 6])
        #expect(try await test.store.deliveries(DeliveryFilter()).map(\.seq).sorted() == [5, 6])
        // A reader after any removed seq is told the oldest readable one; one after the highest is not.
        for after: Int64 in [0, 4, 7] {
            let page = try await test.store.events(EventFilter(after: after))
            #expect(page.oldestSeq == 9 && page.events.isEmpty, "after \(after)")
        }
        let page = try await test.store.events(EventFilter(after: 8))
        #expect(page.oldestSeq == nil)
        #expect(try await test.store.newestEventSeq() == 8)
        // The orders and their history stay whole.
        #expect(try await test.count("SELECT COUNT(*) FROM notifications") == authentic)
        #expect(try await test.count("SELECT COUNT(*) FROM transitions") == transitions)
        #expect(try await test.count("SELECT COUNT(*) FROM orders WHERE state = 'paid'") == 8)
        // The next event goes on from seq 9.
        _ = try await test.record(notification("p9", .transition(.paid), order: "P9"))
        try await test.settle()
        #expect(try await test.store.events(EventFilter(after: 8)).events.map(\.seq) == [9])
        try await test.close()
    }
}

extension StoreUnderTest {
    /// The events still stored, whatever the pruned-through marker says, ascending.
    func allEventsKept() async throws -> [EventRecord] {
        let orders = try await store.orders(OrderFilter(limit: 1000))
        var events: [EventRecord] = []
        for order in orders {
            events += try await store.order(provider: order.provider, account: order.account, orderRef: order.orderRef, includeRaw: false)?
                .events ?? []
        }
        return events.sorted { $0.seq < $1.seq }
    }
}
