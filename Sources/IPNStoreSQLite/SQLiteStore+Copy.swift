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
import IPNStore

/// `ipnd store copy` on SQLite: rows read in key order, inserted as they are.
extension SQLiteStore: StoreCopying {
    public func copyRows(_ table: CopyTable, after key: [CopyValue]?, limit: Int) async throws(StoreError) -> [[CopyValue]] {
        var sql = "SELECT \(table.columns.map(\.name).joined(separator: ", ")) FROM \(table.name)"
        var arguments: [DatabaseValue] = []
        if let key {
            let columns = table.key.joined(separator: ", ")
            let placeholders = Array(repeating: "?", count: key.count).joined(separator: ", ")
            sql += table.key.count == 1 ? " WHERE \(columns) > ?" : " WHERE (\(columns)) > (\(placeholders))"
            arguments = key.map(Self.databaseValue)
        }
        sql += " ORDER BY \(table.key.joined(separator: ", ")) LIMIT \(max(1, limit))"
        let query = sql
        let bound = StatementArguments(arguments)
        return try await database.read { db in
            try Row.fetchAll(db, sql: query, arguments: bound).map { row in
                table.columns.indices.map { index -> CopyValue in
                    let value: DatabaseValue = row[index]
                    switch value.storage {
                    case .null: return .null
                    case .int64(let number): return .int(number)
                    case .double(let number): return .int(Int64(number))
                    case .string(let text): return table.columns[index].type == .bytes ? .bytes(Array(text.utf8)) : .text(text)
                    case .blob(let data): return table.columns[index].type == .bytes ? .bytes([UInt8](data)) : .text(String(decoding: data, as: UTF8.self))
                    }
                }
            }
        }
    }

    public func insertCopiedRows(_ table: CopyTable, _ rows: [[CopyValue]]) async throws(StoreError) {
        guard !rows.isEmpty else { return }
        let sql = "INSERT INTO \(table.name) (\(table.columns.map(\.name).joined(separator: ", "))) VALUES ("
            + Array(repeating: "?", count: table.columns.count).joined(separator: ", ") + ")"
        try await database.write { db in
            let statement = try db.cachedStatement(sql: sql)
            for row in rows { try statement.execute(arguments: StatementArguments(row.map(Self.databaseValue))) }
        }
    }

    public func copiedRowCount(_ table: CopyTable) async throws(StoreError) -> Int {
        try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.name)") ?? 0 }
    }

    /// SQLite gives out ids above the highest one, and AUTOINCREMENT keeps `seq`'s; the console's
    /// hourly counts, which the write path keeps and the copy does not carry, are counted anew
    /// from the notifications copied.
    public func finishCopy() async throws(StoreError) {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM notification_counts")
            try db.execute(sql: NotificationCounts.backfillSQL)
        }
    }

    private static func databaseValue(_ value: CopyValue) -> DatabaseValue {
        switch value {
        case .null: .null
        case .int(let number): number.databaseValue
        case .text(let text): text.databaseValue
        case .bytes(let bytes): Data(bytes).databaseValue
        }
    }
}
