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

/// The retry schedule's waits in these tests: 5 s becomes 10 ms, 2 h becomes 14 s.
private let testRetryScale = 0.002

@Suite("Push delivery to a receiver of the merchant's (issue 30)", .serialized)
struct DeliveryTests {
    @Test("every delivered request verifies with the Standard Webhooks library, with each of two rotated secrets; the body is the feed's event", arguments: Backend.allCases)
    func signatures(backend: Backend) async throws {
        let secrets = [WebhookReceiver.newSecret(), WebhookReceiver.newSecret()]
        let receiver = try WebhookReceiver(secrets: secrets, keepBodies: true)
        defer { receiver.stop() }
        let daemon = try await TestDaemon.start(backend: backend, extraYAML: deliveriesYAML(url: receiver.url, secrets: secrets))
        for index in 0..<5 { try await daemon.deliver("unlimint", order: "S-\(index)", status: "COMPLETED") }
        let requests = try await receiver.wait(timeout: 20) { Set($0.map(\.seq)).count == 5 }
        #expect(Set(requests.map(\.seq)) == Set(1...5))
        for request in requests {
            #expect(request.verified == [true, true], "seq \(request.seq)")
            #expect(request.signatures == 2)
            #expect(request.answer == "200")
            #expect(request.contentType == "application/json")
            #expect(request.userAgent?.hasPrefix("ipnd/") == true)
            let stamp = try #require(request.timestamp.flatMap(Double.init))
            #expect(abs(stamp - request.time) < 30)
        }
        // The delivered body is the feed's event, byte for byte.
        let feed = try await daemon.api("/api/v1/events").text
        for request in requests { #expect(feed.contains(try #require(request.body))) }
        // Each delivery is delivered once, and listed so.
        try await waitUntil { try await daemon.apiObject("/api/v1/deliveries").objects("items").allSatisfy { $0.string("state") == "delivered" } }
        let listed = try await daemon.apiObject("/api/v1/deliveries").objects("items")
        #expect(listed.count == 5)
        for item in listed {
            #expect(item.keySet == SpecDeliveryFields.delivery)
            #expect(item.string("target") == "app" && item.int("attempts") == 1 && item.int("last_status") == 200)
            #expect(item.isNull("next_attempt_at") && item.string("delivered_at") != nil)
        }
        // A receiver that knows only one of the two secrets still verifies.
        let onlyNew = try WebhookReceiver(secrets: [secrets[1]])
        defer { onlyNew.stop() }
        let second = try await TestDaemon.start(backend: backend, extraYAML: deliveriesYAML(url: onlyNew.url, secrets: secrets))
        try await second.deliver("unlimint", order: "S-new", status: "COMPLETED")
        let got = try await onlyNew.wait(timeout: 20) { !$0.isEmpty }
        #expect(got.first?.verified == [true])
        try await second.stop()
        try await daemon.stop()
    }

    @Test("a receiver failing 30 % of attempts (500s, resets, timeouts), 200 orders of 4 events: each arrives, per order in seq order, one webhook-id per event", arguments: Backend.allCases)
    func flakyReceiver(backend: Backend) async throws {
        let secret = WebhookReceiver.newSecret()
        let receiver = try WebhookReceiver(secrets: [secret], mode: "flaky", arguments: ["--fail-rate", "0.3", "--hang", "3"])
        defer { receiver.stop() }
        let daemon = try await TestDaemon.start(
            backend: backend,
            extraYAML: deliveriesYAML(url: receiver.url, secrets: [secret], extra: "max_in_flight: 32"),
            deliveryRetryScale: testRetryScale)
        let orders = 200
        try await withThrowingTaskGroup(of: Void.self) { group in
            for order in 0..<orders {
                group.addTask {
                    // pending, authorized, paid, refunded: 4 events each, in this order.
                    for status in ["NEW", "AUTHORIZED", "COMPLETED"] {
                        try await daemon.deliver("unlimint", order: "FL-\(order)", status: status)
                    }
                    let body = UnlimintRequests.refundBody(order: "FL-\(order)", paymentID: "FL-\(order)", refundID: "RF-\(order)",
                                                           amount: "10.00", remaining: "0")
                    let answer = try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body))
                    #expect(answer.status == 200)
                }
            }
            try await group.waitForAll()
        }
        let events = try await daemon.apiObject("/api/v1/events?limit=1000").objects("events")
        #expect(events.count == orders * 4)
        let requests = try await receiver.wait(timeout: 240) { requests in
            Set(requests.filter { $0.answer == "200" }.map(\.seq)).count >= orders * 4
        }
        #expect(Set(requests.filter { $0.answer == "200" }.map(\.seq)) == Set(1...(orders * 4)))
        #expect(requests.contains { $0.answer != "200" }, "the receiver should have failed some attempts")
        // One webhook-id per event, the same on every attempt.
        var idBySeq: [Int: String] = [:]
        for request in requests {
            if let known = idBySeq[request.seq] { #expect(known == request.id, "seq \(request.seq)") } else { idBySeq[request.seq] = request.id }
        }
        #expect(Set(idBySeq.values).count == idBySeq.count)
        // Per order: no attempt of an event before the earlier one was delivered.
        var delivered = Set<Int>()
        var seqsByOrder: [String: [Int]] = [:]
        for event in events { seqsByOrder[(event["order"] as? JSONDict)?.string("order_ref") ?? "", default: []].append(event.int("seq") ?? 0) }
        for request in requests.sorted(by: { $0.time < $1.time }) {
            let earlier = (seqsByOrder[request.order] ?? []).filter { $0 < request.seq }
            #expect(earlier.allSatisfy(delivered.contains), "seq \(request.seq) of \(request.order) attempted before \(earlier.filter { !delivered.contains($0) })")
            if request.answer == "200" { delivered.insert(request.seq) }
        }
        try await daemon.stop()
    }

    @Test("Retry-After on a 429 is waited out, though the schedule's own wait is shorter", arguments: Backend.allCases)
    func retryAfter(backend: Backend) async throws {
        let secret = WebhookReceiver.newSecret()
        let receiver = try WebhookReceiver(secrets: [secret], mode: "retry-after", arguments: ["--retry-after", "2"])
        defer { receiver.stop() }
        let daemon = try await TestDaemon.start(
            backend: backend,
            extraYAML: deliveriesYAML(url: receiver.url, secrets: [secret]), deliveryRetryScale: testRetryScale)
        try await daemon.deliver("unlimint", order: "RA-1", status: "COMPLETED")
        let requests = try await receiver.wait(timeout: 20) { $0.contains { $0.answer == "200" } }
        let first = try #require(requests.first { $0.answer == "429" })
        let second = try #require(requests.first { $0.answer == "200" })
        #expect(second.time - first.time >= 1.9, "retried \(second.time - first.time) s after Retry-After: 2")
        let listed = try await daemon.apiObject("/api/v1/deliveries").objects("items")
        #expect(listed.first?.int("attempts") == 2)
        try await daemon.stop()
    }

    @Test("a 410 pauses the target: nothing more is sent, nothing is lost; deliveries resume sends the backlog in order", arguments: Backend.allCases)
    func goneAndResume(backend: Backend) async throws {
        let secret = WebhookReceiver.newSecret()
        let receiver = try WebhookReceiver(secrets: [secret], mode: "gone")
        defer { receiver.stop() }
        let daemon = try await TestDaemon.start(
            backend: backend,
            extraYAML: deliveriesYAML(url: receiver.url, secrets: [secret]), deliveryRetryScale: testRetryScale)
        try await daemon.deliver("unlimint", order: "G-1", status: "COMPLETED")
        _ = try await receiver.wait(timeout: 20) { !$0.isEmpty }
        try await waitUntil { try await daemon.apiObject("/api/v1/deliveries?state=paused").objects("items").count == 1 }
        for index in 2...4 { try await daemon.deliver("unlimint", order: "G-\(index)", status: "COMPLETED") }
        try await Task.sleep(for: .seconds(1.5))
        #expect(try receiver.requests().count == 1, "a paused target gets nothing")
        let paused = try await ipnd(["deliveries", "list", "--config", daemon.configPath, "--state", "paused", "--format", "json"])
        #expect(paused.status == 0, "\(paused.stderr)")
        #expect(try parseJSONLines(paused.stdout).count == 4)
        try receiver.setMode("ok")
        let resumed = try await ipnd(["deliveries", "resume", "app", "--config", daemon.configPath])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let requests = try await receiver.wait(timeout: 20) { Set($0.filter { $0.answer == "200" }.map(\.seq)).count == 4 }
        #expect(Set(requests.filter { $0.answer == "200" }.map(\.seq)) == [1, 2, 3, 4])
        #expect(daemon.logs.captured.contains { $0.contains("410") && $0.contains("paused") })
        try await daemon.stop()
    }

    @Test("a graceful stop with an attempt in flight and more claimed behind it: the attempt ends within its timeout, the claimed ones are given back unattempted and unleased, and a restart sends them all", arguments: Backend.allCases)
    func gracefulStop(backend: Backend) async throws {
        let secret = WebhookReceiver.newSecret()
        let receiver = try WebhookReceiver(secrets: [secret], mode: "hang", arguments: ["--hang", "30"])
        defer { receiver.stop() }
        let yaml = deliveriesYAML(url: receiver.url, secrets: [secret], extra: "max_in_flight: 1")
        let daemon = try await TestDaemon.start(backend: backend, extraYAML: yaml, deliveryRetryScale: testRetryScale)
        for index in 0..<8 { try await daemon.deliver("unlimint", order: "GS-\(index)", status: "COMPLETED") }
        // One attempt hangs at the receiver; the worker has claimed the next ones behind it.
        _ = try await receiver.wait(timeout: 20) { !$0.isEmpty }
        try await daemon.stop()
        let attempted = try Set(receiver.requests().map(\.seq))
        #expect(attempted.count == 1, "max_in_flight 1: \(attempted)")
        let rows = try daemon.rows("SELECT event_seq, state, attempts, lease_owner FROM deliveries ORDER BY event_seq")
        #expect(rows.count == 8)
        for row in rows {
            let seq = Int(row[0] ?? "") ?? 0
            #expect(row[1] == "pending", "seq \(seq)")
            // The hung attempt timed out (2 s, within the 5 s grace) and counts; the others were never sent.
            #expect(row[2] == (attempted.contains(seq) ? "1" : "0"), "seq \(seq): \(row)")
            #expect(row[3] == nil, "seq \(seq) still leased: \(row)")
        }
        // Not waiting for a lease to run out (45 s): everything is sent once the receiver answers.
        try receiver.setMode("ok")
        let restarted = try await TestDaemon.start(
            backend: backend, storeDirectory: daemon.directory, extraYAML: yaml, deliveryRetryScale: testRetryScale,
            postgresDatabase: daemon.postgres)
        let requests = try await receiver.wait(timeout: 20) { Set($0.filter { $0.answer == "200" }.map(\.seq)).count == 8 }
        #expect(Set(requests.filter { $0.answer == "200" }.map(\.seq)) == Set(1...8))
        try await restarted.stop()
    }

    @Test("a receiver down for the first half: providers' answers keep their latency, and the backlog drains once it is back", arguments: Backend.allCases)
    func receiverDown(backend: Backend) async throws {
        let secret = WebhookReceiver.newSecret()
        let port = try WebhookReceiver.freePort()
        let daemon = try await TestDaemon.start(
            backend: backend,
            extraYAML: deliveriesYAML(url: "http://127.0.0.1:\(port)/hooks", secrets: [secret]), deliveryRetryScale: testRetryScale)
        var latencies: [Duration] = []
        for index in 0..<100 {
            let started = ContinuousClock.now
            try await daemon.deliver("unlimint", order: "D-\(index)", status: "COMPLETED")
            latencies.append(ContinuousClock.now - started)
        }
        // Longer than the 2 s timeout: the attempts made meanwhile fail and are retried.
        try await Task.sleep(for: .seconds(3))
        let backlog = try await daemon.api("/metrics").text
        #expect(backlog.contains("ipnd_delivery_backlog{target=\"app\"} 100"), "\(backlog.split(separator: "\n").filter { $0.contains("delivery") })")
        // The answers did not wait for the dead receiver: each within a fraction of its 2 s timeout.
        #expect(latencies.sorted()[98] < .milliseconds(500), "p99 \(latencies.sorted()[98])")
        let receiver = try WebhookReceiver(secrets: [secret], port: port)
        defer { receiver.stop() }
        let requests = try await receiver.wait(timeout: 60) { Set($0.filter { $0.answer == "200" && $0.verified == [true] }.map(\.seq)).count == 100 }
        #expect(Set(requests.filter { $0.answer == "200" && $0.verified == [true] }.map(\.seq)) == Set(1...100))
        try await waitUntil { try await daemon.api("/metrics").text.contains("ipnd_delivery_backlog{target=\"app\"} 0") }
        let metrics = try await daemon.api("/metrics").text
        #expect(metrics.contains("ipnd_deliveries_total{target=\"app\",outcome=\"delivered\"} 100"))
        #expect(!metrics.contains("ipnd_deliveries_total{target=\"app\",outcome=\"retried\"} 0"))
        #expect(metrics.contains("ipnd_delivery_duration_seconds_count{target=\"app\"}"))
        // A failed attempt's log line names the target, the event and the error, and no secret.
        let failure = try #require(daemon.logs.captured.first { $0.contains("delivery attempt failed") })
        #expect(failure.contains("target=app") && failure.contains("event_id=") && failure.contains("next_attempt_at="))
        #expect(!daemon.logs.captured.joined().contains(secret))
        try await daemon.stop()
    }
}

@Suite("The README's example receiver (issue 30)")
struct ExampleReceiverTests {
    @Test("tools/example_receiver.py, shown whole in the README, keeps an orders table by seq from real deliveries", arguments: Backend.allCases)
    func exampleReceiver(backend: Backend) async throws {
        let source = try String(contentsOf: repositoryRoot.appendingPathComponent("tools/example_receiver.py"), encoding: .utf8)
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("```python\n" + source + "```"), "the README shows tools/example_receiver.py as it is")

        let secret = WebhookReceiver.newSecret()
        let port = try WebhookReceiver.freePort()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-example-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let database = directory.appendingPathComponent("orders.db").path
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", repositoryRoot.appendingPathComponent("tools/example_receiver.py").path]
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["IPND_SECRET": secret, "PORT": String(port), "ORDERS_DB": database], uniquingKeysWith: { $1 })
        try process.run()
        defer {
            kill(process.processIdentifier, SIGKILL)
            while process.isRunning { usleep(10_000) }
        }
        let daemon = try await TestDaemon.start(
            backend: backend,
            extraYAML: deliveriesYAML(url: "http://127.0.0.1:\(port)/hooks/ipnd", secrets: [secret]), deliveryRetryScale: testRetryScale)
        for status in ["NEW", "COMPLETED"] { try await daemon.deliver("unlimint", order: "EX-1", status: status) }
        try await daemon.deliver("unlimint", order: "EX-2", status: "NEW")
        var rows = ""
        try await waitUntil {
            rows = (try? await runProcess(URL(fileURLWithPath: "/usr/bin/sqlite3"), [database, "SELECT order_ref, state, seq FROM orders ORDER BY order_ref"]).stdout) ?? ""
            return rows == "EX-1|paid|2\nEX-2|pending|3\n"
        }
        #expect(rows == "EX-1|paid|2\nEX-2|pending|3\n")
        try await daemon.stop()
    }
}

/// The fields of a delivery object, written out from product.md section 8.
enum SpecDeliveryFields {
    static let delivery: Set<String> = [
        "id", "target", "event_id", "seq", "type", "provider", "account", "order_ref", "state", "attempts", "last_attempt_at",
        "last_status", "last_error", "next_attempt_at", "delivered_at",
    ]
}

/// Polls `condition` every 100 ms for up to `timeout` seconds.
func waitUntil(timeout: Double = 20, _ condition: () async throws -> Bool) async throws {
    let deadline = Date().addingTimeInterval(timeout)
    while try await !condition() {
        guard Date() < deadline else { return }
        try await Task.sleep(for: .milliseconds(100))
    }
}
