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
@testable import IPNConsole
import IPNCore
import IPNServer
import IPNStore
import Mustache
import Testing

/// The console's pieces without a daemon: escaping, links, the sign-in slow-down, the chart.
@Suite("The ops console's parts (issue 32)")
struct ConsoleUnitTests {
    @Test("HTML escaping goes by Unicode scalar: a quote or bracket followed by a combining mark is escaped too")
    func escapingByScalar() {
        #expect(HTMLText.escape("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&#39;")
        // One Character each, which Mustache's own escaping (by Character) would leave as is.
        #expect(HTMLText.escape("\"\u{301} onmouseover=x") == "&quot;\u{301} onmouseover=x")
        #expect(HTMLText.escape("<\u{338}script") == "&lt;\u{338}script")
        #expect(HTMLText.escape("plain text") == "plain text")
    }

    @Test("every template is escaped by the console's content type, hidden characters written as the CLI writes them")
    func templatesEscape() throws {
        MustacheContentTypes.register(HTMLText(visible: VisibleText.escaping), named: HTMLText.contentTypeName)
        let library = try ConsoleTemplates.library()
        let hostile = "\"\u{301}><script>\u{202E}x"
        let frame = PageFrame(
            pageTitle: hostile, signedIn: true, navItems: NavItem.all(current: "/"), csrfToken: "t", flashMessage: hostile,
            errorMessage: nil, page: MessagePage(text: hostile, backLink: "/", backLabel: hostile))
        let html = try #require(library.render(frame, withTemplate: "message"))
        #expect(!html.contains("<script>") && !html.unicodeScalars.contains("\u{202E}"))
        #expect(html.contains("&quot;\u{301}&gt;&lt;script&gt;\\u{202e}x"))
        // No template prints a value unescaped.
        for (name, text) in ConsoleTemplates.all {
            #expect(!text.contains("{{{") && !text.contains("{{&"), "\(name)")
        }
    }

    @Test("links: path segments and query values percent-encoded whole; only local paths are returned to")
    func links() {
        #expect(URLText.order(provider: "unlimint", account: "default", orderRef: "A/B?c#d %e") ==
                "/orders/unlimint/default/A%2FB%3Fc%23d%20%25e")
        #expect(URLText.link("/orders", [("q", "a&b=c"), ("state", nil), ("since", "")]) == "/orders?q=a%26b%3Dc")
        #expect(URLText.isLocalPath("/orders?state=paid"))
        for path in ["//evil.example/", "/\\evil.example", "https://evil.example/", "orders", "/a b", ""] {
            #expect(!URLText.isLocalPath(path), "\(path)")
        }
    }

    @Test("query strings decode as a browser's form encodes them: + is a space, %XX a byte; a broken escape stays as typed")
    func formQuery() {
        let query = FormQuery("q=A+B%26C%2B%25&empty=&bare&broken=50%&latin=%E9&q=second&%6Eame=x")
        #expect(query["q"] == "A B&C+%")
        #expect(query["empty"] == "" && query["bare"] == "")
        #expect(query["broken"] == "50%")
        #expect(query["latin"] == "%E9")  // not UTF-8: kept as written
        #expect(query["name"] == "x")
        #expect(query["missing"] == nil)
        #expect(FormQuery("")["q"] == nil)
    }

    @Test("failed sign-ins from one address wait longer each time, up to 8 s; other addresses and a success start afresh")
    func throttle() {
        #expect((1...8).map(SignInThrottle.delay(failures:)) == [250, 500, 1000, 2000, 4000, 8000, 8000, 8000])
        let throttle = SignInThrottle()
        let now: Int64 = 1_000_000
        #expect(throttle.wait(for: "10.0.0.1", now: now) == .zero)
        #expect(throttle.failed("10.0.0.1", now: now) == (1, 250))
        #expect(throttle.wait(for: "10.0.0.1", now: now) == .milliseconds(250))
        #expect(throttle.wait(for: "10.0.0.2", now: now) == .zero)
        #expect(throttle.failed("10.0.0.1", now: now + 100) == (2, 500))
        // Blocked from the end of the previous block: 250 ms, then 500 more.
        #expect(throttle.wait(for: "10.0.0.1", now: now + 100) == .milliseconds(650))
        // Forgotten fifteen minutes after the last failure.
        #expect(throttle.wait(for: "10.0.0.1", now: now + SignInThrottle.forgetAfterMilliseconds + 200) == .zero)
        #expect(throttle.failed("10.0.0.1", now: now + SignInThrottle.forgetAfterMilliseconds + 200).failures == 1)
        throttle.succeeded("10.0.0.1")
        #expect(throttle.wait(for: "10.0.0.1", now: now + SignInThrottle.forgetAfterMilliseconds + 200) == .zero)
    }

    @Test("the chart: 24 hourly bars, stacked by verdict in proportion, on a rounded scale")
    func chart() throws {
        #expect([0, 1, 2, 3, 7, 10, 11, 150, 1000, 1001].map(HourlyChart.roundedUp) == [2, 2, 2, 5, 10, 10, 20, 200, 1000, 2000])
        let window = OverviewWindow(nowMilliseconds: try #require(Timestamp.parse("2026-11-26T10:30:00Z")))
        #expect(window.start == "2026-11-25T11:00:00.000Z" && window.hourStarts.last == "2026-11-26T10:00:00.000Z")
        let counts = [
            HourlyNotificationCount(hour: "2026-11-26T10:00:00.000Z", provider: "p", account: "a", verdict: .applied, reason: nil, count: 6),
            HourlyNotificationCount(hour: "2026-11-26T10:00:00.000Z", provider: "p", account: "a", verdict: .rejected, reason: "x", count: 2),
            HourlyNotificationCount(hour: "2026-11-26T09:00:00.000Z", provider: "q", account: "a", verdict: .applied, reason: nil, count: 4),
        ]
        let chart = HourlyChart(window: window, counts: counts)
        #expect(chart.bars.count == 24 && chart.legend == ["applied", "rejected"])
        let last = try #require(chart.bars.last)
        #expect(last.segments.map(\.verdict) == ["applied", "rejected"])
        // 8 of a scale of 10: the two segments fill 80 % of the plot, in proportion 6:2.
        let heights = last.segments.map(\.height)
        #expect(abs(heights.reduce(0, +) - last.fullHeight * 0.8) < 0.1)
        #expect(abs(heights[0] - 3 * heights[1]) < 0.1)
        #expect(last.summary == "2026-11-26 10:00 UTC: 8 notifications (6 applied, 2 rejected)")
        #expect(chart.bars[22].segments.map(\.verdict) == ["applied"] && chart.bars[0].segments.isEmpty)
        #expect(chart.gridLines.map(\.label) == ["0", "5", "10"])
    }

    @Test("each page's model serves every field its templates may read, by name (TemplateFields.swift)")
    func templateFields() throws {
        let order = OrderRecord(
            id: 7, provider: "unlimint", account: "default", orderRef: "R-1", providerTxnID: "T-1", state: .paid,
            amount: Money(minor: 1000, currency: "USD"), refundedMinor: 100, expected: Money(minor: 900, currency: "USD"),
            flags: ["amount_mismatch"], createdAt: "2026-11-26T10:00:00.000Z", updatedAt: "2026-11-26T10:01:00.000Z")
        let note = NotificationRecord(
            id: 3, provider: "unlimint", account: "default", orderRef: "R-1", receivedAt: "2026-11-26T10:00:00.000Z",
            verdict: .mismatch, reason: "amount_mismatch", reasonDetail: "paid 10.00", kind: "payment", providerStatus: "COMPLETED",
            dedupKey: "k", clientIP: "127.0.0.1", providerTxnID: "T-1", amount: Money(minor: 1000, currency: "USD"), detail: "{}",
            body: Array("{}".utf8), headers: #"[["content-type","application/json"]]"#, reverifiedFrom: 2)
        let event = EventRecord(
            seq: 4, id: "e", type: .flagged, occurredAt: "2026-11-26T10:00:00.001Z", provider: "unlimint", account: "default",
            orderRef: "R-1", orderJSON: "{}", from: .paid, to: .paid, flag: "amount_mismatch", notificationID: 3, providerStatus: "COMPLETED")
        let delivery = DeliveryRecord(
            id: 9, target: "app", eventID: "e", seq: 4, type: .flagged, provider: "unlimint", account: "default", orderRef: "R-1",
            state: .failed, attempts: 3, lastAttemptAt: "2026-11-26T10:02:00.000Z", lastStatus: 500, lastError: "HTTP 500",
            nextAttemptAt: nil, deliveredAt: nil, createdAt: "2026-11-26T10:00:00.001Z")
        let target = DeliveryTargetStatus(
            name: "app", pausedAt: "2026-11-26T10:03:00.000Z", pausedReason: "410", backlog: 1, oldestPendingAt: "2026-11-26T10:00:00.000Z", failed: 1)
        let detail = OrderDetail(
            order: order, transitions: [TransitionRecord(from: nil, to: .pending, at: "2026-11-26T09:00:00.000Z", notificationID: nil),
                                        TransitionRecord(from: .pending, to: .paid, at: "2026-11-26T10:00:00.000Z", notificationID: 3)],
            notifications: [note], events: [event], nextInquiryAt: "2026-11-26T11:00:00.000Z",
            inquiries: [InquiryRecord(
                id: 5, provider: "unlimint", account: "default", orderRef: "R-1", askedAt: "2026-11-26T10:10:00.000Z", trigger: .console,
                outcome: .recorded, httpStatus: 200, providerStatus: "COMPLETED", notificationID: 3, verdict: .applied, error: "e",
                durationMs: 12, url: "https://cardpay.com/api/payments")])
        let window = OverviewWindow(nowMilliseconds: try #require(Timestamp.parse("2026-11-26T10:30:00Z")))
        let counts = [HourlyNotificationCount(
            hour: "2026-11-26T10:00:00.000Z", provider: "unlimint", account: "default", verdict: .rejected, reason: "bad_signature", count: 2)]
        let models: [(String, Any)] = [
            ("overview", OverviewPage(window: window, counts: counts, states: [.paid: 1], flagged: FlaggedOrders(total: 2, newest: [order]),
                                      targets: [target])),
            ("order", OrderPage(detail: detail, deliveries: [delivery], showRaw: true, path: "/orders/unlimint/default/R-1", asked: true)),
            ("orders", OrdersPage(
                providerOptions: SelectOption.list(["unlimint"], selected: "unlimint"), accountFilter: "", stateOptions: [],
                sinceFilter: "", searchText: "R", searching: true, orderRows: [OrderRow(order)], firstPageLink: "/orders",
                nextPageLink: "/orders?before=7")),
            ("notifications", NotificationsPage(
                providerOptions: [], accountFilter: "", verdictOptions: SelectOption.list(["applied"], selected: nil), sinceFilter: "",
                rejectionWindow: "", rejections: rejectionCounts(counts, since: window.start), notificationRows: [NotificationRow(note)],
                firstPageLink: "/notifications", nextPageLink: "/notifications?before=3")),
            ("notification", NotificationPage(note)),
            ("deliveries", DeliveriesPage(
                targetRows: [TargetRow(target)], targetOptions: [], stateOptions: [], deliveryRows: [DeliveryRow(delivery)],
                returnPath: "/deliveries", firstPageLink: "/deliveries", nextPageLink: "/deliveries?before=9")),
            ("frame", PageFrame(pageTitle: "t", signedIn: true, navItems: NavItem.all(current: "/"), csrfToken: "c",
                                flashMessage: "f", errorMessage: "e", page: MessagePage(text: "x", backLink: "/", backLabel: "b"))),
            ("sign-in", SignInPage(signInToken: "t", nextPath: "/")),
        ]
        for (name, model) in models { expectServesEveryField(model, path: name) }
    }

    /// Every field of `value` holding something, and of the console's models inside it, is
    /// served by `child(named:)`; every console model serves names at all.
    private func expectServesEveryField(_ value: Any, path: String) {
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .collection?:
            for (index, element) in mirror.children.enumerated() { expectServesEveryField(element.value, path: "\(path)[\(index)]") }
        case .optional?:
            if let wrapped = mirror.children.first { expectServesEveryField(wrapped.value, path: path) }
        case .struct? where String(reflecting: type(of: value)).hasPrefix("IPNConsole."):
            guard let parent = value as? any MustacheParent else {
                Issue.record("\(path): \(type(of: value)) does not serve its fields by name")
                return
            }
            for child in mirror.children {
                guard let label = child.label else { continue }
                let field = Mirror(reflecting: child.value)
                let isNil = field.displayStyle == .optional && field.children.isEmpty
                if !isNil { #expect(parent.child(named: label) != nil, "\(path).\(label) is not served") }
                expectServesEveryField(child.value, path: "\(path).\(label)")
            }
        default:
            break
        }
    }
}
