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
import IPNCore
import Testing

/// What each provider must see, written out from providers.md (not from ipnd's own constants).
struct ProviderExpectations: Sendable, CustomStringConvertible {
    let name: String
    let paidStatus: String
    let unknownStatus: String
    let ackContentType: String
    let ackBody: String
    let rejectStatus: Int
    let rejectBody: String?
    let amount: Money

    var description: String { name }

    static let all: [ProviderExpectations] = [
        .init(name: "citcon", paidStatus: "success", unknownStatus: "mystery_state", ackContentType: "text/plain", ackBody: "ok",
              rejectStatus: 400, rejectBody: "invalid signature", amount: Money(minor: 1000, currency: "USD")),
        .init(name: "ipay88", paidStatus: "1", unknownStatus: "9", ackContentType: "text/plain", ackBody: "RECEIVEOK",
              rejectStatus: 400, rejectBody: nil, amount: Money(minor: 127_899, currency: "MYR")),
        .init(name: "alipay", paidStatus: "S", unknownStatus: "Q", ackContentType: "application/json",
              ackBody: #"{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#,
              rejectStatus: 400,
              rejectBody: #"{"result":{"resultCode":"INVALID_SIGNATURE","resultStatus":"F","resultMessage":"invalid signature"}}"#,
              amount: Money(minor: 4200, currency: "SGD")),
        .init(name: "unlimint", paidStatus: "COMPLETED", unknownStatus: "MYSTERY_STATE", ackContentType: "text/plain", ackBody: "OK",
              rejectStatus: 400, rejectBody: "invalid signature", amount: Money(minor: 603, currency: "USD")),
        .init(name: "juspay", paidStatus: "CHARGED", unknownStatus: "MYSTERY_STATE", ackContentType: "text/plain", ackBody: "OK",
              rejectStatus: 401, rejectBody: nil, amount: Money(minor: 60000, currency: "INR")),
    ]
}

extension TestDaemon {
    /// A notification built by the account's own signer (`ipnd simulate` uses the same).
    func simulated(_ provider: String, order: String, status: String, amount: Money, uid: String) throws -> RawRequest {
        let account = try #require(config.account(provider: provider, name: "default"))
        return try account.provider.simulatedRequest(SimulationSpec(
            orderRef: order, status: status, amount: amount, path: "/ipn/\(provider)", uniqueID: uid,
            time: "2026-11-21T04:01:02Z"))
    }

    func post(_ request: RawRequest) async throws -> Answer {
        try await post(request.target, body: request.body, headers: request.headers.map { ($0.name, $0.value) })
    }
}

/// The repository, found from this file.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

@Suite("Every provider over real HTTP (issue 3)")
struct ProviderHTTPTests {
    @Test("first delivery applied with the exact ack; again duplicate with the same ack; forged rejected; unknown status acked",
          arguments: Backend.allCases, ProviderExpectations.all)
    func contract(backend: Backend, _ expected: ProviderExpectations) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        let order = "ORD-\(expected.name)-1"
        let request = try daemon.simulated(expected.name, order: order, status: expected.paidStatus, amount: expected.amount, uid: "u1")

        for round in 0..<2 {
            let answer = try await daemon.post(request)
            #expect(answer.status == 200, "round \(round): \(answer.text)")
            #expect(answer.text == expected.ackBody)
            #expect(answer.headers["Content-Type"] == [expected.ackContentType])
        }
        #expect(try daemon.verdicts(orderRef: order) == ["applied", "duplicate"])
        #expect(try daemon.orderState(order, provider: expected.name) == "paid")
        #expect(try daemon.count("SELECT amount_minor FROM orders WHERE order_ref = ?", [order]) == Int(expected.amount.minor))
        #expect(try daemon.count("SELECT COUNT(*) FROM transitions") == 1)

        // Forged: the same notification for another order without the secret.
        var forged = request
        if expected.name == "juspay" {
            forged.headers = forged.headers.map {
                $0.name == "Authorization" ? ($0.name, Juspay.authorization(username: TestDaemon.juspayUsername, password: "guess")) : $0
            }
        } else {
            forged.body = Array(String(decoding: request.body, as: UTF8.self)
                .replacingOccurrences(of: order, with: "ORD-\(expected.name)-X").utf8)
        }
        let rejected = try await daemon.post(forged)
        #expect(rejected.status == expected.rejectStatus)
        if let body = expected.rejectBody { #expect(rejected.text == body) }
        #expect(rejected.text != expected.ackBody)
        if expected.name == "juspay" {
            #expect(rejected.headers["WWW-Authenticate"] == [#"Basic realm="ipnd""#])
        }
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected' AND provider = ?", [expected.name]) == 1)
        #expect(try daemon.orderState("ORD-\(expected.name)-X", provider: expected.name) == nil)

        // Unknown status: authentic, stored and acknowledged, and it causes no transition: its
        // order is created and shows pending, with no transition yet.
        let unknownOrder = "ORD-\(expected.name)-U"
        let unknown = try daemon.simulated(expected.name, order: unknownOrder, status: expected.unknownStatus,
                                           amount: expected.amount, uid: "u2")
        let unknownAnswer = try await daemon.post(unknown)
        #expect(unknownAnswer.status == 200)
        #expect(unknownAnswer.text == expected.ackBody)
        #expect(try daemon.verdicts(orderRef: unknownOrder) == ["unknown_status"])
        #expect(try daemon.orderState(unknownOrder, provider: expected.name) == "pending")  // named, so created; nothing settled yet
        #expect(try daemon.count("""
            SELECT COUNT(*) FROM transitions t JOIN orders o ON o.id = t.order_id WHERE o.order_ref = ?
            """, [unknownOrder]) == 0)
        #expect(try daemon.count("SELECT COUNT(*) FROM transitions") == 1)
        try await daemon.stop()
    }

    @Test("a notification signed by an independent implementation of the provider's algorithm is accepted",
          arguments: Backend.allCases, ProviderExpectations.all)
    func independentlySigned(backend: Backend, _ expected: ProviderExpectations) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        let order = "IND-\(expected.name)"
        let result = try await pythonClient([
            "send", expected.name, "--url", "http://127.0.0.1:\(daemon.ports.provider)",
            "--account-json", TestDaemon.independentAccount(expected.name), "--order", order,
            "--status", expected.paidStatus, "--amount", expected.amount.decimal, "--currency", expected.amount.currency,
        ])
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.hasPrefix("200 \(expected.ackBody)"))
        #expect(try daemon.orderState(order, provider: expected.name) == "paid")
        #expect(try daemon.verdicts(orderRef: order) == ["applied"])
        try await daemon.stop()
    }

    @Test("iPay88: independently signed sha1, sha256 and hmac-sha512 notifications all verify under signature: auto",
          arguments: Backend.allCases, ["sha1", "sha256", "hmac-sha512"])
    func ipay88Modes(backend: Backend, mode: String) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        let account = #"{"merchant_code":"\#(TestDaemon.ipay88Code)","merchant_key":"\#(TestDaemon.ipay88Key)","signature":"\#(mode)"}"#
        let result = try await pythonClient([
            "send", "ipay88", "--url", "http://127.0.0.1:\(daemon.ports.provider)", "--account-json", account,
            "--order", "MODE-\(mode)", "--status", "1", "--amount", "2741.16", "--currency", "MYR",
        ])
        #expect(result.stdout == "200 RECEIVEOK\n", "\(result.stderr)")
        #expect(try daemon.count("SELECT amount_minor FROM orders WHERE order_ref = ?", ["MODE-\(mode)"]) == 274_116)
        try await daemon.stop()
    }

    @Test("two accounts sharing one merchant code are told apart by route: each verifies with its own key only", arguments: Backend.allCases)
    func accountsShareAMerchantCode(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend, providersYAML: """
            providers:
              ipay88:
                - account: shop-a
                  merchant_code: \(TestDaemon.ipay88Code)
                  merchant_key: KeyOfShopA
                - account: shop-b
                  merchant_code: \(TestDaemon.ipay88Code)
                  merchant_key: KeyOfShopB
            """)
        func send(signedWith key: String, to account: String, uid: String) async throws -> String {
            let settings = #"{"merchant_code":"\#(TestDaemon.ipay88Code)","merchant_key":"\#(key)","signature":"sha256"}"#
            return try await pythonClient([
                "send", "ipay88", "--url", "http://127.0.0.1:\(daemon.ports.provider)", "--account-json", settings,
                "--account", account, "--order", "SHARED-1", "--status", "1", "--uid", uid,
            ]).stdout
        }
        #expect(try await send(signedWith: "KeyOfShopA", to: "shop-a", uid: "a1") == "200 RECEIVEOK\n")
        #expect(try await send(signedWith: "KeyOfShopA", to: "shop-b", uid: "a2").hasPrefix("400 "))
        #expect(try await send(signedWith: "KeyOfShopB", to: "shop-b", uid: "b1") == "200 RECEIVEOK\n")
        #expect(try daemon.orderState("SHARED-1", provider: "ipay88", account: "shop-a") == "paid")
        #expect(try daemon.orderState("SHARED-1", provider: "ipay88", account: "shop-b") == "paid")
        #expect(try daemon.count("SELECT COUNT(*) FROM orders") == 2)
        #expect(try daemon.count(
            "SELECT COUNT(*) FROM notifications WHERE account = 'shop-b' AND verdict = 'rejected' AND reason = 'bad_signature'") == 1)
        try await daemon.stop()
    }

    @Test("Alipay: a refund arriving before its payment is unlinked, then linked and applied once the payment arrives", arguments: Backend.allCases)
    func alipayRefundBeforePayment(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        let key = try RSAPrivateKey(pem: String(contentsOfFile: TestDaemon.alipayPrivateKeyPath, encoding: .utf8))
        let refundBody = Array(#"{"notifyType":"REFUND_RESULT","refundRequestId":"RR-1","refundId":"R-1","paymentId":"PAY-ID-7","refundAmount":{"currency":"SGD","value":"4200"},"refundTime":"2026-11-21T13:00:00+08:00","refundStatus":"SUCCESS","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#.utf8)
        let refundAnswer = try await daemon.post("/ipn/alipay", body: refundBody, headers: alipayHeaders(refundBody, key: key))
        #expect(refundAnswer.status == 200)
        #expect(try daemon.verdicts() == ["unlinked"])

        let payment = try daemon.simulated("alipay", order: "ALI-ORDER-7", status: "S", amount: Money(minor: 4200, currency: "SGD"),
                                           uid: "PAY-ID-7")
        #expect(try await daemon.post(payment).status == 200)
        #expect(try daemon.orderState("ALI-ORDER-7", provider: "alipay") == "refunded")
        #expect(try daemon.verdicts() == ["applied", "applied"])
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE order_ref = 'ALI-ORDER-7'") == 2)
        #expect(try daemon.count("SELECT refunded_minor FROM orders WHERE order_ref = 'ALI-ORDER-7'") == 4200)
        // The refund changed the order when the payment arrived: operators see that too, in
        // the log and in the metrics, not only the refund's first verdict.
        let refundID = try daemon.count("SELECT MIN(id) FROM notifications")
        let paymentID = try daemon.count("SELECT MAX(id) FROM notifications")
        let linkedLines = daemon.logs.captured.filter { $0.contains(#"msg="waiting notification linked""#) }
        #expect(linkedLines.count == 1, "\(daemon.logs.captured)")
        for field in ["provider=alipay", "account=default", "order_ref=ALI-ORDER-7", "verdict=applied", "order_state=refunded",
                      "notification_id=\(refundID)", "linked_by=\(paymentID)"] {
            #expect(linkedLines.first?.contains(field) == true, "\(field) in \(linkedLines)")
        }
        let metrics = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        #expect(metrics.value("ipnd_notifications_total", ["provider": "alipay", "verdict": "unlinked"]) == 1)
        #expect(metrics.value("ipnd_notifications_linked_total", ["provider": "alipay", "verdict": "applied"]) == 1)
        #expect(metrics.value("ipnd_notifications_linked_total", ["provider": "alipay", "verdict": "stale"]) == 0)
        try await daemon.stop()
    }

    @Test("Alipay: a capture arriving before its (pending) payment ends linked and applied", arguments: Backend.allCases)
    func alipayCaptureBeforePayment(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        let key = try RSAPrivateKey(pem: String(contentsOfFile: TestDaemon.alipayPrivateKeyPath, encoding: .utf8))
        let captureBody = Array(#"{"notifyType":"CAPTURE_RESULT","captureRequestId":"CR-1","captureId":"C-1","paymentId":"PAY-ID-8","captureAmount":{"currency":"SGD","value":"4200"},"captureTime":"2026-11-21T13:00:00+08:00","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#.utf8)
        #expect(try await daemon.post("/ipn/alipay", body: captureBody, headers: alipayHeaders(captureBody, key: key)).status == 200)
        #expect(try daemon.verdicts() == ["unlinked"])
        let pending = try daemon.simulated("alipay", order: "ALI-ORDER-8", status: "PENDING", amount: Money(minor: 4200, currency: "SGD"),
                                           uid: "PAY-ID-8")
        #expect(try await daemon.post(pending).status == 200)
        #expect(try daemon.orderState("ALI-ORDER-8", provider: "alipay") == "paid")
        #expect(try daemon.verdicts() == ["applied", "applied"])
        try await daemon.stop()
    }

}

/// The headers Alipay signs a notification to `/ipn/alipay` with.
func alipayHeaders(_ body: [UInt8], key: RSAPrivateKey) -> [(String, String)] {
    [
        ("Content-Type", "application/json"), ("client-id", TestDaemon.alipayClientID),
        ("request-time", "2026-11-21T05:00:00Z"),
        ("signature", Alipay.signatureHeader(path: "/ipn/alipay", clientID: TestDaemon.alipayClientID,
                                             requestTime: "2026-11-21T05:00:00Z", body: body, key: key)),
    ]
}

/// Runs tools/ipn_client.py, the independent client.
func pythonClient(_ arguments: [String]) async throws -> CommandResult {
    try await runPythonTool("ipn_client.py", arguments, timeout: 60)
}

/// Runs the repository's `tools/NAME` with python3, on a thread of its own (a daemon under
/// test may be in this process and need the cooperative pool to answer).
func runPythonTool(_ name: String, _ arguments: [String], timeout: Double) async throws -> CommandResult {
    try await runProcess(
        URL(fileURLWithPath: "/usr/bin/env"),
        ["python3", repositoryRoot.appendingPathComponent("tools/\(name)").path] + arguments,
        timeout: timeout
    )
}
