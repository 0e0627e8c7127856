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

/// The order as the transition rule sees it.
public struct OrderSnapshot: Sendable, Equatable {
    public var state: OrderState
    public var amount: Money?
    public var refundedMinor: Int64
    public var expected: Money?
    /// The currency of the refunds counted so far, when the order's amount is not known yet
    /// (refunds arrived first).
    public var refundCurrency: String?
    /// False for an order that only notifications with no state effect have named (an unknown
    /// status, a payout): it shows `pending`, but nothing has moved it yet, so the first
    /// notification that does is applied, as for a new order.
    public var hasTransitions: Bool

    public init(
        state: OrderState, amount: Money? = nil, refundedMinor: Int64 = 0, expected: Money? = nil, refundCurrency: String? = nil,
        hasTransitions: Bool = true
    ) {
        self.state = state
        self.amount = amount
        self.refundedMinor = refundedMinor
        self.expected = expected
        self.refundCurrency = refundCurrency
        self.hasTransitions = hasTransitions
    }

    /// The currency the order's money is in, from whatever is known first.
    var knownCurrency: String? { amount?.currency ?? refundCurrency ?? expected?.currency }
}

/// What to do with an authentic notification.
public struct Decision: Sendable, Equatable {
    public var verdict: Verdict
    /// The order's state after the notification, when it transitions (creating the order if new).
    public var newState: OrderState?
    /// The order's refunded total after the notification, when it changes.
    public var refundedMinor: Int64?
    /// The amount to record as the order's amount, when it changes.
    public var orderAmount: Money?
    /// A flag to raise on the order.
    public var flag: OrderFlag?
    /// Why the verdict is what it is, for people.
    public var explanation: String?
    /// The reason code stored with the verdict, when it is not the flag's name
    /// (`amount_differs` for iPay88's "Incorrect amount").
    public var reason: String? = nil
}

/// Flags ipnd raises on orders for people to look at.
public enum OrderFlag: String, Sendable, Codable {
    case amountMismatch = "amount_mismatch"
    /// Reconciliation gave up on the order (product.md section 12): `give_up_after` passed
    /// since its last change while it was not settled. Removed when it settles.
    case unsettled
}

/// The transition rule of product.md section 5, pure and provider-independent.
///
/// Notifications may arrive in any order and any number of times: transitions only climb in
/// rank, except a second partial refund that grows the refunded total and the two named
/// reversals (charged_back -> paid when a chargeback is resolved for the merchant, or back to
/// partially_refunded or refunded when the order's refunds stand; failed/canceled/expired ->
/// authorized on a late authorization).
public enum OrderStateMachine {
    /// Decides `notification`'s verdict against `order` (nil when the order is not known yet).
    /// For a refund, `refundAlreadyCounted` says whether its id is already among the order's
    /// refunds, and `refundsRecordedMinor` what the order's distinct refunds add up to (nil:
    /// take the refunded total for it).
    public static func decide(
        order: OrderSnapshot?,
        notification: VerifiedNotification,
        refundAlreadyCounted: Bool = false,
        refundsRecordedMinor: Int64? = nil
    ) -> Decision {
        let decision = decideEffect(
            order: order, notification: notification, refundAlreadyCounted: refundAlreadyCounted,
            refundsRecordedMinor: refundsRecordedMinor)
        return flaggingOverRefund(decision, order: order)
    }

    /// More refunded than the order's amount is something people must look at, whichever came
    /// last, the refunds or the amount: the notification that makes it so flags the order.
    private static func flaggingOverRefund(_ decision: Decision, order: OrderSnapshot?) -> Decision {
        guard decision.flag == nil, let amount = decision.orderAmount ?? order?.amount else { return decision }
        let refunded = decision.refundedMinor ?? order?.refundedMinor ?? 0
        guard refunded > amount.minor else { return decision }
        if let order, let before = order.amount, order.refundedMinor > before.minor { return decision }  // flagged already
        var flagged = decision
        flagged.flag = .amountMismatch
        let note = "\(Money(minor: refunded, currency: amount.currency)) refunded, more than the order's \(amount)"
        flagged.explanation = decision.explanation.map { "\($0); \(note)" } ?? note
        return flagged
    }

    private static func decideEffect(
        order: OrderSnapshot?,
        notification: VerifiedNotification,
        refundAlreadyCounted: Bool,
        refundsRecordedMinor: Int64?
    ) -> Decision {
        switch notification.effect {
        case .unknownStatus:
            return Decision(verdict: .unknownStatus, explanation: "status \(notification.providerStatus) has no mapping")
        case .record:
            return Decision(verdict: .recorded)
        case .amountDiffers:
            return Decision(
                verdict: .mismatch, flag: .amountMismatch,
                explanation: "the provider holds this order with another amount than the one asked about",
                reason: "amount_differs")
        case .transition(let target):
            return decideTransition(order: order, target: target, notification: notification, isChargebackReversal: false)
        case .chargebackReversal:
            return decideTransition(order: order, target: .paid, notification: notification, isChargebackReversal: true)
        case .refund(let info):
            return decideRefund(
                order: order, info: info, alreadyCounted: refundAlreadyCounted, recorded: refundsRecordedMinor)
        }
    }

    /// Why an expectation registered for `order` disagrees with what it was already authorized
    /// or paid with, if it does: the order is then flagged as if the notification came after.
    public static func expectationConflict(order: OrderSnapshot, expected: Money) -> String? {
        let moneyMoved: Set<OrderState> = [.authorized, .paid, .partiallyRefunded, .refunded, .chargedBack]
        guard moneyMoved.contains(order.state) else { return nil }
        guard let amount = order.amount else {
            // Authorized or paid by a notification that stated no amount: registered first, the
            // expectation would have made that notification a mismatch. A refunded or charged-back
            // order may simply not have seen its payment yet; a late one is checked when it comes.
            guard order.state == .authorized || order.state == .paid else { return nil }
            return "order is \(order.state.rawValue) with no amount stated, not the expected \(expected)"
        }
        guard amount != expected else { return nil }
        return "order is \(order.state.rawValue) with \(amount), not the expected \(expected)"
    }

    private static func decideTransition(
        order: OrderSnapshot?,
        target: OrderState,
        notification: VerifiedNotification,
        isChargebackReversal: Bool
    ) -> Decision {
        let amount = notification.describesThePayment ? notification.amount : nil
        guard let order else {
            return Decision(verdict: .applied, newState: target, orderAmount: amount)
        }
        let isReversal: Bool
        if isChargebackReversal && order.state == .chargedBack {
            isReversal = true
        } else if target == .authorized && order.state.isUnsuccessfulEnd {
            isReversal = true  // late authorization
        } else {
            isReversal = false
        }
        guard isReversal || target.rank > order.state.rank || !order.hasTransitions else {
            return decideLate(order: order, target: target, amount: amount)
        }
        let isChargebackReinstatement = isChargebackReversal && order.state == .chargedBack
        let movesMoney = (target == .authorized || target == .paid)
        // product.md section 5: whatever would move the order to authorized or paid, a
        // chargeback resolved for the merchant included, must carry the expected amount. A
        // reinstatement that carries no amount is let through: the payment it reinstates was
        // checked when it was paid.
        if movesMoney, let expected = order.expected, !(isChargebackReinstatement && notification.amount == nil),
           let mismatch = mismatch(expected: expected, got: notification.amount) {
            return Decision(verdict: .mismatch, flag: .amountMismatch, explanation: mismatch)
        }
        // The order's amount is what authorized or paid it. A chargeback, its reversal, a refund
        // or a failure status only fills it in when it is not known yet: a chargeback's amount
        // and currency may be the disputed sum's, not the order's.
        let keepsAmount = order.amount != nil && (!movesMoney || isChargebackReinstatement)
        if isChargebackReinstatement, order.refundedMinor > 0 {
            // Refunds made before the chargeback, or counted while it stood, still stand: the
            // order goes back to what it was without the chargeback, so the final state does not
            // depend on whether a refund arrived before or after the dispute (product.md section 5).
            let refundedInFull = order.amount.map { order.refundedMinor >= $0.minor } ?? false
            return Decision(
                verdict: .applied, newState: refundedInFull ? .refunded : .partiallyRefunded,
                orderAmount: keepsAmount ? nil : amount,
                explanation: "chargeback resolved for the merchant; the \(order.refundedMinor) refunded still stands"
            )
        }
        return Decision(verdict: .applied, newState: target, orderAmount: keepsAmount ? nil : amount)
    }

    /// A payment notification too late to move the order is stale, but it may still tell the
    /// order's amount, unknown so far because a refund came first. The amount is then recorded,
    /// so the final state and totals do not depend on the arrival order: refunds already
    /// covering it make the order refunded, and a refunded order's total becomes its amount.
    private static func decideLate(order: OrderSnapshot, target: OrderState, amount: Money?) -> Decision {
        let stale = "order is \(order.state.rawValue); \(target.rawValue) would go back"
        guard let amount else { return Decision(verdict: .stale, explanation: stale) }
        // An authorization or payment that disagrees with the expectation flags the order even
        // when it arrives too late to move it: on time it would have been a mismatch, and whether
        // an underpayment is noticed must not depend on the arrival order. The verdict stays
        // `stale` (it moves nothing, product.md section 5) and the amount is not taken.
        if target == .authorized || target == .paid, let expected = order.expected, expected != amount {
            return Decision(
                verdict: .stale, flag: .amountMismatch,
                explanation: "\(stale); its amount \(amount) is not the expected \(expected)"
            )
        }
        // A payment in another currency than the order's money so far (its refunds, say) tells
        // nothing about the order's amount. product.md section 5 keeps `mismatch` for an
        // expectation disagreeing with a notification that would move the order; this one moves
        // nothing, so it is stale and changes nothing, with the currencies in its detail.
        if let known = order.amount?.currency ?? order.refundCurrency, known != amount.currency {
            return Decision(
                verdict: .stale,
                explanation: "\(stale); the payment is in \(amount.currency), the order's money so far in \(known)"
            )
        }
        guard order.amount == nil else { return Decision(verdict: .stale, explanation: stale) }
        if let expected = order.expected, expected != amount {
            // Not an authorization or payment (a late pending, say): it tells nothing the
            // expectation is about, and its amount is not taken.
            return Decision(verdict: .stale, explanation: "\(stale); its amount \(amount) is not the expected \(expected)")
        }
        switch order.state {
        case .partiallyRefunded where order.refundedMinor >= amount.minor:
            return Decision(
                verdict: .applied, newState: .refunded, orderAmount: amount,
                explanation: "the payment's amount \(amount) is covered by the \(order.refundedMinor) already refunded"
            )
        case .refunded:
            return Decision(
                verdict: .stale, refundedMinor: max(order.refundedMinor, amount.minor), orderAmount: amount,
                explanation: "\(stale); the order's amount is now known: \(amount)"
            )
        default:
            return Decision(verdict: .stale, orderAmount: amount, explanation: "\(stale); the order's amount is now known: \(amount)")
        }
    }

    private static func mismatch(expected: Money, got: Money?) -> String? {
        guard let got else { return "expected \(expected), notification carries no amount" }
        guard got != expected else { return nil }
        return "expected \(expected), notification carries \(got)"
    }

    /// The refunded total is the cumulative total the provider states, else the largest of the
    /// refunds' own amounts added up by refund id and the order's amount less what remains; never
    /// less than the total so far, whatever order refunds arrive in.
    private static func decideRefund(
        order: OrderSnapshot?,
        info: RefundInfo,
        alreadyCounted: Bool,
        recorded: Int64?
    ) -> Decision {
        let orderAmount = info.orderAmount ?? order?.amount
        if let refunded = info.amount?.currency ?? info.orderAmount?.currency, let paid = order?.knownCurrency, refunded != paid {
            return Decision(
                verdict: .mismatch, flag: .amountMismatch,
                explanation: "a refund in \(refunded) for an order in \(paid) cannot be added to its total"
            )
        }
        let previousTotal = order?.refundedMinor ?? 0
        // The cumulative total the provider states (providers.md: Citcon's `amount_refunded`)
        // is the refunded total. Otherwise it is the distinct refunds added up, or what the
        // order's amount less what remains gives, whichever is larger: a callback's `remaining`
        // can only be read once the order's amount is known, which may be after a later refund.
        // Never below the total so far: refunds arrive in any order.
        var total: Int64
        if let stated = info.cumulativeRefundedMinor {
            total = max(previousTotal, stated)
        } else {
            let (added, overflow) = (recorded ?? previousTotal).addingReportingOverflow(alreadyCounted ? 0 : (info.amount?.minor ?? 0))
            guard !overflow else {
                return Decision(verdict: .mismatch, flag: .amountMismatch, explanation: "the refunds add up past what ipnd can count")
            }
            var derived: Int64 = 0
            if let remaining = info.remainingMinor, let orderAmount { derived = max(0, orderAmount.minor - remaining) }
            total = max(previousTotal, added, derived)
        }
        let full: Bool
        if let said = info.fullyRefunded {
            full = said
        } else if let orderAmount {
            full = total >= orderAmount.minor
        } else {
            full = false  // without the order's amount, a refund cannot be known to be total
        }
        // Fully refunded means the whole amount, whatever the refunds that said so added up to.
        if full, let orderAmount { total = max(total, orderAmount.minor) }
        let target: OrderState = full ? .refunded : .partiallyRefunded
        let fillAmount = order?.amount == nil ? info.orderAmount : nil
        guard let order else {
            return Decision(verdict: .applied, newState: target, refundedMinor: total, orderAmount: fillAmount)
        }
        if target.rank > order.state.rank {
            return Decision(verdict: .applied, newState: target, refundedMinor: total, orderAmount: fillAmount)
        }
        if target == .partiallyRefunded, order.state == .partiallyRefunded, total > order.refundedMinor {
            return Decision(verdict: .applied, newState: target, refundedMinor: total, orderAmount: fillAmount)
        }
        if total > order.refundedMinor {
            // Too late to move the order (it is charged back, say), but the money went back to
            // the customer all the same: the total counts it, as it would had the refund come
            // before the chargeback, and a chargeback resolved later goes back to the refunds.
            return Decision(
                verdict: .stale, refundedMinor: total, orderAmount: fillAmount,
                explanation: "order is \(order.state.rawValue); the refund moves no state, the refunded total is now \(total)"
            )
        }
        return Decision(
            verdict: .stale,
            explanation: "order is \(order.state.rawValue) with \(order.refundedMinor) refunded; refund adds nothing"
        )
    }
}
