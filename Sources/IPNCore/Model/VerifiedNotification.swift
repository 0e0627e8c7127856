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

/// What a notification is about.
public enum NotificationKind: String, Sendable, Codable {
    case payment
    case capture
    case refund
    case chargeback
    case payout
    case recurring
    case mandate
    case event
}

/// What an authentic notification asks of its order.
public enum NotificationEffect: Sendable, Equatable, Codable {
    /// Move the order to this state (subject to the transition rule).
    case transition(OrderState)
    /// A successful refund: refunded or partially refunded by the refund totals.
    case refund(RefundInfo)
    /// A chargeback resolved in the merchant's favour: charged_back -> paid.
    case chargebackReversal
    /// Authentic and linked to its order, with no state effect by design.
    case record
    /// A status this provider mapping does not know: stored and acknowledged; it moves no order.
    case unknownStatus
    /// The provider holds the order with another amount (iPay88's re-query "Incorrect
    /// amount"): verdict `mismatch`, reason `amount_differs`, the order flagged
    /// `amount_mismatch`, no transition.
    case amountDiffers
}

/// The facts of a successful refund the state machine needs.
public struct RefundInfo: Sendable, Equatable, Codable {
    /// Identifies the refund, so a redelivered refund is not counted twice.
    public var refundID: String?
    /// This refund's amount, when the provider gives it.
    public var amount: Money?
    /// The order's cumulative refunded total after this refund, when the provider gives it.
    public var cumulativeRefundedMinor: Int64?
    /// Whether the order is now fully refunded, when the provider says so outright.
    public var fullyRefunded: Bool?
    /// The order's amount, when the refund notification carries it.
    public var orderAmount: Money?
    /// What is left of the order's amount after this refund, when the provider says
    /// (Unlimint's `remaining_amount`): with the order's amount, the cumulative total.
    public var remainingMinor: Int64?

    public init(
        refundID: String? = nil,
        amount: Money? = nil,
        cumulativeRefundedMinor: Int64? = nil,
        fullyRefunded: Bool? = nil,
        orderAmount: Money? = nil,
        remainingMinor: Int64? = nil
    ) {
        self.refundID = refundID
        self.amount = amount
        self.cumulativeRefundedMinor = cumulativeRefundedMinor
        self.fullyRefunded = fullyRefunded
        self.orderAmount = orderAmount
        self.remainingMinor = remainingMinor
    }
}

/// How a notification relates to a provider payment id (Alipay `paymentId`).
public enum PaymentLink: Sendable, Equatable, Codable {
    /// A payment notification: its order is the one this payment id belongs to.
    case registers(String)
    /// A capture or refund naming only the payment id: its order is found through the link.
    case requires(String)

    public var key: String {
        switch self {
        case .registers(let key), .requires(let key): key
        }
    }
}

/// A notification whose authenticity was verified, reduced to what ipnd acts on.
public struct VerifiedNotification: Sendable, Equatable, Codable {
    public var kind: NotificationKind
    /// The merchant's order reference; nil when the order is found through `link`.
    public var orderRef: String?
    public var providerTxnID: String?
    /// Same key, same notification: the basis of deduplication.
    public var dedupKey: String
    /// The provider's own status word, as sent.
    public var providerStatus: String
    public var effect: NotificationEffect
    /// The amount this notification carries (payment, capture, refund or chargeback amount).
    public var amount: Money?
    public var link: PaymentLink?
    /// Facts worth keeping for people, e.g. which iPay88 signature form matched.
    public var detail: [String: String]

    public init(
        kind: NotificationKind,
        orderRef: String?,
        providerTxnID: String?,
        dedupKey: String,
        providerStatus: String,
        effect: NotificationEffect,
        amount: Money? = nil,
        link: PaymentLink? = nil,
        detail: [String: String] = [:]
    ) {
        self.kind = kind
        self.orderRef = orderRef
        self.providerTxnID = providerTxnID
        self.dedupKey = dedupKey
        self.providerStatus = providerStatus
        self.effect = effect
        self.amount = amount
        self.link = link
        self.detail = detail
    }

    /// Payments and captures describe the order's payment itself: their amount is the order's
    /// amount and their transaction id the order's. Refunds, chargebacks and the rest do not.
    public var describesThePayment: Bool { kind == .payment || kind == .capture }
}
