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
import IPNCore
import IPNTestSupport
import Testing

/// Reconciliation end to end (product.md section 12, issue 37): a real daemon asks the provider
/// double, over real HTTP, about orders that went quiet, and records the answers through the
/// one write path, on both stores.
@Suite("Reconciliation: asking providers about orders that went quiet")
struct ReconciliationTests {
    /// What the double answers about each provider's order, and what the provider's own late
    /// callback of the same payment is then recorded as.
    struct PaidCase: Sendable, CustomStringConvertible {
        let provider: String
        let order: String
        /// The order key the double is scripted by (Citcon: its transaction id).
        let key: String
        /// The double's reply, as JSON.
        let reply: String
        /// The late callback's status word and provider id (the simulator's unique id).
        let callbackStatus: String
        let callbackID: String
        let lateVerdict: String
        var description: String { provider }

        static let all: [PaidCase] = [
            PaidCase(provider: "ipay88", order: "IP-1", key: "IP-1", reply: #"{"text": "00"}"#, callbackStatus: "1", callbackID: "T-IP-1",
                     // iPay88 posts its TransId, which the re-query does not tell: another key, paid again is stale.
                     lateVerdict: "stale"),
            PaidCase(provider: "alipay", order: "AL-1", key: "AL-1",
                     reply: #"{"payment": {"paymentStatus": "SUCCESS", "paymentId": "PAY-AL-1", "paymentAmount": {"value": "1234", "currency": "USD"}}}"#,
                     callbackStatus: "S", callbackID: "PAY-AL-1", lateVerdict: "duplicate"),
            PaidCase(provider: "unlimint", order: "UL-1", key: "UL-1",
                     reply: #"{"payments": [{"id": "PAY-UL-1", "status": "COMPLETED", "amount": "12.34", "currency": "USD"}]}"#,
                     callbackStatus: "COMPLETED", callbackID: "PAY-UL-1", lateVerdict: "duplicate"),
            PaidCase(provider: "juspay", order: "JP-1", key: "JP-1",
                     reply: #"{"order": {"status": "CHARGED", "amount": "12.34", "currency": "INR", "id": "ord_jp1", "txn_id": "JP-1-1"}}"#,
                     // Juspay's webhooks are keyed by their event id, which an inquiry lacks.
                     callbackStatus: "CHARGED", callbackID: "jp-late", lateVerdict: "stale"),
            PaidCase(provider: "citcon", order: "CC-1", key: "CTX-1",
                     reply: #"{"transaction": {"id": "CTX-1", "reference": "CC-1", "amount": 1234, "currency": "USD", "status": "success"}}"#,
                     callbackStatus: "success", callbackID: "CTX-1", lateVerdict: "duplicate"),
        ]
    }

    @Test("each provider: a quiet order is asked at the first step with the exact request, ends paid with its event and delivery; the late callback changes nothing",
          arguments: Backend.allCases)
    func paidByInquiry(backend: Backend) async throws {
        let receiver = try WebhookReceiver(secrets: [WebhookReceiver.newSecret()], keepBodies: true)
        let harness = try await ReconcileHarness.start(
            backend: backend, extraYAML: deliveriesYAML(url: receiver.url, secrets: receiver.secrets))
        for paid in PaidCase.all {
            try await harness.double.script(paid.provider, order: paid.key, json: [paid.reply])
            if paid.provider == "citcon" {
                // Citcon is asked by its transaction id: the order is known from a pending IPN.
                try await harness.daemon.deliver(
                    "citcon", order: paid.order, status: "pending", amount: Money(minor: 1234, currency: "USD"), uid: "CTX-1")
            } else {
                try await harness.expect(paid.provider, paid.order)
            }
        }
        for paid in PaidCase.all {
            let state = try await harness.waitForState(paid.provider, paid.order, "paid")
            #expect(state == "paid", "\(paid.provider)")
            let order = try await harness.order(paid.provider, paid.order)
            #expect(order.isNull("next_inquiry_at"), "\(paid.provider): a paid order is no longer asked")
            let inquiries = order.objects("inquiries")
            #expect(inquiries.count == 1, "\(paid.provider)")
            let inquiry = try #require(inquiries.first)
            #expect(inquiry.keySet == SpecFields.inquiry)
            #expect(inquiry.string("trigger") == "schedule" && inquiry.string("outcome") == "recorded", "\(paid.provider): \(inquiry)")
            #expect(inquiry.string("verdict") == "applied" && inquiry.int("http_status") == 200, "\(paid.provider)")
            let notificationID = try #require(inquiry.int("notification_id"))
            let note = try #require(order.objects("notifications").first { $0.int("id") == notificationID })
            #expect(note.string("source") == "inquiry" && note.int("inquiry_id") == inquiry.int("id") && note.isNull("client_ip"))
            #expect(order.objects("transitions").last?.int("notification_id") == notificationID)

            // The provider's late callback: its exact acknowledgement, no second transition.
            let transitions = order.objects("transitions").count
            let late = try await harness.daemon.deliver(
                paid.provider, order: paid.order, status: paid.callbackStatus, amount: Money(minor: 1234, currency: ReconcileHarness.currency(paid.provider)),
                uid: paid.callbackID)
            let acknowledgement = try #require(ProviderRegistry.provider(named: paid.provider)).acknowledgement
            #expect(late.body == acknowledgement.body, "\(paid.provider)")
            let after = try await harness.order(paid.provider, paid.order)
            #expect(after.objects("transitions").count == transitions, "\(paid.provider)")
            #expect(after.objects("notifications").last?.string("verdict") == paid.lateVerdict, "\(paid.provider)")
            #expect(after.string("state") == "paid")
        }
        // The requests, to the byte where inquiries.md fixes them, as the double checked them.
        let ipay88 = try await harness.double.inquiries("ipay88", order: "IP-1")
        #expect(ipay88.count == 1 && ipay88[0].method == "POST" && ipay88[0].path == "/epayment/enquiry.asp")
        #expect(ipay88.first?.body == "MerchantCode=KH00001&RefNo=IP-1&Amount=12.34")
        #expect(ipay88.first?.headers["content-type"] == "application/x-www-form-urlencoded")
        let antom = try #require(try await harness.double.inquiries("alipay", order: "AL-1").first)
        #expect(antom.path == "/ams/sandbox/api/v1/payments/inquiryPayment" && antom.body == #"{"paymentRequestId":"AL-1"}"#)
        #expect(antom.headers["client-id"] == TestDaemon.alipayClientID)
        #expect(antom.headers["signature"]?.hasPrefix("algorithm=RSA256,keyVersion=1,signature=") == true)
        #expect(antom.checks["signature"] as? Bool == true, "the double verified the request with the merchant public key")
        let unlimint = try #require(try await harness.double.inquiries("unlimint", order: "UL-1").first)
        #expect(unlimint.method == "GET" && unlimint.path == "/api/payments")
        #expect(unlimint.query["merchant_order_id"] == "UL-1" && unlimint.query["max_count"] == "100")
        #expect(unlimint.query["request_id"].map { UUID(uuidString: $0) != nil } == true)
        #expect(unlimint.passedChecks, "\(unlimint.checks)")
        #expect(try await harness.double.requests(provider: "unlimint").filter { $0.kind == "token" }.count == 1)
        let juspay = try #require(try await harness.double.inquiries("juspay", order: "JP-1").first)
        #expect(juspay.method == "GET" && juspay.path == "/orders/JP-1")
        #expect(juspay.headers["authorization"] == "Basic " + Base64.encode(Array("\(ProviderDouble.juspayAPIKey):".utf8)))
        #expect(juspay.headers["x-merchantid"] == ProviderDouble.juspayMerchant && juspay.headers["version"] == "2023-06-30")
        let citcon = try #require(try await harness.double.inquiries("citcon", order: "CTX-1").first)
        #expect(citcon.method == "GET" && citcon.path == "/v1/transactions/CTX-1" && citcon.passedChecks)
        for provider in ReconcileHarness.providers {
            for request in try await harness.double.requests(provider: provider) {
                #expect(request.passedChecks, "\(provider) \(request.kind): \(request.checks)")
                #expect(request.headers["user-agent"]?.hasPrefix("ipnd/") == true)
            }
        }
        // Each change was pushed to the merchant's application: the paid transitions included.
        func paidEvent(_ request: WebhookReceiver.Request) -> Bool {
            request.answer == "200" && request.verified.allSatisfy { $0 } && request.type == "order.state_changed"
                && (request.body ?? "").contains(#""to":"paid""#)
        }
        let delivered = try await receiver.wait(timeout: 15) { requests in
            Set(requests.filter(paidEvent).map(\.order)).isSuperset(of: PaidCase.all.map(\.order))
        }
        for paid in PaidCase.all {
            #expect(delivered.contains { $0.order == paid.order && paidEvent($0) }, "\(paid.provider)")
        }
        // One log line per inquiry, saying what it came to.
        // (A write PostgreSQL answered late is asked again and logged then: wait for each.)
        _ = try await harness.daemon.waitUntil(timeout: 20) {
            let logged = harness.daemon.logs.captured.filter { $0.contains("msg=inquiry ") }
            return PaidCase.all.allSatisfy { paid in logged.contains { $0.contains("order_ref=\(paid.order) ") } }
        }
        let lines = harness.daemon.logs.captured.filter { $0.contains("msg=inquiry ") }
        for paid in PaidCase.all { #expect(lines.contains { $0.contains("order_ref=\(paid.order) ") }, "\(paid.provider)") }
        for key in ["provider=", "account=", "order_ref=", "trigger=", "outcome=", "http_status=", "provider_status=", "notification_id=", "latency_ms="] {
            #expect(lines.allSatisfy { $0.contains(key) }, "\(key)")
        }
        try await harness.stop()
        receiver.stop()
    }
}

/// Every row of every answer table of inquiries.md, asked through the ops API (the schedule's
/// first step is an hour away), on both stores.
@Suite("Reconciliation: every answer of every provider")
struct InquiryAnswerTests {
    /// One answer: what the double says, and what ipnd must make of it.
    struct Row: Sendable, CustomStringConvertible {
        let provider: String
        let order: String
        let replies: [String]
        let outcome: String
        var verdict: String? = nil
        /// The order's state after; nil: as before.
        var state: String? = nil
        var error: String? = nil
        var flag: String? = nil
        var reason: String? = nil
        var providerStatus: String? = nil
        var description: String { "\(provider) \(order)" }
    }

    static func antom(_ status: String, id: String) -> String {
        #"{"payment": {"paymentStatus": "\#(status)", "paymentId": "\#(id)", "paymentAmount": {"value": "1234", "currency": "USD"}}}"#
    }

    static let rows: [Row] = [
        Row(provider: "ipay88", order: "ip-paid", replies: [#"{"text": "00"}"#], outcome: "recorded", verdict: "applied", state: "paid",
            providerStatus: "1"),
        Row(provider: "ipay88", order: "ip-fail", replies: [#"{"text": "Payment fail"}"#], outcome: "recorded", verdict: "applied",
            state: "failed", providerStatus: "0"),
        Row(provider: "ipay88", order: "ip-admin", replies: [#"{"text": "M88Admin"}"#], outcome: "recorded", verdict: "applied", state: "failed"),
        Row(provider: "ipay88", order: "ip-amount", replies: [#"{"text": "Incorrect amount"}"#], outcome: "recorded", verdict: "mismatch",
            state: "expected", flag: "amount_mismatch", reason: "amount_differs"),
        Row(provider: "ipay88", order: "ip-unknown", replies: [#"{"text": "Record not found"}"#], outcome: "not_found"),
        Row(provider: "ipay88", order: "ip-pending", replies: [#"{"text": "Payment Pending"}"#], outcome: "no_news", state: "expected"),
        Row(provider: "ipay88", order: "ip-unpaid0", replies: [#"{"text": "Haven't Paid (0)"}"#], outcome: "no_news"),
        Row(provider: "ipay88", order: "ip-unpaid1", replies: [#"{"text": "Haven\u2019t Paid (1)"}"#], outcome: "no_news"),
        Row(provider: "ipay88", order: "ip-invalid", replies: [#"{"text": "Invalid parameters"}"#], outcome: "error", error: "Invalid parameters"),
        Row(provider: "ipay88", order: "ip-odd", replies: [#"{"text": "<html>maintenance</html>"}"#], outcome: "error", error: "unexpected reply"),
        Row(provider: "alipay", order: "al-paid", replies: [antom("SUCCESS", id: "P-al-paid")], outcome: "recorded", verdict: "applied",
            state: "paid", providerStatus: "SUCCESS"),
        Row(provider: "alipay", order: "al-fail", replies: [antom("FAIL", id: "P-al-fail")], outcome: "recorded", verdict: "applied", state: "failed"),
        Row(provider: "alipay", order: "al-cancel", replies: [antom("CANCELLED", id: "P-al-cancel")], outcome: "recorded", verdict: "applied",
            state: "canceled"),
        Row(provider: "alipay", order: "al-processing", replies: [antom("PROCESSING", id: "P-al-proc")], outcome: "recorded", verdict: "applied",
            state: "pending"),
        Row(provider: "alipay", order: "al-unknown", replies: [#"{"result": {"resultStatus": "F", "resultCode": "ORDER_NOT_EXIST", "resultMessage": "no"}}"#],
            outcome: "not_found"),
        Row(provider: "alipay", order: "al-refused", replies: [#"{"result": {"resultStatus": "F", "resultCode": "ACCESS_DENIED", "resultMessage": "no"}}"#],
            outcome: "error", error: "ACCESS_DENIED"),
        Row(provider: "alipay", order: "al-try-later", replies: [#"{"result": {"resultStatus": "U", "resultCode": "UNKNOWN_EXCEPTION", "resultMessage": "later"}}"#],
            outcome: "error", error: "UNKNOWN_EXCEPTION"),
        Row(provider: "alipay", order: "al-forged", replies: [#"{"payment": {"paymentStatus": "SUCCESS", "paymentId": "P-f", "paymentAmount": {"value": "1234", "currency": "USD"}}, "sign": "forged"}"#],
            outcome: "bad_signature", state: "expected"),
        Row(provider: "alipay", order: "al-tampered", replies: [#"{"payment": {"paymentStatus": "SUCCESS", "paymentId": "P-t", "paymentAmount": {"value": "1234", "currency": "USD"}}, "sign": "tampered"}"#],
            outcome: "bad_signature", state: "expected"),
        Row(provider: "alipay", order: "al-unsigned", replies: [#"{"payment": {"paymentStatus": "SUCCESS", "paymentId": "P-n", "paymentAmount": {"value": "1234", "currency": "USD"}}, "sign": "none"}"#],
            outcome: "bad_signature", state: "expected"),
        Row(provider: "unlimint", order: "ul-paid", replies: [#"{"payments": [{"id": "U-1", "status": "COMPLETED", "amount": "12.34", "currency": "USD"}]}"#],
            outcome: "recorded", verdict: "applied", state: "paid", providerStatus: "COMPLETED"),
        Row(provider: "unlimint", order: "ul-declined", replies: [#"{"payments": [{"id": "U-2", "status": "DECLINED", "amount": "12.34", "currency": "USD"}]}"#],
            outcome: "recorded", verdict: "applied", state: "failed"),
        Row(provider: "unlimint", order: "ul-unknown", replies: [#"{"payments": []}"#], outcome: "not_found"),
        Row(provider: "juspay", order: "jp-paid", replies: [#"{"order": {"status": "CHARGED", "amount": "12.34", "currency": "INR", "id": "o1", "txn_id": "t1"}}"#],
            outcome: "recorded", verdict: "applied", state: "paid", providerStatus: "CHARGED"),
        Row(provider: "juspay", order: "jp-failed", replies: [#"{"order": {"status": "AUTHORIZATION_FAILED", "amount": "12.34", "currency": "INR", "id": "o2", "txn_id": "t2"}}"#],
            outcome: "recorded", verdict: "applied", state: "failed"),
        Row(provider: "juspay", order: "jp-unknown", replies: [#"{"not_found": true}"#], outcome: "not_found"),
        Row(provider: "juspay", order: "jp-refused", replies: [#"{"status": 401}"#], outcome: "error", error: "unauthorized"),
        Row(provider: "citcon", order: "cc-paid", replies: [#"{"transaction": {"reference": "cc-paid", "amount": 1234, "currency": "USD", "status": "success"}}"#],
            outcome: "recorded", verdict: "applied", state: "paid", providerStatus: "success"),
        Row(provider: "citcon", order: "cc-other", replies: [#"{"transaction": {"reference": "someone-else", "amount": 1234, "currency": "USD", "status": "success"}}"#],
            outcome: "error", state: "pending", error: "another order"),
        Row(provider: "citcon", order: "cc-fail", replies: [#"{"fail": {"code": "invalid_transaction", "message": "nope"}}"#],
            outcome: "error", error: "invalid_transaction"),
    ]

    @Test("each answer row gives its outcome, verdict and effect; bad answers record nothing", arguments: Backend.allCases)
    func answerTable(backend: Backend) async throws {
        let harness = try await ReconcileHarness.start(backend: backend, reconcile: ReconcileHarness.reconcileYAML(schedule: "[1h]", giveUpAfter: "1d"))
        for row in Self.rows {
            let key = row.provider == "citcon" ? "tx-\(row.order)" : row.order
            try await harness.double.script(row.provider, order: key, json: row.replies)
            if row.provider == "citcon" {
                try await harness.daemon.deliver("citcon", order: row.order, status: "pending", amount: Money(minor: 1234, currency: "USD"), uid: key)
            } else {
                try await harness.expect(row.provider, row.order)
            }
            let before = try harness.daemon.count("SELECT COUNT(*) FROM notifications")
            let stateBefore = try harness.daemon.orderState(row.order, provider: row.provider)
            let (status, inquiry) = try await harness.askNow(row.provider, row.order)
            #expect(status == 200, "\(row)")
            #expect(inquiry.keySet == SpecFields.inquiry, "\(row)")
            #expect(inquiry.string("outcome") == row.outcome, "\(row): \(inquiry)")
            #expect(inquiry.string("trigger") == "api")
            #expect(inquiry.string("verdict") == row.verdict, "\(row)")
            if let error = row.error {
                // "unauthorized" is the whole of the record's error (product.md section 12); others say more.
                #expect(error == "unauthorized" ? inquiry.string("error") == error : inquiry.string("error")?.contains(error) == true, "\(row): \(inquiry)")
            }
            if let providerStatus = row.providerStatus { #expect(inquiry.string("provider_status") == providerStatus, "\(row)") }
            let wrote = try harness.daemon.count("SELECT COUNT(*) FROM notifications") - before
            #expect(wrote == (row.outcome == "recorded" ? 1 : 0), "\(row): only a recorded outcome writes a notification")
            #expect(try harness.daemon.orderState(row.order, provider: row.provider) == (row.state ?? stateBefore), "\(row)")
            let order = try await harness.order(row.provider, row.order)
            if let flag = row.flag { #expect((order["flags"] as? [String])?.contains(flag) == true, "\(row)") }
            if let reason = row.reason {
                #expect(order.objects("notifications").last?.string("reason") == reason, "\(row)")
            }
            #expect(order.objects("inquiries").first?.int("id") == inquiry.int("id"), "\(row): orders show lists it")
        }
        // The refused credential is counted per account, with its HELP; an account never refused reads 0.
        let metrics = try await harness.daemon.get("/metrics", ops: true).text
        let refusals = Self.rows.filter { $0.provider == "juspay" && $0.error == "unauthorized" }.count
        #expect(metrics.contains("# HELP ipnd_inquiries_unauthorized_total "))
        #expect(MetricsText.sample(metrics, "ipnd_inquiries_unauthorized_total", ["provider": "juspay", "account": "default"]) == Double(refusals))
        #expect(MetricsText.sample(metrics, "ipnd_inquiries_unauthorized_total", ["provider": "ipay88", "account": "default"]) == 0)
        try await harness.stop()
    }

    @Test("a pending answer that moves nothing is no news; several Unlimint payments are recorded oldest first; Citcon without its id cannot be asked",
          arguments: Backend.allCases)
    func specialCases(backend: Backend) async throws {
        let harness = try await ReconcileHarness.start(backend: backend, reconcile: ReconcileHarness.reconcileYAML(schedule: "[1h]", giveUpAfter: "1d"))
        // Antom PENDING: the first moves the expected order to pending; asked again, no news.
        try await harness.expect("alipay", "al-wait")
        try await harness.double.script("alipay", order: "al-wait", json: [Self.antom("PENDING", id: "P-w")])
        #expect(try await harness.askNow("alipay", "al-wait").object.string("outcome") == "recorded")
        #expect(try await harness.askNow("alipay", "al-wait").object.string("outcome") == "no_news")
        #expect(try harness.daemon.orderState("al-wait", provider: "alipay") == "pending")

        // Unlimint: a declined attempt, then a completed one: both recorded, oldest first.
        try await harness.expect("unlimint", "ul-two")
        func seconds(ago: Int64) -> String {
            String(Timestamp.format(epochMilliseconds: (Int64(Date().timeIntervalSince1970) - ago) * 1000).prefix(19)) + "Z"
        }
        try await harness.double.script("unlimint", order: "ul-two", json: [#"""
            {"payments": [{"id": "U-late", "status": "COMPLETED", "amount": "12.34", "currency": "USD", "created": "\#(seconds(ago: 3000))"},
                          {"id": "U-early", "status": "DECLINED", "amount": "12.34", "currency": "USD", "created": "\#(seconds(ago: 3600))"}]}
            """#])
        // The double lists payments created inside the window: the order must be as old as they are.
        let created = Timestamp.format(epochMilliseconds: (Int64(Date().timeIntervalSince1970) - 4000) * 1000)
        try harness.daemon.execute("UPDATE orders SET created_at = '\(created)' WHERE order_ref = 'ul-two'")
        let two = try await harness.askNow("unlimint", "ul-two").object
        #expect(two.string("outcome") == "recorded", "\(two)")
        let order = try await harness.order("unlimint", "ul-two")
        let recorded = order.objects("notifications").filter { $0.string("source") == "inquiry" }
        #expect(recorded.map { $0.string("provider_status") } == ["DECLINED", "COMPLETED"])
        #expect(order.string("state") == "paid" && two.int("notification_id") == recorded.last?.int("id"))

        // Unlimint's window: under 7 days from an hour before the order was created.
        try await harness.expect("unlimint", "ul-old")
        try harness.daemon.execute("UPDATE orders SET created_at = '2026-10-01T12:00:00.000Z' WHERE order_ref = 'ul-old'")
        _ = try await harness.askNow("unlimint", "ul-old")
        let window = try #require(try await harness.double.inquiries("unlimint", order: "ul-old").last)
        #expect(window.query["start_time"] == "2026-10-01T11:00:00Z")
        #expect(window.query["end_time"] == "2026-10-08T10:59:00Z")
        #expect(window.passedChecks, "\(window.checks)")

        // Citcon is asked by its transaction id: an order known only from an expectation cannot be.
        try await harness.expect("citcon", "cc-expected")
        let citconTokens = try await harness.double.requests(provider: "citcon").filter { $0.kind == "token" }.count
        let cannot = try await harness.askNow("citcon", "cc-expected").object
        #expect(cannot.string("outcome") == "cannot_ask" && cannot.isNull("http_status"))
        #expect(cannot.string("error")?.contains("transaction id") == true)
        #expect(try await harness.double.inquiries("citcon", order: "cc-expected").isEmpty)
        #expect(try await harness.double.requests(provider: "citcon").filter { $0.kind == "token" }.count == citconTokens)

        // Asking about what ipnd does not know, or for an account without inquiry.
        #expect(try await harness.askNow("unlimint", "never-seen").status == 404)
        try await harness.daemon.deliverShop2(order: "shop2-order", status: "NEW")
        #expect(try await harness.askNow("unlimint", "shop2-order", account: "shop2").status == 409)
        try await harness.stop()
    }
}

/// The schedule and the faults of product.md section 12, with a schedule of seconds.
@Suite("Reconciliation: the schedule, faults and nodes")
struct ReconcileScheduleTests {
    /// When the double got each inquiry about `order`, as unix seconds.
    func times(_ harness: ReconcileHarness, _ provider: String, _ order: String) async throws -> [Double] {
        try await harness.double.inquiries(provider, order: order).compactMap { $0.object["t"] as? Double }
    }

    @Test("steps after the last change; a change starts it again; a final state ends it; the last step flags unsettled, a later payment clears it",
          arguments: Backend.allCases)
    func schedule(backend: Backend) async throws {
        let harness = try await ReconcileHarness.start(
            backend: backend, reconcile: ReconcileHarness.reconcileYAML(schedule: "[1s, 5s, 6s]", giveUpAfter: "8s", timeout: 2))
        try await harness.expect("ipay88", "quiet")  // never known to iPay88: not found at every step
        try await harness.expect("unlimint", "changes")
        // The same answer for a second ask too: on a busy machine the first can outlast the timeout.
        // Scripted before the order exists, so that no step can come first.
        let charged = #"{"order": {"status": "CHARGED", "amount": "12.34", "currency": "INR", "id": "o", "txn_id": "t"}}"#
        try await harness.double.script("juspay", order: "settles", json: [charged, charged, charged])
        try await harness.expect("juspay", "settles")

        // A change after the first step: the schedule counts from it again. The change comes
        // once the first inquiry is recorded (the order at its second step, due 5 s after its
        // creation), not while an inquiry claimed before it could still be sent.
        try await harness.double.wait("unlimint", order: "changes", timeout: 10) { $0.count >= 1 }
        _ = try await harness.daemon.waitUntil(timeout: 10) {
            try harness.daemon.count("SELECT inquiry_step FROM orders WHERE order_ref = 'changes'") == 1
        }
        let changed = Date().timeIntervalSince1970
        try await harness.daemon.deliver("unlimint", order: "changes", status: "NEW", amount: Money(minor: 1234, currency: "USD"))
        // Read at once from the store: the schedule now counts from the change, from its first step.
        let fromText = (try harness.daemon.column("SELECT inquiry_from FROM orders WHERE order_ref = 'changes'").first ?? nil) ?? ""
        let from = try #require(Timestamp.parse(fromText))
        #expect(Double(from) / 1000 >= changed - 0.05, "counted from the change")
        #expect(try harness.daemon.count("SELECT inquiry_step FROM orders WHERE order_ref = 'changes'") == 0)
        let fromSeconds = Double(from) / 1000
        let next = try await harness.double.wait("unlimint", order: "changes", timeout: 15) { requests in
            requests.contains { ($0.object["t"] as? Double ?? 0) >= fromSeconds }
        }
        let after = next.compactMap { $0.object["t"] as? Double }.filter { $0 >= fromSeconds }
        #expect((after.first ?? 0) - fromSeconds >= 0.95, "the next inquiry is the first step after the change: \(after)")

        // The quiet order: asked at 1, 5 and 6 s; at 8 s give_up_after has passed: flagged, not asked.
        let flagged = try await harness.daemon.waitUntil(timeout: 15) {
            try harness.daemon.column("SELECT flags FROM orders WHERE order_ref = 'quiet'").first == "unsettled"
        }
        #expect(flagged)
        let quietFrom = try #require(Timestamp.parse(
            (try harness.daemon.column("SELECT inquiry_from FROM orders WHERE order_ref = 'quiet'").first ?? nil) ?? ""))
        let flaggedAt = Date().timeIntervalSince1970 - Double(quietFrom) / 1000
        let asked = try await times(harness, "ipay88", "quiet").map { $0 - Double(quietFrom) / 1000 }
        // A step whose moment passed while the one before ran late (a busy machine) is skipped,
        // never asked twice at once.
        #expect((1...3).contains(asked.count), "\(asked)")
        #expect((asked.first ?? 0) >= 0.95, "\(asked)")
        // Steps are skipped, never asked twice: the n-th inquiry comes no earlier than the n-th step.
        #expect(zip(asked, [1.0, 5.0, 6.0]).allSatisfy { $0 >= $1 - 0.05 }, "one step at a time: \(asked)")
        // (The decision is taken just before sending; the request reaches the double a moment later.)
        #expect(asked.allSatisfy { $0 < 8.1 }, "nothing asked at the give-up moment: \(asked)")
        #expect(flaggedAt >= 7.95, "flagged once give_up_after (8 s) had passed, at \(flaggedAt) s")
        let quiet = try await harness.order("ipay88", "quiet")
        #expect(quiet.isNull("next_inquiry_at") && quiet.string("state") == "expected")
        #expect(quiet.objects("inquiries").allSatisfy { $0.string("outcome") == "not_found" && $0.string("trigger") == "schedule" })
        let event = try await harness.daemon.apiObject("/api/v1/events?limit=1000").objects("events").last {
            ($0["order"] as? JSONDict)?.string("order_ref") == "quiet"
        }
        let change = try #require(event?["change"] as? JSONDict)
        #expect(event?.string("type") == "order.flagged" && change.string("flag") == "unsettled")
        #expect(change.string("from") == "expected" && change.string("to") == "expected" && change.isNull("notification_id"))
        #expect(try await harness.daemon.apiObject("/api/v1/orders?limit=100").objects("items").first { $0.string("order_ref") == "quiet" }?["flags"] as? [String] == ["unsettled"])
        // Paid at its first step; on a machine so busy that the first ask outlasted its timeout, at
        // a later one. Either way, asked no more once paid.
        let settled = try await harness.waitForState("juspay", "settles", "paid", timeout: 15)
        let settlesInquiries = try await harness.order("juspay", "settles").objects("inquiries")
            .map { "\($0.string("outcome") ?? "") \($0.string("error") ?? "") \($0.int("duration_ms") ?? -1) ms" }
        #expect(settled == "paid", "\(settlesInquiries)")
        let settledAfter = try await times(harness, "juspay", "settles").count
        try await Task.sleep(for: .seconds(1.5))
        #expect(try await times(harness, "ipay88", "quiet").count == asked.count, "given up: not asked again")
        #expect(try await times(harness, "juspay", "settles").count == settledAfter, "paid: not asked again")

        // The settled order was asked once; nothing after its final state.
        // (Asked twice only when the first answer took longer than the 2 s timeout, on a busy machine.)
        #expect((1...2).contains(settledAfter))

        // The provider's payment after all: applied, and the unsettled flag goes.
        try await harness.daemon.deliver("ipay88", order: "quiet", status: "1", amount: Money(minor: 1234, currency: "MYR"))
        let paid = try await harness.order("ipay88", "quiet")
        #expect(paid.string("state") == "paid" && (paid["flags"] as? [String]) == [])
        try await harness.stop()
    }

    @Test("faults: a stall past the timeout, a 500, a 429 with Retry-After holding the account, a 401 with a stale token renewed once")
    func faults() async throws {
        // An account's inquiries 200 ms apart: time for a 429 to come back before the next is sent.
        let harness = try await ReconcileHarness.start(
            reconcile: ReconcileHarness.reconcileYAML(schedule: "[1s, 1h]", giveUpAfter: "1d", perMinute: 300, timeout: 1))
        try await harness.double.script("alipay", order: "stall", json: [#"{"delay": 3}"#])
        try await harness.double.script("ipay88", order: "broken", json: [#"{"status": 500, "body": "oops"}"#])
        try await harness.double.script("juspay", order: "busy", json: [#"{"status": 429, "retry_after": "3"}"#,
                                                                      #"{"order": {"status": "CHARGED", "amount": "12.34", "currency": "INR", "id": "o", "txn_id": "t"}}"#])
        for (provider, order) in [("alipay", "stall"), ("ipay88", "broken"), ("juspay", "busy")] { try await harness.expect(provider, order) }
        // Another of the held account's orders, due a second after the 429.
        try await Task.sleep(for: .milliseconds(500))
        try await harness.expect("juspay", "waits")
        // While the account is held, an ask by hand does not call the provider either.
        _ = try await harness.daemon.waitUntil(timeout: 10) { try harness.inquiryOutcomes("juspay", "busy").count >= 1 }
        try await harness.expect("juspay", "by-hand")
        let held = try await harness.askNow("juspay", "by-hand").object
        #expect(held.string("outcome") == "error" && held.string("error")?.contains("Retry-After") == true && held.isNull("http_status"),
                "\(held)")
        #expect(try await harness.double.inquiries("juspay", order: "by-hand").isEmpty, "not asked while the account is held")

        let stalled = try await harness.double.wait("alipay", order: "stall", timeout: 10) { $0.count >= 1 && $0.allSatisfy { $0.answered != nil } }
        _ = try await harness.daemon.waitUntil(timeout: 10) { try harness.inquiryOutcomes("alipay", "stall").count >= 1 }
        let stall = try #require(try await harness.order("alipay", "stall").objects("inquiries").first)
        #expect(stall.string("outcome") == "error" && stall.string("error")?.contains("timeout") == true, "\(stall)")
        #expect((stall.int("duration_ms") ?? 0) >= 900 && (stall.int("duration_ms") ?? 0) < 2500)
        #expect(stalled.count == 1, "one inquiry per step, never a tight loop")

        _ = try await harness.daemon.waitUntil(timeout: 10) { try harness.inquiryOutcomes("ipay88", "broken").count >= 1 }
        let broken = try #require(try await harness.order("ipay88", "broken").objects("inquiries").first)
        #expect(broken.string("outcome") == "error" && broken.int("http_status") == 500)

        // 429: the account is held; its other order waits; then the throttled step is asked again.
        #expect(try await harness.waitForState("juspay", "busy", "paid", timeout: 15) == "paid")
        _ = try await harness.double.wait("juspay", order: "waits", timeout: 10) { $0.count >= 1 }
        let busy = try await times(harness, "juspay", "busy")
        let waits = try await times(harness, "juspay", "waits")
        #expect(busy.count == 2, "\(busy)")
        if busy.count == 2 { #expect(busy[1] - busy[0] >= 2.9, "asked again once Retry-After passed: \(busy[1] - busy[0]) s") }
        if let first = busy.first, let other = waits.first { #expect(other - first >= 2.9, "the account was held: \(other - first) s") }
        let throttled = try #require(try await harness.order("juspay", "busy").objects("inquiries").last)
        #expect(throttled.int("http_status") == 429 && throttled.string("outcome") == "error")

        // A stale token: 401, one new token, the inquiry repeated once.
        try await harness.expect("unlimint", "token")
        _ = try await harness.askNow("unlimint", "token")
        let tokensBefore = try await harness.double.requests(provider: "unlimint").filter { $0.kind == "token" }.count
        try await harness.double.expireTokens("unlimint")
        let renewed = try await harness.askNow("unlimint", "token").object
        #expect(renewed.string("outcome") == "not_found", "\(renewed)")
        let unlimint = try await harness.double.requests(provider: "unlimint")
        #expect(unlimint.filter { $0.kind == "token" }.count == tokensBefore + 1)
        #expect(unlimint.filter { $0.kind == "inquiry" && $0.order == "token" }.suffix(2).map(\.answered) == [401, 200])
        try await harness.stop()
    }

    @Test("receiving keeps answering promptly while 100 inquiries are stuck at a provider")
    func receivingWhileStuck() async throws {
        let harness = try await ReconcileHarness.start(
            reconcile: ReconcileHarness.reconcileYAML(schedule: "[1s, 1h]", giveUpAfter: "1d", maxInFlight: 100, perMinute: 60_000, timeout: 120))
        for index in 0..<100 {
            try await harness.double.script("ipay88", order: "stuck-\(index)", json: [#"{"delay": 100}"#])
            try await harness.expect("ipay88", "stuck-\(index)")
        }
        let deadline = Date().addingTimeInterval(60)
        while try await harness.double.inFlight() < 100, Date() < deadline { try await Task.sleep(for: .milliseconds(200)) }
        #expect(try await harness.double.inFlight() == 100)
        // Every notification is acknowledged while the inquiries wait; how fast is make bench's
        // figure, here only that they are not held behind the inquiries (a held one would wait
        // out the 100 s stall).
        var latencies: [Double] = []
        for index in 0..<200 {
            let started = Date()
            let body = UnlimintRequests.body(order: "fast-\(index)", id: "F-\(index)", status: "COMPLETED")
            let answer = try await harness.daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body))
            #expect(answer.status == 200)
            latencies.append(Date().timeIntervalSince(started))
        }
        latencies.sort()
        #expect(latencies[latencies.count / 2] < 0.5 && latencies.last ?? 0 < 10, "median \(latencies[latencies.count / 2]) s, slowest \(latencies.last ?? 0) s")
        #expect(try harness.daemon.count("SELECT COUNT(*) FROM orders WHERE order_ref LIKE 'fast-%' AND state = 'paid'") == 200)
        #expect(try await harness.double.inFlight() >= 90, "the inquiries were still stuck")
        try await harness.stop()
    }

    @Test("max_in_flight bounds the inquiries on the wire, however many orders are due and the pace allows")
    func maxInFlightOnTheWire() async throws {
        let harness = try await ReconcileHarness.start(
            reconcile: ReconcileHarness.reconcileYAML(schedule: "[1h]", giveUpAfter: "1d", maxInFlight: 3, perMinute: 60_000, timeout: 10))
        // Two orders for each place: the second of each waits for a place (2 s), well within
        // the lease's slack, so that none is given back and claimed again.
        let orders = (0..<6).map { "wire-\($0)" }
        for order in orders {
            try await harness.double.script("ipay88", order: order, json: [#"{"delay": 2, "text": "Record not found"}"#])
            try await harness.expect("ipay88", order)
        }
        // All due at the same moment, however long registering them took.
        try harness.daemon.execute("UPDATE orders SET inquiry_due_at = '2026-01-01T00:00:00.000Z' WHERE order_ref LIKE 'wire-%'")
        var most = 0
        let deadline = Date().addingTimeInterval(40)
        while try harness.daemon.count("SELECT COUNT(*) FROM inquiries") < orders.count, Date() < deadline {
            most = max(most, try await harness.double.inFlight())
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try harness.daemon.count("SELECT COUNT(*) FROM inquiries") == orders.count)
        #expect(most == 3, "at most \(most) inquiries on the wire at once; max_in_flight is 3")
        try await harness.stop()
    }

    @Test("kill -9 mid-inquiry loses nothing: the order is asked again once the claim runs out")
    func killMidInquiry() async throws {
        let double = try ProviderDouble()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-kill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let yaml = """
            server: {host: 127.0.0.1, port: 0}
            store: {path: \(directory.appendingPathComponent("ipnd.sqlite").path)}
            ops: {host: 127.0.0.1, port: 0, tokens_sha256: [\(Hex.encode(Crypto.digest(.sha256, Array(TestDaemon.opsToken.utf8))))]}
            \(try ReconcileHarness.providersYAML(double: double, directory: directory))
            \(ReconcileHarness.reconcileYAML(schedule: "[1s, 1h]", giveUpAfter: "1d", timeout: 5))
            """
        let configPath = directory.appendingPathComponent("ipnd.yaml").path
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: configPath))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: configPath)
        try await double.script("unlimint", order: "killed", json: [#"{"delay": 30}"#,
                                                                    #"{"payments": [{"id": "K-1", "status": "COMPLETED", "amount": "12.34", "currency": "USD"}]}"#])
        let first = try DaemonProcess(configPath: configPath)
        _ = try await first.waitUntilListening()
        let expect = try await ipnd(["orders", "expect", "unlimint", "killed", "--amount", "12.34", "--currency", "USD", "--config", configPath])
        #expect(expect.status == 0, "\(expect.stderr)")
        try await double.wait("unlimint", order: "killed", timeout: 10) { $0.count >= 1 }
        // Killed while the double holds the inquiry (it stalls 30 s; ipnd would wait 5).
        first.signal(SIGKILL)
        _ = await first.waitForExit(timeout: 10)
        let killedAt = Date()
        let storePath = directory.appendingPathComponent("ipnd.sqlite").path
        #expect(try await ipnd(["inquiries", "list", "--format", "json", "--config", configPath]).stdout.isEmpty,
                "the inquiry was not recorded before the kill")
        let second = try DaemonProcess(configPath: configPath)
        _ = try await second.waitUntilListening()
        // Asked again once the claim (twice the timeout and a margin) has run out.
        let asked = try await double.wait("unlimint", order: "killed", timeout: 40) { $0.count >= 2 }
        #expect(asked.count == 2)
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: storePath, configuration: configuration)
        let deadline = Date().addingTimeInterval(10)
        var state: String?
        while Date() < deadline {
            state = try await queue.read { db in try String.fetchOne(db, sql: "SELECT state FROM orders WHERE order_ref = 'killed'") }
            if state == "paid" { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(state == "paid")
        #expect(Date().timeIntervalSince(killedAt) < 40)
        second.signal(SIGTERM)
        _ = await second.waitForExit(timeout: 20)
        double.stop()
    }

    @Test("two nodes on one PostgreSQL database never ask about one order twice in one step",
          .enabled(if: PostgresTestServer.fromEnvironment() != nil))
    func twoNodes() async throws {
        let database = try await TestDaemon.freshPostgresDatabase()
        let double = try ProviderDouble()
        let reconcile = ReconcileHarness.reconcileYAML(schedule: "[1s, 1h]", giveUpAfter: "1d", maxInFlight: 8, timeout: 2)
        let one = try await ReconcileHarness.start(backend: .postgres, reconcile: reconcile, double: double, postgresDatabase: database)
        let two = try await ReconcileHarness.start(backend: .postgres, reconcile: reconcile, double: double, postgresDatabase: database)
        let orders = (0..<60).map { "both-\($0)" }
        for order in orders {
            try await double.script("ipay88", order: order, json: [#"{"delay": 0.2, "text": "Record not found"}"#])
            try await one.expect("ipay88", order)
        }
        let deadline = Date().addingTimeInterval(30)
        while try one.daemon.count("SELECT COUNT(*) FROM inquiries") < orders.count, Date() < deadline {
            try await Task.sleep(for: .milliseconds(200))
        }
        try await Task.sleep(for: .seconds(1))
        let requests = try await double.requests(provider: "ipay88").filter { $0.kind == "inquiry" }
        var perOrder: [String: Int] = [:]
        for request in requests { perOrder[request.order ?? "", default: 0] += 1 }
        #expect(perOrder.count == orders.count && perOrder.values.allSatisfy { $0 == 1 }, "\(perOrder.filter { $0.value != 1 })")
        #expect(try one.daemon.count("SELECT COUNT(*) FROM inquiries") == orders.count)
        // Both nodes asked (each logs its own inquiries).
        let oneAsked = one.daemon.logs.captured.filter { $0.contains("msg=inquiry ") }.count
        let twoAsked = two.daemon.logs.captured.filter { $0.contains("msg=inquiry ") }.count
        #expect(oneAsked + twoAsked == orders.count && oneAsked > 0 && twoAsked > 0, "\(oneAsked) + \(twoAsked)")
        try await one.daemon.stop()
        try await two.daemon.stop()
        double.stop()
    }
}

extension TestDaemon {
    /// Waits until `condition` holds, at most `timeout` seconds; returns whether it did.
    @discardableResult
    func waitUntil(timeout: Double, _ condition: () throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if try condition() { return true }
            if Date() > deadline { return false }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// The commands, the metrics, and what must never be shown.
@Suite("Reconciliation: commands, metrics and secrets")
struct ReconcileOpsTests {
    @Test("orders reconcile and inquiries list; exit codes 0, 1, 2 and 5; the metrics with HELP; no credential, token or signature anywhere")
    func commandsMetricsSecrets() async throws {
        let harness = try await ReconcileHarness.start(reconcile: ReconcileHarness.reconcileYAML(schedule: "[1h]", giveUpAfter: "1d"))
        let config = harness.daemon.config.path
        for paid in ReconciliationTests.PaidCase.all {
            try await harness.double.script(paid.provider, order: paid.key, json: [paid.reply])
            if paid.provider == "citcon" {
                try await harness.daemon.deliver("citcon", order: paid.order, status: "pending", amount: Money(minor: 1234, currency: "USD"), uid: paid.key)
            } else {
                try await harness.expect(paid.provider, paid.order)
            }
        }
        // The CLI asks two of them; the API the rest.
        let cli = try await ipnd(["orders", "reconcile", "unlimint", "UL-1", "--format", "json", "--config", config])
        #expect(cli.status == 0, "\(cli.stderr)")
        let record = try parseJSONObject(cli.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(record.keySet == SpecFields.inquiry && record.string("trigger") == "cli" && record.string("outcome") == "recorded")
        let table = try await ipnd(["orders", "reconcile", "alipay", "AL-1", "--config", config])
        #expect(table.status == 0 && table.stdout.contains("recorded"), "\(table.stdout)\(table.stderr)")
        for provider in ["ipay88", "juspay", "citcon"] {
            let order = ReconciliationTests.PaidCase.all.first { $0.provider == provider }!.order
            #expect(try await harness.askNow(provider, order).object.string("outcome") == "recorded")
        }
        for paid in ReconciliationTests.PaidCase.all {
            #expect(try harness.daemon.orderState(paid.order, provider: paid.provider) == "paid", "\(paid.provider)")
        }
        let unknown = try await ipnd(["orders", "reconcile", "unlimint", "nobody", "--config", config])
        #expect(unknown.status == 1, "\(unknown.stderr)")
        let noInquiry = try await ipnd(["orders", "reconcile", "unlimint", "x", "--account", "shop2", "--config", config])
        #expect(noInquiry.status == 2 && noInquiry.stderr.contains("inquiry"), "\(noInquiry.stderr)")
        try await harness.expect("ipay88", "broken")
        try await harness.double.script("ipay88", order: "broken", json: [#"{"status": 500}"#])
        let failed = try await ipnd(["orders", "reconcile", "ipay88", "broken", "--config", config])
        #expect(failed.status == 5 && failed.stdout.contains("error"), "\(failed.stdout)\(failed.stderr)")

        // inquiries list: newest first, every format, filters.
        let json = try await ipnd(["inquiries", "list", "--format", "json", "--config", config])
        let listed = try parseJSONLines(json.stdout)
        #expect(listed.count == 6 && listed.map { $0.int("id") ?? 0 } == listed.map { $0.int("id") ?? 0 }.sorted(by: >))
        let csv = parseCSV(try await ipnd(["inquiries", "list", "--format", "csv", "--outcome", "error", "--config", config]).stdout)
        #expect(csv.first == SpecFields.inquiryColumns)
        #expect(csv.count == 2)
        let byOrder = try await ipnd(["inquiries", "list", "--order", "UL-1", "--format", "json", "--config", config])
        #expect(try parseJSONLines(byOrder.stdout).map { $0.string("order_ref") } == ["UL-1"])
        let show = try await ipnd(["orders", "show", "unlimint", "UL-1", "--format", "json", "--config", config])
        let shown = try parseJSONObject(show.stdout)
        #expect(shown.keySet == SpecFields.orderDetail && shown.objects("inquiries").count == 1 && shown.isNull("next_inquiry_at"))
        let api = try await harness.daemon.apiObject("/api/v1/inquiries?provider=ipay88&limit=1")
        #expect(api.objects("items").count == 1 && api.string("next_cursor") != nil)

        // The metrics, each with its HELP.
        let metrics = try await harness.daemon.get("/metrics", ops: true).text
        for family in ["ipnd_inquiries_total", "ipnd_inquiry_duration_seconds", "ipnd_orders_unsettled", "ipnd_orders_awaiting_inquiry"] {
            #expect(metrics.contains("# HELP \(family) ") && !metrics.contains("# HELP \(family) \(family): no help text"), "\(family)")
        }
        #expect(metrics.contains(#"ipnd_inquiries_total{provider="juspay",outcome="recorded"} 1"#)
                    || metrics.contains(#"ipnd_inquiries_total{outcome="recorded",provider="juspay"} 1"#), "\(metrics.split(separator: "\n").filter { $0.contains("inquiries_total") })")

        // Nothing shown or kept holds a credential, a token or a signature.
        var secrets = [
            ProviderDouble.juspayAPIKey, Base64.encode(Array("\(ProviderDouble.juspayAPIKey):".utf8)), ProviderDouble.unlimintPassword,
            ProviderDouble.citconPrivateKey,
        ]
        let pem = String(decoding: Fixture.bytes("antom-merchant-test-private-key.pem"), as: UTF8.self)
        secrets += pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.prefix(3).map(String.init)
        for request in try await harness.double.requests() {
            if let authorization = request.headers["authorization"], let token = authorization.split(separator: " ").last {
                secrets.append(String(token))
            }
            if let signature = request.headers["signature"], let value = signature.components(separatedBy: "signature=").last {
                secrets.append(value)
            }
        }
        let stored = try harness.daemon.rows("SELECT target, headers, body FROM notifications").flatMap { $0.compactMap { $0 } }
            + harness.daemon.rows("SELECT url, error FROM inquiries").flatMap { $0.compactMap { $0 } }
        let checkConfig = try await ipnd(["check-config", "--config", config])
        var shownText = [harness.daemon.logs.captured.joined(separator: "\n"), cli.stdout, table.stdout, failed.stdout, json.stdout,
                         show.stdout, checkConfig.stdout, checkConfig.stderr, metrics] + stored
        shownText.append(try await harness.daemon.api("/api/v1/inquiries?limit=1000").text)
        shownText.append(try await harness.daemon.api("/api/v1/notifications?limit=1000&include=raw").text)
        for paid in ReconciliationTests.PaidCase.all {
            shownText.append(try await harness.daemon.api("/api/v1/orders/\(paid.provider)/\(paid.order)?include=raw").text)
        }
        #expect(checkConfig.status == 0 && checkConfig.stdout.contains("inquiry"), "\(checkConfig.stderr)")
        #expect(Set(secrets).count >= 10, "the tokens and signatures the double saw are among them")
        for secret in Set(secrets) where secret.count >= 8 {
            for text in shownText { #expect(!text.contains(secret), "a credential was shown: \(secret.prefix(6))...") }
        }
        try await harness.stop()
    }
}

/// The console's side of reconciliation over HTTP: the order page's inquiries and its "Ask the
/// provider now" form (a POST with the session's CSRF token), and the overview's counts.
@Suite("Reconciliation in the console")
struct ReconcileConsoleTests {
    @Test("the order page lists inquiries and asks the provider now; the overview counts awaiting and unsettled orders")
    func console() async throws {
        let harness = try await ReconcileHarness.start(
            reconcile: ReconcileHarness.reconcileYAML(schedule: "[1h]", giveUpAfter: "2h"))
        try await harness.expect("juspay", "JP-console")
        try await harness.double.script("juspay", order: "JP-console", json: [#"{"status": 503, "retry_after": "1"}"#,
                                                                            #"{"order": {"status": "CHARGED", "amount": "12.34", "currency": "INR", "id": "o", "txn_id": "t"}}"#])
        let console = ConsoleClient(harness.daemon)
        _ = try await console.signIn(TestDaemon.opsToken)
        let path = "/orders/juspay/default/JP-console"
        let page = try await console.get(path)
        #expect(page.status == 200 && page.text.contains(#"id="ask-provider""#) && page.text.contains("No inquiries."))
        #expect(page.text.contains(#"<time id="next-inquiry">"#), "the next step is shown")

        // Without the session's CSRF token the form is refused and nothing is asked.
        let forged = try await console.post(path + "/inquiries", [("csrf", "made-up")])
        #expect(forged.status == 403)
        #expect(try await harness.double.inquiries("juspay", order: "JP-console").isEmpty)

        let first = try await console.post(path + "/inquiries", [("csrf", page.csrf ?? "")])
        #expect(first.status == 303 && first.location?.hasPrefix(path + "?done=inquiry&outcome=error") == true, "\(first.location ?? "")")
        let shown = try await console.get(first.location ?? path)
        #expect(shown.text.contains("The provider was asked: error."))
        #expect(shown.text.contains(#"data-outcome="error""#) && shown.text.contains("503"))
        try await Task.sleep(for: .milliseconds(1100))
        let second = try await console.post(path + "/inquiries", [("csrf", shown.csrf ?? "")])
        #expect(second.location?.contains("outcome=recorded") == true)
        let paid = try await console.get(path)
        #expect(paid.text.contains(#"id="order-state">paid"#) && paid.text.contains(#"data-outcome="recorded""#))
        #expect(paid.text.contains("none scheduled"))
        #expect(try harness.daemon.column("SELECT trigger FROM inquiries ORDER BY id") == ["console", "console"])

        // An account without inquiry: no button, and a POST is refused.
        try await harness.daemon.deliverShop2(order: "S2", status: "NEW")
        let unasked = try await console.get("/orders/unlimint/shop2/S2")
        #expect(!unasked.text.contains(#"id="ask-provider""#) && unasked.text.contains("no inquiry section"))
        let refused = try await console.post("/orders/unlimint/shop2/S2/inquiries", [("csrf", unasked.csrf ?? "")])
        #expect(refused.status == 409)

        // The overview: orders awaiting an inquiry (due now), and unsettled ones. iPay88 asks to
        // be left alone for a minute first, so that the reconciler leaves the overdue order be.
        try await harness.expect("ipay88", "hold")
        try await harness.double.script("ipay88", order: "hold", json: [#"{"status": 429, "retry_after": "60"}"#])
        #expect(try await harness.askNow("ipay88", "hold").object.int("http_status") == 429)
        try await harness.expect("ipay88", "overdue")
        try harness.daemon.execute("UPDATE orders SET inquiry_due_at = '2026-01-01T00:00:00.000Z' WHERE order_ref = 'overdue'")
        try harness.daemon.execute("UPDATE orders SET flags = 'unsettled' WHERE order_ref = 'S2'")
        let overview = try await console.get("/")
        #expect(overview.text.contains(#"<td class="num" id="awaiting-inquiry">1</td>"#), "\(overview.text.components(separatedBy: "Reconciliation").last?.prefix(600) ?? "")")
        #expect(overview.text.contains("2026-01-01T00:00:00.000Z"))
        #expect(overview.text.contains(#"<td class="num" id="unsettled-count">1</td>"#))
        try await harness.stop()
    }
}

/// A reload puts reconciliation's settings and accounts in force without a restart.
@Suite("Reconciliation and reload")
struct ReconcileReloadTests {
    @Test("an account given an inquiry section by a reload is asked; one whose section a reload removes is no longer asked")
    func reload() async throws {
        let harness = try await ReconcileHarness.start(reconcile: ReconcileHarness.reconcileYAML(schedule: "[1s, 1h]", giveUpAfter: "1d"))
        // shop2 has no inquiry: its order waits, unasked.
        try await harness.daemon.deliverShop2(order: "S2-RELOAD", status: "NEW")
        try await Task.sleep(for: .seconds(2))
        #expect(try harness.daemon.count("SELECT COUNT(*) FROM inquiries WHERE order_ref = 'S2-RELOAD'") == 0)
        // Unlimint's shop2 is given the default account's inquiry; juspay's section goes.
        try harness.daemon.editConfig { text in
            text.replacingOccurrences(of: """
                    - account: shop2
                      callback_secret: shop2-secret
                """, with: """
                    - account: shop2
                      callback_secret: shop2-secret
                      inquiry:
                        url: \(harness.double.inquiryURL("unlimint"))
                        terminal_code: \(ProviderDouble.unlimintTerminal)
                        terminal_password: \(ProviderDouble.unlimintPassword)
                """).replacingOccurrences(of: """
                      inquiry:
                        url: \(harness.double.inquiryURL("juspay"))
                        api_key: \(ProviderDouble.juspayAPIKey)
                        merchant_id: \(ProviderDouble.juspayMerchant)
                """, with: "")
        }
        #expect(await harness.daemon.daemon.reload() == .applied(needsRestart: []))
        #expect(try await harness.daemon.waitUntil(timeout: 10) {
            try harness.daemon.count("SELECT COUNT(*) FROM inquiries WHERE order_ref = 'S2-RELOAD'") == 1
        })
        try await harness.expect("juspay", "JP-RELOAD")
        try await Task.sleep(for: .seconds(2))
        #expect(try await harness.double.inquiries("juspay", order: "JP-RELOAD").isEmpty, "juspay's inquiry section is gone")
        #expect(try await harness.askNow("juspay", "JP-RELOAD").status == 409)
        try await harness.stop()
    }
}
