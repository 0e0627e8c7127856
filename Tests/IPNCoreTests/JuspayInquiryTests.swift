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
import IPNCore
import Testing

private let apiKey = "3F9A7C21B0D84E6F9A2B1C3D4E5F6A7B"
private let inquiry = JuspayInquiry(apiKey: apiKey, merchantID: "acme")
private let order = InquiryFixture.order("ORD-1001")

/// The order status answer of docs.juspay.io's sample, trimmed to what ipnd reads and a little more.
private func orderBody(
    orderID: String = "ORD-1001", status: String = "CHARGED", statusID: Int = 21, amount: String = "600", txnID: String? = "acme-ORD-1001-1",
    extra: String = ""
) -> String {
    let txn = txnID.map { #","txn_id":"\#($0)""# } ?? ""
    return #"{"id":"ord_5f2c9a1b7e3d4c6a8b0e1f2a3b4c5d6e","order_id":"\#(orderID)","merchant_id":"acme","status":"\#(status)","#
        + #""status_id":\#(statusID),"amount":\#(amount),"currency":"INR","refunded":false,"amount_refunded":0\#(txn)\#(extra)}"#
}

private func read(_ text: String, status: Int = 200, order: InquiryOrder = order) -> InquiryReading {
    // Juspay's request cannot be refused: no `try` needed to read its answers.
    inquiry.read(InquiryFixture.answer(status, text), to: inquiry.request(for: order, context: InquiryFixture.context()), order: order)
}

@Suite("Juspay order status (inquiries.md section 4)")
struct JuspayInquiryTests {
    // MARK: Request

    @Test("the request, to the byte: GET /orders/<ref> with Basic base64(api_key:), x-merchantid and version")
    func requestBytes() {
        let request = inquiry.request(for: order, context: InquiryFixture.context())
        #expect(request.method == "GET")
        #expect(request.url == "https://api.juspay.in/orders/ORD-1001")
        #expect(request.headerLines == [
            "Authorization: Basic " + Data("\(apiKey):".utf8).base64EncodedString(),
            "x-merchantid: acme",
            "version: 2023-06-30",
        ])
        #expect(request.headers[0].value == "Basic M0Y5QTdDMjFCMEQ4NEU2RjlBMkIxQzNENEU1RjZBN0I6")
        #expect(request.body.isEmpty)
    }

    @Test("the order reference is one percent-encoded path segment", arguments: [
        ("A/B?C#D", "A%2FB%3FC%23D"), ("50% off", "50%25%20off"), ("..", "%2E%2E"), (".", "%2E"), ("a..b", "a..b"), ("ü~_.-", "%C3%BC~_.-"),
    ])
    func pathSegment(reference: String, encoded: String) {
        let request = JuspayInquiry(apiKey: apiKey, merchantID: "acme", url: "https://sandbox.juspay.in/")
            .request(for: InquiryFixture.order(reference), context: InquiryFixture.context())
        #expect(request.url == "https://sandbox.juspay.in/orders/" + encoded)
    }

    // MARK: Answers

    @Test("200: a fact as the webhook's content.order, txn id txn_id, dedup INQUIRY|order_id|status")
    func charged() {
        let reading = read(orderBody())
        #expect(reading == .facts([VerifiedNotification(
            kind: .payment, orderRef: "ORD-1001", providerTxnID: "acme-ORD-1001-1", dedupKey: "INQUIRY|ORD-1001|CHARGED",
            providerStatus: "CHARGED", effect: .transition(.paid), amount: Money(minor: 60000, currency: "INR"),
            detail: ["id": "ord_5f2c9a1b7e3d4c6a8b0e1f2a3b4c5d6e"])], providerStatus: "CHARGED"))
    }

    @Test("without txn_id the txn id is Juspay's order id")
    func withoutTxnID() throws {
        let fact = try read(orderBody(status: "NEW", statusID: 10, txnID: nil)).onlyFact()
        #expect(fact.providerTxnID == "ord_5f2c9a1b7e3d4c6a8b0e1f2a3b4c5d6e")
        #expect(fact.detail.isEmpty)
        #expect(fact.effect == .transition(.pending))
    }

    @Test("statuses map as the webhooks' content.order.status does", arguments: [
        ("CHARGED", NotificationEffect.transition(.paid)), ("AUTHORIZED", .transition(.authorized)), ("NEW", .transition(.pending)),
        ("PENDING_VBV", .transition(.pending)), ("AUTHORIZING", .transition(.pending)), ("AUTHENTICATION_FAILED", .transition(.failed)),
        ("AUTHORIZATION_FAILED", .transition(.failed)), ("JUSPAY_DECLINED", .transition(.failed)), ("VOIDED", .transition(.canceled)),
        ("SOMETHING_NEW", .unknownStatus),
    ])
    func statuses(status: String, effect: NotificationEffect) throws {
        let fact = try read(orderBody(status: status)).onlyFact()
        #expect(fact.effect == effect)
        #expect(fact.dedupKey == "INQUIRY|ORD-1001|\(status)")
        #expect(fact.providerStatus == status)
    }

    @Test("AUTO_REFUNDED is a full refund by amount_refunded, as the webhook's is")
    func autoRefunded() throws {
        let fact = try read(orderBody(status: "AUTO_REFUNDED").replacingOccurrences(of: #""amount_refunded":0"#, with: #""amount_refunded":600"#))
            .onlyFact()
        #expect(fact.effect == .refund(RefundInfo(
            cumulativeRefundedMinor: 60000, fullyRefunded: true, orderAmount: Money(minor: 60000, currency: "INR"))))
    }

    @Test("400 or 404 with status NOT_FOUND or status_id 40 is not_found", arguments: [
        (400, #"{"status":"NOT_FOUND","error_code":"object_not_found","error_message":"Order not found"}"#, "NOT_FOUND"),
        (404, #"{"status":"NOT_FOUND","error_message":"Order not found"}"#, "NOT_FOUND"),
        (400, #"{"status_id":40,"error_message":"Order not found"}"#, "40"),
    ])
    func notFound(status: Int, body: String, word: String) {
        #expect(read(body, status: status) == .notFound(providerStatus: word))
    }

    @Test("other error statuses are errors carrying Juspay's words; 401 is unauthorized")
    func errors() {
        #expect(read(#"{"status":"error","error_code":"invalid_request","error_message":"version is invalid"}"#, status: 400)
            == .error(#"HTTP 400 (status "error", error_code "invalid_request", error_message "version is invalid")"#, providerStatus: nil))
        #expect(read(#"{"status":"NOT_FOUND"}"#, status: 500) == .error(#"HTTP 500 (status "NOT_FOUND")"#, providerStatus: nil))
        #expect(read("<html>", status: 404) == .error("HTTP 404", providerStatus: nil))
        #expect(read(#"{"error_message":"Access Denied"}"#, status: 401) == .unauthorized("Juspay answered HTTP 401: api_key or merchant_id refused"))
    }

    @Test("answers that cannot be read are errors saying why")
    func unreadable() {
        let cases: [(String, String)] = [
            ("not json", "the answer is not a JSON object: invalid literal at byte 0"),
            (#"{"status":"CHARGED"}"#, "the answer has no order_id"),
            (orderBody(orderID: "ORD-1002"), "answer names another order"),
            (orderBody().replacingOccurrences(of: #""status":"CHARGED","#, with: ""), "the answer has no status"),
            (orderBody(amount: "6.001"), #"the answer cannot be read: amount "6.001" has more than 2 decimals, the most INR allows"#),
            (orderBody(amount: "true"), "the answer cannot be read: order.amount is not a number or a string"),
        ]
        for (body, message) in cases {
            #expect(read(body).message == message, "\(body)")
        }
    }

    @Test("an identifier no notification could carry is an error")
    func limits() {
        #expect(read(orderBody(txnID: #"T\u0001X"#)).message == "the answer's provider transaction id contains a control character")
    }

    // MARK: The webhook of the same result

    @Test("the fact means what the webhook of the same result means; its key is the inquiry's own, stable across asks")
    func sameMeaningAsWebhook() throws {
        let account = Juspay(usernames: ["u"], passwords: ["p"])
        let webhook = try account.verifyRequest(try account.simulatedRequest(SimulationSpec(
            orderRef: "ORD-1001", status: "CHARGED", amount: Money(minor: 60000, currency: "INR"), path: "/ipn/juspay",
            uniqueID: "5f2c", time: "2026-11-21T10:15:30Z")))
        let fact = try read(orderBody()).onlyFact()
        #expect(fact.orderRef == webhook.orderRef)
        #expect(fact.effect == webhook.effect)
        #expect(fact.amount == webhook.amount)
        #expect(fact.providerStatus == webhook.providerStatus)
        #expect(fact.kind == webhook.kind)
        // Webhooks dedup on their event id, which an answer lacks (inquiries.md): the keys differ,
        // and a second ask of the same state is a duplicate of the first.
        #expect(webhook.dedupKey == "evt_5f2c")
        #expect(fact.dedupKey == "INQUIRY|ORD-1001|CHARGED")
        #expect(try read(orderBody()).onlyFact().dedupKey == fact.dedupKey)
    }

    // MARK: Config

    @Test("the account builds its inquiry from api_key and merchant_id, never showing the key")
    func built() throws {
        var settings = AccountSettings(
            provider: "juspay", account: "default", keyPath: "providers.juspay[0]", lists: ["username": ["u"], "password": ["p"]])
        #expect(try Juspay(settings: settings).inquiry == nil)
        #expect(Juspay.inquiryKeys.map(\.name) == ["api_key", "merchant_id"])
        settings.inquiry = InquirySettings(keyPath: "providers.juspay[0].inquiry", strings: ["api_key": apiKey, "merchant_id": "acme"])
        let built = try #require(try Juspay(settings: settings).inquiry)
        #expect(built.summary.map { "\($0.key)=\($0.value)" } == ["url=https://api.juspay.in", "api_key=configured, redacted", "merchant_id=acme"])
        #expect(!built.summary.map(\.value).joined().contains(apiKey))
        for (key, value, problem) in [
            ("api_key", "key:with-colon", "api_key"), ("merchant_id", "acme\r\nX-Evil: 1", "merchant_id"), ("merchant_id", "", "merchant_id"),
        ] {
            var broken = settings
            broken.inquiry?.strings[key] = value
            do {
                _ = try Juspay(settings: broken)
                Issue.record("\(key) \(value.debugDescription) was taken")
            } catch {
                #expect(error.key == "providers.juspay[0].inquiry.\(problem)")
                #expect(!error.message.contains("with-colon"))
            }
        }
    }
}
