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

/// The Antom inquiry's keys: the merchant's pair signs requests (its public half is what the
/// merchant registers with Antom), the "Antom" pair signs answers (its public half is the
/// account's `public_key`).
private enum Keys {
    static var merchantPEM: String { Fixture.text("antom-merchant-test-private-key.pem") }
    static var merchantPKCS1PEM: String { Fixture.text("antom-merchant-test-private-key.pkcs1.pem") }
    static func merchant() throws -> RSAPrivateKey { try RSAPrivateKey(pem: merchantPEM) }
    static func merchantPublic() throws -> RSAPublicKey { try RSAPublicKey(derOrPEM: Fixture.text("antom-merchant-test-public-key.b64")) }
    static func antom() throws -> RSAPrivateKey { try RSAPrivateKey(pem: Fixture.text("alipay-test-private-key.pem")) }
    static var antomPublicText: String { Fixture.text("alipay-test-public-key.b64") }
    static func antomPublic() throws -> RSAPublicKey { try RSAPublicKey(derOrPEM: antomPublicText) }

    /// The base64 inside PEM armour: the key's DER.
    static func der(ofPEM pem: String) -> String {
        pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }
}

private let clientID = "SANDBOX_5YTEST0000000001"
private let paymentID = "2026112119401080010018800000001"
private let orderRef = "PAY_20261121000001"
private let sandboxPath = "/ams/sandbox/api/v1/payments/inquiryPayment"
private let responseTime = "2026-11-21T12:01:03+08:00"
private let order = InquiryFixture.order(orderRef)

private func makeInquiry(clientID: String = clientID, keyVersion: String = "1", url: String = Alipay.defaultInquiryURL) throws -> AlipayInquiry {
    AlipayInquiry(clientID: clientID, publicKeys: [try Keys.antomPublic()], merchantKey: try Keys.merchant(), keyVersion: keyVersion, url: url)
}

/// An answer signed the way Antom signs: `key` over the request's path, `clientID` and
/// `time`; `signingBody` (default: the body sent) is what the signature covers.
private func signedAnswer(
    _ body: String, key: RSAPrivateKey? = nil, clientID: String = clientID, time: String = responseTime, path: String = sandboxPath,
    signingBody: String? = nil, status: Int = 200
) throws -> InquiryAnswer {
    let signature = Alipay.signatureHeader(
        path: path, clientID: clientID, requestTime: time, body: Array((signingBody ?? body).utf8), key: try key ?? Keys.antom())
    return InquiryAnswer(
        status: status,
        headers: [
            InquiryHeader("Content-Type", "application/json; charset=UTF-8"), InquiryHeader("client-id", clientID),
            InquiryHeader("response-time", time), InquiryHeader("signature", signature),
        ],
        text: body)
}

/// An inquiryPayment answer of a call that worked.
private func paymentBody(status: String, paymentRequestID: String = orderRef, amount: String = #"{"currency":"SGD","value":"4200"}"#) -> String {
    #"{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"Success"},"paymentStatus":"\#(status)","#
        + #""paymentRequestId":"\#(paymentRequestID)","paymentId":"\#(paymentID)","paymentAmount":\#(amount)}"#
}

private func failBody(_ status: String, _ code: String) -> String {
    #"{"result":{"resultCode":"\#(code)","resultStatus":"\#(status)","resultMessage":"as Antom says"}}"#
}

private func read(_ answer: InquiryAnswer, inquiry: AlipayInquiry? = nil, order: InquiryOrder = order) throws -> InquiryReading {
    let inquiry = try inquiry ?? makeInquiry()
    return inquiry.read(answer, to: inquiry.request(for: order, context: InquiryFixture.context()), order: order)
}

@Suite("Antom inquiryPayment (inquiries.md section 2)")
struct AlipayInquiryTests {
    // MARK: Request

    @Test("the request, to the byte; its signature computed independently with openssl")
    func requestBytes() throws {
        let request = try makeInquiry().request(for: order, context: InquiryFixture.context())
        #expect(request.method == "POST")
        #expect(request.url == "https://open-sea-global.alipay.com/ams/sandbox/api/v1/payments/inquiryPayment")
        #expect(request.bodyText == #"{"paymentRequestId":"PAY_20261121000001"}"#)
        #expect(request.headerLines == [
            "Content-Type: application/json; charset=UTF-8",
            "client-id: SANDBOX_5YTEST0000000001",
            "request-time: 1795233662345",
            "signature: algorithm=RSA256,keyVersion=1,signature="
                + "YHjAXARt9IqZMbNeLs%2ByAOcY4BcGx2qVIfGZDs4yDq7gK96wlhzy5Bh7SdASUOsAY0%2BYcIoDyPgc5bRwK4hClYAva2fItu8MJ40mhAFkEgMELqQEXQWaPuqj"
                + "crV82QkjsNcUMPfwRqAvg3i7FBPk69h98FLGdR14bKNP956bBr1p%2BH1%2FhZZXsC4jJVOQ3QEi7ezYFdJ8q3SuUes76byrky%2Fi9GOAmbLSHzwJV9%2F2sif8D"
                + "LOUf56kp6slO5psoD1cG9mZ8FBW3PmgKxeBjrN5h1DNwPSX0r9xikUO6j02GAIAjADp6cAXmt55d4l1j7heajKUFHrvXHa2XTCBUxlzag%3D%3D",
        ])
    }

    @Test("the request's signature verifies with the merchant's public key over the documented content, and not over another")
    func requestSignatureVerifies() throws {
        let request = try makeInquiry().request(for: order, context: InquiryFixture.context())
        let value = try #require(request.headers.first(named: "signature"))
        let encoded = try #require(value.components(separatedBy: "signature=").last)
        let base64 = try #require(encoded.removingPercentEncoding)
        let signature = try #require(Base64.decode(base64))
        let content = Array("POST \(sandboxPath)\n\(clientID).1795233662345.".utf8) + request.body
        #expect(try Keys.merchantPublic().verifySHA256(signature: signature, message: [content]))
        #expect(try !Keys.antomPublic().verifySHA256(signature: signature, message: [content]))
        let otherTime = Array("POST \(sandboxPath)\n\(clientID).1795233662346.".utf8) + request.body
        #expect(try !Keys.merchantPublic().verifySHA256(signature: signature, message: [otherTime]))
    }

    @Test("the production path for other client ids, the key version, the configured region, JSON escaping")
    func variants() throws {
        let inquiry = try makeInquiry(clientID: "5YTEST0000000002", keyVersion: "3", url: "https://open-de-global.alipay.com/")
        let request = inquiry.request(for: InquiryFixture.order(#"A"B\C"#), context: InquiryFixture.context())
        #expect(request.url == "https://open-de-global.alipay.com/ams/api/v1/payments/inquiryPayment")
        #expect(request.pathAndQuery == AlipayInquiry.path)
        #expect(request.bodyText == #"{"paymentRequestId":"A\"B\\C"}"#)
        #expect(request.headers.first(named: "signature")?.hasPrefix("algorithm=RSA256,keyVersion=3,signature=") == true)
        #expect(request.headers.first(named: "client-id") == "5YTEST0000000002")
        // The signed path is the one on the wire, proxy prefix included.
        let proxied = try makeInquiry(url: "http://127.0.0.1:9000/antom").request(for: order, context: InquiryFixture.context())
        #expect(proxied.pathAndQuery == "/antom" + sandboxPath)
        let value = try #require(proxied.headers.first(named: "signature")?.components(separatedBy: "signature=").last?.removingPercentEncoding)
        let content = Array("POST /antom\(sandboxPath)\n\(clientID).1795233662345.".utf8) + proxied.body
        let proxiedSignature = try #require(Base64.decode(value))
        #expect(try Keys.merchantPublic().verifySHA256(signature: proxiedSignature, message: [content]))
    }

    // MARK: Answer verification

    @Test("an answer signed by Antom (independently, with openssl) verifies and reads as a paid fact")
    func independentAnswerVector() throws {
        let answer = InquiryAnswer(
            status: 200,
            headers: [
                InquiryHeader("Content-Type", "application/json"), InquiryHeader("Client-Id", clientID),
                InquiryHeader("Response-Time", responseTime),
                InquiryHeader("Signature", Fixture.text("antom-inquiry-payment-success.signature-header")),
            ],
            body: Fixture.bytes("antom-inquiry-payment-success.json"))
        let fact = try read(answer).onlyFact()
        #expect(fact == VerifiedNotification(
            kind: .payment, orderRef: orderRef, providerTxnID: paymentID, dedupKey: "PAYMENT_RESULT|\(paymentID)|S",
            providerStatus: "SUCCESS", effect: .transition(.paid), amount: Money(minor: 4200, currency: "SGD"),
            link: .registers(paymentID)))
    }

    @Test("a forged answer is a bad signature, read no further", arguments: [
        "merchant key", "body altered", "client-id", "response-time", "path", "unsigned garbage",
    ])
    func forged(how: String) throws {
        let body = paymentBody(status: "SUCCESS")
        let answer: InquiryAnswer
        switch how {
        case "merchant key": answer = try signedAnswer(body, key: Keys.merchant())
        case "body altered": answer = try signedAnswer(body.replacingOccurrences(of: "4200", with: "9200"), signingBody: body)
        case "client-id":
            // Signed by Antom for another client: the content names that client.
            var signed = try signedAnswer(body, clientID: "SANDBOX_OTHER")
            signed.headers[1] = InquiryHeader("client-id", clientID)
            answer = signed
        case "response-time":
            var signed = try signedAnswer(body)
            signed.headers[2] = InquiryHeader("response-time", "2026-11-21T12:01:04+08:00")
            answer = signed
        case "path": answer = try signedAnswer(body, path: AlipayInquiry.path)
        default: answer = try signedAnswer("not json at all", key: Keys.merchant())
        }
        let reading = try read(answer)
        #expect(reading == .badSignature("the answer's signature does not verify under any public_key"))
    }

    @Test("any one changed byte of a signed answer's body makes it a bad signature")
    func mutatedBodies() throws {
        let body = Array(paymentBody(status: "SUCCESS").utf8)
        let answer = try signedAnswer(paymentBody(status: "SUCCESS"))
        let inquiry = try makeInquiry()
        let request = inquiry.request(for: order, context: InquiryFixture.context())
        var rng = SplitMix64(seed: 37)
        for _ in 0..<100 {
            var mutated = answer
            mutated.body = rng.mutatingOneByte(body).mutated
            #expect(inquiry.read(mutated, to: request, order: order).outcome == "bad_signature")
        }
    }

    @Test("missing, repeated or malformed verification headers, or another client id, are a bad signature")
    func missingHeaders() throws {
        let good = try signedAnswer(paymentBody(status: "SUCCESS"))
        for name in ["client-id", "response-time", "signature"] {
            var missing = good
            missing.headers.removeAll { $0.name == name }
            #expect(try read(missing) == .badSignature("the answer's \(name) header is missing or repeated"))
            var repeated = good
            repeated.headers.append(InquiryHeader(name.uppercased(), good.headers.first(named: name) ?? ""))
            #expect(try read(repeated).outcome == "bad_signature")
        }
        let other = try signedAnswer(paymentBody(status: "SUCCESS"), clientID: "SANDBOX_OTHER")
        #expect(try read(other).message == #"the answer's client-id "SANDBOX_OTHER" is not this account's client_id"#)
        var malformed = good
        malformed.headers[3] = InquiryHeader("signature", "algorithm=RSA256,keyVersion=1")
        #expect(try read(malformed) == .badSignature("the answer's signature header has no signature= value"))
        malformed.headers[3] = InquiryHeader("signature", "algorithm=RSA256,keyVersion=1,signature=%ZZ")
        #expect(try read(malformed).outcome == "bad_signature")
    }

    @Test("any of the account's Antom public keys verifies (rotation)")
    func rotation() throws {
        let inquiry = AlipayInquiry(
            clientID: clientID, publicKeys: [try Keys.merchantPublic(), try Keys.antomPublic()], merchantKey: try Keys.merchant())
        #expect(try read(try signedAnswer(paymentBody(status: "SUCCESS")), inquiry: inquiry).outcome == "facts")
    }

    // MARK: Answer rows

    @Test("resultStatus S: paymentStatus maps to a state, with the PAYMENT_RESULT key for SUCCESS and FAIL", arguments: [
        ("SUCCESS", OrderState.paid, "PAYMENT_RESULT|\(paymentID)|S"),
        ("success", .paid, "PAYMENT_RESULT|\(paymentID)|S"),
        ("FAIL", .failed, "PAYMENT_RESULT|\(paymentID)|F"),
        ("Fail", .failed, "PAYMENT_RESULT|\(paymentID)|F"),
        ("CANCELLED", .canceled, "INQUIRY|\(paymentID)|CANCELLED"),
        ("PROCESSING", .pending, "INQUIRY|\(paymentID)|PROCESSING"),
        ("PENDING", .pending, "INQUIRY|\(paymentID)|PENDING"),
        ("pending", .pending, "INQUIRY|\(paymentID)|pending"),
    ])
    func paymentStatus(status: String, state: OrderState, dedupKey: String) throws {
        let reading = try read(try signedAnswer(paymentBody(status: status)))
        let fact = try reading.onlyFact()
        #expect(fact.effect == .transition(state))
        #expect(fact.dedupKey == dedupKey)
        #expect(fact.providerStatus == status)
        #expect(fact.providerTxnID == paymentID)
        #expect(fact.orderRef == orderRef)
        #expect(fact.link == .registers(paymentID))
        #expect(fact.amount == Money(minor: 4200, currency: "SGD"))
        #expect(fact.kind == .payment)
        #expect(reading.providerStatus == status)
    }

    @Test("a paymentStatus without a mapping is recorded as unknown_status, as a callback's would be")
    func unknownPaymentStatus() throws {
        let fact = try read(try signedAnswer(paymentBody(status: "REFUNDED"))).onlyFact()
        #expect(fact.effect == .unknownStatus)
        #expect(fact.dedupKey == "INQUIRY|\(paymentID)|REFUNDED")
    }

    @Test("F with ORDER_NOT_EXIST is not_found; other F and U are errors naming the resultCode")
    func failures() throws {
        #expect(try read(try signedAnswer(failBody("F", "ORDER_NOT_EXIST"))) == .notFound(providerStatus: "ORDER_NOT_EXIST"))
        #expect(try read(try signedAnswer(failBody("F", "ACCESS_DENIED")))
            == .error(#"Antom answered resultStatus F with resultCode "ACCESS_DENIED""#, providerStatus: "ACCESS_DENIED"))
        #expect(try read(try signedAnswer(failBody("U", "UNKNOWN_EXCEPTION")))
            == .error(#"Antom answered resultStatus U with resultCode "UNKNOWN_EXCEPTION""#, providerStatus: "UNKNOWN_EXCEPTION"))
        #expect(try read(try signedAnswer(failBody("X", "WHAT"))).message == #"the answer's result.resultStatus "X" is not S, F or U"#)
    }

    @Test("signed answers that cannot be read are errors saying why")
    func unreadable() throws {
        let cases: [(String, String)] = [
            ("[1]", "the answer is not a JSON object: the JSON body is not an object at byte 0"),
            (#"{"paymentStatus":"SUCCESS"}"#, "the answer has no result.resultStatus"),
            (#"{"result":{"resultStatus":"S"},"paymentId":"1","paymentRequestId":"\#(orderRef)"}"#, "the answer has no paymentStatus"),
            (paymentBody(status: "SUCCESS", paymentRequestID: "PAY_OTHER"), "answer names another order"),
            (paymentBody(status: "SUCCESS").replacingOccurrences(of: #""paymentId":"\#(paymentID)","#, with: ""),
             "the answer cannot be read: paymentId is missing"),
            (paymentBody(status: "SUCCESS", amount: #"{"currency":"SGD","value":"42.00"}"#),
             #"the answer cannot be read: amount "42.00" is not a plain decimal number"#),
            (paymentBody(status: "SUCCESS", amount: #"{"currency":"XXX","value":"4200"}"#),
             #"the answer cannot be read: currency "XXX" is not an ISO 4217 code"#),
        ]
        for (body, message) in cases {
            #expect(try read(try signedAnswer(body)).message == message, "\(body)")
        }
    }

    @Test("error statuses are errors and 401 unauthorized, before any verification")
    func statuses() throws {
        #expect(try read(InquiryFixture.answer(502, "<html>bad gateway</html>")) == .error("HTTP 502", providerStatus: nil))
        #expect(try read(InquiryFixture.answer(401, "")).outcome == "unauthorized")
        #expect(try read(InquiryFixture.answer(200, paymentBody(status: "SUCCESS"))).outcome == "bad_signature")
    }

    @Test("an order reference no notification could carry is an error")
    func limits() throws {
        let long = String(repeating: "P", count: 257)
        let reading = try read(try signedAnswer(paymentBody(status: "SUCCESS", paymentRequestID: long)), order: InquiryFixture.order(long))
        #expect(reading.message == "the answer's order reference is 257 bytes, more than 256")
    }

    // MARK: The later notification

    @Test("SUCCESS and FAIL facts have the key, link and meaning of the PAYMENT_RESULT notification of the same result",
          arguments: [("S", "SUCCESS"), ("F", "FAIL")])
    func sameKeyAsCallback(resultStatus: String, paymentStatus: String) throws {
        let account = Alipay(clientID: clientID, publicKeys: [try Keys.antomPublic()], simulationKey: try Keys.antom())
        let simulated = try account.simulatedRequest(SimulationSpec(
            orderRef: orderRef, status: resultStatus, amount: Money(minor: 4200, currency: "SGD"), path: "/ipn/alipay",
            uniqueID: paymentID, time: "2026-11-21T04:01:02Z"))
        let callback = try account.verifyRequest(simulated)
        let fact = try read(try signedAnswer(paymentBody(status: paymentStatus))).onlyFact()
        #expect(fact.dedupKey == callback.dedupKey)
        #expect(fact.link == callback.link)
        #expect(fact.effect == callback.effect)
        #expect(fact.amount == callback.amount)
        #expect(fact.orderRef == callback.orderRef)
        #expect(fact.providerTxnID == callback.providerTxnID)
        #expect(fact.kind == callback.kind)
    }

    // MARK: Config

    private func settings(_ inquiry: [String: String]?, url: String? = nil) -> AccountSettings {
        AccountSettings(
            provider: "alipay", account: "default", keyPath: "providers.alipay[0]", lists: ["public_key": [Keys.antomPublicText]],
            strings: ["client_id": clientID],
            inquiry: inquiry.map { InquirySettings(keyPath: "providers.alipay[0].inquiry", url: url, strings: $0) })
    }

    private func configError(_ inquiry: [String: String]) -> AccountConfigError? {
        do {
            _ = try Alipay(settings: settings(inquiry))
            return nil
        } catch {
            return error
        }
    }

    @Test("the merchant key is taken as PKCS#8 or PKCS#1, PEM or base64 DER, and signs alike in each")
    func keyFormats() throws {
        let texts = [Keys.merchantPEM, Keys.merchantPKCS1PEM, Keys.der(ofPEM: Keys.merchantPEM), Keys.der(ofPEM: Keys.merchantPKCS1PEM)]
        var headers: Set<String> = []
        for text in texts {
            let inquiry = try #require(try Alipay(settings: settings(["merchant_private_key": text])).inquiry)
            let request = try inquiry.request(for: order, context: InquiryFixture.context())
            headers.insert(request.headers.first(named: "signature") ?? "")
        }
        #expect(headers.count == 1)
        #expect(headers.first?.hasSuffix("BUxlzag%3D%3D") == true)
    }

    @Test("the account builds its inquiry from its client id and public keys, with a redacted summary")
    func built() throws {
        #expect(try Alipay(settings: settings(nil)).inquiry == nil)
        #expect(Alipay.inquiryKeys.map(\.name) == ["merchant_private_key", "key_version"])
        let inquiry = try #require(try Alipay(settings: settings(["merchant_private_key": Keys.merchantPEM, "key_version": "2"],
                                                                url: "https://open-na-global.alipay.com")).inquiry)
        #expect(inquiry.summary.map { "\($0.key)=\($0.value)" } == [
            "url=https://open-na-global.alipay.com/ams/sandbox/api/v1/payments/inquiryPayment",
            "merchant_private_key=configured, redacted (RSA 2048)",
            "key_version=2",
        ])
        #expect(inquiry.tokenRequest() == nil)
        let alipay = try #require(inquiry as? AlipayInquiry)
        #expect(try read(try signedAnswer(paymentBody(status: "SUCCESS")), inquiry: alipay).outcome == "facts")
    }

    @Test("a missing, malformed or small merchant key, or a bad key_version, names the full key and never shows the key")
    func configErrors() throws {
        let broken = String(Keys.merchantPEM.dropLast(200))
        let cases: [([String: String], String)] = [
            ([:], "providers.alipay[0].inquiry.merchant_private_key"),
            (["merchant_private_key": broken], "providers.alipay[0].inquiry.merchant_private_key"),
            (["merchant_private_key": "not a key"], "providers.alipay[0].inquiry.merchant_private_key"),
            (["merchant_private_key": Fixture.text("rsa-512-private-key.pem")], "providers.alipay[0].inquiry.merchant_private_key"),
            (["merchant_private_key": Keys.merchantPEM, "key_version": "0"], "providers.alipay[0].inquiry.key_version"),
            (["merchant_private_key": Keys.merchantPEM, "key_version": "1,signature=x"], "providers.alipay[0].inquiry.key_version"),
        ]
        for (inquiry, key) in cases {
            let error = try #require(configError(inquiry), "\(inquiry.keys)")
            #expect(error.key == key)
            #expect(!error.description.contains(Keys.der(ofPEM: Keys.merchantPEM).prefix(40)))
            #expect(!error.description.contains("MII"))
        }
        #expect(configError(["merchant_private_key": Fixture.text("rsa-512-private-key.pem")])?.message.contains("512-bit") == true)
    }
}
