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
import NIOCore
import PostgresNIO

/// A result row read by column name.
struct PGRow {
    private let row: PostgresRandomAccessRow

    init(_ row: PostgresRow) {
        self.row = row.makeRandomAccess()
    }

    func int(_ column: String) throws -> Int64 { try row[column].decode(Int64.self) }
    func optionalInt(_ column: String) throws -> Int64? { try row[column].decode(Int64?.self) }
    func int32(_ column: String) throws -> Int32 { try row[column].decode(Int32.self) }
    func optionalInt32(_ column: String) throws -> Int32? { try row[column].decode(Int32?.self) }
    func text(_ column: String) throws -> String { try row[column].decode(String.self) }
    func optionalText(_ column: String) throws -> String? { try row[column].decode(String?.self) }
    func bool(_ column: String) throws -> Bool { try row[column].decode(Bool.self) }
    func bytes(_ column: String) throws -> [UInt8] {
        guard let buffer = try row[column].decode(ByteBuffer?.self) else { return [] }
        return Array(buffer.readableBytesView)
    }

    func state(_ column: String) throws -> OrderState {
        let text = try text(column)
        guard let state = OrderState(rawValue: text) else {
            throw StoreError(message: "an order has an unknown state \"\(text)\" in the store")
        }
        return state
    }

    func optionalState(_ column: String) throws -> OrderState? {
        guard let text = try optionalText(column) else { return nil }
        guard let state = OrderState(rawValue: text) else {
            throw StoreError(message: "an order has an unknown state \"\(text)\" in the store")
        }
        return state
    }

    func money(_ minor: String, _ currency: String) throws -> Money? {
        guard let amount = try optionalInt(minor), let code = try optionalText(currency) else { return nil }
        return Money(minor: amount, currency: code)
    }
}

extension PostgresConnection {
    /// Ends a transaction that failed: ROLLBACK. A connection that cannot take it (lost, or its
    /// task cancelled mid-statement by a timeout) is closed, so that the pool never hands out one
    /// still inside a transaction.
    func rollBackOrClose(logger: Logger) async {
        if Task.isCancelled {
            try? await close()
            return
        }
        do {
            _ = try await query("ROLLBACK", logger: logger)
        } catch {
            try? await close()
        }
    }

    /// Runs `sql` and reads every row it returns.
    func rows(_ sql: SQL, logger: Logger) async throws -> [PGRow] {
        var rows: [PGRow] = []
        for try await row in try await query(sql.query, logger: logger) { rows.append(PGRow(row)) }
        return rows
    }

    /// Runs `sql`, which returns no rows (or whose rows are not needed).
    func run(_ sql: SQL, logger: Logger) async throws {
        _ = try await query(sql.query, logger: logger)
    }
}

extension PostgresClient {
    func rows(_ sql: SQL, logger: Logger) async throws -> [PGRow] {
        var rows: [PGRow] = []
        for try await row in try await query(sql.query, logger: logger) { rows.append(PGRow(row)) }
        return rows
    }
}

/// The columns an order is read from, in `StoredOrder`/`OrderRecord` terms.
enum OrderColumns {
    static let list = """
        id, provider, account, order_ref, provider_txn_id, state, amount_minor, currency, refunded_minor,
        expected_amount_minor, expected_currency, flags, created_at, updated_at, inquiry_from, inquiry_step, inquiry_due_at
        """

    static func stored(_ row: PGRow) throws -> StoredOrder {
        StoredOrder(
            id: try row.int("id"), scope: Scope(provider: try row.text("provider"), account: try row.text("account")),
            orderRef: try row.text("order_ref"), state: try row.state("state"), amount: try row.money("amount_minor", "currency"),
            refundedMinor: try row.int("refunded_minor"), expected: try row.money("expected_amount_minor", "expected_currency"),
            flags: StoredOrder.flags(fromText: try row.text("flags")), providerTxnID: try row.optionalText("provider_txn_id"),
            createdAt: try row.text("created_at"), updatedAt: try row.text("updated_at"),
            inquiry: InquiryScheduleState(
                from: try row.optionalText("inquiry_from"), step: Int(try row.int32("inquiry_step")),
                dueAt: try row.optionalText("inquiry_due_at")))
    }

    static func record(_ row: PGRow) throws -> OrderRecord {
        OrderRecord(
            id: try row.int("id"), provider: try row.text("provider"), account: try row.text("account"),
            orderRef: try row.text("order_ref"), providerTxnID: try row.optionalText("provider_txn_id"), state: try row.state("state"),
            amount: try row.money("amount_minor", "currency"), refundedMinor: try row.int("refunded_minor"),
            expected: try row.money("expected_amount_minor", "expected_currency"),
            flags: StoredOrder.flags(fromText: try row.text("flags")), createdAt: try row.text("created_at"),
            updatedAt: try row.text("updated_at"))
    }
}
