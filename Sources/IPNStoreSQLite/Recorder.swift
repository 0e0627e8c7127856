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
import GRDB
import IPNCore
import IPNStore

/// The SQLite side of the one write path: reads a notification's facts inside the writer's
/// transaction, lets `RecordingPlanner` decide, and writes its plan. The rules are the
/// planner's; this file only reads and writes rows.
enum Recorder {
    static func record(_ prepared: PreparedEntry, in tx: WriteContext) throws -> RecordOutcome {
        try write(plan(prepared, in: tx), in: tx)
    }

    /// Reads the entry's facts and lets `RecordingPlanner` decide, writing nothing: inside the
    /// writer's transaction before `write`, or alone in a read transaction for a dry run.
    static func plan(_ prepared: PreparedEntry, in tx: WriteContext) throws -> WritePlan {
        let planner = tx.planner
        switch prepared.entry {
        case .rejected(let request, let rejection):
            return planner.plan(rejected: request, rejection)
        case .verified(let request, let notification):
            let scope = Scope(provider: request.provider, account: request.account)
            let facts = try RecordingFacts.read(for: notification, scope: scope, from: SQLiteFactsReader(tx: tx))
            return planner.plan(verified: request, notification, detailJSON: prepared.detailJSON, facts: facts)
        }
    }

    /// Registers the amount and currency `orderRef` must be paid with.
    static func setExpectation(_ amount: Money, scope: Scope, orderRef: String, in tx: WriteContext) throws -> ExpectationOutcome {
        let order = try SQLiteFactsReader(tx: tx).order(scope: scope, orderRef: orderRef)
        let (plan, outcome) = tx.planner.plan(expectation: amount, scope: scope, orderRef: orderRef, order: order)
        _ = try write(plan, in: tx)
        return outcome
    }

    /// Writes `plan`: the order, the notification, then the rows that name them.
    static func write(_ plan: WritePlan, in tx: WriteContext) throws -> RecordOutcome {
        let db = tx.db
        var orderID: Int64?
        if let write = plan.order {
            orderID = try writeOrder(write, tx)
        }
        var notificationID: Int64 = 0
        if let planned = plan.notification {
            let linkedOrder: Int64? = switch planned.order {
            case .none: nil
            case .stored(let id): id
            case .planned: orderID
            }
            notificationID = try insertNotification(planned, orderID: linkedOrder, tx)
        }
        if let orderID {
            for transition in plan.transitions {
                try RawStatement(tx, .transitionInsert).run(
                    .int(orderID), .text(transition.from?.rawValue), .text(transition.to.rawValue), .text(tx.now),
                    .int(transition.cause.notificationID(planned: notificationID)))
            }
            for refund in plan.refunds {
                try RawStatement(tx, .refundInsert).run(
                    .int(orderID), .text(refund.refundID), .int(refund.amountMinor), .int(refund.cause.notificationID(planned: notificationID)))
            }
        }
        if let key = plan.dedupKey, let request = plan.notification?.request {
            try RawStatement(tx, .dedupKeyInsert).run(.text(request.provider), .text(request.account), .text(key), .int(notificationID))
        }
        if let order = plan.order?.order, let orderID {
            let scope = order.scope
            if let key = plan.linkToRegister {
                try RawStatement(tx, .linkInsert).run(.text(scope.provider), .text(scope.account), .text(key), .int(orderID))
            }
            if let key = plan.adoptWaitingDuplicates {
                try db.cachedStatement(sql: """
                    UPDATE notifications SET order_id = ?, order_ref = ?
                    WHERE provider = ? AND account = ? AND link_key = ? AND verdict = 'duplicate' AND order_id IS NULL
                    """).execute(arguments: [orderID, order.orderRef, scope.provider, scope.account, key])
            }
            // Moving a count reads it: the batch's counts so far are written first.
            if !plan.waitingUpdates.isEmpty { try tx.writeCounts() }
            for update in plan.waitingUpdates {
                switch update {
                case .applied(let id, let verdict, let reason, let detail):
                    // Its hourly count moves from `unlinked` to the verdict it ends with.
                    try NotificationCounts.remove(db, notificationID: id)
                    try db.cachedStatement(sql: """
                        UPDATE notifications SET verdict = ?, reason = ?, reason_detail = ?, order_id = ?, order_ref = ?,
                        pending_effect = NULL WHERE id = ?
                        """).execute(arguments: [verdict.rawValue, reason, detail, orderID, order.orderRef, id])
                    try NotificationCounts.add(db, notificationID: id)
                case .unreadable(let id, let detail):
                    try db.cachedStatement(sql: "UPDATE notifications SET reason_detail = ? WHERE id = ?").execute(arguments: [detail, id])
                }
            }
            for event in plan.events {
                try RawStatement(tx, .eventInsert).run(
                    .text(EventID.next()), .text(event.type.rawValue), .text(tx.now), .text(scope.provider),
                    .text(scope.account), .int(orderID), .text(order.orderRef), .text(event.orderJSON),
                    .text(event.from?.rawValue), .text(event.to.rawValue), .text(event.flag), .int(event.cause.notificationID(planned: notificationID)),
                    .text(event.providerStatus))
                let seq = db.lastInsertedRowID
                for target in event.routes {
                    try RawStatement(tx, .deliveryInsert).run(.text(target), .int(seq), .int(orderID), .text(tx.now), .text(tx.now))
                }
                tx.wroteEvents()
            }
        }
        var outcome = plan.outcome
        outcome.notificationID = notificationID
        return outcome
    }

    private static func writeOrder(_ write: OrderWrite, _ tx: WriteContext) throws -> Int64 {
        switch write {
        case .insert(let order):
            try RawStatement(tx, .orderInsert).run(
                .text(order.scope.provider), .text(order.scope.account), .text(order.orderRef), .text(order.providerTxnID),
                .text(order.state.rawValue), .int(order.amount?.minor), .text(order.amount?.currency), .int(order.refundedMinor),
                .int(order.expected?.minor), .text(order.expected?.currency), .text(order.flagsText), .text(order.createdAt),
                .text(order.updatedAt), .text(order.inquiry.from), .int(Int64(order.inquiry.step)), .text(order.inquiry.dueAt))
            return tx.db.lastInsertedRowID
        case .update(let order):
            guard let id = order.id else { throw StoreError(message: "an order to update has no id") }
            try RawStatement(tx, .orderUpdate).run(
                .text(order.state.rawValue), .int(order.amount?.minor), .text(order.amount?.currency), .int(order.refundedMinor),
                .int(order.expected?.minor), .text(order.expected?.currency), .text(order.flagsText),
                .text(order.providerTxnID), .text(order.updatedAt), .text(order.inquiry.from), .int(Int64(order.inquiry.step)),
                .text(order.inquiry.dueAt), .int(id))
            return id
        case .unchanged(let order):
            guard let id = order.id else { throw StoreError(message: "an order left unchanged has no id") }
            return id
        }
    }

    private static func insertNotification(_ planned: PlannedNotification, orderID: Int64?, _ tx: WriteContext) throws -> Int64 {
        let request = planned.request
        let notification = planned.notification
        try RawStatement(tx, .notificationInsert).run(
            .text(request.provider), .text(request.account), .text(request.receivedAt), .text(request.clientIP),
            .text(request.target), .text(request.headers), .blob(request.body), .text(planned.verdict.rawValue),
            .text(planned.reason), .text(planned.reasonDetail), .text(notification?.kind.rawValue),
            .text(notification?.providerStatus), .text(notification?.dedupKey), .text(planned.orderRef), .int(orderID),
            .text(notification?.providerTxnID), .text(notification?.link?.key), .int(notification?.amount?.minor),
            .text(notification?.amount?.currency), .text(planned.detailJSON), .text(planned.pendingEffect),
            .int(request.reverifiedFrom), .int(request.inquiryID))
        let id = tx.db.lastInsertedRowID
        // The overview's hourly count (`notification_counts`), written before the batch commits.
        tx.countNotification(
            receivedAt: request.receivedAt, provider: request.provider, account: request.account, verdict: planned.verdict,
            reason: planned.reason)
        return id
    }
}

/// The facts' reads, as statements on the writer's connection inside its transaction.
struct SQLiteFactsReader: FactsReader {
    let tx: WriteContext

    func firstDelivery(scope: Scope, dedupKey: String) throws -> FirstDelivery? {
        let lookup = try RawStatement(tx, .dedupKeyLookup)
        guard let firstID = try lookup.first(.text(scope.provider), .text(scope.account), .text(dedupKey), read: { $0.int(0) }) ?? nil
        else { return nil }
        return try RawStatement(tx, .deliveryOrder).first(.int(firstID)) { row in
            // `WriteSQL.deliveryOrder`'s columns: `n.order_ref, o.id, o.order_ref, o.state`.
            let current = row.text(2)
            return FirstDelivery(
                notificationID: firstID, orderRef: current ?? row.text(0), orderID: row.int(1), currentOrderRef: current,
                orderState: try row.text(3).map(Self.state))
        } ?? FirstDelivery(notificationID: firstID, orderRef: nil, orderID: nil, currentOrderRef: nil, orderState: nil)
    }

    func order(scope: Scope, orderRef: String) throws -> StoredOrder? {
        try RawStatement(tx, .orderByRef).first(.text(scope.provider), .text(scope.account), .text(orderRef), read: Self.order)
    }

    func linkedOrder(scope: Scope, linkKey: String) throws -> StoredOrder? {
        guard let orderID = try linkedOrderID(scope: scope, linkKey: linkKey) else { return nil }
        return try RawStatement(tx, .orderByID).first(.int(orderID), read: Self.order)
    }

    func linkExists(scope: Scope, linkKey: String) throws -> Bool {
        try linkedOrderID(scope: scope, linkKey: linkKey) != nil
    }

    private func linkedOrderID(scope: Scope, linkKey: String) throws -> Int64? {
        try RawStatement(tx, .linkLookup).first(.text(scope.provider), .text(scope.account), .text(linkKey)) { $0.int(0) } ?? nil
    }

    func waitingNotifications(scope: Scope, linkKey: String) throws -> [WaitingNotification] {
        try RawStatement(tx, .waitingByLink).all(.text(scope.provider), .text(scope.account), .text(linkKey)) { row in
            WaitingNotification(id: row.int(0) ?? 0, pendingEffect: row.text(1))
        }
    }

    func refunds(orderID: Int64) throws -> [StoredRefund] {
        try RawStatement(tx, .refundsOfOrder).all(.int(orderID)) { row in
            StoredRefund(refundID: row.text(0) ?? "", amountMinor: row.int(1))
        }
    }

    func hasTransitions(orderID: Int64) throws -> Bool {
        try RawStatement(tx, .transitionExists).first(.int(orderID)) { $0.int(0) }.map { $0 != 0 } ?? true
    }

    func refundCurrency(orderID: Int64) throws -> String? {
        try RawStatement(tx, .refundCurrency).first(.int(orderID)) { $0.text(0) } ?? nil
    }

    /// Reads the order's columns (`WriteSQL.orderColumns`) from `row`.
    private static func order(_ row: RawStatement.Row) throws -> StoredOrder {
        let id = row.int(0) ?? 0
        return StoredOrder(
            id: id, scope: Scope(provider: row.text(1) ?? "", account: row.text(2) ?? ""), orderRef: row.text(3) ?? "",
            state: try state(row.text(4) ?? ""), amount: zip(row.int(5), row.text(6)).map { Money(minor: $0, currency: $1) },
            refundedMinor: row.int(7) ?? 0, expected: zip(row.int(8), row.text(9)).map { Money(minor: $0, currency: $1) },
            flags: StoredOrder.flags(fromText: row.text(10) ?? ""), providerTxnID: row.text(11), createdAt: row.text(12) ?? "",
            updatedAt: row.text(13) ?? "",
            inquiry: InquiryScheduleState(from: row.text(14), step: Int(row.int(15) ?? 0), dueAt: row.text(16)))
    }

    private static func state(_ text: String) throws -> OrderState {
        guard let state = OrderState(rawValue: text) else {
            throw StoreError(message: "an order has an unknown state \"\(text)\" in the store")
        }
        return state
    }
}

/// An entry, with what needs no database worked out by the caller before the writer's turn: the
/// writer is the one serial stage, so the notification's details become JSON text beforehand.
struct PreparedEntry: Sendable {
    let entry: InboxEntry
    /// The verified notification's `detail` as a JSON object, nil when it has none.
    let detailJSON: String?

    init(_ entry: InboxEntry) {
        self.entry = entry
        if case .verified(_, let notification) = entry, !notification.detail.isEmpty {
            detailJSON = JSONText.object(notification.detail)
        } else {
            detailJSON = nil
        }
    }
}

/// Both values, or nil.
func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
