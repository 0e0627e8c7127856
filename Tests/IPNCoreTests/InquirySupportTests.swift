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

@Suite("What every provider's inquiry shares")
struct InquirySupportTests {
    @Test("percent-encoding keeps RFC 3986's unreserved characters only, uppercase hex")
    func percentEncoding() {
        #expect(InquiryURL.percentEncoded("AZaz09-._~") == "AZaz09-._~")
        #expect(InquiryURL.percentEncoded(" !\"#$%&'()*+,/:;=?@[]") == "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F%3A%3B%3D%3F%40%5B%5D")
        #expect(InquiryURL.percentEncoded("é\u{0}\n") == "%C3%A9%00%0A")
        #expect(InquiryURL.pathSegment("..") == "%2E%2E")
        #expect(InquiryURL.pathSegment("...") == "...")
        #expect(InquiryURL.query([("a", "1"), ("b", "x/y z")]) == "a=1&b=x%2Fy%20z")
    }

    @Test("joining never doubles or drops the slash")
    func joining() {
        #expect(InquiryURL.joining("https://h/v1", "/x") == "https://h/v1/x")
        #expect(InquiryURL.joining("https://h/v1//", "/x") == "https://h/v1/x")
        #expect(InquiryURL.joining("https://h", "/x") == "https://h/x")
    }

    @Test("quotes are bounded, escaped and marked when cut")
    func quoting() {
        #expect(InquiryText.quoted(Array("ok".utf8)) == #""ok""#)
        #expect(InquiryText.quoted([0x22, 0x5C, 0x0A, 0x1B, 0x7F, 0xC3, 0xA9]) == #""\"\\\x0a\x1b\x7f\xc3\xa9""#)
        let long = [UInt8](repeating: UInt8(ascii: "a"), count: 65)
        #expect(InquiryText.quoted(long) == "\"" + String(repeating: "a", count: 64) + "\"…")
        #expect(InquiryText.quoted(Array(repeating: UInt8(ascii: "a"), count: 64)) == "\"" + String(repeating: "a", count: 64) + "\"")
        #expect(InquiryText.unexpectedReply(Array("?".utf8)) == #"unexpected reply "?""#)
    }

    @Test("UTC to the second drops the milliseconds, before and after the epoch")
    func utcSeconds() {
        #expect(InquiryText.utcSeconds(epochMilliseconds: InquiryFixture.nowMillis) == "2026-11-21T04:01:02Z")
        #expect(InquiryText.utcSeconds(epochMilliseconds: 999) == "1970-01-01T00:00:00Z")
        #expect(InquiryText.utcSeconds(epochMilliseconds: -1) == "1969-12-31T23:59:59Z")
    }

    @Test("header values: no control characters, not empty")
    func headerSafe() {
        #expect(InquiryText.isHeaderSafe("Bearer abc.def"))
        #expect(!InquiryText.isHeaderSafe(""))
        #expect(!InquiryText.isHeaderSafe("a\r\nb"))
        #expect(!InquiryText.isHeaderSafe("a\u{7F}"))
    }

    @Test("checked facts keep NotificationLimits; the first violation is the error")
    func checked() {
        let fact = VerifiedNotification(
            kind: .payment, orderRef: "R1", providerTxnID: "T1", dedupKey: "k", providerStatus: "S", effect: .transition(.paid))
        #expect(InquiryReading.checked([fact], providerStatus: "S") == .facts([fact], providerStatus: "S"))
        var bad = fact
        bad.dedupKey = String(repeating: "k", count: 1025)
        #expect(InquiryReading.checked([fact, bad], providerStatus: "S")
            == .error("the answer's dedup key is 1025 bytes, more than 1024", providerStatus: "S"))
    }

    @Test("a private key is read from PEM or base64 DER, PKCS#8 or PKCS#1, and its size is told")
    func privateKeyFormats() throws {
        let pkcs8 = Fixture.text("antom-merchant-test-private-key.pem")
        let pkcs1 = Fixture.text("antom-merchant-test-private-key.pkcs1.pem")
        #expect(pkcs1.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
        func der(_ pem: String) -> String { pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined() }
        let message = [Array("probe".utf8)]
        let publicKey = try RSAPublicKey(derOrPEM: Fixture.text("antom-merchant-test-public-key.b64"))
        for text in [pkcs8, pkcs1, der(pkcs8), der(pkcs1), der(pkcs8).split(every: 64)] {
            let key = try RSAPrivateKey(derOrPEM: text)
            #expect(key.bits == 2048)
            #expect(publicKey.verifySHA256(signature: key.signSHA256(message), message: message))
        }
        #expect(throws: KeyError.notBase64) { try RSAPrivateKey(derOrPEM: "not base64!") }
        #expect(throws: KeyError.self) { try RSAPrivateKey(derOrPEM: Base64.encode(Array("not a key".utf8))) }
        #expect(throws: KeyError.tooSmall(bits: 512)) { try RSAPrivateKey(derOrPEM: Fixture.text("rsa-512-private-key.pem")) }
        #expect(throws: KeyError.tooSmall(bits: 512)) { try RSAPrivateKey(derOrPEM: der(Fixture.text("rsa-512-private-key.pem"))) }
        // A public key is not a private key.
        #expect(throws: KeyError.self) { try RSAPrivateKey(derOrPEM: Fixture.text("antom-merchant-test-public-key.b64")) }
    }
}

@Suite("Inquiry answers from a hostile or broken host")
struct HostileInquiryAnswerTests {
    @Test("random and truncated answers to every provider's inquiry are read as something, never a crash or a fact from nothing")
    func randomAnswers() throws {
        let token = AccessToken(authorization: "Bearer t", renewAtMillis: 0)
        let antom = try RSAPublicKey(derOrPEM: Fixture.text("alipay-test-public-key.b64"))
        let merchant = try RSAPrivateKey(pem: Fixture.text("antom-merchant-test-private-key.pem"))
        let inquiries: [any StatusInquiry] = [
            IPay88Inquiry(merchantCode: "M1"),
            AlipayInquiry(clientID: "C1", publicKeys: [antom], merchantKey: merchant),
            UnlimintInquiry(terminalCode: "1", terminalPassword: "p"),
            JuspayInquiry(apiKey: "k", merchantID: "m"),
            CitconInquiry(privateKey: "k"),
        ]
        let order = InquiryFixture.order("R1", txnID: "T1", expected: Money(minor: 100, currency: "USD"))
        let seeds = [
            #"{"data":[{"merchant_order":{"id":"R1"},"payment_data":{"id":"1","status":"COMPLETED","amount":1,"currency":"USD"}}]}"#,
            #"{"order_id":"R1","status":"CHARGED","amount":1,"currency":"USD","id":"x"}"#,
            #"{"status":"success","data":{"id":"T1","reference":"R1","amount":1,"currency":"USD","status":"success"}}"#,
            "00", "Incorrect amount",
        ].map { Array($0.utf8) }
        var rng = SplitMix64(seed: 91)
        for inquiry in inquiries {
            let request = try inquiry.request(for: order, context: InquiryFixture.context(token: token))
            for round in 0..<300 {
                var body = seeds[Int(rng.next() % UInt64(seeds.count))]
                switch round % 3 {
                case 0: body = rng.mutatingOneByte(body).mutated
                case 1: body = Array(body.prefix(Int(rng.next() % UInt64(body.count))))
                default: body = (0..<Int(rng.next() % 40)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                }
                let status = [200, 200, 400, 404, 500][Int(rng.next() % 5)]
                let reading = inquiry.read(InquiryAnswer(status: status, body: body), to: request, order: order)
                for fact in reading.facts {
                    #expect(fact.orderRef == "R1")
                    #expect(throws: Never.self) { try NotificationLimits.check(fact) }
                }
                if let message = reading.message { #expect(message.utf8.count < 600) }
            }
        }
    }
}

extension String {
    /// The text cut into lines of `count` characters (base64 as PEM bodies wrap it).
    fileprivate func split(every count: Int) -> String {
        var lines: [Substring] = []
        var rest = self[...]
        while !rest.isEmpty {
            lines.append(rest.prefix(count))
            rest = rest.dropFirst(count)
        }
        return lines.joined(separator: "\n")
    }
}
