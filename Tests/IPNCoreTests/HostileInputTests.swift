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
@testable import IPNCore
import Testing

/// Limits every provider's verification keeps, whatever the input (issue 7).
@Suite("Hostile input: bounded details, identifier limits, one Content-Type")
struct HostileInputTests {
    /// One Character, 40,001 scalars, 80,001 UTF-8 bytes: Character-based `prefix(64)` keeps it all.
    static let zalgo = "a" + String(repeating: "\u{0301}", count: 40_000)

    @Test("truncated(toUTF8Bytes:) bounds bytes, cuts on a scalar boundary and marks the cut")
    func truncation() {
        #expect("short".truncated(toUTF8Bytes: 8) == "short")
        #expect("exactly8".truncated(toUTF8Bytes: 8) == "exactly8")
        #expect("abcdefghij".truncated(toUTF8Bytes: 8) == "abcde…")
        let cut = "ééééé".truncated(toUTF8Bytes: 8)  // two bytes each; the marker takes three
        #expect(cut == "éé…")
        #expect(cut.utf8.count <= 8)
        #expect(Self.zalgo.count == 1)
        #expect(Self.zalgo.truncated(toUTF8Bytes: 100).utf8.count <= 100)
    }

    @Test("a duplicate key of one huge Character gives a short rejection detail")
    func zalgoDuplicateKey() throws {
        let body = Array(#"{"\#(Self.zalgo)":1,"\#(Self.zalgo)":2}"#.utf8)
        let error = try #require(throws: JSONError.self) { try JSONParser.parse(body) }
        #expect(error.message.utf8.count > Rejection.maxDetailBytes, "the parser's own message is unbounded")
        let rejection = Rejection(.malformedBody, error.description)
        #expect(rejection.detail.utf8.count <= Rejection.maxDetailBytes)
        #expect(rejection.detail.hasPrefix("duplicate key"))

        let provider = Unlimint(secrets: ["s"])
        let request = RawRequest(target: "/ipn/unlimint", headers: [("Signature", Unlimint.signature(body: body, secret: "s"))], body: body)
        let verified = try #require(throws: Rejection.self) { try provider.verifyRequest(request) }
        #expect(verified.reason == .malformedBody)
        #expect(verified.detail.utf8.count <= Rejection.maxDetailBytes)
    }

    @Test("an authentic notification with an order reference, id or status over the limits is field_too_long",
          arguments: ["order", "id", "status"])
    func identifierLimits(field: String) throws {
        let long = String(repeating: "A", count: NotificationLimits.maxIdentifierBytes + 1)
        let fine = String(repeating: "A", count: NotificationLimits.maxIdentifierBytes)
        func body(_ value: String) -> [UInt8] {
            let order = field == "order" ? value : "O-1"
            let id = field == "id" ? value : "P-1"
            let status = field == "status" ? value : "COMPLETED"
            return Array(#"{"merchant_order":{"id":"\#(order)"},"payment_data":{"id":"\#(id)","status":"\#(status)","amount":6.03,"currency":"USD"}}"#.utf8)
        }
        let provider = Unlimint(secrets: ["s"])
        func request(_ body: [UInt8]) -> RawRequest {
            RawRequest(target: "/ipn/unlimint", headers: [("Signature", Unlimint.signature(body: body, secret: "s"))], body: body)
        }
        let rejection = try #require(throws: Rejection.self) { try provider.verifyRequest(request(body(long))) }
        #expect(rejection.reason == .fieldTooLong)
        #expect(rejection.reason.httpStatus == 400)
        // `verify` alone would have accepted it: the limit is ipnd's, not the provider's.
        #expect((try? provider.verify(request(body(long)))) != nil)
        #expect((try? provider.verifyRequest(request(body(fine)))) != nil)
    }

    @Test("an identifier with a NUL, a line break, DEL or a C1 control is malformed_body, however it was encoded",
          arguments: [#"A\u0000B"#, #"A\nB"#, #"A\u007fB"#, #"A\u001bB"#, #"A\u009bB"#, "A\u{85}B", #"A\u2028B"#])
    func controlCharacters(order: String) throws {
        let body = Array(#"{"merchant_order":{"id":"\#(order)"},"payment_data":{"id":"P","status":"COMPLETED","amount":1,"currency":"USD"}}"#.utf8)
        let request = RawRequest(target: "/ipn/unlimint", headers: [("Signature", Unlimint.signature(body: body, secret: "s"))], body: body)
        let rejection = try #require(throws: Rejection.self) { try Unlimint(secrets: ["s"]).verifyRequest(request) }
        #expect(rejection.reason == .malformedBody)
        #expect(rejection.detail == "order reference contains a control character")
        let form = Array("MerchantCode=M&RefNo=A%00B&Amount=1.00&Currency=MYR&Status=1&Signature=".utf8)
        let fields = IPay88.SignedFields(merchantCode: "M", paymentID: "", refNo: "A\u{0}B", amount: "1.00", currency: "MYR", status: "1")
        let signed = form + Array(IPay88.signature(fields, merchantKey: "k", algorithm: .sha256).utf8)
        let ipay = RawRequest(target: "/ipn/ipay88", body: signed)
        #expect(throws: Rejection(.malformedBody, "order reference contains a control character")) {
            try IPay88(merchantCode: "M", merchantKeys: ["k"]).verifyRequest(ipay)
        }
    }

    @Test("control characters are C0, DEL, C1, U+2028 and U+2029; their neighbours are fine")
    func controlCharacterBoundaries() {
        for bad in ["\u{0}", "\u{1F}", "\u{7F}", "\u{80}", "\u{85}", "\u{9F}", "\u{2028}", "\u{2029}", "ok\u{9F}", "é\u{2028}"] {
            #expect(NotificationLimits.identifierProblem("A\(bad)B") == .controlCharacter, "\(bad.unicodeScalars.map(\.value))")
        }
        for fine in [" ", "~", "\u{A0}", "é", "\u{FF}", "\u{100}", "€", "\u{2027}", "\u{202A}", "\u{2080}", "😀", "ORD-1/2 x"] {
            #expect(NotificationLimits.identifierProblem("A\(fine)B") == nil, "\(fine.unicodeScalars.map(\.value))")
        }
        #expect(NotificationLimits.identifierProblem(String(repeating: "é", count: 129)) == .tooLong(bytes: 258))
    }

    @Test("an event id with a NUL or a line break is malformed_body: it is the dedup key, and would be shown cut short",
          arguments: [#"evt_1\u0000X"#, #"evt_1\u0000"#, #"evt\n1"#])
    func controlCharacterInDedupKey(eventID: String) throws {
        let body = Array((#"{"id":"\#(eventID)","event_name":"ORDER_SUCCEEDED","content":{"order":{"order_id":"ORD-9","#
            + #""status":"CHARGED","amount":600,"currency":"INR"}}}"#).utf8)
        let request = RawRequest(target: "/ipn/juspay", headers: [("Authorization", "Basic " + Data("u:p".utf8).base64EncodedString())],
                                 body: body)
        let juspay = Juspay(usernames: ["u"], passwords: ["p"])
        #expect((try? juspay.verify(request)) != nil)  // the provider's own parse takes it
        #expect(throws: Rejection(.malformedBody, "dedup key contains a control character")) { try juspay.verifyRequest(request) }
    }

    @Test("Content-Type twice is repeated_header for every provider, before anything else is believed")
    func repeatedContentType() throws {
        let body = Array("a=1".utf8)
        let request = RawRequest(target: "/ipn/x", headers: [("Content-Type", "application/json"),
                                                             ("content-type", "application/x-www-form-urlencoded")], body: body)
        let providers: [any NotificationProvider] = [
            Unlimint(secrets: ["s"]), Citcon(apiSecrets: ["s"]), IPay88(merchantCode: "M", merchantKeys: ["k"]),
            Juspay(usernames: ["u"], passwords: ["p"]),
            Alipay(clientID: "C", publicKeys: [try RSAPublicKey(derOrPEM: Fixture.text("alipay-test-public-key.b64"))]),
        ]
        for provider in providers {
            let rejection = try #require(throws: Rejection.self) { try provider.verifyRequest(request) }
            #expect(rejection.reason == .repeatedHeader, "\(type(of: provider))")
        }
    }
}
