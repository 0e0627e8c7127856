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
import Testing

@Suite("Order state machine (product.md section 5)")
struct OrderStateMachineTests {
    private func note(_ effect: NotificationEffect, kind: NotificationKind = .payment, amount: Money? = nil, key: String = "k") -> VerifiedNotification {
        VerifiedNotification(kind: kind, orderRef: "O1", providerTxnID: "T1", dedupKey: key, providerStatus: "S",
                             effect: effect, amount: amount)
    }

    private func order(_ state: OrderState, amount: Money? = nil, refunded: Int64 = 0, expected: Money? = nil) -> OrderSnapshot {
        OrderSnapshot(state: state, amount: amount, refundedMinor: refunded, expected: expected)
    }

    @Test("ranks are as specified")
    func ranks() {
        let expected: [OrderState: Int] = [
            .expected: 0, .pending: 10, .authorized: 20, .failed: 30, .canceled: 30, .expired: 30, .paid: 40,
            .partiallyRefunded: 50, .refunded: 60, .chargedBack: 70,
        ]
        for state in OrderState.allCases { #expect(state.rank == expected[state], "\(state)") }
    }

    @Test("a notification for an unknown order creates it in the target state")
    func createsOrder() {
        for target in OrderState.allCases where target != .expected {
            let decision = OrderStateMachine.decide(order: nil, notification: note(.transition(target)))
            #expect(decision.verdict == .applied)
            #expect(decision.newState == target)
        }
    }

    @Test("transitions climb; equal or lower rank is stale", arguments: [
        (OrderState.pending, OrderState.authorized, Verdict.applied),
        (.pending, .paid, .applied),
        (.authorized, .paid, .applied),
        (.paid, .pending, .stale),
        (.paid, .failed, .stale),
        (.paid, .authorized, .stale),
        (.paid, .paid, .stale),
        (.failed, .canceled, .stale),
        (.canceled, .expired, .stale),
        (.failed, .paid, .applied),
        (.failed, .pending, .stale),
        (.expected, .pending, .applied),
        (.refunded, .paid, .stale),
        (.chargedBack, .refunded, .stale),
        (.paid, .chargedBack, .applied),
        (.refunded, .chargedBack, .applied),
        // late authorization: the named reversal out of failed, canceled and expired
        (.failed, .authorized, .applied),
        (.canceled, .authorized, .applied),
        (.expired, .authorized, .applied),
    ])
    func transitions(current: OrderState, target: OrderState, verdict: Verdict) {
        let decision = OrderStateMachine.decide(order: order(current), notification: note(.transition(target)))
        #expect(decision.verdict == verdict)
        #expect(decision.newState == (verdict == .applied ? target : nil))
    }

    @Test("a chargeback resolved for the merchant reverses charged_back to paid, and nothing else goes back")
    func chargebackReversal() {
        let reversal = OrderStateMachine.decide(order: order(.chargedBack), notification: note(.chargebackReversal, kind: .chargeback))
        #expect(reversal.verdict == .applied)
        #expect(reversal.newState == .paid)
        #expect(OrderStateMachine.decide(order: order(.refunded), notification: note(.chargebackReversal)).verdict == .stale)
        #expect(OrderStateMachine.decide(order: order(.paid), notification: note(.chargebackReversal)).verdict == .stale)
        #expect(OrderStateMachine.decide(order: order(.pending), notification: note(.chargebackReversal)).newState == .paid)
        // A plain paid status never undoes a chargeback.
        #expect(OrderStateMachine.decide(order: order(.chargedBack), notification: note(.transition(.paid))).verdict == .stale)
    }

    @Test("a chargeback's reversal must carry the expected amount, as any move to paid; without an amount it reinstates")
    func reversalAgainstTheExpectation() {
        let usd = Money(minor: 1000, currency: "USD")
        let chargedBack = order(.chargedBack, amount: usd, expected: usd)
        let partial = OrderStateMachine.decide(
            order: chargedBack, notification: note(.chargebackReversal, kind: .payment, amount: Money(minor: 500, currency: "USD")))
        #expect(partial.verdict == .mismatch)
        #expect(partial.flag == .amountMismatch)
        #expect(partial.newState == nil)
        let same = OrderStateMachine.decide(order: chargedBack, notification: note(.chargebackReversal, kind: .payment, amount: usd))
        #expect(same.verdict == .applied)
        #expect(same.newState == .paid)
        let noAmount = OrderStateMachine.decide(order: chargedBack, notification: note(.chargebackReversal, kind: .chargeback))
        #expect(noAmount.verdict == .applied)
    }

    @Test("a known order amount is kept by chargebacks, reversals and other non-paying statuses; paying may change it")
    func amountKeptByNonPayingTransitions() {
        let usd = Money(minor: 1000, currency: "USD")
        let eur = Money(minor: 500, currency: "EUR")
        let chargeback = OrderStateMachine.decide(order: order(.paid, amount: usd), notification: note(.transition(.chargedBack), amount: eur))
        #expect(chargeback.newState == .chargedBack)
        #expect(chargeback.orderAmount == nil)
        let reversal = OrderStateMachine.decide(order: order(.chargedBack, amount: usd), notification: note(.chargebackReversal, amount: eur))
        #expect(reversal.newState == .paid)
        #expect(reversal.orderAmount == nil)
        let refunded = OrderStateMachine.decide(order: order(.paid, amount: usd), notification: note(.transition(.refunded), amount: eur))
        #expect(refunded.orderAmount == nil)
        // Unknown so far: any of them fills it in.
        #expect(OrderStateMachine.decide(order: order(.pending), notification: note(.transition(.chargedBack), amount: eur)).orderAmount == eur)
        // A capture after an authorization records what was paid.
        let captured = Money(minor: 900, currency: "USD")
        #expect(OrderStateMachine.decide(order: order(.authorized, amount: usd), notification: note(.transition(.paid), amount: captured)).orderAmount == captured)
    }

    @Test("partial refunds: a new refund id grows the total; the same refund again adds nothing")
    func partialRefunds() {
        let paid = order(.paid, amount: Money(minor: 1000, currency: "USD"))
        let first = OrderStateMachine.decide(order: paid, notification: note(
            .refund(RefundInfo(refundID: "R1", amount: Money(minor: 300, currency: "USD"))), kind: .refund))
        #expect(first.verdict == .applied)
        #expect(first.newState == .partiallyRefunded)
        #expect(first.refundedMinor == 300)

        let afterFirst = order(.partiallyRefunded, amount: Money(minor: 1000, currency: "USD"), refunded: 300)
        let second = OrderStateMachine.decide(order: afterFirst, notification: note(
            .refund(RefundInfo(refundID: "R2", amount: Money(minor: 200, currency: "USD"))), kind: .refund))
        #expect(second.verdict == .applied)
        #expect(second.newState == .partiallyRefunded)
        #expect(second.refundedMinor == 500)

        let again = OrderStateMachine.decide(order: afterFirst, notification: note(
            .refund(RefundInfo(refundID: "R1", amount: Money(minor: 300, currency: "USD"))), kind: .refund),
            refundAlreadyCounted: true)
        #expect(again.verdict == .stale)

        let rest = OrderStateMachine.decide(order: order(.partiallyRefunded, amount: Money(minor: 1000, currency: "USD"), refunded: 500),
            notification: note(.refund(RefundInfo(refundID: "R3", amount: Money(minor: 500, currency: "USD"))), kind: .refund))
        #expect(rest.newState == .refunded)
        #expect(rest.refundedMinor == 1000)
    }

    @Test("a stated cumulative total is the refunded total, whatever the refunds' own amounts add up to")
    func statedCumulativeWins() {
        let paid = order(.partiallyRefunded, amount: Self.usd(1000), refunded: 300)
        func refund(_ id: String, _ minor: Int64, cumulative: Int64) -> VerifiedNotification {
            note(.refund(RefundInfo(refundID: id, amount: Self.usd(minor), cumulativeRefundedMinor: cumulative)), kind: .refund)
        }
        // providers.md (Citcon): amount_refunded is the cumulative total when present.
        let stated = OrderStateMachine.decide(order: paid, notification: refund("R2", 200, cumulative: 400), refundsRecordedMinor: 300)
        #expect(stated.verdict == .applied)
        #expect(stated.refundedMinor == 400)
        let large = OrderStateMachine.decide(order: paid, notification: refund("R2", 700, cumulative: 300), refundsRecordedMinor: 300)
        #expect(large.verdict == .stale)  // the total stays 300, partially refunded
        #expect(large.newState == nil)
    }

    @Test("cumulative refund totals: an older, smaller total arriving late is stale")
    func cumulativeRefunds() {
        let paid = order(.paid, amount: Money(minor: 1000, currency: "INR"))
        let later = OrderStateMachine.decide(order: paid, notification: note(.refund(RefundInfo(cumulativeRefundedMinor: 600)), kind: .refund))
        #expect(later.newState == .partiallyRefunded)
        #expect(later.refundedMinor == 600)
        let earlier = OrderStateMachine.decide(
            order: order(.partiallyRefunded, amount: Money(minor: 1000, currency: "INR"), refunded: 600),
            notification: note(.refund(RefundInfo(cumulativeRefundedMinor: 400)), kind: .refund))
        #expect(earlier.verdict == .stale)
        let full = OrderStateMachine.decide(order: paid, notification: note(.refund(RefundInfo(cumulativeRefundedMinor: 1000)), kind: .refund))
        #expect(full.newState == .refunded)
        let said = OrderStateMachine.decide(order: paid, notification: note(.refund(RefundInfo(fullyRefunded: true)), kind: .refund))
        #expect(said.newState == .refunded)
    }

    @Test("a refund for an order never seen is applied; without the order amount it is partial")
    func refundForUnknownOrder() {
        let unknown = OrderStateMachine.decide(order: nil, notification: note(
            .refund(RefundInfo(refundID: "R1", amount: Money(minor: 300, currency: "USD"))), kind: .refund))
        #expect(unknown.verdict == .applied)
        #expect(unknown.newState == .partiallyRefunded)
        let withAmount = OrderStateMachine.decide(order: nil, notification: note(
            .refund(RefundInfo(cumulativeRefundedMinor: 600, orderAmount: Money(minor: 600, currency: "INR"))), kind: .refund))
        #expect(withAmount.newState == .refunded)
        #expect(withAmount.orderAmount == Money(minor: 600, currency: "INR"))
    }

    @Test("expectations: another amount or currency is a mismatch that flags and does not transition")
    func mismatch() {
        let expected = Money(minor: 1234, currency: "USD")
        let base = order(.expected, expected: expected)
        let wrong = OrderStateMachine.decide(order: base, notification: note(.transition(.paid), amount: Money(minor: 1200, currency: "USD")))
        #expect(wrong.verdict == .mismatch)
        #expect(wrong.flag == .amountMismatch)
        #expect(wrong.newState == nil)
        let otherCurrency = OrderStateMachine.decide(order: base, notification: note(.transition(.authorized), amount: Money(minor: 1234, currency: "SGD")))
        #expect(otherCurrency.verdict == .mismatch)
        let noAmount = OrderStateMachine.decide(order: base, notification: note(.transition(.paid)))
        #expect(noAmount.verdict == .mismatch)
        let right = OrderStateMachine.decide(order: base, notification: note(.transition(.paid), amount: expected))
        #expect(right.verdict == .applied)
        #expect(right.newState == .paid)
        // Only authorizing or paying is checked.
        let pending = OrderStateMachine.decide(order: base, notification: note(.transition(.pending), amount: Money(minor: 1, currency: "USD")))
        #expect(pending.verdict == .applied)
        // A stale notification stays stale, whatever its amount; one that would have paid the
        // order with another amount than the expected one still flags it.
        let late = OrderStateMachine.decide(order: order(.refunded, expected: expected),
                                            notification: note(.transition(.paid), amount: Money(minor: 1, currency: "USD")))
        #expect(late.verdict == .stale)
        #expect(late.flag == .amountMismatch)
        #expect(late.orderAmount == nil)
        #expect(late.newState == nil)
    }

    @Test("an authorization or payment too late to move the order still flags it when its amount is not the expected one")
    func lateMismatchFlags() {
        let expected = Self.usd(1000)
        let paidOrder = order(.paid, amount: expected, expected: expected)
        let lateAuthorization = OrderStateMachine.decide(order: paidOrder, notification: note(.transition(.authorized), amount: Self.usd(999)))
        #expect(lateAuthorization.verdict == .stale)
        #expect(lateAuthorization.flag == .amountMismatch)
        #expect(lateAuthorization.orderAmount == nil)
        // The expected amount, or a late pending (nothing the expectation is about), flags nothing.
        #expect(OrderStateMachine.decide(order: paidOrder, notification: note(.transition(.authorized), amount: expected)).flag == nil)
        #expect(OrderStateMachine.decide(order: paidOrder, notification: note(.transition(.pending), amount: Self.usd(999))).flag == nil)
        // Whichever arrives first, an underpayment and a refund flag the order.
        let underpaid = note(.transition(.paid), amount: Self.usd(999), key: "paid")
        let refund = note(.refund(RefundInfo(refundID: "R1", amount: Self.usd(300))), kind: .refund, key: "refund")
        for permutation in permutations(of: [underpaid, refund]) {
            var snapshot: OrderSnapshot? = order(.expected, expected: expected)
            var flagged = false
            for notification in permutation {
                let decision = OrderStateMachine.decide(order: snapshot, notification: notification)
                flagged = flagged || decision.flag == .amountMismatch
                snapshot = Self.applying(decision, to: snapshot)
            }
            #expect(flagged, "\(permutation.map(\.dedupKey))")
            #expect(snapshot?.amount == nil, "\(permutation.map(\.dedupKey))")
        }
    }

    @Test("a refund and a chargeback resolved for the merchant, in any order, end with the refund standing",
          arguments: [false, true])
    func refundsAcrossAChargeback(cumulative: Bool) {
        func refund(_ id: String, _ minor: Int64, total: Int64) -> VerifiedNotification {
            let info = cumulative
                ? RefundInfo(refundID: id, amount: Self.usd(minor), cumulativeRefundedMinor: total)
                : RefundInfo(refundID: id, amount: Self.usd(minor))
            return note(.refund(info), kind: .refund, amount: Self.usd(minor), key: id)
        }
        let paid = note(.transition(.paid), amount: Self.usd(1000), key: "paid")
        let lost = note(.transition(.chargedBack), kind: .chargeback, key: "lost")
        let won = note(.chargebackReversal, kind: .chargeback, key: "won")
        let cases: [(notifications: [VerifiedNotification], state: OrderState, refunded: Int64)] = [
            ([paid, refund("R1", 300, total: 300), lost], .chargedBack, 300),
            ([paid, refund("R1", 300, total: 300), lost, won], .partiallyRefunded, 300),
            ([paid, refund("R1", 300, total: 300), refund("R2", 700, total: 1000), lost, won], .refunded, 1000),
        ]
        for (notifications, state, refunded) in cases {
            // The chargeback's resolution after the chargeback itself: a resolution arriving
            // first is stale by the rank rule, which product.md section 5 leaves as it is.
            let orders = permutations(of: notifications).filter { order in
                (order.firstIndex { $0.dedupKey == "lost" } ?? 0) < (order.firstIndex { $0.dedupKey == "won" } ?? .max)
            }
            for permutation in orders {
                var snapshot: OrderSnapshot?
                var refunds: [String: Int64] = [:]
                for notification in permutation {
                    var counted = false
                    if case .refund(let info) = notification.effect, let id = info.refundID { counted = refunds[id] != nil }
                    let decision = OrderStateMachine.decide(
                        order: snapshot, notification: notification, refundAlreadyCounted: counted,
                        refundsRecordedMinor: refunds.values.reduce(0, +))
                    snapshot = Self.applying(decision, to: snapshot)
                    if case .refund(let info) = notification.effect, let id = info.refundID, let amount = info.amount {
                        refunds[id] = amount.minor
                    }
                }
                let order = permutation.map(\.dedupKey)
                #expect(snapshot?.state == state, "\(order)")
                #expect(snapshot?.refundedMinor == refunded, "\(order)")
                #expect(snapshot?.amount == Self.usd(1000), "\(order)")
            }
        }
    }

    @Test("unknown statuses and record-only notifications never transition")
    func noEffect() {
        #expect(OrderStateMachine.decide(order: order(.paid), notification: note(.unknownStatus)).verdict == .unknownStatus)
        #expect(OrderStateMachine.decide(order: nil, notification: note(.unknownStatus)).newState == nil)
        #expect(OrderStateMachine.decide(order: order(.paid), notification: note(.record, kind: .payout)).verdict == .recorded)
        #expect(OrderStateMachine.decide(order: nil, notification: note(.record)).newState == nil)
    }

    @Test("an order that only no-effect notifications named is moved by the first one that has an effect, pending included")
    func firstEffectOnAnUnmovedOrder() {
        var unmoved = order(.pending)
        unmoved.hasTransitions = false
        let pending = OrderStateMachine.decide(order: unmoved, notification: note(.transition(.pending)))
        #expect(pending.verdict == .applied)
        #expect(pending.newState == .pending)
        // The expectation still holds for it.
        unmoved.expected = Money(minor: 1000, currency: "USD")
        let wrong = OrderStateMachine.decide(order: unmoved, notification: note(.transition(.paid), amount: Money(minor: 999, currency: "USD")))
        #expect(wrong.verdict == .mismatch)
        // Once moved to pending, pending again is stale.
        #expect(OrderStateMachine.decide(order: order(.pending), notification: note(.transition(.pending))).verdict == .stale)
    }

    @Test("a lifecycle delivered in every order ends in the same state; late ones are stale")
    func everyOrder() {
        let lifecycle: [VerifiedNotification] = [
            note(.transition(.pending), amount: Money(minor: 500, currency: "USD"), key: "pending"),
            note(.transition(.authorized), amount: Money(minor: 500, currency: "USD"), key: "authorized"),
            note(.transition(.paid), amount: Money(minor: 500, currency: "USD"), key: "paid"),
            // As Unlimint says it: the refund leaves nothing remaining.
            note(.refund(RefundInfo(refundID: "R1", amount: Money(minor: 500, currency: "USD"), fullyRefunded: true)),
                 kind: .refund, key: "refund"),
        ]
        for permutation in permutations(of: lifecycle) {
            var snapshot: OrderSnapshot?
            var applied = 0
            for notification in permutation {
                let decision = OrderStateMachine.decide(order: snapshot, notification: notification)
                snapshot = Self.applying(decision, to: snapshot)
                if decision.newState == nil { #expect(decision.verdict == .stale) } else { applied += 1 }
            }
            #expect(snapshot?.state == .refunded, "order \(permutation.map(\.dedupKey)) ended in \(String(describing: snapshot?.state))")
            #expect(snapshot?.refundedMinor == 500)
            // Everything delivered after the refund is stale; everything before it climbed.
            let refundIndex = permutation.firstIndex { $0.dedupKey == "refund" } ?? 0
            #expect(applied <= refundIndex + 1)
        }
    }

    /// The order after `decision`, as the store records it: a transition, and the facts a late
    /// notification may still tell.
    static func applying(_ decision: Decision, to snapshot: OrderSnapshot?) -> OrderSnapshot? {
        guard var next = snapshot ?? decision.newState.map({ OrderSnapshot(state: $0) }) else { return nil }
        if let state = decision.newState { next.state = state }
        if let amount = decision.orderAmount { next.amount = amount }
        if let refunded = decision.refundedMinor { next.refundedMinor = refunded }
        return next
    }

    static func usd(_ minor: Int64) -> Money { Money(minor: minor, currency: "USD") }

    /// A payment of 10.00 USD and two refunds, as each kind of provider reports them.
    static let refundLifecycles: [(name: String, notifications: [VerifiedNotification], state: OrderState, refunded: Int64)] = {
        func paid() -> VerifiedNotification {
            VerifiedNotification(kind: .payment, orderRef: "O1", providerTxnID: "P1", dedupKey: "paid", providerStatus: "S",
                                 effect: .transition(.paid), amount: usd(1000))
        }
        func refund(_ id: String, _ minor: Int64, remaining: Int64? = nil) -> VerifiedNotification {
            VerifiedNotification(kind: .refund, orderRef: "O1", providerTxnID: id, dedupKey: id, providerStatus: "S",
                                 effect: .refund(RefundInfo(refundID: id, amount: usd(minor), fullyRefunded: remaining.map { $0 == 0 },
                                                            remainingMinor: remaining)),
                                 amount: usd(minor))
        }
        return [
            ("refund amounts only (Citcon, Alipay), in full", [paid(), refund("R1", 300), refund("R2", 700)], .refunded, 1000),
            ("refund amounts only, in part", [paid(), refund("R1", 300), refund("R2", 200)], .partiallyRefunded, 500),
            ("with what remains (Unlimint), in full", [paid(), refund("R1", 300, remaining: 700), refund("R2", 700, remaining: 0)],
             .refunded, 1000),
            ("with what remains, in part", [paid(), refund("R1", 300, remaining: 700), refund("R2", 200, remaining: 500)],
             .partiallyRefunded, 500),
        ]
    }()

    @Test("a payment and two refunds in every order end in the same state, amount and refunded total",
          arguments: refundLifecycles.indices)
    func refundsInEveryOrder(_ index: Int) {
        let lifecycle = Self.refundLifecycles[index]
        for permutation in permutations(of: lifecycle.notifications) {
            var snapshot: OrderSnapshot?
            var refunds: [String: Int64] = [:]  // as the store keeps them: by id, for an order it knows
            for notification in permutation {
                let decision = OrderStateMachine.decide(
                    order: snapshot, notification: notification, refundsRecordedMinor: refunds.values.reduce(0, +))
                snapshot = Self.applying(decision, to: snapshot)
                if case .refund(let info) = notification.effect, let id = info.refundID, let amount = info.amount {
                    refunds[id] = amount.minor
                }
            }
            let order = permutation.map(\.dedupKey)
            #expect(snapshot?.state == lifecycle.state, "\(lifecycle.name): \(order)")
            #expect(snapshot?.refundedMinor == lifecycle.refunded, "\(lifecycle.name): \(order)")
            #expect(snapshot?.amount == Self.usd(1000), "\(lifecycle.name): \(order)")
        }
    }

    @Test("more refunded than paid flags the order once, by whichever notification makes it so, in every order")
    func overRefund() {
        let paid = VerifiedNotification(kind: .payment, orderRef: "O1", providerTxnID: "P1", dedupKey: "paid", providerStatus: "S",
                                        effect: .transition(.paid), amount: Self.usd(1000))
        func refund(_ id: String, _ minor: Int64) -> VerifiedNotification {
            VerifiedNotification(kind: .refund, orderRef: "O1", providerTxnID: id, dedupKey: id, providerStatus: "S",
                                 effect: .refund(RefundInfo(refundID: id, amount: Self.usd(minor))), amount: Self.usd(minor))
        }
        for permutation in permutations(of: [paid, refund("R1", 700), refund("R2", 800)]) {
            var snapshot: OrderSnapshot?
            var refunds: [String: Int64] = [:]
            var flaggedBy: [String] = []
            for notification in permutation {
                let decision = OrderStateMachine.decide(
                    order: snapshot, notification: notification, refundsRecordedMinor: refunds.values.reduce(0, +))
                if decision.flag == .amountMismatch {
                    flaggedBy.append(notification.dedupKey)
                    #expect(decision.explanation?.contains("15.00 USD refunded, more than the order's 10.00 USD") == true,
                            "\(String(describing: decision.explanation))")
                }
                snapshot = Self.applying(decision, to: snapshot)
                if case .refund(let info) = notification.effect, let id = info.refundID, let amount = info.amount {
                    refunds[id] = amount.minor
                }
            }
            let order = permutation.map(\.dedupKey)
            #expect(flaggedBy == [order[2]], "\(order)")  // the last one, whichever it is
            #expect(snapshot?.state == .refunded, "\(order)")
            #expect(snapshot?.refundedMinor == 1500, "\(order)")
        }
        // Exactly the amount, or a refund short of it, flags nothing.
        let exact = OrderStateMachine.decide(order: order(.paid, amount: Self.usd(1000)), notification: refund("R1", 1000))
        #expect(exact.flag == nil)
        #expect(exact.newState == .refunded)
    }

    @Test("a late payment tells an amount the order lacked; its refunds may then cover it")
    func latePaymentAmount() {
        let paid = note(.transition(.paid), amount: Self.usd(1000))
        let covered = OrderStateMachine.decide(order: order(.partiallyRefunded, refunded: 1000), notification: paid)
        #expect(covered.verdict == .applied)
        #expect(covered.newState == .refunded)
        #expect(covered.orderAmount == Self.usd(1000))
        let notCovered = OrderStateMachine.decide(order: order(.partiallyRefunded, refunded: 400), notification: paid)
        #expect(notCovered.verdict == .stale)
        #expect(notCovered.newState == nil)
        #expect(notCovered.orderAmount == Self.usd(1000))
        // Refunded because the provider said so: the total is then the whole amount.
        let said = OrderStateMachine.decide(order: order(.refunded, refunded: 700), notification: paid)
        #expect(said.verdict == .stale)
        #expect(said.refundedMinor == 1000)
        // A known amount is not replaced, and an amount that is not the expected one is not taken.
        #expect(OrderStateMachine.decide(order: order(.refunded, amount: Self.usd(900), refunded: 900), notification: paid).orderAmount == nil)
        let unexpected = OrderStateMachine.decide(order: order(.partiallyRefunded, refunded: 1000, expected: Self.usd(1234)),
                                                  notification: paid)
        #expect(unexpected.verdict == .stale)
        #expect(unexpected.orderAmount == nil)
        // A late chargeback reversal or refund says nothing about the payment's amount.
        #expect(OrderStateMachine.decide(order: order(.refunded), notification: note(.chargebackReversal, kind: .chargeback,
                                                                                      amount: Self.usd(1000))).orderAmount == nil)
    }

    @Test("a refund in another currency than the order's is a mismatch, not added to the total")
    func refundCurrency() {
        let euros = note(.refund(RefundInfo(refundID: "R1", amount: Money(minor: 300, currency: "EUR"))), kind: .refund)
        let decision = OrderStateMachine.decide(order: order(.paid, amount: Self.usd(1000)), notification: euros)
        #expect(decision.verdict == .mismatch)
        #expect(decision.flag == .amountMismatch)
        #expect(decision.newState == nil)
        #expect(decision.refundedMinor == nil)
        // Against the expectation when the amount is not known yet.
        #expect(OrderStateMachine.decide(order: order(.expected, expected: Self.usd(1000)), notification: euros).verdict == .mismatch)
        #expect(OrderStateMachine.decide(order: nil, notification: euros).verdict == .applied)
        // Refunds first: their currency stands for the order's until a payment comes.
        let refundedInEuros = OrderSnapshot(state: .partiallyRefunded, refundedMinor: 300, refundCurrency: "EUR")
        let dollars = OrderStateMachine.decide(order: refundedInEuros, notification: note(.transition(.paid), amount: Self.usd(1000)))
        // A late payment in another currency is stale like any late payment: no flag, and the
        // refunds' currency is not overwritten with its amount (product.md section 5).
        #expect(dollars.verdict == .stale)
        #expect(dollars.flag == nil)
        #expect(dollars.orderAmount == nil)
        #expect(dollars.newState == nil)
        let lateInEuros = OrderStateMachine.decide(
            order: order(.paid, amount: Self.usd(1000)), notification: note(.transition(.pending), amount: Money(minor: 1000, currency: "EUR")))
        #expect(lateInEuros.verdict == .stale)
        #expect(lateInEuros.flag == nil)
        #expect(lateInEuros.orderAmount == nil)
        #expect(OrderStateMachine.decide(order: refundedInEuros, notification: note(
            .refund(RefundInfo(refundID: "R2", amount: Self.usd(100))), kind: .refund)).verdict == .mismatch)
        #expect(OrderStateMachine.decide(order: refundedInEuros, notification: euros).verdict == .applied)
        // Juspay's refund events carry the order's amount and total, not the refund's own.
        let rupees = note(.refund(RefundInfo(cumulativeRefundedMinor: 500, fullyRefunded: true,
                                             orderAmount: Money(minor: 500, currency: "INR"))), kind: .refund)
        #expect(OrderStateMachine.decide(order: order(.expected, expected: Self.usd(500)), notification: rupees).verdict == .mismatch)
    }

    @Test("refunds adding up past Int64 are a mismatch, not a trap")
    func refundOverflow() {
        let huge = note(.refund(RefundInfo(refundID: "R2", amount: Self.usd(.max))), kind: .refund)
        let decision = OrderStateMachine.decide(order: order(.partiallyRefunded, refunded: 5), notification: huge, refundsRecordedMinor: 5)
        #expect(decision.verdict == .mismatch)
        #expect(decision.flag == .amountMismatch)
        #expect(decision.refundedMinor == nil)
    }

    @Test("an order said to be fully refunded has its whole amount refunded, whatever the event's own total")
    func fullySaidTotal() {
        // Juspay AUTO_REFUNDED carrying amount_refunded 0.
        let info = RefundInfo(cumulativeRefundedMinor: 0, fullyRefunded: true, orderAmount: Money(minor: 1000, currency: "INR"))
        let decision = OrderStateMachine.decide(order: nil, notification: note(.refund(info), kind: .refund))
        #expect(decision.newState == .refunded)
        #expect(decision.refundedMinor == 1000)
    }

    private func permutations<T>(of items: [T]) -> [[T]] {
        guard items.count > 1 else { return [items] }
        return items.indices.flatMap { index -> [[T]] in
            var rest = items
            let item = rest.remove(at: index)
            return permutations(of: rest).map { [item] + $0 }
        }
    }
}
