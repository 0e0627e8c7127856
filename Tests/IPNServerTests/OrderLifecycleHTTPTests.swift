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
import GRDB
import IPNCore
import Testing

/// The transition rules of product.md section 5 that involve more than one notification,
/// through real HTTP requests and the real SQLite file.
@Suite("Order lifecycles end to end over HTTP")
struct OrderLifecycleHTTPTests {
    struct Transition: Equatable, CustomStringConvertible {
        let from: String?
        let to: String
        var description: String { "\(from ?? "nil")->\(to)" }
    }

    static func transitions(_ daemon: TestDaemon, _ orderRef: String, provider: String = "unlimint") throws -> [Transition] {
        try daemon.rows("""
            SELECT t.from_state, t.to_state FROM transitions t JOIN orders o ON o.id = t.order_id
            WHERE o.provider = ? AND o.order_ref = ? ORDER BY t.id
            """, [provider, orderRef]).map { Transition(from: $0[0], to: $0.count > 1 ? $0[1] ?? "" : "") }
    }

    static func unlimint(_ daemon: TestDaemon, _ body: [UInt8]) async throws {
        let answer = try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body))
        #expect(answer.status == 200)
        #expect(answer.text == "OK")
    }

    /// Registers, through the ops API, the amount in USD Unlimint order `order` must be paid with.
    static func expect(_ daemon: TestDaemon, _ order: String, amount: String) async throws {
        let put = try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/\(order)/expectation",
                                        body: #"{"account":"default","amount":"\#(amount)","currency":"USD"}"#)
        #expect(put.status == 200, "\(put.text)")
    }

    static func payoutBody(order: String, id: String) -> [UInt8] {
        Array(#"{"callback_time":"2026-11-21T09:30:06.828Z","merchant_order":{"id":"\#(order)"},"payout_data":{"id":"\#(id)","status":"COMPLETED","amount":2.50,"currency":"USD"}}"#.utf8)
    }

    @Test("a payout for an unseen order is recorded and creates the order, pending, with no transition; the first payment notification, pending included, applies from null", arguments: Backend.allCases)
    func recordedCreatesTheOrder(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await Self.unlimint(daemon, Self.payoutBody(order: "LC-1", id: "po-1"))
        #expect(try daemon.verdicts(orderRef: "LC-1") == ["recorded"])
        #expect(try daemon.orderState("LC-1") == "pending")
        // providers.md: a payout is recorded "without changing its payment state".
        #expect(try Self.transitions(daemon, "LC-1") == [])

        // Nothing has moved the order yet, so a pending notification is its first transition,
        // not a stale one.
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-1", id: "pay-1", status: "IN_PROGRESS", amount: "10.00"))
        #expect(try daemon.verdicts(orderRef: "LC-1") == ["recorded", "applied"])
        #expect(try Self.transitions(daemon, "LC-1") == [Transition(from: nil, to: "pending")])

        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-1", id: "pay-1", status: "COMPLETED", amount: "10.00"))
        try await Self.unlimint(daemon, Self.payoutBody(order: "LC-1", id: "po-2"))
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-1", id: "pay-1", status: "WAITING", amount: "10.00"))
        #expect(try daemon.verdicts(orderRef: "LC-1") == ["recorded", "applied", "applied", "recorded", "stale"])
        #expect(try daemon.orderState("LC-1") == "paid")
        #expect(try Self.transitions(daemon, "LC-1") == [Transition(from: nil, to: "pending"), Transition(from: "pending", to: "paid")])
        #expect(try daemon.count("SELECT COUNT(*) FROM transitions WHERE notification_id IS NULL") == 0)
        #expect(try daemon.count("SELECT amount_minor FROM orders WHERE order_ref = 'LC-1'") == 1000)
        // The recorded notifications are linked to the order, for `orders show`.
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE order_ref = 'LC-1' AND order_id IS NOT NULL") == 5)
        try await daemon.stop()
    }

    @Test("an order named only by an unknown status goes straight to paid, from null", arguments: Backend.allCases)
    func unknownStatusThenPaid(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-5", id: "p5", status: "SOMETHING_NEW", amount: "10.00"))
        #expect(try daemon.verdicts(orderRef: "LC-5") == ["unknown_status"])
        #expect(try Self.transitions(daemon, "LC-5") == [])
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-5", id: "p5", status: "COMPLETED", amount: "10.00"))
        #expect(try daemon.verdicts(orderRef: "LC-5") == ["unknown_status", "applied"])
        #expect(try Self.transitions(daemon, "LC-5") == [Transition(from: nil, to: "paid")])
        try await daemon.stop()
    }

    @Test("chargeback, then resolved in the merchant's favour: paid -> charged_back -> paid; a late pending is stale", arguments: Backend.allCases)
    func chargebackAndReversal(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        for (id, status) in [("p", "COMPLETED"), ("p", "CHARGED_BACK"), ("p", "CHARGEBACK_RESOLVED"), ("p", "IN_PROGRESS")] {
            try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-2", id: id, status: status))
        }
        #expect(try daemon.verdicts(orderRef: "LC-2") == ["applied", "applied", "applied", "stale"])
        #expect(try daemon.orderState("LC-2") == "paid")
        #expect(try Self.transitions(daemon, "LC-2") == [
            Transition(from: nil, to: "paid"), Transition(from: "paid", to: "charged_back"),
            Transition(from: "charged_back", to: "paid"),
        ])
        try await daemon.stop()
    }

    @Test("with no expectation, a late pending in another currency is stale: no flag, the order's amount unchanged", arguments: Backend.allCases)
    func lateInAnotherCurrency(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-7", id: "p7", status: "COMPLETED", amount: "10.00"))
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-7", id: "p7", status: "IN_PROGRESS", amount: "10.00", currency: "EUR"))
        #expect(try daemon.verdicts(orderRef: "LC-7") == ["applied", "stale"])
        #expect(try daemon.orderState("LC-7") == "paid")
        #expect(try daemon.count("""
            SELECT COUNT(*) FROM orders WHERE order_ref = 'LC-7' AND amount_minor = 1000 AND currency = 'USD' AND flags = ''
            """) == 1)
        try await daemon.stop()
    }

    @Test("a refund while charged back counts in the total, and the chargeback resolved for the merchant goes back to the refunds", arguments: Backend.allCases)
    func refundAcrossAChargeback(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        // The refund arrives during the dispute; had it come before the chargeback the order
        // would end the same way.
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-8", id: "p8", status: "COMPLETED", amount: "10.00"))
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-8", id: "p8", status: "CHARGED_BACK", amount: "10.00"))
        try await Self.unlimint(daemon, UnlimintRequests.refundBody(order: "LC-8", paymentID: "p8", refundID: "r8", amount: "3.00", remaining: "7.00"))
        #expect(try daemon.verdicts(orderRef: "LC-8") == ["applied", "applied", "stale"])
        #expect(try daemon.orderState("LC-8") == "charged_back")
        #expect(try daemon.count("SELECT refunded_minor FROM orders WHERE order_ref = 'LC-8'") == 300)
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-8", id: "p8", status: "CHARGEBACK_RESOLVED", amount: "10.00"))
        #expect(try daemon.orderState("LC-8") == "partially_refunded")
        #expect(try daemon.count("SELECT refunded_minor FROM orders WHERE order_ref = 'LC-8'") == 300)
        #expect(try Self.transitions(daemon, "LC-8") == [
            Transition(from: nil, to: "paid"), Transition(from: "paid", to: "charged_back"),
            Transition(from: "charged_back", to: "partially_refunded"),
        ])
        try await daemon.stop()
    }

    @Test("a payment too late to move the order, for another sum than expected, is stale and still flags the order", arguments: Backend.allCases)
    func lateUnderpaymentFlags(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await Self.expect(daemon, "LC-9", amount: "10.00")
        // The refund comes first; the underpayment it refunds part of arrives after it.
        try await Self.unlimint(daemon, UnlimintRequests.refundBody(order: "LC-9", paymentID: "p9", refundID: "r9", amount: "3.00", remaining: "6.99"))
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-9", id: "p9", status: "COMPLETED", amount: "9.99"))
        #expect(try daemon.verdicts(orderRef: "LC-9") == ["applied", "stale"])
        #expect(try daemon.orderState("LC-9") == "partially_refunded")
        #expect(try daemon.count("""
            SELECT COUNT(*) FROM orders WHERE order_ref = 'LC-9' AND flags LIKE '%amount_mismatch%' AND amount_minor IS NULL
            """) == 1)
        #expect(try daemon.count(
            "SELECT COUNT(*) FROM notifications WHERE order_ref = 'LC-9' AND verdict = 'stale' AND reason = 'amount_mismatch'") == 1)
        #expect(daemon.logs.captured.contains {
            $0.contains("level=warning") && $0.contains("verdict=stale") && $0.contains("flag=amount_mismatch") && $0.contains("LC-9")
        })
        try await daemon.stop()
    }

    @Test("a chargeback in another sum keeps the order's amount; its reversal for another sum than expected is a mismatch", arguments: Backend.allCases)
    func chargebackAgainstTheExpectation(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await Self.expect(daemon, "LC-6", amount: "10.00")
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-6", id: "p6", status: "COMPLETED", amount: "10.00"))
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-6", id: "p6", status: "CHARGED_BACK", amount: "5.00", currency: "EUR"))
        #expect(try daemon.orderState("LC-6") == "charged_back")
        #expect(try daemon.count("SELECT COUNT(*) FROM orders WHERE order_ref = 'LC-6' AND amount_minor = 1000 AND currency = 'USD'") == 1)
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-6", id: "p6", status: "CHARGEBACK_RESOLVED", amount: "5.00"))
        #expect(try daemon.verdicts(orderRef: "LC-6") == ["applied", "applied", "mismatch"])
        #expect(try daemon.orderState("LC-6") == "charged_back")
        #expect(try daemon.count("SELECT COUNT(*) FROM orders WHERE order_ref = 'LC-6' AND flags LIKE '%amount_mismatch%'") == 1)
        // The expected sum reinstates it.
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-6", id: "p6b", status: "CHARGEBACK_RESOLVED", amount: "10.00"))
        #expect(try daemon.orderState("LC-6") == "paid")
        try await daemon.stop()
    }

    @Test("a late authorization lifts a failed order to authorized; a late pending after it is stale", arguments: Backend.allCases)
    func lateAuthorization(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        for status in ["DECLINED", "AUTHORIZED", "DECLINED"] {
            try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-3", id: "p3", status: status))
        }
        #expect(try daemon.verdicts(orderRef: "LC-3") == ["applied", "applied", "duplicate"])
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-3", id: "p3", status: "IN_PROGRESS"))
        #expect(try daemon.verdicts(orderRef: "LC-3") == ["applied", "applied", "duplicate", "stale"])
        #expect(try daemon.orderState("LC-3") == "authorized")
        #expect(try Self.transitions(daemon, "LC-3") == [Transition(from: nil, to: "failed"), Transition(from: "failed", to: "authorized")])
        try await daemon.stop()
    }

    @Test("partial refunds with new refund ids grow the total; a redelivered refund adds nothing; the last one refunds fully", arguments: Backend.allCases)
    func partialRefunds(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await Self.unlimint(daemon, UnlimintRequests.body(order: "LC-4", id: "p4", status: "COMPLETED", amount: "10.00"))
        let first = UnlimintRequests.refundBody(order: "LC-4", paymentID: "p4", refundID: "r1", amount: "3.00", remaining: "7.00")
        try await Self.unlimint(daemon, first)
        try await Self.unlimint(daemon, UnlimintRequests.refundBody(order: "LC-4", paymentID: "p4", refundID: "r2", amount: "2.00", remaining: "5.00"))
        try await Self.unlimint(daemon, first)
        #expect(try daemon.verdicts(orderRef: "LC-4") == ["applied", "applied", "applied", "duplicate"])
        #expect(try daemon.orderState("LC-4") == "partially_refunded")
        #expect(try daemon.count("SELECT refunded_minor FROM orders WHERE order_ref = 'LC-4'") == 500)

        try await Self.unlimint(daemon, UnlimintRequests.refundBody(order: "LC-4", paymentID: "p4", refundID: "r3", amount: "5.00", remaining: "0"))
        #expect(try daemon.orderState("LC-4") == "refunded")
        #expect(try daemon.count("SELECT refunded_minor FROM orders WHERE order_ref = 'LC-4'") == 1000)
        #expect(try Self.transitions(daemon, "LC-4").map(\.to) == ["paid", "partially_refunded", "partially_refunded", "refunded"])
        try await daemon.stop()
    }

    @Test("Juspay: a failed refund is recorded and leaves the order paid; ORDER_REFUNDED then refunds it", arguments: Backend.allCases)
    func juspayFailedRefund(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        func send(_ event: String, _ eventID: String, refunded: String = "0") async throws {
            let body = Array((
                #"{"id":"\#(eventID)","date_created":"2026-11-21T10:15:30Z","event_name":"\#(event)","content":{"order":{"#
                + #""id":"ord_1","order_id":"LC-5","status":"CHARGED","amount":600,"currency":"INR","amount_refunded":\#(refunded)}}}"#
            ).utf8)
            let answer = try await daemon.post("/ipn/juspay", body: body, headers: [
                ("Content-Type", "application/json"),
                ("Authorization", Juspay.authorization(username: TestDaemon.juspayUsername, password: TestDaemon.juspayPassword)),
            ])
            #expect(answer.status == 200, "\(event): \(answer.text)")
            #expect(answer.text == "OK")
        }
        try await send("ORDER_SUCCEEDED", "evt_1")
        try await send("ORDER_REFUND_FAILED", "evt_2")
        #expect(try daemon.verdicts(orderRef: "LC-5") == ["applied", "recorded"])
        #expect(try daemon.orderState("LC-5", provider: "juspay") == "paid")
        try await send("ORDER_REFUNDED", "evt_3", refunded: "600")
        #expect(try daemon.verdicts(orderRef: "LC-5") == ["applied", "recorded", "applied"])
        #expect(try daemon.orderState("LC-5", provider: "juspay") == "refunded")
        try await daemon.stop()
    }
}
