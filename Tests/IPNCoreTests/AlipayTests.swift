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
import IPNTestSupport
import Testing

@testable import IPNCore

/// The shared Alipay (Antom) vector and what it is made of.
private enum Vector {
    static let path = "/ipn/alipay"
    static let clientID = "SANDBOX_5YTEST0000000001"
    static let requestTime = "2026-11-21T04:01:02Z"
    static let contentSHA256 = "0812856281d9fcf1eb19a180b61f53b9ece450d889927bc3bd8c9a64e017553d"
    static let paymentID = "2026112119401080010018800000001"

    static var body: [UInt8] { Fixture.bytes("alipay-notify-payment.json") }
    static var signatureHeader: String { Fixture.text("alipay-notify-payment.signature-header") }
    static var publicKeyText: String { Fixture.text("alipay-test-public-key.b64") }
    static var privateKeyPEM: String { Fixture.text("alipay-test-private-key.pem") }

    static func publicKey() throws -> RSAPublicKey { try RSAPublicKey(derOrPEM: publicKeyText) }
    static func privateKey() throws -> RSAPrivateKey { try RSAPrivateKey(pem: privateKeyPEM) }

    static func settings(
        clientID: String = Vector.clientID,
        publicKeys: [String] = [Vector.publicKeyText],
        notifyPath: String? = nil,
        simulationKeyPEM: String? = nil
    ) -> AccountSettings {
        var strings = ["client_id": clientID]
        strings["notify_path"] = notifyPath
        strings["simulate_private_key_file"] = simulationKeyPEM
        return AccountSettings(
            provider: "alipay",
            account: "default",
            keyPath: "providers.alipay[0]",
            lists: ["public_key": publicKeys],
            strings: strings
        )
    }

    static func account(notifyPath: String? = nil, withSimulationKey: Bool = false) throws -> Alipay {
        try Alipay(settings: settings(notifyPath: notifyPath, simulationKeyPEM: withSimulationKey ? privateKeyPEM : nil))
    }

    static func request(
        target: String = Vector.path,
        clientID: String = Vector.clientID,
        requestTime: String = Vector.requestTime,
        signature: String = Vector.signatureHeader,
        body: [UInt8] = Vector.body
    ) -> RawRequest {
        RawRequest(
            target: target,
            headers: [
                ("Content-Type", "application/json; charset=UTF-8"),
                ("client-id", clientID),
                ("request-time", requestTime),
                ("signature", signature),
            ],
            body: body
        )
    }

    /// `body` posted to the vector path by the vector client, signed with the test private key.
    static func signedRequest(_ body: String, target: String = Vector.path, clientID: String = Vector.clientID) throws -> RawRequest {
        let bytes = Array(body.utf8)
        let header = Alipay.signatureHeader(
            path: target,
            clientID: clientID,
            requestTime: requestTime,
            body: bytes,
            key: try privateKey()
        )
        return request(target: target, clientID: clientID, signature: header, body: bytes)
    }
}

/// The rejection reason of verifying `request`, or nil when it verifies.
private func rejection(_ account: Alipay, _ request: RawRequest) -> RejectReason? {
    do {
        _ = try account.verify(request)
        return nil
    } catch {
        return error.reason
    }
}

/// The base64 signature in the vector header, with the header's own escapes undone.
private func vectorSignatureBase64() -> String {
    let encoded = Vector.signatureHeader.components(separatedBy: "signature=").last ?? ""
    return encoded.replacingOccurrences(of: "%2F", with: "/").replacingOccurrences(of: "%2B", with: "+")
        .replacingOccurrences(of: "%3D", with: "=")
}

private func header(signatureBase64: String, escaping: (String) -> String) -> String {
    "algorithm=RSA256,keyVersion=1,signature=" + escaping(signatureBase64)
}

private func upperEscapes(_ base64: String) -> String {
    base64.replacingOccurrences(of: "+", with: "%2B").replacingOccurrences(of: "/", with: "%2F")
        .replacingOccurrences(of: "=", with: "%3D")
}

/// A base64 SubjectPublicKeyInfo in PEM armour, 64 characters a line.
private func pemArmoured(_ base64: String) -> String {
    var lines: [String] = ["-----BEGIN PUBLIC KEY-----"]
    var rest = Substring(base64)
    while !rest.isEmpty {
        lines.append(String(rest.prefix(64)))
        rest = rest.dropFirst(64)
    }
    lines.append("-----END PUBLIC KEY-----")
    return lines.joined(separator: "\n") + "\n"
}

/// Alipay provider tests; `swift test --filter AlipayTests` runs them all.
@Suite struct AlipayTests {
    @Suite("Alipay vector")
    struct VectorTests {
        @Test func vectorVerifiesAndMapsToPaid() throws {
            let notification = try Vector.account().verify(Vector.request())
            #expect(notification.kind == .payment)
            #expect(notification.orderRef == "PAY_20261121000001")
            #expect(notification.providerTxnID == Vector.paymentID)
            #expect(notification.providerStatus == "S")
            #expect(notification.effect == .transition(.paid))
            #expect(notification.amount == Money(minor: 4200, currency: "SGD"))
            #expect(notification.link == .registers(Vector.paymentID))
            #expect(notification.dedupKey == "PAYMENT_RESULT|\(Vector.paymentID)|S")
            #expect(notification.detail["notify_type"] == "PAYMENT_RESULT")
        }

        @Test func contentBytesHashToTheVectorDigest() {
            let parts = Alipay.signedContent(
                path: Vector.path,
                clientID: Vector.clientID,
                requestTime: Vector.requestTime,
                body: Vector.body
            )
            let expectedPrefix = Array("POST /ipn/alipay\nSANDBOX_5YTEST0000000001.2026-11-21T04:01:02Z.".utf8)
            #expect(Array(parts.joined()) == expectedPrefix + Vector.body)
            #expect(Hex.encode(Crypto.digest(.sha256, parts: parts)) == Vector.contentSHA256)
        }

        @Test func signerReproducesTheVectorHeader() throws {
            // PKCS#1 v1.5 signatures are deterministic: the signer must give the vector's exact header.
            let header = Alipay.signatureHeader(
                path: Vector.path,
                clientID: Vector.clientID,
                requestTime: Vector.requestTime,
                body: Vector.body,
                key: try Vector.privateKey()
            )
            #expect(header == Vector.signatureHeader)
        }

        @Test func prettyPrintedBodyFails() throws {
            let object = try JSONSerialization.jsonObject(with: Data(Vector.body))
            let pretty = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted])
            #expect([UInt8](pretty) != Vector.body)
            #expect(rejection(try Vector.account(), Vector.request(body: [UInt8](pretty))) == .badSignature)
        }

        @Test func trailingNewlineOnRequestTimeFails() throws {
            #expect(rejection(try Vector.account(), Vector.request(requestTime: Vector.requestTime + "\n")) == .badSignature)
        }

        @Test(arguments: ["/ipn/alipay/default", "/ipn/alipay?x=1", "/ipn/Alipay", "/ipn/alipay/"])
        func anotherPathFails(target: String) throws {
            #expect(rejection(try Vector.account(), Vector.request(target: target)) == .badSignature)
        }

        @Test func anotherClientIDHeaderFails() throws {
            #expect(rejection(try Vector.account(), Vector.request(clientID: "SANDBOX_5YTEST0000000002")) == .badSignature)
        }

        @Test func authenticNotificationForAnotherClientIsAMerchantMismatch() throws {
            let other = try Alipay(settings: Vector.settings(clientID: "SANDBOX_OTHER_ACCOUNT"))
            #expect(rejection(other, Vector.request()) == .merchantMismatch)
            let signedForOther = try Vector.signedRequest(String(decoding: Vector.body, as: UTF8.self), clientID: "SANDBOX_OTHER")
            #expect(rejection(try Vector.account(), signedForOther) == .merchantMismatch)
        }

        @Test func changedKeyFails() throws {
            var der = try #require(Base64.decode(Vector.publicKeyText))
            der[100] ^= 0x5A  // inside the modulus: still a well-formed key, a different one
            let changed = try RSAPublicKey(derOrPEM: Base64.encode(der))
            let account = Alipay(clientID: Vector.clientID, publicKeys: [changed])
            #expect(rejection(account, Vector.request()) == .badSignature)
        }

        @Test func oneByteChangeInBodyFails() throws {
            var rng = SplitMix64(seed: 0xA11_BA1)
            let account = try Vector.account()
            for _ in 0..<8 {
                let (mutated, index) = rng.mutatingOneByte(Vector.body)
                #expect(rejection(account, Vector.request(body: mutated)) == .badSignature, "byte \(index)")
            }
        }

        @Test func oneByteChangeInSignatureFails() throws {
            let signature = try #require(Base64.decode(vectorSignatureBase64()))
            var rng = SplitMix64(seed: 0x5167)
            let account = try Vector.account()
            for _ in 0..<8 {
                let (mutated, index) = rng.mutatingOneByte(signature)
                let header = header(signatureBase64: Base64.encode(mutated), escaping: upperEscapes)
                #expect(rejection(account, Vector.request(signature: header)) == .badSignature, "byte \(index)")
            }
        }

        @Test func pemArmouredPublicKeyVerifies() throws {
            let pem = pemArmoured(Vector.publicKeyText)
            #expect(pem.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
            let account = try Alipay(settings: Vector.settings(publicKeys: [pem]))
            #expect(rejection(account, Vector.request()) == nil)
        }

        @Test func anyListedPublicKeyVerifies() throws {
            var der = try #require(Base64.decode(Vector.publicKeyText))
            der[120] ^= 0x01
            let account = try Alipay(settings: Vector.settings(publicKeys: [Base64.encode(der), Vector.publicKeyText]))
            let notification = try account.verify(Vector.request())
            #expect(notification.detail["public_key"] == "2 of 2")
            let onlyWrong = try Alipay(settings: Vector.settings(publicKeys: [Base64.encode(der)]))
            #expect(rejection(onlyWrong, Vector.request()) == .badSignature)
        }

        @Test func notifyPathReplacesTheRequestTarget() throws {
            let behindProxy = Vector.request(target: "/payments/hooks/antom")
            #expect(rejection(try Vector.account(), behindProxy) == .badSignature)
            #expect(rejection(try Vector.account(notifyPath: "/ipn/alipay"), behindProxy) == nil)
            #expect(rejection(try Vector.account(notifyPath: "/ipn/alipay/x"), Vector.request()) == .badSignature)
        }
    }

    @Suite("Alipay signature header")
    struct SignatureHeaderTests {
        @Test func lowercaseAndUppercaseEscapesBothParse() throws {
            let base64 = vectorSignatureBase64()
            // Lowercasing the whole value would change the base64 itself; lowercase only the escapes.
            let lowerEscapesOnly = header(signatureBase64: base64) {
                $0.replacingOccurrences(of: "+", with: "%2b").replacingOccurrences(of: "/", with: "%2f")
                    .replacingOccurrences(of: "=", with: "%3d")
            }
            #expect(lowerEscapesOnly.contains("%2f") && !lowerEscapesOnly.contains("%2F"))
            let account = try Vector.account()
            #expect(rejection(account, Vector.request(signature: lowerEscapesOnly)) == nil)
            #expect(rejection(account, Vector.request(signature: header(signatureBase64: base64, escaping: upperEscapes))) == nil)
        }

        @Test func literalPlusStaysPlus() throws {
            let base64 = vectorSignatureBase64()
            #expect(base64.contains("+"))
            let plusUnescaped = header(signatureBase64: base64) {
                $0.replacingOccurrences(of: "/", with: "%2F").replacingOccurrences(of: "=", with: "%3D")
            }
            #expect(plusUnescaped.contains("+"))
            #expect(rejection(try Vector.account(), Vector.request(signature: plusUnescaped)) == nil)
            #expect(Alipay.SignatureHeader.percentDecode(ArraySlice("a+b%2B%2bc%3d".utf8)) == "a+b++c=")
        }

        @Test func spacesAfterCommasParse() throws {
            let spaced = Vector.signatureHeader.replacingOccurrences(of: ",", with: ", ")
            #expect(spaced != Vector.signatureHeader)
            #expect(rejection(try Vector.account(), Vector.request(signature: spaced)) == nil)
            let twoSpaces = Vector.signatureHeader.replacingOccurrences(of: ",", with: ",  ")
            #expect(rejection(try Vector.account(), Vector.request(signature: twoSpaces)) == nil)
        }

        @Test func pairOrderDoesNotMatter() throws {
            let encoded = Vector.signatureHeader.components(separatedBy: "signature=").last ?? ""
            let reordered = "signature=\(encoded),keyVersion=1,algorithm=RSA256"
            let notification = try Vector.account().verify(Vector.request(signature: reordered))
            #expect(notification.detail["key_version"] == "1")
        }

        @Test(arguments: [
            "",
            "algorithm=RSA256,keyVersion=1",
            "algorithm=RSA256,keyVersion=1,signature=",
            "algorithm=RSA256,keyVersion=1,signature=abc%G1",
            "algorithm=RSA256,keyVersion=1,signature=abc%2",
            "algorithm=RSA256,keyVersion=1,signature=not*base64",
            "algorithm=RSA256,keyVersion=1,signature=QUJD%C3%A9",
            "algorithm=RSA512,keyVersion=1,signature=QUJD",
            "algorithm=RSA256,keyVersion=1,signature=QUJD,signature=QUJD",
            "algorithm=RSA256,keyVersion,signature=QUJD",
            "algorithm=RSA256,,signature=QUJD",
            "=RSA256,signature=QUJD",
        ])
        func unparseableHeadersAreMalformed(value: String) throws {
            #expect(rejection(try Vector.account(), Vector.request(signature: value)) == .malformedHeader)
        }

        @Test(arguments: ["client-id", "request-time", "signature"])
        func missingHeaderIsRejected(name: String) throws {
            var request = Vector.request()
            request.headers.removeAll { $0.name == name }
            #expect(rejection(try Vector.account(), request) == .missingHeader)
        }

        @Test(arguments: ["client-id", "request-time", "signature"])
        func repeatedHeaderIsRejected(name: String) throws {
            var request = Vector.request()
            let value = try #require(request.headers.first { $0.name == name }?.value)
            request.headers.append((name.uppercased(), value))
            #expect(rejection(try Vector.account(), request) == .repeatedHeader)
        }

        @Test func headerNamesAreCaseInsensitive() throws {
            var request = Vector.request()
            request.headers = request.headers.map { ($0.name.uppercased(), $0.value) }
            #expect(rejection(try Vector.account(), request) == nil)
        }
    }

    @Suite("Alipay mapping")
    struct MappingTests {
        static func paymentBody(_ notifyType: String, status: String, value: String = #""4200""#) -> String {
            #"{"notifyType":"\#(notifyType)","result":{"resultCode":"X","resultStatus":"\#(status)","resultMessage":"m"},"#
                + #""paymentRequestId":"ORDER-7","paymentId":"P-1","paymentAmount":{"currency":"SGD","value":\#(value)},"#
                + #""paymentCreateTime":"2026-11-21T12:01:00+08:00","paymentTime":"2026-11-21T12:01:01+08:00","#
                + #""paymentQuote":{"quotePrice":1.3456,"guaranteed":true}}"#
        }

        static func captureBody(status: String) -> String {
            #"{"notifyType":"CAPTURE_RESULT","result":{"resultCode":"X","resultStatus":"\#(status)","resultMessage":"m"},"#
                + #""captureRequestId":"CR-1","paymentId":"P-1","captureId":"C-9","#
                + #""captureAmount":{"currency":"JPY","value":"1500"},"captureTime":"2026-11-21T12:05:00+08:00"}"#
        }

        static func refundBody(status: String) -> String {
            #"{"notifyType":"REFUND_RESULT","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"m"},"#
                + #""refundRequestId":"RR-1","paymentId":"P-1","refundId":"R-3","#
                + #""refundAmount":{"currency":"SGD","value":"1200"},"refundTime":"2026-11-22T09:00:00+08:00","#
                + #""refundStatus":"\#(status)"}"#
        }

        static func verify(_ body: String) throws -> VerifiedNotification {
            try Vector.account().verify(try Vector.signedRequest(body))
        }

        static func reason(_ body: String) throws -> RejectReason? {
            rejection(try Vector.account(), try Vector.signedRequest(body))
        }

        @Test(arguments: [
            ("PAYMENT_RESULT", "S", NotificationEffect.transition(.paid)),
            ("PAYMENT_RESULT", "F", .transition(.failed)),
            ("PAYMENT_RESULT", "U", .unknownStatus),
            ("PAYMENT_PENDING", "S", .transition(.pending)),
            ("PAYMENT_PENDING", "U", .transition(.pending)),
        ])
        func payment(notifyType: String, status: String, effect: NotificationEffect) throws {
            let notification = try Self.verify(Self.paymentBody(notifyType, status: status))
            #expect(notification.effect == effect)
            #expect(notification.kind == .payment)
            #expect(notification.orderRef == "ORDER-7")
            #expect(notification.providerTxnID == "P-1")
            #expect(notification.providerStatus == status)
            #expect(notification.link == .registers("P-1"))
            #expect(notification.amount == Money(minor: 4200, currency: "SGD"))
            #expect(notification.dedupKey == "\(notifyType)|P-1|\(status)")
        }

        @Test(arguments: [
            ("S", NotificationEffect.transition(.paid)),
            ("F", .record),
            ("U", .unknownStatus),
        ])
        func capture(status: String, effect: NotificationEffect) throws {
            let notification = try Self.verify(Self.captureBody(status: status))
            #expect(notification.effect == effect)
            #expect(notification.kind == .capture)
            #expect(notification.orderRef == nil)
            #expect(notification.providerTxnID == "C-9")
            #expect(notification.link == .requires("P-1"))
            #expect(notification.amount == Money(minor: 1500, currency: "JPY"))
            #expect(notification.dedupKey == "CAPTURE_RESULT|C-9|\(status)")
        }

        @Test(arguments: ["SUCCESS", "S"])
        func successfulRefund(status: String) throws {
            let notification = try Self.verify(Self.refundBody(status: status))
            let amount = Money(minor: 1200, currency: "SGD")
            #expect(notification.effect == .refund(RefundInfo(refundID: "R-3", amount: amount)))
            #expect(notification.kind == .refund)
            #expect(notification.orderRef == nil)
            #expect(notification.providerTxnID == "R-3")
            #expect(notification.providerStatus == status)
            #expect(notification.link == .requires("P-1"))
            #expect(notification.amount == amount)
            #expect(notification.dedupKey == "REFUND_RESULT|R-3|\(status)")
        }

        @Test(arguments: [("FAIL", NotificationEffect.record), ("F", .record), ("PROCESSING", .unknownStatus)])
        func otherRefundStatuses(status: String, effect: NotificationEffect) throws {
            let notification = try Self.verify(Self.refundBody(status: status))
            #expect(notification.effect == effect)
            #expect(notification.dedupKey == "REFUND_RESULT|R-3|\(status)")
            #expect(notification.link == .requires("P-1"))
        }

        @Test func unknownNotifyTypeIsKeptWithWhatItCarries() throws {
            let withOrder = try Self.verify(Self.paymentBody("NOTIFY_DISPUTE", status: "S"))
            #expect(withOrder.effect == .unknownStatus)
            #expect(withOrder.kind == .event)
            #expect(withOrder.orderRef == "ORDER-7")
            #expect(withOrder.link == .registers("P-1"))
            #expect(withOrder.providerStatus == "NOTIFY_DISPUTE")
            #expect(withOrder.dedupKey == "NOTIFY_DISPUTE|P-1|S")

            let onlyPayment = try Self.verify(#"{"notifyType":"DISPUTE","paymentId":"P-2"}"#)
            #expect(onlyPayment.effect == .unknownStatus)
            #expect(onlyPayment.orderRef == nil)
            #expect(onlyPayment.link == .requires("P-2"))
            #expect(onlyPayment.dedupKey == "DISPUTE|P-2|")
        }

        @Test func amountValueMayBeANumber() throws {
            let notification = try Self.verify(Self.paymentBody("PAYMENT_RESULT", status: "S", value: "4200"))
            #expect(notification.amount == Money(minor: 4200, currency: "SGD"))
        }

        @Test(arguments: [#""42.00""#, #""-5""#, #""""#, #""04200""#, "true", #""1e3""#, #""99999999999999999999""#])
        func badAmountsAreRejected(value: String) throws {
            #expect(try Self.reason(Self.paymentBody("PAYMENT_RESULT", status: "S", value: value)) == .badAmount)
        }

        @Test func unknownCurrencyIsRejected() throws {
            let body = Self.paymentBody("PAYMENT_RESULT", status: "S").replacingOccurrences(of: "SGD", with: "SGX")
            #expect(try Self.reason(body) == .unknownCurrency)
        }

        @Test(arguments: [
            #"{"result":{"resultStatus":"S"},"paymentRequestId":"O","paymentId":"P"}"#,
            #"{"notifyType":"PAYMENT_RESULT","result":{"resultStatus":"S"},"paymentId":"P"}"#,
            #"{"notifyType":"PAYMENT_RESULT","result":{"resultStatus":"S"},"paymentRequestId":"O"}"#,
            #"{"notifyType":"PAYMENT_RESULT","result":{},"paymentRequestId":"O","paymentId":"P"}"#,
            #"{"notifyType":"PAYMENT_RESULT","paymentRequestId":"O","paymentId":"P"}"#,
            #"{"notifyType":"CAPTURE_RESULT","result":{"resultStatus":"S"},"paymentId":"P"}"#,
            #"{"notifyType":"REFUND_RESULT","paymentId":"P","refundId":"R"}"#,
            #"{"notifyType":"REFUND_RESULT","refundStatus":"SUCCESS","refundId":"R"}"#,
            #"{"notifyType":"PAYMENT_RESULT","result":{"resultStatus":"S"},"paymentRequestId":"O","paymentId":"P","paymentAmount":{"value":"1"}}"#,
        ])
        func missingFieldsAreRejected(body: String) throws {
            #expect(try Self.reason(body) == .missingField)
        }

        @Test func malformedJSONIsRejectedAfterTheSignature() throws {
            #expect(try Self.reason(#"{"notifyType":"PAYMENT_RESULT","#) == .malformedBody)
            #expect(try Self.reason(#"{"a":1,"a":2}"#) == .malformedBody)
            #expect(try Self.reason("[]") == .malformedBody)
        }

        @Test func nonJSONContentTypeIsRejected() throws {
            var request = try Vector.signedRequest(Self.paymentBody("PAYMENT_RESULT", status: "S"))
            request.headers[0] = ("Content-Type", "application/x-www-form-urlencoded")
            #expect(rejection(try Vector.account(), request) == .unsupportedContentType)
        }
    }

    @Suite("Alipay answers and settings")
    struct AnswerTests {
        @Test func acknowledgementIsExact() {
            let ack = Alipay.acknowledgement
            #expect(ack.status == 200)
            #expect(ack.contentType == "application/json")
            #expect(String(decoding: ack.body, as: UTF8.self) == #"{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#)
        }

        @Test(arguments: [RejectReason.badSignature, .missingHeader, .repeatedHeader, .malformedHeader, .merchantMismatch])
        func authenticationFailuresAnswerInvalidSignature(reason: RejectReason) {
            let answer = Alipay.answer(for: Rejection(reason, "x"))
            #expect(answer.status == 400)
            #expect(answer.contentType == "application/json")
            #expect(
                String(decoding: answer.body, as: UTF8.self)
                    == #"{"result":{"resultCode":"INVALID_SIGNATURE","resultStatus":"F","resultMessage":"invalid signature"}}"#
            )
        }

        @Test(arguments: [RejectReason.malformedBody, .missingField, .badAmount, .unknownCurrency, .unsupportedContentType])
        func otherRejectionsAnswerParamIllegal(reason: RejectReason) throws {
            let answer = Alipay.answer(for: Rejection(reason, "x"))
            #expect(answer.status == 400)
            let text = String(decoding: answer.body, as: UTF8.self)
            #expect(text == #"{"result":{"resultCode":"PARAM_ILLEGAL","resultStatus":"F","resultMessage":"malformed request"}}"#)
            #expect(try JSONParser.parseObject(answer.body).object("result")?.string("resultStatus") == "F")
        }

        @Test func badPublicKeyIsAConfigError() {
            #expect(throws: AccountConfigError.self) { try Alipay(settings: Vector.settings(publicKeys: ["not a key"])) }
            do {
                _ = try Alipay(settings: Vector.settings(publicKeys: [Vector.publicKeyText, "QUJD"]))
                Issue.record("a bad second key was accepted")
            } catch {
                #expect(error.key == "providers.alipay[0].public_key")
                #expect(error.message.hasPrefix("entry 2 "))
            }
        }

        @Test func missingRequiredSettingsAreConfigErrors() {
            #expect(throws: AccountConfigError(key: "providers.alipay[0].public_key", message: "is required")) {
                try Alipay(settings: Vector.settings(publicKeys: []))
            }
            #expect(throws: AccountConfigError(key: "providers.alipay[0].client_id", message: "is required")) {
                try Alipay(settings: Vector.settings(clientID: ""))
            }
        }

        @Test func notifyPathMustStartWithSlash() {
            #expect(throws: AccountConfigError.self) { try Alipay(settings: Vector.settings(notifyPath: "ipn/alipay")) }
            #expect(throws: Never.self) { try Alipay(settings: Vector.settings(notifyPath: "/ipn/alipay?x=1")) }
        }

        @Test func simulationKeyMustParseAndPairWithAPublicKey() throws {
            #expect(throws: AccountConfigError.self) { try Alipay(settings: Vector.settings(simulationKeyPEM: "garbage")) }
            var der = try #require(Base64.decode(Vector.publicKeyText))
            der[100] ^= 0x5A
            #expect(throws: AccountConfigError.self) {
                try Alipay(settings: Vector.settings(publicKeys: [Base64.encode(der)], simulationKeyPEM: Vector.privateKeyPEM))
            }
        }

        @Test func summaryShowsNoPrivateKey() throws {
            let summary = try Vector.account(withSimulationKey: true).summary
            let text = summary.map { "\($0.key)=\($0.value)" }.joined(separator: "\n")
            #expect(text.contains("client_id=\(Vector.clientID)"))
            #expect(text.contains("RSA 2048"))
            #expect(!text.contains("PRIVATE"))
        }

        @Test func registered() {
            #expect(ProviderRegistry.provider(named: "alipay").map(ObjectIdentifier.init) == ObjectIdentifier(Alipay.self))
        }
    }

    @Suite("Alipay properties and round trips")
    struct PropertyTests {
        @Test func signedRandomBodiesVerifyAndAnyOneByteChangeFails() throws {
            var rng = SplitMix64(seed: 20_261_121)
            let key = try Vector.privateKey()
            for iteration in 0..<50 {
                let clientID = "CLIENT_" + rng.printable(length: 1 + Int(rng.next() % 12)).replacingOccurrences(of: ",", with: "_")
                let account = Alipay(clientID: clientID, publicKeys: [try Vector.publicKey()])
                let path = "/ipn/alipay" + (rng.next() % 2 == 0 ? "" : "/acct?x=\(rng.next() % 1000)")
                let time = "2026-11-\(10 + rng.next() % 18)T0\(rng.next() % 10):00:00Z"
                let status = ["S", "F"][Int(rng.next() % 2)]
                let body = Array((
                    #"{"notifyType":"PAYMENT_RESULT","result":{"resultStatus":"\#(status)","resultMessage":"\#(rng.printable(length: Int(rng.next() % 40)))"},"#
                    + #""paymentRequestId":"\#(rng.printable(length: 1 + Int(rng.next() % 30)))","paymentId":"P\#(rng.next())","#
                    + #""paymentAmount":{"currency":"USD","value":"\#(rng.next() % 10_000_000)"}}"#
                ).utf8)
                let signature = Alipay.signatureHeader(path: path, clientID: clientID, requestTime: time, body: body, key: key)
                func request(_ body: [UInt8], _ signature: String) -> RawRequest {
                    RawRequest(target: path, headers: [("client-id", clientID), ("request-time", time), ("signature", signature)], body: body)
                }
                let notification = try account.verify(request(body, signature))
                #expect(notification.effect == (status == "S" ? .transition(.paid) : .transition(.failed)), "iteration \(iteration)")

                let (mutatedBody, bodyIndex) = rng.mutatingOneByte(body)
                #expect(rejection(account, request(mutatedBody, signature)) == .badSignature, "iteration \(iteration) body byte \(bodyIndex)")

                let encoded = try #require(signature.components(separatedBy: "signature=").last?.removingPercentEncoding)
                let rawSignature = try #require(Base64.decode(encoded))
                let (mutatedSignature, signatureIndex) = rng.mutatingOneByte(rawSignature)
                let mutatedHeader = header(signatureBase64: Base64.encode(mutatedSignature), escaping: upperEscapes)
                #expect(
                    rejection(account, request(body, mutatedHeader)) == .badSignature,
                    "iteration \(iteration) signature byte \(signatureIndex)"
                )
            }
        }

        @Test(arguments: [("S", OrderState.paid), ("F", .failed), ("PENDING", .pending)])
        func simulatedRequestsVerify(status: String, state: OrderState) throws {
            for notifyPath in [nil, "/behind/proxy"] as [String?] {
                let account = try Vector.account(notifyPath: notifyPath, withSimulationKey: true)
                let spec = SimulationSpec(
                    orderRef: "SIM \"1\"",
                    status: status,
                    amount: Money(minor: 12_345, currency: "SGD"),
                    path: "/ipn/alipay/default",
                    uniqueID: "sim-42",
                    time: "2026-11-21T04:05:06Z"
                )
                let request = try account.simulatedRequest(spec)
                let notification = try account.verify(request)
                #expect(notification.effect == .transition(state))
                #expect(notification.orderRef == "SIM \"1\"")
                #expect(notification.amount == spec.amount)
                #expect(notification.link == .registers("sim-42"))
                #expect(request.target == spec.path)
                // Another account with the same key but another client id must not accept it.
                let other = try Alipay(settings: Vector.settings(clientID: "OTHER", notifyPath: notifyPath))
                #expect(rejection(other, request) == .merchantMismatch)
            }
        }

        @Test func simulationWithoutPrivateKeyFails() throws {
            let spec = SimulationSpec(
                orderRef: "O", status: "S", amount: Money(minor: 1, currency: "SGD"), path: "/ipn/alipay", uniqueID: "u", time: "t"
            )
            #expect(throws: SimulationError.self) { try Vector.account().simulatedRequest(spec) }
        }
    }

    @Suite("Alipay against OpenSSL")
    struct OpenSSLTests {
        static func fixturePath(_ name: String) throws -> String {
            try #require(Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures")).path
        }

        /// Runs the openssl command line tool; its standard output, or nil when it fails.
        static func openssl(_ arguments: [String]) throws -> [UInt8]? {
            let process = ChildProcess()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["openssl"] + arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return process.terminationStatus == 0 ? [UInt8](data) : nil
        }

        static func temporaryFile(_ bytes: [UInt8]) throws -> URL {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-alipay-\(UUID().uuidString)")
            try Data(bytes).write(to: url)
            return url
        }

        static let body = Array(
            #"{"notifyType":"REFUND_RESULT","paymentId":"P-77","refundId":"R-77","refundStatus":"SUCCESS","refundAmount":{"currency":"EUR","value":"250"}}"#.utf8
        )

        @Test func signatureMadeByOpenSSLVerifies() throws {
            let path = "/ipn/alipay/eu?tenant=7"
            let content = Array("POST \(path)\n\(Vector.clientID).\(Vector.requestTime).".utf8) + Self.body
            let contentFile = try Self.temporaryFile(content)
            defer { try? FileManager.default.removeItem(at: contentFile) }
            let signature = try #require(
                try Self.openssl(["dgst", "-sha256", "-sign", Self.fixturePath("alipay-test-private-key.pem"), contentFile.path])
            )
            #expect(signature.count == 256)
            let encoded = Base64.encode(signature).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let request = Vector.request(target: path, signature: "algorithm=RSA256, keyVersion=1, signature=\(encoded)", body: Self.body)
            let notification = try Vector.account().verify(request)
            #expect(notification.effect == .refund(RefundInfo(refundID: "R-77", amount: Money(minor: 250, currency: "EUR"))))
            #expect(notification.link == .requires("P-77"))
            // The signer must produce the very bytes OpenSSL produced (PKCS#1 v1.5 is deterministic).
            let ours = Alipay.signatureHeader(
                path: path, clientID: Vector.clientID, requestTime: Vector.requestTime, body: Self.body, key: try Vector.privateKey()
            )
            #expect(ours.hasSuffix("signature=" + encoded))
        }

        @Test func signatureMadeBySignerVerifiesWithOpenSSL() throws {
            let header = Alipay.signatureHeader(
                path: Vector.path, clientID: Vector.clientID, requestTime: Vector.requestTime, body: Self.body, key: try Vector.privateKey()
            )
            let encoded = try #require(header.components(separatedBy: "signature=").last?.removingPercentEncoding)
            let signatureFile = try Self.temporaryFile(try #require(Base64.decode(encoded)))
            let contentFile = try Self.temporaryFile(Array("POST /ipn/alipay\n\(Vector.clientID).\(Vector.requestTime).".utf8) + Self.body)
            let publicKeyFile = try Self.temporaryFile(Array(pemArmoured(Vector.publicKeyText).utf8))
            defer {
                for file in [signatureFile, contentFile, publicKeyFile] { try? FileManager.default.removeItem(at: file) }
            }
            let verified = try Self.openssl([
                "dgst", "-sha256", "-verify", publicKeyFile.path, "-signature", signatureFile.path, contentFile.path,
            ])
            #expect(verified != nil)
            let tamperedFile = try Self.temporaryFile(Array("POST /ipn/alipay\n\(Vector.clientID).\(Vector.requestTime).".utf8) + Self.body + [0x20])
            defer { try? FileManager.default.removeItem(at: tamperedFile) }
            #expect(try Self.openssl(["dgst", "-sha256", "-verify", publicKeyFile.path, "-signature", signatureFile.path, tamperedFile.path]) == nil)
        }
    }
}
