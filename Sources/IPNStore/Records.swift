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

/// An order as ops staff see it.
public struct OrderRecord: Sendable, Equatable {
    public var id: Int64
    public var provider: String
    public var account: String
    public var orderRef: String
    public var providerTxnID: String?
    public var state: OrderState
    /// The amount the order was paid (or authorized) with, when a notification carried one.
    public var amount: Money?
    public var refundedMinor: Int64
    public var expected: Money?
    public var flags: [String]
    public var createdAt: String
    public var updatedAt: String

    public init(
        id: Int64, provider: String, account: String, orderRef: String, providerTxnID: String?, state: OrderState,
        amount: Money?, refundedMinor: Int64, expected: Money?, flags: [String], createdAt: String, updatedAt: String
    ) {
        self.id = id
        self.provider = provider
        self.account = account
        self.orderRef = orderRef
        self.providerTxnID = providerTxnID
        self.state = state
        self.amount = amount
        self.refundedMinor = refundedMinor
        self.expected = expected
        self.flags = flags
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// One state change of an order.
public struct TransitionRecord: Sendable, Equatable {
    public var from: OrderState?
    public var to: OrderState
    public var at: String
    /// The notification that caused it; nil for a registered expectation.
    public var notificationID: Int64?

    public init(from: OrderState?, to: OrderState, at: String, notificationID: Int64?) {
        self.from = from
        self.to = to
        self.at = at
        self.notificationID = notificationID
    }
}

/// One received request with its verdict.
public struct NotificationRecord: Sendable, Equatable {
    public var id: Int64
    public var provider: String
    public var account: String
    public var orderRef: String?
    public var receivedAt: String
    public var verdict: Verdict
    public var reason: String?
    public var reasonDetail: String?
    public var kind: String?
    public var providerStatus: String?
    public var dedupKey: String?
    public var clientIP: String?
    public var providerTxnID: String?
    public var amount: Money?
    public var detail: String?
    /// The raw body, only when asked for.
    public var body: [UInt8]?
    /// The kept request headers (JSON object text), only when the body is asked for.
    public var headers: String?
    /// The rejected notification this one was recorded from by `notifications reverify`.
    public var reverifiedFrom: Int64?
    /// The inquiry whose answer this is (`source: inquiry`); nil for the provider's own.
    public var inquiryID: Int64?
    /// `provider` or `inquiry`: where the notification came from.
    public var source: String { inquiryID == nil ? "provider" : "inquiry" }

    public init(
        id: Int64, provider: String, account: String, orderRef: String?, receivedAt: String, verdict: Verdict,
        reason: String?, reasonDetail: String?, kind: String?, providerStatus: String?, dedupKey: String?,
        clientIP: String?, providerTxnID: String?, amount: Money?, detail: String?, body: [UInt8]? = nil,
        headers: String? = nil, reverifiedFrom: Int64? = nil, inquiryID: Int64? = nil
    ) {
        self.id = id
        self.provider = provider
        self.account = account
        self.orderRef = orderRef
        self.receivedAt = receivedAt
        self.verdict = verdict
        self.reason = reason
        self.reasonDetail = reasonDetail
        self.kind = kind
        self.providerStatus = providerStatus
        self.dedupKey = dedupKey
        self.clientIP = clientIP
        self.providerTxnID = providerTxnID
        self.amount = amount
        self.detail = detail
        self.body = body
        self.headers = headers
        self.reverifiedFrom = reverifiedFrom
        self.inquiryID = inquiryID
    }
}

/// An order with how it got where it is.
public struct OrderDetail: Sendable, Equatable {
    public var order: OrderRecord
    public var transitions: [TransitionRecord]
    public var notifications: [NotificationRecord]
    /// The events the order's changes wrote, ascending.
    public var events: [EventRecord]
    /// When the schedule asks about the order next (`Timestamp` text); nil when it does not.
    /// Whether its account has `inquiry` is the config's business: callers null it otherwise.
    public var nextInquiryAt: String?
    /// The order's newest inquiries (at most `OrderDetail.inquiryLimit`), newest first.
    public var inquiries: [InquiryRecord]

    /// How many of an order's inquiries `orders show` and the API show.
    public static let inquiryLimit = 20

    /// The detail with `nextInquiryAt` only when the order's account is among `scopes` (the
    /// accounts with an `inquiry` section): the store schedules every order, the config says
    /// which are asked.
    public func scheduledOnlyWhenAsked(by scopes: [Scope]) -> OrderDetail {
        let scope = Scope(provider: order.provider, account: order.account)
        guard !scopes.contains(scope) else { return self }
        var detail = self
        detail.nextInquiryAt = nil
        return detail
    }

    public init(
        order: OrderRecord, transitions: [TransitionRecord], notifications: [NotificationRecord], events: [EventRecord] = [],
        nextInquiryAt: String? = nil, inquiries: [InquiryRecord] = []
    ) {
        self.order = order
        self.transitions = transitions
        self.notifications = notifications
        self.events = events
        self.nextInquiryAt = nextInquiryAt
        self.inquiries = inquiries
    }
}

/// Which orders to list, newest first.
public struct OrderFilter: Sendable, Equatable {
    public var provider: String?
    public var account: String?
    public var state: OrderState?
    /// Orders created at or after this `Timestamp` text.
    public var since: String?
    public var limit: Int
    /// Only orders older than this id (the cursor of the previous page).
    public var beforeID: Int64?

    public init(provider: String? = nil, account: String? = nil, state: OrderState? = nil, since: String? = nil,
                limit: Int = 100, beforeID: Int64? = nil) {
        self.provider = provider
        self.account = account
        self.state = state
        self.since = since
        self.limit = limit
        self.beforeID = beforeID
    }
}

/// Which notifications to list, newest first.
public struct NotificationFilter: Sendable, Equatable {
    public var provider: String?
    public var account: String?
    public var verdict: Verdict?
    /// Notifications received at or after this `Timestamp` text.
    public var since: String?
    public var limit: Int
    public var beforeID: Int64?

    public init(provider: String? = nil, account: String? = nil, verdict: Verdict? = nil, since: String? = nil,
                limit: Int = 100, beforeID: Int64? = nil) {
        self.provider = provider
        self.account = account
        self.verdict = verdict
        self.since = since
        self.limit = limit
        self.beforeID = beforeID
    }
}

/// What registering an expectation found.
public struct ExpectationOutcome: Sendable, Equatable {
    /// The order's state (`expected` when the expectation created it).
    public let state: OrderState
    /// Why the order was flagged `amount_mismatch`: it was already authorized or paid with
    /// another amount.
    public let mismatch: String?

    public init(state: OrderState, mismatch: String?) {
        self.state = state
        self.mismatch = mismatch
    }
}
