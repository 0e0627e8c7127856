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

/// One row of the iPay88 vector table in providers.md section 2.
struct IPay88Vector: Sendable, CustomTestStringConvertible {
    var key: String
    var fields: IPay88.SignedFields
    var form: IPay88.SignatureForm
    var algorithm: IPay88.Algorithm
    var string: String
    var expected: String
    var minor: Int64

    var testDescription: String { "\(string) \(algorithm.rawValue)" }
}

private func post(_ pairs: [(String, String)], contentType: String? = "application/x-www-form-urlencoded") -> RawRequest {
    RawRequest(target: "/ipn/ipay88", headers: contentType.map { [("Content-Type", $0)] } ?? [], body: FormBody.encode(pairs))
}

private func pairs(_ fields: IPay88.SignedFields, signature: String, extra: [(String, String)] = []) -> [(String, String)] {
    [
        ("MerchantCode", fields.merchantCode), ("PaymentId", fields.paymentID), ("RefNo", fields.refNo),
        ("Amount", fields.amount), ("Currency", fields.currency),
    ] + extra + [("Status", fields.status), ("Signature", signature)]
}

private func rejection(_ account: IPay88, _ request: RawRequest) -> Rejection? {
    do {
        _ = try account.verify(request)
        return nil
    } catch {
        return error
    }
}

/// The digest of `string` as iPay88 encodes it, computed here without the provider's signer.
private func independentSignature(_ string: String, key: String, _ algorithm: IPay88.Algorithm) -> String {
    switch algorithm {
    case .sha1: Base64.encode(Crypto.digest(.sha1, Array(string.utf8)))
    case .sha256: Hex.encode(Crypto.digest(.sha256, Array(string.utf8)))
    case .hmacSHA512: Hex.encode(Crypto.hmac(.sha512, key: Array(key.utf8), data: Array(string.utf8)))
    }
}

@Suite("iPay88 Backend Post")
struct IPay88Tests {
    static let cambodia = IPay88.SignedFields(
        merchantCode: "KH00001", paymentID: "1", refNo: "ORD1188", amount: "1.00", currency: "KHR", status: "1"
    )
    static let malaysia = IPay88.SignedFields(
        merchantCode: "M00003", paymentID: "2", refNo: "A00000001", amount: "1.00", currency: "MYR", status: "1"
    )
    static let separators = IPay88.SignedFields(
        merchantCode: "M00003", paymentID: "2", refNo: "12345", amount: "2,741.16", currency: "MYR", status: "1"
    )

    static let vectors = [
        IPay88Vector(
            key: "Apple88KEY", fields: cambodia, form: .canonical, algorithm: .sha1,
            string: "Apple88KEYKH000011ORD1188100KHR1", expected: "lMZuEQmQIkz6NConcOxWRdrWo8E=", minor: 100
        ),
        IPay88Vector(
            key: "Apple88KEY", fields: cambodia, form: .withoutPaymentID, algorithm: .sha1,
            string: "Apple88KEYKH00001ORD1188100KHR1", expected: "KiCecyU86ZOFk15jXwOAvHdw/1M=", minor: 100
        ),
        IPay88Vector(
            key: "apple", fields: malaysia, form: .canonical, algorithm: .hmacSHA512,
            string: "appleM000032A00000001100MYR1",
            expected: "2b8bcaf66881a9f02a7a2b470cbdf958a86d92f2169774de1062db0376545b061c98f78827db0dbe8aacf908982d5777f577370e19658649a9794c7168b5a5d7",
            minor: 100
        ),
        IPay88Vector(
            key: "apple", fields: malaysia, form: .canonical, algorithm: .sha256,
            string: "appleM000032A00000001100MYR1",
            expected: "f173a2521d178574caab19ab7ddd04b299dbc0d656a26c1d1aabf9187dfbf352", minor: 100
        ),
        IPay88Vector(
            key: "apple", fields: separators, form: .canonical, algorithm: .sha1,
            string: "appleM00003212345274116MYR1", expected: "0X0Yq8zEmJ3ddMtn8e/1suethT8=", minor: 274_116
        ),
    ]

    // MARK: Vectors

    @Test(arguments: vectors)
    func vectorStringAndDigest(vector: IPay88Vector) {
        #expect(IPay88.signingString(vector.fields, merchantKey: vector.key, form: vector.form) == vector.string)
        #expect(IPay88.signature(vector.fields, merchantKey: vector.key, algorithm: vector.algorithm, form: vector.form) == vector.expected)
        #expect(independentSignature(vector.string, key: vector.key, vector.algorithm) == vector.expected)
    }

    @Test(arguments: vectors)
    func vectorVerifies(vector: IPay88Vector) throws {
        let request = post(pairs(vector.fields, signature: vector.expected, extra: [("TransId", "T77")]))
        for algorithm in [vector.algorithm, nil] {
            let account = IPay88(merchantCode: vector.fields.merchantCode, merchantKeys: [vector.key], algorithm: algorithm)
            let notification = try account.verify(request)
            #expect(notification.kind == .payment)
            #expect(notification.orderRef == vector.fields.refNo)
            #expect(notification.providerTxnID == "T77")
            #expect(notification.providerStatus == "1")
            #expect(notification.effect == .transition(.paid))
            #expect(notification.dedupKey == "T77|1")
            #expect(notification.amount == Money(minor: vector.minor, currency: vector.fields.currency))
            #expect(notification.detail["signature_form"] == vector.form.rawValue)
            #expect(notification.detail["signature"] == (algorithm == nil ? vector.algorithm.rawValue : nil))
        }
    }

    @Test(arguments: vectors)
    func vectorNegativeTwins(vector: IPay88Vector) {
        let account = IPay88(merchantCode: vector.fields.merchantCode, merchantKeys: [vector.key], algorithm: vector.algorithm)
        func changed(_ change: (inout IPay88.SignedFields) -> Void) -> RawRequest {
            var fields = vector.fields
            change(&fields)
            return post(pairs(fields, signature: vector.expected))
        }
        var signature = Array(vector.expected.utf8)
        signature[3] = signature[3] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
        let twins: [(String, IPay88, RawRequest, RejectReason)] = [
            ("RefNo byte", account, changed { $0.refNo = String($0.refNo.dropLast()) + "9" }, .badSignature),
            ("amount", account, changed { $0.amount = String($0.amount.dropLast()) + "7" }, .badSignature),
            ("currency", account, changed { $0.currency = "USD" }, .badSignature),
            ("status", account, changed { $0.status = "0" }, .badSignature),
            ("merchant code", account, changed { $0.merchantCode += "0" }, .merchantMismatch),
            (
                "key", IPay88(merchantCode: vector.fields.merchantCode, merchantKeys: [vector.key + "X"], algorithm: vector.algorithm),
                post(pairs(vector.fields, signature: vector.expected)), .badSignature
            ),
            ("signature byte", account, post(pairs(vector.fields, signature: String(decoding: signature, as: UTF8.self))), .badSignature),
        ]
        for (name, account, request, reason) in twins {
            #expect(rejection(account, request)?.reason == reason, "\(name)")
        }
        // PaymentId is covered by the canonical form only.
        let otherPayment = changed { $0.paymentID = "9" }
        if vector.form == .canonical {
            #expect(rejection(account, otherPayment)?.reason == .badSignature)
        } else {
            #expect((try? account.verify(otherPayment))?.detail["signature_form"] == "without_payment_id")
        }
    }

    @Test func signatureOfTheWrongShapeForTheConfiguredAlgorithm() {
        let vector = Self.vectors[2]  // hmac-sha512
        let request = post(pairs(vector.fields, signature: vector.expected))
        for algorithm in [IPay88.Algorithm.sha1, .sha256] {
            let account = IPay88(merchantCode: "M00003", merchantKeys: ["apple"], algorithm: algorithm)
            #expect(rejection(account, request)?.reason == .badSignature)
        }
        let auto = IPay88(merchantCode: "M00003", merchantKeys: ["apple"])
        for garbage in ["abc", String(repeating: "g", count: 64), String(vector.expected.dropLast()), "lMZuEQmQIkz6NConcOxWRdrWo8E", "lMZuEQmQIkz6NConcOxWRdrWo8E=="] {
            #expect(rejection(auto, post(pairs(vector.fields, signature: garbage)))?.reason == .badSignature, "\(garbage)")
        }
    }

    @Test func hexSignaturesIgnoreCaseAndBase64DoesNot() throws {
        let hmac = Self.vectors[2]
        let auto = IPay88(merchantCode: "M00003", merchantKeys: ["apple"])
        #expect(try auto.verify(post(pairs(hmac.fields, signature: hmac.expected.uppercased()))).orderRef == "A00000001")
        let sha256 = Self.vectors[3]
        #expect(try auto.verify(post(pairs(sha256.fields, signature: sha256.expected.uppercased()))).orderRef == "A00000001")
        let sha1 = Self.vectors[0]
        let cambodia = IPay88(merchantCode: "KH00001", merchantKeys: ["Apple88KEY"], algorithm: .sha1)
        #expect(rejection(cambodia, post(pairs(sha1.fields, signature: sha1.expected.lowercased())))?.reason == .badSignature)
        // `E` -> `F` only changes the two unused low bits of the last base64 character: the same
        // digest bytes in a text iPay88 never produces, so it is not accepted.
        let noncanonical = "lMZuEQmQIkz6NConcOxWRdrWo8F="
        #expect(rejection(cambodia, post(pairs(sha1.fields, signature: noncanonical)))?.reason == .badSignature)
    }

    @Test func independentlyComputedSignatureIsAccepted() throws {
        let string = "s3cr3t-keyM99999PH-7" + "INV 2024/7" + "1234567" + "PHP" + "6"
        let fields = IPay88.SignedFields(
            merchantCode: "M99999", paymentID: "PH-7", refNo: "INV 2024/7", amount: "12,345.67", currency: "PHP", status: "6"
        )
        for algorithm in IPay88.Algorithm.allCases {
            let signature = independentSignature(string, key: "s3cr3t-key", algorithm)
            let account = IPay88(merchantCode: "M99999", merchantKeys: ["s3cr3t-key"])
            let notification = try account.verify(post(pairs(fields, signature: signature)))
            #expect(notification.effect == .transition(.pending))
            #expect(notification.amount == Money(minor: 1_234_567, currency: "PHP"))
            #expect(notification.orderRef == "INV 2024/7")
            #expect(notification.detail["signature"] == algorithm.rawValue)
        }
    }

    // MARK: Mapping

    /// Verifies a post built from `fields`, signed by the signer under test.
    private static func verify(
        _ fields: IPay88.SignedFields,
        extra: [(String, String)] = [],
        algorithm: IPay88.Algorithm = .sha256
    ) throws(Rejection) -> VerifiedNotification {
        let signature = IPay88.signature(fields, merchantKey: "k", algorithm: algorithm)
        return try IPay88(merchantCode: fields.merchantCode, merchantKeys: ["k"]).verify(post(pairs(fields, signature: signature, extra: extra)))
    }

    static func fields(status: String = "1", amount: String = "10.00", refNo: String = "ORD-1") -> IPay88.SignedFields {
        IPay88.SignedFields(merchantCode: "M1", paymentID: "2", refNo: refNo, amount: amount, currency: "MYR", status: status)
    }

    static let statuses: [(String, NotificationEffect)] = [
        ("1", .transition(.paid)), ("0", .transition(.failed)), ("6", .transition(.pending)),
        ("9", .unknownStatus), ("01", .unknownStatus), ("success", .unknownStatus),
    ]

    @Test(arguments: statuses)
    func statusMapping(status: String, effect: NotificationEffect) throws {
        let notification = try Self.verify(Self.fields(status: status), extra: [("TransId", "T1")])
        #expect(notification.effect == effect)
        #expect(notification.providerStatus == status)
        #expect(notification.dedupKey == "T1|\(status)")
    }

    @Test func dedupKeyWithoutTransID() throws {
        for extra in [[], [("TransId", "")]] {
            let notification = try Self.verify(Self.fields(status: "0", amount: "1,278.99", refNo: "R9"), extra: extra)
            #expect(notification.dedupKey == "R9|0|127899")
            #expect(notification.providerTxnID == nil)
        }
    }

    @Test func unsignedFieldsDoNotAffectTheSignature() throws {
        let plain = try Self.verify(Self.fields(), extra: [("TransId", "T1"), ("Remark", "a"), ("ErrDesc", "")])
        let other = try Self.verify(Self.fields(), extra: [("TransId", "T2"), ("Remark", "b"), ("CCName", "X Y")])
        #expect(plain.dedupKey == "T1|1")
        #expect(other.dedupKey == "T2|1")
    }

    @Test("a field ipnd does not read may be in Latin-1; a field it reads must be UTF-8")
    func latin1InUnusedFields() throws {
        let fields = Self.fields()
        let signature = IPay88.signature(fields, merchantKey: "k", algorithm: .sha256)
        let account = IPay88(merchantCode: "M1", merchantKeys: ["k"])
        let signed = FormBody.encode(pairs(fields, signature: signature, extra: [("TransId", "T1")]))
        let contentType = [("Content-Type", "application/x-www-form-urlencoded; charset=ISO-8859-1")]
        // "Peña" as a Latin-1 card holder's name.
        let latin1Name = RawRequest(target: "/ipn/ipay88", headers: contentType, body: signed + Array("&CCName=Pe%F1a".utf8))
        let notification = try account.verify(latin1Name)
        #expect(notification.orderRef == "ORD-1")
        #expect(notification.dedupKey == "T1|1")
        // In a field the notification is read from, the byte is still malformed_body.
        let latin1TransID = RawRequest(target: "/ipn/ipay88", headers: contentType,
                                       body: FormBody.encode(pairs(fields, signature: signature)) + Array("&TransId=T%F1".utf8))
        #expect(rejection(account, latin1TransID)
            == Rejection(.malformedBody, #"form field "TransId" is not valid UTF-8"#))
    }

    @Test("a genuine signature replayed with the Amount written another way (1.00 as 100) is refused")
    func amountLayoutReplay() throws {
        let genuine = Self.fields(amount: "1.00")
        let signature = IPay88.signature(genuine, merchantKey: "k", algorithm: .sha256)
        let provider = IPay88(merchantCode: "M1", merchantKeys: ["k"])
        #expect(try provider.verify(post(pairs(genuine, signature: signature))).amount == Money(minor: 100, currency: "MYR"))
        for forged in ["100", "10.0", "1,00"] {
            var fields = genuine
            fields.amount = forged
            let reason = rejectionReason { () throws(Rejection) in try provider.verify(post(pairs(fields, signature: signature))) }
            #expect(reason == .badAmount, "\(forged)")
        }
    }

    @Test func amounts() throws {
        let good: [(String, Int64)] = [("1,278.99", 127_899), ("1278.99", 127_899), ("0.50", 50), ("1,000,000.00", 100_000_000)]
        for (amount, minor) in good {
            #expect(try Self.verify(Self.fields(amount: amount)).amount == Money(minor: minor, currency: "MYR"), "\(amount)")
        }
        // The signature covers only the digits: "1.00", "10.0" and "100" sign alike, so only
        // the form with the currency's two decimals is taken.
        for bad in ["6.035", "1,27.99", "1278,99", "12,34", "1.278.99", "-1.00", "1e2", " 1.00", "0,100.00", "12.3", "7", "10.0", "100"] {
            #expect(rejectionReason { () throws(Rejection) in try Self.verify(Self.fields(amount: bad)) } == .badAmount, "\(bad)")
        }
        var unknown = Self.fields()
        unknown.currency = "ZZZ"
        #expect(rejectionReason { () throws(Rejection) in try Self.verify(unknown) } == .unknownCurrency)
    }

    @Test func fieldNamesAreCaseInsensitive() throws {
        let vector = Self.vectors[4]
        let account = IPay88(merchantCode: "M00003", merchantKeys: ["apple"])
        let transforms: [(String) -> String] = [
            { $0.lowercased() },
            { $0.uppercased() },
            { String($0.enumerated().map { $0.offset % 2 == 0 ? Character($0.element.lowercased()) : Character($0.element.uppercased()) }) },
        ]
        for transform in transforms {
            let renamed = pairs(vector.fields, signature: vector.expected, extra: [("TransId", "T5")]).map { (transform($0.0), $0.1) }
            let notification = try account.verify(post(renamed))
            #expect(notification.amount == Money(minor: 274_116, currency: "MYR"))
            #expect(notification.dedupKey == "T5|1")
        }
        // The same field twice under different cases is ambiguous.
        let doubled = pairs(vector.fields, signature: vector.expected) + [("refno", "other")]
        #expect(rejection(account, post(doubled))?.reason == .malformedBody)
    }

    @Test func missingFieldsAndBodies() {
        let account = IPay88(merchantCode: "M1", merchantKeys: ["k"])
        let fields = Self.fields()
        let signature = IPay88.signature(fields, merchantKey: "k", algorithm: .sha256)
        let full = pairs(fields, signature: signature)
        for name in ["MerchantCode", "RefNo", "Amount", "Currency", "Status"] {
            #expect(rejection(account, post(full.filter { $0.0 != name }))?.reason == .missingField, "\(name)")
        }
        #expect(rejection(account, post(full.filter { $0.0 != "Signature" }))?.reason == .badSignature)
        #expect(rejection(account, post(full, contentType: "application/json"))?.reason == .unsupportedContentType)
        #expect((try? account.verify(post(full, contentType: nil)))?.orderRef == "ORD-1")
        #expect((try? account.verify(post(full, contentType: "application/x-www-form-urlencoded; charset=UTF-8")))?.orderRef == "ORD-1")
        let malformed = RawRequest(target: "/", headers: [], body: Array("MerchantCode=%G1".utf8))
        #expect(rejection(account, malformed)?.reason == .malformedBody)
    }

    @Test func rotatedKeys() throws {
        let vector = Self.vectors[0]
        let account = IPay88(merchantCode: "KH00001", merchantKeys: ["old", "Apple88KEY"], algorithm: .sha1)
        let notification = try account.verify(post(pairs(vector.fields, signature: vector.expected)))
        #expect(notification.detail["secret"] == "2 of 2")
        #expect(notification.detail["signature"] == nil)
    }

    // MARK: Answers and config

    @Test func answers() {
        #expect(IPay88.acknowledgement == .text(200, "RECEIVEOK"))
        #expect(IPay88.acknowledgement.body == Array("RECEIVEOK".utf8))
        let rejected = IPay88.answer(for: Rejection(.badSignature, "x"))
        #expect(rejected.status == 400)
        #expect(rejected.body != IPay88.acknowledgement.body)
        #expect(!rejected.body.isEmpty && rejected.body.count < 40)
        #expect(IPay88.answer(for: Rejection(.badAmount, "x")).status == 400)
    }

    static func settings(_ signature: String?, code: String? = "KH00001", keys: [String] = ["Apple88KEY"]) -> AccountSettings {
        var settings = AccountSettings(provider: "ipay88", account: "kh", keyPath: "providers.ipay88[1]")
        settings.strings["merchant_code"] = code
        settings.strings["signature"] = signature
        if !keys.isEmpty { settings.lists["merchant_key"] = keys }
        return settings
    }

    @Test func config() throws {
        for (setting, shown) in [(nil, "auto"), ("auto", "auto"), ("sha1", "sha1"), ("sha256", "sha256"), ("hmac-sha512", "hmac-sha512")] {
            let account = try IPay88(settings: Self.settings(setting))
            #expect(account.summary.first { $0.key == "signature" }?.value == shown)
            #expect(!account.summary.contains { $0.value.contains("Apple88KEY") })
        }
        for bad in ["md5", "SHA1", "", "hmac-sha256"] {
            #expect(configErrorKey { () throws(AccountConfigError) in try IPay88(settings: Self.settings(bad)) } == "providers.ipay88[1].signature", "\(bad)")
        }
        #expect(configErrorKey { () throws(AccountConfigError) in try IPay88(settings: Self.settings(nil, code: nil)) } == "providers.ipay88[1].merchant_code")
        #expect(configErrorKey { () throws(AccountConfigError) in try IPay88(settings: Self.settings(nil, keys: [])) } == "providers.ipay88[1].merchant_key")
        #expect(configErrorKey { () throws(AccountConfigError) in try IPay88(settings: Self.settings(nil, keys: ["a", ""])) } == "providers.ipay88[1].merchant_key")
        // A configured sha256 account refuses the sha1 vector.
        let sha256 = try IPay88(settings: Self.settings("sha256"))
        #expect(rejection(sha256, post(pairs(Self.cambodia, signature: Self.vectors[0].expected)))?.reason == .badSignature)
    }

    // MARK: Simulation

    @Test(arguments: [IPay88.Algorithm.sha1, .sha256, .hmacSHA512, nil])
    func simulatedRequestRoundTrips(algorithm: IPay88.Algorithm?) throws {
        let account = IPay88(merchantCode: "M00003", merchantKeys: ["first key", "second"], algorithm: algorithm)
        let spec = SimulationSpec(
            orderRef: "ORD 7/ü&x", status: "1", amount: Money(minor: 127_899, currency: "MYR"),
            path: "/ipn/ipay88", uniqueID: "T-sim-1", time: "2024-05-01T10:00:00Z"
        )
        let request = try account.simulatedRequest(spec)
        let form = try FormBody.parse(request.body)
        #expect(try form.value("Amount") == "1278.99")
        #expect(try form.value("MerchantCode") == "M00003")
        let notification = try account.verify(request)
        #expect(notification.orderRef == spec.orderRef)
        #expect(notification.amount == spec.amount)
        #expect(notification.effect == .transition(.paid))
        #expect(notification.dedupKey == "T-sim-1|1")
        #expect(notification.detail["signature_form"] == "canonical")
        #expect(notification.detail["secret"] == "1 of 2")
        #expect(rejection(IPay88(merchantCode: "M00003", merchantKeys: ["second"]), request)?.reason == .badSignature)
        #expect(rejection(IPay88(merchantCode: "M00004", merchantKeys: ["first key"]), request)?.reason == .merchantMismatch)
    }

    // MARK: Properties

    /// `minor` as iPay88 posts it: two decimals, thousands separators when `grouped`.
    static func amountText(_ minor: Int64, grouped: Bool) -> String {
        let integer = String(minor / 100)
        let fraction = String(minor % 100)
        var digits = integer
        if grouped {
            var groups: [Substring] = []
            var rest = Substring(integer)
            while rest.count > 3 {
                groups.insert(rest.suffix(3), at: 0)
                rest = rest.dropLast(3)
            }
            groups.insert(rest, at: 0)
            digits = groups.joined(separator: ",")
        }
        return digits + "." + (fraction.count == 1 ? "0" + fraction : fraction)
    }

    /// The post's decoded content as any correct verifier must see it: names without case,
    /// a hex signature without case. Nil when the body does not parse.
    static func content(_ body: [UInt8], hexSignature: Bool) -> [String: String]? {
        guard let form = try? FormBody.parse(body, caseInsensitiveNames: true) else { return nil }
        var values = Dictionary(uniqueKeysWithValues: form.fields.map { ($0.name.lowercased(), $0.value) })
        if hexSignature { values["signature"] = values["signature"]?.lowercased() }
        return values
    }

    static let propertyCases: [(UInt64, IPay88.Algorithm, Bool)] = [
        (0x1BA7_0001, .sha1, false), (0x1BA7_0002, .sha256, false), (0x1BA7_0003, .hmacSHA512, false),
        (0x1BA7_0004, .sha1, true), (0x1BA7_0005, .sha256, true), (0x1BA7_0006, .hmacSHA512, true),
    ]

    @Test(arguments: propertyCases)
    func signVerifyAndSingleByteMutations(seed: UInt64, algorithm: IPay88.Algorithm, auto: Bool) throws {
        var rng = SplitMix64(seed: seed)
        var equivalentMutations = 0
        for iteration in 0..<200 {
            let key = rng.printable(length: 1 + Int(rng.next() % 32))
            let minor = Int64(rng.next() % 1_000_000_000)
            let fields = IPay88.SignedFields(
                merchantCode: "M" + String(rng.next() % 100_000),
                paymentID: String(rng.next() % 300),
                refNo: "R" + rng.printable(length: Int(rng.next() % 20)),
                amount: Self.amountText(minor, grouped: rng.next() % 2 == 0),
                currency: ["MYR", "PHP", "KHR", "USD", "IDR"][Int(rng.next() % 5)],
                status: ["1", "0", "6"][Int(rng.next() % 3)]
            )
            let account = IPay88(merchantCode: fields.merchantCode, merchantKeys: [key], algorithm: auto ? nil : algorithm)
            let signature = IPay88.signature(fields, merchantKey: key, algorithm: algorithm)
            let body = FormBody.encode(pairs(fields, signature: signature))
            let request = { (body: [UInt8]) in RawRequest(target: "/ipn/ipay88", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: body) }

            let original = try account.verify(request(body))
            #expect(original.orderRef == fields.refNo)
            #expect(original.amount == Money(minor: minor, currency: fields.currency))
            #expect(original.detail["signature_form"] == "canonical")

            let wrongKey = IPay88(merchantCode: fields.merchantCode, merchantKeys: [key + "!"], algorithm: algorithm)
            #expect(rejection(wrongKey, request(body))?.reason == .badSignature, "iteration \(iteration): other key")

            // Any one changed body byte: accepted only when the decoded content is unchanged.
            let hex = algorithm != .sha1
            let (mutated, index) = rng.mutatingOneByte(body)
            let same = Self.content(mutated, hexSignature: hex).map { $0 == Self.content(body, hexSignature: hex) } ?? false
            do {
                let result = try account.verify(request(mutated))
                #expect(same, "iteration \(iteration): mutation at \(index) verified")
                #expect(result == original)
                equivalentMutations += 1
            } catch {
                #expect(!same, "iteration \(iteration): equivalent mutation at \(index) rejected: \(error)")
            }

            // Any one changed signature byte: only a hex letter's case is the same signature.
            let (mutatedSignature, _) = rng.mutatingOneByte(Array(signature.utf8))
            let newSignature = String(decoding: mutatedSignature, as: UTF8.self)
            let resigned = request(FormBody.encode(pairs(fields, signature: newSignature)))
            if hex && newSignature.lowercased() == signature {
                #expect(try account.verify(resigned) == original)
            } else {
                #expect(rejection(account, resigned) != nil, "iteration \(iteration): signature \(newSignature)")
            }
        }
        #expect(equivalentMutations < 30)
    }
}

func configErrorKey(_ body: () throws(AccountConfigError) -> Any) -> String? {
    do {
        _ = try body()
        return nil
    } catch {
        return error.key
    }
}
