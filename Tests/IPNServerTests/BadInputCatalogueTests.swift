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
import GRDB
import IPNCore
import Testing

/// Authentic-looking requests for one provider: bodies built the way the provider builds them and
/// headers that authenticate them, so that a bad input is refused for being bad, not merely for
/// lacking a signature.
struct Specimen: Sendable, CustomStringConvertible {
    let provider: String
    var description: String { provider }

    static let all = ["citcon", "ipay88", "alipay", "unlimint", "juspay"].map(Specimen.init)

    var path: String { "/ipn/\(provider)" }
    var isForm: Bool { provider == "ipay88" }
    var contentType: String { isForm ? "application/x-www-form-urlencoded" : "application/json" }
    /// The amount's text in a good notification (JSON text; iPay88 form text).
    var goodAmount: String {
        switch provider {
        case "citcon": "1000"
        case "ipay88": "1,278.99"
        case "alipay": #""4200""#
        case "juspay": "600.00"
        default: "6.03"
        }
    }

    /// A notification body for `order` (raw bytes, spliced in as they are) and `amount` (JSON
    /// text, or form text for iPay88). Citcon and iPay88 carry their signature in the body: it
    /// is computed over the decoded values, as the provider computes it.
    func body(order: [UInt8], amount: String? = nil, status: String? = nil) -> [UInt8] {
        let amount = amount ?? goodAmount
        let orderText = String(decoding: order, as: UTF8.self)
        switch provider {
        case "citcon":
            let status = status ?? "success"
            let fields = "id,transaction_type,reference,amount,currency,status"
            let signingAmount = amount.hasPrefix("\"") ? String(amount.dropFirst().dropLast()) : amount
            let quoted = Array("\"".utf8) + order + Array("\"".utf8)
            let orderText = (try? JSONParser.parse(quoted).string) ?? orderText  // Citcon signs decoded strings
            let sign = Citcon.signature(
                ["id": "C-1", "transaction_type": "charge", "reference": orderText, "amount": signingAmount, "currency": "USD",
                 "status": status, "fields": fields],
                generation: .upi, secret: TestDaemon.citconSecret)
            return Array(#"{"id":"C-1","transaction_type":"charge","reference":""#.utf8) + order
                + Array(#"","amount":\#(amount),"currency":"USD","status":"\#(status)","fields":"\#(fields)","sign":"\#(sign)"}"#.utf8)
        case "ipay88":
            let status = status ?? "1"
            let decodedOrder = (try? FormBody.decodeComponent(order)) ?? orderText
            let fields = IPay88.SignedFields(merchantCode: TestDaemon.ipay88Code, paymentID: "2", refNo: decodedOrder, amount: amount,
                                             currency: "MYR", status: status)
            let signature = IPay88.signature(fields, merchantKey: TestDaemon.ipay88Key, algorithm: .sha256)
            return Array("MerchantCode=\(TestDaemon.ipay88Code)&PaymentId=2&RefNo=".utf8) + order
                + FormBody.encode([("Amount", amount), ("Currency", "MYR"), ("TransId", "T-1"), ("Status", status),
                                   ("Signature", signature)]).withLeading("&")
        case "alipay":
            let status = status ?? "S"
            return Array(#"{"notifyType":"PAYMENT_RESULT","result":{"resultCode":"SUCCESS","resultStatus":"\#(status)","resultMessage":"success"},"paymentRequestId":""#.utf8)
                + order + Array(#"","paymentId":"PAY-1","paymentAmount":{"currency":"SGD","value":\#(amount)}}"#.utf8)
        case "juspay":
            let status = status ?? "CHARGED"
            return Array(#"{"id":"evt_1","event_name":"ORDER_SUCCEEDED","content":{"order":{"order_id":""#.utf8) + order
                + Array(#"","status":"\#(status)","amount":\#(amount),"currency":"INR"}}}"#.utf8)
        default:
            let status = status ?? "COMPLETED"
            return Array(#"{"callback_time":"2026-11-21T09:30:06.828Z","merchant_order":{"id":""#.utf8) + order
                + Array(#""},"payment_data":{"id":"P-1","status":"\#(status)","amount":\#(amount),"currency":"USD"}}"#.utf8)
        }
    }

    func body(order: String = "BAD-1", amount: String? = nil) -> [UInt8] { body(order: Array(order.utf8), amount: amount) }

    /// Headers that authenticate `body` (the signature header, credentials), with `contentType`.
    func headers(for body: [UInt8], contentType: String? = nil) -> [(String, String)] {
        var headers = [("Content-Type", contentType ?? self.contentType)]
        switch provider {
        case "unlimint":
            headers.append(("Signature", Unlimint.signature(body: body, secret: TestDaemon.unlimintSecret)))
        case "juspay":
            headers.append(("Authorization", Juspay.authorization(username: TestDaemon.juspayUsername, password: TestDaemon.juspayPassword)))
        case "alipay":
            let time = "2026-11-21T05:00:00Z"
            headers += [("client-id", TestDaemon.alipayClientID), ("request-time", time),
                        ("signature", Alipay.signatureHeader(path: path, clientID: TestDaemon.alipayClientID, requestTime: time,
                                                             body: body, key: Self.alipayKey))]
        default:
            break
        }
        return headers
    }

    /// The header that authenticates a request, when the provider has one.
    var authenticationHeader: String? {
        switch provider {
        case "unlimint": "Signature"
        case "juspay": "Authorization"
        case "alipay": "signature"
        default: nil
        }
    }

    static let alipayKey = try! RSAPrivateKey(pem: String(contentsOfFile: TestDaemon.alipayPrivateKeyPath, encoding: .utf8))
}

extension [UInt8] {
    fileprivate func withLeading(_ separator: String) -> [UInt8] { Array(separator.utf8) + self }
}

/// One entry of the catalogue: the raw request and what ipnd must make of it.
struct BadInput: Sendable {
    enum Outcome: Sendable {
        /// A 4xx, stored once as `rejected` with one of these reasons.
        case rejected(status: Int, reasons: Set<String>)
        /// A 4xx from the HTTP layer before any route: nothing stored (unparseable HTTP, or over the body limit).
        case refusedUnstored(statuses: Set<Int>)
    }

    let name: String
    let request: [UInt8]
    let outcome: Outcome
    var timeout: Double = 15
}

@Suite("Bad-input catalogue over real HTTP for every provider (issue 7)")
struct BadInputCatalogueTests {
    static let maxBody = 262_144
    static let serverYAML = "  max_body_bytes: \(maxBody)\n  request_timeout_seconds: 2"

    static func catalogue(_ specimen: Specimen) -> [BadInput] {
        let path = specimen.path
        func signed(_ body: [UInt8], contentType: String? = nil) -> [UInt8] {
            RawHTTP.request(path, headers: specimen.headers(for: body, contentType: contentType), body: body)
        }
        let malformed: Set<String> = ["malformed_body"]
        // What iPay88 makes of a body that is not a form post: no Signature field.
        let notAForm: Set<String> = specimen.isForm ? ["bad_signature"] : malformed
        let good = specimen.body()
        var cases: [BadInput] = []

        // iPay88's half may end inside a %2C escape.
        cases.append(BadInput(name: "truncated body", request: signed(Array(good.prefix(good.count / 2))),
                              outcome: .rejected(status: 400, reasons: notAForm.union(specimen.isForm ? malformed : []))))
        cases.append(BadInput(name: "invalid JSON", request: signed(Array(#"{"id": "x",, }"#.utf8)),
                              outcome: .rejected(status: 400, reasons: notAForm)))
        cases.append(BadInput(name: "invalid UTF-8 in the order reference", request: signed(specimen.body(order: [0x42, 0xFF, 0xFE, 0x43])),
                              outcome: .rejected(status: 400, reasons: malformed)))
        cases.append(BadInput(name: "raw NUL byte in the order reference", request: signed(specimen.body(order: [0x42, 0x00, 0x43])),
                              outcome: .rejected(status: 400, reasons: malformed)))
        let escapedNUL = specimen.isForm ? "B%00C" : #"B\u0000C"#
        cases.append(BadInput(name: "escaped NUL in the order reference", request: signed(specimen.body(order: escapedNUL)),
                              outcome: .rejected(status: 400, reasons: malformed)))
        cases.append(BadInput(name: "NUL bytes after the body", request: signed(good + [0, 0, 0]),
                              outcome: .rejected(status: 400, reasons: specimen.isForm ? ["malformed_body", "bad_signature"] : malformed)))
        let duplicated: [UInt8] = specimen.isForm
            ? good + Array("&Status=0".utf8)
            : Array(String(decoding: good, as: UTF8.self).replacingOccurrences(of: #""currency":"#, with: #""currency":"EUR","currency":"#).utf8)
        cases.append(BadInput(name: "duplicate keys", request: signed(duplicated), outcome: .rejected(status: 400, reasons: malformed)))
        let deep = [UInt8](repeating: UInt8(ascii: "["), count: 100_000) + [UInt8](repeating: UInt8(ascii: "]"), count: 100_000)
        cases.append(BadInput(name: "JSON nested 100,000 deep", request: signed(deep), outcome: .rejected(status: 400, reasons: notAForm)))
        for number in ["1e400", "6.03e2", "-1", "0x10"] {
            let invalidJSON = number == "0x10" && !specimen.isForm
            cases.append(BadInput(name: "amount \(number)", request: signed(specimen.body(amount: number)),
                                  outcome: .rejected(status: 400, reasons: invalidJSON ? malformed : ["bad_amount"])))
        }
        cases.append(BadInput(name: "a 200,000-byte order reference", request: signed(specimen.body(order: String(repeating: "A", count: 200_000))),
                              outcome: .rejected(status: 400, reasons: ["field_too_long"])))
        cases.append(BadInput(name: "wrong content type", request: signed(good, contentType: "text/xml"),
                              outcome: .rejected(status: 400, reasons: ["unsupported_content_type"])))
        if let header = specimen.authenticationHeader {
            let headers = specimen.headers(for: good).filter { $0.0 != header }
            cases.append(BadInput(name: "missing \(header) header", request: RawHTTP.request(path, headers: headers, body: good),
                                  outcome: .rejected(status: specimen.provider == "juspay" ? 401 : 400, reasons: ["missing_header"])))
            let repeated = specimen.headers(for: good) + specimen.headers(for: good).filter { $0.0 == header }
            cases.append(BadInput(name: "repeated \(header) header", request: RawHTTP.request(path, headers: repeated, body: good),
                                  outcome: .rejected(status: specimen.provider == "juspay" ? 401 : 400, reasons: ["repeated_header"])))
        }
        let twoTypes = specimen.headers(for: good) + [("Content-Type", "application/x-www-form-urlencoded")]
        cases.append(BadInput(name: "repeated Content-Type header", request: RawHTTP.request(path, headers: twoTypes, body: good),
                              outcome: .rejected(status: 400, reasons: ["repeated_header"])))
        switch specimen.provider {
        case "ipay88":
            cases.append(BadInput(name: "malformed percent-encoding", request: signed(specimen.body(order: "B%ZZ")),
                                  outcome: .rejected(status: 400, reasons: malformed)))
            cases.append(BadInput(name: "truncated percent-encoding", request: signed(good + Array("&Remark=%4".utf8)),
                                  outcome: .rejected(status: 400, reasons: malformed)))
        case "citcon":
            let form = Array("id=C-1&reference=B%G1&fields=id&sign=00".utf8)
            cases.append(BadInput(name: "malformed percent-encoding", request: signed(form, contentType: "application/x-www-form-urlencoded"),
                                  outcome: .rejected(status: 400, reasons: malformed)))
        case "alipay":
            var headers = specimen.headers(for: good).filter { $0.0 != "signature" }
            headers.append(("signature", "algorithm=RSA256,keyVersion=1,signature=abc%2"))
            cases.append(BadInput(name: "malformed percent-encoding in the signature header",
                                  request: RawHTTP.request(path, headers: headers, body: good),
                                  outcome: .rejected(status: 400, reasons: ["malformed_header"])))
        default:
            cases.append(BadInput(name: "form body with malformed percent-encoding",
                                  request: signed(Array("a=%ZZ&b=%4".utf8), contentType: "application/x-www-form-urlencoded"),
                                  outcome: .rejected(status: 400, reasons: ["unsupported_content_type"])))
        }
        // The deadline (2 s) ends the wait for the 700 bytes that never come: 408, and what
        // arrived is kept.
        cases.append(BadInput(name: "body claimed longer than sent",
                              request: RawHTTP.request(path, headers: specimen.headers(for: good), body: good, contentLength: good.count + 700),
                              outcome: .rejected(status: 408, reasons: ["incomplete_body"])))
        // Only the first 20 bytes are the body; the rest is a second request, which is garbage.
        let shortBodyReasons: Set<String> = switch specimen.provider {
        case "unlimint", "alipay", "ipay88": ["bad_signature"]
        default: ["malformed_body"]
        }
        cases.append(BadInput(name: "body claimed shorter than sent",
                              request: RawHTTP.request(path, headers: specimen.headers(for: good), body: good, contentLength: 20),
                              outcome: .rejected(status: 400, reasons: shortBodyReasons)))
        let overLimit = [UInt8](repeating: UInt8(ascii: "a"), count: maxBody + 1)
        cases.append(BadInput(name: "chunked body over the limit",
                              request: RawHTTP.request(path, headers: specimen.headers(for: overLimit), body: overLimit, chunked: true),
                              outcome: .refusedUnstored(statuses: [413])))
        cases.append(BadInput(name: "Content-Length repeated with another value",
                              request: RawHTTP.request(path, headers: specimen.headers(for: good) + [("Content-Length", "\(good.count + 1)")],
                                                       body: good),
                              outcome: .refusedUnstored(statuses: [400])))
        cases.append(BadInput(name: "100 KB header",
                              request: RawHTTP.request(path, headers: specimen.headers(for: good) + [("X-Filler", String(repeating: "f", count: 100_000))],
                                                       body: good),
                              outcome: .refusedUnstored(statuses: [400, 431])))
        return cases
    }

    @Test("every bad input: a 4xx, stored as rejected with its reason within the cap, no order moved, the daemon keeps serving",
          arguments: Specimen.all)
    func catalogue(_ specimen: Specimen) async throws {
        let daemon = try await TestDaemon.start(serverYAML: Self.serverYAML)
        var stored = 0
        for input in Self.catalogue(specimen) {
            let answer = await RawHTTP.exchange(port: daemon.ports.provider, input.request, timeout: input.timeout)
            let label = "\(specimen) \(input.name): \(answer)"
            switch input.outcome {
            case .rejected(let status, let reasons):
                #expect(answer.status == status, "\(label)")
                stored += 1
                // The answer to a request whose body never completed goes out before the
                // endpoint records it: wait for the row.
                let rows = try await waitForRows(daemon, count: stored)
                try #require(rows.count == stored, "\(label): \(rows.count) rows stored, expected \(stored)")
                let row = rows[stored - 1]
                #expect(row.verdict == "rejected", "\(label)")
                #expect(reasons.contains(row.reason ?? ""), "\(label): reason \(row.reason ?? "none") (\(row.detail ?? ""))")
                #expect(row.bodyBytes <= Self.maxBody, "\(label)")
                #expect((row.detail?.utf8.count ?? 0) <= Rejection.maxDetailBytes, "\(label)")
            case .refusedUnstored(let statuses):
                #expect(answer.status.map { statuses.contains($0) } == true, "\(label)")
                try await Task.sleep(for: .milliseconds(100))
                #expect(try daemon.count("SELECT COUNT(*) FROM notifications") == stored, "\(label): stored")
            }
            #expect(try daemon.count("SELECT COUNT(*) FROM orders") == 0, "\(label): an order was created")
            #expect(try daemon.count("SELECT COUNT(*) FROM transitions") == 0, "\(label): a transition happened")
            #expect(try await daemon.get("/healthz").status == 200, "\(label): not serving")
        }
        let incomplete = try daemon.count("SELECT length(body) FROM notifications WHERE reason = 'incomplete_body'")
        #expect(incomplete == specimen.body().count, "an incomplete body keeps the bytes that arrived")

        // Still serving: a good notification is applied.
        let good = specimen.body(order: "GOOD-1")
        let answer = await RawHTTP.exchange(port: daemon.ports.provider, RawHTTP.request(specimen.path, headers: specimen.headers(for: good), body: good))
        #expect(answer.status == 200, "\(answer)")
        #expect(try daemon.orderState("GOOD-1", provider: specimen.provider) == "paid")
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE verdict != 'rejected'") == 1)
        try await daemon.stop()
    }

    struct Row {
        let verdict: String
        let reason: String?
        let detail: String?
        let bodyBytes: Int
    }

    /// The stored rows, once there are `count` of them (or after five seconds).
    private func waitForRows(_ daemon: TestDaemon, count: Int) async throws -> [Row] {
        var rows: [Row] = []
        for _ in 0..<100 {
            rows = try daemon.query { db in
                try GRDB.Row.fetchAll(db, sql: "SELECT verdict, reason, reason_detail, length(body) AS size FROM notifications ORDER BY id")
                    .map { Row(verdict: $0["verdict"], reason: $0["reason"], detail: $0["reason_detail"], bodyBytes: $0["size"]) }
            }
            if rows.count >= count { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return rows
    }
}
