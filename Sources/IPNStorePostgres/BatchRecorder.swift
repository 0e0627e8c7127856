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
import IPNStore
import Logging
import NIOCore
import PostgresNIO

/// One write job of a batch: a notification or an expectation.
enum WriteJob: Sendable {
    case record(InboxEntry)
    case expectation(scope: Scope, orderRef: String, amount: Money)
}

/// What a job came to, once the batch commits.
enum WriteResult: Sendable {
    case recorded(RecordOutcome)
    case expectation(ExpectationOutcome)
}

/// Records a batch of jobs inside one transaction on `connection`: takes the batch's advisory
/// locks (sorted, so batches never deadlock on them), reads every fact the batch needs in a few
/// statements, records each job in order through `Recording` (the planner's decisions turned
/// into rows, the facts kept current by `BatchFacts`), then writes its rows with one statement
/// (and one per rare kind), the events queued for the sequencer to number once committed
/// (`BatchStatements.swift`).
struct BatchRecorder {
    let connection: PostgresConnection
    let logger: Logger
    let now: String
    let routes: [DeliveryRoute]
    var schedule: InquirySchedule = .standard

    var planner: RecordingPlanner { RecordingPlanner(now: now, routes: routes, schedule: schedule) }

    func record(_ jobs: [WriteJob]) async throws -> [WriteResult] {
        let ids = try await lock(jobs, notifications: jobs.count, orders: jobs.count)
        let session = PostgresSession(facts: try await read(needed(jobs), lockRows: true), planner: planner, ids: ids)
        let results = try jobs.map { try record($0, in: session) }
        try await write(session.rows)
        return results
    }

    /// What `record` would answer for `jobs`, read without locks and written nowhere (the dry
    /// run of `notifications reverify`): new rows get id 0.
    func preview(_ jobs: [WriteJob]) async throws -> [WriteResult] {
        let session = PostgresSession(facts: try await read(needed(jobs), lockRows: false), planner: planner, ids: .zeros(jobs.count))
        return try jobs.map { try record($0, in: session) }
    }

    private func needed(_ jobs: [WriteJob]) -> FactsNeeded {
        var needed = FactsNeeded()
        for job in jobs {
            switch job {
            case .record(let entry): needed.add(entry)
            case .expectation(let scope, let orderRef, _): needed.addExpectation(scope: scope, orderRef: orderRef)
            }
        }
        return needed
    }

    private func record(_ job: WriteJob, in session: PostgresSession) throws -> WriteResult {
        switch job {
        case .record(let entry):
            return .recorded(try Recording.record(PreparedEntry(entry), in: session))
        case .expectation(let scope, let orderRef, let amount):
            return .expectation(try Recording.setExpectation(amount, scope: scope, orderRef: orderRef, in: session))
        }
    }

    // MARK: Locks and ids

    /// Takes the advisory locks of every order reference and payment link the batch touches (and
    /// `extraKeys`), in one order for every batch of every node; turns sequential scans off for
    /// the rest of the transaction; and allocates ids for the rows the batch may insert: one
    /// notification per job, at most one new order per job, `inquiries` inquiry records
    /// (unused ones are gaps, as with any sequence). One statement (`BatchLock`).
    ///
    /// No sequential scans: every read of a batch looks rows up by key, but the planner joins a
    /// batch's keys to a table it believes small with a hash join over the whole table, and a
    /// table that grew since its last ANALYZE (a new database filling up, a burst) is scanned
    /// whole in every batch: at 17,000 orders that was 6 ms a batch, the slowest statement of all.
    func lock(
        _ jobs: [WriteJob], alsoLocking extraKeys: Set<Int64> = [], notifications: Int = 0, orders: Int = 0, inquiries: Int = 0
    ) async throws -> AllocatedIDs {
        var keys = extraKeys
        for job in jobs {
            switch job {
            case .record(.verified(let request, let notification)):
                let scope = Scope(provider: request.provider, account: request.account)
                if let ref = notification.orderRef { keys.insert(LockKey.order(scope, ref)) }
                if let link = notification.link { keys.insert(LockKey.link(scope, link.key)) }
                if notification.orderRef == nil, notification.link == nil {
                    keys.insert(LockKey.dedup(scope, notification.dedupKey))
                }
            case .expectation(let scope, let orderRef, _):
                keys.insert(LockKey.order(scope, orderRef))
            case .record(.rejected):
                break
            }
        }
        let statement = BatchLock(
            keys: keys.sorted(), notifications: Int64(notifications), orders: Int64(orders), inquiries: Int64(inquiries))
        return try await connection.rows(statement, logger: logger).first ?? AllocatedIDs()
    }

    // MARK: Reading the facts

    /// Reads what `needed` lists (`BatchFactsRead`, then `BatchDependentFacts` for the orders that
    /// exist). With `lockRows`, the orders read are locked to the commit (`FOR NO KEY UPDATE`:
    /// other writers of the order wait; the sequencer's foreign key check does not); without, the
    /// statements run unprepared (a dry run, rare).
    func read(_ needed: FactsNeeded, lockRows: Bool) async throws -> BatchFacts {
        let facts = BatchFacts()
        let statement = BatchFactsRead(
            dedupKeys: Array(needed.dedupKeys), orderRefs: Array(needed.orderRefs), linkKeys: Array(needed.linkKeys),
            waitingLinks: Array(needed.waitingLinks), lock: lockRows)
        var found: (dedup: Set<FactsNeeded.ScopedKey>, links: Set<FactsNeeded.ScopedKey>) = ([], [])
        var waiting: [FactsNeeded.ScopedKey: [WaitingNotification]] = [:]
        var orders: [StoredOrder] = []
        let rows = lockRows ? try await connection.rows(statement, logger: logger) : try await connection.rows(statement.statement, logger: logger)
        for row in rows {
            let kind = try row.text("kind")
            if kind == "o" {
                orders.append(try OrderColumns.stored(row))
                continue
            }
            let key = FactsNeeded.ScopedKey(scope: Scope(provider: try row.text("provider"), account: try row.text("account")),
                                            key: try row.text("key"))
            switch kind {
            case "d":
                found.dedup.insert(key)
                facts.setFirst(BatchFacts.FirstRow(
                    notificationID: try row.int("notification_id"), storedOrderRef: try row.optionalText("stored_ref"),
                    orderID: try row.optionalInt("order_id"), currentOrderRef: try row.optionalText("order_ref"),
                    orderState: try row.optionalState("state")), scope: key.scope, dedupKey: key.key)
            case "l":
                found.links.insert(key)
                facts.setLink(try row.int("order_id"), scope: key.scope, linkKey: key.key)
            default:
                waiting[key, default: []].append(
                    WaitingNotification(id: try row.int("notification_id"), pendingEffect: try row.optionalText("pending_effect")))
            }
        }
        for key in needed.dedupKeys where !found.dedup.contains(key) { facts.setFirst(nil, scope: key.scope, dedupKey: key.key) }
        for key in needed.linkKeys where !found.links.contains(key) { facts.setLink(nil, scope: key.scope, linkKey: key.key) }
        for key in needed.waitingLinks {
            facts.setWaiting((waiting[key] ?? []).sorted { $0.id < $1.id }, scope: key.scope, linkKey: key.key)
        }
        let byRef = Set(orders.map { FactsNeeded.ScopedKey(scope: $0.scope, key: $0.orderRef) })
        for order in orders {
            facts.setOrder(order, scope: order.scope, orderRef: order.orderRef)
        }
        for key in needed.orderRefs where !byRef.contains(key) { facts.setOrder(nil, scope: key.scope, orderRef: key.key) }
        try await readDependentFacts(facts, prepared: lockRows)
        return facts
    }

    /// For every order read: its refunds, whether it has a transition (when pending), and its
    /// refunds' currency (when its amount is unknown).
    private func readDependentFacts(_ facts: BatchFacts, prepared: Bool) async throws {
        let orders = facts.readOrders
        guard !orders.isEmpty else { return }
        let ids = orders.compactMap(\.id)
        let statement = BatchDependentFacts(
            orders: ids, pending: orders.filter(FactsReading.needsTransitionCheck).compactMap(\.id),
            unknownAmount: orders.filter(FactsReading.needsRefundCurrency).compactMap(\.id))
        var refunds: [Int64: [StoredRefund]] = [:]
        var transitions = Set<Int64>()
        var currencies: [Int64: String] = [:]
        let rows = prepared ? try await connection.rows(statement, logger: logger) : try await connection.rows(statement.statement, logger: logger)
        for row in rows {
            let orderID = try row.int("order_id")
            switch try row.text("kind") {
            case "r": refunds[orderID, default: []].append(StoredRefund(refundID: try row.text("text"), amountMinor: try row.optionalInt("amount_minor")))
            case "t": transitions.insert(orderID)
            default: currencies[orderID] = try row.text("text")
            }
        }
        for id in ids { facts.setRefunds(refunds[id] ?? [], orderID: id) }
        for id in statement.pending { facts.setHasTransitions(transitions.contains(id), orderID: id) }
        for id in statement.unknownAmount { facts.setRefundCurrency(currencies[id], orderID: id) }
    }

    // MARK: Writing the rows

    /// Writes the batch's rows: the common ones with one statement (`BatchWrite`), the events
    /// queued for the sequencer (`EventSequencer`), which numbers them once this transaction
    /// committed; then the rare ones.
    func write(_ rows: PostgresRows) async throws {
        _ = try await connection.execute(rows.common, logger: logger)
        try await rows.writeRare(connection: connection, logger: logger)
    }
}

/// A batch of rows, column by column, bound as arrays and expanded with `unnest`.
struct ColumnBatch {
    typealias Value = RowValue

    private var columns: [[Value]]

    init(_ width: Int) {
        columns = Array(repeating: [], count: width)
    }

    var isEmpty: Bool { columns.first?.isEmpty ?? true }

    mutating func add(_ row: [Value]) {
        for (index, value) in row.enumerated() { columns[index].append(value) }
    }

    /// Binds each column as an array of its type in `shape`; returns `$1::bigint[], $2::text[], ...`.
    func bindColumns(into sql: inout SQL, shape: RowShape) -> String {
        bindColumns(into: &sql, types: shape.columns.map { RowShape.postgresType($0.type) })
    }

    /// Binds each column as an array of `types[i]`; returns `$1::bigint[], $2::text[], ...`.
    func bindColumns(into sql: inout SQL, types: [String]) -> String {
        var placeholders: [String] = []
        for (index, column) in columns.enumerated() {
            let placeholder: String
            switch types[index] {
            case "bigint":
                placeholder = sql.bind(NullableArray(column.map { if case .int(let value) = $0 { value } else { nil } }))
            case "bytea":
                placeholder = sql.bind(NullableArray(column.map { value -> ByteBuffer? in
                    if case .bytes(let bytes) = value { return ByteBuffer(bytes: bytes) }
                    return nil
                }))
            default:
                placeholder = sql.bind(NullableArray(column.map { if case .text(let value) = $0 { value } else { nil } }))
            }
            placeholders.append("\(placeholder)::\(types[index])[]")
        }
        return placeholders.joined(separator: ", ")
    }
}

/// The advisory lock keys: 64-bit FNV-1a of what the lock guards. A collision only makes two
/// unrelated orders wait for each other.
enum LockKey {
    static func order(_ scope: Scope, _ ref: String) -> Int64 { hash("o", scope, ref) }
    static func link(_ scope: Scope, _ key: String) -> Int64 { hash("l", scope, key) }
    static func dedup(_ scope: Scope, _ key: String) -> Int64 { hash("d", scope, key) }

    private static func hash(_ kind: String, _ scope: Scope, _ value: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in [kind, scope.provider, scope.account, value] {
            for byte in part.utf8 {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01b3
            }
            hash ^= 0xff
            hash &*= 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }
}
