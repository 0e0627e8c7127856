import Foundation
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
        let lines = harness.daemon.logs.captured.filter { $0.contains("msg=inquiry ") }
        #expect(lines.count >= PaidCase.all.count)
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
            if let error = row.error { #expect(inquiry.string("error")?.contains(error) == true, "\(row): \(inquiry)") }
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
        let cannot = try await harness.askNow("citcon", "cc-expected").object
        #expect(cannot.string("outcome") == "cannot_ask" && cannot.isNull("http_status"))
        #expect(cannot.string("error")?.contains("transaction id") == true)
        #expect(try await harness.double.inquiries("citcon", order: "cc-expected").isEmpty)

        // Asking about what ipnd does not know, or for an account without inquiry.
        #expect(try await harness.askNow("unlimint", "never-seen").status == 404)
        try await harness.daemon.deliverShop2(order: "shop2-order", status: "NEW")
        #expect(try await harness.askNow("unlimint", "shop2-order", account: "shop2").status == 409)
        try await harness.stop()
    }
}
