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

/// What the store holds that decides what one verified notification writes. A backend reads
/// it inside its write transaction, under its own locking, in the order `read(for:scope:from:)`
/// gives, and hands it to `RecordingPlanner`.
public struct RecordingFacts: Sendable, Equatable {
    /// The first authentic notification with the same dedup key, when there is one: the rest
    /// of the facts are then not read.
    public var firstDelivery: FirstDelivery?
    /// The order the notification names, by reference or through its payment link.
    public var order: OrderFacts?
    /// For a payment that registers a link: whether the link is registered already.
    public var linkRegistered: Bool
    /// For a payment whose link is new: the notifications waiting for it, oldest first.
    public var waiting: [WaitingNotification]

    public init(
        firstDelivery: FirstDelivery? = nil, order: OrderFacts? = nil, linkRegistered: Bool = false,
        waiting: [WaitingNotification] = []
    ) {
        self.firstDelivery = firstDelivery
        self.order = order
        self.linkRegistered = linkRegistered
        self.waiting = waiting
    }
}

/// An order with what the transition rule needs besides its row.
public struct OrderFacts: Sendable, Equatable {
    public var order: StoredOrder
    /// The order's refunds, when the notification (or one waiting for it) may be a refund.
    public var refunds: [StoredRefund]
    /// Whether the order has a transition yet (read for `pending` orders only: others have).
    public var hasTransitions: Bool
    /// The currency of the first applied refund, for an order whose amount is not known yet.
    public var refundCurrency: String?

    public init(order: StoredOrder, refunds: [StoredRefund] = [], hasTransitions: Bool = true, refundCurrency: String? = nil) {
        self.order = order
        self.refunds = refunds
        self.hasTransitions = hasTransitions
        self.refundCurrency = refundCurrency
    }
}

/// The reads the facts are made of, as a backend answers them inside its write transaction.
public protocol FactsReader {
    /// The first notification recorded with `dedupKey`, with its order as it is now.
    func firstDelivery(scope: Scope, dedupKey: String) throws -> FirstDelivery?
    func order(scope: Scope, orderRef: String) throws -> StoredOrder?
    /// The order a payment registered `linkKey` for.
    func linkedOrder(scope: Scope, linkKey: String) throws -> StoredOrder?
    func linkExists(scope: Scope, linkKey: String) throws -> Bool
    /// Notifications stored `unlinked` under `linkKey`, oldest first.
    func waitingNotifications(scope: Scope, linkKey: String) throws -> [WaitingNotification]
    func refunds(orderID: Int64) throws -> [StoredRefund]
    func hasTransitions(orderID: Int64) throws -> Bool
    /// The currency of an applied refund notification of the order, if any.
    func refundCurrency(orderID: Int64) throws -> String?
}

/// Which reads one notification's facts take: decided here, once, for every backend.
public enum FactsReading {
    /// How the notification finds its order.
    public enum OrderLookup: Sendable, Equatable {
        case reference(String)
        /// A capture or refund naming only a payment id.
        case link(String)
        case none
    }

    public static func orderLookup(_ notification: VerifiedNotification) -> OrderLookup {
        if let orderRef = notification.orderRef { return .reference(orderRef) }
        if case .requires(let key) = notification.link { return .link(key) }
        return .none
    }

    /// The link a payment registers, whose waiting notifications it may apply.
    public static func registeredLink(_ notification: VerifiedNotification) -> String? {
        if case .registers(let key) = notification.link { return key }
        return nil
    }

    /// Whether the order's refunds are read: the notification is a refund, or refunds may be
    /// waiting for it.
    public static func needsRefunds(_ notification: VerifiedNotification, waiting: [WaitingNotification]) -> Bool {
        if case .refund = notification.effect { return true }
        return !waiting.isEmpty
    }

    /// Only a `pending` order may have no transition yet (one that notifications with no state
    /// effect created).
    public static func needsTransitionCheck(_ order: StoredOrder) -> Bool { order.state == .pending }

    /// An order whose amount is not known takes its currency from its refunds.
    public static func needsRefundCurrency(_ order: StoredOrder) -> Bool { order.amount == nil }
}

extension RecordingFacts {
    /// Reads the facts of `notification` from `reader`, in the order `FactsReading` decides.
    public static func read(for notification: VerifiedNotification, scope: Scope, from reader: some FactsReader) throws
        -> RecordingFacts
    {
        if let first = try reader.firstDelivery(scope: scope, dedupKey: notification.dedupKey) {
            return RecordingFacts(firstDelivery: first)
        }
        var facts = RecordingFacts()
        let order: StoredOrder?
        switch FactsReading.orderLookup(notification) {
        case .reference(let orderRef): order = try reader.order(scope: scope, orderRef: orderRef)
        case .link(let key): order = try reader.linkedOrder(scope: scope, linkKey: key)
        case .none: order = nil
        }
        if let key = FactsReading.registeredLink(notification) {
            facts.linkRegistered = try reader.linkExists(scope: scope, linkKey: key)
            if !facts.linkRegistered { facts.waiting = try reader.waitingNotifications(scope: scope, linkKey: key) }
        }
        if let order, let id = order.id {
            facts.order = OrderFacts(
                order: order,
                refunds: FactsReading.needsRefunds(notification, waiting: facts.waiting) ? try reader.refunds(orderID: id) : [],
                hasTransitions: FactsReading.needsTransitionCheck(order) ? try reader.hasTransitions(orderID: id) : true,
                refundCurrency: FactsReading.needsRefundCurrency(order) ? try reader.refundCurrency(orderID: id) : nil)
        }
        return facts
    }
}
