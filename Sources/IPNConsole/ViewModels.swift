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

// The values templates print. Mustache reads them by reflection; every String here is escaped
// as it is printed (`HTMLText`), so models hold text as it is, never pre-escaped HTML.

/// What every page has around its own content: the layout's values.
struct PageFrame<Body>: Sendable where Body: Sendable {
    let pageTitle: String
    let signedIn: Bool
    let navItems: [NavItem]
    /// The session's CSRF token, for every form on the page.
    let csrfToken: String
    let flashMessage: String?
    let errorMessage: String?
    let page: Body
}

/// A link of the top bar.
struct NavItem: Sendable {
    let href: String
    let label: String
    let isCurrent: Bool

    /// The console's pages, `current` marked.
    static func all(current: String) -> [NavItem] {
        [("/", "Overview"), ("/orders", "Orders"), ("/notifications", "Notifications"), ("/deliveries", "Deliveries")]
            .map { NavItem(href: $0.0, label: $0.1, isCurrent: $0.0 == current) }
    }
}

/// One choice of a filter's `<select>`.
struct SelectOption: Sendable {
    let optionValue: String
    let optionSelected: Bool

    static func list(_ values: [String], selected: String?) -> [SelectOption] {
        values.map { SelectOption(optionValue: $0, optionSelected: $0 == selected) }
    }
}

/// A row of an orders table.
struct OrderRow: Sendable {
    let link: String
    let orderRef: String
    let provider: String
    let account: String
    let state: String
    let amount: String
    let refunded: String
    let expected: String
    let flagList: [String]
    let updatedAt: String

    init(_ order: OrderRecord) {
        link = URLText.order(provider: order.provider, account: order.account, orderRef: order.orderRef)
        orderRef = order.orderRef
        provider = order.provider
        account = order.account
        state = order.state.rawValue
        amount = order.amount?.description ?? ""
        refunded = order.refundedMinor == 0 ? "" : Money.decimalText(minor: order.refundedMinor, currency: order.amount?.currency ?? "")
        expected = order.expected?.description ?? ""
        flagList = order.flags
        updatedAt = order.updatedAt
    }
}

/// A row of a deliveries table (the deliveries page, an order's page).
struct DeliveryRow: Sendable {
    let deliveryID: Int64
    let deliveryTarget: String
    let deliverySeq: Int64
    let deliveryType: String
    let deliveryOrderRef: String
    let deliveryOrderLink: String
    let deliveryState: String
    let deliveryAttempts: Int
    let deliveryLastAttempt: String
    let deliveryLastAnswer: String
    let deliveryNextAttempt: String
    /// Failed: the row offers a retry.
    let deliveryRetryable: Bool

    init(_ delivery: DeliveryRecord) {
        deliveryID = delivery.id
        deliveryTarget = delivery.target
        deliverySeq = delivery.seq
        deliveryType = delivery.type.rawValue
        deliveryOrderRef = delivery.orderRef
        deliveryOrderLink = URLText.order(provider: delivery.provider, account: delivery.account, orderRef: delivery.orderRef)
        deliveryState = delivery.state.rawValue
        deliveryAttempts = delivery.attempts
        deliveryLastAttempt = delivery.lastAttemptAt ?? ""
        deliveryLastAnswer = [delivery.lastStatus.map { "HTTP \($0)" }, delivery.lastError].compactMap { $0 }.joined(separator: ": ")
        deliveryNextAttempt = delivery.nextAttemptAt ?? ""
        deliveryRetryable = delivery.state == .failed
    }
}

/// A stored request as people read it: its header fields one per line, its body by lines.
struct RawRequestView: Sendable {
    let headerLines: [String]
    let bodyLines: [String]
    let bodyBytes: Int
    let bodyNotUTF8: Bool

    /// nil when the record was read without its raw request.
    init?(_ notification: NotificationRecord) {
        guard let body = notification.body else { return nil }
        headerLines = Self.headerLines(notification.headers ?? "")
        bodyBytes = body.count
        bodyNotUTF8 = String(validating: body, as: UTF8.self) == nil
        bodyLines = String(decoding: body, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .map { String($0.hasSuffix("\r") ? $0.dropLast() : $0) }
    }

    /// `name: value` per stored field (a JSON array of `[name, value]` pairs); the stored text
    /// itself when it is not that.
    static func headerLines(_ json: String) -> [String] {
        guard !json.isEmpty else { return [] }
        guard case .array(let fields, _)? = try? JSONParser.parse(Array(json.utf8)) else { return [json] }
        return fields.map { field in
            if case .array(let pair, _) = field, pair.count == 2, let name = pair[0].string, let value = pair[1].string {
                return "\(name): \(value)"
            }
            return field.signingText
        }
    }
}

/// A count of rejections with one reason, linking to them.
struct ReasonCount: Sendable {
    let reasonLabel: String
    let reasonCount: Int
    let reasonLink: String
}

/// A delivery target's standing (the overview, the deliveries page).
struct TargetRow: Sendable {
    let targetName: String
    let targetLink: String
    let targetPaused: Bool
    let targetPausedAt: String
    let targetPausedReason: String
    let targetBacklog: Int
    let targetOldest: String
    let targetFailed: Int
    /// The target's failed deliveries, when it has any.
    let targetFailedLink: String?

    init(_ status: DeliveryTargetStatus) {
        targetName = status.name
        targetLink = URLText.link("/deliveries", [("target", status.name)])
        targetPaused = status.pausedAt != nil
        targetPausedAt = status.pausedAt ?? ""
        targetPausedReason = status.pausedReason ?? ""
        targetBacklog = status.backlog
        targetOldest = status.oldestPendingAt ?? ""
        targetFailed = status.failed
        targetFailedLink = status.failed > 0 ? URLText.link("/deliveries", [("target", status.name), ("state", "failed")]) : nil
    }
}

/// The rejection counts by reason from hourly counts, most frequent first, each linking to the
/// rejected notifications since `since`.
func rejectionCounts(_ counts: [HourlyNotificationCount], since: String, provider: String? = nil, account: String? = nil)
    -> [ReasonCount]
{
    var byReason: [String: Int] = [:]
    for count in counts where count.verdict == .rejected {
        byReason[count.reason ?? "(none)", default: 0] += count.count
    }
    return byReason.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { reason, count in
        ReasonCount(
            reasonLabel: reason, reasonCount: count,
            reasonLink: URLText.link("/notifications", [
                ("provider", provider), ("account", account), ("verdict", "rejected"), ("since", since),
            ]))
    }
}

/// One inquiry on an order's page.
struct InquiryRow: Sendable {
    let inquiryID: Int64
    let inquiryAskedAt: String
    let inquiryTrigger: String
    let inquiryOutcome: String
    let inquiryHTTP: String
    let inquiryStatus: String
    let inquiryNotification: Int64?
    let inquiryNotificationLink: String?
    let inquiryError: String?
    let inquiryMilliseconds: Int64

    init(_ inquiry: InquiryRecord) {
        inquiryID = inquiry.id
        inquiryAskedAt = inquiry.askedAt
        inquiryTrigger = inquiry.trigger.rawValue
        inquiryOutcome = inquiry.outcome.rawValue
        inquiryHTTP = inquiry.httpStatus.map(String.init) ?? ""
        inquiryStatus = inquiry.providerStatus ?? ""
        inquiryNotification = inquiry.notificationID
        inquiryNotificationLink = inquiry.notificationID.map { "/notifications/\($0)" }
        inquiryError = inquiry.error
        inquiryMilliseconds = inquiry.durationMs
    }
}
