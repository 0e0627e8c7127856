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

/// The JSON objects of product.md section 1, shared by the CLI's `--format json` (and csv,
/// which takes their scalar members) and the ops API, so both say the same thing.
public enum RecordJSON {
    /// The scalar members of an order object, in order: the csv columns of `orders list`.
    public static let orderColumns = [
        "provider", "account", "order_ref", "provider_txn_id", "state", "amount_minor", "amount", "currency",
        "refunded_minor", "created_at", "updated_at",
    ]

    /// The members of a notification object, all scalar: the csv columns of `notifications list`.
    public static let notificationColumns = [
        "id", "provider", "account", "order_ref", "received_at", "verdict", "reason", "provider_status", "dedup_key",
        "client_ip", "source", "inquiry_id",
    ]

    /// An order: `provider`, `account`, `order_ref`, `provider_txn_id`, `state`,
    /// `amount_minor`, `amount`, `currency`, `refunded_minor`, `expected`, `flags`,
    /// `created_at`, `updated_at`.
    public static func order(_ order: OrderRecord) -> JSONOut {
        .object(orderMembers(order))
    }

    /// An order with `transitions`, `notifications`, `next_inquiry_at` and its newest
    /// `inquiries` (`orders show`, `GET /api/v1/orders/{provider}/{order_ref}`). With
    /// `includeRaw`, each notification also carries its raw body and kept headers.
    public static func orderDetail(_ detail: OrderDetail, includeRaw: Bool = false) -> JSONOut {
        .object(orderMembers(detail.order) + [
            ("transitions", .array(detail.transitions.map(transition))),
            ("notifications", .array(detail.notifications.map { notification($0, includeRaw: includeRaw) })),
            ("next_inquiry_at", .optional(detail.nextInquiryAt)),
            ("inquiries", .array(detail.inquiries.map(inquiry))),
        ])
    }

    /// The members of an inquiry object, all scalar: the csv columns of `inquiries list`.
    public static let inquiryColumns = [
        "id", "provider", "account", "order_ref", "asked_at", "trigger", "outcome", "http_status", "provider_status",
        "notification_id", "verdict", "error", "duration_ms", "url",
    ]

    /// An inquiry record (product.md section 12).
    public static func inquiry(_ inquiry: InquiryRecord) -> JSONOut {
        .object([
            ("id", .int(inquiry.id)),
            ("provider", .string(inquiry.provider)),
            ("account", .string(inquiry.account)),
            ("order_ref", .string(inquiry.orderRef)),
            ("asked_at", .string(inquiry.askedAt)),
            ("trigger", .string(inquiry.trigger.rawValue)),
            ("outcome", .string(inquiry.outcome.rawValue)),
            ("http_status", .optional(inquiry.httpStatus.map(Int64.init))),
            ("provider_status", .optional(inquiry.providerStatus)),
            ("notification_id", .optional(inquiry.notificationID)),
            ("verdict", .optional(inquiry.verdict?.rawValue)),
            ("error", .optional(inquiry.error)),
            ("duration_ms", .int(inquiry.durationMs)),
            ("url", .string(inquiry.url)),
        ])
    }

    /// A transition: `from` (null for the first), `to`, `at`, `notification_id` (null for a
    /// registered expectation).
    public static func transition(_ transition: TransitionRecord) -> JSONOut {
        .object([
            ("from", .optional(transition.from?.rawValue)),
            ("to", .string(transition.to.rawValue)),
            ("at", .string(transition.at)),
            ("notification_id", .optional(transition.notificationID)),
        ])
    }

    /// A received notification: `id`, `provider`, `account`, `order_ref`, `received_at`,
    /// `verdict`, `reason`, `provider_status`, `dedup_key`, `client_ip`, `source` (`provider`,
    /// or `inquiry` for a fact a status inquiry told) and `inquiry_id`; with `includeRaw`
    /// also `raw_body` (the body as text, null when it is not UTF-8), `raw_body_base64` (its
    /// exact bytes) and `raw_headers` (the kept header fields as `[name, value]` pairs).
    public static func notification(_ notification: NotificationRecord, includeRaw: Bool = false) -> JSONOut {
        var members: [(key: String, value: JSONOut)] = [
            ("id", .int(notification.id)),
            ("provider", .string(notification.provider)),
            ("account", .string(notification.account)),
            ("order_ref", .optional(notification.orderRef)),
            ("received_at", .string(notification.receivedAt)),
            ("verdict", .string(notification.verdict.rawValue)),
            ("reason", .optional(notification.reason)),
            ("provider_status", .optional(notification.providerStatus)),
            ("dedup_key", .optional(notification.dedupKey)),
            ("client_ip", .optional(notification.clientIP)),
            ("source", .string(notification.source)),
            ("inquiry_id", .optional(notification.inquiryID)),
        ]
        if includeRaw {
            let body = notification.body ?? []
            members.append(("raw_body", .optional(String(validating: body, as: UTF8.self))))
            members.append(("raw_body_base64", .string(Base64.encode(body))))
            members.append(("raw_headers", notification.headers.map(JSONOut.verbatim) ?? .null))
        }
        return .object(members)
    }

    /// An order event (product.md section 8): `id`, `seq`, `type`, `occurred_at`, `order` (the
    /// order object as it stood right after the event) and `change` (`from`, `to`, `flag`,
    /// `notification_id`, `provider_status`). The feed, the CLI's json lines and the delivered
    /// bodies are this text.
    public static func event(_ event: EventRecord) -> JSONOut {
        .object([
            ("id", .string(event.id)),
            ("seq", .int(event.seq)),
            ("type", .string(event.type.rawValue)),
            ("occurred_at", .string(event.occurredAt)),
            ("order", .verbatim(event.orderJSON)),
            ("change", .object([
                ("from", .optional(event.from?.rawValue)),
                ("to", .string(event.to.rawValue)),
                ("flag", .optional(event.flag)),
                ("notification_id", .optional(event.notificationID)),
                ("provider_status", .optional(event.providerStatus)),
            ])),
        ])
    }

    /// The csv columns of `events list`: the event's scalars, then its order's and change's.
    public static let eventColumns = [
        "seq", "id", "type", "occurred_at", "provider", "account", "order_ref", "from", "to", "flag", "notification_id",
        "provider_status",
    ]

    /// An event's csv row as an object of `eventColumns`.
    public static func eventRow(_ event: EventRecord) -> JSONOut {
        .object([
            ("seq", .int(event.seq)),
            ("id", .string(event.id)),
            ("type", .string(event.type.rawValue)),
            ("occurred_at", .string(event.occurredAt)),
            ("provider", .string(event.provider)),
            ("account", .string(event.account)),
            ("order_ref", .string(event.orderRef)),
            ("from", .optional(event.from?.rawValue)),
            ("to", .string(event.to.rawValue)),
            ("flag", .optional(event.flag)),
            ("notification_id", .optional(event.notificationID)),
            ("provider_status", .optional(event.providerStatus)),
        ])
    }

    /// A page of the feed: `{"events": [...], "next_after": SEQ}`.
    public static func eventPage(_ page: EventPage) -> JSONOut {
        .object([("events", .array(page.events.map(event))), ("next_after", .int(page.nextAfter))])
    }

    /// The members of a delivery object, all scalar: the csv columns of `deliveries list`.
    public static let deliveryColumns = [
        "id", "target", "event_id", "seq", "type", "provider", "account", "order_ref", "state", "attempts",
        "last_attempt_at", "last_status", "last_error", "next_attempt_at", "delivered_at",
    ]

    /// A delivery (product.md section 8).
    public static func delivery(_ delivery: DeliveryRecord) -> JSONOut {
        .object([
            ("id", .int(delivery.id)),
            ("target", .string(delivery.target)),
            ("event_id", .string(delivery.eventID)),
            ("seq", .int(delivery.seq)),
            ("type", .string(delivery.type.rawValue)),
            ("provider", .string(delivery.provider)),
            ("account", .string(delivery.account)),
            ("order_ref", .string(delivery.orderRef)),
            ("state", .string(delivery.state.rawValue)),
            ("attempts", .int(Int64(delivery.attempts))),
            ("last_attempt_at", .optional(delivery.lastAttemptAt)),
            ("last_status", .optional(delivery.lastStatus.map(Int64.init))),
            ("last_error", .optional(delivery.lastError)),
            ("next_attempt_at", .optional(delivery.nextAttemptAt)),
            ("delivered_at", .optional(delivery.deliveredAt)),
        ])
    }

    /// A page of a list: `{"items": [...], "next_cursor": "..." | null}`.
    public static func page(_ items: [JSONOut], nextCursor: String?) -> JSONOut {
        .object([("items", .array(items)), ("next_cursor", .optional(nextCursor))])
    }

    /// An API error: `{"error": "..."}`.
    public static func error(_ message: String) -> JSONOut {
        .object([("error", .string(message))])
    }

    private static func orderMembers(_ order: OrderRecord) -> [(key: String, value: JSONOut)] {
        [
            ("provider", .string(order.provider)),
            ("account", .string(order.account)),
            ("order_ref", .string(order.orderRef)),
            ("provider_txn_id", .optional(order.providerTxnID)),
            ("state", .string(order.state.rawValue)),
            ("amount_minor", .optional(order.amount?.minor)),
            ("amount", .optional(order.amount?.decimal)),
            ("currency", .optional(order.amount?.currency)),
            ("refunded_minor", .int(order.refundedMinor)),
            ("expected", order.expected.map(money) ?? .null),
            ("flags", .array(order.flags.map(JSONOut.string))),
            ("created_at", .string(order.createdAt)),
            ("updated_at", .string(order.updatedAt)),
        ]
    }

    private static func money(_ money: Money) -> JSONOut {
        .object([("amount_minor", .int(money.minor)), ("amount", .string(money.decimal)), ("currency", .string(money.currency))])
    }
}
