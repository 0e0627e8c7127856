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

/// A value of one column of a row the write path stores.
public enum RowValue: Sendable, Equatable {
    case null
    case int(Int64)
    case text(String)
    case bytes([UInt8])

    public static func text(_ value: String?) -> RowValue { value.map { .text($0) } ?? .null }
    public static func int(_ value: Int64?) -> RowValue { value.map { .int($0) } ?? .null }
}

/// What one kind of row is: its table, its columns in the order its `values` gives them, and
/// how it is written. Declared once, here; each backend makes its statements from it (SQLite
/// one row per statement, PostgreSQL a batch's rows per statement, as arrays expanded with
/// `unnest`).
public struct RowShape: Sendable {
    public enum ColumnType: Sendable {
        case int
        case text
        case bytes
    }

    /// How a row is written.
    public enum Write: Sendable {
        /// A new row; a duplicate key is an error.
        case insert
        /// A new row, unless one with its key is there already (the row is then not written).
        case insertUnlessPresent
        /// An update of the rows whose `keys` columns equal the row's and that meet `condition`
        /// (SQL on the table's own columns, or nil): the other columns are set.
        case update(keys: [String], condition: String?)
    }

    public let table: String
    public let columns: [(name: String, type: ColumnType)]
    public let write: Write

    public init(table: String, columns: [(name: String, type: ColumnType)], write: Write = .insert) {
        self.table = table
        self.columns = columns
        self.write = write
    }

    /// The column names, comma-separated, in order.
    public var columnList: String { columns.map(\.name).joined(separator: ", ") }

    /// For an update: the key columns' positions, and the set columns' positions.
    public var updateColumns: (keys: [Int], set: [Int])? {
        guard case .update(let keys, _) = write else { return nil }
        let keyIndices = keys.compactMap { key in columns.firstIndex { $0.name == key } }
        let set = columns.indices.filter { !keyIndices.contains($0) }
        return (keyIndices, set)
    }
}

/// A row the write path stores: one of the types below, the only place its columns are listed.
public protocol StoreRow: Sendable {
    static var shape: RowShape { get }
    /// The row's values, in `shape.columns`' order.
    var values: [RowValue] { get }
}

/// A new order. `id` is nil where the store gives it (SQLite); PostgreSQL allocates it first.
public struct OrderRow: StoreRow, Equatable {
    public var id: Int64?
    public var order: StoredOrder

    public init(id: Int64?, order: StoredOrder) {
        self.id = id
        self.order = order
    }

    public static let shape = RowShape(table: "orders", columns: [
        ("id", .int), ("provider", .text), ("account", .text), ("order_ref", .text), ("provider_txn_id", .text), ("state", .text),
        ("amount_minor", .int), ("currency", .text), ("refunded_minor", .int), ("expected_amount_minor", .int),
        ("expected_currency", .text), ("flags", .text), ("created_at", .text), ("updated_at", .text), ("inquiry_from", .text),
        ("inquiry_step", .int), ("inquiry_due_at", .text),
    ])

    public var values: [RowValue] {
        [
            .int(id), .text(order.scope.provider), .text(order.scope.account), .text(order.orderRef), .text(order.providerTxnID),
            .text(order.state.rawValue), .int(order.amount?.minor), .text(order.amount?.currency), .int(order.refundedMinor),
            .int(order.expected?.minor), .text(order.expected?.currency), .text(order.flagsText), .text(order.createdAt),
            .text(order.updatedAt), .text(order.inquiry.from), .int(Int64(order.inquiry.step)), .text(order.inquiry.dueAt),
        ]
    }
}

/// An order changed: every column a plan may change.
public struct OrderUpdateRow: StoreRow, Equatable {
    public var id: Int64
    public var order: StoredOrder

    public init(id: Int64, order: StoredOrder) {
        self.id = id
        self.order = order
    }

    public static let shape = RowShape(table: "orders", columns: [
        ("id", .int), ("state", .text), ("amount_minor", .int), ("currency", .text), ("refunded_minor", .int),
        ("expected_amount_minor", .int), ("expected_currency", .text), ("flags", .text), ("provider_txn_id", .text),
        ("updated_at", .text), ("inquiry_from", .text), ("inquiry_step", .int), ("inquiry_due_at", .text),
    ], write: .update(keys: ["id"], condition: nil))

    public var values: [RowValue] {
        [
            .int(id), .text(order.state.rawValue), .int(order.amount?.minor), .text(order.amount?.currency), .int(order.refundedMinor),
            .int(order.expected?.minor), .text(order.expected?.currency), .text(order.flagsText), .text(order.providerTxnID),
            .text(order.updatedAt), .text(order.inquiry.from), .int(Int64(order.inquiry.step)), .text(order.inquiry.dueAt),
        ]
    }
}

/// An order's next inquiry step (an inquiry that changed nothing).
public struct OrderScheduleRow: StoreRow, Equatable {
    public var id: Int64
    public var step: Int
    public var dueAt: String

    public init(id: Int64, step: Int, dueAt: String) {
        self.id = id
        self.step = step
        self.dueAt = dueAt
    }

    public static let shape = RowShape(
        table: "orders", columns: [("id", .int), ("inquiry_step", .int), ("inquiry_due_at", .text)],
        write: .update(keys: ["id"], condition: nil))

    public var values: [RowValue] { [.int(id), .int(Int64(step)), .text(dueAt)] }
}

/// A received notification. `id` is nil where the store gives it (SQLite).
public struct NotificationRow: StoreRow {
    public var id: Int64?
    public var planned: PlannedNotification
    /// The order it belongs to.
    public var orderID: Int64?

    public init(id: Int64?, planned: PlannedNotification, orderID: Int64?) {
        self.id = id
        self.planned = planned
        self.orderID = orderID
    }

    public static let shape = RowShape(table: "notifications", columns: [
        ("id", .int), ("provider", .text), ("account", .text), ("received_at", .text), ("client_ip", .text), ("target", .text),
        ("headers", .text), ("body", .bytes), ("verdict", .text), ("reason", .text), ("reason_detail", .text), ("kind", .text),
        ("provider_status", .text), ("dedup_key", .text), ("order_ref", .text), ("order_id", .int), ("provider_txn_id", .text),
        ("link_key", .text), ("amount_minor", .int), ("currency", .text), ("detail", .text), ("pending_effect", .text),
        ("reverified_from", .int), ("inquiry_id", .int),
    ])

    public var values: [RowValue] {
        let request = planned.request
        let notification = planned.notification
        return [
            .int(id), .text(request.provider), .text(request.account), .text(request.receivedAt), .text(request.clientIP),
            .text(request.target), .text(request.headers), .bytes(request.body), .text(planned.verdict.rawValue),
            .text(planned.reason), .text(planned.reasonDetail), .text(notification?.kind.rawValue), .text(notification?.providerStatus),
            .text(notification?.dedupKey), .text(planned.orderRef), .int(orderID), .text(notification?.providerTxnID),
            .text(notification?.link?.key), .int(notification?.amount?.minor), .text(notification?.amount?.currency),
            .text(planned.detailJSON), .text(planned.pendingEffect), .int(request.reverifiedFrom), .int(request.inquiryID),
        ]
    }
}

public struct TransitionRow: StoreRow, Equatable {
    public var orderID: Int64
    public var from: OrderState?
    public var to: OrderState
    public var at: String
    public var notificationID: Int64?

    public init(orderID: Int64, from: OrderState?, to: OrderState, at: String, notificationID: Int64?) {
        self.orderID = orderID
        self.from = from
        self.to = to
        self.at = at
        self.notificationID = notificationID
    }

    public static let shape = RowShape(table: "transitions", columns: [
        ("order_id", .int), ("from_state", .text), ("to_state", .text), ("at", .text), ("notification_id", .int),
    ])

    public var values: [RowValue] { [.int(orderID), .text(from?.rawValue), .text(to.rawValue), .text(at), .int(notificationID)] }
}

/// A refund remembered by id (once: a second row with its id is not written).
public struct RefundRow: StoreRow, Equatable {
    public var orderID: Int64
    public var refundID: String
    public var amountMinor: Int64?
    public var notificationID: Int64?

    public init(orderID: Int64, refundID: String, amountMinor: Int64?, notificationID: Int64?) {
        self.orderID = orderID
        self.refundID = refundID
        self.amountMinor = amountMinor
        self.notificationID = notificationID
    }

    public static let shape = RowShape(table: "refunds", columns: [
        ("order_id", .int), ("refund_id", .text), ("amount_minor", .int), ("notification_id", .int),
    ], write: .insertUnlessPresent)

    public var values: [RowValue] { [.int(orderID), .text(refundID), .int(amountMinor), .int(notificationID)] }
}

/// The dedup key a notification claimed.
public struct DedupKeyRow: StoreRow, Equatable {
    public var scope: Scope
    public var key: String
    public var notificationID: Int64

    public init(scope: Scope, key: String, notificationID: Int64) {
        self.scope = scope
        self.key = key
        self.notificationID = notificationID
    }

    public static let shape = RowShape(table: "dedup_keys", columns: [
        ("provider", .text), ("account", .text), ("dedup_key", .text), ("notification_id", .int),
    ])

    public var values: [RowValue] { [.text(scope.provider), .text(scope.account), .text(key), .int(notificationID)] }
}

/// A payment link registered for an order (once).
public struct LinkRow: StoreRow, Equatable {
    public var scope: Scope
    public var key: String
    public var orderID: Int64

    public init(scope: Scope, key: String, orderID: Int64) {
        self.scope = scope
        self.key = key
        self.orderID = orderID
    }

    public static let shape = RowShape(table: "payment_links", columns: [
        ("provider", .text), ("account", .text), ("link_key", .text), ("order_id", .int),
    ], write: .insertUnlessPresent)

    public var values: [RowValue] { [.text(scope.provider), .text(scope.account), .text(key), .int(orderID)] }
}

/// Redeliveries of notifications that waited under a payment link, stored as duplicates with no
/// order: they now belong to the link's order.
public struct AdoptedDuplicatesRow: StoreRow, Equatable {
    public var scope: Scope
    public var linkKey: String
    public var orderID: Int64
    public var orderRef: String

    public init(scope: Scope, linkKey: String, orderID: Int64, orderRef: String) {
        self.scope = scope
        self.linkKey = linkKey
        self.orderID = orderID
        self.orderRef = orderRef
    }

    public static let shape = RowShape(table: "notifications", columns: [
        ("provider", .text), ("account", .text), ("link_key", .text), ("order_id", .int), ("order_ref", .text),
    ], write: .update(keys: ["provider", "account", "link_key"], condition: "verdict = 'duplicate' AND order_id IS NULL"))

    public var values: [RowValue] { [.text(scope.provider), .text(scope.account), .text(linkKey), .int(orderID), .text(orderRef)] }
}

/// A notification that waited for its payment, applied to the payment's order.
public struct WaitingAppliedRow: StoreRow, Equatable {
    public var id: Int64
    public var verdict: Verdict
    public var reason: String?
    public var reasonDetail: String
    public var orderID: Int64
    public var orderRef: String

    public init(id: Int64, verdict: Verdict, reason: String?, reasonDetail: String, orderID: Int64, orderRef: String) {
        self.id = id
        self.verdict = verdict
        self.reason = reason
        self.reasonDetail = reasonDetail
        self.orderID = orderID
        self.orderRef = orderRef
    }

    public static let shape = RowShape(table: "notifications", columns: [
        ("id", .int), ("verdict", .text), ("reason", .text), ("reason_detail", .text), ("order_id", .int), ("order_ref", .text),
        ("pending_effect", .text),
    ], write: .update(keys: ["id"], condition: nil))

    public var values: [RowValue] {
        [.int(id), .text(verdict.rawValue), .text(reason), .text(reasonDetail), .int(orderID), .text(orderRef), .null]
    }
}

/// A notification that waited for its payment and cannot be applied: it says why.
public struct WaitingUnreadableRow: StoreRow, Equatable {
    public var id: Int64
    public var reasonDetail: String

    public init(id: Int64, reasonDetail: String) {
        self.id = id
        self.reasonDetail = reasonDetail
    }

    public static let shape = RowShape(
        table: "notifications", columns: [("id", .int), ("reason_detail", .text)], write: .update(keys: ["id"], condition: nil))

    public var values: [RowValue] { [.int(id), .text(reasonDetail)] }
}

/// An order event, with the delivery targets it is owed to. SQLite numbers it (`seq`) as it is
/// inserted and writes its deliveries with it; PostgreSQL queues it and numbers it once
/// committed (`EventSequencer`), writing its deliveries then.
public struct EventRow: StoreRow, Equatable {
    /// A UUIDv7 (`EventID`), fixed for the event's life.
    public var id: String
    public var type: EventType
    public var occurredAt: String
    public var scope: Scope
    public var orderID: Int64
    public var orderRef: String
    public var orderJSON: String
    public var from: OrderState?
    public var to: OrderState
    public var flag: String?
    public var notificationID: Int64?
    public var providerStatus: String?
    /// The delivery targets whose routes take it.
    public var targets: [String]

    public init(
        id: String, type: EventType, occurredAt: String, scope: Scope, orderID: Int64, orderRef: String, orderJSON: String,
        from: OrderState?, to: OrderState, flag: String?, notificationID: Int64?, providerStatus: String?, targets: [String]
    ) {
        self.id = id
        self.type = type
        self.occurredAt = occurredAt
        self.scope = scope
        self.orderID = orderID
        self.orderRef = orderRef
        self.orderJSON = orderJSON
        self.from = from
        self.to = to
        self.flag = flag
        self.notificationID = notificationID
        self.providerStatus = providerStatus
        self.targets = targets
    }

    public static let shape = RowShape(table: "events", columns: [
        ("id", .text), ("type", .text), ("occurred_at", .text), ("provider", .text), ("account", .text), ("order_id", .int),
        ("order_ref", .text), ("order_json", .text), ("from_state", .text), ("to_state", .text), ("flag", .text),
        ("notification_id", .int), ("provider_status", .text),
    ])

    public var values: [RowValue] {
        [
            .text(id), .text(type.rawValue), .text(occurredAt), .text(scope.provider), .text(scope.account), .int(orderID),
            .text(orderRef), .text(orderJSON), .text(from?.rawValue), .text(to.rawValue), .text(flag), .int(notificationID),
            .text(providerStatus),
        ]
    }
}

/// An event owed to a target, due at once.
public struct DeliveryRow: StoreRow, Equatable {
    public var target: String
    public var eventSeq: Int64
    public var orderID: Int64
    public var createdAt: String

    public init(target: String, eventSeq: Int64, orderID: Int64, createdAt: String) {
        self.target = target
        self.eventSeq = eventSeq
        self.orderID = orderID
        self.createdAt = createdAt
    }

    public static let shape = RowShape(table: "deliveries", columns: [
        ("target", .text), ("event_seq", .int), ("order_id", .int), ("state", .text), ("next_attempt_at", .text),
        ("created_at", .text),
    ])

    public var values: [RowValue] {
        [.text(target), .int(eventSeq), .int(orderID), .text(DeliveryState.pending.rawValue), .text(createdAt), .text(createdAt)]
    }
}

/// An inquiry's record.
public struct InquiryRow: StoreRow, Equatable {
    public var record: InquiryRecord
    public var orderID: Int64?

    public init(record: InquiryRecord, orderID: Int64?) {
        self.record = record
        self.orderID = orderID
    }

    public static let shape = RowShape(table: "inquiries", columns: [
        ("id", .int), ("provider", .text), ("account", .text), ("order_ref", .text), ("order_id", .int), ("asked_at", .text),
        ("trigger", .text), ("outcome", .text), ("http_status", .int), ("provider_status", .text), ("notification_id", .int),
        ("verdict", .text), ("error", .text), ("duration_ms", .int), ("url", .text),
    ])

    public var values: [RowValue] {
        [
            .int(record.id), .text(record.provider), .text(record.account), .text(record.orderRef), .int(orderID),
            .text(record.askedAt), .text(record.trigger.rawValue), .text(record.outcome.rawValue),
            .int(record.httpStatus.map(Int64.init)), .text(record.providerStatus), .int(record.notificationID),
            .text(record.verdict?.rawValue), .text(record.error), .int(record.durationMs), .text(record.url),
        ]
    }
}
