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

/// A provider-facing request as it is stored, whatever its verdict.
public struct ReceivedRequest: Sendable {
    public var provider: String
    public var account: String
    /// When the request arrived (`Timestamp` text).
    public var receivedAt: String
    public var clientIP: String?
    public var target: String
    /// The kept header fields as a JSON object text (secrets already redacted).
    public var headers: String
    public var body: [UInt8]
    /// The rejected notification whose stored request this is, when `notifications reverify`
    /// records it again.
    public var reverifiedFrom: Int64?
    /// The inquiry whose answer this is, for a fact a provider's status API told (`source:
    /// inquiry`): its body and headers are the answer's, its target the inquiry's URL.
    public var inquiryID: Int64?

    public init(
        provider: String,
        account: String,
        receivedAt: String,
        clientIP: String?,
        target: String,
        headers: String,
        body: [UInt8],
        reverifiedFrom: Int64? = nil,
        inquiryID: Int64? = nil
    ) {
        self.provider = provider
        self.account = account
        self.receivedAt = receivedAt
        self.clientIP = clientIP
        self.target = target
        self.headers = headers
        self.body = body
        self.reverifiedFrom = reverifiedFrom
        self.inquiryID = inquiryID
    }
}

/// What the one write path is asked to record.
public enum InboxEntry: Sendable {
    /// An authentic notification: deduplicated and run through the state machine.
    case verified(ReceivedRequest, VerifiedNotification)
    /// A request that failed verification or was malformed: kept for forensics, never applied.
    case rejected(ReceivedRequest, Rejection)
}

/// What recording a notification concluded, once it is committed.
public struct RecordOutcome: Sendable, Equatable {
    public var notificationID: Int64
    public var verdict: Verdict
    /// The order's state after this notification, when it has an order.
    public var orderState: OrderState?
    public var orderRef: String?
    /// Why the verdict is what it is, for logs.
    public var explanation: String?
    /// The flag this notification raised on its order, if any: a warning for people.
    public var flag: OrderFlag? = nil
    /// Notifications stored `unlinked` that this payment linked, and what they then did, in
    /// the order they were applied.
    public var linked: [LinkedNotification] = []
    /// How many order events the notification wrote (they are in the feed once this returns).
    public var eventsWritten: Int = 0

    public init(
        notificationID: Int64, verdict: Verdict, orderState: OrderState? = nil, orderRef: String? = nil,
        explanation: String? = nil, flag: OrderFlag? = nil, linked: [LinkedNotification] = [], eventsWritten: Int = 0
    ) {
        self.notificationID = notificationID
        self.verdict = verdict
        self.orderState = orderState
        self.orderRef = orderRef
        self.explanation = explanation
        self.flag = flag
        self.linked = linked
        self.eventsWritten = eventsWritten
    }
}

/// A notification that waited (`unlinked`) for its payment, applied when the payment arrived.
public struct LinkedNotification: Sendable, Equatable {
    public var notificationID: Int64
    /// Its verdict now (it was `unlinked`).
    public var verdict: Verdict
    /// The order's state after it.
    public var orderState: OrderState?
    public var explanation: String?
    public var flag: OrderFlag?

    public init(notificationID: Int64, verdict: Verdict, orderState: OrderState?, explanation: String?, flag: OrderFlag?) {
        self.notificationID = notificationID
        self.verdict = verdict
        self.orderState = orderState
        self.explanation = explanation
        self.flag = flag
    }
}
