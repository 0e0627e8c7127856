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

/// What the libFuzzer targets in `Fuzz/` run on every input, kept here so that `swift test`
/// runs the same code over every input a fuzzer ever crashed on (`Fuzz/regressions/`).
///
/// Each provider target first verifies the request as it came (nearly always a rejection: the
/// fuzzer cannot forge a signature), then runs what lies behind the signature check on the same
/// bytes (the parsers and the status mapping), since that is where hostile but authentic-looking
/// input would hurt. Every outcome is checked against invariants that must hold for any input;
/// a violated invariant is a crash, so the fuzzer reports it.
///
/// Only IPNCore and Foundation may be used here: the fuzz build compiles this file on its own.
enum FuzzHarness {
    // MARK: Accounts (test secrets; the same as the test vectors')

    static let unlimintSecret = "pzQf529Wa0AV"
    static let citconSecret = "braintree"
    static let citconToken = "1234567890abcdef1234567890abcdeq"
    static let ipay88Code = "KH00001"
    static let ipay88Key = "Apple88KEY"
    static let alipayClientID = "SANDBOX_5YTEST0000000001"
    static let alipayPublicKey = """
        MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAnlGbAxlV7/TO1Z/b0mPt7IRYQwPD2Ho+oc1daoyFlN3x3a5Y9WiszCasod6mUFIHHublne4BeCwfY9vbBRBDsGXuN9c6WQirb636uQ2bXWG1YyWHPNavT3VBSDZVT4M8eBxg6AnRM74e8Aq9czi5dyHruvGJ7MU5i32dinzu8WVGf5aaEDb/w+j02/0WA3V5ceH00zi/6G4XT9qqAQMI5AdVbJiUCe/kzAmqqPTvq/X/maDB//rSFKnsDBR101/3l9UG+YyTAuLv/bDHazZfMQ/bVgvNH7GYCfSpVxCz7Ke4rx7PUjvX404Idvt7jkqoZEoNn1nA2yZ+Y0bDaorz5QIDAQAB
        """
    static let juspayUsername = "fuzz-user"
    static let juspayPassword = "fuzz:password"

    static let unlimint = Unlimint(secrets: ["old-rotated-out", unlimintSecret])
    static let citcon = Citcon(apiSecrets: [citconSecret], apiTokens: [citconToken])
    static let ipay88 = IPay88(merchantCode: ipay88Code, merchantKeys: [ipay88Key], algorithm: nil)
    static let alipay = Alipay(clientID: alipayClientID, publicKeys: [try! RSAPublicKey(derOrPEM: alipayPublicKey)])
    static let juspay = Juspay(usernames: [juspayUsername], passwords: [juspayPassword])

    /// Longest reason detail a rejection may carry: it is stored and logged with every rejected
    /// request, so no input may make it grow with the input.
    static let maxDetailBytes = Rejection.maxDetailBytes

    // MARK: Targets

    static func unlimint(_ data: [UInt8]) {
        let request = FuzzRequest.parse(data, defaultTarget: "/ipn/unlimint")
        check(unlimint.verifyRequest, request)
        // The same request signed correctly: every parser and mapping behind the signature.
        let signed = request.replacingHeader("Signature", with: Unlimint.signature(body: request.body, secret: unlimintSecret))
        if let notification = check(unlimint.verifyRequest, signed) {
            invariant(notification.orderRef?.isEmpty == false, "an Unlimint notification names its merchant order")
        }
    }

    static func juspay(_ data: [UInt8]) {
        let request = FuzzRequest.parse(data, defaultTarget: "/ipn/juspay")
        check(juspay.verifyRequest, request)
        if let header = request.headerValues("Authorization").first {
            _ = try? Juspay.BasicCredentials(parsing: header)
        }
        let authorized = request.replacingHeader(
            "Authorization", with: Juspay.authorization(username: juspayUsername, password: juspayPassword))
        if let notification = check(juspay.verifyRequest, authorized) {
            invariant(!notification.dedupKey.isEmpty, "a Juspay event id is never empty")
        }
    }

    static func citcon(_ data: [UInt8]) {
        let request = FuzzRequest.parse(data, defaultTarget: "/ipn/citcon")
        check(citcon.verifyRequest, request)
        // Behind the signature: the body as Citcon signs it, then both generations' mappings.
        guard let body = try? CitconBody.parse(request) else { return }
        let signed = CitconSignedFields(body: body, signedKeys: Citcon.signedKeys(fields: body.values["fields"] ?? ""))
        for generation in Citcon.Generation.allCases {
            let secret = generation == .upi ? citconSecret : citconToken
            let sign = Citcon.signature(body.values, generation: generation, secret: secret)
            invariant(sign.utf8.count == (generation == .upi ? 64 : 32), "Citcon signs with lowercase hex")
            let map = generation == .upi ? CitconMapping.upi : CitconMapping.chop
            check({ _ throws(Rejection) in try map(signed) }, request)
        }
    }

    static func ipay88(_ data: [UInt8]) {
        let request = FuzzRequest.parse(data, defaultTarget: "/ipn/ipay88")
        check(ipay88.verifyRequest, request)
        guard let form = try? FormBody.parse(request.body, caseInsensitiveNames: true, undecodableValues: .keep) else { return }
        _ = IPay88.Algorithm.byShape(of: ((try? form.value("Signature")) ?? nil) ?? "")
        guard let posted = try? IPay88Post(form) else { return }
        // Behind the signature: every algorithm's signature of these fields must verify as that
        // algorithm, and only as that one.
        for algorithm in IPay88.Algorithm.allCases {
            let signature = IPay88.signature(posted.signed, merchantKey: ipay88Key, algorithm: algorithm)
            invariant(IPay88.Algorithm.byShape(of: signature) == algorithm, "an \(algorithm) signature has its shape")
            let message = Array(IPay88.signingString(posted.signed, merchantKey: ipay88Key).utf8)
            invariant(IPay88.matches(signature, message: message, key: ipay88Key, algorithm: algorithm), "own signature verifies")
        }
        check({ _ throws(Rejection) in try posted.notification() }, request)
    }

    static func alipay(_ data: [UInt8]) {
        let request = FuzzRequest.parse(data, defaultTarget: "/ipn/alipay")
        check(alipay.verifyRequest, request)
        for value in request.headerValues("signature") {
            _ = try? Alipay.SignatureHeader(parsing: value)
        }
        // Behind the signature (RSA cannot be forged): the body's mapping.
        guard let object = try? JSONParser.parseObject(request.body) else { return }
        check({ _ throws(Rejection) in try Alipay.notification(from: object) }, request)
    }

    /// Input: the currency code, a newline, then the amount text.
    static func amount(_ data: [UInt8]) {
        let newline = data.firstIndex(of: UInt8(ascii: "\n")) ?? data.endIndex
        let currency = String(decoding: data[..<newline], as: UTF8.self)
        let text = String(decoding: data[min(newline + 1, data.endIndex)...], as: UTF8.self)
        AmountOracle.check(text: text, currency: currency)
    }

    // MARK: Invariants

    /// Runs one verification; returns the notification when it verified. Either way the outcome
    /// must be well formed: a rejection with a short detail, or a notification whose stored form
    /// round-trips (unlinked notifications are stored as JSON and applied later).
    @discardableResult
    static func check(
        _ verify: (RawRequest) throws(Rejection) -> VerifiedNotification,
        _ request: RawRequest
    ) -> VerifiedNotification? {
        do {
            let notification = try verify(request)
            invariant(notification.amount.map { $0.minor >= 0 } ?? true, "amounts are never negative")
            invariant(notification.amount.map { Currency.isKnown($0.currency) } ?? true, "amounts are in ISO 4217 currencies")
            invariant(notification.orderRef != nil || notification.link != nil || notification.kind != .payment,
                      "a payment names its order")
            let encoded = try! JSONEncoder().encode(notification)
            let decoded = try? JSONDecoder().decode(VerifiedNotification.self, from: encoded)
            invariant(decoded == notification, "a notification survives its stored JSON form")
            return notification
        } catch {
            invariant(error.detail.utf8.count <= maxDetailBytes,
                      "rejection detail of \(error.detail.utf8.count) bytes for a \(request.body.count)-byte body")
            invariant((400..<500).contains(error.reason.httpStatus), "a rejection is answered 4xx, never as accepted or as a retry")
            return nil
        }
    }

    static func invariant(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
        if !condition() { fatalError("fuzz invariant violated: \(message())") }
    }
}

/// The fuzzers' request framing: header lines (`Name: value`; a line starting with `/` is the
/// request target), an empty line, then the body. Without an empty line it is all body.
enum FuzzRequest {
    static func parse(_ data: [UInt8], defaultTarget: String) -> RawRequest {
        var head: ArraySlice<UInt8> = []
        var body = data[...]
        if let split = firstBlankLine(data) {
            head = data[..<split]
            body = data[(split + 2)...]
        }
        var target = defaultTarget
        var headers: [(name: String, value: String)] = []
        for line in head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            if line.first == UInt8(ascii: "/") {
                target = String(decoding: line, as: UTF8.self)
                continue
            }
            let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
            var valueStart = colon < line.endIndex ? colon + 1 : colon
            if valueStart < line.endIndex, line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
            headers.append((String(decoding: line[..<colon], as: UTF8.self), String(decoding: line[valueStart...], as: UTF8.self)))
        }
        return RawRequest(target: target, headers: headers, body: Array(body), clientIP: "203.0.113.7")
    }

    private static func firstBlankLine(_ data: [UInt8]) -> Int? {
        guard data.count >= 2 else { return nil }
        for index in 0..<(data.count - 1) where data[index] == UInt8(ascii: "\n") && data[index + 1] == UInt8(ascii: "\n") {
            return index
        }
        return nil
    }
}

extension RawRequest {
    /// The request with every `name` header replaced by one carrying `value`.
    func replacingHeader(_ name: String, with value: String) -> RawRequest {
        var copy = self
        copy.headers = headers.filter { !$0.name.caseInsensitiveEquals(name) } + [(name, value)]
        return copy
    }
}

/// An independent statement of what the amount parsers accept, checked against them.
enum AmountOracle {
    static func check(text: String, currency: String) {
        let exponent = try? Currency.exponent(of: currency)
        for separators in [false, true] {
            let parsed = Result { () throws(AmountError) in try Money.parseMajor(text, currency: currency, thousandsSeparators: separators) }
            let expected = exponent.flatMap { expectedMajor(text, exponent: $0, separators: separators) }
            switch (parsed, expected) {
            case (.success(let money), .some(let minor)):
                FuzzHarness.invariant(money.minor == minor && money.currency == currency, "\(text) is \(minor) minor units, not \(money.minor)")
                // Formatting and parsing again gives the same amount.
                let again = try? Money.parseMajor(money.decimal, currency: currency)
                FuzzHarness.invariant(again == money, "\(money.decimal) parses back to \(money.minor)")
            case (.failure(let error), .none):
                FuzzHarness.invariant(error.description.utf8.count <= FuzzHarness.maxDetailBytes, "short amount errors")
            case (.success(let money), .none):
                FuzzHarness.invariant(false, "\"\(text)\" \(currency) must be refused, was parsed as \(money.minor)")
            case (.failure(let error), .some(let minor)):
                FuzzHarness.invariant(false, "\"\(text)\" \(currency) must be \(minor), was refused: \(error)")
            }
        }
        let minor = try? Money.parseMinor(text, currency: currency)
        let expectedMinor: Int64? = exponent == nil ? nil : plainInteger(Array(text.utf8))
        FuzzHarness.invariant(minor?.minor == expectedMinor, "minor-unit text \"\(text)\"")
        if let minor {
            FuzzHarness.invariant((try? Money.parseMajor(minor.decimal, currency: currency)) == minor,
                                  "\(minor.decimal) \(currency), the decimal text of \(minor.minor), parses back to it")
        }
    }

    /// `0` or digits without a leading zero, within Int64.
    static func plainInteger(_ bytes: [UInt8]) -> Int64? {
        guard !bytes.isEmpty, bytes.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        guard bytes.count == 1 || bytes[0] != 0x30 else { return nil }
        return Int64(String(decoding: bytes, as: UTF8.self))
    }

    /// What `text` is in minor units by the rules of providers.md: plain decimal digits, at most
    /// `exponent` decimals, optionally grouped by commas in threes; anything else is refused.
    static func expectedMajor(_ text: String, exponent: Int, separators: Bool) -> Int64? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count == 2 ? parts[1] : nil
        if let fraction {
            guard !fraction.isEmpty, fraction.utf8.allSatisfy({ (0x30...0x39).contains($0) }), fraction.utf8.count <= exponent else {
                return nil
            }
        }
        var digits = ""
        if separators, whole.contains(",") {
            let groups = whole.split(separator: ",", omittingEmptySubsequences: false)
            guard (1...3).contains(groups[0].count), groups.dropFirst().allSatisfy({ $0.count == 3 }),
                groups.allSatisfy({ $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }), groups[0].first != "0"
            else { return nil }
            digits = groups.joined()
        } else {
            let bytes = Array(whole.utf8)
            guard !bytes.isEmpty, bytes.allSatisfy({ (0x30...0x39).contains($0) }), bytes.count == 1 || bytes[0] != 0x30 else {
                return nil
            }
            digits = String(whole)
        }
        let padded = digits + (fraction.map(String.init) ?? "") + String(repeating: "0", count: exponent - (fraction?.utf8.count ?? 0))
        let trimmed = padded.drop { $0 == "0" }
        return trimmed.isEmpty ? 0 : Int64(trimmed)
    }
}
