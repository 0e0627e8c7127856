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
