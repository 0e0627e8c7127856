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
@testable import IPNServer
import NIOCore
import Testing

/// A bad-signature request with a 64 KB body, as a flood sends it.
private let junkBody: [UInt8] = {
    let prefix = Array(#"{"junk":""#.utf8)
    let suffix = Array(#""}"#.utf8)
    return prefix + Array(repeating: UInt8(ascii: "A"), count: 65_536 - prefix.count - suffix.count) + suffix
}()

private let junkHeaders: [(String, String)] = [
    ("Content-Type", "application/json"), ("Signature", String(repeating: "0", count: 128)),
]

/// The sum of `key=N` over the log lines that contain every one of `parts`.
private func sum(of key: String, inLinesWith parts: [String], _ lines: [String]) -> Int {
    lines.filter { line in parts.allSatisfy(line.contains) }.reduce(0) { total, line in
        guard let range = line.range(of: " \(key)=") else { return total }
        return total + (Int(line[range.upperBound...].prefix { $0.isNumber }) ?? 0)
    }
}

@Suite("Storage bounds: the rejected-request budget and retention over HTTP (issue 33)")
struct StorageBoundsTests {
    @Test("""
        20,000 bad-signature 64 KB requests from one address grow the store by no more than the budget allows, while real \
        notifications from another address keep being applied; the counter and the log lines say what was dropped
        """)
    func junkFlood() async throws {
        let budget = 50
        let window: Int64 = 10_000
        let daemon = try await TestDaemon.start(
            serverYAML: "  trusted_proxies: [127.0.0.1/32]\n  rejected_store_per_minute: \(budget)",
            housekeeping: Daemon.Housekeeping(budgetWindow: .milliseconds(window)))
        let attacker = "203.0.113.66"
        let merchantsProvider = "198.51.100.7"
        let total = 20_000
        let workers = 16
        let started = Int64(Date().timeIntervalSince1970 * 1000)
        let flooding = Locked(true)
        let real = Task {
            // A real notification every 50 ms while the flood lasts, from the provider's address.
            var orders: [String] = []
            while flooding.withLock({ $0 }) || orders.count < 5 {
                let order = "REAL-\(orders.count)"
                let body = UnlimintRequests.body(order: order, id: order, status: "COMPLETED")
                let answer = try await daemon.post("/ipn/unlimint", body: body,
                                                   headers: UnlimintRequests.headers(for: body) + [("X-Forwarded-For", merchantsProvider)])
                #expect(answer.status == 200 && answer.text == "OK", "\(order): \(answer.status) \(answer.text)")
                orders.append(order)
                try await Task.sleep(for: .milliseconds(50))
            }
            return orders
        }
        let statuses = try await withThrowingTaskGroup(of: [Int: Int].self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var statuses: [Int: Int] = [:]
                    for _ in stride(from: worker, to: total, by: workers) {
                        let answer = try await daemon.post("/ipn/unlimint", body: junkBody,
                                                           headers: junkHeaders + [("X-Forwarded-For", attacker)])
                        statuses[answer.status, default: 0] += 1
                    }
                    return statuses
                }
            }
            return try await group.reduce(into: [:]) { all, statuses in all.merge(statuses, uniquingKeysWith: +) }
        }
        flooding.withLock { $0 = false }
        let realOrders = try await real.value
        let ended = Int64(Date().timeIntervalSince1970 * 1000)

        // Every junk request got the answer it would have got stored: 400, invalid signature.
        #expect(statuses == [400: total])
        // The store kept at most the budget per window the flood touched.
        let windows = Int(ended / window - started / window + 1)
        let stored = try daemon.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected' AND client_ip = ?", [attacker])
        #expect(stored >= budget && stored <= budget * windows, "\(stored) stored over \(windows) windows")
        let storedBytes = try daemon.count("SELECT COALESCE(SUM(length(body)), 0) FROM notifications WHERE client_ip = ?", [attacker])
        #expect(storedBytes <= budget * windows * 65_536)
        // The provider's notifications were all applied meanwhile, none of them dropped.
        for order in realOrders { #expect(try daemon.orderState(order) == "paid", "\(order)") }
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE client_ip = ? AND verdict = 'applied'", [merchantsProvider])
                == realOrders.count)

        // The counter says how many were not stored, by provider and reason...
        let metrics = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        #expect(metrics.value("ipnd_rejected_unstored_total", ["provider": "unlimint", "reason": "bad_signature"]) == Double(total - stored))
        // ...and so do the log lines, one per window the address went past its budget in.
        try await waitUntil(timeout: 30) {
            sum(of: "not_stored", inLinesWith: ["client past its budget", "client_ip=\(attacker)"], daemon.logs.captured) == total - stored
        }
        let lines = daemon.logs.captured.filter { $0.contains("client past its budget") }
        #expect(sum(of: "not_stored", inLinesWith: ["client_ip=\(attacker)"], lines) == total - stored)
        #expect(lines.count <= windows)
        #expect(lines.allSatisfy { $0.contains("client_ip=\(attacker)") && $0.contains("budget_per_minute=\(budget)") })
        // Nothing else was logged per dropped request.
        #expect(daemon.logs.captured.filter { $0.contains("client_ip=\(attacker)") && $0.contains("msg=notification") }.count == stored)
        try await daemon.stop()
    }

    @Test("inside an account's allow_ips every rejected request is stored; outside, a budget of 0 stores none; authentic ones always")
    func exemptionAndZero() async throws {
        let providers = TestDaemon.defaultProvidersYAML().replacingOccurrences(
            of: "callback_secret: shop2-secret", with: "callback_secret: shop2-secret\n      allow_ips: [198.51.100.0/24]")
        let daemon = try await TestDaemon.start(
            providersYAML: providers, serverYAML: "  trusted_proxies: [127.0.0.1/32]\n  rejected_store_per_minute: 0")
        func junk(_ path: String, from address: String) async throws -> Int {
            try await daemon.post(path, body: Array("{}".utf8), headers: junkHeaders + [("X-Forwarded-For", address)]).status
        }
        for _ in 0..<5 {
            #expect(try await junk("/ipn/unlimint/shop2", from: "198.51.100.7") == 400)  // inside allow_ips: stored
            #expect(try await junk("/ipn/unlimint/shop2", from: "203.0.113.5") == 403)  // outside: ip_not_allowed
            #expect(try await junk("/ipn/unlimint", from: "198.51.100.7") == 400)  // no allow_ips on default
        }
        #expect(try await junk("/ipn/unlimint/nobody", from: "198.51.100.7") == 404)
        try await daemon.deliver("unlimint", order: "AUTH-1", status: "COMPLETED")

        let rejected = try daemon.query { db in
            try String.fetchAll(db, sql: "SELECT account || ' ' || client_ip || ' ' || reason FROM notifications WHERE verdict = 'rejected'")
        }
        #expect(rejected == Array(repeating: "shop2 198.51.100.7 bad_signature", count: 5))
        #expect(try daemon.orderState("AUTH-1") == "paid")
        let metrics = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        #expect(metrics.value("ipnd_rejected_unstored_total", ["provider": "unlimint", "reason": "ip_not_allowed"]) == 5)
        #expect(metrics.value("ipnd_rejected_unstored_total", ["provider": "unlimint", "reason": "bad_signature"]) == 5)
        #expect(metrics.value("ipnd_rejected_unstored_total", ["provider": "unlimint", "reason": "unknown_account"]) == 1)
        #expect(metrics.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "rejected"]) == 5)
        try await daemon.stop()
    }

    @Test("""
        retention (the clock moved on) removes old rejected rows and delivered events, never an authentic notification, \
        order or transition; the feed answers 410 below the oldest kept seq, and events still owed stay
        """)
    func retention() async throws {
        let secret = WebhookReceiver.newSecret()
        let receiver = try WebhookReceiver(secrets: [secret])
        defer { receiver.stop() }
        // `app` takes Unlimint's events and answers; `down` takes Citcon's and never does.
        let deliveries = deliveriesYAML(url: receiver.url, secrets: [secret], extra: "providers: [unlimint]")
            + "\n" + deliveriesYAML(name: "down", url: "http://127.0.0.1:\(try WebhookReceiver.freePort())/hook", secrets: [secret],
                                     extra: "providers: [citcon]").replacingOccurrences(of: "deliveries:\n", with: "")
        let offset = Locked<TimeInterval>(0)
        let daemon = try await TestDaemon.start(
            extraYAML: deliveries, deliveryRetryScale: 0.002,
            housekeeping: Daemon.Housekeeping(now: { Date() + offset.withLock { $0 } }, retentionInterval: .milliseconds(200)))

        for index in 0..<3 { try await daemon.deliver("unlimint", order: "KEEP-\(index)", status: "COMPLETED") }
        try await daemon.deliver("citcon", order: "OWED-1", status: "success")
        let forged = try await daemon.post("/ipn/unlimint", body: Array("{}".utf8), headers: junkHeaders)
        #expect(forged.status == 400)
        _ = try await receiver.wait(timeout: 20) { Set($0.filter { $0.answer == "200" }.map(\.seq)).count == 3 }
        try await waitUntil {
            try daemon.count("SELECT COUNT(*) FROM deliveries WHERE target = 'app' AND state = 'delivered'") == 3
        }
        let authentic = try daemon.count("SELECT COUNT(*) FROM notifications WHERE verdict <> 'rejected'")
        let transitions = try daemon.count("SELECT COUNT(*) FROM transitions")
        #expect(try daemon.count("SELECT COUNT(*) FROM events") == 4)
        // Nothing is old yet: passes run and remove nothing.
        try await Task.sleep(for: .milliseconds(500))
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected'") == 1)
        #expect(try await daemon.api("/api/v1/events?after=0").status == 200)

        // 100 days later (rejected_days 30, events_days 90 by default).
        offset.withLock { $0 = 100 * 86_400 }
        try await waitUntil { try daemon.count("SELECT COUNT(*) FROM events") == 1 }
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected'") == 0)
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE verdict <> 'rejected'") == authentic)
        #expect(try daemon.count("SELECT COUNT(*) FROM transitions") == transitions)
        #expect(try daemon.count("SELECT COUNT(*) FROM orders WHERE state = 'paid'") == 4)
        #expect(try daemon.count("SELECT COUNT(*) FROM deliveries WHERE target = 'app'") == 0)
        // The citcon event (seq 4) is still owed to `down`: kept, with its delivery.
        #expect(try daemon.count("SELECT seq FROM events") == 4)
        #expect(try daemon.count("SELECT COUNT(*) FROM deliveries WHERE target = 'down' AND state = 'pending'") == 1)
        // Below the highest removed seq (3), the feed answers 410 with the oldest readable seq.
        for after in [0, 2] {
            let gone = try await daemon.api("/api/v1/events?after=\(after)")
            #expect(gone.status == 410, "after \(after)")
            #expect(try parseJSONObject(gone.text).int("oldest_seq") == 4)
        }
        #expect(try await daemon.apiObject("/api/v1/events?after=3").objects("events").map { $0.int("seq") } == [4])
        // Orders still show their history.
        let order = try await daemon.apiObject("/api/v1/orders/unlimint/KEEP-0")
        #expect(order.objects("transitions").count == 1 && order.objects("notifications").count == 1)
        #expect(daemon.logs.captured.contains { $0.contains("retention pass") && $0.contains("rejected_removed=1") })
        try await daemon.stop()
    }
}
