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

/// Everything one notification (or one expectation) writes, as `RecordingPlanner` decided it.
/// A backend writes it in this order, inside the transaction it read the facts in: the order,
/// the notification, then the rows that name them.
public struct WritePlan: Sendable {
    /// The order as the plan leaves it (the order the notification and the rows naming an
    /// order belong to); nil when there is none.
    public var order: OrderWrite?
    /// The notification row to insert; nil for an expectation.
    public var notification: PlannedNotification?
    /// Transitions of the plan's order, in the order they happened.
    public var transitions: [PlannedTransition] = []
    /// Refunds of the plan's order to remember by id (written only when not already there).
    public var refunds: [PlannedRefund] = []
    /// The dedup key to claim for the inserted notification.
    public var dedupKey: String?
    /// A payment link to register for the plan's order.
    public var linkToRegister: String?
    /// Redeliveries of notifications waiting under this link, stored as duplicates with no
    /// order: they now belong to the plan's order.
    public var adoptWaitingDuplicates: String?
    /// What the notifications that waited for this payment now are.
    public var waitingUpdates: [WaitingUpdate] = []
    /// The order events, in order; each is written with one pending delivery per route.
    public var events: [PlannedEvent] = []
    /// What recording concluded; its `notificationID` is the inserted row's, once written.
    public var outcome: RecordOutcome
    /// The order's facts as the plan leaves them (refunds, whether it has transitions, its
    /// refunds' currency): what a backend that plans several notifications from facts read at
    /// once carries over to the next (`BatchFacts`).
    public var finalOrder: OrderFacts?

    public init(outcome: RecordOutcome) {
        self.outcome = outcome
    }

    /// How many delivery rows the plan writes.
    public var deliveryCount: Int { events.reduce(0) { $0 + $1.routes.count } }
}

/// The order of a plan: a new row, an update of an existing one, or one left as it is.
public enum OrderWrite: Sendable, Equatable {
    case insert(StoredOrder)
    case update(StoredOrder)
    case unchanged(StoredOrder)

    public var order: StoredOrder {
        switch self {
        case .insert(let order), .update(let order), .unchanged(let order): order
        }
    }
}

/// Which notification caused a row the plan writes.
public enum Cause: Sendable, Equatable {
    /// The notification this plan inserts.
    case planned
    /// A notification already stored (one that waited for its payment).
    case stored(Int64)
    /// None: an expectation.
    case none

    /// The id of the notification that caused the row: `planned` when the plan's own
    /// notification did (nil until it is stored, or when the plan stores none).
    public func notificationID(planned: Int64?) -> Int64? {
        switch self {
        case .planned: planned
        case .stored(let id): id
        case .none: nil
        }
    }
}

/// The order a notification row names.
public enum NotificationOrder: Sendable, Equatable {
    case none
    /// An order already stored (a duplicate names its first delivery's order).
    case stored(Int64)
    /// The plan's own order.
    case planned
}

/// A notification row to insert.
public struct PlannedNotification: Sendable {
    public var request: ReceivedRequest
    public var verdict: Verdict
    /// The rejection reason, or the flag a verified notification raised.
    public var reason: String?
    public var reasonDetail: String?
    /// The verified notification's facts; nil for a rejected request.
    public var notification: VerifiedNotification?
    /// The verified notification's `detail` as a JSON object text.
    public var detailJSON: String?
    public var order: NotificationOrder
    /// The order reference to store with it.
    public var orderRef: String?
    /// For an `unlinked` notification: itself as JSON, applied when its payment arrives.
    public var pendingEffect: String?
}

public struct PlannedTransition: Sendable, Equatable {
    public var from: OrderState?
    public var to: OrderState
    public var cause: Cause
}

public struct PlannedRefund: Sendable, Equatable {
    public var refundID: String
    public var amountMinor: Int64?
    public var cause: Cause
}

/// What becomes of a notification that waited (`unlinked`) for its payment.
public enum WaitingUpdate: Sendable, Equatable {
    /// Applied to the plan's order with this verdict.
    case applied(id: Int64, verdict: Verdict, reason: String?, reasonDetail: String)
    /// Its stored effect cannot be read (another version stored it): it stays unlinked, saying why.
    case unreadable(id: Int64, reasonDetail: String)
}

/// An order event to write, with the targets it is owed to.
public struct PlannedEvent: Sendable, Equatable {
    public var type: EventType
    public var from: OrderState?
    public var to: OrderState
    public var flag: String?
    public var cause: Cause
    public var providerStatus: String?
    /// The plan's order right after this event, as the orders-list JSON object.
    public var orderJSON: String
    /// The delivery targets whose routes take this event.
    public var routes: [String]
}
