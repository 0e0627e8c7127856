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

@Suite("Unlimint end to end over HTTP with a real SQLite file")
struct UnlimintHTTPTests {
    @Test("the vector is applied, acknowledged with exactly OK, and the order is paid in the file")
    func vector() async throws {
        let daemon = try await TestDaemon.start()
        let body = Fixture.bytes("unlimint-payment.json")
        let vectorSignature =
            "626598d3465770829f83e35910f99cf897fbb25ff0e7cb0f75934c29339cf9d9a9a6d602d99b2f3e7272301b609247b43981f90d313b646b16d802de212f671a"
        let answer = try await daemon.post("/ipn/unlimint", body: body,
                                           headers: [("Content-Type", "application/json"), ("Signature", vectorSignature)])
        try daemon.expectApplied(answer, acknowledgement: "OK", contentType: "text/plain",
                                 provider: "unlimint", orderRef: "67897", state: "paid", amountMinor: 603)
        #expect(try daemon.verdicts() == ["applied"])
        let stored = try daemon.query { db in
            try [UInt8](Data.fetchOne(db, sql: "SELECT body FROM notifications") ?? Data())
        }
        #expect(stored == body)
        try await daemon.stop()
    }

    @Test("a one-byte change to body, secret or signature is rejected with 400, stored as rejected, and not applied")
    func oneByteChanges() async throws {
        let daemon = try await TestDaemon.start()
        let body = Fixture.bytes("unlimint-payment.json")
        let good = UnlimintRequests.headers(for: body)
        var changedBody = body
        changedBody[body.count / 2] ^= 0x01
        let answers = [
            try await daemon.post("/ipn/unlimint", body: changedBody, headers: good),
            try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body, secret: "pzQf529Wa0AW")),
            try await daemon.post("/ipn/unlimint", body: body, headers: [
                ("Content-Type", "application/json"),
                ("Signature", String(good[1].1.dropLast()) + (good[1].1.hasSuffix("0") ? "1" : "0")),
            ]),
        ]
        for answer in answers {
            #expect(answer.status == 400)
            #expect(answer.text == "invalid signature")
        }
        #expect(try daemon.verdicts() == ["rejected", "rejected", "rejected"])
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE reason = 'bad_signature'") == 3)
        #expect(try daemon.count("SELECT COUNT(*) FROM orders") == 0)
        #expect(try daemon.count("SELECT COUNT(*) FROM transitions") == 0)
        // The genuine one still applies afterwards.
        #expect(try await daemon.post("/ipn/unlimint", body: body, headers: good).status == 200)
        #expect(try daemon.orderState("67897") == "paid")
        try await daemon.stop()
    }

    @Test("a rotated second secret verifies; another account's secret does not")
    func rotation() async throws {
        let daemon = try await TestDaemon.start()
        let body = UnlimintRequests.body(order: "R-1", id: "1", status: "COMPLETED")
        #expect(try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body, secret: "old-rotated-out")).status == 200)
        let shop2 = UnlimintRequests.body(order: "R-2", id: "2", status: "COMPLETED")
        #expect(try await daemon.post("/ipn/unlimint", body: shop2, headers: UnlimintRequests.headers(for: shop2, secret: "shop2-secret")).status == 400)
        #expect(try await daemon.post("/ipn/unlimint/shop2", body: shop2, headers: UnlimintRequests.headers(for: shop2, secret: "shop2-secret")).status == 200)
        #expect(try daemon.orderState("R-2", account: "shop2") == "paid")
        #expect(try daemon.orderState("R-2", account: "default") == nil)
        try await daemon.stop()
    }

    @Test("ten concurrent deliveries of one notification: one applied, nine duplicates, ten OKs, one transition",
          arguments: [1, 256])
    func tenConcurrent(maxBatch: Int) async throws {
        let daemon = try await TestDaemon.start(maxBatch: maxBatch)
        let body = UnlimintRequests.body(order: "C-1", id: "77", status: "COMPLETED")
        let headers = UnlimintRequests.headers(for: body)
        let answers = try await withThrowingTaskGroup(of: TestDaemon.Answer.self) { group in
            for _ in 0..<10 { group.addTask { try await daemon.post("/ipn/unlimint", body: body, headers: headers) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.status == 200 && $0.text == "OK" })
        let verdicts = try daemon.verdicts()
        #expect(verdicts.filter { $0 == "applied" }.count == 1)
        #expect(verdicts.filter { $0 == "duplicate" }.count == 9)
        #expect(try daemon.count("SELECT COUNT(*) FROM transitions") == 1)
        try await daemon.stop()
    }

    @Test("a lifecycle delivered in every order ends in the same final state; a late pending is stale", arguments: [1, 256])
    func everyOrder(maxBatch: Int) async throws {
        let daemon = try await TestDaemon.start(maxBatch: maxBatch)
        let steps: [(String, (String) -> [UInt8])] = [
            ("pending", { UnlimintRequests.body(order: $0, id: "p-\($0)", status: "NEW") }),
            ("authorized", { UnlimintRequests.body(order: $0, id: "p-\($0)", status: "AUTHORIZED") }),
            ("paid", { UnlimintRequests.body(order: $0, id: "p-\($0)", status: "COMPLETED") }),
            ("refunded", { UnlimintRequests.refundBody(order: $0, paymentID: "p-\($0)", refundID: "r-\($0)", amount: "6.03", remaining: "0") }),
        ]
        var permutationIndex = 0
        for permutation in permutations(of: Array(steps.indices)) {
            permutationIndex += 1
            let order = "LC-\(maxBatch)-\(permutationIndex)"
            for step in permutation {
                let body = steps[step].1(order)
                let answer = try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body))
                #expect(answer.status == 200)
            }
            #expect(try daemon.orderState(order) == "refunded", "delivery order \(permutation.map { steps[$0].0 })")
        }
        let late = "LATE-\(maxBatch)"
        for status in ["COMPLETED", "NEW"] {
            let body = UnlimintRequests.body(order: late, id: "l", status: status)
            #expect(try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body)).status == 200)
        }
        #expect(try daemon.verdicts(orderRef: late) == ["applied", "stale"])
        #expect(try daemon.orderState(late) == "paid")
        try await daemon.stop()
    }

    @Test("amount text: 6.035 USD is a bad request, stored as rejected, not applied")
    func badAmount() async throws {
        let daemon = try await TestDaemon.start()
        let body = UnlimintRequests.body(order: "A-1", id: "1", status: "COMPLETED", amount: "6.035")
        let answer = try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body))
        #expect(answer.status == 400)
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected' AND reason = 'bad_amount'") == 1)
        #expect(try daemon.count("SELECT COUNT(*) FROM orders") == 0)
        try await daemon.stop()
    }
}

func permutations<T>(of items: [T]) -> [[T]] {
    guard items.count > 1 else { return [items] }
    return items.indices.flatMap { index -> [[T]] in
        var rest = items
        let item = rest.remove(at: index)
        return permutations(of: rest).map { [item] + $0 }
    }
}
