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

@Suite("The console's reads: hourly counts, flagged orders, search, one notification, an order's deliveries (issue 32)", .heavy)
struct ConsoleReadTests {
    /// The counts as (verdict, reason) -> count, all hours and providers together.
    private func tally(_ counts: [HourlyNotificationCount]) -> [String: Int] {
        var tally: [String: Int] = [:]
        for count in counts { tally["\(count.verdict.rawValue)/\(count.reason ?? "-")", default: 0] += count.count }
        return tally
    }

    @Test("each stored notification is counted once, in its hour, under its verdict and reason", arguments: Backend.allCases)
    func hourlyCounts(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        _ = try await test.store.setExpectation(provider: "test", account: "default", orderRef: "O1", amount: Money(minor: 500, currency: "USD"))
        _ = try await test.record(notification("pending", .transition(.pending)))
        _ = try await test.record(notification("pending", .transition(.pending)))
        _ = try await test.record(notification("wrong", .transition(.paid), amount: Money(minor: 1, currency: "USD")))
        _ = try await test.record(notification("paid", .transition(.paid)))
        _ = try await test.store.record(.rejected(request(), Rejection(.badSignature, "no")))
        _ = try await test.store.record(.rejected(request(), Rejection(.badSignature, "no")))
        _ = try await test.store.record(.rejected(request(provider: "other", account: "shop2"), Rejection(.missingHeader, "no")))

        let counts = try await test.store.notificationCounts(since: "2026-11-21T00:00:00.000Z")
        #expect(tally(counts) == [
            "applied/-": 2, "duplicate/-": 1, "mismatch/amount_mismatch": 1, "rejected/bad_signature": 2, "rejected/missing_header": 1,
        ])
        // `request()` is received at 2026-11-21T00:00:00.000Z: every count is in that hour.
        #expect(Set(counts.map(\.hour)) == ["2026-11-21T00:00:00.000Z"])
        #expect(counts.contains { $0.provider == "other" && $0.account == "shop2" && $0.count == 1 })
        // They add up to the notifications stored; hours before `since` are left out.
        #expect(counts.reduce(0) { $0 + $1.count } == (try await test.count("SELECT COUNT(*) FROM notifications")))
        #expect(try await test.store.notificationCounts(since: "2026-11-21T01:00:00.000Z").isEmpty)
    }

    @Test("a notification that waited for its payment moves from unlinked to the verdict it ends with", arguments: Backend.allCases)
    func waitingNotificationMoves(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        _ = try await test.record(refund("refund", id: "R1", amount: Money(minor: 4200, currency: "SGD"), order: nil, link: .requires("P1")))
        #expect(tally(try await test.store.notificationCounts(since: "2026-01-01T00:00:00.000Z")) == ["unlinked/-": 1])
        _ = try await test.record(notification(
            "payment", .transition(.paid), order: "PAY-1", amount: Money(minor: 4200, currency: "SGD"), link: .registers("P1")))
        let counts = try await test.store.notificationCounts(since: "2026-01-01T00:00:00.000Z")
        #expect(tally(counts) == ["applied/-": 2])
        #expect(tally(counts) == [
            "applied/-": try await test.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'applied'"),
        ])
    }

    @Test("counts stay exact when one commit holds waiting refunds, their payments, duplicates and rejected requests",
          arguments: Backend.allCases)
    func countsWithinOneCommit(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        // Sent at once, the writer takes them into a few batches, in no set order: a refund may
        // wait (unlinked) for its payment and be moved to applied in the same commit, or come after it.
        // (20 of each: 40 made a PostgreSQL batch outlast its 5 s under the whole suite's load.)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                let amount = Money(minor: 4200, currency: "SGD")
                group.addTask { _ = try await test.record(refund("refund-\(index)", id: "R\(index)", amount: amount, order: nil, link: .requires("P\(index)"))) }
                group.addTask {
                    _ = try await test.record(notification(
                        "payment-\(index)", .transition(.paid), order: "PAY-\(index)", amount: amount, link: .registers("P\(index)")))
                }
                group.addTask { _ = try await test.record(notification("payment-\(index % 5)", .transition(.paid), order: "PAY-\(index % 5)")) }
                group.addTask { _ = try await test.store.record(.rejected(request(), Rejection(.badSignature, "no"))) }
            }
            try await group.waitForAll()
        }
        var stored: [String: Int] = [:]
        for verdict in ["applied", "duplicate", "unlinked", "mismatch", "stale", "rejected"] {
            for reason in ["-", "bad_signature", "amount_mismatch"] {
                let condition = reason == "-" ? "reason IS NULL" : "reason = '\(reason)'"
                let count = try await test.count("SELECT COUNT(*) FROM notifications WHERE verdict = '\(verdict)' AND \(condition)")
                if count > 0 { stored["\(verdict)/\(reason)"] = count }
            }
        }
        #expect(stored.values.reduce(0, +) == 80)
        #expect(tally(try await test.store.notificationCounts(since: "2026-01-01T00:00:00.000Z")) == stored)
    }

    @Test("flagged orders: how many carry amount_mismatch, newest first", arguments: Backend.allCases)
    func flagged(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        for index in 1...3 {
            _ = try await test.store.setExpectation(
                provider: "test", account: "default", orderRef: "M\(index)", amount: Money(minor: 500, currency: "USD"))
            _ = try await test.record(notification("paid-\(index)", .transition(.paid), order: "M\(index)", amount: Money(minor: 1, currency: "USD")))
        }
        _ = try await test.record(notification("fine", .transition(.paid), order: "FINE"))
        let flagged = try await test.store.flaggedOrders("amount_mismatch", limit: 2)
        #expect(flagged.total == 3)
        #expect(flagged.newest.map(\.orderRef) == ["M3", "M2"])
        #expect(flagged.newest.allSatisfy { $0.flags == ["amount_mismatch"] })
        #expect(try await test.store.flaggedOrders("other_flag", limit: 10) == FlaggedOrders(total: 0, newest: []))
        // A flag name is matched whole, not as a pattern.
        #expect(try await test.store.flaggedOrders("amount%", limit: 10).total == 0)
    }

    @Test("search by reference prefix: every provider and account, in reference order, a page at a time", arguments: Backend.allCases)
    func search(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        for ref in ["AB-2", "AB-1", "AB-10", "ab-3", "ABC", "A", "XAB-1", "AB%", "AB_"] {
            _ = try await test.record(notification("p-\(ref)", .transition(.paid), order: ref))
        }
        _ = try await test.record(notification("p-other", .transition(.paid), order: "AB-1"), provider: "other")
        let first = try await test.store.searchOrders(OrderSearch(referencePrefix: "AB", limit: 4))
        #expect(first.map(\.orderRef) == ["AB%", "AB-1", "AB-1", "AB-10"])
        #expect(first.filter { $0.orderRef == "AB-1" }.map(\.provider).sorted() == ["other", "test"])
        let last = try #require(first.last)
        let second = try await test.store.searchOrders(
            OrderSearch(referencePrefix: "AB", after: OrderSearch.Position(orderRef: last.orderRef, id: last.id), limit: 4))
        #expect(second.map(\.orderRef) == ["AB-2", "ABC", "AB_"])
        // Pattern characters are text; an exact reference is its own prefix; nothing matches nothing.
        #expect(try await test.store.searchOrders(OrderSearch(referencePrefix: "AB%")).map(\.orderRef) == ["AB%"])
        #expect(try await test.store.searchOrders(OrderSearch(referencePrefix: "AB_")).map(\.orderRef) == ["AB_"])
        #expect(try await test.store.searchOrders(OrderSearch(referencePrefix: "ZZ")).isEmpty)
        #expect(try await test.store.searchOrders(OrderSearch(referencePrefix: "")).isEmpty)
    }

    @Test("one notification by id, with its raw request only when asked", arguments: Backend.allCases)
    func notificationByID(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        let stored = try await test.store.record(.verified(request(body: #"{"x":1}"#), notification("paid", .transition(.paid))))
        let plain = try #require(try await test.store.notification(id: stored.notificationID, includeRaw: false))
        #expect(plain.verdict == .applied && plain.orderRef == "O1" && plain.body == nil && plain.headers == nil)
        let raw = try #require(try await test.store.notification(id: stored.notificationID, includeRaw: true))
        #expect(raw.body == Array(#"{"x":1}"#.utf8) && raw.headers == "[]")
        #expect(try await test.store.notification(id: stored.notificationID + 100, includeRaw: true) == nil)
    }

    @Test("an order's deliveries, newest first, and no other order's", arguments: Backend.allCases)
    func orderDeliveries(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend, routes: [DeliveryRoute(name: "app")])
        _ = try await test.record(notification("pending", .transition(.pending)))
        _ = try await test.record(notification("paid", .transition(.paid)))
        _ = try await test.record(notification("other", .transition(.paid), order: "O2"))
        try await test.settle()
        let order = try #require(try await test.order("O1"))
        let deliveries = try await test.store.deliveries(orderID: order.order.id)
        #expect(deliveries.map(\.orderRef) == ["O1", "O1"])
        #expect(deliveries.map(\.seq) == order.events.map(\.seq).reversed())
        #expect(deliveries.allSatisfy { $0.target == "app" && $0.state == .pending })
    }
}
