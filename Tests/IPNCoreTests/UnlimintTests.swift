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

import IPNCore
import Testing

@Suite("Unlimint callbacks (providers.md section 4)")
struct UnlimintTests {
    let body = Fixture.bytes("unlimint-payment.json")
    let secret = "pzQf529Wa0AV"
    let vectorSignature =
        "626598d3465770829f83e35910f99cf897fbb25ff0e7cb0f75934c29339cf9d9a9a6d602d99b2f3e7272301b609247b43981f90d313b646b16d802de212f671a"

    private func request(_ body: [UInt8], signature: String?, contentType: String? = "application/json") -> RawRequest {
        var headers: [(name: String, value: String)] = []
        if let contentType { headers.append(("Content-Type", contentType)) }
        if let signature { headers.append(("Signature", signature)) }
        return RawRequest(target: "/ipn/unlimint", headers: headers, body: body)
    }

    private func rejection(_ provider: Unlimint, _ request: RawRequest) -> RejectReason? {
        do {
            _ = try provider.verify(request)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test("the vector: signature, order, kind, status, amount, dedup key")
    func vector() throws {
        #expect(body.count == 482)
        #expect(Unlimint.signature(body: body, secret: secret) == vectorSignature)
        let notification = try Unlimint(secrets: [secret]).verify(request(body, signature: vectorSignature))
        #expect(notification.orderRef == "67897")
        #expect(notification.providerTxnID == "276122317")
        #expect(notification.kind == .payment)
        #expect(notification.providerStatus == "COMPLETED")
        #expect(notification.effect == .transition(.paid))
        #expect(notification.amount == Money(minor: 603, currency: "USD"))
        #expect(notification.dedupKey == "payment|276122317|COMPLETED")
    }

    @Test("the signature compares case-insensitively")
    func uppercaseHex() throws {
        #expect(throws: Never.self) { try Unlimint(secrets: [secret]).verify(request(body, signature: vectorSignature.uppercased())) }
    }

    @Test("one changed byte in body, secret or signature is rejected")
    func negativeTwins() {
        let provider = Unlimint(secrets: [secret])
        var rng = SplitMix64(seed: 11)
        for _ in 0..<200 {
            let (mutated, _) = rng.mutatingOneByte(body)
            #expect(rejection(provider, request(mutated, signature: vectorSignature)) == .badSignature)
        }
        let wrongSecret = Unlimint(secrets: ["pzQf529Wa0AW"])
        #expect(rejection(wrongSecret, request(body, signature: vectorSignature)) == .badSignature)
        var signature = Array(vectorSignature)
        signature[5] = signature[5] == "0" ? "1" : "0"
        #expect(rejection(provider, request(body, signature: String(signature))) == .badSignature)
        #expect(rejection(provider, request(body, signature: nil)) == .missingHeader)
        #expect(rejection(provider, request(body, signature: "abc")) == .malformedHeader)
        #expect(rejection(provider, request(body, signature: String(vectorSignature.dropLast()) + "g")) == .malformedHeader)
        var repeated = request(body, signature: vectorSignature)
        repeated.headers.append(("signature", vectorSignature))
        #expect(rejection(provider, repeated) == .repeatedHeader)
    }

    @Test("any of several secrets verifies (rotation)")
    func rotation() throws {
        let provider = Unlimint(secrets: ["old-secret", secret])
        let notification = try provider.verify(request(body, signature: vectorSignature))
        #expect(notification.detail["secret"] == "2 of 2")
        #expect(rejection(Unlimint(secrets: ["old-secret", "other"]), request(body, signature: vectorSignature)) == .badSignature)
    }

    @Test("a signed body with a non-JSON content type or malformed JSON is rejected")
    func contentAndBody() {
        let provider = Unlimint(secrets: [secret])
        #expect(rejection(provider, request(body, signature: vectorSignature, contentType: "text/plain")) == .unsupportedContentType)
        #expect(throws: Never.self) { try provider.verify(request(body, signature: vectorSignature, contentType: nil)) }
        let broken = Array(#"{"merchant_order":{"id":"1"},"payment_data":{"id":"1","status":"COMPLETED","amount":6.03,"#.utf8)
        #expect(rejection(provider, request(broken, signature: Unlimint.signature(body: broken, secret: secret))) == .malformedBody)
    }

    private func signed(_ json: String) throws -> VerifiedNotification {
        let bytes = Array(json.utf8)
        return try Unlimint(secrets: [secret]).verify(request(bytes, signature: Unlimint.signature(body: bytes, secret: secret)))
    }

    private func signedRejection(_ json: String) -> RejectReason? {
        let bytes = Array(json.utf8)
        return rejection(Unlimint(secrets: [secret]), request(bytes, signature: Unlimint.signature(body: bytes, secret: secret)))
    }

    @Test("payment statuses map as specified", arguments: [
        ("NEW", NotificationEffect.transition(.pending)), ("IN_PROGRESS", .transition(.pending)),
        ("WAITING", .transition(.pending)), ("UNPAID", .transition(.pending)), ("AUTHORIZED", .transition(.authorized)),
        ("COMPLETED", .transition(.paid)), ("DECLINED", .transition(.failed)), ("CANCELLED", .transition(.canceled)),
        ("VOIDED", .transition(.canceled)), ("TERMINATED", .transition(.canceled)),
        ("CHARGED_BACK", .transition(.chargedBack)), ("CHARGEBACK_RESOLVED", .chargebackReversal),
        ("SOMETHING_NEW", .unknownStatus),
    ])
    func statuses(status: String, effect: NotificationEffect) throws {
        let notification = try signed(#"{"merchant_order":{"id":"A1"},"payment_data":{"id":"9","status":"\#(status)","amount":30.00,"currency":"USD"}}"#)
        #expect(notification.effect == effect)
        #expect(notification.amount == Money(minor: 3000, currency: "USD"))
        #expect(notification.dedupKey == "payment|9|\(status)")
    }

    @Test("REFUNDED on a payment refunds it fully")
    func refundedPayment() throws {
        let notification = try signed(#"{"merchant_order":{"id":"A1"},"payment_data":{"id":"9","status":"REFUNDED","amount":6.03,"currency":"USD"}}"#)
        guard case .refund(let info) = notification.effect else {
            Issue.record("expected a refund effect, got \(notification.effect)")
            return
        }
        #expect(info.fullyRefunded == true)
        #expect(info.cumulativeRefundedMinor == 603)
    }

    @Test("kinds are tested refund, recurring, payout, payment, in that order")
    func kinds() throws {
        let refund = try signed(#"{"merchant_order":{"id":"A1"},"payment_data":{"id":"9","remaining_amount":0},"refund_data":{"id":"R7","status":"COMPLETED","amount":6.03,"currency":"USD"}}"#)
        #expect(refund.kind == .refund)
        #expect(refund.dedupKey == "refund|R7|COMPLETED")
        #expect(refund.effect == .refund(RefundInfo(refundID: "R7", amount: Money(minor: 603, currency: "USD"), fullyRefunded: true, remainingMinor: 0)))

        let partial = try signed(#"{"merchant_order":{"id":"A1"},"payment_data":{"id":"9","remaining_amount":3.97},"refund_data":{"id":"R8","status":"COMPLETED","amount":2.06,"currency":"USD"}}"#)
        #expect(partial.effect == .refund(RefundInfo(refundID: "R8", amount: Money(minor: 206, currency: "USD"), fullyRefunded: false, remainingMinor: 397)))

        let refundUnderWay = try signed(#"{"merchant_order":{"id":"A1"},"refund_data":{"id":"R9","status":"IN_PROGRESS","amount":1,"currency":"USD"}}"#)
        #expect(refundUnderWay.effect == .record)

        let recurring = try signed(#"{"merchant_order":{"id":"A1"},"recurring_data":{"id":"C1","status":"COMPLETED","amount":5,"currency":"EUR"}}"#)
        #expect(recurring.effect == .transition(.paid))
        #expect(recurring.dedupKey == "recurring|C1|COMPLETED")

        let payout = try signed(#"{"merchant_order":{"id":"A1"},"payment_data":{"id":"9"},"payout_data":{"id":"P1","status":"COMPLETED","amount":5,"currency":"EUR"}}"#)
        #expect(payout.kind == .payout)
        #expect(payout.effect == .record)
        #expect(payout.dedupKey == "payout|P1|COMPLETED")
    }

    @Test("amounts must be exact for the currency; required fields must be there")
    func badFields() {
        #expect(signedRejection(#"{"merchant_order":{"id":"A1"},"payment_data":{"id":"9","status":"COMPLETED","amount":6.035,"currency":"USD"}}"#) == .badAmount)
        #expect(signedRejection(#"{"merchant_order":{"id":"A1"},"payment_data":{"id":"9","status":"COMPLETED","amount":6.03e2,"currency":"USD"}}"#) == .badAmount)
        #expect(signedRejection(#"{"merchant_order":{"id":"A1"},"payment_data":{"id":"9","status":"COMPLETED","amount":-1,"currency":"USD"}}"#) == .badAmount)
        #expect(signedRejection(#"{"merchant_order":{"id":"A1"},"payment_data":{"id":"9","status":"COMPLETED","amount":1,"currency":"ZZZ"}}"#) == .unknownCurrency)
        #expect(signedRejection(#"{"merchant_order":{"id":"A1"},"payment_data":{"id":"9","status":"COMPLETED","amount":1}}"#) == .missingField)
        #expect(signedRejection(#"{"payment_data":{"id":"9","status":"COMPLETED"}}"#) == .missingField)
        #expect(signedRejection(#"{"merchant_order":{"id":"A1"}}"#) == .missingField)
        #expect(signedRejection(#"{"merchant_order":{"id":"A1"},"payment_data":{"status":"COMPLETED"}}"#) == .missingField)
        #expect(signedRejection(#"[1,2]"#) == .malformedBody)
    }

    @Test("property: for random bodies and secrets, sign-then-verify succeeds and any one-byte mutation fails")
    func property() throws {
        var rng = SplitMix64(seed: 2026)
        for _ in 0..<300 {
            let secret = rng.printable(length: Int(4 + rng.next() % 40))
            let order = rng.printable(length: Int(1 + rng.next() % 20))
            let amount = Money(minor: Int64(rng.next() % 1_000_000), currency: "USD")
            let json = #"{"merchant_order":{"id":"\#(JSONText.escape(order))"},"payment_data":{"id":"\#(rng.next() % 1_000_000)","status":"COMPLETED","amount":\#(amount.decimal),"currency":"USD"}}"#
            let bytes = Array(json.utf8)
            let provider = Unlimint(secrets: [secret])
            let signature = Unlimint.signature(body: bytes, secret: secret)
            let notification = try provider.verify(request(bytes, signature: signature))
            #expect(notification.orderRef == order)
            #expect(notification.amount == amount)
            let (mutatedBody, _) = rng.mutatingOneByte(bytes)
            #expect(rejection(provider, request(mutatedBody, signature: signature)) != nil)
            let (mutatedSignature, _) = rng.mutatingOneByte(Array(signature.utf8))
            #expect(rejection(provider, request(bytes, signature: String(decoding: mutatedSignature, as: UTF8.self))) != nil)
        }
    }

    @Test("the simulator's output verifies with the same account")
    func simulation() throws {
        let provider = Unlimint(secrets: [secret])
        let spec = SimulationSpec(orderRef: "SIM-1", status: "COMPLETED", amount: Money(minor: 1000, currency: "USD"),
                                  path: "/ipn/unlimint", uniqueID: "u1", time: "2026-11-21T10:00:00.000Z")
        let notification = try provider.verify(try provider.simulatedRequest(spec))
        #expect(notification.orderRef == "SIM-1")
        #expect(notification.effect == .transition(.paid))
        #expect(notification.amount == Money(minor: 1000, currency: "USD"))
    }
}
