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

/// Orders, notifications and dedup keys are scoped by provider and account.
public struct Scope: Sendable, Hashable {
    public let provider: String
    public let account: String

    public init(provider: String, account: String) {
        self.provider = provider
        self.account = account
    }
}

/// An order as the write path reads and writes it.
public struct StoredOrder: Sendable, Equatable {
    /// The row's id; nil for an order the plan creates (the backend assigns it).
    public var id: Int64?
    public let scope: Scope
    public let orderRef: String
    public var state: OrderState
    public var amount: Money?
    public var refundedMinor: Int64
    public var expected: Money?
    public var flags: [String]
    public var providerTxnID: String?
    public var createdAt: String
    public var updatedAt: String
    /// Where the order is in the inquiry schedule (product.md section 12).
    public var inquiry: InquiryScheduleState

    public init(
        id: Int64?, scope: Scope, orderRef: String, state: OrderState, amount: Money?, refundedMinor: Int64,
        expected: Money?, flags: [String], providerTxnID: String?, createdAt: String, updatedAt: String,
        inquiry: InquiryScheduleState = InquiryScheduleState()
    ) {
        self.id = id
        self.scope = scope
        self.orderRef = orderRef
        self.state = state
        self.amount = amount
        self.refundedMinor = refundedMinor
        self.expected = expected
        self.flags = flags
        self.providerTxnID = providerTxnID
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.inquiry = inquiry
    }

    /// The flags as the store keeps them: comma-separated.
    public var flagsText: String { flags.joined(separator: ",") }

    /// Flags from their stored text.
    public static func flags(fromText text: String) -> [String] {
        text.split(separator: ",").map(String.init)
    }

    var snapshot: OrderSnapshot {
        OrderSnapshot(state: state, amount: amount, refundedMinor: refundedMinor, expected: expected)
    }

    /// The orders-list object of product.md section 1, as events carry it.
    public var json: JSONOut {
        RecordJSON.order(OrderRecord(
            id: id ?? 0, provider: scope.provider, account: scope.account, orderRef: orderRef,
            providerTxnID: providerTxnID, state: state, amount: amount, refundedMinor: refundedMinor, expected: expected,
            flags: flags, createdAt: createdAt, updatedAt: updatedAt))
    }

    /// `json`'s text, written straight into bytes: every event carries it, and the writer (the
    /// store's one serial stage) builds it, where the tree of `json` and its text cost 18k
    /// instructions per event and this 13k (most of it the amount's decimal text and escaping).
    /// The same bytes (`StoredOrderTests`).
    public var jsonText: String {
        var out: [UInt8] = []
        out.reserveCapacity(320)
        func raw(_ text: StaticString) {
            text.withUTF8Buffer { out.append(contentsOf: $0) }
        }
        // `,"key":` (or `{"key":`), each piece a static string: no array or string is built.
        func member(_ key: StaticString, _ first: Bool = false) {
            raw(first ? "{\"" : ",\"")
            raw(key)
            raw("\":")
        }
        func string(_ text: String?) {
            guard let text else { return raw("null") }
            JSONText.appendQuoted(text, to: &out)
        }
        func int(_ value: Int64?) {
            guard let value else { return raw("null") }
            String(value).withUTF8Bytes { out.append(contentsOf: $0) }
        }
        member("provider", true)
        string(scope.provider)
        member("account")
        string(scope.account)
        member("order_ref")
        string(orderRef)
        member("provider_txn_id")
        string(providerTxnID)
        member("state")
        string(state.rawValue)
        member("amount_minor")
        int(amount?.minor)
        member("amount")
        string(amount?.decimal)
        member("currency")
        string(amount?.currency)
        member("refunded_minor")
        int(refundedMinor)
        member("expected")
        if let expected {
            member("amount_minor", true)
            int(expected.minor)
            member("amount")
            string(expected.decimal)
            member("currency")
            string(expected.currency)
            out.append(UInt8(ascii: "}"))
        } else {
            string(nil)
        }
        member("flags")
        out.append(UInt8(ascii: "["))
        for (index, flag) in flags.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            string(flag)
        }
        out.append(UInt8(ascii: "]"))
        member("created_at")
        string(createdAt)
        member("updated_at")
        string(updatedAt)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}

/// Where an order stands in the inquiry schedule: the store's `inquiry_from`, `inquiry_step`
/// and `inquiry_due_at` columns. Finding due orders reads an index on the due time.
public struct InquiryScheduleState: Sendable, Equatable {
    /// The change the schedule counts from (`Timestamp` text): creation, a transition, an
    /// expectation registered.
    public var from: String?
    /// Inquiries made since that change without news.
    public var step: Int
    /// When the order is asked next (`Timestamp` text); nil when it is not: settled, given up,
    /// or (while an inquiry runs) the lease's end.
    public var dueAt: String?

    public init(from: String? = nil, step: Int = 0, dueAt: String? = nil) {
        self.from = from
        self.step = step
        self.dueAt = dueAt
    }

    /// The moment (Unix ms) the schedule counts from: `from`, or, for an order scheduled before
    /// it was kept, the order's creation (`createdAt`).
    public func changedAtMillis(createdAt: String) -> Int64? {
        from.flatMap(Timestamp.parse) ?? Timestamp.parse(createdAt)
    }
}

/// A refund of an order the store remembers by id.
public struct StoredRefund: Sendable, Equatable {
    public var refundID: String
    public var amountMinor: Int64?

    public init(refundID: String, amountMinor: Int64?) {
        self.refundID = refundID
        self.amountMinor = amountMinor
    }
}

/// What a duplicate is recorded and answered with: its first delivery's order, as it is now.
public struct FirstDelivery: Sendable, Equatable {
    /// The first delivery's notification id.
    public var notificationID: Int64
    /// The order the first delivery's row names: the order's reference when it is linked to
    /// one, else the reference the first delivery itself carried.
    public var orderRef: String?
    public var orderID: Int64?
    /// The linked order's reference and state; nil when the first delivery has no order.
    public var currentOrderRef: String?
    public var orderState: OrderState?

    public init(notificationID: Int64, orderRef: String?, orderID: Int64?, currentOrderRef: String?, orderState: OrderState?) {
        self.notificationID = notificationID
        self.orderRef = orderRef
        self.orderID = orderID
        self.currentOrderRef = currentOrderRef
        self.orderState = orderState
    }
}

/// A notification stored `unlinked`, waiting for the payment its link names.
public struct WaitingNotification: Sendable, Equatable {
    public var id: Int64
    /// The verified notification as JSON text (`VerifiedNotification`'s Codable form); nil or
    /// unreadable when another version stored it.
    public var pendingEffect: String?

    public init(id: Int64, pendingEffect: String?) {
        self.id = id
        self.pendingEffect = pendingEffect
    }
}
