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

import AsyncHTTPClient
import Foundation
import IPNCore
import Testing

/// providers.md's vectors, byte for byte, through a real server into a real SQLite file (the
/// Unlimint vector has its own suite).
@Suite("Provider vectors end to end over HTTP")
struct VectorsHTTPTests {
    @Test("Citcon's UPI example: acknowledged with exactly ok, the order authorized at 1.00 USD")
    func citconUPI() async throws {
        let daemon = try await TestDaemon.start()
        let body = Fixture.bytes("citcon-upi.json")
        let answer = try await daemon.post("/ipn/citcon", body: body, headers: [("Content-Type", "application/json")])
        try daemon.expectApplied(answer, acknowledgement: "ok", contentType: "text/plain",
                                 provider: "citcon", orderRef: "reference132", state: "authorized", amountMinor: 100)
        #expect(try daemon.verdicts() == ["applied"])
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE dedup_key = '84571d30e61711eba6a94911fce35a55|charge|authorized'") == 1)
        // One byte of the body changed: 400, the signature reject body, stored as rejected.
        var changed = body
        changed[changed.count / 2] ^= 0x01
        let forged = try await daemon.post("/ipn/citcon", body: changed, headers: [("Content-Type", "application/json")])
        #expect(forged.status == 400)
        #expect(forged.text == "invalid signature")
        #expect(try daemon.verdicts() == ["applied", "rejected"])
        try await daemon.stop()
    }

    @Test("Alipay's notifyPayment vector: acknowledged with the exact SUCCESS JSON, paid at 42.00 SGD; another path fails")
    func alipay() async throws {
        let daemon = try await TestDaemon.start()
        let body = Fixture.bytes("alipay-notify-payment.json")
        let signature = String(decoding: Fixture.bytes("alipay-notify-payment.signature-header"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let headers = [
            ("Content-Type", "application/json; charset=UTF-8"), ("client-id", TestDaemon.alipayClientID),
            ("request-time", "2026-11-21T04:01:02Z"), ("signature", signature),
        ]
        let answer = try await daemon.post("/ipn/alipay", body: body, headers: headers)
        try daemon.expectApplied(answer, acknowledgement: #"{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#,
                                 contentType: "application/json",
                                 provider: "alipay", orderRef: "PAY_20261121000001", state: "paid", amountMinor: 4200)
        // The signature covers the path: the same request to another account's path fails.
        let elsewhere = try await daemon.post("/ipn/alipay/default", body: body, headers: headers)
        #expect(elsewhere.status != 200)
        #expect(try daemon.verdicts() == ["applied", "rejected"])
        try await daemon.stop()
    }

    @Test("Juspay's ORDER_SUCCEEDED sample: acknowledged with exactly OK, paid at 600.00 INR; no credentials is 401")
    func juspay() async throws {
        let daemon = try await TestDaemon.start()
        let body = Fixture.bytes("juspay-order-succeeded.json")
        let credentials = Data("\(TestDaemon.juspayUsername):\(TestDaemon.juspayPassword)".utf8).base64EncodedString()
        let answer = try await daemon.post("/ipn/juspay", body: body,
                                           headers: [("Content-Type", "application/json"), ("Authorization", "Basic \(credentials)")])
        try daemon.expectApplied(answer, acknowledgement: "OK", contentType: "text/plain",
                                 provider: "juspay", orderRef: "ORD-1001", state: "paid", amountMinor: 60000)
        let anonymous = try await daemon.post("/ipn/juspay", body: body, headers: [("Content-Type", "application/json")])
        #expect(anonymous.status == 401)
        #expect(anonymous.headers["WWW-Authenticate"] == [#"Basic realm="ipnd""#])
        #expect(try daemon.verdicts() == ["applied", "rejected"])
        try await daemon.stop()
    }
}
