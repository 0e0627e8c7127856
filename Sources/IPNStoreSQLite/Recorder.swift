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

/// The SQLite side of the one write path: the writer's transaction as `Recording` reads and
/// writes it. The rules are the planner's and the rows `Recording`'s; this only runs each row's
/// statement, as it comes, on the writer's connection.
struct SQLiteSession: RecordingSession {
    let tx: WriteContext

    var facts: SQLiteFactsReader { SQLiteFactsReader(tx: tx) }
    var planner: RecordingPlanner { tx.planner }
    var now: String { tx.now }

    /// The id SQLite would give the next inquiry row (one writer: nothing else inserts meanwhile).
    func nextInquiryID() throws -> Int64 {
        try Int64.fetchOne(tx.db, sql: "SELECT COALESCE(MAX(id), 0) + 1 FROM inquiries") ?? 1
    }

    func insertOrder(_ row: OrderRow) throws -> Int64 {
        try RawStatement(tx, writing: OrderRow.self).run(values: row.values)
        return tx.db.lastInsertedRowID
    }

    func insertNotification(_ row: NotificationRow) throws -> Int64 {
        try RawStatement(tx, writing: NotificationRow.self).run(values: row.values)
        let planned = row.planned
        // The overview's hourly count (`notification_counts`), written before the batch commits.
        tx.countNotification(
            receivedAt: planned.request.receivedAt, provider: planned.request.provider, account: planned.request.account,
            verdict: planned.verdict, reason: planned.reason)
        return tx.db.lastInsertedRowID
    }

    /// The event, numbered as it is inserted (one writer: seq order is commit order), and its deliveries.
    func insertEvent(_ row: EventRow) throws {
        try RawStatement(tx, writing: EventRow.self).run(values: row.values)
        let seq = tx.db.lastInsertedRowID
        for target in row.targets {
            try write(DeliveryRow(target: target, eventSeq: seq, orderID: row.orderID, createdAt: row.occurredAt))
        }
        tx.wroteEvents()
    }

    func applyWaiting(_ row: WaitingAppliedRow) throws {
        // Its hourly count moves from `unlinked` to the verdict it ends with; moving a count reads
        // it, so the batch's counts so far are written first.
        try tx.writeCounts()
        try NotificationCounts.remove(tx.db, notificationID: row.id)
        try write(row)
        try NotificationCounts.add(tx.db, notificationID: row.id)
    }

    func write<Row: StoreRow>(_ row: Row) throws {
        try RawStatement(tx, writing: Row.self).run(values: row.values)
    }
}

/// The write path's entry points on the writer's transaction.
enum Recorder {
    static func record(_ prepared: PreparedEntry, in tx: WriteContext) throws -> RecordOutcome {
        try Recording.record(prepared, in: SQLiteSession(tx: tx))
    }

    /// Reads the entry's facts and lets `RecordingPlanner` decide, writing nothing (a dry run,
    /// alone in a read transaction).
    static func plan(_ prepared: PreparedEntry, in tx: WriteContext) throws -> WritePlan {
        try Recording.plan(prepared, in: SQLiteSession(tx: tx))
    }

    /// Registers the amount and currency `orderRef` must be paid with.
    static func setExpectation(_ amount: Money, scope: Scope, orderRef: String, in tx: WriteContext) throws -> ExpectationOutcome {
        try Recording.setExpectation(amount, scope: scope, orderRef: orderRef, in: SQLiteSession(tx: tx))
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

/// Both values, or nil.
func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
