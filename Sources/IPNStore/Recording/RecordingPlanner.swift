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

import Foundation
import IPNCore

/// The one decision of what a notification writes: dedup, the state machine, refunds, payment
/// links, the notifications waiting for a payment, and the order events with their deliveries.
/// Pure: it reads only the facts a backend gathered (`RecordingFacts`) and returns a
/// `WritePlan`, which the backend writes in the same transaction. Every backend calls it, so
/// the rules live here once.
public struct RecordingPlanner: Sendable {
    /// The commit's time (`Timestamp` text): `updated_at`, transitions and events.
    public let now: String
    /// The configured delivery targets' routes: each event gets a delivery per match.
    public let routes: [DeliveryRoute]
    /// When orders that have not settled are asked about (`reconcile`): a change starts it again.
    public let schedule: InquirySchedule

    public init(now: String, routes: [DeliveryRoute] = [], schedule: InquirySchedule = .standard) {
        self.now = now
        self.routes = routes
        self.schedule = schedule
    }

    /// The plan for a rejected request: its row, nothing else.
    public func plan(rejected request: ReceivedRequest, _ rejection: Rejection) -> WritePlan {
        var plan = WritePlan(outcome: RecordOutcome(notificationID: 0, verdict: .rejected, explanation: rejection.description))
        plan.notification = PlannedNotification(
            request: request, verdict: .rejected, reason: rejection.reason.rawValue, reasonDetail: rejection.detail,
            notification: nil, detailJSON: nil, order: .none, orderRef: nil)
        return plan
    }

    /// The plan for an authentic notification, from the facts `RecordingFacts.read` gathered.
    public func plan(
        verified request: ReceivedRequest, _ notification: VerifiedNotification, detailJSON: String?, facts: RecordingFacts
    ) -> WritePlan {
        let scope = Scope(provider: request.provider, account: request.account)
        if let first = facts.firstDelivery {
            var plan = WritePlan(outcome: RecordOutcome(
                notificationID: 0, verdict: .duplicate, orderState: first.orderState,
                orderRef: first.currentOrderRef ?? notification.orderRef))
            plan.notification = PlannedNotification(
                request: request, verdict: .duplicate, reason: nil,
                reasonDetail: "same dedup key as notification \(first.notificationID)", notification: notification,
                detailJSON: detailJSON, order: first.orderID.map(NotificationOrder.stored) ?? .none,
                orderRef: first.orderRef ?? notification.orderRef)
            return plan
        }

        if case .link(let key) = FactsReading.orderLookup(notification), facts.order == nil {
            var plan = WritePlan(outcome: RecordOutcome(
                notificationID: 0, verdict: .unlinked, explanation: "waiting for payment \(key)"))
            plan.notification = PlannedNotification(
                request: request, verdict: .unlinked, reason: nil,
                reasonDetail: "no payment with id \(key) yet; applied when it arrives", notification: notification,
                detailJSON: detailJSON, order: .none, orderRef: notification.orderRef,
                pendingEffect: (try? JSONEncoder().encode(notification)).map { String(decoding: $0, as: UTF8.self) })
            plan.dedupKey = notification.dedupKey
            return plan
        }

        var working = Working(scope: scope, order: facts.order)
        let decision = apply(notification, cause: .planned, to: &working)
        var plan = WritePlan(outcome: RecordOutcome(notificationID: 0, verdict: decision.verdict))
        plan.notification = PlannedNotification(
            request: request, verdict: decision.verdict, reason: decision.reason ?? decision.flag?.rawValue,
            reasonDetail: decision.explanation, notification: notification, detailJSON: detailJSON,
            order: working.order == nil ? .none : .planned, orderRef: working.order?.order.orderRef ?? notification.orderRef)
        plan.dedupKey = notification.dedupKey

        var linked: [LinkedNotification] = []
        if let key = FactsReading.registeredLink(notification), working.order != nil, !facts.linkRegistered {
            plan.linkToRegister = key
            linked = applyWaiting(facts.waiting, key: key, to: &working, updates: &plan)
        }
        finish(&plan, working: working, original: facts.order?.order)
        plan.outcome = RecordOutcome(
            notificationID: 0, verdict: decision.verdict, orderState: working.order?.order.state,
            orderRef: working.order?.order.orderRef ?? notification.orderRef, explanation: decision.explanation,
            flag: decision.flag, linked: linked, eventsWritten: plan.events.count)
        return plan
    }

    /// The plan for registering the amount and currency `orderRef` must be paid with; `order`
    /// is the order as stored, nil when it is not known yet (it is then created, `expected`).
    public func plan(expectation amount: Money, scope: Scope, orderRef: String, order: StoredOrder?) -> (WritePlan, ExpectationOutcome) {
        guard let existing = order else {
            let created = StoredOrder(
                id: nil, scope: scope, orderRef: orderRef, state: .expected, amount: nil, refundedMinor: 0,
                expected: amount, flags: [], providerTxnID: nil, createdAt: now, updatedAt: now)
            var working = Working(scope: scope, order: OrderFacts(order: created, hasTransitions: false))
            var plan = WritePlan(outcome: RecordOutcome(notificationID: 0, verdict: .recorded))
            working.transitions.append(PlannedTransition(from: nil, to: .expected, cause: .none))
            working.order?.hasTransitions = true
            working.events.append(event(.stateChanged, from: nil, to: .expected, flag: nil, cause: .none, providerStatus: nil, working))
            finish(&plan, working: working, original: nil, changed: true)
            return (plan, ExpectationOutcome(state: .expected, mismatch: nil))
        }
        // Judged against the order as it was: the expectation is what is being checked.
        let mismatch = OrderStateMachine.expectationConflict(order: existing.snapshot, expected: amount)
        var updated = existing
        updated.expected = amount
        updated.updatedAt = now
        var working = Working(scope: scope, order: OrderFacts(order: updated))
        var plan = WritePlan(outcome: RecordOutcome(notificationID: 0, verdict: .recorded))
        if mismatch != nil, raise(.amountMismatch, on: &working) {
            let state = updated.state
            working.events.append(event(.flagged, from: state, to: state, flag: OrderFlag.amountMismatch.rawValue, cause: .none,
                                        providerStatus: nil, working))
        }
        // An expectation registered is a change: the inquiry schedule counts from it.
        finish(&plan, working: working, original: existing, changed: true)
        return (plan, ExpectationOutcome(state: updated.state, mismatch: mismatch))
    }

    /// The plan for giving up on `order` (reconciliation's last step came to nothing): flagged
    /// `unsettled`, with an `order.flagged` event when the flag is new, and no longer scheduled.
    public func plan(giveUp order: StoredOrder) -> WritePlan {
        var updated = order
        updated.inquiry.dueAt = nil
        var working = Working(scope: order.scope, order: OrderFacts(order: updated))
        var plan = WritePlan(outcome: RecordOutcome(notificationID: 0, verdict: .recorded, orderState: order.state, orderRef: order.orderRef))
        if raise(.unsettled, on: &working) {
            working.events.append(event(.flagged, from: order.state, to: order.state, flag: OrderFlag.unsettled.rawValue, cause: .none,
                                        providerStatus: nil, working))
        }
        finish(&plan, working: working, original: order)
        plan.outcome.flag = plan.events.isEmpty ? nil : .unsettled
        plan.outcome.eventsWritten = plan.events.count
        return plan
    }

    // MARK: Applying

    /// The order as the plan has it so far, with the events written so far.
    private struct Working {
        let scope: Scope
        var order: OrderFacts?
        var transitions: [PlannedTransition] = []
        var refunds: [PlannedRefund] = []
        var events: [PlannedEvent] = []

        init(scope: Scope, order: OrderFacts?) {
            self.scope = scope
            self.order = order
        }
    }

    /// Decides and applies `notification` to the working order (creating it when needed).
    private func apply(_ notification: VerifiedNotification, cause: Cause, to working: inout Working) -> Decision {
        var refundCounted = false
        var refundsRecorded: Int64 = 0
        if case .refund(let info) = notification.effect, let existing = working.order {
            // The order's refunds: whether this one is among them, and their sum (added up
            // here, saturating, rather than failing on overflow).
            for refund in existing.refunds {
                if let refundID = info.refundID, refund.refundID == refundID { refundCounted = true }
                guard let amount = refund.amountMinor else { continue }
                let (sum, overflow) = refundsRecorded.addingReportingOverflow(amount)
                refundsRecorded = overflow ? .max : sum
            }
        }
        var snapshot = working.order?.order.snapshot
        if let existing = working.order, existing.order.state == .pending {
            // Only notifications with no state effect may have named it so far (see below).
            snapshot?.hasTransitions = existing.hasTransitions
        }
        if let existing = working.order, existing.order.amount == nil, existing.order.refundedMinor > 0 {
            // Refunds came first: their currency is the order's until a payment says otherwise.
            snapshot?.refundCurrency = existing.refundCurrency
        }
        let decision = OrderStateMachine.decide(
            order: snapshot, notification: notification, refundAlreadyCounted: refundCounted,
            refundsRecordedMinor: refundsRecorded)

        // The first transition is from null (product.md section 1), also for an order that
        // notifications with no state effect created.
        let previousState = snapshot?.hasTransitions == false ? nil : working.order?.order.state
        let txnID = notification.describesThePayment ? notification.providerTxnID : nil
        if var existing = working.order, decision.newState != nil || decision.orderAmount != nil || decision.refundedMinor != nil {
            // A transition, or facts a late notification still tells (the amount, the total).
            if let newState = decision.newState {
                existing.order.state = newState
                // Settled: reconciliation's give-up no longer stands.
                if newState.isSettled { existing.order.flags.removeAll { $0 == OrderFlag.unsettled.rawValue } }
            }
            if let amount = decision.orderAmount { existing.order.amount = amount }
            if let refunded = decision.refundedMinor { existing.order.refundedMinor = refunded }
            // The payment's own id: payments set it; a capture's id only fills it when unknown.
            if let txnID, existing.order.providerTxnID == nil || notification.kind == .payment {
                existing.order.providerTxnID = txnID
            }
            existing.order.updatedAt = now
            working.order = existing
        } else if working.order == nil, let newState = decision.newState, let orderRef = notification.orderRef {
            working.order = OrderFacts(
                order: newOrder(working.scope, orderRef, state: newState, amount: decision.orderAmount,
                                refundedMinor: decision.refundedMinor ?? 0, providerTxnID: txnID ?? notification.providerTxnID),
                hasTransitions: false)
        } else if working.order == nil, let orderRef = notification.orderRef {
            // A notification that names an unknown order creates it whatever its kind
            // (product.md section 5). One with no state effect (a payout, a chargeback stage,
            // an unknown status) says nothing settled about the payment and causes no
            // transition (providers.md): the order shows `pending` (`expected` is only for
            // orders known from an expectation alone) with no transition yet, and the first
            // notification that moves it, `pending` included, is applied from null.
            working.order = OrderFacts(
                order: newOrder(working.scope, orderRef, state: .pending,
                                amount: notification.describesThePayment ? notification.amount : nil, refundedMinor: 0,
                                providerTxnID: txnID),
                hasTransitions: false)
        }
        let newlyFlagged = decision.flag.map { raise($0, on: &working) } ?? false
        if let newState = decision.newState, working.order != nil {
            working.transitions.append(PlannedTransition(from: previousState, to: newState, cause: cause))
            working.order?.hasTransitions = true
        }
        // Every authentic refund of the order's currency is remembered by id, a stale one too:
        // its amount counts in the sum a refund arriving later is checked against.
        if case .refund(let info) = notification.effect, let refundID = info.refundID, let order = working.order,
           decision.verdict == .applied || decision.verdict == .stale,
           !order.refunds.contains(where: { $0.refundID == refundID }) {
            working.order?.refunds.append(StoredRefund(refundID: refundID, amountMinor: info.amount?.minor))
            working.refunds.append(PlannedRefund(refundID: refundID, amountMinor: info.amount?.minor, cause: cause))
        }
        if decision.verdict == .applied, notification.kind == .refund, let currency = notification.amount?.currency,
           working.order?.refundCurrency == nil {
            working.order?.refundCurrency = currency
        }
        // The events, with the order as this notification left it: the transition first.
        if let newState = decision.newState, working.order != nil {
            working.events.append(event(.stateChanged, from: previousState, to: newState, flag: nil, cause: cause,
                                        providerStatus: notification.providerStatus, working))
        }
        if newlyFlagged, let flag = decision.flag, let state = working.order?.order.state {
            working.events.append(event(.flagged, from: state, to: state, flag: flag.rawValue, cause: cause,
                                        providerStatus: notification.providerStatus, working))
        }
        return decision
    }

    /// Applies, in arrival order, the captures and refunds that waited for payment `key`.
    private func applyWaiting(
        _ waiting: [WaitingNotification], key: String, to working: inout Working, updates plan: inout WritePlan
    ) -> [LinkedNotification] {
        // Redeliveries of the waiting notifications were stored as duplicates with no order:
        // they belong to this one as well. Only a waiting notification has such redeliveries.
        if !waiting.isEmpty { plan.adoptWaitingDuplicates = key }
        var linked: [LinkedNotification] = []
        for row in waiting {
            // One waiting row that cannot be read (stored by another version) must not stop the
            // payment from being recorded: it stays unlinked, saying why, for people to look at.
            guard let json = row.pendingEffect,
                  let notification = try? JSONDecoder().decode(VerifiedNotification.self, from: Data(json.utf8)) else {
                plan.waitingUpdates.append(.unreadable(
                    id: row.id, reasonDetail: "payment \(key) arrived, but this notification's stored effect cannot be read; not applied"))
                continue
            }
            let decision = apply(notification, cause: .stored(row.id), to: &working)
            let explanation = decision.explanation ?? "linked to payment \(key)"
            plan.waitingUpdates.append(.applied(
                id: row.id, verdict: decision.verdict, reason: decision.reason ?? decision.flag?.rawValue, reasonDetail: explanation))
            linked.append(LinkedNotification(
                notificationID: row.id, verdict: decision.verdict, orderState: working.order?.order.state,
                explanation: explanation, flag: decision.flag))
        }
        return linked
    }

    /// Raises `flag` on the working order, once; true when it was not raised before.
    private func raise(_ flag: OrderFlag, on working: inout Working) -> Bool {
        guard var order = working.order, !order.order.flags.contains(flag.rawValue) else { return false }
        order.order.flags.append(flag.rawValue)
        order.order.updatedAt = now
        working.order = order
        return true
    }

    /// The inquiry schedule counted from a change made now to an order in `state`.
    private func scheduleFromNow(for state: OrderState) -> InquiryScheduleState {
        guard !state.isSettled, let nowMillis = Timestamp.parse(now) else { return InquiryScheduleState() }
        switch schedule.first(changedAt: nowMillis) {
        case .ask(let at, let step):
            return InquiryScheduleState(from: now, step: step, dueAt: Timestamp.format(epochMilliseconds: at))
        case .giveUp:
            return InquiryScheduleState(from: now)
        }
    }

    private func newOrder(
        _ scope: Scope, _ orderRef: String, state: OrderState, amount: Money?, refundedMinor: Int64, providerTxnID: String?
    ) -> StoredOrder {
        StoredOrder(
            id: nil, scope: scope, orderRef: orderRef, state: state, amount: amount, refundedMinor: refundedMinor,
            expected: nil, flags: [], providerTxnID: providerTxnID, createdAt: now, updatedAt: now)
    }

    private func event(
        _ type: EventType, from: OrderState?, to: OrderState, flag: String?, cause: Cause, providerStatus: String?,
        _ working: Working
    ) -> PlannedEvent {
        let scope = working.scope
        return PlannedEvent(
            type: type, from: from, to: to, flag: flag, cause: cause, providerStatus: providerStatus,
            orderJSON: working.order?.order.jsonText ?? "null",
            routes: routes.filter { $0.matches(type: type, provider: scope.provider, account: scope.account) }.map(\.name))
    }

    /// Moves the working order's rows into the plan: the order (inserted when new, updated when
    /// changed), its transitions, refunds and events. A new order, a transition or an
    /// expectation (`changed`) starts the order's inquiry schedule again from now.
    private func finish(_ plan: inout WritePlan, working: Working, original: StoredOrder?, changed: Bool = false) {
        var final = working.order
        if var order = working.order?.order {
            if changed || order.id == nil || !working.transitions.isEmpty {
                order.inquiry = scheduleFromNow(for: order.state)
                final?.order = order
            }
            if order.id == nil {
                plan.order = .insert(order)
            } else if order != original {
                plan.order = .update(order)
            } else {
                plan.order = .unchanged(order)
            }
        }
        plan.transitions = working.transitions
        plan.refunds = working.refunds
        plan.events = working.events
        plan.finalOrder = final
    }
}
