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
import Testing

/// Facts built by hand for the planners' direct tests (no store): one account, one commit
/// moment, money in USD. The stored order is row 7, last changed the day before.
enum Given {
    static let scope = Scope(provider: "unlimint", account: "default")
    /// The commit's moment, and the standard schedule's first step after it (10 minutes).
    static let now = "2026-11-28T10:00:00.000Z"
    static let firstStepAfterNow = "2026-11-28T10:10:00.000Z"
    static let dayBefore = "2026-11-27T10:00:00.000Z"

    static func usd(_ minor: Int64) -> Money { Money(minor: minor, currency: "USD") }

    static func order(
        _ state: OrderState, amount: Money? = nil, refunded: Int64 = 0, expected: Money? = nil, flags: [String] = [],
        inquiry: InquiryScheduleState = InquiryScheduleState()
    ) -> StoredOrder {
        StoredOrder(
            id: 7, scope: scope, orderRef: "O-1", state: state, amount: amount, refundedMinor: refunded, expected: expected,
            flags: flags, providerTxnID: "T-1", createdAt: dayBefore, updatedAt: dayBefore, inquiry: inquiry)
    }

    /// A notification about order O-1 (or, with `ref: nil`, about the payment its link names).
    static func note(
        _ effect: NotificationEffect, kind: NotificationKind = .payment, ref: String? = "O-1", key: String = "key-new",
        amount: Money? = nil, link: PaymentLink? = nil
    ) -> VerifiedNotification {
        VerifiedNotification(
            kind: kind, orderRef: ref, providerTxnID: "T-1", dedupKey: key, providerStatus: "STATUS-\(key)", effect: effect,
            amount: amount, link: link)
    }

    /// A successful refund `id` of `minor` units of `currency`, about O-1 unless `ref` says otherwise.
    static func refund(
        _ id: String, _ minor: Int64, currency: String = "USD", ref: String? = "O-1", key: String? = nil, link: PaymentLink? = nil
    ) -> VerifiedNotification {
        let amount = Money(minor: minor, currency: currency)
        return note(.refund(RefundInfo(refundID: id, amount: amount)), kind: .refund, ref: ref, key: key ?? "refund-\(id)",
                    amount: amount, link: link)
    }

    static let request = ReceivedRequest(
        provider: scope.provider, account: scope.account, receivedAt: now, clientIP: "192.0.2.1", target: "/ipn/unlimint",
        headers: "{}", body: Array("{}".utf8))

    static func plan(
        _ notification: VerifiedNotification, _ facts: RecordingFacts = RecordingFacts(),
        planner: RecordingPlanner = RecordingPlanner(now: now)
    ) -> WritePlan {
        planner.plan(verified: request, notification, detailJSON: nil, facts: facts)
    }

    /// The plan of `notification` for `order` as stored, with its refunds remembered by id.
    static func plan(
        _ notification: VerifiedNotification, on order: StoredOrder, refunds: [StoredRefund] = [],
        planner: RecordingPlanner = RecordingPlanner(now: now)
    ) -> WritePlan {
        plan(notification, RecordingFacts(order: OrderFacts(order: order, refunds: refunds)), planner: planner)
    }
}

/// A planned transition or event, compared whole (the plan's own types have no public init).
struct PlanChange: Equatable, CustomStringConvertible {
    var type: EventType
    var from: OrderState?
    var to: OrderState
    var flag: String?
    var cause: Cause

    static func moved(_ from: OrderState?, _ to: OrderState, by cause: Cause = .planned) -> PlanChange {
        PlanChange(type: .stateChanged, from: from, to: to, flag: nil, cause: cause)
    }

    static func flagged(_ state: OrderState, _ flag: OrderFlag, by cause: Cause = .planned) -> PlanChange {
        PlanChange(type: .flagged, from: state, to: state, flag: flag.rawValue, cause: cause)
    }

    /// The plan's transitions, as `order.state_changed` changes.
    static func transitions(_ plan: WritePlan) -> [PlanChange] {
        plan.transitions.map { .moved($0.from, $0.to, by: $0.cause) }
    }

    static func events(_ plan: WritePlan) -> [PlanChange] {
        plan.events.map { PlanChange(type: $0.type, from: $0.from, to: $0.to, flag: $0.flag, cause: $0.cause) }
    }

    var description: String {
        "\(type.rawValue) \(from?.rawValue ?? "null") -> \(to.rawValue)\(flag.map { " [\($0)]" } ?? "") by \(cause)"
    }
}

/// One row of a table: a name for the test report and the case itself.
struct TableRow<Value: Sendable>: Sendable, CustomTestStringConvertible {
    var testDescription: String
    var value: Value

    init(_ name: String, _ value: Value) {
        testDescription = name
        self.value = value
    }
}

@Suite("RecordingPlanner: what a notification or an expectation writes, decided without a store (the give-up: InquiryPlanningTests)")
struct RecordingPlannerTests {
    typealias Move = (from: OrderState, effect: NotificationEffect, verdict: Verdict, to: OrderState)

    // MARK: The state machine on a stored order

    static let moves: [TableRow<Move>] = [
        TableRow("expected -> pending", (.expected, .transition(.pending), .applied, .pending)),
        TableRow("pending -> authorized", (.pending, .transition(.authorized), .applied, .authorized)),
        TableRow("authorized -> paid", (.authorized, .transition(.paid), .applied, .paid)),
        TableRow("pending -> failed", (.pending, .transition(.failed), .applied, .failed)),
        TableRow("failed -> paid", (.failed, .transition(.paid), .applied, .paid)),
        TableRow("paid -> charged_back", (.paid, .transition(.chargedBack), .applied, .chargedBack)),
        TableRow("refunded -> charged_back", (.refunded, .transition(.chargedBack), .applied, .chargedBack)),
        TableRow("paid -> pending arriving late", (.paid, .transition(.pending), .stale, .paid)),
        TableRow("paid -> failed arriving late", (.paid, .transition(.failed), .stale, .paid)),
        TableRow("paid again", (.paid, .transition(.paid), .stale, .paid)),
        TableRow("canceled -> expired, the same rank", (.canceled, .transition(.expired), .stale, .canceled)),
        TableRow("failed -> pending", (.failed, .transition(.pending), .stale, .failed)),
        TableRow("charged_back -> paid by a payment", (.chargedBack, .transition(.paid), .stale, .chargedBack)),
        TableRow("late authorization of a failed order", (.failed, .transition(.authorized), .applied, .authorized)),
        TableRow("late authorization of a canceled order", (.canceled, .transition(.authorized), .applied, .authorized)),
        TableRow("late authorization of an expired order", (.expired, .transition(.authorized), .applied, .authorized)),
        TableRow("authorization of a paid order", (.paid, .transition(.authorized), .stale, .paid)),
        TableRow("authorized again", (.authorized, .transition(.authorized), .stale, .authorized)),
        TableRow("chargeback resolved for the merchant", (.chargedBack, .chargebackReversal, .applied, .paid)),
        TableRow("chargeback resolution before its chargeback", (.paid, .chargebackReversal, .stale, .paid)),
        TableRow("chargeback resolution of a refunded order", (.refunded, .chargebackReversal, .stale, .refunded)),
    ]

    @Test("a stored order moves up in rank, by the named reversals and by a late authorization; anything else is stale", arguments: moves)
    func rankRule(_ row: TableRow<Move>) {
        let move = row.value
        let kind: NotificationKind = [.chargebackReversal, .transition(.chargedBack)].contains(move.effect) ? .chargeback : .payment
        let stored = Given.order(move.from)
        let plan = Given.plan(Given.note(move.effect, kind: kind), on: stored)

        #expect(plan.outcome.verdict == move.verdict)
        #expect(plan.outcome.orderState == move.to)
        #expect(plan.order?.order.state == move.to)
        // Dedup: every authentic notification that is not a duplicate claims its key.
        #expect(plan.dedupKey == "key-new")
        if move.verdict == .applied {
            #expect(PlanChange.transitions(plan) == [.moved(move.from, move.to)])
            #expect(PlanChange.events(plan) == [.moved(move.from, move.to)])
            #expect(plan.events.first?.providerStatus == "STATUS-key-new")
        } else {
            // Stale: recorded, and nothing else changes.
            #expect(plan.transitions.isEmpty)
            #expect(plan.events.isEmpty)
            #expect(plan.order?.order == stored)
        }
        #expect(plan.outcome.eventsWritten == plan.events.count)
    }

    @Test("a chargeback resolved for the merchant goes back to the refunds that stand, not to paid")
    func chargebackReversalKeepsRefunds() {
        for (refunded, state) in [(Int64(300), OrderState.partiallyRefunded), (1000, .refunded)] {
            let stored = Given.order(.chargedBack, amount: Given.usd(1000), refunded: refunded)
            let plan = Given.plan(Given.note(.chargebackReversal, kind: .chargeback), on: stored)
            #expect(plan.outcome.verdict == .applied)
            #expect(plan.order?.order.state == state)
            #expect(plan.order?.order.refundedMinor == refunded)
            #expect(plan.order?.order.amount == Given.usd(1000))
            #expect(PlanChange.events(plan) == [.moved(.chargedBack, state)])
        }
    }

    // MARK: Refunds

    struct RefundRow: Sendable {
        var order: StoredOrder
        var stored: [StoredRefund] = []
        var refund: VerifiedNotification
        var verdict: Verdict
        var state: OrderState
        var refundedMinor: Int64
        /// The refund ids the plan remembers.
        var remembered: [String]
    }

    /// Paid 10.00, of which refund r1 gave back 3.00.
    static let partlyRefunded = Given.order(.partiallyRefunded, amount: Given.usd(1000), refunded: 300)
    static let refundedByR1 = [StoredRefund(refundID: "r1", amountMinor: 300)]

    static let refundRows: [TableRow<RefundRow>] = [
        TableRow("a first partial refund", RefundRow(
            order: Given.order(.paid, amount: Given.usd(1000)), refund: Given.refund("r1", 300),
            verdict: .applied, state: .partiallyRefunded, refundedMinor: 300, remembered: ["r1"])),
        TableRow("a second partial refund grows the total", RefundRow(
            order: partlyRefunded, stored: refundedByR1,
            refund: Given.refund("r2", 200), verdict: .applied, state: .partiallyRefunded, refundedMinor: 500, remembered: ["r2"])),
        TableRow("the same refund redelivered under another key adds nothing", RefundRow(
            order: partlyRefunded, stored: refundedByR1,
            refund: Given.refund("r1", 300, key: "refund-r1-again"), verdict: .stale, state: .partiallyRefunded, refundedMinor: 300,
            remembered: [])),
        TableRow("refunds reaching the amount refund the order", RefundRow(
            order: partlyRefunded, stored: refundedByR1,
            refund: Given.refund("r2", 700), verdict: .applied, state: .refunded, refundedMinor: 1000, remembered: ["r2"])),
        TableRow("a stated cumulative total wins over the sum", RefundRow(
            order: partlyRefunded, stored: refundedByR1,
            refund: Given.note(.refund(RefundInfo(refundID: "r2", amount: Given.usd(200), cumulativeRefundedMinor: 600)), kind: .refund,
                               key: "refund-r2", amount: Given.usd(200)),
            verdict: .applied, state: .partiallyRefunded, refundedMinor: 600, remembered: ["r2"])),
        TableRow("a refund while charged back moves nothing but counts", RefundRow(
            order: Given.order(.chargedBack, amount: Given.usd(1000)), refund: Given.refund("r1", 300),
            verdict: .stale, state: .chargedBack, refundedMinor: 300, remembered: ["r1"])),
    ]

    @Test("refunds of a stored order: totals, the second partial refund, one counted once, one while charged back", arguments: refundRows)
    func refunds(_ row: TableRow<RefundRow>) {
        let refund = row.value
        let plan = Given.plan(refund.refund, on: refund.order, refunds: refund.stored)
        #expect(plan.outcome.verdict == refund.verdict)
        #expect(plan.order?.order.state == refund.state)
        #expect(plan.order?.order.refundedMinor == refund.refundedMinor)
        #expect(plan.refunds.map(\.refundID) == refund.remembered)
        #expect(plan.refunds.allSatisfy { $0.cause == .planned })
        let before = refund.order.state
        let expected: [PlanChange] = refund.verdict == .applied ? [.moved(before, refund.state)] : []
        #expect(PlanChange.transitions(plan) == expected)
        #expect(PlanChange.events(plan) == expected)
    }

    typealias NewRefund = (info: RefundInfo, state: OrderState, refundedMinor: Int64, amount: Money?)

    static let newRefunds: [TableRow<NewRefund>] = [
        TableRow("an amount alone", (RefundInfo(refundID: "r1", amount: Given.usd(300)), .partiallyRefunded, 300, nil)),
        TableRow("said to be full", (RefundInfo(refundID: "r1", amount: Given.usd(300), fullyRefunded: true), .refunded, 300, nil)),
        TableRow("with the order's amount, covered", (RefundInfo(refundID: "r1", amount: Given.usd(300), orderAmount: Given.usd(300)),
                                                  .refunded, 300, Given.usd(300))),
        TableRow("with a cumulative total", (RefundInfo(refundID: "r1", amount: Given.usd(300), cumulativeRefundedMinor: 500),
                                         .partiallyRefunded, 500, nil)),
    ]

    @Test("a refund for an order ipnd never saw creates it, refunded in part unless it is known to be whole", arguments: newRefunds)
    func refundCreatesOrder(_ row: TableRow<NewRefund>) {
        let plan = Given.plan(Given.note(.refund(row.value.info), kind: .refund, ref: "O-9", amount: Given.usd(300)))
        #expect(plan.outcome.verdict == .applied)
        guard case .insert(let created)? = plan.order else {
            Issue.record("the order is not created: \(String(describing: plan.order))")
            return
        }
        #expect(created.orderRef == "O-9")
        #expect(created.scope == Given.scope)
        #expect(created.state == row.value.state)
        #expect(created.refundedMinor == row.value.refundedMinor)
        #expect(created.amount == row.value.amount)
        #expect(PlanChange.transitions(plan) == [.moved(nil, row.value.state)])
        #expect(PlanChange.events(plan) == [.moved(nil, row.value.state)])
        #expect(plan.refunds.map(\.refundID) == ["r1"])
        #expect(plan.dedupKey == "key-new")
    }

    @Test("a payment after its refunds records the order's amount; one in another currency changes nothing")
    func paymentAfterRefunds() {
        // Refunds came first: the order shows the refunded total and no amount.
        let stored = OrderFacts(order: Given.order(.partiallyRefunded, refunded: 1000), refunds: [StoredRefund(refundID: "r1", amountMinor: 1000)],
                                refundCurrency: "USD")
        let covered = Given.plan(Given.note(.transition(.paid), amount: Given.usd(1000)), RecordingFacts(order: stored))
        #expect(covered.outcome.verdict == .applied)
        #expect(covered.order?.order.state == .refunded)
        #expect(covered.order?.order.amount == Given.usd(1000))
        #expect(PlanChange.events(covered) == [.moved(.partiallyRefunded, .refunded)])

        let partly = Given.plan(Given.note(.transition(.paid), amount: Given.usd(5000)), RecordingFacts(order: stored))
        #expect(partly.outcome.verdict == .stale)
        #expect(partly.order?.order.state == .partiallyRefunded)
        #expect(partly.order?.order.amount == Given.usd(5000))
        #expect(partly.events.isEmpty)

        let euros = Given.plan(Given.note(.transition(.paid), amount: Money(minor: 1000, currency: "EUR")), RecordingFacts(order: stored))
        #expect(euros.outcome.verdict == .stale)
        #expect(euros.order?.order == stored.order)
        #expect(euros.events.isEmpty)
    }

    // MARK: Expectations and flags

    typealias Flagging = (
        order: StoredOrder, note: VerifiedNotification, verdict: Verdict, state: OrderState, flags: [String], events: [PlanChange])

    static let flaggings: [TableRow<Flagging>] = [
        TableRow("a payment of another amount", (
            Given.order(.expected, expected: Given.usd(1000)), Given.note(.transition(.paid), amount: Given.usd(900)),
            .mismatch, .expected, ["amount_mismatch"], [.flagged(.expected, .amountMismatch)])),
        TableRow("a payment in another currency", (
            Given.order(.expected, expected: Given.usd(1000)), Given.note(.transition(.paid), amount: Money(minor: 1000, currency: "EUR")),
            .mismatch, .expected, ["amount_mismatch"], [.flagged(.expected, .amountMismatch)])),
        TableRow("an authorization carrying no amount", (
            Given.order(.pending, expected: Given.usd(1000)), Given.note(.transition(.authorized)),
            .mismatch, .pending, ["amount_mismatch"], [.flagged(.pending, .amountMismatch)])),
        TableRow("a late authorization of another amount", (
            Given.order(.failed, expected: Given.usd(1000)), Given.note(.transition(.authorized), amount: Given.usd(900)),
            .mismatch, .failed, ["amount_mismatch"], [.flagged(.failed, .amountMismatch)])),
        TableRow("a mismatch on an order already flagged: no second flag, no event", (
            Given.order(.expected, expected: Given.usd(1000), flags: ["amount_mismatch"]), Given.note(.transition(.paid), amount: Given.usd(900)),
            .mismatch, .expected, ["amount_mismatch"], [])),
        TableRow("the expected amount", (
            Given.order(.expected, expected: Given.usd(1000)), Given.note(.transition(.paid), amount: Given.usd(1000)),
            .applied, .paid, [], [.moved(.expected, .paid)])),
        TableRow("pending is not checked against it", (
            Given.order(.expected, expected: Given.usd(1000)), Given.note(.transition(.pending), amount: Given.usd(900)),
            .applied, .pending, [], [.moved(.expected, .pending)])),
        TableRow("a late payment of another amount is stale and still flags", (
            Given.order(.paid, amount: Given.usd(1000), expected: Given.usd(1000)), Given.note(.transition(.authorized), amount: Given.usd(900)),
            .stale, .paid, ["amount_mismatch"], [.flagged(.paid, .amountMismatch)])),
        TableRow("a refund past the order's amount is applied and flags", (
            Given.order(.paid, amount: Given.usd(1000)), Given.refund("r1", 1500),
            .applied, .refunded, ["amount_mismatch"], [.moved(.paid, .refunded), .flagged(.refunded, .amountMismatch)])),
        TableRow("a refund in another currency flags and moves nothing", (
            Given.order(.paid, amount: Given.usd(1000)), Given.refund("r1", 300, currency: "EUR"),
            .mismatch, .paid, ["amount_mismatch"], [.flagged(.paid, .amountMismatch)])),
    ]

    @Test("amount and currency are checked against the expectation; a mismatch flags and does not move the order", arguments: flaggings)
    func expectationAndFlags(_ row: TableRow<Flagging>) {
        let flagging = row.value
        let plan = Given.plan(flagging.note, on: flagging.order)
        #expect(plan.outcome.verdict == flagging.verdict)
        #expect(plan.order?.order.state == flagging.state)
        #expect(plan.order?.order.flags == flagging.flags)
        #expect(PlanChange.events(plan) == flagging.events)
        #expect(PlanChange.transitions(plan) == PlanChange.events(plan).filter { $0.type == .stateChanged })
        if flagging.verdict == .mismatch {
            #expect(plan.order?.order.amount == flagging.order.amount)
            #expect(plan.outcome.flag == .amountMismatch)
        }
        #expect(plan.dedupKey == flagging.note.dedupKey)
    }

    @Test("settling removes reconciliation's unsettled flag; a move that does not settle keeps it", arguments: [
        (OrderState.paid, [String]()), (.failed, []), (.authorized, ["unsettled"]),
    ])
    func settlingRemovesUnsettled(target: OrderState, flags: [String]) {
        let plan = Given.plan(Given.note(.transition(target)), on: Given.order(.pending, flags: ["unsettled"]))
        #expect(plan.outcome.verdict == .applied)
        #expect(plan.order?.order.flags == flags)
    }

    // MARK: Orders created by notifications with no state effect

    @Test("an unknown status or a payout creates the order pending with no transition; the first move is then from null")
    func noStateEffectCreatesPending() {
        for (effect, verdict) in [(NotificationEffect.unknownStatus, Verdict.unknownStatus), (.record, .recorded)] {
            let plan = Given.plan(Given.note(effect, kind: effect == .record ? .payout : .payment, ref: "O-2"))
            #expect(plan.outcome.verdict == verdict)
            guard case .insert(let created)? = plan.order else {
                Issue.record("\(effect): the order is not created")
                continue
            }
            #expect(created.state == .pending)
            #expect(plan.transitions.isEmpty)
            #expect(plan.events.isEmpty)
            #expect(plan.finalOrder?.hasTransitions == false)
            // A new order is a change: its schedule starts from now.
            #expect(created.inquiry == InquiryScheduleState(from: Given.now, step: 0, dueAt: Given.firstStepAfterNow))
        }
        var untouched = OrderFacts(order: Given.order(.pending), hasTransitions: false)
        for target in [OrderState.pending, .authorized] {
            let plan = Given.plan(Given.note(.transition(target)), RecordingFacts(order: untouched))
            #expect(plan.outcome.verdict == .applied, "\(target)")
            #expect(PlanChange.events(plan) == [.moved(nil, target)])
        }
        // Once moved, pending again is stale.
        untouched.hasTransitions = true
        #expect(Given.plan(Given.note(.transition(.pending)), RecordingFacts(order: untouched)).outcome.verdict == .stale)
    }

    @Test("a notification for an unknown order creates it in its target state, from null")
    func createsOrder() {
        let plan = Given.plan(Given.note(.transition(.paid), ref: "O-3", amount: Given.usd(1000)))
        #expect(plan.outcome.verdict == .applied)
        #expect(plan.outcome.orderRef == "O-3")
        guard case .insert(let created)? = plan.order else {
            Issue.record("the order is not created")
            return
        }
        #expect(created.state == .paid)
        #expect(created.amount == Given.usd(1000))
        #expect(created.providerTxnID == "T-1")
        #expect(PlanChange.events(plan) == [.moved(nil, .paid)])
        // Paid is settled: never asked about.
        #expect(created.inquiry == InquiryScheduleState())
    }

    // MARK: Dedup

    static let firstDeliveries: [TableRow<FirstDelivery>] = [
        TableRow("of a notification linked to an order",
                 FirstDelivery(notificationID: 5, orderRef: "O-1", orderID: 12, currentOrderRef: "O-1", orderState: .paid)),
        TableRow("of a capture that waited, now linked",
                 FirstDelivery(notificationID: 5, orderRef: nil, orderID: 12, currentOrderRef: "O-1", orderState: .paid)),
        TableRow("of a capture still waiting",
                 FirstDelivery(notificationID: 5, orderRef: nil, orderID: nil, currentOrderRef: nil, orderState: nil)),
    ]

    @Test("a duplicate writes nothing but its row, names its first delivery's order, and claims no key", arguments: firstDeliveries)
    func duplicate(_ row: TableRow<FirstDelivery>) {
        let first = row.value
        let capture = Given.note(.transition(.paid), kind: .capture, ref: nil, amount: Given.usd(1000), link: .requires("PAY-1"))
        let plan = Given.plan(capture, RecordingFacts(firstDelivery: first, order: OrderFacts(order: Given.order(.authorized))))
        #expect(plan.outcome.verdict == .duplicate)
        #expect(plan.outcome.orderRef == first.currentOrderRef)
        #expect(plan.outcome.orderState == first.orderState)
        #expect(plan.notification?.order == first.orderID.map(NotificationOrder.stored) ?? NotificationOrder.none)
        #expect(plan.notification?.reasonDetail == "same dedup key as notification 5")
        #expect(plan.dedupKey == nil)
        #expect(plan.order == nil)
        #expect(plan.transitions.isEmpty)
        #expect(plan.events.isEmpty)
        #expect(plan.refunds.isEmpty)
    }

    @Test("a rejected request is kept with its reason and writes nothing else")
    func rejected() {
        let plan = RecordingPlanner(now: Given.now).plan(rejected: Given.request, Rejection(.badSignature, "no signature matched"))
        #expect(plan.outcome.verdict == .rejected)
        #expect(plan.outcome.explanation == "bad_signature: no signature matched")
        #expect(plan.dedupKey == nil)
        #expect(plan.order == nil)
        #expect(plan.events.isEmpty)
    }

    // MARK: Payment links and waiting notifications

    @Test("a capture or refund naming only an unknown payment waits, unlinked, with its key claimed", arguments: [
        Given.note(.transition(.paid), kind: .capture, ref: nil, key: "cap-1", amount: Given.usd(1000), link: .requires("PAY-9")),
        Given.refund("r1", 300, ref: nil, key: "ref-1", link: .requires("PAY-9")),
    ])
    func unlinkedWaits(_ notification: VerifiedNotification) {
        let plan = Given.plan(notification)
        #expect(plan.outcome.verdict == .unlinked)
        #expect(plan.outcome.explanation == "waiting for payment PAY-9")
        #expect(plan.dedupKey == notification.dedupKey)
        #expect(plan.order == nil)
        #expect(plan.transitions.isEmpty)
        #expect(plan.events.isEmpty)
        #expect(plan.refunds.isEmpty)
        #expect(plan.linkToRegister == nil)
    }

    @Test("a capture naming only its payment applies to the order the payment's link found")
    func linkedCapture() {
        let capture = Given.note(.transition(.paid), kind: .capture, ref: nil, amount: Given.usd(1000), link: .requires("PAY-1"))
        let plan = Given.plan(capture, RecordingFacts(order: OrderFacts(order: Given.order(.authorized, amount: Given.usd(1000)))))
        #expect(plan.outcome.verdict == .applied)
        #expect(plan.outcome.orderRef == "O-1")
        #expect(PlanChange.events(plan) == [.moved(.authorized, .paid)])
    }

    /// A notification stored `unlinked`, as the store keeps it.
    private func waiting(_ id: Int64, _ notification: VerifiedNotification) throws -> WaitingNotification {
        WaitingNotification(id: id, pendingEffect: String(decoding: try JSONEncoder().encode(notification), as: UTF8.self))
    }

    private var payment: VerifiedNotification {
        Given.note(.transition(.authorized), key: "pay-1", amount: Given.usd(1000), link: .registers("PAY-1"))
    }

    @Test("a payment registers its link and applies what waited for it, in arrival order, each event caused by its own notification")
    func waitingApplied() throws {
        let capture = Given.note(.transition(.paid), kind: .capture, ref: nil, key: "cap-1", amount: Given.usd(1000), link: .requires("PAY-1"))
        let refund = Given.refund("r1", 300, ref: nil, key: "ref-1", link: .requires("PAY-1"))
        let plan = Given.plan(payment, RecordingFacts(waiting: [try waiting(11, capture), try waiting(12, refund)]))

        #expect(plan.outcome.verdict == .applied)
        #expect(plan.linkToRegister == "PAY-1")
        let moves: [PlanChange] = [
            .moved(nil, .authorized), .moved(.authorized, .paid, by: .stored(11)), .moved(.paid, .partiallyRefunded, by: .stored(12)),
        ]
        #expect(PlanChange.transitions(plan) == moves)
        #expect(PlanChange.events(plan) == moves)
        // Each event carries the order as it stood right after it.
        #expect(try plan.events.map { try orderState(in: $0.orderJSON) } == ["authorized", "paid", "partially_refunded"])
        #expect(plan.waitingUpdates.map(\.applied) == [WaitingApplied(id: 11, verdict: .applied), WaitingApplied(id: 12, verdict: .applied)])
        #expect(plan.outcome.linked.map { WaitingApplied(id: $0.notificationID, verdict: $0.verdict) } == plan.waitingUpdates.compactMap(\.applied))
        #expect(plan.outcome.linked.map(\.orderState) == [.paid, .partiallyRefunded])
        #expect(plan.refunds.map(\.refundID) == ["r1"])
        #expect(plan.refunds.map(\.cause) == [.stored(12)])
        #expect(plan.outcome.orderState == .partiallyRefunded)
        guard case .insert(let created)? = plan.order else {
            Issue.record("the order is not created")
            return
        }
        #expect(created.state == .partiallyRefunded)
        #expect(created.amount == Given.usd(1000))
        #expect(created.refundedMinor == 300)
    }

    @Test("what waited is applied in the order it arrived: a refund before its capture leaves the capture stale")
    func waitingOrder() throws {
        let capture = Given.note(.transition(.paid), kind: .capture, ref: nil, key: "cap-1", amount: Given.usd(1000), link: .requires("PAY-1"))
        let refund = Given.refund("r1", 300, ref: nil, key: "ref-1", link: .requires("PAY-1"))
        let plan = Given.plan(payment, RecordingFacts(waiting: [try waiting(12, refund), try waiting(11, capture)]))
        #expect(plan.waitingUpdates.map(\.applied) == [WaitingApplied(id: 12, verdict: .applied), WaitingApplied(id: 11, verdict: .stale)])
        #expect(PlanChange.transitions(plan) == [.moved(nil, .authorized), .moved(.authorized, .partiallyRefunded, by: .stored(12))])
    }

    @Test("a waiting notification that cannot be read stays unlinked and does not stop the payment or the others")
    func waitingUnreadable() throws {
        let capture = Given.note(.transition(.paid), kind: .capture, ref: nil, key: "cap-1", amount: Given.usd(1000), link: .requires("PAY-1"))
        let rows = [WaitingNotification(id: 11, pendingEffect: nil), WaitingNotification(id: 12, pendingEffect: "{\"kind\":"),
                    try waiting(13, capture)]
        let plan = Given.plan(payment, RecordingFacts(waiting: rows))
        #expect(plan.outcome.verdict == .applied)
        #expect(plan.waitingUpdates.map(\.unreadableID) == [11, 12, nil])
        #expect(plan.waitingUpdates.last?.applied == WaitingApplied(id: 13, verdict: .applied))
        #expect(plan.order?.order.state == .paid)
    }

    @Test("a payment whose link is registered already registers nothing and applies nothing more")
    func linkAlreadyRegistered() throws {
        let capture = Given.note(.transition(.paid), kind: .capture, ref: nil, key: "cap-1", amount: Given.usd(1000), link: .requires("PAY-1"))
        let facts = RecordingFacts(order: OrderFacts(order: Given.order(.pending)), linkRegistered: true, waiting: [try waiting(11, capture)])
        let plan = Given.plan(payment, facts)
        #expect(plan.outcome.verdict == .applied)
        #expect(plan.linkToRegister == nil)
        #expect(plan.waitingUpdates.isEmpty)
        #expect(PlanChange.transitions(plan) == [.moved(.pending, .authorized)])
    }

    // MARK: Deliveries

    @Test("each event gets one delivery per route that takes its type, provider and account")
    func deliveriesPerRoute() {
        let routes = [
            DeliveryRoute(name: "everything"),
            DeliveryRoute(name: "changes", types: [.stateChanged]),
            DeliveryRoute(name: "flags", types: [.flagged]),
            DeliveryRoute(name: "juspay", providers: ["juspay"]),
            DeliveryRoute(name: "this-account", providers: ["unlimint"], accounts: ["default"]),
            DeliveryRoute(name: "other-account", accounts: ["eu"]),
        ]
        let planner = RecordingPlanner(now: Given.now, routes: routes)
        let plan = Given.plan(Given.refund("r1", 1500), on: Given.order(.paid, amount: Given.usd(1000)), planner: planner)
        #expect(plan.events.map(\.type) == [.stateChanged, .flagged])
        #expect(plan.events.map(\.routes) == [["everything", "changes", "this-account"], ["everything", "flags", "this-account"]])
        #expect(plan.deliveryCount == 6)

        let stale = Given.plan(Given.note(.transition(.pending)), on: Given.order(.paid), planner: planner)
        #expect(stale.deliveryCount == 0)
    }

    // MARK: The inquiry schedule

    @Test("a transition restarts the order's inquiry schedule from now; a stale notification or a flag leaves it")
    func scheduleRestartedByChange() {
        let quick = InquirySchedule(stepsMillis: [5 * 60_000, 3_600_000], giveUpAfterMillis: 2 * 86_400_000)
        let planner = RecordingPlanner(now: Given.now, schedule: quick)
        let asked = InquiryScheduleState(from: Given.dayBefore, step: 3, dueAt: "2026-11-28T13:00:00.000Z")

        let moved = Given.plan(Given.note(.transition(.authorized)), on: Given.order(.pending, inquiry: asked), planner: planner)
        #expect(moved.order?.order.inquiry == InquiryScheduleState(from: Given.now, step: 0, dueAt: "2026-11-28T10:05:00.000Z"))

        let stale = Given.plan(Given.note(.transition(.pending)), on: Given.order(.authorized, inquiry: asked), planner: planner)
        #expect(stale.order?.order.inquiry == asked)

        let flagged = Given.plan(Given.note(.transition(.paid), amount: Given.usd(1)),
                                 on: Given.order(.pending, expected: Given.usd(1000), inquiry: asked), planner: planner)
        #expect(flagged.outcome.verdict == .mismatch)
        #expect(flagged.order?.order.inquiry == asked)

        // A settled order is no longer asked about.
        let settled = Given.plan(Given.note(.transition(.paid)), on: Given.order(.pending, inquiry: asked), planner: planner)
        #expect(settled.order?.order.inquiry == InquiryScheduleState())
    }

    // MARK: Expectations

    @Test("an expectation for an unknown order creates it expected, from null, and schedules it")
    func expectationCreates() {
        let (plan, outcome) = RecordingPlanner(now: Given.now).plan(expectation: Given.usd(1000), scope: Given.scope, orderRef: "O-5", order: nil)
        #expect(outcome == ExpectationOutcome(state: .expected, mismatch: nil))
        guard case .insert(let created)? = plan.order else {
            Issue.record("the order is not created")
            return
        }
        #expect(created.orderRef == "O-5")
        #expect(created.state == .expected)
        #expect(created.expected == Given.usd(1000))
        #expect(created.amount == nil)
        #expect(PlanChange.transitions(plan) == [.moved(nil, .expected, by: .none)])
        #expect(PlanChange.events(plan) == [.moved(nil, .expected, by: .none)])
        #expect(created.inquiry == InquiryScheduleState(from: Given.now, step: 0, dueAt: Given.firstStepAfterNow))
        #expect(plan.dedupKey == nil)
    }

    typealias Expecting = (order: StoredOrder, mismatch: Bool, flags: [String], events: [PlanChange])

    static let expectings: [TableRow<Expecting>] = [
        TableRow("pending", (Given.order(.pending), false, [], [])),
        TableRow("paid with that amount", (Given.order(.paid, amount: Given.usd(1000)), false, [], [])),
        TableRow("paid with another amount", (Given.order(.paid, amount: Given.usd(900)), true, ["amount_mismatch"],
                                              [.flagged(.paid, .amountMismatch, by: .none)])),
        TableRow("authorized in another currency", (Given.order(.authorized, amount: Money(minor: 1000, currency: "EUR")), true, ["amount_mismatch"],
                                                [.flagged(.authorized, .amountMismatch, by: .none)])),
        TableRow("paid with no amount stated", (Given.order(.paid), true, ["amount_mismatch"], [.flagged(.paid, .amountMismatch, by: .none)])),
        TableRow("refunded with no amount stated", (Given.order(.refunded, refunded: 300), false, [], [])),
        TableRow("paid otherwise and flagged already", (Given.order(.paid, amount: Given.usd(900), flags: ["amount_mismatch"]), true,
                                                    ["amount_mismatch"], [])),
    ]

    @Test("an expectation for a known order is recorded, restarts its schedule, and flags an order paid otherwise", arguments: expectings)
    func expectationOnKnownOrder(_ row: TableRow<Expecting>) {
        let stored = row.value.order
        let asked = InquiryScheduleState(from: Given.dayBefore, step: 2, dueAt: "2026-11-27T11:00:00.000Z")
        var scheduled = stored
        scheduled.inquiry = asked
        let (plan, outcome) = RecordingPlanner(now: Given.now).plan(
            expectation: Given.usd(1000), scope: Given.scope, orderRef: "O-1", order: scheduled)
        #expect(outcome.state == stored.state)
        #expect((outcome.mismatch != nil) == row.value.mismatch)
        #expect(plan.order?.order.state == stored.state)
        #expect(plan.order?.order.expected == Given.usd(1000))
        #expect(plan.order?.order.flags == row.value.flags)
        #expect(plan.transitions.isEmpty)
        #expect(PlanChange.events(plan) == row.value.events)
        // Registering an expectation is a change: an order not settled is asked again from now.
        let inquiry = stored.state.isSettled
            ? InquiryScheduleState() : InquiryScheduleState(from: Given.now, step: 0, dueAt: Given.firstStepAfterNow)
        #expect(plan.order?.order.inquiry == inquiry)
    }
}

/// A waiting notification's update, reduced to what it became.
struct WaitingApplied: Equatable {
    var id: Int64
    var verdict: Verdict
}

extension WaitingUpdate {
    var applied: WaitingApplied? {
        if case .applied(let id, let verdict, _, _) = self { return WaitingApplied(id: id, verdict: verdict) }
        return nil
    }

    var unreadableID: Int64? {
        if case .unreadable(let id, _) = self { return id }
        return nil
    }
}

/// The `state` of the orders-list object an event carries.
private func orderState(in json: String) throws -> String? {
    let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
    return object?["state"] as? String
}
