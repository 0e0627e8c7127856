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
@testable import IPNServer
import Testing

@Suite("/metrics: Prometheus text that moves with deliveries (issue 4)")
struct MetricsTests {
    @Test("parses as Prometheus text; notification counters, latency and commit histograms, orders by state, build info")
    func countersMove() async throws {
        let daemon = try await TestDaemon.start()
        let first = try await daemon.get("/metrics", ops: true)
        #expect(first.status == 200)
        #expect(first.headers["Content-Type"].first?.hasPrefix("text/plain; version=0.0.4") == true)
        let before = try parsePrometheus(first.text)
        #expect(before.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "applied"]) == 0)
        #expect(before.value("ipnd_build_info")  == 1)
        #expect(before.first { $0.name == "ipnd_build_info" }?.labels["version"]?.isEmpty == false)
        #expect(before.value("ipnd_orders", ["state": "paid"]) == 0)
        let commitsBefore = before.value("ipnd_store_commit_duration_seconds_count") ?? 0
        // Checkpoints start at 1000 WAL frames, far beyond this test; their instruments exist from the start.
        #expect(before.value("ipnd_store_checkpoint_duration_seconds_count") == 0)
        #expect(before.value("ipnd_store_checkpoint_failures_total") == 0)

        try await daemon.deliver("unlimint", order: "MET-1", status: "COMPLETED", uid: "m1")
        try await daemon.deliver("unlimint", order: "MET-1", status: "COMPLETED", uid: "m1")  // duplicate
        try await daemon.deliver("unlimint", order: "MET-2", status: "IN_PROGRESS")
        try await daemon.deliver("citcon", order: "MET-3", status: "success")
        let forged = UnlimintRequests.body(order: "MET-4", id: "f", status: "COMPLETED")
        _ = try await daemon.post("/ipn/unlimint", body: forged, headers: UnlimintRequests.headers(for: forged, secret: "guess"))

        let after = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        #expect(after.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "applied"]) == 2)
        #expect(after.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "duplicate"]) == 1)
        #expect(after.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "rejected"]) == 1)
        #expect(after.value("ipnd_notifications_total", ["provider": "citcon", "verdict": "applied"]) == 1)
        #expect(after.value("ipnd_notifications_total", ["provider": "alipay", "verdict": "applied"]) == 0)
        #expect(after.value("ipnd_request_duration_seconds_count", ["provider": "unlimint"]) == 4)
        #expect(after.value("ipnd_request_duration_seconds_bucket", ["provider": "unlimint", "le": "+Inf"]) == 4)
        #expect(after.value("ipnd_request_duration_seconds_count", ["provider": "citcon"]) == 1)
        #expect((after.value("ipnd_store_commit_duration_seconds_count") ?? 0) > commitsBefore)
        #expect(after.value("ipnd_orders", ["state": "paid"]) == 2)
        #expect(after.value("ipnd_orders", ["state": "pending"]) == 1)
        #expect(after.value("ipnd_orders", ["state": "refunded"]) == 0)
        try await daemon.stop()
    }

    @Test("each daemon counts only its own deliveries")
    func perDaemonRegistry() async throws {
        let one = try await TestDaemon.start()
        let two = try await TestDaemon.start()
        try await one.deliver("unlimint", order: "ONE-1", status: "COMPLETED")
        let metrics = try parsePrometheus(try await two.get("/metrics", ops: true).text)
        #expect(metrics.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "applied"]) == 0)
        try await one.stop()
        try await two.stop()
    }
}

/// `/metrics` as Prometheus expects it: every family with its HELP and TYPE, families, series
/// and histogram buckets in a stable order, readable by another parser than ours.
@Suite("/metrics: HELP for every family, a stable order, read by prometheus_client")
struct MetricsExpositionTests {
    @Test("every family has one HELP (from MetricHelp) and one TYPE before its samples; two scrapes list the same series in the same, sorted order")
    func layoutAndOrder() async throws {
        let daemon = try await TestDaemon.start()
        try await Self.deliverAFew(to: daemon)
        let first = try await daemon.get("/metrics", ops: true).text
        try await daemon.deliver("unlimint", order: "LAY-9", status: "COMPLETED")
        let second = try await daemon.get("/metrics", ops: true).text
        try await daemon.stop()

        let layouts = try [first, second].map { try ExpositionLayout($0) }
        for layout in layouts {
            let names = layout.families.map(\.name)
            #expect(names == names.sorted() && Set(names).count == names.count, "families not sorted by name: \(names)")
            for family in layout.families {
                #expect(MetricHelp.texts[family.name] == family.help, "\(family.name): HELP \(family.help)")
            }
            #expect(layout.seriesOrderProblems.isEmpty, "\(layout.seriesOrderProblems)")
        }
        #expect(layouts[0].families.map(\.name) == layouts[1].families.map(\.name))
        #expect(layouts[0].series == layouts[1].series, "the second scrape lists its series in another order")
        // Values moved between the two scrapes; only the order stayed.
        #expect(first != second)
        let names = Set(layouts[0].families.map(\.name))
        for family in ["ipnd_notifications_total", "ipnd_request_duration_seconds", "ipnd_orders", "ipnd_build_info",
                       "ipnd_store_commit_batch_size", "ipnd_notifications_linked_total"] {
            #expect(names.contains(family), "\(family) missing from \(names)")
        }
    }

    @Test("ipnd_notifications_linked_total has a series only for the verdicts a waiting notification can end with")
    func linkedVerdicts() async throws {
        let daemon = try await TestDaemon.start()
        try await Self.deliverAFew(to: daemon)
        let samples = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        try await daemon.stop()
        let linked = samples.filter { $0.name == "ipnd_notifications_linked_total" }
        let verdicts = Set(linked.compactMap { $0.labels["verdict"] })
        #expect(verdicts == ["applied", "recorded", "stale", "mismatch", "unknown_status"])
        #expect(linked.count == ProviderRegistry.all.count * verdicts.count)
        #expect(samples.value("ipnd_notifications_linked_total", ["provider": "alipay", "verdict": "applied"]) == 1)
        #expect(samples.value("ipnd_notifications_total", ["provider": "alipay", "verdict": "unlinked"]) == 1)
    }

    @Test("a linked verdict outside those is still counted, in a series made when it first happens")
    func linkedVerdictOutsideTheExpected() throws {
        let metrics = MetricsRegistry()
        let read = { try parsePrometheus(PrometheusExposition(parsing: metrics.registry.emitToString()).rendered(help: MetricHelp.text(for:))) }
        #expect(try read().value("ipnd_notifications_linked_total", ["provider": "alipay", "verdict": "duplicate"]) == nil)
        metrics.server.linked(provider: "alipay", verdict: .duplicate)
        metrics.server.linked(provider: "alipay", verdict: .duplicate)
        #expect(try read().value("ipnd_notifications_linked_total", ["provider": "alipay", "verdict": "duplicate"]) == 2)
    }

    @Test("the order is the same whatever order the registry writes families, series and buckets in")
    func exposition() {
        let counters = [
            #"x_total{provider="b",verdict="applied"} 1"#,
            #"x_total{provider="a",verdict="stale"} 2"#,
            #"x_total{provider="a",verdict="applied"} 3"#,
        ]
        let histogram = [
            #"h_seconds_bucket{p="q\"}, r",le="0.5"} 1"#, #"h_seconds_bucket{p="q\"}, r",le="+Inf"} 2"#,
            #"h_seconds_bucket{p="q\"}, r",le="0.05"} 0"#, #"h_seconds_sum{p="q\"}, r"} 3.5"#, #"h_seconds_count{p="q\"}, r"} 2"#,
            #"h_seconds_bucket{p="a",le="0.05"} 0"#, #"h_seconds_bucket{p="a",le="0.5"} 0"#, #"h_seconds_bucket{p="a",le="+Inf"} 0"#,
            #"h_seconds_sum{p="a"} 0"#, #"h_seconds_count{p="a"} 0"#,
        ]
        let one = (["# TYPE x_total counter"] + counters + ["# HELP h_seconds theirs", "# TYPE h_seconds histogram"] + histogram
            + ["# TYPE b gauge", "b 7"]).joined(separator: "\n")
        let two = (["# TYPE b gauge", "b 7", "# TYPE h_seconds histogram"] + histogram.reversed() + ["# TYPE x_total counter"]
            + counters.reversed()).joined(separator: "\n")
        let help: (String) -> String = { "about \($0)\\ and\nmore" }
        let expected = """
            # HELP b about b\\\\ and\\nmore
            # TYPE b gauge
            b 7
            # HELP h_seconds about h_seconds\\\\ and\\nmore
            # TYPE h_seconds histogram
            h_seconds_bucket{p="a",le="0.05"} 0
            h_seconds_bucket{p="a",le="0.5"} 0
            h_seconds_bucket{p="a",le="+Inf"} 0
            h_seconds_sum{p="a"} 0
            h_seconds_count{p="a"} 0
            h_seconds_bucket{p="q\\"}, r",le="0.05"} 0
            h_seconds_bucket{p="q\\"}, r",le="0.5"} 1
            h_seconds_bucket{p="q\\"}, r",le="+Inf"} 2
            h_seconds_sum{p="q\\"}, r"} 3.5
            h_seconds_count{p="q\\"}, r"} 2
            # HELP x_total about x_total\\\\ and\\nmore
            # TYPE x_total counter
            x_total{provider="a",verdict="applied"} 3
            x_total{provider="a",verdict="stale"} 2
            x_total{provider="b",verdict="applied"} 1

            """
        #expect(PrometheusExposition(parsing: one).rendered(help: help) == expected)
        #expect(PrometheusExposition(parsing: two).rendered(help: help) == expected)
    }

    @Test("Python's prometheus_client reads every family, its HELP and every sample as ours does",
          .enabled("needs python3 with prometheus_client: pip install -r tools/requirements-test.txt") {
              await PrometheusClient.isImportable()
          })
    func independentParser() async throws {
        let daemon = try await TestDaemon.start()
        try await Self.deliverAFew(to: daemon)
        let text = try await daemon.get("/metrics", ops: true).text
        try await daemon.stop()

        let theirs = try await PrometheusClient.parse(text)
        let layout = try ExpositionLayout(text)
        #expect(theirs.count == layout.families.count, "\(theirs.map(\.name)) against \(layout.families.map(\.name))")
        for family in theirs {
            #expect(!family.help.isEmpty, "\(family.name) has no HELP for prometheus_client")
        }
        for family in layout.families {
            // prometheus_client names a counter family without its `_total`.
            let name = family.type == "counter" && family.name.hasSuffix("_total") ? String(family.name.dropLast(6)) : family.name
            let seen = theirs.first { $0.name == name }
            #expect(seen?.type == family.type, "\(family.name): \(String(describing: seen))")
            #expect(seen?.help == family.help, "\(family.name): \(String(describing: seen))")
        }
        let ours = try parsePrometheus(text)
        let theirSamples = theirs.flatMap(\.samples)
        #expect(theirSamples.count == ours.count)
        for sample in ours {
            #expect(theirSamples.contains(sample), "prometheus_client did not read \(sample)")
        }
        #expect(ours.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "applied"]) == 1)
    }

    /// Applied, duplicate and rejected notifications for Unlimint, one for Citcon, and an Alipay
    /// refund that waits for its payment and is linked when it arrives.
    static func deliverAFew(to daemon: TestDaemon) async throws {
        try await daemon.deliver("unlimint", order: "LAY-1", status: "COMPLETED", uid: "lay-1")
        try await daemon.deliver("unlimint", order: "LAY-1", status: "COMPLETED", uid: "lay-1")
        try await daemon.deliver("citcon", order: "LAY-2", status: "success")
        let forged = UnlimintRequests.body(order: "LAY-3", id: "f", status: "COMPLETED")
        #expect(try await daemon.post("/ipn/unlimint", body: forged, headers: UnlimintRequests.headers(for: forged, secret: "guess"))
            .status != 200)

        let key = try RSAPrivateKey(pem: String(contentsOfFile: TestDaemon.alipayPrivateKeyPath, encoding: .utf8))
        let refund = Array(#"{"notifyType":"REFUND_RESULT","refundRequestId":"RR-9","refundId":"R-9","paymentId":"PAY-LAY-4","refundAmount":{"currency":"SGD","value":"4200"},"refundTime":"2026-11-21T13:00:00+08:00","refundStatus":"SUCCESS","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#.utf8)
        let requestTime = "2026-11-21T05:00:00Z"
        let headers = [
            ("Content-Type", "application/json"), ("client-id", TestDaemon.alipayClientID), ("request-time", requestTime),
            ("signature", Alipay.signatureHeader(path: "/ipn/alipay", clientID: TestDaemon.alipayClientID,
                                                 requestTime: requestTime, body: refund, key: key)),
        ]
        #expect(try await daemon.post("/ipn/alipay", body: refund, headers: headers).status == 200)
        try await daemon.deliver("alipay", order: "LAY-4", status: "S", amount: Money(minor: 4200, currency: "SGD"), uid: "PAY-LAY-4")
    }
}

/// An exposition read line by line, strictly: each family opens with exactly one `# HELP` line
/// and then one `# TYPE` line, and every sample belongs to the family opened last.
struct ExpositionLayout {
    struct Family {
        let name: String
        let type: String
        let help: String
        var samples: [PrometheusSample] = []
    }

    struct LayoutError: Error, CustomStringConvertible {
        let line: String
        let why: String
        var description: String { "\(why): \(line)" }
    }

    private(set) var families: [Family] = []
    /// Every sample line without its value, in order.
    private(set) var series: [String] = []

    init(_ text: String) throws {
        var pendingHelp: (name: String, text: String)?
        for line in text.split(separator: "\n").map(String.init) {
            let words = line.split(separator: " ", maxSplits: 3).map(String.init)
            if line.hasPrefix("# HELP ") {
                guard pendingHelp == nil, words.count >= 3 else { throw LayoutError(line: line, why: "HELP not followed by TYPE") }
                guard !families.contains(where: { $0.name == words[2] }) else { throw LayoutError(line: line, why: "second HELP") }
                pendingHelp = (words[2], words.count == 4 ? words[3] : "")
            } else if line.hasPrefix("# TYPE ") {
                guard let help = pendingHelp, words.count == 4, help.name == words[2] else {
                    throw LayoutError(line: line, why: "TYPE without a HELP line for the same family just before")
                }
                families.append(Family(name: words[2], type: words[3], help: help.text))
                pendingHelp = nil
            } else {
                guard pendingHelp == nil, let family = families.last else { throw LayoutError(line: line, why: "sample before HELP and TYPE") }
                guard let sample = try parsePrometheus("# TYPE \(family.name) \(family.type)\n\(line)").first else {
                    throw LayoutError(line: line, why: "not a sample of \(family.name)")
                }
                let suffixes = family.type == "histogram" ? ["_bucket", "_sum", "_count"] : [""]
                guard suffixes.contains(where: { family.name + $0 == sample.name }) else {
                    throw LayoutError(line: line, why: "sample outside its family \(family.name)")
                }
                families[families.count - 1].samples.append(sample)
                series.append(String(line[..<(line.lastIndex(of: " ") ?? line.endIndex)]))
            }
        }
    }

    /// What breaks the order within families: series not sorted by label set or split up, and
    /// a histogram's lines not as buckets by ascending `le`, `+Inf` last, then `_sum` and `_count`.
    var seriesOrderProblems: [String] {
        var problems: [String] = []
        for family in families {
            let keys = family.samples.map { sample in
                sample.labels.filter { $0.key != "le" }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            }
            var finished: [[String]] = []
            for (previous, key) in zip(keys, keys.dropFirst()) where previous != key {
                if !previous.lexicographicallyPrecedes(key) { problems.append("\(family.name): \(key) after \(previous)") }
                finished.append(previous)
                if finished.contains(key) { problems.append("\(family.name): \(key) split up") }
            }
            guard family.type == "histogram" else { continue }
            var start = 0
            while start < family.samples.count {
                let end = keys[start...].firstIndex { $0 != keys[start] } ?? keys.count
                let lines = family.samples[start..<end]
                let names = lines.map(\.name)
                let bounds = lines.compactMap { $0.labels["le"] }.map { $0 == "+Inf" ? Double.infinity : Double($0) ?? .nan }
                let expectedNames = Array(repeating: family.name + "_bucket", count: bounds.count) + [family.name + "_sum", family.name + "_count"]
                if names != expectedNames || bounds.last != .infinity || bounds != bounds.sorted() || Set(bounds).count != bounds.count {
                    problems.append("\(family.name) \(keys[start]): \(names) \(bounds)")
                }
                start = end
            }
        }
        return problems
    }
}

/// Python's `prometheus_client` (pip package; tools/requirements-test.txt), run on an exposition.
enum PrometheusClient {
    struct Family: CustomStringConvertible {
        let name: String
        let type: String
        let help: String
        let samples: [PrometheusSample]
        var description: String { "\(name) (\(type)): \(help)" }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let python = URL(fileURLWithPath: "/usr/bin/env")

    static func isImportable() async -> Bool {
        (try? await runProcess(python, ["python3", "-c", "import prometheus_client.parser"]))?.status == 0
    }

    /// The families `text_string_to_metric_families` reads in `text`.
    static func parse(_ text: String) async throws -> [Family] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-metrics-\(UUID().uuidString).txt")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            families = []
            for family in text_string_to_metric_families(open(sys.argv[1], encoding="utf-8").read()):
                families.append({"name": family.name, "type": family.type, "help": family.documentation,
                                 "samples": [{"name": s.name, "labels": s.labels, "value": repr(float(s.value))} for s in family.samples]})
            json.dump(families, sys.stdout)
            """
        let result = try await runProcess(python, ["python3", "-c", script, file.path])
        guard result.status == 0 else { throw Failure(description: "prometheus_client could not read /metrics: \(result.stderr)") }
        guard let families = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]] else {
            throw Failure(description: "not a JSON list: \(result.stdout)")
        }
        return try families.map { family in
            guard let name = family["name"] as? String, let type = family["type"] as? String, let help = family["help"] as? String,
                  let samples = family["samples"] as? [[String: Any]] else {
                throw Failure(description: "unexpected family \(family)")
            }
            return Family(name: name, type: type, help: help, samples: try samples.map { sample in
                guard let name = sample["name"] as? String, let labels = sample["labels"] as? [String: String],
                      let valueText = sample["value"] as? String, let value = Double(valueText) else {
                    throw Failure(description: "unexpected sample \(sample)")
                }
                return PrometheusSample(name: name, labels: labels, value: value)
            })
        }
    }
}
