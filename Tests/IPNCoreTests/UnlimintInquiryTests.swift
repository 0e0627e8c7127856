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

private let password = "pa$$ w0rd&=%"
private let inquiry = UnlimintInquiry(terminalCode: "18833", terminalPassword: password)
private let token = AccessToken(authorization: "bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", renewAtMillis: InquiryFixture.nowMillis + 290_000)
private let order = InquiryFixture.order("67897")

/// One `PaymentResponse` of the list, as Unlimint's SDK models it.
private func item(
    order: String = "67897", id: String, status: String, amount: String = "6.03", created: String? = "2019-07-01T09:29:57.409901Z"
) -> String {
    let created = created.map { #","created":"\#($0)""# } ?? ""
    return #"{"merchant_order":{"id":"\#(order)"},"payment_method":"BANKCARD","#
        + #""payment_data":{"id":"\#(id)","status":"\#(status)","amount":\#(amount),"currency":"USD"\#(created)}}"#
}

private func list(_ items: [String], hasMore: Bool = false) -> String {
    #"{"data":[\#(items.joined(separator: ","))],"has_more":\#(hasMore)}"#
}

private func read(_ text: String, status: Int = 200, order: InquiryOrder = order) throws -> InquiryReading {
    try inquiry.reading(text, status: status, order: order, token: token)
}

@Suite("Unlimint payment list (inquiries.md section 3)")
struct UnlimintInquiryTests {
    // MARK: Token

    @Test("the token request, to the byte")
    func tokenRequestBytes() throws {
        let request = try #require(inquiry.tokenRequest())
        #expect(request.method == "POST")
        #expect(request.url == "https://cardpay.com/api/auth/token")
        #expect(request.headerLines == ["Content-Type: application/x-www-form-urlencoded"])
        #expect(request.bodyText == "grant_type=password&terminal_code=18833&password=pa%24%24+w0rd%26%3D%25")
    }

    @Test("the token: '<token_type> <access_token>', renewed 10 s before expires_in runs out")
    func readsToken() throws {
        let answer = InquiryFixture.answer(
            200, #"{"access_token":"eyJhbGciOiJIUzI1NiJ9.e30.sig","token_type":"bearer","expires_in":300,"refresh_token":"r","refresh_expires_in":1800}"#)
        let token = try inquiry.readToken(answer, nowMillis: InquiryFixture.nowMillis)
        #expect(token == AccessToken(authorization: "bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", renewAtMillis: 1_795_233_952_345))
        #expect(token.renewAtMillis - InquiryFixture.nowMillis == 300_000 - 10_000)
        let asText = InquiryFixture.answer(200, #"{"access_token":"t","token_type":"Bearer","expires_in":"60"}"#)
        #expect(try inquiry.readToken(asText, nowMillis: 0) == AccessToken(authorization: "Bearer t", renewAtMillis: 50_000))
    }

    @Test("a refused credential is unauthorized; other failures are not, and never quote the token")
    func tokenErrors() throws {
        for status in [401, 403] {
            let error = try #require(thrown { () throws(InquiryTokenError) in
                try inquiry.readToken(InquiryFixture.answer(status, #"{"name":"UNAUTHORIZED","message":"Bad credentials"}"#), nowMillis: 0)
            })
            #expect(error.unauthorized)
            #expect(error.message == #"Unlimint refused terminal_code and terminal_password: HTTP \#(status) (name "UNAUTHORIZED", message "Bad credentials")"#)
        }
        let cases: [(Int, String, String)] = [
            (500, "oops", "the token request answered HTTP 500"),
            (200, "not json", "the token answer is not a JSON object"),
            (200, #"{"token_type":"bearer","expires_in":300}"#, "the token answer has no usable access_token"),
            (200, #"{"access_token":"secret-tok\r\nX: y","token_type":"bearer","expires_in":300}"#, "the token answer has no usable access_token"),
            (200, #"{"access_token":"secret-tok","expires_in":300}"#, "the token answer has no usable token_type"),
            (200, #"{"access_token":"secret-tok","token_type":"bearer","expires_in":0}"#, "the token answer's expires_in is not a number of seconds"),
            (200, #"{"access_token":"secret-tok","token_type":"bearer","expires_in":1.5}"#, "the token answer's expires_in is not a number of seconds"),
        ]
        try expectTokenRefusals(inquiry, cases, hiding: ["secret-tok"])
    }

    // MARK: Request

    @Test("the inquiry, to the byte: the window runs from an hour before the order to a minute from now")
    func requestBytes() throws {
        let request = try inquiry.request(for: order, context: InquiryFixture.context(token: token))
        #expect(request.method == "GET")
        #expect(request.url == "https://cardpay.com/api/payments?request_id=7d3c2a10-5b8e-4f61-9a0d-2e4c6b8f1a37&merchant_order_id=67897"
            + "&start_time=2026-11-20T09%3A30%3A15Z&end_time=2026-11-21T04%3A02%3A02Z&max_count=100")
        #expect(request.headerLines == ["Authorization: bearer eyJhbGciOiJIUzI1NiJ9.e30.sig"])
        #expect(request.body.isEmpty)
        #expect(request.pathAndQuery.hasPrefix("/api/payments?request_id="))
    }

    @Test("an order older than a week is searched in the week after its creation, less a minute")
    func oldOrder() throws {
        let created: Int64 = 1_793_491_200_000  // 2026-11-01T00:00:00Z
        let request = try inquiry.request(for: InquiryFixture.order("67 897/&", createdAtMillis: created), context: InquiryFixture.context(token: token))
        #expect(request.url.contains("&merchant_order_id=67%20897%2F%26&start_time=2026-10-31T23%3A00%3A00Z&end_time=2026-11-07T22%3A59%3A00Z&"))
    }

    /// How long before now orders were created, in milliseconds.
    static let ages: [Int64] = [0, 3_600_000, 86_400_000, 518_400_000, 604_799_999, 604_800_000, 2_592_000_000]

    @Test("the window is always shorter than 7 days and ends at most a minute from now", arguments: ages)
    func windowRule(age: Int64) throws {
        let now = InquiryFixture.nowMillis
        let request = try inquiry.request(
            for: InquiryFixture.order("W", createdAtMillis: now - age), context: InquiryFixture.context(token: token))
        let query = try #require(URLComponents(string: request.url)?.queryItems)
        func time(_ name: String) throws -> Int64 {
            let text = try #require(query.first { $0.name == name }?.value)
            return try #require(Timestamp.parse(text))
        }
        let (start, end) = (try time("start_time"), try time("end_time"))
        #expect(end - start < 7 * 86_400_000)
        #expect(end <= now + 60_000)
        #expect(start == (now - age - 3_600_000) / 1000 * 1000)
        #expect(end == min(now + 60_000, now - age - 3_600_000 + 7 * 86_400_000 - 60_000) / 1000 * 1000)
    }

    @Test("without a token there is nothing to ask with")
    func noToken() {
        #expect(refusal { () throws(InquiryRefusal) in try inquiry.request(for: order, context: InquiryFixture.context()) }
            == "Unlimint is asked with a token, and none was taken")
    }

    // MARK: Answers

    @Test("a listed payment is the fact its payment_data callback carries, field for field")
    func sameAsCallback() throws {
        let callbackBody = Fixture.bytes("unlimint-payment.json")
        let callback = try Unlimint(secrets: ["s"]).verify(RawRequest(
            target: "/ipn/unlimint",
            headers: [("Content-Type", "application/json"), ("Signature", Unlimint.signature(body: callbackBody, secret: "s"))],
            body: callbackBody))
        let reading = try read(#"{"data":["# + Fixture.text("unlimint-payment.json") + #"],"has_more":false}"#)
        #expect(try reading.onlyFact() == callback)
        #expect(callback.dedupKey == "payment|276122317|COMPLETED")
        #expect(reading.providerStatus == "COMPLETED")
    }

    @Test("statuses map as the callbacks' do", arguments: [
        ("NEW", NotificationEffect.transition(.pending)), ("IN_PROGRESS", .transition(.pending)), ("AUTHORIZED", .transition(.authorized)),
        ("COMPLETED", .transition(.paid)), ("DECLINED", .transition(.failed)), ("VOIDED", .transition(.canceled)),
        ("CHARGED_BACK", .transition(.chargedBack)), ("CHARGEBACK_RESOLVED", .chargebackReversal), ("SOMETHING", .unknownStatus),
    ])
    func statuses(status: String, effect: NotificationEffect) throws {
        let fact = try read(list([item(id: "42", status: status)])).onlyFact()
        #expect(fact.effect == effect)
        #expect(fact.dedupKey == "payment|42|\(status)")
        #expect(fact.providerTxnID == "42")
        #expect(fact.orderRef == "67897")
        #expect(fact.amount == Money(minor: 603, currency: "USD"))
    }

    @Test("several payments are recorded oldest created first; the newest's status is the inquiry's")
    func oldestFirst() throws {
        let reading = try read(list([
            item(id: "3", status: "COMPLETED", created: "2026-11-20T11:00:00Z"),
            item(id: "1", status: "DECLINED", created: "2026-11-20T10:31:00.5Z"),
            item(id: "2", status: "DECLINED", created: "2026-11-20T10:45:00+00:00"),
        ]))
        #expect(reading.facts.map(\.dedupKey) == ["payment|1|DECLINED", "payment|2|DECLINED", "payment|3|COMPLETED"])
        #expect(reading.providerStatus == "COMPLETED")
    }

    @Test("only the order's own payments; none, or an empty list, is not_found")
    func onlyThisOrder() throws {
        let reading = try read(list([item(order: "67897-2", id: "9", status: "COMPLETED"), item(id: "1", status: "NEW")]))
        #expect(reading.facts.map(\.dedupKey) == ["payment|1|NEW"])
        #expect(try read(list([item(order: "OTHER", id: "9", status: "COMPLETED")])) == .notFound(providerStatus: nil))
        #expect(try read(list([])) == .notFound(providerStatus: nil))
    }

    @Test("answers that cannot be read are errors saying why")
    func unreadable() throws {
        let cases: [(String, String)] = [
            ("<html>", "the answer is not a JSON object: unexpected character at byte 0"),
            (#"{"has_more":false}"#, "the answer has no data list"),
            (#"{"data":{}}"#, "the answer has no data list"),
            (#"{"data":[1]}"#, "data[0] is not an object"),
            (list([item(id: "", status: "NEW")]), "data[0] cannot be read: payment_data.id is missing"),
            (list([item(id: "1", status: "NEW", amount: "6.031")]),
             #"data[0] cannot be read: amount "6.031" has more than 2 decimals, the most USD allows"#),
            (list([item(id: "1", status: "NEW", created: nil), item(id: "2", status: "COMPLETED")]),
             "several payments are listed, and not every payment_data.created is a time to order them by"),
        ]
        for (body, message) in cases {
            #expect(try read(body).message == message, "\(body)")
        }
        // One payment needs no time to be ordered by.
        #expect(try read(list([item(id: "1", status: "NEW", created: nil)])).outcome == "facts")
    }

    @Test("error statuses carry Unlimint's name and message; 401 is unauthorized")
    func errorStatuses() throws {
        #expect(try read(#"{"name":"VALIDATION_ERROR","message":"start_time: must be within 7 days"}"#, status: 400)
            == .error(#"HTTP 400 (name "VALIDATION_ERROR", message "start_time: must be within 7 days")"#, providerStatus: nil))
        #expect(try read("Bad Gateway", status: 502) == .error("HTTP 502", providerStatus: nil))
        #expect(try read(#"{"name":"UNAUTHORIZED"}"#, status: 401).outcome == "unauthorized")
    }

    @Test("a payment id no notification could carry is an error")
    func limits() throws {
        let long = String(repeating: "9", count: 300)
        #expect(try read(list([item(id: long, status: "NEW")])).message == "the answer's provider transaction id is 300 bytes, more than 256")
    }

    // MARK: The later callback

    @Test("the fact of a listed payment has the dedup key of its callback, as ipnd simulate builds and verifies it")
    func sameKeyAsSimulatedCallback() throws {
        let account = Unlimint(secrets: ["cb-secret"])
        let callback = try account.verifyRequest(try account.simulatedRequest(SimulationSpec(
            orderRef: "67897", status: "COMPLETED", amount: Money(minor: 603, currency: "USD"), path: "/ipn/unlimint",
            uniqueID: "276122317", time: "2026-11-21T04:01:02Z")))
        let fact = try read(list([item(id: "276122317", status: "COMPLETED", created: "2026-11-21T04:01:02Z")])).onlyFact()
        #expect(fact.dedupKey == callback.dedupKey)
        #expect(fact == callback)
    }

    // MARK: Config

    @Test("the account builds its inquiry from terminal_code and terminal_password; the summary hides the password")
    func built() throws {
        var settings = AccountSettings(
            provider: "unlimint", account: "default", keyPath: "providers.unlimint[0]", lists: ["callback_secret": ["cb"]])
        #expect(try Unlimint(settings: settings).inquiry == nil)
        #expect(Unlimint.inquiryKeys.map(\.name) == ["terminal_code", "terminal_password"])
        settings.inquiry = InquirySettings(
            keyPath: "providers.unlimint[0].inquiry", url: "https://sandbox.cardpay.com",
            strings: ["terminal_code": "18833", "terminal_password": password])
        let built = try #require(try Unlimint(settings: settings).inquiry)
        #expect(built.tokenRequest()?.url == "https://sandbox.cardpay.com/api/auth/token")
        #expect(built.summary.map { "\($0.key)=\($0.value)" } == [
            "url=https://sandbox.cardpay.com", "terminal_code=18833", "terminal_password=configured, redacted",
        ])
        settings.inquiry?.strings["terminal_password"] = nil
        #expect(throws: AccountConfigError(key: "providers.unlimint[0].inquiry.terminal_password", message: "is required")) {
            try Unlimint(settings: settings)
        }
    }
}
