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

/// The test config, with the Unlimint secret and Juspay password given (typed wrongly, or
/// rotated at the provider first) and, with `allowIPs`, Unlimint's default account limited to
/// those networks.
private func providersYAML(
    unlimintSecret: String = TestDaemon.unlimintSecret, juspayPassword: String = TestDaemon.juspayPassword, allowIPs: String? = nil
) -> String {
    let allow = allowIPs.map { "\n      allow_ips: [\($0)]" } ?? ""
    return TestDaemon.defaultProvidersYAML()
        .replacingOccurrences(
            of: "callback_secret: [old-rotated-out, \(TestDaemon.unlimintSecret)]", with: "callback_secret: \(unlimintSecret)\(allow)")
        .replacingOccurrences(of: "password: \"\(TestDaemon.juspayPassword)\"", with: "password: \"\(juspayPassword)\"")
}

/// A completed Unlimint payment for `order`, signed with the provider's real secret.
private func unlimintPayment(_ order: String) -> (body: [UInt8], headers: [(String, String)]) {
    let body = UnlimintRequests.body(order: order, id: "PAY-\(order)", status: "COMPLETED")
    return (body, UnlimintRequests.headers(for: body))
}

private func newStoreDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-reverify-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

extension TestDaemon {
    /// Posts Unlimint payments for `orders` signed with the real secret; returns the answers' statuses.
    func postUnlimintPayments(_ orders: [String]) async throws -> [Int] {
        var statuses: [Int] = []
        for order in orders {
            let (body, headers) = unlimintPayment(order)
            statuses.append(try await post("/ipn/unlimint", body: body, headers: headers).status)
        }
        return statuses
    }

    /// `POST /api/v1/notifications/reverify` with `body`, expecting 200 and a JSON object.
    func reverify(_ body: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> JSONDict {
        let answer = try await send(.POST, ops: "/api/v1/notifications/reverify", body: body)
        #expect(answer.status == 200, "\(answer.text)", sourceLocation: sourceLocation)
        return try parseJSONObject(answer.text, sourceLocation: sourceLocation)
    }
}

/// The fields of a reverify result, written out from the documented contract.
private let resultFields: Set<String> = [
    "id", "provider", "account", "received_at", "client_ip", "rejected_reason", "verdict", "reason", "detail", "order_ref",
    "order_state", "notification_id",
]

@Suite("Recovering rejected notifications: notifications reverify (issue 33)")
struct ReverifyTests {
    @Test("""
        a wrong Unlimint secret rejects 20 real notifications; with the secret fixed the dry run lists 20 that would apply \
        and writes nothing, --apply moves the orders and writes their events, a re-send is duplicate, a second --apply \
        applies nothing twice, and a Juspay request cannot be reverified
        """)
    func wrongSecret() async throws {
        let storeDirectory = try newStoreDirectory()
        let wrong = try await TestDaemon.start(
            providersYAML: providersYAML(unlimintSecret: "typed-wrongly", juspayPassword: "typed-wrongly-too"),
            storeDirectory: storeDirectory)
        let orders = (0..<20).map { "RV-\($0)" }
        #expect(try await wrong.postUnlimintPayments(orders) == Array(repeating: 400, count: 20))
        // Juspay with its real credentials (HTTP Basic), which the config had wrong then.
        let juspay = try Juspay(usernames: [TestDaemon.juspayUsername], passwords: [TestDaemon.juspayPassword])
            .simulatedRequest(SimulationSpec(
                orderRef: "JP-1", status: "CHARGED", amount: Money(minor: 60000, currency: "INR"), path: "/ipn/juspay",
                uniqueID: "jp1", time: "2026-11-26T10:00:00Z"))
        #expect(try await wrong.post(juspay).status == 401)
        #expect(try wrong.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected' AND reason = 'bad_signature'") == 20)
        #expect(try wrong.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected' AND reason = 'bad_credentials'") == 1)
        #expect(try wrong.count("SELECT COUNT(*) FROM orders") == 0)

        // The config fixed and reloaded, as an operator does (SIGHUP): the same daemon goes on.
        try wrong.editConfig { yaml in
            yaml.replacingOccurrences(of: providersYAML(unlimintSecret: "typed-wrongly", juspayPassword: "typed-wrongly-too"),
                                      with: providersYAML())
        }
        #expect(await wrong.daemon.reload() == .applied(needsRestart: []))
        let daemon = wrong
        let rows = try daemon.count("SELECT COUNT(*) FROM notifications")

        // The dry run: 20 would apply, Juspay cannot be reverified; nothing is written.
        let dry = try await ipnd(["notifications", "reverify", "--config", daemon.configPath, "--format", "json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        let planned = try parseJSONLines(dry.stdout)
        #expect(planned.count == 21)
        #expect(planned.allSatisfy { $0.keySet == resultFields })
        let plannedUnlimint = planned.filter { $0.string("provider") == "unlimint" }
        #expect(plannedUnlimint.map { $0.string("verdict") } == Array(repeating: "applied", count: 20))
        #expect(plannedUnlimint.map { $0.string("order_ref") } == orders)
        #expect(plannedUnlimint.allSatisfy {
            $0.string("order_state") == "paid" && $0.isNull("notification_id") && $0.string("rejected_reason") == "bad_signature"
        })
        let plannedJuspay = try #require(planned.first { $0.string("provider") == "juspay" })
        #expect(plannedJuspay.string("verdict") == "cannot_reverify" && plannedJuspay.string("reason") == "header_redacted")
        #expect(plannedJuspay.string("detail")?.contains("authorization") == true)
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications") == rows)
        #expect(try daemon.count("SELECT COUNT(*) FROM orders") == 0)
        #expect(try daemon.count("SELECT COUNT(*) FROM events") == 0)
        // The table says the same, and that nothing was written.
        let table = try await ipnd(["notifications", "reverify", "--config", daemon.configPath, "--provider", "unlimint"])
        #expect(table.stdout.contains("dry run, nothing written: 20 rejected notification(s) verified again: 20 applied"))

        // --apply: the orders move, each with its event, through the normal path.
        let applied = try await ipnd(["notifications", "reverify", "--config", daemon.configPath, "--apply", "--format", "json"])
        #expect(applied.status == 0, "\(applied.stderr)")
        let results = try parseJSONLines(applied.stdout)
        let recorded = results.filter { $0.string("provider") == "unlimint" }
        #expect(recorded.map { $0.string("verdict") } == Array(repeating: "applied", count: 20))
        #expect(results.first { $0.string("provider") == "juspay" }?.string("verdict") == "cannot_reverify")
        for order in orders { #expect(try daemon.orderState(order) == "paid", "\(order)") }
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE reverified_from IS NOT NULL AND verdict = 'applied'") == 20)
        let events = try await daemon.apiObject("/api/v1/events?limit=100").objects("events")
        #expect(events.count == 20)
        let newIDs = Set(recorded.compactMap { $0.int("notification_id") })
        #expect(newIDs.count == 20)
        #expect(Set(events.compactMap { ($0["change"] as? JSONDict)?.int("notification_id") }) == newIDs)
        // Each new notification names the rejected one it came from.
        for result in recorded {
            let from = try daemon.count("SELECT reverified_from FROM notifications WHERE id = ?", [String(result.int("notification_id") ?? 0)])
            #expect(from == result.int("id"))
        }

        // The provider re-sends one afterwards: duplicate, acknowledged as the first delivery.
        let (body, headers) = unlimintPayment(orders[3])
        let resend = try await daemon.post("/ipn/unlimint", body: body, headers: headers)
        #expect(resend.status == 200 && resend.text == "OK")
        #expect(try daemon.verdicts().last == "duplicate")

        // A second --apply applies nothing twice, and says which were reverified already.
        let rowsBefore = try daemon.count("SELECT COUNT(*) FROM notifications")
        let again = try await ipnd(["notifications", "reverify", "--config", daemon.configPath, "--apply", "--format", "json"])
        let secondRun = try parseJSONLines(again.stdout).filter { $0.string("provider") == "unlimint" }
        #expect(secondRun.map { $0.string("verdict") } == Array(repeating: "already_reverified", count: 20))
        #expect(Set(secondRun.compactMap { $0.int("notification_id") }) == newIDs)
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications") == rowsBefore)
        #expect(try await daemon.apiObject("/api/v1/events?limit=100").objects("events").count == 20)
        try await daemon.stop()
    }

    @Test("""
        the ops API reverifies a page at a time with the same selection; today's allow_ips is checked; an id that is not \
        a stored rejected notification exits 1
        """)
    func opsAPI() async throws {
        let storeDirectory = try newStoreDirectory()
        let wrong = try await TestDaemon.start(providersYAML: providersYAML(unlimintSecret: "typed-wrongly"), storeDirectory: storeDirectory)
        #expect(try await wrong.postUnlimintPayments(["API-1", "API-2", "API-3"]) == [400, 400, 400])
        // Its body is not JSON: it stays rejected whatever the config.
        let malformed = try await wrong.post("/ipn/unlimint", body: Array("{not json".utf8),
                                             headers: UnlimintRequests.headers(for: Array("{not json".utf8)))
        #expect(malformed.status == 400)
        let ids = try wrong.query { db in try Int64.fetchAll(db, sql: "SELECT id FROM notifications ORDER BY id") }
        try await wrong.stop()

        // Fixed, but the account now only takes 192.0.2.0/24: the requests came from 127.0.0.1.
        let fenced = try await TestDaemon.start(providersYAML: providersYAML(allowIPs: "192.0.2.0/24"), storeDirectory: storeDirectory)
        let fencedRun = try await fenced.reverify(#"{"apply": true}"#)
        #expect(fencedRun.objects("results").map { $0.string("reason") } == Array(repeating: "ip_not_allowed", count: 4))
        #expect(fencedRun.objects("results").map { $0.string("verdict") } == Array(repeating: "still_rejected", count: 4))
        #expect(try fenced.count("SELECT COUNT(*) FROM orders") == 0)
        try await fenced.stop()

        let daemon = try await TestDaemon.start(storeDirectory: storeDirectory)
        // A dry run of everything.
        let dry = try await daemon.reverify("{}")
        #expect(dry["apply"] as? Bool == false)
        #expect(dry.objects("results").map { $0.string("verdict") } == ["applied", "applied", "applied", "still_rejected"])
        #expect(dry.objects("results").last?.string("reason") == "malformed_body")
        #expect((dry["counts"] as? JSONDict)?.int("applied") == 3)
        #expect(dry.isNull("next_after"))
        #expect(try daemon.count("SELECT COUNT(*) FROM orders") == 0)
        // One by id.
        let one = try await daemon.reverify(#"{"ids": [\#(ids[1])], "apply": true}"#)
        #expect(one.objects("results").map { $0.int("id") } == [Int(ids[1])])
        #expect(one.objects("results").first?.string("verdict") == "applied")
        #expect(try daemon.orderState("API-2") == "paid")
        // Pages of two, oldest first: the one done already is said so.
        let first = try await daemon.reverify(#"{"apply": true, "limit": 2, "reason": "bad_signature"}"#)
        #expect(first.objects("results").map { $0.string("verdict") } == ["applied", "already_reverified"])
        #expect(first.int("next_after") == Int(ids[1]))
        // The malformed one was rejected for its signature then (the secret was wrong): it is
        // selected, and now fails on its body.
        let second = try await daemon.reverify(#"{"apply": true, "limit": 2, "reason": "bad_signature", "after": \#(ids[1])}"#)
        #expect(second.objects("results").map { $0.string("verdict") } == ["applied", "still_rejected"])
        #expect(second.int("next_after") == Int(ids[3]))
        let last = try await daemon.reverify(#"{"apply": true, "limit": 2, "reason": "bad_signature", "after": \#(ids[3])}"#)
        #expect(last.objects("results").isEmpty && last.isNull("next_after"))
        for order in ["API-1", "API-2", "API-3"] { #expect(try daemon.orderState(order) == "paid") }
        #expect(daemon.logs.captured.filter { $0.contains("msg=\"notification reverified\"") }.count == 3)
        // Refused selections.
        for body in [#"{"reason": "bad_vibes"}"#, #"{"apply": "yes"}"#, #"{"ids": [0]}"#, #"{"colour": "red"}"#, "[1]"] {
            let answer = try await daemon.send(.POST, ops: "/api/v1/notifications/reverify", body: body)
            #expect(answer.status == 400, "\(body): \(answer.text)")
        }
        #expect(try await daemon.send(.POST, ops: "/api/v1/notifications/reverify", body: "{}", token: nil).status == 401)
        // The CLI: an id that is not a stored rejected notification.
        let missing = try await ipnd(["notifications", "reverify", "--config", daemon.configPath, "--id", "999999", "--id", "\(ids[3])"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("not a stored rejected notification: 999999"))
        #expect(missing.stdout.contains("still_rejected"))
        try await daemon.stop()
    }
}
