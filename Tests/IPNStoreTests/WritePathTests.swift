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
import IPNTestSupport
import Testing

/// Both write paths: one transaction per notification, and group commit.
let commitPaths = [1, 256]

/// The one write path's rules, on every backend and both commit paths: dedup, the state
/// machine, refunds, links, expectations.
@Suite("The one write path, on every store and both commit paths")
struct WritePathTests {
    @Test("ten concurrent deliveries of one notification: one applied, nine duplicates, one transition", arguments: Backend.allCases, commitPaths)
    func concurrentDuplicates(backend: Backend, maxBatch: Int) async throws {
        let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
        let paid = notification("pay-1", .transition(.paid))
        let verdicts = try await withThrowingTaskGroup(of: Verdict.self) { group in
            for _ in 0..<10 {
                group.addTask { try await store.store.record(.verified(request(), paid)).verdict }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(verdicts.filter { $0 == .applied }.count == 1)
        #expect(verdicts.filter { $0 == .duplicate }.count == 9)
        #expect(try await store.count("SELECT COUNT(*) FROM transitions") == 1)
        #expect(try await store.count("SELECT COUNT(*) FROM notifications") == 10)
        #expect(try await store.order("O1")?.order.state == .paid)
        try await store.close()
    }

    @Test("many orders delivered concurrently with duplicates: exactly one applied per dedup key", arguments: Backend.allCases, commitPaths)
    func manyConcurrent(backend: Backend, maxBatch: Int) async throws {
        let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
        let outcomes = try await withThrowingTaskGroup(of: (String, Verdict).self) { group in
            for index in 0..<200 {
                for _ in 0..<3 {
                    group.addTask {
                        let note = notification("k\(index)", .transition(.paid), order: "order-\(index)")
                        return ("k\(index)", try await store.store.record(.verified(request(), note)).verdict)
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let applied = Dictionary(grouping: outcomes.filter { $0.1 == .applied }, by: \.0)
        #expect(applied.count == 200)
        #expect(applied.values.allSatisfy { $0.count == 1 })
        #expect(outcomes.filter { $0.1 == .duplicate }.count == 400)
        #expect(try await store.count("SELECT COUNT(*) FROM orders WHERE state = 'paid'") == 200)
        #expect(try await store.count("SELECT COUNT(*) FROM transitions") == 200)
        try await store.close()
    }

    @Test("a lifecycle in every order ends in the same state; a late pending is stale", arguments: Backend.allCases, commitPaths)
    func everyOrder(backend: Backend, maxBatch: Int) async throws {
        let lifecycle = [
            notification("pending", .transition(.pending)),
            notification("authorized", .transition(.authorized)),
            notification("paid", .transition(.paid)),
            notification("refunded", .refund(RefundInfo(refundID: "R1", amount: Money(minor: 500, currency: "USD"), fullyRefunded: true)),
                         kind: .refund),
        ]
        for permutation in permutations(of: lifecycle) {
            let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
            for note in permutation { _ = try await store.store.record(.verified(request(), note)) }
            let detail = try #require(try await store.order("O1"))
            #expect(detail.order.state == .refunded, "\(permutation.map(\.dedupKey))")
            #expect(detail.order.refundedMinor == 500)
            // Replaying everything changes nothing.
            for note in permutation {
                #expect(try await store.store.record(.verified(request(), note)).verdict == .duplicate)
            }
            #expect(try await store.order("O1")?.order.state == .refunded)
            try await store.close()
        }
        let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
        #expect(try await store.store.record(.verified(request(), notification("paid", .transition(.paid)))).verdict == .applied)
        let late = try await store.store.record(.verified(request(), notification("pending", .transition(.pending))))
        #expect(late.verdict == .stale)
        #expect(late.orderState == .paid)
        let detail = try #require(try await store.order("O1"))
        #expect(detail.transitions.map(\.to) == [.paid])
        #expect(detail.transitions.first?.from == nil)
        #expect(detail.notifications.map(\.verdict) == [.applied, .stale])
        try await store.close()
    }

    @Test("a payment and two refunds in every order: the same state, amount and refunded total, the same on replay",
          arguments: Backend.allCases, [(1, true), (1, false), (256, true), (256, false)])
    func refundsInEveryOrder(backend: Backend, paths: (maxBatch: Int, remainingReported: Bool)) async throws {
        let (maxBatch, remainingReported) = paths
        let usd = { (minor: Int64) in Money(minor: minor, currency: "USD") }
        func refund(_ id: String, _ minor: Int64, remaining: Int64) -> VerifiedNotification {
            // Unlimint reports what remains; Citcon and Alipay only the refund's own amount.
            let info = remainingReported
                ? RefundInfo(refundID: id, amount: usd(minor), fullyRefunded: remaining == 0, remainingMinor: remaining)
                : RefundInfo(refundID: id, amount: usd(minor))
            return notification(id, .refund(info), kind: .refund, amount: usd(minor))
        }
        let paid = notification("paid", .transition(.paid), amount: usd(1000))
        let lifecycles: [(notes: [VerifiedNotification], state: OrderState, refunded: Int64)] = [
            ([paid, refund("R1", 300, remaining: 700), refund("R2", 700, remaining: 0)], .refunded, 1000),
            ([paid, refund("R1", 300, remaining: 700), refund("R2", 200, remaining: 500)], .partiallyRefunded, 500),
        ]
        for lifecycle in lifecycles {
            for permutation in permutations(of: lifecycle.notes) {
                let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
                for note in permutation + permutation { _ = try await store.store.record(.verified(request(), note)) }
                let detail = try #require(try await store.order("O1"))
                let order = permutation.map(\.dedupKey)
                #expect(detail.order.state == lifecycle.state, "\(order)")
                #expect(detail.order.refundedMinor == lifecycle.refunded, "\(order)")
                #expect(detail.order.amount == usd(1000), "\(order)")
                #expect(detail.order.providerTxnID == "T-paid", "\(order)")
                // Transitions only climb, and the last one reached the final state.
                #expect(detail.transitions.last?.to == lifecycle.state, "\(order)")
                #expect(zip(detail.transitions.dropLast(), detail.transitions.dropFirst()).allSatisfy { $0.to.rank <= $1.to.rank })
                try await store.close()
            }
        }
    }

    @Test("a refund in another currency flags the order and leaves its total alone", arguments: Backend.allCases, commitPaths)
    func refundInOtherCurrency(backend: Backend, maxBatch: Int) async throws {
        let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
        _ = try await store.store.record(.verified(request(), notification("paid", .transition(.paid))))
        let euros = Money(minor: 300, currency: "EUR")
        let outcome = try await store.store.record(.verified(request(), notification(
            "R1", .refund(RefundInfo(refundID: "R1", amount: euros)), kind: .refund, amount: euros)))
        #expect(outcome.verdict == .mismatch)
        let detail = try #require(try await store.order("O1"))
        #expect(detail.order.state == .paid)
        #expect(detail.order.refundedMinor == 0)
        #expect(detail.order.flags == ["amount_mismatch"])
        #expect(try await store.count("SELECT COUNT(*) FROM refunds") == 0)

        // The other way round: the euro refund is counted first, so the dollar payment comes too
        // late to move the order. It is stale, like any late payment with no expectation to
        // disagree with (product.md section 5), and its amount is not taken as the order's.
        let refundFirst = notification("R2", .refund(RefundInfo(refundID: "R2", amount: euros)), order: "O2", kind: .refund, amount: euros)
        #expect(try await store.store.record(.verified(request(), refundFirst)).verdict == .applied)
        let payment = try await store.store.record(.verified(request(), notification("paid-2", .transition(.paid), order: "O2")))
        #expect(payment.verdict == .stale)
        let second = try #require(try await store.order("O2"))
        #expect(second.order.flags == [])
        #expect(second.order.amount == nil)
        #expect(second.order.refundedMinor == 300)
        try await store.close()
    }

    @Test("refunds whose amounts add up past Int64 are stored as a mismatch; later ones still record", arguments: Backend.allCases, commitPaths)
    func refundOverflow(backend: Backend, maxBatch: Int) async throws {
        let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
        let big = Money(minor: .max - 10, currency: "USD")
        func refund(_ id: String, _ amount: Money) -> VerifiedNotification {
            notification(id, .refund(RefundInfo(refundID: id, amount: amount)), kind: .refund, amount: amount)
        }
        #expect(try await store.store.record(.verified(request(), refund("R1", big))).verdict == .applied)
        #expect(try await store.store.record(.verified(request(), refund("R2", big))).verdict == .mismatch)
        #expect(try await store.store.record(.verified(request(), refund("R3", Money(minor: 5, currency: "USD")))).verdict == .applied)
        let detail = try #require(try await store.order("O1"))
        #expect(detail.order.refundedMinor == .max - 5)
        #expect(detail.order.flags == ["amount_mismatch"])
        try await store.close()
    }

    @Test("transitions record from, to and the notification that caused them", arguments: Backend.allCases, commitPaths)
    func transitions(backend: Backend, maxBatch: Int) async throws {
        let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
        let first = try await store.store.record(.verified(request(), notification("a", .transition(.pending))))
        let second = try await store.store.record(.verified(request(), notification("b", .transition(.paid))))
        let detail = try #require(try await store.order("O1"))
        #expect(detail.transitions.map(\.from) == [nil, .pending])
        #expect(detail.transitions.map(\.to) == [.pending, .paid])
        #expect(detail.transitions.map(\.notificationID) == [first.notificationID, second.notificationID])
        #expect(detail.order.amount == Money(minor: 500, currency: "USD"))
        #expect(detail.order.providerTxnID == "T-b")
        try await store.close()
    }

    @Test("a refund or capture before its payment is unlinked, then linked and applied when the payment arrives",
          arguments: Backend.allCases, commitPaths)
    func unlinked(backend: Backend, maxBatch: Int) async throws {
        let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
        let refund = notification("refund", .refund(RefundInfo(refundID: "R1", amount: Money(minor: 4200, currency: "SGD"))),
                                  order: nil, kind: .refund, amount: Money(minor: 4200, currency: "SGD"), link: .requires("P1"))
        let waiting = try await store.store.record(.verified(request(), refund))
        #expect(waiting.verdict == .unlinked)
        #expect(try await store.store.record(.verified(request(), refund)).verdict == .duplicate)
        let payment = notification("payment", .transition(.paid), order: "PAY-1", amount: Money(minor: 4200, currency: "SGD"),
                                   link: .registers("P1"))
        #expect(try await store.store.record(.verified(request(), payment)).verdict == .applied)
        let detail = try #require(try await store.order("PAY-1"))
        #expect(detail.order.state == .refunded)
        #expect(detail.order.refundedMinor == 4200)
        #expect(detail.transitions.map(\.to) == [.paid, .refunded])
        let linked = try #require(detail.notifications.first { $0.id == waiting.notificationID })
        #expect(linked.verdict == .applied)
        #expect(linked.orderRef == "PAY-1")
        // Its redelivery, a duplicate stored while it waited, is the order's too.
        #expect(detail.notifications.filter { $0.verdict == .duplicate }.map(\.orderRef) == ["PAY-1"])
        // A later capture for the same payment links at once.
        let capture = notification("capture", .transition(.paid), order: nil, kind: .capture,
                                   amount: Money(minor: 4200, currency: "SGD"), link: .requires("P1"))
        let captured = try await store.store.record(.verified(request(), capture))
        #expect(captured.verdict == .stale)
        #expect(captured.orderRef == "PAY-1")
        #expect(try await store.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'unlinked'") == 0)
        try await store.close()
    }

    @Test("a waiting notification whose stored effect cannot be read stays unlinked; the payment is still recorded",
          arguments: Backend.allCases, commitPaths)
    func unreadableWaitingEffect(backend: Backend, maxBatch: Int) async throws {
        let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
        let capture = notification("capture", .transition(.paid), order: nil, kind: .capture, link: .requires("P3"))
        let waiting = try await store.store.record(.verified(request(), capture))
        #expect(waiting.verdict == .unlinked)
        // As if stored by a version whose effect format this one cannot read.
        try await store.execute("UPDATE notifications SET pending_effect = '{\"from\":\"elsewhere\"}' WHERE id = \(waiting.notificationID)")
        let payment = notification("payment", .transition(.authorized), order: "PAY-3", link: .registers("P3"))
        let outcome = try await store.store.record(.verified(request(), payment))
        #expect(outcome.verdict == .applied)
        #expect(outcome.orderState == .authorized)
        let detail = try #require(try await store.order("PAY-3"))
        #expect(detail.order.state == .authorized)
        let reason = try await store.text("SELECT reason_detail FROM notifications WHERE id = \(waiting.notificationID) AND verdict = 'unlinked'")
        #expect(reason?.contains("cannot be read") == true)
        try await store.close()
    }

    @Test("a capture waiting for a pending payment is applied when it links", arguments: Backend.allCases, commitPaths)
    func captureAfterPending(backend: Backend, maxBatch: Int) async throws {
        let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
        let capture = notification("capture", .transition(.paid), order: nil, kind: .capture, link: .requires("P2"))
        #expect(try await store.store.record(.verified(request(), capture)).verdict == .unlinked)
        let pending = notification("pending", .transition(.pending), order: "PAY-2", link: .registers("P2"))
        let outcome = try await store.store.record(.verified(request(), pending))
        #expect(outcome.verdict == .applied)
        #expect(outcome.orderState == .paid)
        let detail = try #require(try await store.order("PAY-2"))
        #expect(detail.notifications.map(\.verdict) == [.applied, .applied])
        // The order keeps the payment's id; the capture has its own on its notification.
        #expect(detail.order.providerTxnID == "T-pending")
        #expect(detail.notifications.map(\.providerTxnID).contains("T-capture"))
        try await store.close()
    }

    @Test("expectations: another amount is a mismatch that flags the order and does not transition", arguments: Backend.allCases, commitPaths)
    func expectations(backend: Backend, maxBatch: Int) async throws {
        let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
        let outcome = try await store.store.setExpectation(provider: "test", account: "default", orderRef: "O1",
                                                            amount: Money(minor: 1234, currency: "USD"))
        #expect(outcome == ExpectationOutcome(state: .expected, mismatch: nil))
        let wrong = notification("wrong", .transition(.paid), amount: Money(minor: 1200, currency: "USD"))
        #expect(try await store.store.record(.verified(request(), wrong)).verdict == .mismatch)
        var detail = try #require(try await store.order("O1"))
        #expect(detail.order.state == .expected)
        #expect(detail.order.flags == ["amount_mismatch"])
        #expect(detail.order.expected == Money(minor: 1234, currency: "USD"))
        let right = notification("right", .transition(.paid), amount: Money(minor: 1234, currency: "USD"))
        #expect(try await store.store.record(.verified(request(), right)).verdict == .applied)
        detail = try #require(try await store.order("O1"))
        #expect(detail.order.state == .paid)
        #expect(detail.transitions.map(\.to) == [.expected, .paid])
        #expect(detail.transitions.first?.notificationID == nil)
        try await store.close()
    }

    @Test("an expectation registered after the order was paid with another amount flags it; a matching one does not",
          arguments: Backend.allCases, commitPaths)
    func lateExpectation(backend: Backend, maxBatch: Int) async throws {
        let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
        _ = try await store.store.record(.verified(request(), notification("paid", .transition(.paid))))  // 5.00 USD
        let same = try await store.store.setExpectation(provider: "test", account: "default", orderRef: "O1",
                                                        amount: Money(minor: 500, currency: "USD"))
        #expect(same == ExpectationOutcome(state: .paid, mismatch: nil))
        #expect(try await store.order("O1")?.order.flags == [])
        let other = try await store.store.setExpectation(provider: "test", account: "default", orderRef: "O1",
                                                         amount: Money(minor: 1234, currency: "USD"))
        #expect(other.state == .paid)
        #expect(other.mismatch?.contains("not the expected 12.34 USD") == true, "\(String(describing: other.mismatch))")
        let detail = try #require(try await store.order("O1"))
        #expect(detail.order.state == .paid)
        #expect(detail.order.flags == ["amount_mismatch"])
        // A pending order's amount is not yet a payment: no flag until one arrives.
        _ = try await store.store.record(.verified(request(), notification("pending", .transition(.pending), order: "O2")))
        let pending = try await store.store.setExpectation(provider: "test", account: "default", orderRef: "O2",
                                                           amount: Money(minor: 1234, currency: "USD"))
        #expect(pending.mismatch == nil)
        // Paid by a notification that stated no amount: registered first, the expectation would
        // have made it a mismatch, so it flags the order now.
        _ = try await store.store.record(.verified(request(), notification("bare", .transition(.paid), order: "O3", amount: nil)))
        let bare = try await store.store.setExpectation(provider: "test", account: "default", orderRef: "O3",
                                                        amount: Money(minor: 1234, currency: "USD"))
        #expect(bare.mismatch == "order is paid with no amount stated, not the expected 12.34 USD")
        #expect(try await store.order("O3")?.order.flags == ["amount_mismatch"])
        // A refund first: the payment has not been seen, and is checked when it comes.
        _ = try await store.store.record(.verified(request(), notification(
            "refund", .refund(RefundInfo(refundID: "R1", amount: Money(minor: 300, currency: "USD"))), order: "O4", kind: .refund)))
        let refunded = try await store.store.setExpectation(provider: "test", account: "default", orderRef: "O4",
                                                            amount: Money(minor: 1234, currency: "USD"))
        #expect(refunded.mismatch == nil)
        #expect(try await store.order("O4")?.order.flags == [])
        try await store.close()
    }

    @Test("rejected requests are stored with their reason and never applied", arguments: Backend.allCases, commitPaths)
    func rejected(backend: Backend, maxBatch: Int) async throws {
        let store = try await StoreUnderTest.make(backend, maxBatch: maxBatch)
        let outcome = try await store.store.record(.rejected(request(body: "forged"), Rejection(.badSignature, "no match")))
        #expect(outcome.verdict == .rejected)
        let rows = try await store.store.notifications(NotificationFilter(), includeRaw: true)
        #expect(rows.count == 1)
        #expect(rows.first?.reason == "bad_signature")
        #expect(rows.first?.body == Array("forged".utf8))
        #expect(try await store.count("SELECT COUNT(*) FROM orders") == 0)
        #expect(try await store.count("SELECT COUNT(*) FROM dedup_keys") == 0)
        try await store.close()
    }
}

func permutations<T>(of items: [T]) -> [[T]] {
    guard items.count > 1 else { return [items] }
    return items.indices.flatMap { index -> [[T]] in
        var rest = items
        let item = rest.remove(at: index)
        return permutations(of: rest).map { [item] + $0 }
    }
}
