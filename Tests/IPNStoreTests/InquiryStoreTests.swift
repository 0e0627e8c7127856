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

/// Reconciliation's store side (product.md section 12), on every backend: the schedule a change
/// gives an order, claims as leases, inquiries recorded through the one write path.
@Suite("Inquiries: the schedule, claims and the one write path")
struct InquiryStoreTests {
    static let scope = Scope(provider: "test", account: "default")
    /// 1 h, 2 h, then every hour; give up after 10 h. Every claim is made as if hours had passed, so
    /// nothing here depends on how fast the test runs.
    static let hour: Int64 = 3_600_000
    static let schedule = InquirySchedule(stepsMillis: [hour, 2 * hour], giveUpAfterMillis: 10 * hour, repeatMillis: hour)
    /// When the claims are made: after the first step, before the give-up.
    static let later = 3 * hour

    static func millis(_ text: String?) -> Int64? { text.flatMap(Timestamp.parse) }
    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
    static func text(_ millis: Int64) -> String { Timestamp.format(epochMilliseconds: millis) }

    func make(_ backend: Backend) async throws -> StoreUnderTest {
        let test = try await StoreUnderTest.make(backend)
        test.store.setInquirySchedule(Self.schedule)
        return test
    }

    func expect(_ test: StoreUnderTest, _ ref: String, minor: Int64 = 500) async throws {
        _ = try await test.store.setExpectation(provider: "test", account: "default", orderRef: ref, amount: Money(minor: minor, currency: "USD"))
    }

    /// Claims every order due an hour from now.
    func claimAll(_ test: StoreUnderTest, limit: Int = 100, leaseSeconds: Int64 = 30) async throws -> [DueOrder] {
        let later = Self.now() + Self.later
        return try await test.store.claimDueOrders(
            scope: Self.scope, limit: limit, now: Self.text(later), leaseUntil: Self.text(later + leaseSeconds * 1000))
    }

    func inquiry(
        _ order: DueOrder?, ref: String, result: InquiryResult, next: InquirySchedule.Next? = nil, trigger: InquiryTrigger = .schedule
    ) -> CompletedInquiry {
        CompletedInquiry(
            scope: Self.scope, orderRef: ref, askedAt: Self.text(Self.now()), trigger: trigger, url: "https://provider.test/status/\(ref)",
            durationMs: 12, httpStatus: 200, providerStatus: "STATUS", result: result,
            claim: order.map { InquiryClaim(orderID: $0.orderID, lease: $0.lease, next: next ?? .ask(atMillis: Self.now() + 2 * Self.hour, step: 1)) })
    }

    static let answer = InquiryAnswerBytes(headers: #"{"content-type":"application/json"}"#, body: Array(#"{"status":"PAID"}"#.utf8))

    @Test("a change schedules an unsettled order from now; a claim leases it; settled orders are never due", arguments: Backend.allCases)
    func changeSchedules(backend: Backend) async throws {
        let test = try await make(backend)
        let before = Self.now()
        try await expect(test, "E1")
        _ = try await test.record(notification("pending", .transition(.pending), order: "P1"))
        _ = try await test.record(notification("paid", .transition(.paid), order: "D1"))
        for ref in ["E1", "P1"] {
            let detail = try #require(try await test.order(ref))
            let due = try #require(Self.millis(detail.nextInquiryAt))
            // The first step (10 s) after the change.
            #expect(due >= before + Self.hour && due <= Self.now() + Self.hour, "\(ref)")
        }
        #expect(try await test.order("D1")?.nextInquiryAt == nil)
        // Not due yet now; due an hour from now, earliest first, and then leased.
        #expect(try await test.store.claimDueOrders(scope: Self.scope, limit: 10, now: Self.text(Self.now()), leaseUntil: Self.text(Self.now() + 1000)).isEmpty)
        let claimed = try await claimAll(test)
        #expect(claimed.map(\.orderRef) == ["E1", "P1"])
        #expect(claimed[0].expected == Money(minor: 500, currency: "USD") && claimed[0].state == .expected && claimed[0].schedule.step == 0)
        #expect(try await claimAll(test).isEmpty, "a leased order is not claimed twice")
        // Another account's orders are its own.
        let other = try await test.store.claimDueOrders(
            scope: Scope(provider: "test", account: "other"), limit: 10, now: Self.text(Self.now() + Self.later), leaseUntil: Self.text(Self.now()))
        #expect(other.isEmpty)
        // Once the lease has passed, it is due again (a node that died mid-inquiry).
        let afterLease = Self.now() + Self.later + 31_000
        let again = try await test.store.claimDueOrders(
            scope: Self.scope, limit: 10, now: Self.text(afterLease), leaseUntil: Self.text(afterLease + 30_000))
        #expect(again.map(\.orderRef) == ["E1", "P1"])
        try await test.close()
    }

    @Test("an inquiry that tells a new fact is recorded as a notification through the one write path; the provider's callback of it is then a duplicate",
          arguments: Backend.allCases)
    func factRecorded(backend: Backend) async throws {
        let test = try await make(backend)
        try await expect(test, "O1")
        let claimed = try #require(try await claimAll(test).first)
        let fact = notification("PAID|T1", .transition(.paid), order: "O1")
        let record = try await test.store.recordInquiry(inquiry(claimed, ref: "O1", result: .facts([fact], answer: Self.answer)))
        #expect(record.outcome == .recorded && record.verdict == .applied && record.trigger == .schedule)
        let notificationID = try #require(record.notificationID)
        let detail = try #require(try await test.order("O1"))
        #expect(detail.order.state == .paid)
        #expect(detail.nextInquiryAt == nil, "a settled order is no longer scheduled")
        #expect(detail.inquiries.map(\.id) == [record.id])
        #expect(detail.inquiries.first == record)
        let stored = try #require(try await test.store.notification(id: notificationID, includeRaw: true))
        #expect(stored.source == "inquiry" && stored.inquiryID == record.id && stored.clientIP == nil)
        #expect(stored.body == Self.answer.body && stored.headers == Self.answer.headers)
        #expect(try await test.text("SELECT target FROM notifications WHERE id = \(notificationID)") == "https://provider.test/status/O1")
        // The event and the transition name the inquiry's notification.
        let events = try await test.allEvents()
        #expect(events.last?.type == .stateChanged && events.last?.to == .paid && events.last?.notificationID == notificationID)
        // The provider's late callback of the same payment: a duplicate, no second transition.
        let late = try await test.record(fact)
        #expect(late.verdict == .duplicate && late.orderState == .paid)
        #expect(try await test.order("O1")?.transitions.count == 2)
        // Listing, newest first, by order and by outcome.
        let listed = try await test.store.inquiries(InquiryFilter(orderRef: "O1"))
        #expect(listed == [record])
        #expect(try await test.store.inquiries(InquiryFilter(outcome: .noNews)).isEmpty)
        try await test.close()
    }

    @Test("no news: a fact already stored, or one saying the order has not settled that moves nothing, writes no notification; the step moves on",
          arguments: Backend.allCases)
    func noNews(backend: Backend) async throws {
        let test = try await make(backend)
        _ = try await test.record(notification("PENDING|T1", .transition(.pending), order: "O1"))
        let notifications = try await test.count("SELECT COUNT(*) FROM notifications")
        for (index, fact) in [
            notification("PENDING|T1", .transition(.pending), order: "O1"),  // the same key: already stored
            notification("INQUIRY|O1|PENDING", .transition(.pending), order: "O1"),  // not settled, moves nothing
            notification("INQUIRY|O1|NEW", .transition(.pending), order: "O1"),
        ].enumerated() {
            let claimed = try #require(try await claimAll(test).first, "step \(index)")
            let nextDue = Self.now() + 2 * Self.hour + Int64(index)
            let record = try await test.store.recordInquiry(inquiry(
                claimed, ref: "O1", result: .facts([fact], answer: Self.answer), next: .ask(atMillis: nextDue, step: index + 1)))
            #expect(record.outcome == .noNews && record.notificationID == nil && record.verdict == nil)
            let order = try #require(try await test.order("O1"))
            #expect(Self.millis(order.nextInquiryAt) == nextDue)
            #expect(try await test.count("SELECT inquiry_step FROM orders WHERE order_ref = 'O1'") == index + 1)
        }
        #expect(try await test.count("SELECT COUNT(*) FROM notifications") == notifications)
        // Outcomes without facts move the step on too, and write no notification.
        for (result, outcome) in [(InquiryResult.notFound, InquiryOutcome.notFound), (.error("HTTP 500"), .error),
                                  (.badSignature("forged"), .badSignature), (.cannotAsk("no amount"), .cannotAsk), (.notSettled, .noNews)] {
            let claimed = try #require(try await claimAll(test).first)
            let record = try await test.store.recordInquiry(inquiry(claimed, ref: "O1", result: result))
            #expect(record.outcome == outcome)
            if case .error(let message) = result { #expect(record.error == message) }
        }
        #expect(try await test.count("SELECT COUNT(*) FROM notifications") == notifications)
        #expect(try await test.count("SELECT COUNT(*) FROM inquiries") == 8)
        // A stale fact of a settled state is news worth keeping (paid, then the provider says failed).
        _ = try await test.record(notification("PAID|T1", .transition(.paid), order: "O1"))
        let late = try await test.store.recordInquiry(
            inquiry(nil, ref: "O1", result: .facts([notification("FAILED|T1", .transition(.failed), order: "O1")], answer: Self.answer),
                    trigger: .cli))
        #expect(late.outcome == .recorded && late.verdict == .stale && late.trigger == .cli)
        try await test.close()
    }

    @Test("the last step flags the order unsettled with an order.flagged event and stops asking; a later payment removes the flag",
          arguments: Backend.allCases)
    func giveUp(backend: Backend) async throws {
        let test = try await make(backend)
        try await expect(test, "O1")
        let claimed = try #require(try await claimAll(test).first)
        let record = try await test.store.recordInquiry(inquiry(claimed, ref: "O1", result: .notFound, next: .giveUp))
        #expect(record.outcome == .notFound)
        let order = try #require(try await test.order("O1"))
        #expect(order.order.flags == ["unsettled"] && order.nextInquiryAt == nil && order.order.state == .expected)
        let flagged = try #require(try await test.allEvents().last)
        #expect(flagged.type == .flagged && flagged.flag == "unsettled" && flagged.from == .expected && flagged.to == .expected)
        #expect(flagged.notificationID == nil)
        #expect(try await claimAll(test).isEmpty)
        let backlog = try await test.store.inquiryBacklog(scopes: [Self.scope], now: Self.text(Self.now()))
        #expect(backlog.unsettled == 1)
        // The provider's payment arrives after all: applied, the flag goes, nothing more is asked.
        let paid = try await test.record(notification("PAID|T1", .transition(.paid), order: "O1"))
        #expect(paid.verdict == .applied)
        let settled = try #require(try await test.order("O1"))
        #expect(settled.order.flags.isEmpty && settled.order.state == .paid && settled.nextInquiryAt == nil)
        #expect(try await test.allEvents().last?.orderJSON.contains(#""flags":[]"#) == true)
        #expect(try await test.store.inquiryBacklog(scopes: [Self.scope], now: Self.text(Self.now())).unsettled == 0)
        try await test.close()
    }

    @Test("give_up_after passed: the claimed order is flagged unsettled without an inquiry record, once, and only while the claim holds it",
          arguments: Backend.allCases)
    func giveUpWithoutAsking(backend: Backend) async throws {
        let test = try await make(backend)
        try await expect(test, "O1")
        try await expect(test, "O2")
        let claimed = try await claimAll(test)
        let one = try #require(claimed.first { $0.orderRef == "O1" })
        let two = try #require(claimed.first { $0.orderRef == "O2" })
        let claimOne = InquiryClaim(orderID: one.orderID, lease: one.lease, next: .giveUp)
        #expect(try await test.store.giveUpInquiries(claimOne, scope: Self.scope, orderRef: "O1"))
        let order = try #require(try await test.order("O1"))
        #expect(order.order.flags == ["unsettled"] && order.nextInquiryAt == nil && order.inquiries.isEmpty)
        let flagged = try #require(try await test.allEvents().last)
        #expect(flagged.type == .flagged && flagged.flag == "unsettled" && flagged.orderRef == "O1")
        let events = try await test.allEvents().count
        #expect(try await !test.store.giveUpInquiries(claimOne, scope: Self.scope, orderRef: "O1"), "given up once")
        // A change since the claim: the claim no longer holds the order, nothing is flagged.
        _ = try await test.record(notification("PENDING|O2", .transition(.pending), order: "O2"))
        let changedEvents = try await test.allEvents().count
        #expect(try await !test.store.giveUpInquiries(
            InquiryClaim(orderID: two.orderID, lease: two.lease, next: .giveUp), scope: Self.scope, orderRef: "O2"))
        #expect(try #require(try await test.order("O2")).order.flags.isEmpty)
        #expect(try await test.allEvents().count == changedEvents && changedEvents == events + 1)
        try await test.close()
    }

    @Test("an inquiry asked by hand that changes nothing moves a scheduled order to its next step", arguments: Backend.allCases)
    func manualInquiryMovesTheSchedule(backend: Backend) async throws {
        let test = try await make(backend)
        try await expect(test, "O1")
        let before = try #require(try await test.order("O1"))
        let from = try #require(Self.millis(before.nextInquiryAt)) - Self.hour
        _ = try await test.store.recordInquiry(inquiry(nil, ref: "O1", result: .notFound, trigger: .cli))
        let after = try #require(try await test.order("O1"))
        #expect(Self.millis(after.nextInquiryAt) == from + 2 * Self.hour, "the second step, 2 h after the change")
        // A settled order is not scheduled again by a manual inquiry.
        _ = try await test.record(notification("PAID|O1", .transition(.paid), order: "O1"))
        _ = try await test.store.recordInquiry(inquiry(nil, ref: "O1", result: .notFound, trigger: .api))
        #expect(try #require(try await test.order("O1")).nextInquiryAt == nil)
        try await test.close()
    }

    @Test("a change while an inquiry runs wins: the inquiry's step does not overwrite the schedule the change started",
          arguments: Backend.allCases)
    func changeDuringInquiry(backend: Backend) async throws {
        let test = try await make(backend)
        try await expect(test, "O1")
        let claimed = try #require(try await claimAll(test).first)
        let before = Self.now()
        _ = try await test.record(notification("PENDING|T1", .transition(.pending), order: "O1"))
        _ = try await test.store.recordInquiry(inquiry(claimed, ref: "O1", result: .notFound, next: .giveUp))
        let order = try #require(try await test.order("O1"))
        #expect(order.order.flags.isEmpty, "not given up: the order changed")
        let due = try #require(Self.millis(order.nextInquiryAt))
        #expect(due >= before + Self.hour && due <= Self.now() + Self.hour, "the first step after the new change")
        try await test.close()
    }

    @Test("claims given back on shutdown are due at once; the backlog counts due orders of the asked accounts", arguments: Backend.allCases)
    func releaseAndBacklog(backend: Backend) async throws {
        let test = try await make(backend)
        for ref in ["A", "B", "C"] { try await expect(test, ref) }
        let later = Self.now() + Self.later
        var backlog = try await test.store.inquiryBacklog(scopes: [Self.scope], now: Self.text(later))
        #expect(backlog.awaiting == 3 && backlog.oldestDueAt != nil)
        #expect(try await test.store.inquiryBacklog(scopes: [], now: Self.text(later)).awaiting == 0)
        #expect(try await test.store.inquiryBacklog(scopes: [Self.scope], now: Self.text(Self.now())).awaiting == 0)
        let claimed = try await claimAll(test, limit: 2)
        #expect(claimed.count == 2)
        backlog = try await test.store.inquiryBacklog(scopes: [Self.scope], now: Self.text(later))
        #expect(backlog.awaiting == 1, "leased orders are in flight, not awaiting")
        let releasedAt = Self.now()
        try await test.store.releaseInquiryClaims(
            claimed.map { InquiryClaim(orderID: $0.orderID, lease: $0.lease, next: .giveUp) }, now: Self.text(releasedAt))
        let again = try await test.store.claimDueOrders(
            scope: Self.scope, limit: 10, now: Self.text(releasedAt + 1), leaseUntil: Self.text(releasedAt + 30_000))
        #expect(Set(again.map(\.orderRef)) == Set(claimed.map(\.orderRef)))
        try await test.close()
    }
}
