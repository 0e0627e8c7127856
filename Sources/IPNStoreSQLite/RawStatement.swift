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

import GRDB
import GRDBSQLite
import IPNCore
import IPNStore

/// One of GRDB's cached prepared statements, bound and stepped through the SQLite C API.
///
/// The write path runs the same few statements for every notification. Through
/// `StatementArguments` each value is boxed as an existential and each call allocates; in
/// profiles that cost more than SQLite's own work. GRDB still owns the statement (its cache
/// and finalization), the connection and the transaction; this only binds, steps and reads.
struct RawStatement {
    private let handle: OpaquePointer
    private let db: Database

    /// The write path's statement `sql` for this batch, reset.
    init(_ tx: WriteContext, _ sql: WriteSQL) throws {
        handle = try tx.statements.statement(sql).sqliteStatement
        db = tx.db
        sqlite3_reset(handle)
    }

    /// The statement that writes a `Row` (made from its `RowShape`) for this batch, reset.
    init<Row: StoreRow>(_ tx: WriteContext, writing row: Row.Type) throws {
        handle = try tx.statements.statement(writing: row).sqliteStatement
        db = tx.db
        sqlite3_reset(handle)
    }

    /// Runs a statement that returns no rows, with `values` bound to its parameters in order.
    func run(_ values: RawValue...) throws {
        try run(values: values)
    }

    /// Runs a statement that returns no rows, with `values` bound to its parameters in order.
    func run(values: [RawValue]) throws {
        try withBindings(values) {
            let code = sqlite3_step(handle)
            guard code == SQLITE_DONE else { throw error(code) }
        }
    }

    /// Runs a query for at most one row, with `values` bound to its parameters in order, and
    /// reads the row with `read`.
    func first<T>(_ values: RawValue..., read: (Row) throws -> T) throws -> T? {
        try withBindings(values) {
            switch sqlite3_step(handle) {
            case SQLITE_ROW: return try read(Row(handle: handle))
            case SQLITE_DONE: return nil
            case let code: throw error(code)
            }
        }
    }

    /// Runs a query with `values` bound to its parameters in order, and reads each row with `read`.
    func all<T>(_ values: RawValue..., read: (Row) throws -> T) throws -> [T] {
        try withBindings(values) {
            var rows: [T] = []
            while true {
                switch sqlite3_step(handle) {
                case SQLITE_ROW: rows.append(try read(Row(handle: handle)))
                case SQLITE_DONE: return rows
                case let code: throw error(code)
                }
            }
        }
    }

    /// Binds `values` for the length of `body`. Every text and blob is copied once into one
    /// buffer that SQLite reads in place (SQLITE_STATIC) rather than each into its own
    /// allocation; the statement is reset and its bindings cleared before the buffer is freed.
    private func withBindings<R>(_ values: [RawValue], _ body: () throws -> R) throws -> R {
        var size = 1
        for value in values {
            switch value {
            case .text(let text): size += text.utf8.count
            case .bytes(let bytes): size += bytes.count
            case .null, .int: break
            }
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            buffer.deallocate()
        }
        guard let base = buffer.baseAddress else { throw StoreError(message: "no memory for statement parameters") }
        var offset = 0
        func place(_ bytes: UnsafeRawBufferPointer) -> UnsafeMutableRawPointer {
            let start = base + offset
            if let source = bytes.baseAddress { start.copyMemory(from: source, byteCount: bytes.count) }
            offset += bytes.count
            return start
        }
        for (position, value) in values.enumerated() {
            let index = Int32(position + 1)
            let code: Int32
            switch value {
            case .null:
                code = sqlite3_bind_null(handle, index)
            case .int(let number):
                code = sqlite3_bind_int64(handle, index, number)
            case .text(let text):
                code = text.withUTF8Bytes { bytes in
                    sqlite3_bind_text(handle, index, place(UnsafeRawBufferPointer(bytes)), Int32(bytes.count), nil)
                }
            case .bytes(let bytes):
                code = bytes.isEmpty
                    ? sqlite3_bind_zeroblob(handle, index, 0)
                    : bytes.withUnsafeBytes { sqlite3_bind_blob(handle, index, place($0), Int32($0.count), nil) }
            }
            guard code == SQLITE_OK else { throw error(code) }
        }
        return try body()
    }

    private func error(_ code: Int32) -> DatabaseError {
        let connection = db.sqliteConnection
        let extended = connection.map { sqlite3_extended_errcode($0) } ?? code
        return DatabaseError(
            resultCode: ResultCode(rawValue: extended),
            message: connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) },
            sql: sqlite3_sql(handle).map { String(cString: $0) }
        )
    }

    /// The current row's columns, by index.
    struct Row {
        fileprivate let handle: OpaquePointer

        func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

        func int(_ column: Int32) -> Int64? { isNull(column) ? nil : sqlite3_column_int64(handle, column) }

        func text(_ column: Int32) -> String? {
            guard let pointer = sqlite3_column_text(handle, column) else { return nil }
            let count = Int(sqlite3_column_bytes(handle, column))
            return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
        }
    }
}

/// A value to bind: the write path's row values.
typealias RawValue = RowValue

/// What a job in a group-commit batch writes with: the writer's connection, inside the batch's
/// transaction, the batch's timestamp, the write path's prepared statements, the delivery
/// routes events are written with, and what the batch wrote that others wait for.
struct WriteContext {
    let db: Database
    let now: String
    let statements: WriteStatements
    let routes: [DeliveryRoute]
    let schedule: InquirySchedule
    let effects: BatchEffects

    init(
        db: Database, now: String, statements: WriteStatements, routes: [DeliveryRoute] = [], schedule: InquirySchedule = .standard,
        effects: BatchEffects = BatchEffects()
    ) {
        self.db = db
        self.now = now
        self.statements = statements
        self.routes = routes
        self.schedule = schedule
        self.effects = effects
    }

    /// The one decision of what a write does, with this transaction's time, routes and schedule.
    var planner: RecordingPlanner { RecordingPlanner(now: now, routes: routes, schedule: schedule) }

    /// Notes that the batch wrote an event (the feed's readers and the delivery service are told
    /// once it commits).
    func wroteEvents() { effects.events += 1 }

    /// Counts a stored notification in the overview's hourly counts (`notification_counts`).
    /// The batch adds its counts up and writes them with `writeCounts` before it commits: one
    /// upsert per hour, provider, account, verdict and reason instead of one per notification.
    func countNotification(receivedAt: String, provider: String, account: String, verdict: Verdict, reason: String?) {
        let hour = HourlyNotificationCount.hour(of: receivedAt)
        // A batch's notifications share a few keys: a scan finds them sooner than hashing five strings.
        if let index = effects.counts.firstIndex(where: {
            $0.verdict == verdict && $0.provider == provider && $0.account == account && $0.reason == reason && $0.hour == hour
        }) {
            effects.counts[index].count += 1
        } else {
            effects.counts.append(HourlyNotificationCount(
                hour: hour, provider: provider, account: account, verdict: verdict, reason: reason, count: 1))
        }
    }

    /// Adds the counts of the batch's notifications so far to `notification_counts`: before the
    /// batch commits, and before a statement reads or moves a count.
    func writeCounts() throws {
        guard !effects.counts.isEmpty else { return }
        let upsert = try RawStatement(self, .notificationCount)
        for count in effects.counts {
            try upsert.run(
                .text(count.hour), .text(count.provider), .text(count.account), .text(count.verdict.rawValue),
                .text(count.reason ?? ""), .int(Int64(count.count)))
        }
        effects.counts.removeAll(keepingCapacity: true)
    }
}

/// What one batch wrote that readers wait for, and the hourly counts it has yet to write;
/// written and read on the writer queue only.
final class BatchEffects: @unchecked Sendable {
    var events = 0
    /// Audit records the batch appended, reported once it commits.
    var audited: [AuditRecord] = []
    var counts: [HourlyNotificationCount] = []
}

/// The write path's statements, taken from GRDB's statement cache once per batch: a lookup
/// there hashes the whole SQL text, which cost more per notification than binding it.
final class WriteStatements {
    private let db: Database
    private var taken: [Statement?] = Array(repeating: nil, count: WriteSQL.allCases.count)
    private var writing: [ObjectIdentifier: Statement] = [:]

    init(_ db: Database) {
        self.db = db
    }

    func statement(_ sql: WriteSQL) throws -> Statement {
        if let statement = taken[sql.rawValue] { return statement }
        let statement = try db.cachedStatement(sql: sql.text)
        taken[sql.rawValue] = statement
        return statement
    }

    /// The statement that writes a `Row`, made from its shape.
    func statement<Row: StoreRow>(writing row: Row.Type) throws -> Statement {
        let key = ObjectIdentifier(row)
        if let statement = writing[key] { return statement }
        let statement = try db.cachedStatement(sql: RowSQL.texts[key] ?? Row.shape.sqliteSQL)
        writing[key] = statement
        return statement
    }
}

/// The statements that write the write path's rows, made from their shapes once per process.
enum RowSQL {
    static let texts: [ObjectIdentifier: String] = {
        let rows: [any StoreRow.Type] = [
            OrderRow.self, OrderUpdateRow.self, OrderScheduleRow.self, NotificationRow.self, TransitionRow.self, RefundRow.self,
            DedupKeyRow.self, LinkRow.self, AdoptedDuplicatesRow.self, WaitingAppliedRow.self, WaitingUnreadableRow.self,
            EventRow.self, DeliveryRow.self, InquiryRow.self,
        ]
        return Dictionary(uniqueKeysWithValues: rows.map { (ObjectIdentifier($0), $0.shape.sqliteSQL) })
    }()
}

extension RowShape {
    /// The statement that writes one row of this shape, its values bound in column order
    /// (`?N` is the N-th column).
    var sqliteSQL: String {
        let numbered = columns.indices.map { "?\($0 + 1)" }
        switch write {
        case .insert:
            return "INSERT INTO \(table) (\(columnList)) VALUES (\(numbered.joined(separator: ", ")))"
        case .insertUnlessPresent:
            return "INSERT OR IGNORE INTO \(table) (\(columnList)) VALUES (\(numbered.joined(separator: ", ")))"
        case .update(_, let condition):
            let (keys, set) = updateColumns ?? ([], [])
            let assignments = set.map { "\(columns[$0].name) = \(numbered[$0])" }.joined(separator: ", ")
            var clauses = keys.map { "\(columns[$0].name) = \(numbered[$0])" }
            if let condition { clauses.append("(\(condition))") }
            return "UPDATE \(table) SET \(assignments) WHERE \(clauses.joined(separator: " AND "))"
        }
    }
}

/// The reads every notification runs, and those of payment links, refunds and waiting
/// notifications (one notification in five, in the bench's mix, registers a link); the rows it
/// writes have their statements made from their shapes (`RowShape.sqliteSQL`).
enum WriteSQL: Int, CaseIterable {
    case dedupKeyLookup, deliveryOrder, orderByRef, orderByID, notificationCount
    case linkLookup, waitingByLink, refundsOfOrder, transitionExists, refundCurrency

    /// The columns `SQLiteFactsReader` reads an order from, in its order.
    private static let orderColumns = """
        id, provider, account, order_ref, state, amount_minor, currency, refunded_minor, expected_amount_minor,
        expected_currency, flags, provider_txn_id, created_at, updated_at, inquiry_from, inquiry_step, inquiry_due_at
        """

    var text: String {
        switch self {
        case .dedupKeyLookup:
            "SELECT notification_id FROM dedup_keys WHERE provider = ? AND account = ? AND dedup_key = ?"
        case .deliveryOrder:
            // What a duplicate is recorded and answered with, in one statement: the order
            // reference its first delivery named and that order's id, reference and state as they
            // are now (`FirstDelivery`). Kept apart from the dedup lookup, which every new
            // notification runs and finds nothing.
            """
            SELECT n.order_ref, o.id, o.order_ref, o.state
            FROM notifications AS n LEFT JOIN orders AS o ON o.id = n.order_id
            WHERE n.id = ?
            """
        case .orderByRef:
            "SELECT \(Self.orderColumns) FROM orders WHERE provider = ? AND account = ? AND order_ref = ?"
        case .orderByID:
            "SELECT \(Self.orderColumns) FROM orders WHERE id = ?"
        case .notificationCount:
            NotificationCounts.incrementSQL
        case .linkLookup:
            "SELECT order_id FROM payment_links WHERE provider = ? AND account = ? AND link_key = ?"
        case .waitingByLink:
            """
            SELECT id, pending_effect FROM notifications
            WHERE provider = ? AND account = ? AND link_key = ? AND verdict = 'unlinked' ORDER BY id
            """
        case .refundsOfOrder:
            "SELECT refund_id, amount_minor FROM refunds WHERE order_id = ?"
        case .transitionExists:
            "SELECT EXISTS (SELECT 1 FROM transitions WHERE order_id = ?)"
        case .refundCurrency:
            """
            SELECT currency FROM notifications
            WHERE order_id = ? AND kind = 'refund' AND verdict = 'applied' AND currency IS NOT NULL LIMIT 1
            """
        }
    }
}
