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

import IPNStore
import NIOCore
import PostgresNIO

/// `ipnd store copy` on PostgreSQL: rows read in key order (text keys compare in the C
/// collation, as SQLite compares them), inserted with one statement per page.
extension PostgresStore: StoreCopying {
    public func copyRows(_ table: CopyTable, after key: [CopyValue]?, limit: Int) async throws(StoreError) -> [[CopyValue]] {
        if table.name == "events", key == nil {
            // Events committed but not numbered yet (the last node stopped first) go with the copy.
            do {
                _ = try await EventSequencer.drain(client: client, logger: logger)
            } catch {
                throw StoreError(postgres: error, doing: "number the events committed before copying them")
            }
        }
        var sql = SQL("SELECT \(table.columns.map(\.name).joined(separator: ", ")) FROM \(table.name)")
        if let key {
            let placeholders = key.map { value -> String in
                switch value {
                case .int(let number): sql.bind(number)
                case .text(let text): sql.bind(text)
                case .bytes(let bytes): sql.bind(ByteBuffer(bytes: bytes))
                case .null: sql.bind(Optional<String>.none)
                }
            }
            sql.append(table.key.count == 1
                ? " WHERE \(table.key[0]) > \(placeholders[0])"
                : " WHERE (\(table.key.joined(separator: ", "))) > (\(placeholders.joined(separator: ", ")))")
        }
        sql.append(" ORDER BY \(table.key.joined(separator: ", ")) LIMIT \(sql.bind(Int64(max(1, limit))))")
        return try await rows(sql, doing: "read \(table.name) to copy").map { row throws(StoreError) in
            try record(row) { row in
                try table.columns.map { column -> CopyValue in
                    switch column.type {
                    case .int:
                        // bigint columns, and the few integer ones (attempts, last_status).
                        if let value = try? row.optionalInt(column.name) { return .int(value) }
                        return try row.optionalInt32(column.name).map { .int(Int64($0)) } ?? .null
                    case .text: return try row.optionalText(column.name).map(CopyValue.text) ?? .null
                    case .bytes: return .bytes(try row.bytes(column.name))
                    }
                }
            }
        }
    }

    public func insertCopiedRows(_ table: CopyTable, _ rows: [[CopyValue]]) async throws(StoreError) {
        guard !rows.isEmpty else { return }
        var batch = ColumnBatch(table.columns.count)
        for row in rows {
            batch.add(zip(row, table.columns).map { value, column -> ColumnBatch.Value in
                switch (value, column.type) {
                case (.int(let number), _): .int(number)
                case (.text(let text), _): .text(text)
                case (.bytes(let bytes), _): .bytes(bytes)
                case (.null, .int): .int(nil)
                case (.null, .bytes): .bytes([])
                case (.null, .text): .text(nil)
                }
            })
        }
        let types = table.columns.map { column -> String in
            switch column.type {
            case .int: "bigint"
            case .text: "text"
            case .bytes: "bytea"
            }
        }
        var sql = SQL()
        let columns = batch.bindColumns(into: &sql, types: types)
        let names = (1...types.count).map { "c\($0)" }.joined(separator: ", ")
        sql.append("INSERT INTO \(table.name) (\(table.columns.map(\.name).joined(separator: ", "))) SELECT \(names) FROM unnest(\(columns)) AS u (\(names))")
        try await execute(sql, doing: "copy \(table.name)")
    }

    public func copiedRowCount(_ table: CopyTable) async throws(StoreError) -> Int {
        guard let row = try await rows(SQL("SELECT count(*) AS n FROM \(table.name)"), doing: "count \(table.name)").first else { return 0 }
        return Int(try record(row) { try $0.int("n") })
    }

    public func finishCopy() async throws(StoreError) {
        for (sequence, table, column) in [
            ("orders_id_seq", "orders", "id"), ("notifications_id_seq", "notifications", "id"), ("events_seq", "events", "seq"),
            ("transitions_id_seq", "transitions", "id"), ("deliveries_id_seq", "deliveries", "id"),
            ("inquiries_id_seq", "inquiries", "id"),
        ] {
            try await execute(
                SQL("SELECT setval('\(sequence)', coalesce((SELECT max(\(column)) FROM \(table)), 0) + 1, false)"),
                doing: "advance \(sequence)")
        }
    }
}
