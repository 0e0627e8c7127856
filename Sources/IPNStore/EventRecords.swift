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

/// The kinds of order event (product.md section 8).
public enum EventType: String, Sendable, CaseIterable, Codable {
    /// An applied transition, the first one (from null) included.
    case stateChanged = "order.state_changed"
    /// A flag newly raised on an order.
    case flagged = "order.flagged"
}

/// One order event as stored: what changed, and the order as it stood right after.
public struct EventRecord: Sendable, Equatable {
    /// Increasing in commit order; no reader sees a smaller one appear after a larger one.
    public var seq: Int64
    /// Unique across stores (a UUID), fixed for the event's life: the `webhook-id`.
    public var id: String
    public var type: EventType
    /// When the change was committed (`Timestamp` text).
    public var occurredAt: String
    public var provider: String
    public var account: String
    public var orderRef: String
    /// The orders-list object of the order right after this event, as JSON text.
    public var orderJSON: String
    /// The state before the change (null for an order's first transition); for a flag, the
    /// order's state.
    public var from: OrderState?
    public var to: OrderState
    /// The flag raised, for `order.flagged`.
    public var flag: String?
    /// The notification that caused the event; nil for a registered expectation.
    public var notificationID: Int64?
    /// That notification's provider status.
    public var providerStatus: String?

    public init(
        seq: Int64, id: String, type: EventType, occurredAt: String, provider: String, account: String, orderRef: String,
        orderJSON: String, from: OrderState?, to: OrderState, flag: String?, notificationID: Int64?, providerStatus: String?
    ) {
        self.seq = seq
        self.id = id
        self.type = type
        self.occurredAt = occurredAt
        self.provider = provider
        self.account = account
        self.orderRef = orderRef
        self.orderJSON = orderJSON
        self.from = from
        self.to = to
        self.flag = flag
        self.notificationID = notificationID
        self.providerStatus = providerStatus
    }
}

/// Which events to read: those after a seq, ascending.
public struct EventFilter: Sendable, Equatable {
    /// Events with a greater seq (0: from the first).
    public var after: Int64
    public var limit: Int
    public var provider: String?
    public var account: String?
    public var type: EventType?

    public init(after: Int64 = 0, limit: Int = 100, provider: String? = nil, account: String? = nil, type: EventType? = nil) {
        self.after = after
        self.limit = limit
        self.provider = provider
        self.account = account
        self.type = type
    }

    /// Whether the filter passes every event.
    public var isUnfiltered: Bool { provider == nil && account == nil && type == nil }
}

/// One page of the feed.
public struct EventPage: Sendable, Equatable {
    public var events: [EventRecord]
    /// The highest seq examined (filters included): the next page's `after`.
    public var nextAfter: Int64
    /// Set when `after` is older than the oldest event kept (retention removed events the
    /// reader has not seen): the oldest seq still readable. `events` is then empty.
    public var oldestSeq: Int64?

    public init(events: [EventRecord], nextAfter: Int64, oldestSeq: Int64? = nil) {
        self.events = events
        self.nextAfter = nextAfter
        self.oldestSeq = oldestSeq
    }
}

/// Where a delivery stands.
public enum DeliveryState: String, Sendable, CaseIterable, Codable {
    /// Not delivered yet: waiting for its next attempt (or in flight).
    case pending
    case delivered
    /// Given up three days after its first attempt; `deliveries retry` puts it back.
    case failed
    /// Pending, but its target answered 410 and waits for `deliveries resume`.
    case paused
}

/// One event owed to one delivery target.
public struct DeliveryRecord: Sendable, Equatable {
    public var id: Int64
    public var target: String
    public var eventID: String
    public var seq: Int64
    public var type: EventType
    public var provider: String
    public var account: String
    public var orderRef: String
    public var state: DeliveryState
    public var attempts: Int
    public var lastAttemptAt: String?
    /// The HTTP status of the last attempt; nil when it got none (a timeout, a refused connection).
    public var lastStatus: Int?
    public var lastError: String?
    public var nextAttemptAt: String?
    public var deliveredAt: String?
    public var createdAt: String

    public init(
        id: Int64, target: String, eventID: String, seq: Int64, type: EventType, provider: String, account: String,
        orderRef: String, state: DeliveryState, attempts: Int, lastAttemptAt: String?, lastStatus: Int?,
        lastError: String?, nextAttemptAt: String?, deliveredAt: String?, createdAt: String
    ) {
        self.id = id
        self.target = target
        self.eventID = eventID
        self.seq = seq
        self.type = type
        self.provider = provider
        self.account = account
        self.orderRef = orderRef
        self.state = state
        self.attempts = attempts
        self.lastAttemptAt = lastAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
        self.deliveredAt = deliveredAt
        self.createdAt = createdAt
    }
}

/// Which deliveries to list, newest first.
public struct DeliveryFilter: Sendable, Equatable {
    public var target: String?
    public var state: DeliveryState?
    /// Deliveries created at or after this `Timestamp` text.
    public var since: String?
    public var limit: Int
    public var beforeID: Int64?

    public init(target: String? = nil, state: DeliveryState? = nil, since: String? = nil, limit: Int = 100, beforeID: Int64? = nil) {
        self.target = target
        self.state = state
        self.since = since
        self.limit = limit
        self.beforeID = beforeID
    }
}

/// Which deliveries `deliveries retry` puts back to pending.
public enum DeliveryRetrySelection: Sendable, Equatable {
    case ids([Int64])
    /// A target's deliveries in `state` (failed), created at or after `since`.
    case target(String, state: DeliveryState, since: String?)
}

/// Where a configured target sends, and which events it takes; the write path creates one
/// pending delivery per matching target with each event.
public struct DeliveryRoute: Sendable, Equatable {
    public var name: String
    /// nil: every type.
    public var types: Set<EventType>?
    public var providers: Set<String>?
    public var accounts: Set<String>?

    public init(name: String, types: Set<EventType>? = nil, providers: Set<String>? = nil, accounts: Set<String>? = nil) {
        self.name = name
        self.types = types
        self.providers = providers
        self.accounts = accounts
    }

    public func matches(type: EventType, provider: String, account: String) -> Bool {
        (types?.contains(type) ?? true) && (providers?.contains(provider) ?? true) && (accounts?.contains(account) ?? true)
    }
}
