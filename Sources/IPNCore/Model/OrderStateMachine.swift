/// The order as the transition rule sees it.
public struct OrderSnapshot: Sendable, Equatable {
    public var state: OrderState
    public var amount: Money?
    public var refundedMinor: Int64
    public var expected: Money?

    public init(state: OrderState, amount: Money? = nil, refundedMinor: Int64 = 0, expected: Money? = nil) {
        self.state = state
        self.amount = amount
        self.refundedMinor = refundedMinor
        self.expected = expected
    }
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
}

/// Flags ipnd raises on orders for people to look at.
public enum OrderFlag: String, Sendable, Codable {
    case amountMismatch = "amount_mismatch"
}

/// The transition rule of product.md section 5, pure and provider-independent.
///
/// Notifications may arrive in any order and any number of times: transitions only climb in
/// rank, except a second partial refund that grows the refunded total and the two named
/// reversals (charged_back -> paid when a chargeback is resolved for the merchant;
/// failed/canceled/expired -> authorized on a late authorization).
public enum OrderStateMachine {
    /// Decides `notification`'s verdict against `order` (nil when the order is not known yet).
    /// `refundAlreadyCounted` says whether this refund id is already in the order's total.
    public static func decide(
        order: OrderSnapshot?,
        notification: VerifiedNotification,
        refundAlreadyCounted: Bool = false
    ) -> Decision {
        switch notification.effect {
        case .unknownStatus:
            return Decision(verdict: .unknownStatus, explanation: "status \(notification.providerStatus) has no mapping")
        case .record:
            return Decision(verdict: .recorded)
        case .transition(let target):
            return decideTransition(order: order, target: target, notification: notification, isChargebackReversal: false)
        case .chargebackReversal:
            return decideTransition(order: order, target: .paid, notification: notification, isChargebackReversal: true)
        case .refund(let info):
            return decideRefund(order: order, info: info, notification: notification, alreadyCounted: refundAlreadyCounted)
        }
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
        guard isReversal || target.rank > order.state.rank else {
            return Decision(verdict: .stale, explanation: "order is \(order.state.rawValue); \(target.rawValue) would go back")
        }
        let isChargebackReinstatement = isChargebackReversal && order.state == .chargedBack
        if (target == .authorized || target == .paid), !isChargebackReinstatement, let expected = order.expected {
            if let mismatch = mismatch(expected: expected, got: notification.amount) {
                return Decision(verdict: .mismatch, flag: .amountMismatch, explanation: mismatch)
            }
        }
        return Decision(verdict: .applied, newState: target, orderAmount: amount)
    }

    private static func mismatch(expected: Money, got: Money?) -> String? {
        guard let got else { return "expected \(expected), notification carries no amount" }
        guard got != expected else { return nil }
        return "expected \(expected), notification carries \(got)"
    }

    private static func decideRefund(
        order: OrderSnapshot?,
        info: RefundInfo,
        notification: VerifiedNotification,
        alreadyCounted: Bool
    ) -> Decision {
        let previousTotal = order?.refundedMinor ?? 0
        let increment = alreadyCounted ? 0 : (info.amount?.minor ?? 0)
        let total = max(previousTotal, info.cumulativeRefundedMinor ?? previousTotal + increment)
        let orderAmount = info.orderAmount ?? order?.amount
        let full: Bool
        if let said = info.fullyRefunded {
            full = said
        } else if let orderAmount {
            full = total >= orderAmount.minor
        } else {
            full = false  // without the order's amount, a refund cannot be known to be total
        }
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
        return Decision(
            verdict: .stale,
            explanation: "order is \(order.state.rawValue) with \(order.refundedMinor) refunded; refund adds nothing"
        )
    }
}
