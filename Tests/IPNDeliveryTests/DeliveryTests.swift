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
@testable import IPNServerTestSupport
import IPNTestSupport
import IPNCore
import Testing

/// The retry schedule's waits in the flaky-receiver test, which runs on the real clock under load:
/// 5 s becomes 10 ms, 2 h becomes 14 s. The others move the daemon's clock instead.
private let testRetryScale = 0.002

@Suite("Push delivery to a receiver of the merchant's (issue 30)", .heavy)
struct DeliveryTests {
    @Test("every delivered request verifies with the Standard Webhooks library, with each of two rotated secrets; the body is the feed's event", arguments: Backend.allCases)
    func signatures(backend: Backend) async throws {
        let secrets = [WebhookReceiver.newSecret(), WebhookReceiver.newSecret()]
        let receiver = try WebhookReceiver(secrets: secrets, keepBodies: true)
        defer { receiver.stop() }
        let daemon = try await TestDaemon.start(backend: backend, extraYAML: deliveriesYAML(url: receiver.url, secrets: secrets))
        for index in 0..<5 { try await daemon.deliver("unlimint", order: "S-\(index)", status: "COMPLETED") }
        let requests = try await receiver.wait("seqs 1 to 5") { Set($0.map(\.seq)).count == 5 }
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
        try await waitUntil("every delivery to be listed delivered") {
            try await daemon.apiObject("/api/v1/deliveries").objects("items").allSatisfy { $0.string("state") == "delivered" }
        }
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
        let got = try await onlyNew.wait("a request") { !$0.isEmpty }
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
        let requests = try await receiver.wait("every seq answered 200", timeout: 240) { requests in
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
        // 120 s asked for, where the schedule's own first wait is 5 s.
        let receiver = try WebhookReceiver(secrets: [secret], mode: "retry-after", arguments: ["--retry-after", "120"])
        defer { receiver.stop() }
        let daemon = try await TestDaemon.start(backend: backend, extraYAML: deliveriesYAML(url: receiver.url, secrets: [secret]))
        try await daemon.deliver("unlimint", order: "RA-1", status: "COMPLETED")
        _ = try await receiver.wait("the first attempt, answered 429") { $0.contains { $0.answer == "429" } }
        let retried = try await waitForValue("the 429 to be recorded with its next attempt") {
            try await daemon.apiObject("/api/v1/deliveries").objects("items").first { $0.int("attempts") == 1 && $0.string("next_attempt_at") != nil }
        }
        let attemptedAt = try #require(retried.string("last_attempt_at").flatMap(Timestamp.parse))
        let nextAt = try #require(retried.string("next_attempt_at").flatMap(Timestamp.parse))
        #expect(nextAt - attemptedAt >= 120_000, "the next attempt \(nextAt - attemptedAt) ms after the 429; Retry-After asked 120 s")
        #expect(nextAt - attemptedAt <= 121_000, "Retry-After lengthens the wait to what was asked, no more")
        // Not before: the daemon's clock is short of the moment by a minute, and the delivery stays due later.
        daemon.advance(by: .seconds(60))
        #expect(try await daemon.apiObject("/api/v1/deliveries").objects("items").first?.int("attempts") == 1)
        // Then on time.
        daemon.advance(by: .seconds(61))
        let requests = try await receiver.wait("the second attempt, answered 200") { $0.contains { $0.answer == "200" } }
        #expect(requests.filter { $0.answer == "429" }.count == 1)
        let delivered = try await waitForValue("the delivery to be listed delivered") {
            try await daemon.apiObject("/api/v1/deliveries").objects("items").first { $0.string("state") == "delivered" }
        }
        #expect(delivered.int("attempts") == 2)
        #expect((delivered.string("last_attempt_at").flatMap(Timestamp.parse) ?? 0) >= nextAt)
        try await daemon.stop()
    }

    @Test("three days after its first attempt a delivery is failed and no longer retried; deliveries retry sends it again", arguments: Backend.allCases)
    func threeDays(backend: Backend) async throws {
        let secret = WebhookReceiver.newSecret()
        // Nothing listens there yet: every attempt fails at once (connection refused).
        let port = try WebhookReceiver.freePort()
        let daemon = try await TestDaemon.start(
            backend: backend, extraYAML: deliveriesYAML(url: "http://127.0.0.1:\(port)/hooks/ipnd", secrets: [secret]))
        try await daemon.deliver("unlimint", order: "TD-1", status: "COMPLETED")
        func delivery() async throws -> JSONDict { try await daemon.apiObject("/api/v1/deliveries").objects("items").first ?? [:] }
        _ = try await waitFor("the first attempt to fail", observing: delivery) { $0.int("attempts") == 1 && $0.string("next_attempt_at") != nil }
        // An hour on: attempted again, still pending.
        daemon.advance(by: .seconds(3600))
        let second = try await waitFor("the second attempt", observing: delivery) { $0.int("attempts") == 2 }
        #expect(second.string("state") == "pending" && second.string("next_attempt_at") != nil, "\(second)")
        // Three days on: the attempt then made is the last; the delivery is failed.
        daemon.advance(by: .seconds(3 * 86_400))
        let failed = try await waitFor("the delivery to be failed", observing: delivery) { $0.string("state") == "failed" }
        #expect(failed.isNull("next_attempt_at") && failed.int("attempts") == 3, "\(failed)")
        #expect(daemon.logs.captured.contains { $0.contains("delivery failed") && $0.contains("target=app") })
        let metrics = try await daemon.api("/metrics").text
        #expect(MetricsText.sample(metrics, "ipnd_deliveries_total", ["target": "app", "outcome": "failed"]) == 1)
        // By hand, once the receiver is there: sent again, delivered.
        let receiver = try WebhookReceiver(secrets: [secret], port: port)
        defer { receiver.stop() }
        let retried = try await ipnd(["deliveries", "retry", "--id", String(failed.int("id") ?? 0), "--config", daemon.configPath])
        #expect(retried.status == 0, "\(retried.stderr)")
        _ = try await receiver.wait("the event sent again") { $0.contains { $0.answer == "200" } }
        let delivered = try await waitFor("the delivery to be delivered", observing: delivery) { $0.string("state") == "delivered" }
        // A retry by hand starts the schedule over: its attempts count from it.
        #expect(delivered.int("attempts") == 1)
        try await daemon.stop()
    }

    @Test("a 410 pauses the target: nothing more is sent, nothing is lost; deliveries resume sends the backlog in order", arguments: Backend.allCases)
    func goneAndResume(backend: Backend) async throws {
        let secret = WebhookReceiver.newSecret()
        let receiver = try WebhookReceiver(secrets: [secret], mode: "gone")
        defer { receiver.stop() }
        let daemon = try await TestDaemon.start(
            backend: backend,
            extraYAML: deliveriesYAML(url: receiver.url, secrets: [secret]))
        try await daemon.deliver("unlimint", order: "G-1", status: "COMPLETED")
        _ = try await receiver.wait("the first event") { !$0.isEmpty }
        try await waitUntil("the delivery to be paused") {
            try await daemon.apiObject("/api/v1/deliveries?state=paused").objects("items").count == 1
        }
        for index in 2...4 { try await daemon.deliver("unlimint", order: "G-\(index)", status: "COMPLETED") }
        // The target is paused: what comes after waits with it, never sent, however much time passes.
        try await waitUntil("the three new deliveries to wait with the paused target") {
            try await daemon.apiObject("/api/v1/deliveries?state=paused").objects("items").count == 4
        }
        daemon.advance(by: .seconds(86_400))
        #expect(try await daemon.apiObject("/api/v1/deliveries?state=paused").objects("items").count == 4)
        #expect(try receiver.requests().count == 1, "a paused target gets nothing")
        let paused = try await ipnd(["deliveries", "list", "--config", daemon.configPath, "--state", "paused", "--format", "json"])
        #expect(paused.status == 0, "\(paused.stderr)")
        #expect(try parseJSONLines(paused.stdout).count == 4)
        try receiver.setMode("ok")
        let resumed = try await ipnd(["deliveries", "resume", "app", "--config", daemon.configPath])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let requests = try await receiver.wait("seqs 1 to 4 delivered") { Set($0.filter { $0.answer == "200" }.map(\.seq)).count == 4 }
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
        let daemon = try await TestDaemon.start(backend: backend, extraYAML: yaml)
        for index in 0..<8 { try await daemon.deliver("unlimint", order: "GS-\(index)", status: "COMPLETED") }
        // One attempt hangs at the receiver; the worker has claimed the next ones behind it.
        _ = try await receiver.wait("the first attempt, which hangs") { !$0.isEmpty }
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
            backend: backend, storeDirectory: daemon.directory, extraYAML: yaml, postgresDatabase: daemon.postgres)
        // The timed-out attempt is retried 5 s after it, on the schedule: the clock moves past that.
        restarted.advance(by: .seconds(60))
        let requests = try await receiver.wait("seqs 1 to 8 delivered") { Set($0.filter { $0.answer == "200" }.map(\.seq)).count == 8 }
        #expect(Set(requests.filter { $0.answer == "200" }.map(\.seq)) == Set(1...8))
        try await restarted.stop()
    }

    @Test("a receiver down for the first half: providers' answers do not wait for it, and the backlog drains once it is back", arguments: Backend.allCases)
    func receiverDown(backend: Backend) async throws {
        let secret = WebhookReceiver.newSecret()
        // Down as a receiver that takes the request and never answers: each attempt holds its
        // place for the whole 20 s timeout.
        let hanging = try WebhookReceiver(secrets: [secret], mode: "hang", arguments: ["--hang", "120"])
        let port = hanging.port
        let daemon = try await TestDaemon.start(
            backend: backend, extraYAML: deliveriesYAML(url: "http://127.0.0.1:\(port)/hooks", secrets: [secret], timeout: 20))
        var latencies: [Duration] = []
        for index in 0..<100 {
            let started = ContinuousClock.now
            try await daemon.deliver("unlimint", order: "D-\(index)", status: "COMPLETED")
            latencies.append(ContinuousClock.now - started)
        }
        // Acknowledged without waiting for the receiver: an answer held behind a delivery would
        // take its 20 s timeout.
        #expect(latencies.max() ?? .zero < .seconds(10), "slowest answer \(latencies.max() ?? .zero)")
        let backlog = try await waitFor("the backlog to be the 100 events", observing: { try await daemon.api("/metrics").text }) {
            MetricsText.sample($0, "ipnd_delivery_backlog", ["target": "app"]) == 100
        }
        #expect(MetricsText.sample(backlog, "ipnd_deliveries_total", ["target": "app", "outcome": "delivered"]) ?? 0 == 0)
        // Back, on the same port: the hung attempts fail (the connections are reset) and are
        // retried on the schedule, at most 2 h and its jitter later; the rest go out as before.
        hanging.stop()
        let receiver = try WebhookReceiver(secrets: [secret], port: port)
        defer { receiver.stop() }
        daemon.advance(by: .seconds(3 * 3600))
        let requests = try await receiver.wait("every seq delivered and verified") {
            Set($0.filter { $0.answer == "200" && $0.verified == [true] }.map(\.seq)).count == 100
        }
        #expect(Set(requests.filter { $0.answer == "200" && $0.verified == [true] }.map(\.seq)) == Set(1...100))
        let metrics = try await waitFor("the backlog to be empty", observing: { try await daemon.api("/metrics").text }) {
            MetricsText.sample($0, "ipnd_delivery_backlog", ["target": "app"]) == 0
        }
        // (An attempt in flight when the clock jumped may have been leased again and sent twice,
        // as at-least-once allows.)
        #expect(MetricsText.sample(metrics, "ipnd_deliveries_total", ["target": "app", "outcome": "delivered"]) ?? 0 >= 100)
        #expect(MetricsText.sample(metrics, "ipnd_deliveries_total", ["target": "app", "outcome": "retried"]) ?? 0 > 0)
        #expect(metrics.contains("ipnd_delivery_duration_seconds_count{target=\"app\"}"))
        // A failed attempt's log line names the target, the event and the error, and no secret.
        let failure = try #require(daemon.logs.captured.first { $0.contains("delivery attempt failed") })
        #expect(failure.contains("target=app") && failure.contains("event_id=") && failure.contains("next_attempt_at="))
        #expect(!daemon.logs.captured.joined().contains(secret))
        try await daemon.stop()
    }
}

@Suite("The README's example receiver (issue 30)", .heavy)
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
            extraYAML: deliveriesYAML(url: "http://127.0.0.1:\(port)/hooks/ipnd", secrets: [secret]))
        for status in ["NEW", "COMPLETED"] { try await daemon.deliver("unlimint", order: "EX-1", status: status) }
        try await daemon.deliver("unlimint", order: "EX-2", status: "NEW")
        // Had the receiver not listened yet at the first attempt, the retry 5 s later finds it.
        let rows = try await waitFor("the example receiver's orders table to show both orders at their last seq", observing: {
            (try? await runProcess(URL(fileURLWithPath: "/usr/bin/sqlite3"), [database, "SELECT order_ref, state, seq FROM orders ORDER BY order_ref"]).stdout) ?? ""
        }) { $0 == "EX-1|paid|2\nEX-2|pending|3\n" }
        #expect(rows == "EX-1|paid|2\nEX-2|pending|3\n")
        try await daemon.stop()
    }
}

/// The fields of a delivery object, written out from README.md ("Connecting your application").
enum SpecDeliveryFields {
    static let delivery: Set<String> = [
        "id", "target", "event_id", "seq", "type", "provider", "account", "order_ref", "state", "attempts", "last_attempt_at",
        "last_status", "last_error", "next_attempt_at", "delivered_at",
    ]
}
