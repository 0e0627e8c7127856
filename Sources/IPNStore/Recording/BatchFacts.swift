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

/// The facts of a whole batch of notifications, read from the store at once before the batch is
/// planned, and kept current as each plan is applied, so that a notification sees what the ones
/// before it in the batch wrote. A backend that cannot afford a round trip per fact
/// (PostgreSQL) reads what `FactsNeeded` lists, fills this in, then plans the batch's entries
/// in order through it; the rules stay in `RecordingPlanner`.
///
/// Asked for something that was not read, it throws `BatchFacts.NotRead`: the batch fails as a
/// whole rather than plan from a guess.
public final class BatchFacts: FactsReader {
    /// A dedup key's first notification.
    public struct FirstRow: Sendable, Equatable {
        public var notificationID: Int64
        /// The order reference stored on that notification row.
        public var storedOrderRef: String?
        public var orderID: Int64?
        /// The order's reference and state as read (the batch's own changes win over these).
        public var currentOrderRef: String?
        public var orderState: OrderState?

        public init(notificationID: Int64, storedOrderRef: String?, orderID: Int64?, currentOrderRef: String?, orderState: OrderState?) {
            self.notificationID = notificationID
            self.storedOrderRef = storedOrderRef
            self.orderID = orderID
            self.currentOrderRef = currentOrderRef
            self.orderState = orderState
        }
    }

    /// A fact the backend did not read: a bug in `FactsNeeded` or the backend.
    public struct NotRead: Error, CustomStringConvertible {
        public let description: String
    }

    private struct Key: Hashable {
        let scope: Scope
        let value: String
    }

    // What the backend read; nil values mean "read, and absent".
    private var firsts: [Key: FirstRow?] = [:]
    private var orderIDs: [Key: Int64?] = [:]
    private var orders: [Int64: StoredOrder] = [:]
    private var links: [Key: Int64?] = [:]
    private var waiting: [Key: [WaitingNotification]] = [:]
    private var refundLists: [Int64: [StoredRefund]] = [:]
    private var transitionsKnown: [Int64: Bool] = [:]
    private var refundCurrencies: [Int64: String?] = [:]

    public init() {}

    // MARK: Filling in what was read

    public func setFirst(_ row: FirstRow?, scope: Scope, dedupKey: String) { firsts[Key(scope: scope, value: dedupKey)] = .some(row) }

    public func setOrder(_ order: StoredOrder?, scope: Scope, orderRef: String) {
        orderIDs[Key(scope: scope, value: orderRef)] = .some(order?.id)
        if let order, let id = order.id { orders[id] = order }
    }

    public func setOrder(_ order: StoredOrder) {
        guard let id = order.id else { return }
        orders[id] = order
        orderIDs[Key(scope: order.scope, value: order.orderRef)] = .some(id)
    }

    public func setLink(_ orderID: Int64?, scope: Scope, linkKey: String) { links[Key(scope: scope, value: linkKey)] = .some(orderID) }

    public func setWaiting(_ rows: [WaitingNotification], scope: Scope, linkKey: String) { waiting[Key(scope: scope, value: linkKey)] = rows }

    public func setRefunds(_ refunds: [StoredRefund], orderID: Int64) { refundLists[orderID] = refunds }

    public func setHasTransitions(_ value: Bool, orderID: Int64) { transitionsKnown[orderID] = value }

    public func setRefundCurrency(_ currency: String?, orderID: Int64) { refundCurrencies[orderID] = .some(currency) }

    /// The orders read so far (to read their dependent facts).
    public var readOrders: [StoredOrder] { Array(orders.values) }

    // MARK: FactsReader

    public func firstDelivery(scope: Scope, dedupKey: String) throws -> FirstDelivery? {
        guard let entry = firsts[Key(scope: scope, value: dedupKey)] else { throw NotRead(description: "dedup key \(dedupKey)") }
        guard let row = entry else { return nil }
        var currentRef = row.currentOrderRef
        var state = row.orderState
        if let id = row.orderID, let order = orders[id] {
            currentRef = order.orderRef
            state = order.state
        }
        return FirstDelivery(
            notificationID: row.notificationID, orderRef: currentRef ?? row.storedOrderRef, orderID: row.orderID,
            currentOrderRef: currentRef, orderState: state)
    }

    public func order(scope: Scope, orderRef: String) throws -> StoredOrder? {
        guard let entry = orderIDs[Key(scope: scope, value: orderRef)] else { throw NotRead(description: "order \(orderRef)") }
        guard let id = entry else { return nil }
        guard let order = orders[id] else { throw NotRead(description: "order \(id)") }
        return order
    }

    public func linkedOrder(scope: Scope, linkKey: String) throws -> StoredOrder? {
        guard let entry = links[Key(scope: scope, value: linkKey)] else { throw NotRead(description: "payment link \(linkKey)") }
        guard let id = entry else { return nil }
        guard let order = orders[id] else { throw NotRead(description: "linked order \(id)") }
        return order
    }

    public func linkExists(scope: Scope, linkKey: String) throws -> Bool {
        guard let entry = links[Key(scope: scope, value: linkKey)] else { throw NotRead(description: "payment link \(linkKey)") }
        return entry != nil
    }

    public func waitingNotifications(scope: Scope, linkKey: String) throws -> [WaitingNotification] {
        guard let rows = waiting[Key(scope: scope, value: linkKey)] else { throw NotRead(description: "waiting notifications of \(linkKey)") }
        return rows
    }

    public func refunds(orderID: Int64) throws -> [StoredRefund] {
        guard let refunds = refundLists[orderID] else { throw NotRead(description: "refunds of order \(orderID)") }
        return refunds
    }

    public func hasTransitions(orderID: Int64) throws -> Bool {
        guard let value = transitionsKnown[orderID] else { throw NotRead(description: "transitions of order \(orderID)") }
        return value
    }

    public func refundCurrency(orderID: Int64) throws -> String? {
        guard let entry = refundCurrencies[orderID] else { throw NotRead(description: "refund currency of order \(orderID)") }
        return entry
    }

    // MARK: Applying a plan

    /// Records what `plan` wrote, with the ids the backend gave its notification and its order,
    /// so that the batch's later entries read it.
    public func apply(_ plan: WritePlan, notificationID: Int64?, orderID: Int64?) {
        var isNew = false
        if let write = plan.order, let orderID {
            var order = write.order
            order.id = orderID
            if case .insert = write { isNew = true }
            setOrder(order)
            if let final = plan.finalOrder {
                transitionsKnown[orderID] = final.hasTransitions
                refundCurrencies[orderID] = .some(final.refundCurrency)
                if isNew || refundLists[orderID] != nil { refundLists[orderID] = final.refunds }
            } else if isNew {
                transitionsKnown[orderID] = !plan.transitions.isEmpty
                refundLists[orderID] = []
                refundCurrencies[orderID] = .some(nil)
            }
        }
        guard let planned = plan.notification else { return }
        let scope = Scope(provider: planned.request.provider, account: planned.request.account)
        if let key = plan.dedupKey, let notificationID {
            let notificationOrder: Int64? = switch planned.order {
            case .none: nil
            case .stored(let id): id
            case .planned: orderID
            }
            firsts[Key(scope: scope, value: key)] = .some(FirstRow(
                notificationID: notificationID, storedOrderRef: planned.orderRef, orderID: notificationOrder,
                currentOrderRef: nil, orderState: nil))
        }
        if let key = plan.linkToRegister, let orderID {
            links[Key(scope: scope, value: key)] = .some(orderID)
            waiting[Key(scope: scope, value: key)] = []
        }
        if let orderID, let order = plan.order?.order {
            for update in plan.waitingUpdates {
                guard case .applied(let id, _, _, _) = update else { continue }
                // The waiting notification is its dedup key's first row: it now has the order.
                for (key, entry) in firsts {
                    guard let row = entry, row.notificationID == id else { continue }
                    firsts[key] = .some(FirstRow(
                        notificationID: id, storedOrderRef: order.orderRef, orderID: orderID, currentOrderRef: nil, orderState: nil))
                }
            }
        }
        if planned.verdict == .unlinked, let link = planned.notification?.link, let notificationID {
            let key = Key(scope: scope, value: link.key)
            waiting[key, default: []].append(WaitingNotification(id: notificationID, pendingEffect: planned.pendingEffect))
        }
    }
}

/// What a batch's facts are read from: every key its entries look up, worked out before any is
/// planned. Then, for every order read (by reference or through a link): its refunds, whether
/// it has a transition (when `pending`) and its refunds' currency (when its amount is unknown),
/// which is all `RecordingFacts.read` may ask of an order the batch did not create.
public struct FactsNeeded: Sendable {
    public var dedupKeys: Set<ScopedKey> = []
    public var orderRefs: Set<ScopedKey> = []
    public var linkKeys: Set<ScopedKey> = []
    /// Links whose waiting notifications are read (payments registering them).
    public var waitingLinks: Set<ScopedKey> = []

    /// A key within a provider account.
    public struct ScopedKey: Hashable, Sendable {
        public let scope: Scope
        public let key: String

        public init(scope: Scope, key: String) {
            self.scope = scope
            self.key = key
        }
    }

    public init() {}

    /// Adds what `entry` reads.
    public mutating func add(_ entry: InboxEntry) {
        guard case .verified(let request, let notification) = entry else { return }
        let scope = Scope(provider: request.provider, account: request.account)
        dedupKeys.insert(ScopedKey(scope: scope, key: notification.dedupKey))
        switch FactsReading.orderLookup(notification) {
        case .reference(let ref): orderRefs.insert(ScopedKey(scope: scope, key: ref))
        case .link(let key): linkKeys.insert(ScopedKey(scope: scope, key: key))
        case .none: break
        }
        if let key = FactsReading.registeredLink(notification) {
            linkKeys.insert(ScopedKey(scope: scope, key: key))
            waitingLinks.insert(ScopedKey(scope: scope, key: key))
        }
    }

    /// Adds what registering an expectation for `orderRef` reads.
    public mutating func addExpectation(scope: Scope, orderRef: String) {
        orderRefs.insert(ScopedKey(scope: scope, key: orderRef))
    }
}
