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
        // A stale notification stays stale, whatever its amount.
        let late = OrderStateMachine.decide(order: order(.refunded, expected: expected),
                                            notification: note(.transition(.paid), amount: Money(minor: 1, currency: "USD")))
        #expect(late.verdict == .stale)
    }

    @Test("unknown statuses and record-only notifications never transition")
    func noEffect() {
        #expect(OrderStateMachine.decide(order: order(.paid), notification: note(.unknownStatus)).verdict == .unknownStatus)
        #expect(OrderStateMachine.decide(order: nil, notification: note(.unknownStatus)).newState == nil)
        #expect(OrderStateMachine.decide(order: order(.paid), notification: note(.record, kind: .payout)).verdict == .recorded)
        #expect(OrderStateMachine.decide(order: nil, notification: note(.record)).newState == nil)
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
                guard let state = decision.newState else {
                    #expect(decision.verdict == .stale)
                    continue
                }
                applied += 1
                var next = snapshot ?? OrderSnapshot(state: state)
                next.state = state
                if let amount = decision.orderAmount { next.amount = amount }
                if let refunded = decision.refundedMinor { next.refundedMinor = refunded }
                snapshot = next
            }
            #expect(snapshot?.state == .refunded, "order \(permutation.map(\.dedupKey)) ended in \(String(describing: snapshot?.state))")
            #expect(snapshot?.refundedMinor == 500)
            // Everything delivered after the refund is stale; everything before it climbed.
            let refundIndex = permutation.firstIndex { $0.dedupKey == "refund" } ?? 0
            #expect(applied <= refundIndex + 1)
        }
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
