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
import IPNStore
import Logging
import PostgresNIO

/// A batch transaction as `Recording` reads and writes it on PostgreSQL: the facts read at once
/// before planning (`BatchFacts`, kept current as each plan is written), ids allocated before
/// planning, and the rows collected to be written together at the end (`PostgresRows`).
final class PostgresSession: RecordingSession {
    let facts: BatchFacts
    let planner: RecordingPlanner
    let rows = PostgresRows()
    private var notificationIDs: IDPool
    private var orderIDs: IDPool
    private var inquiryIDs: IDPool

    init(facts: BatchFacts, planner: RecordingPlanner, ids: AllocatedIDs) {
        self.facts = facts
        self.planner = planner
        notificationIDs = IDPool(ids.notifications, kind: "notification")
        orderIDs = IDPool(ids.orders, kind: "order")
        inquiryIDs = IDPool(ids.inquiries, kind: "inquiry")
    }

    func nextInquiryID() throws -> Int64 { try inquiryIDs.next() }

    func insertOrder(_ row: OrderRow) throws -> Int64 {
        var row = row
        let id = try orderIDs.next()
        row.id = id
        rows.insertOrder(row)
        return id
    }

    func insertNotification(_ row: NotificationRow) throws -> Int64 {
        var row = row
        let id = try notificationIDs.next()
        row.id = id
        rows.add(row)
        return id
    }

    func insertEvent(_ row: EventRow) throws { rows.events.append(row) }

    func applyWaiting(_ row: WaitingAppliedRow) throws { rows.add(row) }

    func write<Row: StoreRow>(_ row: Row) throws {
        if let update = row as? OrderUpdateRow {
            rows.updateOrder(update)
        } else {
            rows.add(row)
        }
    }

    func wrote(_ plan: WritePlan, notificationID: Int64?, orderID: Int64?) {
        facts.apply(plan, notificationID: notificationID, orderID: orderID)
    }
}

/// Ids taken from the sequences before a batch is planned.
struct AllocatedIDs: Sendable {
    var notifications: [Int64] = []
    var orders: [Int64] = []
    var inquiries: [Int64] = []

    /// Ids for a dry run: every new row gets 0.
    static func zeros(_ count: Int) -> AllocatedIDs {
        let zeros = Array(repeating: Int64(0), count: count)
        return AllocatedIDs(notifications: zeros, orders: zeros, inquiries: [0])
    }
}

/// Ids handed out in order.
private struct IDPool {
    private let ids: [Int64]
    private let kind: String
    private var position = 0

    init(_ ids: [Int64], kind: String) {
        self.ids = ids
        self.kind = kind
    }

    mutating func next() throws -> Int64 {
        guard position < ids.count else { throw StoreError(message: "a batch needed more \(kind) ids than it allocated") }
        defer { position += 1 }
        return ids[position]
    }
}

/// A batch's rows, collected in the order `Recording` wrote them: the common kinds written with
/// one statement (`BatchWrite`), the rare ones with one statement per kind after it.
final class PostgresRows {
    /// New orders, each as the batch leaves it (a later update of one is folded into its insert).
    private(set) var orderInserts: [OrderRow] = []
    private var insertedAt: [Int64: Int] = [:]
    /// Orders updated, each once, as the batch leaves it.
    private(set) var orderUpdates: [OrderUpdateRow] = []
    private var updatedAt: [Int64: Int] = [:]
    private var buckets: [ObjectIdentifier: (shape: RowShape, rows: [[RowValue]])] = [:]
    /// The events, in the order they were written.
    var events: [EventRow] = []

    /// The rare kinds, in the order they are written: what a row names is written before it, and
    /// the duplicates adopted and the waiting notifications applied include those the batch inserted.
    static let rare: [any StoreRow.Type] = [
        AdoptedDuplicatesRow.self, WaitingAppliedRow.self, WaitingUnreadableRow.self, OrderScheduleRow.self, InquiryRow.self,
    ]

    func insertOrder(_ row: OrderRow) {
        guard let id = row.id else { return }
        insertedAt[id] = orderInserts.count
        orderInserts.append(row)
    }

    func updateOrder(_ row: OrderUpdateRow) {
        if let index = insertedAt[row.id] {
            orderInserts[index].order = row.order
        } else if let index = updatedAt[row.id] {
            orderUpdates[index] = row
        } else {
            updatedAt[row.id] = orderUpdates.count
            orderUpdates.append(row)
        }
    }

    func add<Row: StoreRow>(_ row: Row) {
        buckets[ObjectIdentifier(Row.self), default: (Row.shape, [])].rows.append(row.values)
    }

    private func rows<Row: StoreRow>(_ type: Row.Type) -> [[RowValue]] { buckets[ObjectIdentifier(type)]?.rows ?? [] }

    /// The common rows, as one statement.
    var common: BatchWrite {
        BatchWrite(
            orderInserts: orderInserts.map(\.values), orderUpdates: orderUpdates.map(\.values), notifications: rows(NotificationRow.self),
            transitions: rows(TransitionRow.self), refunds: rows(RefundRow.self), dedupKeys: rows(DedupKeyRow.self),
            links: rows(LinkRow.self), events: events.map { $0.values + [.text($0.targets.joined(separator: ","))] })
    }

    /// Writes the rare rows, one statement per kind present.
    func writeRare(connection: PostgresConnection, logger: Logger) async throws {
        for type in Self.rare {
            guard let bucket = buckets[ObjectIdentifier(type)] else { continue }
            try await Self.run(bucket.shape, bucket.rows, connection: connection, logger: logger)
        }
    }

    /// Writes `rows` of `shape` with one statement.
    static func run(_ shape: RowShape, _ rows: [[RowValue]], connection: PostgresConnection, logger: Logger) async throws {
        var batch = ColumnBatch(shape.columns.count)
        for row in rows { batch.add(row) }
        var sql = SQL()
        sql.append(shape.postgresSQL(columns: batch.bindColumns(into: &sql, shape: shape)))
        try await connection.run(sql, logger: logger)
    }
}

extension RowShape {
    /// The PostgreSQL array type of a column.
    static func postgresType(_ type: ColumnType) -> String {
        switch type {
        case .int: "bigint"
        case .text: "text"
        case .bytes: "bytea"
        }
    }

    /// The statement that writes a batch of rows of this shape, given `columns`, the columns'
    /// array parameters (`$1::bigint[], $2::text[], ...`): expanded with `unnest` as `u (c1, c2, ...)`.
    func postgresSQL(columns arrays: String) -> String {
        let names = (1...columns.count).map { "c\($0)" }
        let source = "unnest(\(arrays)) AS u (\(names.joined(separator: ", ")))"
        switch write {
        case .insert:
            return "INSERT INTO \(table) (\(columnList)) SELECT \(names.joined(separator: ", ")) FROM \(source)"
        case .insertUnlessPresent:
            return "INSERT INTO \(table) (\(columnList)) SELECT \(names.joined(separator: ", ")) FROM \(source) ON CONFLICT DO NOTHING"
        case .update(_, let condition):
            let (keys, set) = updateColumns ?? ([], [])
            let assignments = set.map { "\(columns[$0].name) = u.\(names[$0])" }.joined(separator: ", ")
            var clauses = keys.map { "\(table).\(columns[$0].name) = u.\(names[$0])" }
            if let condition { clauses.append("(\(condition))") }
            return "UPDATE \(table) SET \(assignments) FROM \(source) WHERE \(clauses.joined(separator: " AND "))"
        }
    }
}
