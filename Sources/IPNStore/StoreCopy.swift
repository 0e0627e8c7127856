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

/// A column value as `ipnd store copy` carries it from one store to another.
public enum CopyValue: Sendable, Equatable {
    case null
    case int(Int64)
    case text(String)
    case bytes([UInt8])
}

/// One table as both stores hold it: its columns, in order, and the key it is read in order of.
public struct CopyTable: Sendable, Equatable {
    public enum ColumnType: Sendable, Equatable {
        case int
        case text
        case bytes
    }

    public let name: String
    public let columns: [(name: String, type: ColumnType)]
    /// The columns that order the rows and page through them (the primary key).
    public let key: [String]

    public static func == (lhs: CopyTable, rhs: CopyTable) -> Bool { lhs.name == rhs.name }

    /// Where each key column is in `columns`.
    public var keyIndices: [Int] { key.compactMap { name in columns.firstIndex { $0.name == name } } }
}

/// Copying a whole store into an empty one (`ipnd store copy`), table by table, in pages read in
/// key order: both backends implement it, so a store moves either way.
public protocol StoreCopying: Sendable {
    /// Up to `limit` rows of `table` whose key is greater than `after` (nil: from the first), in
    /// key order, each with `table.columns`' values.
    func copyRows(_ table: CopyTable, after key: [CopyValue]?, limit: Int) async throws(StoreError) -> [[CopyValue]]
    /// Inserts rows read from another store, as they are (ids included).
    func insertCopiedRows(_ table: CopyTable, _ rows: [[CopyValue]]) async throws(StoreError)
    func copiedRowCount(_ table: CopyTable) async throws(StoreError) -> Int
    /// After the last insert: ids and seqs given out from now on follow the copied ones.
    func finishCopy() async throws(StoreError)
}

/// The tables a store copy moves, in an order that keeps every reference valid.
public enum StoreCopySchema {
    public static let tables: [CopyTable] = [
        CopyTable(name: "orders", columns: [
            ("id", .int), ("provider", .text), ("account", .text), ("order_ref", .text), ("provider_txn_id", .text),
            ("state", .text), ("amount_minor", .int), ("currency", .text), ("refunded_minor", .int),
            ("expected_amount_minor", .int), ("expected_currency", .text), ("flags", .text), ("created_at", .text),
            ("updated_at", .text), ("inquiry_from", .text), ("inquiry_step", .int), ("inquiry_due_at", .text),
        ], key: ["id"]),
        CopyTable(name: "notifications", columns: [
            ("id", .int), ("provider", .text), ("account", .text), ("received_at", .text), ("client_ip", .text), ("method", .text),
            ("target", .text), ("headers", .text), ("body", .bytes), ("verdict", .text), ("reason", .text), ("reason_detail", .text),
            ("kind", .text), ("provider_status", .text), ("dedup_key", .text), ("order_ref", .text), ("order_id", .int),
            ("provider_txn_id", .text), ("link_key", .text), ("amount_minor", .int), ("currency", .text), ("detail", .text),
            ("pending_effect", .text), ("reverified_from", .int), ("inquiry_id", .int),
        ], key: ["id"]),
        CopyTable(name: "inquiries", columns: [
            ("id", .int), ("provider", .text), ("account", .text), ("order_ref", .text), ("order_id", .int), ("asked_at", .text),
            ("trigger", .text), ("outcome", .text), ("http_status", .int), ("provider_status", .text), ("notification_id", .int),
            ("verdict", .text), ("error", .text), ("duration_ms", .int), ("url", .text),
        ], key: ["id"]),
        CopyTable(name: "transitions", columns: [
            ("id", .int), ("order_id", .int), ("from_state", .text), ("to_state", .text), ("at", .text), ("notification_id", .int),
        ], key: ["id"]),
        CopyTable(name: "dedup_keys", columns: [
            ("provider", .text), ("account", .text), ("dedup_key", .text), ("notification_id", .int),
        ], key: ["provider", "account", "dedup_key"]),
        CopyTable(name: "payment_links", columns: [
            ("provider", .text), ("account", .text), ("link_key", .text), ("order_id", .int),
        ], key: ["provider", "account", "link_key"]),
        CopyTable(name: "refunds", columns: [
            ("order_id", .int), ("refund_id", .text), ("amount_minor", .int), ("notification_id", .int),
        ], key: ["order_id", "refund_id"]),
        CopyTable(name: "events", columns: [
            ("seq", .int), ("id", .text), ("type", .text), ("occurred_at", .text), ("provider", .text), ("account", .text),
            ("order_id", .int), ("order_ref", .text), ("order_json", .text), ("from_state", .text), ("to_state", .text),
            ("flag", .text), ("notification_id", .int), ("provider_status", .text),
        ], key: ["seq"]),
        CopyTable(name: "deliveries", columns: [
            ("id", .int), ("target", .text), ("event_seq", .int), ("order_id", .int), ("state", .text), ("attempts", .int),
            ("first_attempt_at", .text), ("last_attempt_at", .text), ("last_status", .int), ("last_error", .text),
            ("next_attempt_at", .text), ("delivered_at", .text), ("lease_owner", .text), ("lease_until", .text), ("created_at", .text),
        ], key: ["id"]),
        CopyTable(name: "delivery_targets", columns: [("name", .text), ("paused_at", .text), ("paused_reason", .text)], key: ["name"]),
        CopyTable(name: "store_meta", columns: [("key", .text), ("value", .text)], key: ["key"]),
    ]
}
