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

/// One top-level member of a Citcon body: JSON numbers are written bare.
private struct Member: Sendable {
    var key: String
    var value: String
    var isNumber = false

    init(_ key: String, _ value: String, number: Bool = false) {
        self.key = key
        self.value = value
        isNumber = number
    }
}

private enum BodyFormat: String, Sendable, CaseIterable {
    case json, form
}

private func encode(_ members: [Member], as format: BodyFormat) -> [UInt8] {
    switch format {
    case .json:
        let rendered = members.map { "\"\(JSONText.escape($0.key))\":" + ($0.isNumber ? $0.value : "\"\(JSONText.escape($0.value))\"") }
        return Array(("{" + rendered.joined(separator: ",") + "}").utf8)
    case .form:
        return FormBody.encode(members.map { ($0.key, $0.value) })
    }
}

private func request(_ body: [UInt8], _ format: BodyFormat) -> RawRequest {
    let type = format == .json ? "application/json" : "application/x-www-form-urlencoded"
    return RawRequest(target: "/ipn/citcon", headers: [("Content-Type", type)], body: body)
}

/// `members` plus a `sign` computed by the signer under test.
private func signed(_ members: [Member], _ generation: Citcon.Generation, secret: String) -> [Member] {
    // As signed: a JSON null is empty.
    let values = Dictionary(members.map { ($0.key, $0.isNumber && $0.value == "null" ? "" : $0.value) }, uniquingKeysWith: { first, _ in first })
    return members + [Member("sign", Citcon.signature(values, generation: generation, secret: secret))]
}

private func rejection(_ account: Citcon, _ request: RawRequest) -> Rejection? {
    do {
        _ = try account.verify(request)
        return nil
    } catch {
        return error
    }
}

/// `bytes` with the first occurrence of `old` replaced by `new`.
private func replacing(_ old: String, with new: String, in bytes: [UInt8]) -> [UInt8] {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let range = text.range(of: old) else { fatalError("\(old) not in body") }
    return Array(text.replacingCharacters(in: range, with: new).utf8)
}

@Suite("Citcon IPN")
struct CitconTests {
    // MARK: Vectors (providers.md section 1)

    static let upiString =
        "amount=100&amount_captured=&amount_refunded=&currency=USD&fields=id,transaction_type,reference,amount,currency,status,time_completed,time_created,payment_method,amount_captured,amount_refunded&id=84571d30e61711eba6a94911fce35a55&payment_method=paypal&reference=reference132&status=authorized&time_completed=2021-08-14T09:47:43.000Z&time_created=2021-07-16T09:23:44.000Z&transaction_type=charge&secret=braintree"
    static let upiDigest = "621233f017ad8139fe97d47b4653735e121b9f6e7dafe3638eba0fcd80801db5"

    static let chopToken = "1234567890abcdef1234567890abcdeq"
    static let chopString =
        "amount=100&currency=USD&fields=id,amount,currency,notify_status,reference,time,notify_id,partner_id&id=2000470534782760808453&notify_id=abc123&notify_status=success&partner_id=300000233&reference=20240101120000-123&time=2024-01-01 12:00:05&token=1234567890abcdef1234567890abcdeq"
    static let chopDigest = "ed997e48ea0c60d7cc07bc7b7d02c066"
    fileprivate static let chopMembers = [
        Member("id", "2000470534782760808453"),
        Member("amount", "100", number: true),
        Member("currency", "USD"),
        Member("notify_status", "success"),
        Member("reference", "20240101120000-123"),
        Member("time", "2024-01-01 12:00:05"),
        Member("notify_id", "abc123"),
        Member("partner_id", "300000233"),
        Member("fields", "id,amount,currency,notify_status,reference,time,notify_id,partner_id"),
    ]

    static var upiFixture: [UInt8] { Fixture.bytes("citcon-upi.json") }

    static func fixtureValues() throws -> [String: String] {
        let object = try JSONParser.parseObject(upiFixture)
        return Dictionary(uniqueKeysWithValues: object.members.map { ($0.key, $0.value.signingText) })
    }

    @Test func signedKeysAreUniqueByteSortedAndNeverSign() {
        #expect(Citcon.signedKeys(fields: "b,a,,b,sign,fields,A,é,z") == ["A", "a", "b", "fields", "z", "é"])
        #expect(Citcon.signedKeys(fields: "") == ["fields"])
    }

    @Test func upiVectorSigningStringAndDigest() throws {
        let values = try Self.fixtureValues()
        #expect(Citcon.signingString(values, generation: .upi, secret: "braintree") == Self.upiString)
        #expect(Citcon.signature(values, generation: .upi, secret: "braintree") == Self.upiDigest)
        #expect(Hex.encode(Crypto.digest(.sha256, Array(Self.upiString.utf8))) == Self.upiDigest)
        #expect(values["sign"] == Self.upiDigest)
    }

    @Test func upiVectorVerifies() throws {
        let notification = try Citcon(apiSecrets: ["braintree"]).verify(request(Self.upiFixture, .json))
        #expect(notification.kind == .payment)
        #expect(notification.orderRef == "reference132")
        #expect(notification.providerTxnID == "84571d30e61711eba6a94911fce35a55")
        #expect(notification.dedupKey == "84571d30e61711eba6a94911fce35a55|charge|authorized")
        #expect(notification.providerStatus == "authorized")
        #expect(notification.effect == .transition(.authorized))
        #expect(notification.amount == Money(minor: 100, currency: "USD"))
        #expect(notification.detail == ["generation": "upi"])
    }

    @Test func upiVectorVerifiesWithRotatedSecretsAndContentTypeVariants() throws {
        let account = Citcon(apiSecrets: ["old-secret", "braintree"])
        for headers in [[("Content-Type", "application/json; charset=utf-8")], [("content-type", "text/json")], []] {
            let notification = try account.verify(RawRequest(target: "/ipn/citcon", headers: headers, body: Self.upiFixture))
            #expect(notification.detail["secret"] == "2 of 2")
            #expect(notification.effect == .transition(.authorized))
        }
    }

    @Test func upiVectorAsFormBodyVerifies() throws {
        let object = try JSONParser.parseObject(Self.upiFixture)
        let body = FormBody.encode(object.members.map { ($0.key, $0.value.signingText) })
        let notification = try Citcon(apiSecrets: ["braintree"]).verify(request(body, .form))
        #expect(notification.orderRef == "reference132")
        #expect(notification.amount == Money(minor: 100, currency: "USD"))
        // Without a Content-Type the form is recognised by its first byte.
        let bare = try Citcon(apiSecrets: ["braintree"]).verify(RawRequest(target: "/ipn/citcon", body: body))
        #expect(bare == notification)
    }

    @Test func upiVectorNegativeTwins() {
        let account = Citcon(apiSecrets: ["braintree"])
        let body = Self.upiFixture
        let twins: [(String, Citcon, [UInt8])] = [
            ("reference byte", account, replacing("reference132", with: "reference133", in: body)),
            ("amount", account, replacing("\"amount\":100", with: "\"amount\":101", in: body)),
            ("status", account, replacing("\"status\":\"authorized\"", with: "\"status\":\"authorizee\"", in: body)),
            ("fields list", account, replacing("amount_captured,amount_refunded\"", with: "amount_captured,amount_refundee\"", in: body)),
            ("empty value filled", account, replacing("\"amount_captured\":\"\"", with: "\"amount_captured\":\"0\"", in: body)),
            ("secret", Citcon(apiSecrets: ["braintreE"]), body),
            ("token-only account", Citcon(apiTokens: ["braintree"]), body),
            ("sign first byte", account, replacing(Self.upiDigest, with: "7" + Self.upiDigest.dropFirst(), in: body)),
            ("sign last byte", account, replacing(Self.upiDigest, with: Self.upiDigest.dropLast() + "4", in: body)),
            ("sign truncated", account, replacing(Self.upiDigest, with: String(Self.upiDigest.dropLast(2)), in: body)),
            ("sign removed", account, replacing(",\"sign\":\"\(Self.upiDigest)\"", with: "", in: body)),
        ]
        for (name, account, body) in twins {
            #expect(rejection(account, request(body, .json))?.reason == .badSignature, "\(name)")
        }
    }

    @Test func everySignHexDigitChangeIsRejectedAndCaseIsIgnored() throws {
        let account = Citcon(apiSecrets: ["braintree"])
        let digest = Array(Self.upiDigest.utf8)
        for index in digest.indices {
            var changed = digest
            changed[index] = digest[index] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            let body = replacing(Self.upiDigest, with: String(decoding: changed, as: UTF8.self), in: Self.upiFixture)
            #expect(rejection(account, request(body, .json))?.reason == .badSignature, "sign index \(index)")
        }
        let upper = replacing(Self.upiDigest, with: Self.upiDigest.uppercased(), in: Self.upiFixture)
        #expect(try account.verify(request(upper, .json)).orderRef == "reference132")
    }

    @Test func chopVectorSigningStringAndDigest() {
        let values = Dictionary(uniqueKeysWithValues: Self.chopMembers.map { ($0.key, $0.value) })
        #expect(Citcon.signingString(values, generation: .chop, secret: Self.chopToken) == Self.chopString)
        #expect(Citcon.signature(values, generation: .chop, secret: Self.chopToken) == Self.chopDigest)
        #expect(Hex.encode(Crypto.digest(.md5, Array(Self.chopString.utf8))) == Self.chopDigest)
    }

    @Test(arguments: BodyFormat.allCases)
    fileprivate func chopVectorVerifies(format: BodyFormat) throws {
        let body = encode(Self.chopMembers + [Member("sign", Self.chopDigest)], as: format)
        let notification = try Citcon(apiTokens: [Self.chopToken]).verify(request(body, format))
        #expect(notification.kind == .payment)
        #expect(notification.orderRef == "20240101120000-123")
        #expect(notification.providerTxnID == "2000470534782760808453")
        #expect(notification.dedupKey == "abc123")
        #expect(notification.providerStatus == "success")
        #expect(notification.effect == .transition(.paid))
        #expect(notification.amount == Money(minor: 100, currency: "USD"))
        #expect(notification.detail == ["generation": "chop"])
    }

    @Test(arguments: BodyFormat.allCases)
    fileprivate func chopVectorNegativeTwins(format: BodyFormat) {
        let account = Citcon(apiTokens: [Self.chopToken])
        let good = encode(Self.chopMembers + [Member("sign", Self.chopDigest)], as: format)
        let twins: [(String, Citcon, [UInt8])] = [
            ("reference", account, replacing("20240101120000-123", with: "20240101120000-124", in: good)),
            ("amount", account, replacing("100", with: "101", in: good)),
            ("notify_status", account, replacing("success", with: "succesS", in: good)),
            ("token", Citcon(apiTokens: ["1234567890abcdef1234567890abcder"]), good),
            ("secret-only account", Citcon(apiSecrets: [Self.chopToken]), good),
            ("sign", account, replacing(Self.chopDigest, with: "fd997e48ea0c60d7cc07bc7b7d02c066", in: good)),
        ]
        for (name, account, body) in twins {
            #expect(rejection(account, request(body, format))?.reason == .badSignature, "\(name)")
        }
    }

    // MARK: Independently computed signatures

    @Test func independentUPISignatureOverJSONIsAccepted() throws {
        let body = #"{"transaction_type":"charge","id":"T-1","reference":"R 1&2","status":"succeeded","amount":"2500","currency":"CAD","payment":{"method": "card"},"live":true,"note":null,"extra":"unsigned","fields":"reference,status,id,transaction_type,amount,currency,payment,live,note,missing","sign":"SIGN"}"#
        let string = #"amount=2500&currency=CAD&fields=reference,status,id,transaction_type,amount,currency,payment,live,note,missing&id=T-1&live=true&missing=&note=&payment={"method": "card"}&reference=R 1&2&status=succeeded&transaction_type=charge&secret=s3cr3t"#
        let sign = Hex.encode(Crypto.digest(.sha256, Array(string.utf8)))
        let notification = try Citcon(apiSecrets: ["s3cr3t"]).verify(request(Array(body.replacingOccurrences(of: "SIGN", with: sign).utf8), .json))
        #expect(notification.orderRef == "R 1&2")
        #expect(notification.effect == .transition(.paid))
        #expect(notification.amount == Money(minor: 2500, currency: "CAD"))
    }

    @Test func independentCHOPSignatureOverFormIsAccepted() throws {
        // Uppercase sorts before lowercase in byte order; `amount` before `amount_x`.
        let string = "X_note=a b+c&amount=700&amount_x=1&currency=JPY&fields=reference,notify_status,id,amount,currency,X_note,amount_x&id=9&notify_status=success&reference=ord/7&token=tok"
        let sign = Hex.encode(Crypto.digest(.md5, Array(string.utf8)))
        let body = "fields=reference%2Cnotify_status%2Cid%2Camount%2Ccurrency%2CX_note%2Camount_x&id=9&amount=700&currency=JPY&notify_status=success&reference=ord%2F7&X_note=a+b%2Bc&amount_x=1&sign=\(sign)"
        let notification = try Citcon(apiTokens: ["tok"]).verify(request(Array(body.utf8), .form))
        #expect(notification.orderRef == "ord/7")
        #expect(notification.amount == Money(minor: 700, currency: "JPY"))
        #expect(notification.dedupKey == "9|success")
    }

    @Test func signIsNeverSignedEvenWhenListed() throws {
        let string = "fields=sign,id,reference,status,transaction_type&id=7&reference=o&status=pending&transaction_type=charge&secret=k"
        let sign = Hex.encode(Crypto.digest(.sha256, Array(string.utf8)))
        let body = #"{"fields":"sign,id,reference,status,transaction_type","id":"7","reference":"o","status":"pending","transaction_type":"charge","sign":"SIGN"}"#
        let notification = try Citcon(apiSecrets: ["k"]).verify(request(Array(body.replacingOccurrences(of: "SIGN", with: sign).utf8), .json))
        #expect(notification.effect == .transition(.pending))
        #expect(notification.amount == nil)
    }

    // MARK: Mapping

    private static func verifyUPI(_ members: [Member], format: BodyFormat = .json) throws(Rejection) -> VerifiedNotification {
        let fields = members.map(\.key).joined(separator: ",")
        let body = encode(signed(members + [Member("fields", fields)], .upi, secret: "k"), as: format)
        return try Citcon(apiSecrets: ["k"]).verify(request(body, format))
    }

    private static func charge(_ status: String, type: String = "charge") -> [Member] {
        [
            Member("id", "txn-1"), Member("transaction_type", type), Member("reference", "order-9"),
            Member("amount", "1500", number: true), Member("currency", "USD"), Member("status", status),
        ]
    }

    static let chargeStatuses: [(String, NotificationEffect)] = [
        ("success", .transition(.paid)), ("succeeded", .transition(.paid)), ("captured", .transition(.paid)),
        ("authorized", .transition(.authorized)), ("initiated", .transition(.pending)), ("pending", .transition(.pending)),
        ("fail", .transition(.failed)), ("failed", .transition(.failed)), ("cancelled", .transition(.canceled)),
        ("canceled", .transition(.canceled)), ("expired", .transition(.expired)), ("refunded", .unknownStatus),
        ("on_hold", .unknownStatus), ("SUCCEEDED", .unknownStatus),
    ]

    @Test(arguments: chargeStatuses)
    func chargeStatusMapping(status: String, effect: NotificationEffect) throws {
        for format in BodyFormat.allCases {
            let notification = try Self.verifyUPI(Self.charge(status), format: format)
            #expect(notification.effect == effect)
            #expect(notification.kind == .payment)
            #expect(notification.providerStatus == status)
            #expect(notification.dedupKey == "txn-1|charge|\(status)")
            #expect(notification.amount == Money(minor: 1500, currency: "USD"))
        }
    }

    @Test func refundWithCumulativeTotal() throws {
        var members = Self.charge("succeeded", type: "refund")
        members[0] = Member("id", "refund-7")
        members.append(Member("amount_refunded", "1200"))
        let notification = try Self.verifyUPI(members)
        #expect(notification.kind == .refund)
        #expect(notification.dedupKey == "refund-7|refund|succeeded")
        #expect(
            notification.effect
                == .refund(RefundInfo(refundID: "refund-7", amount: Money(minor: 1500, currency: "USD"), cumulativeRefundedMinor: 1200))
        )
    }

    @Test func refundWithoutCumulativeTotalCountsByRefundID() throws {
        for extra in [[], [Member("amount_refunded", "")], [Member("amount_refunded", "null", number: true)]] {
            let notification = try Self.verifyUPI(Self.charge("success", type: "refund") + extra)
            #expect(notification.effect == .refund(RefundInfo(refundID: "txn-1", amount: Money(minor: 1500, currency: "USD"))))
        }
    }

    @Test func refundsNotSucceededChangeNothing() throws {
        #expect(try Self.verifyUPI(Self.charge("pending", type: "refund")).effect == .record)
        #expect(try Self.verifyUPI(Self.charge("failed", type: "refund")).effect == .record)
        #expect(try Self.verifyUPI(Self.charge("reversed", type: "refund")).effect == .unknownStatus)
    }

    static let chargebackStages: [(String, NotificationEffect)] = [
        ("Lost", .transition(.chargedBack)), ("Won", .chargebackReversal), ("Opened", .record),
        ("Evidence_required", .record), ("Lose", .record),
        // Status words are matched as providers.md writes them: another case is another stage.
        ("lost", .record), ("WON", .record),
    ]

    @Test(arguments: chargebackStages)
    func chargebackStageMapping(stage: String, effect: NotificationEffect) throws {
        let notification = try Self.verifyUPI(Self.charge(stage, type: "chargeback"))
        #expect(notification.kind == .chargeback)
        #expect(notification.effect == effect)
        #expect(notification.dedupKey == "txn-1|chargeback|\(stage)")
    }

    @Test func vaultIsRecordedAndUnknownTypesAreUnknownStatus() throws {
        let vault = try Self.verifyUPI(Self.charge("succeeded", type: "vault"))
        #expect(vault.effect == .record)
        #expect(vault.kind == .event)
        let payout = try Self.verifyUPI(Self.charge("succeeded", type: "payout"))
        #expect(payout.effect == .unknownStatus)
        #expect(payout.dedupKey == "txn-1|payout|succeeded")
    }

    static let chopStatuses: [(String, NotificationEffect)] = [
        ("success", .transition(.paid)), ("SUCCESS", .transition(.failed)), ("fail", .transition(.failed)),
        ("closed", .transition(.failed)), ("pending", .transition(.failed)),
    ]

    @Test(arguments: chopStatuses)
    func chopStatusMapping(status: String, effect: NotificationEffect) throws {
        for format in BodyFormat.allCases {
            var members = Self.chopMembers
            members[3] = Member("notify_status", status)
            let body = encode(signed(members, .chop, secret: "tok"), as: format)
            let notification = try Citcon(apiTokens: ["tok"]).verify(request(body, format))
            #expect(notification.effect == effect)
            #expect(notification.dedupKey == "abc123")
        }
    }

    @Test func chopDedupWithoutNotifyID() throws {
        let members = [
            Member("id", "55"), Member("amount", "100"), Member("currency", "USD"), Member("notify_status", "success"),
            Member("reference", "r"), Member("fields", "id,amount,currency,notify_status,reference"),
        ]
        let account = Citcon(apiTokens: ["tok"])
        #expect(try account.verify(request(encode(signed(members, .chop, secret: "tok"), as: .form), .form)).dedupKey == "55|success")
        // A notify_id the signature does not cover is not trusted.
        let unsigned = signed(members, .chop, secret: "tok") + [Member("notify_id", "forged")]
        #expect(try account.verify(request(encode(unsigned, as: .json), .json)).dedupKey == "55|success")
    }

    @Test func unsignedFieldsAreIgnored() throws {
        // `status` is sent but not listed in `fields`: it cannot be trusted, so it is missing.
        var members = Self.charge("succeeded")
        members.removeAll { $0.key == "status" }
        let fields = members.map(\.key).joined(separator: ",")
        let body = encode(signed(members + [Member("fields", fields)], .upi, secret: "k") + [Member("status", "succeeded")], as: .json)
        #expect(rejection(Citcon(apiSecrets: ["k"]), request(body, .json))?.reason == .missingField)
    }

    @Test func amounts() throws {
        func amount(_ value: String, number: Bool, currency: String = "USD") throws(Rejection) -> Money? {
            var members = Self.charge("succeeded")
            members[3] = Member("amount", value, number: number)
            members[4] = Member("currency", currency)
            return try Self.verifyUPI(members).amount
        }
        #expect(try amount("250", number: false) == Money(minor: 250, currency: "USD"))
        #expect(try amount("250", number: true) == Money(minor: 250, currency: "USD"))
        #expect(try amount("100", number: true, currency: "JPY") == Money(minor: 100, currency: "JPY"))
        for (bad, number) in [("2.50", true), ("-5", true), ("1e3", true), ("2.50", false), ("0250", false), ("12 ", false), ("+3", false)] {
            #expect(rejectionReason { () throws(Rejection) in try amount(bad, number: number) } == .badAmount, "\(bad)")
        }
        #expect(rejectionReason { () throws(Rejection) in try amount("250", number: false, currency: "XYZ") } == .unknownCurrency)
    }

    @Test func requiredFields() {
        for missing in ["id", "reference", "status", "transaction_type", "currency"] {
            let members = Self.charge("succeeded").filter { $0.key != missing }
            #expect(rejectionReason { () throws(Rejection) in try Self.verifyUPI(members) } == .missingField, "\(missing)")
        }
        var empty = Self.charge("succeeded")
        empty[2] = Member("reference", "")
        #expect(rejectionReason { () throws(Rejection) in try Self.verifyUPI(empty) } == .missingField)
    }

    @Test func malformedBodiesAndContentTypes() {
        let account = Citcon(apiSecrets: ["braintree"])
        let type = RawRequest(target: "/", headers: [("Content-Type", "text/plain")], body: Self.upiFixture)
        #expect(rejection(account, type)?.reason == .unsupportedContentType)
        #expect(rejection(account, request(Array(Self.upiFixture.dropLast()), .json))?.reason == .malformedBody)
        #expect(rejection(account, request(Array("a=1&a=2".utf8), .form))?.reason == .malformedBody)
        #expect(rejection(account, request(Array("a=%zz".utf8), .form))?.reason == .malformedBody)
        #expect(rejection(account, request(Array(#"{"id":"1","id":"2"}"#.utf8), .json))?.reason == .malformedBody)
    }

    // MARK: Answers and config

    @Test func answers() {
        #expect(Citcon.acknowledgement == .text(200, "ok"))
        #expect(Citcon.answer(for: Rejection(.badSignature, "x")) == .text(400, "invalid signature"))
        #expect(Citcon.answer(for: Rejection(.malformedBody, "x")) == .text(400, "malformed request"))
        #expect(Citcon.answer(for: Rejection(.unknownAccount, "x")).status == 404)
    }

    @Test func config() throws {
        let empty = AccountSettings(provider: "citcon", account: "default", keyPath: "providers.citcon[0]")
        #expect(throws: AccountConfigError(key: "providers.citcon[0].api_secret", message: "api_secret or api_token is required")) {
            try Citcon(settings: empty)
        }
        var blank = empty
        blank.lists["api_token"] = ["ok", ""]
        #expect(throws: AccountConfigError(key: "providers.citcon[0].api_token", message: "must not be empty")) {
            try Citcon(settings: blank)
        }
        var tokenOnly = empty
        tokenOnly.lists["api_token"] = [Self.chopToken]
        let account = try Citcon(settings: tokenOnly)
        let body = encode(Self.chopMembers + [Member("sign", Self.chopDigest)], as: .json)
        #expect(try account.verify(request(body, .json)).effect == .transition(.paid))
        #expect(rejection(account, request(Self.upiFixture, .json))?.reason == .badSignature)
        #expect(!account.summary.contains { $0.value.contains(Self.chopToken) })
    }

    @Test func registryOrder() {
        #expect(ProviderRegistry.all.map { $0.name } == ["citcon", "ipay88", "alipay", "unlimint", "juspay"])
        #expect(ProviderRegistry.provider(named: "citcon").map { ObjectIdentifier($0) } == ObjectIdentifier(Citcon.self))
    }

    // MARK: Simulation

    @Test func simulatedUPIRequestRoundTrips() throws {
        let account = Citcon(apiSecrets: ["first \"secret\"", "second"])
        let spec = SimulationSpec(
            orderRef: "ORD-1 \"ü\"&x=1", status: "succeeded", amount: Money(minor: 1234, currency: "USD"),
            path: "/ipn/citcon", uniqueID: "sim-42", time: "2024-05-01T10:00:00Z"
        )
        let simulated = try account.simulatedRequest(spec)
        #expect(simulated.target == "/ipn/citcon")
        let notification = try account.verify(simulated)
        #expect(notification.orderRef == spec.orderRef)
        #expect(notification.providerTxnID == "sim-42")
        #expect(notification.effect == .transition(.paid))
        #expect(notification.amount == spec.amount)
        #expect(notification.dedupKey == "sim-42|charge|succeeded")
        #expect(notification.detail["secret"] == "1 of 2")
        #expect(rejection(Citcon(apiSecrets: ["second"]), simulated)?.reason == .badSignature)
    }

    @Test func simulatedCHOPRequestRoundTripsForTokenOnlyAccounts() throws {
        let account = Citcon(apiTokens: ["tok"])
        let spec = SimulationSpec(
            orderRef: "o-2", status: "success", amount: Money(minor: 500, currency: "JPY"),
            path: "/ipn/citcon/jp", uniqueID: "u2", time: "2024-05-01T10:00:00Z"
        )
        let notification = try account.verify(account.simulatedRequest(spec))
        #expect(notification.orderRef == "o-2")
        #expect(notification.effect == .transition(.paid))
        #expect(notification.amount == spec.amount)
        #expect(notification.detail["generation"] == "chop")
        #expect(throws: SimulationError.self) { try Citcon().simulatedRequest(spec) }
    }

    // MARK: Properties

    static let propertyCases: [(UInt64, Citcon.Generation, String)] = [
        (0xC17C_0001, .upi, "json"), (0xC17C_0002, .upi, "form"), (0xC17C_0003, .chop, "json"), (0xC17C_0004, .chop, "form"),
    ]

    /// The body as the spec says any correct verifier sees it: the fields `fields` names (and
    /// `fields` itself), a missing one being empty, the hex `sign` without case, and which
    /// generation it is. Unsigned fields carry no meaning. Nil when the body does not parse.
    private static func content(_ body: [UInt8], _ format: BodyFormat) -> [String: String]? {
        let raw: [String: String]
        switch format {
        case .json:
            guard let object = try? JSONParser.parseObject(body) else { return nil }
            raw = Dictionary(uniqueKeysWithValues: object.members.map { ($0.key, $0.value.signingText) })
        case .form:
            guard let form = try? FormBody.parse(body) else { return nil }
            raw = Dictionary(uniqueKeysWithValues: form.fields.map { ($0.name, $0.value) })
        }
        let listed = Set(["fields"] + (raw["fields"] ?? "").split(separator: ",").map(String.init)).subtracting(["sign"])
        var view = Dictionary(uniqueKeysWithValues: listed.map { ($0, raw[$0] ?? "") })
        view[" sign"] = raw["sign"]?.lowercased()
        view[" generation"] = raw["notify_status"] == nil ? "upi" : "chop"
        return view
    }

    @Test(arguments: propertyCases)
    func signVerifyAndSingleByteMutations(seed: UInt64, generation: Citcon.Generation, formatName: String) throws {
        let format = try #require(BodyFormat(rawValue: formatName))
        var rng = SplitMix64(seed: seed)
        var equivalentMutations = 0
        for iteration in 0..<250 {
            let secret = rng.printable(length: 1 + Int(rng.next() % 40))
            let reference = "r" + rng.printable(length: Int(rng.next() % 24))
            let id = rng.printable(length: 1 + Int(rng.next() % 20))
            let minor = Int64(rng.next() % 10_000_000_000)
            let currency = ["USD", "CAD", "JPY", "CNY", "KWD"][Int(rng.next() % 5)]
            let statuses = generation == .upi ? ["succeeded", "authorized", "pending", "failed", rng.printable(length: 6)] : ["success", "fail"]
            let status = statuses[Int(rng.next() % UInt64(statuses.count))]
            var members: [Member] = [
                Member("id", id), Member("reference", reference),
                Member("amount", String(minor), number: rng.next() % 2 == 0), Member("currency", currency),
                Member(generation == .upi ? "status" : "notify_status", status),
                Member("time", rng.printable(length: Int(rng.next() % 30))),
            ]
            if generation == .upi { members.append(Member("transaction_type", "charge")) }
            for index in 0..<Int(rng.next() % 4) {
                members.append(Member("x\(index)_\(rng.printable(length: 3).filter(\.isLetter))", rng.printable(length: Int(rng.next() % 16))))
            }
            members.shuffle(using: &rng)
            members.append(Member("fields", members.map(\.key).joined(separator: ",")))
            let account = generation == .upi ? Citcon(apiSecrets: [secret]) : Citcon(apiTokens: [secret])
            let signedMembers = signed(members, generation, secret: secret)
            let body = encode(signedMembers, as: format)

            let original = try account.verify(request(body, format))
            #expect(original.orderRef == reference)
            #expect(original.providerTxnID == id)
            #expect(original.amount == Money(minor: minor, currency: currency))

            let other = generation == .upi ? Citcon(apiSecrets: [secret + "x"]) : Citcon(apiTokens: [secret + "x"])
            #expect(rejection(other, request(body, format))?.reason == .badSignature, "iteration \(iteration): other secret")

            // Any one changed body byte: accepted only when the decoded content is unchanged.
            let (mutated, index) = rng.mutatingOneByte(body)
            let same = Self.content(mutated, format).map { $0 == Self.content(body, format) } ?? false
            do {
                let result = try account.verify(request(mutated, format))
                #expect(same, "iteration \(iteration): mutation at \(index) verified: \(String(decoding: body, as: UTF8.self)) -> \(String(decoding: mutated, as: UTF8.self))")
                #expect(result == original)
                equivalentMutations += 1
            } catch {
                #expect(!same, "iteration \(iteration): equivalent mutation at \(index) rejected: \(error)")
            }

            // Any one changed byte of the signature: only a change of hex letter case is the same signature.
            let sign = try #require(signedMembers.last?.value)
            let (mutatedSign, _) = rng.mutatingOneByte(Array(sign.utf8))
            let newSign = String(decoding: mutatedSign, as: UTF8.self)
            let resigned = encode(members + [Member("sign", newSign)], as: format)
            if newSign.lowercased() == sign {
                #expect(try account.verify(request(resigned, format)) == original)
            } else {
                #expect(rejection(account, request(resigned, format)) != nil, "iteration \(iteration): sign \(newSign)")
            }
        }
        // Almost every mutation changes the content; a handful (`+` to space, hex case, renaming
        // a signed empty field) may not.
        #expect(equivalentMutations < 25)
    }
}

func rejectionReason(_ body: () throws(Rejection) -> Any?) -> RejectReason? {
    do {
        _ = try body()
        return nil
    } catch {
        return error.reason
    }
}
