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

/// Where the rows of a plan go: a backend's write transaction. SQLite runs each row's statement
/// as it comes; PostgreSQL collects a batch's rows and writes them with a few statements.
public protocol RowWriter {
    /// Writes a new order and returns its id.
    func insertOrder(_ row: OrderRow) throws -> Int64
    /// Writes a notification and returns its id.
    func insertNotification(_ row: NotificationRow) throws -> Int64
    /// Writes an order event with its deliveries (at once, or once the event has its seq).
    func insertEvent(_ row: EventRow) throws
    /// Applies a notification that waited for its payment.
    func applyWaiting(_ row: WaitingAppliedRow) throws
    /// Writes any other row.
    func write<Row: StoreRow>(_ row: Row) throws
}

/// One write transaction as the recording routines see it: the facts as it reads them (its
/// own writes included), the planner with its time, routes and schedule, and its rows.
public protocol RecordingSession: RowWriter {
    associatedtype Facts: FactsReader
    var facts: Facts { get }
    var planner: RecordingPlanner { get }
    /// The transaction's time (`Timestamp` text): the planner's `now`.
    var now: String { get }
    /// An id for the inquiry being recorded (its notifications name it before its row is written).
    func nextInquiryID() throws -> Int64
    /// Told after each plan's rows are written, with the ids they got.
    func wrote(_ plan: WritePlan, notificationID: Int64?, orderID: Int64?)
}

extension RecordingSession {
    public var now: String { planner.now }
    public func wrote(_ plan: WritePlan, notificationID: Int64?, orderID: Int64?) {}
}

/// An entry, with what needs no database worked out before the write transaction: the
/// verified notification's details as JSON text.
public struct PreparedEntry: Sendable {
    public let entry: InboxEntry
    /// The verified notification's `detail` as a JSON object, nil when it has none.
    public let detailJSON: String?

    public init(_ entry: InboxEntry) {
        self.entry = entry
        if case .verified(_, let notification) = entry, !notification.detail.isEmpty {
            detailJSON = JSONText.object(notification.detail)
        } else {
            detailJSON = nil
        }
    }
}

/// Everything after the planner, once for every backend: a plan turned into rows, in the order
/// their references need, and the routines that record a notification, an expectation, an
/// inquiry and a give-up inside a backend's write transaction. The per-notification ones are
/// `@inlinable`: each backend's compiler specializes them for its session (SQLite's write path
/// counts instructions).
public enum Recording {
    /// The plan for `entry`, from the facts as `session` reads them; writes nothing.
    @inlinable
    public static func plan(_ prepared: PreparedEntry, in session: some RecordingSession) throws -> WritePlan {
        let planner = session.planner
        switch prepared.entry {
        case .rejected(let request, let rejection):
            return planner.plan(rejected: request, rejection)
        case .verified(let request, let notification):
            let scope = Scope(provider: request.provider, account: request.account)
            let facts = try RecordingFacts.read(for: notification, scope: scope, from: session.facts)
            return planner.plan(verified: request, notification, detailJSON: prepared.detailJSON, facts: facts)
        }
    }

    /// Records `entry`: plans it and writes the plan.
    @inlinable
    public static func record(_ prepared: PreparedEntry, in session: some RecordingSession) throws -> RecordOutcome {
        try write(plan(prepared, in: session), in: session)
    }

    /// Registers the amount and currency `orderRef` must be paid with.
    @inlinable
    public static func setExpectation(_ amount: Money, scope: Scope, orderRef: String, in session: some RecordingSession) throws
        -> ExpectationOutcome
    {
        let order = try session.facts.order(scope: scope, orderRef: orderRef)
        let (plan, outcome) = session.planner.plan(expectation: amount, scope: scope, orderRef: orderRef, order: order)
        _ = try write(plan, in: session)
        return outcome
    }

    /// Writes `plan`'s rows: the order, the notification, then the rows that name them. Returns
    /// the plan's outcome with the notification's id.
    @inlinable
    public static func write(_ plan: WritePlan, in session: some RecordingSession) throws -> RecordOutcome {
        let now = session.now
        var orderID: Int64?
        switch plan.order {
        case .insert(let order)?:
            orderID = try session.insertOrder(OrderRow(id: nil, order: order))
        case .update(let order)?:
            guard let id = order.id else { throw StoreError(message: "an order to update has no id") }
            try session.write(OrderUpdateRow(id: id, order: order))
            orderID = id
        case .unchanged(let order)?:
            guard let id = order.id else { throw StoreError(message: "an order left unchanged has no id") }
            orderID = id
        case nil:
            break
        }
        var notificationID: Int64?
        if let planned = plan.notification {
            let linkedOrder: Int64? = switch planned.order {
            case .none: nil
            case .stored(let id): id
            case .planned: orderID
            }
            notificationID = try session.insertNotification(NotificationRow(id: nil, planned: planned, orderID: linkedOrder))
        }
        if let orderID {
            for transition in plan.transitions {
                try session.write(TransitionRow(
                    orderID: orderID, from: transition.from, to: transition.to, at: now,
                    notificationID: transition.cause.notificationID(planned: notificationID)))
            }
            for refund in plan.refunds {
                try session.write(RefundRow(
                    orderID: orderID, refundID: refund.refundID, amountMinor: refund.amountMinor,
                    notificationID: refund.cause.notificationID(planned: notificationID)))
            }
        }
        if let key = plan.dedupKey, let request = plan.notification?.request, let notificationID {
            try session.write(DedupKeyRow(scope: Scope(provider: request.provider, account: request.account), key: key,
                                          notificationID: notificationID))
        }
        if let order = plan.order?.order, let orderID {
            let scope = order.scope
            if let key = plan.linkToRegister { try session.write(LinkRow(scope: scope, key: key, orderID: orderID)) }
            if let key = plan.adoptWaitingDuplicates {
                try session.write(AdoptedDuplicatesRow(scope: scope, linkKey: key, orderID: orderID, orderRef: order.orderRef))
            }
            for update in plan.waitingUpdates {
                switch update {
                case .applied(let id, let verdict, let reason, let detail):
                    try session.applyWaiting(WaitingAppliedRow(
                        id: id, verdict: verdict, reason: reason, reasonDetail: detail, orderID: orderID, orderRef: order.orderRef))
                case .unreadable(let id, let detail):
                    try session.write(WaitingUnreadableRow(id: id, reasonDetail: detail))
                }
            }
            for event in plan.events {
                try session.insertEvent(EventRow(
                    id: EventID.next(), type: event.type, occurredAt: now, scope: scope, orderID: orderID, orderRef: order.orderRef,
                    orderJSON: event.orderJSON, from: event.from, to: event.to, flag: event.flag,
                    notificationID: event.cause.notificationID(planned: notificationID), providerStatus: event.providerStatus,
                    targets: event.routes))
            }
        }
        session.wrote(plan, notificationID: notificationID, orderID: orderID)
        var outcome = plan.outcome
        outcome.notificationID = notificationID ?? 0
        return outcome
    }

    // MARK: Reconciliation

    /// Records `inquiry`: each fact it told planned from the rows as the previous one left them
    /// and written only when `InquiryPlanning` says so, then the order's next step (or the
    /// give-up), then the inquiry's record. Returns the record and how many events were written.
    public static func recordInquiry(_ inquiry: CompletedInquiry, in session: some RecordingSession) throws
        -> (record: InquiryRecord, events: Int)
    {
        let inquiryID = try session.nextInquiryID()
        let order = try session.facts.order(scope: inquiry.scope, orderRef: inquiry.orderRef)
        var written: [RecordOutcome] = []
        var changed = false
        var events = 0
        if case .facts(let facts, let answer) = inquiry.result {
            for fact in facts {
                let request = ReceivedRequest(
                    provider: inquiry.scope.provider, account: inquiry.scope.account, receivedAt: session.now, clientIP: nil,
                    target: inquiry.url, headers: answer.headers, body: answer.body, inquiryID: inquiryID)
                let plan = try plan(PreparedEntry(.verified(request, fact)), in: session)
                guard InquiryPlanning.writes(plan, fact: fact) else { continue }
                if !plan.transitions.isEmpty { changed = true }
                let outcome = try write(plan, in: session)
                written.append(outcome)
                events += outcome.eventsWritten
            }
        }
        let after = try session.facts.order(scope: inquiry.scope, orderRef: inquiry.orderRef)
        switch InquiryPlanning.scheduleAction(inquiry, order: after, changed: changed, schedule: session.planner.schedule) {
        case .none:
            break
        case .next(let dueAt, let step):
            if let id = after?.id { try session.write(OrderScheduleRow(id: id, step: step, dueAt: dueAt)) }
        case .giveUp:
            if let after { events += try write(session.planner.plan(giveUp: after), in: session).eventsWritten }
        }
        let conclusion = InquiryPlanning.conclusion(inquiry.result, written: written)
        let record = InquiryRecord(
            id: inquiryID, provider: inquiry.scope.provider, account: inquiry.scope.account, orderRef: inquiry.orderRef,
            askedAt: inquiry.askedAt, trigger: inquiry.trigger, outcome: conclusion.outcome, httpStatus: inquiry.httpStatus,
            providerStatus: inquiry.providerStatus, notificationID: conclusion.notificationID, verdict: conclusion.verdict,
            error: conclusion.error, durationMs: inquiry.durationMs, url: inquiry.url)
        try session.write(InquiryRow(record: record, orderID: order?.id))
        return (record, events)
    }

    /// Gives up on the order `claim` holds, if it still does. Returns whether it did and how many
    /// events were written.
    public static func giveUp(_ claim: InquiryClaim, scope: Scope, orderRef: String, in session: some RecordingSession) throws
        -> (gaveUp: Bool, events: Int)
    {
        guard let order = try session.facts.order(scope: scope, orderRef: orderRef), InquiryPlanning.holds(claim, order: order) else {
            return (false, 0)
        }
        return (true, try write(session.planner.plan(giveUp: order), in: session).eventsWritten)
    }
}
