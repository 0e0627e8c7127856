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

private let privateKey = "sk-upi-4c1f8e2a9b7d"
private let inquiry = CitconInquiry(privateKey: privateKey)
private let token = AccessToken(authorization: "Bearer eyJ0eXAiOiJKV1QifQ.srv.sig", renewAtMillis: InquiryFixture.nowMillis + 3_540_000)
private let transactionID = "84571d30e61711eba6a94911fce35a55"
private let order = InquiryFixture.order("reference132", txnID: transactionID)

/// `{"status":"success","data":{...}}` with a charge of the UPI vector's fields.
private func success(object: String? = "charge", reference: String = "reference132", status: String = "authorized", extra: String = "") -> String {
    let object = object.map { #""object":"\#($0)","# } ?? ""
    return #"{"status":"success","data":{\#(object)"id":"\#(transactionID)","reference":"\#(reference)","amount":100,"#
        + #""currency":"USD","status":"\#(status)","time_created":"2021-07-16T09:23:44.000Z","payment_method":"paypal"\#(extra)}}"#
}

private func read(_ text: String, status: Int = 200, order: InquiryOrder = order) throws -> InquiryReading {
    try inquiry.reading(text, status: status, order: order, token: token)
}

@Suite("Citcon transaction inquiry (inquiries.md section 5)")
struct CitconInquiryTests {
    // MARK: Token

    @Test("the token request, to the byte")
    func tokenRequestBytes() throws {
        let request = try #require(inquiry.tokenRequest())
        #expect(request.method == "POST")
        #expect(request.url == "https://api.citconpay.com/v1/access-tokens")
        #expect(request.headerLines == ["Content-Type: application/json", "Authorization: Bearer sk-upi-4c1f8e2a9b7d"])
        #expect(request.bodyText == #"{"token_type":"server"}"#)
    }

    @Test("the token: Bearer <access_token>, renewed 60 s before expiry (epoch ms)")
    func readsToken() throws {
        let answer = InquiryFixture.answer(200, #"{"status":"success","data":{"access_token":"eyJ0eXAiOiJKV1QifQ.srv.sig","#
            + #""token_type":"server","expiry":1795237262345,"permission":["charge"]}}"#)
        let token = try inquiry.readToken(answer, nowMillis: InquiryFixture.nowMillis)
        #expect(token == AccessToken(authorization: "Bearer eyJ0eXAiOiJKV1QifQ.srv.sig", renewAtMillis: 1_795_237_202_345))
        #expect(token.renewAtMillis == 1_795_237_262_345 - 60_000)
    }

    @Test("a refused key is unauthorized; other failures are not, and never quote a credential")
    func tokenErrors() throws {
        for status in [401, 403] {
            let error = try #require(thrown { () throws(InquiryTokenError) in
                try inquiry.readToken(InquiryFixture.answer(status, #"{"status":"fail","data":{"code":"unauthorized","message":"invalid key"}}"#), nowMillis: 0)
            })
            #expect(error.unauthorized)
            #expect(error.message == #"Citcon refused private_key: HTTP \#(status) (code "unauthorized", message "invalid key")"#)
        }
        let cases: [(Int, String, String)] = [
            (503, "busy", "the token request answered HTTP 503"),
            (200, "[]", "the token answer is not a JSON object"),
            (200, #"{"status":"fail","data":{"code":"x","message":"y"}}"#, #"the token answer is not a success: HTTP 200 (code "x", message "y")"#),
            (200, #"{"status":"success","data":{"expiry":1}}"#, "the token answer has no usable data.access_token"),
            (200, #"{"status":"success","data":{"access_token":"tok secret-tok","expiry":1}}"#, "the token answer has no usable data.access_token"),
            (200, #"{"status":"success","data":{"access_token":"secret-tok"}}"#, "the token answer's data.expiry is not a time in epoch milliseconds"),
            (200, #"{"status":"success","data":{"access_token":"secret-tok","expiry":"soon"}}"#,
             "the token answer's data.expiry is not a time in epoch milliseconds"),
        ]
        try expectTokenRefusals(inquiry, cases, hiding: ["secret-tok", privateKey])
    }

    // MARK: Request

    @Test("the inquiry, to the byte: GET /transactions/<Citcon's id> with the token")
    func requestBytes() throws {
        let request = try inquiry.request(for: order, context: InquiryFixture.context(token: token))
        #expect(request.method == "GET")
        #expect(request.url == "https://api.citconpay.com/v1/transactions/84571d30e61711eba6a94911fce35a55")
        #expect(request.headerLines == ["Authorization: Bearer eyJ0eXAiOiJKV1QifQ.srv.sig"])
        #expect(request.body.isEmpty)
        let sandbox = CitconInquiry(privateKey: privateKey, url: "https://api.sandbox.citconpay.com/v1/")
        #expect(try sandbox.request(for: InquiryFixture.order("r", txnID: "a/b"), context: InquiryFixture.context(token: token)).url
            == "https://api.sandbox.citconpay.com/v1/transactions/a%2Fb")
    }

    @Test("an order known only from an expectation cannot be asked; nor without a token")
    func cannotAsk() {
        #expect(refusal { () throws(InquiryRefusal) in
            try inquiry.request(for: InquiryFixture.order("reference132", expected: Money(minor: 100, currency: "USD")), context: InquiryFixture.context(token: token))
        } == "Citcon is asked by its transaction id")
        #expect(refusal { () throws(InquiryRefusal) in
            try inquiry.request(for: InquiryFixture.order("reference132", txnID: ""), context: InquiryFixture.context(token: token))
        } == "Citcon is asked by its transaction id")
        #expect(refusal { () throws(InquiryRefusal) in try inquiry.request(for: order, context: InquiryFixture.context()) }
            == "Citcon is asked with a token, and none was taken")
    }

    @Test("the refusal is known before a token is taken: no token request for an order that cannot be asked")
    func refusalBeforeToken() {
        #expect(inquiry.refusal(for: InquiryFixture.order("reference132", expected: Money(minor: 100, currency: "USD")))?.message
            == "Citcon is asked by its transaction id")
        #expect(inquiry.refusal(for: order) == nil)
    }

    // MARK: Answers

    @Test("success: a fact as the UPI IPN, transaction_type from data.object, dedup id|transaction_type|status")
    func charge() throws {
        let reading = try read(success())
        #expect(reading == .facts([VerifiedNotification(
            kind: .payment, orderRef: "reference132", providerTxnID: transactionID, dedupKey: "\(transactionID)|charge|authorized",
            providerStatus: "authorized", effect: .transition(.authorized), amount: Money(minor: 100, currency: "USD"))],
            providerStatus: "authorized"))
    }

    @Test("data.object defaults to charge")
    func defaultObject() throws {
        #expect(try read(success(object: nil)).onlyFact().dedupKey == "\(transactionID)|charge|authorized")
        #expect(try read(success(object: "")).onlyFact().dedupKey == "\(transactionID)|charge|authorized")
    }

    @Test("charge statuses map as the IPN's do", arguments: [
        ("success", NotificationEffect.transition(.paid)), ("succeeded", .transition(.paid)), ("captured", .transition(.paid)),
        ("authorized", .transition(.authorized)), ("pending", .transition(.pending)), ("initiated", .transition(.pending)),
        ("failed", .transition(.failed)), ("fail", .transition(.failed)), ("canceled", .transition(.canceled)),
        ("cancelled", .transition(.canceled)), ("expired", .transition(.expired)), ("mystery", .unknownStatus),
    ])
    func statuses(status: String, effect: NotificationEffect) throws {
        let fact = try read(success(status: status)).onlyFact()
        #expect(fact.effect == effect)
        #expect(fact.dedupKey == "\(transactionID)|charge|\(status)")
        #expect(fact.providerStatus == status)
    }

    @Test("a refund object is read as a refund IPN: amount_refunded is the cumulative total")
    func refund() throws {
        let fact = try read(success(object: "refund", status: "succeeded", extra: #","amount_refunded":100"#)).onlyFact()
        #expect(fact.kind == .refund)
        #expect(fact.effect == .refund(RefundInfo(
            refundID: transactionID, amount: Money(minor: 100, currency: "USD"), cumulativeRefundedMinor: 100)))
        #expect(fact.dedupKey == "\(transactionID)|refund|succeeded")
    }

    @Test("data.reference must be the order's")
    func anotherOrder() throws {
        #expect(try read(success(reference: "reference133")) == .error("answer names another order", providerStatus: nil))
        #expect(try read(#"{"status":"success","data":{"id":"x","status":"success"}}"#).message == "the answer has no data.reference")
    }

    @Test("fail: an error with Citcon's code and message, whatever the HTTP status")
    func fail() throws {
        let body = #"{"status":"fail","data":{"code":"transaction_not_found","message":"Transaction not found"}}"#
        #expect(try read(body, status: 404) == .error(
            #"Citcon answered fail (HTTP 404): code "transaction_not_found", message "Transaction not found""#,
            providerStatus: "transaction_not_found"))
        #expect(try read(body).message?.hasPrefix("Citcon answered fail (HTTP 200)") == true)
        #expect(try read(#"{"status":"fail"}"#, status: 400).providerStatus == "fail")
    }

    @Test("answers that cannot be read are errors saying why; 401 is unauthorized")
    func unreadable() throws {
        let cases: [(String, Int, String)] = [
            ("oops", 200, "the answer is not a JSON object: unexpected character at byte 0"),
            ("oops", 502, "HTTP 502"),
            (#"{"status":"success"}"#, 200, "the answer is neither a success with data nor a fail"),
            (#"{"status":"pending","data":{}}"#, 200, "the answer is neither a success with data nor a fail"),
            (success().replacingOccurrences(of: #""status":"authorized","#, with: ""), 200,
             "the answer cannot be read: status is missing, empty or not among the signed fields"),
            (success().replacingOccurrences(of: #""currency":"USD","#, with: ""), 200, "the answer cannot be read: currency is missing beside amount"),
            (success().replacingOccurrences(of: #""amount":100"#, with: #""amount":1.5"#), 200,
             #"the answer cannot be read: amount "1.5" is not a plain decimal number"#),
        ]
        for (body, status, message) in cases {
            #expect(try read(body, status: status).message == message, "\(body)")
        }
        #expect(try read(success(), status: 401).outcome == "unauthorized")
    }

    @Test("an identifier no notification could carry is an error")
    func limits() throws {
        let long = String(repeating: "r", count: 300)
        let reading = try read(success(reference: long), order: InquiryFixture.order(long, txnID: transactionID))
        #expect(reading.message == "the answer's order reference is 300 bytes, more than 256")
    }

    // MARK: The later IPN

    @Test("the fact has the dedup key, and the meaning, of the UPI IPN of the same result", arguments: ["success", "authorized", "failed"])
    func sameKeyAsIPN(status: String) throws {
        let account = Citcon(apiSecrets: ["braintree"])
        let ipn = try account.verifyRequest(try account.simulatedRequest(SimulationSpec(
            orderRef: "reference132", status: status, amount: Money(minor: 100, currency: "USD"), path: "/ipn/citcon",
            uniqueID: transactionID, time: "2021-08-14T09:47:43.000Z")))
        var fact = try read(success(status: status)).onlyFact()
        #expect(fact.dedupKey == ipn.dedupKey)
        fact.detail["generation"] = "upi"  // what verification adds about the IPN itself
        #expect(fact == ipn)
    }

    @Test("the vector IPN and the inquiry of the same transaction share their key")
    func vectorIPN() throws {
        let request = RawRequest(target: "/ipn/citcon", headers: [("Content-Type", "application/json")], body: Fixture.bytes("citcon-upi.json"))
        let ipn = try Citcon(apiSecrets: ["braintree"]).verifyRequest(request)
        #expect(try read(success()).onlyFact().dedupKey == ipn.dedupKey)
    }

    // MARK: Config

    @Test("the account builds its inquiry from private_key, never showing it")
    func built() throws {
        var settings = AccountSettings(provider: "citcon", account: "default", keyPath: "providers.citcon[0]", lists: ["api_secret": ["s"]])
        #expect(try Citcon(settings: settings).inquiry == nil)
        #expect(Citcon.inquiryKeys.map(\.name) == ["private_key"])
        settings.inquiry = InquirySettings(keyPath: "providers.citcon[0].inquiry", strings: ["private_key": privateKey])
        let built = try #require(try Citcon(settings: settings).inquiry)
        #expect(built.summary.map { "\($0.key)=\($0.value)" } == ["url=https://api.citconpay.com/v1", "private_key=configured, redacted"])
        #expect(built.tokenRequest()?.headers.first(named: "authorization") == "Bearer " + privateKey)
        for value in ["", "two words", "line\nbreak"] {
            settings.inquiry?.strings["private_key"] = value
            do {
                _ = try Citcon(settings: settings)
                Issue.record("private_key \(value.debugDescription) was taken")
            } catch {
                #expect(error.key == "providers.citcon[0].inquiry.private_key")
                #expect(!error.message.contains("words"))
            }
        }
    }
}
