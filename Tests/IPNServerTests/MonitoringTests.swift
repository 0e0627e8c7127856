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
@testable import IPNServer
import Testing

/// The alerting rules (deploy/prometheus/ipnd.rules.yml) and the Grafana dashboard
/// (deploy/grafana/ipnd.json) read only series a running ipnd exports.
///
/// The names come from tools/check_monitoring.py, which parses every expression with a PromQL
/// parser (so functions, label names and recording rules are never taken for metrics) and checks
/// the files' structure: the dashboard as Grafana imports it, each alert's labels, annotations,
/// runbook section and promtool tests. They are compared with a scrape of a real daemon driven so
/// that the families the rules read have series (a delivery target, an inquiry account, an
/// applied and a rejected notification), not with `MetricHelp.texts`: a HELP entry does not show
/// that a series of that name, with those labels and the histogram's `_bucket` suffix, exists.
@Suite("Alerting rules and dashboard: only metrics ipnd exports, a dashboard Grafana imports (issue 45)", .heavy)
struct MonitoringTests {
    /// Labels Prometheus adds to every series of a target.
    static let targetLabels: Set<String> = ["job", "instance"]

    @Test("every metric the rules and the dashboard read is on /metrics, with the labels their matchers and groupings name; the files pass the structure checks",
          .enabled("needs python3 with promql-parser and PyYAML: pip install -r tools/requirements-test.txt") {
              await MonitoringCheck.isAvailable()
          })
    func rulesReadWhatIpndExports() async throws {
        let scrape = try await Self.drivenScrape()
        let report = try await MonitoringCheck.run()
        #expect(report.problems.isEmpty, "tools/check_monitoring.py:\n\(report.problems.joined(separator: "\n"))")
        #expect(report.alerts.count >= 19, "\(report.alerts)")
        #expect(report.metrics.count >= 20, "\(report.metrics.keys.sorted())")
        let mismatches = Self.mismatches(report, scrape: scrape)
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
    }

    @Test("the checks catch a misspelled metric, a label the metric lacks, a panel without its data source, an alert without a runbook section or a test",
          .enabled("needs python3 with promql-parser and PyYAML: pip install -r tools/requirements-test.txt") {
              await MonitoringCheck.isAvailable()
          })
    func checksCatchMistakes() async throws {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-monitoring-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: copy) }
        let files = ["deploy/prometheus/ipnd.rules.yml", "deploy/prometheus/ipnd.rules.test.yml",
                     "deploy/prometheus/ipnd-audit.rules.test.yml", "deploy/grafana/ipnd.json", "docs/alerts.md"]
        for file in files {
            let target = copy.appendingPathComponent(file)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent(file), to: target)
        }
        func edit(_ file: String, _ change: (String) -> String) throws {
            let url = copy.appendingPathComponent(file)
            let text = try String(contentsOf: url, encoding: .utf8)
            let changed = change(text)
            #expect(changed != text, "the edit of \(file) changed nothing")
            try Data(changed.utf8).write(to: url)
        }
        try edit("deploy/prometheus/ipnd.rules.yml") {
            $0.replacingOccurrences(of: "expr: ipnd_ready == 0", with: "expr: ipnd_readyness == 0")
                .replacingOccurrences(of: #"ipnd_deliveries_total{outcome="failed"}"#, with: #"ipnd_deliveries_total{result="failed"}"#)
        }
        try edit("deploy/grafana/ipnd.json") {
            $0.replacingOccurrences(of: #"ipnd_connections_limit{job=~\"$job\"}"#, with: #"ipnd_connections_limit{job=~\"$jobs\"}"#)
        }
        try edit("docs/alerts.md") { $0.replacingOccurrences(of: "## IpndAcceptsPaused", with: "## Accepts paused") }
        try edit("deploy/prometheus/ipnd.rules.test.yml") { $0.replacingOccurrences(of: "alertname: IpndConfigReloadFailed\n        exp_alerts: []", with: "alertname: IpndConfigReloadFailed\n        exp_alerts: [{exp_labels: {severity: warning}}]") }
        // The first panel that has a data source loses it.
        let dashboardURL = copy.appendingPathComponent("deploy/grafana/ipnd.json")
        var dashboard = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dashboardURL)) as? [String: Any])
        var panels = try #require(dashboard["panels"] as? [[String: Any]])
        let first = try #require(panels.firstIndex { $0["datasource"] != nil })
        let title = try #require(panels[first]["title"] as? String)
        panels[first]["datasource"] = nil
        dashboard["panels"] = panels
        try JSONSerialization.data(withJSONObject: dashboard).write(to: dashboardURL)

        let report = try await MonitoringCheck.run(root: copy)
        let problems = report.problems.joined(separator: "\n")
        #expect(problems.contains("panel '\(title)': datasource"), "\(problems)")
        #expect(problems.contains("variable $jobs is not in templating.list"), "\(problems)")
        #expect(problems.contains("IpndAcceptsPaused: docs/alerts.md has no section #ipndacceptspaused"), "\(problems)")
        #expect(problems.contains("IpndConfigReloadFailed: no promtool test in which it does not fire"), "\(problems)")

        let scrape = try await Self.drivenScrape()
        let mismatches = Self.mismatches(report, scrape: scrape).joined(separator: "\n")
        #expect(mismatches.contains("ipnd_readyness: not on /metrics"), "\(mismatches)")
        #expect(mismatches.contains("ipnd_deliveries_total: no series has the label result"), "\(mismatches)")
        #expect(!mismatches.contains("ipnd_connections_limit"), "\(mismatches)")
    }

    /// What the report names that the scrape does not have: a metric with no sample of that name,
    /// a matcher's label no sample of it carries, a grouping label no ipnd series carries.
    static func mismatches(_ report: MonitoringCheck.Report, scrape: [PrometheusSample]) -> [String] {
        var found: [String] = []
        var allLabels = targetLabels
        for sample in scrape { allLabels.formUnion(sample.labels.keys) }
        for (metric, labels) in report.metrics.sorted(by: { $0.key < $1.key }) {
            let samples = scrape.filter { $0.name == metric }
            guard !samples.isEmpty else {
                found.append("\(metric): not on /metrics of a daemon with a delivery target and an inquiry account, after an applied "
                    + "and a rejected notification (if ipnd exports it in other conditions, drive the test's daemon so it has a series)")
                continue
            }
            let carried = samples.reduce(into: targetLabels) { $0.formUnion($1.labels.keys) }
            for label in labels where !carried.contains(label) {
                found.append("\(metric): no series has the label \(label) (it has \(carried.sorted()))")
            }
        }
        for label in report.groupingLabels where !allLabels.contains(label) {
            found.append("grouping label \(label): no series of ipnd has it")
        }
        return found
    }

    /// `/metrics` of a daemon with a delivery target and an account asked about its orders, after
    /// an applied and a rejected notification (not stored: a budget of 0, so both rejection
    /// counters have a series).
    static func drivenScrape() async throws -> [PrometheusSample] {
        let inquiry = """
            providers:
              unlimint:
                - account: default
                  callback_secret: \(TestDaemon.unlimintSecret)
                  inquiry:
                    url: http://127.0.0.1:9/inquiry
                    terminal_code: "12345"
                    terminal_password: test-terminal-password
            """
        let daemon = try await TestDaemon.start(
            providersYAML: inquiry, serverYAML: "  rejected_store_per_minute: 0",
            extraYAML: deliveriesYAML(name: "app", url: "http://127.0.0.1:9/hook", secrets: [WebhookReceiver.newSecret()]))
        do {
            try await daemon.deliver("unlimint", order: "MON-1", status: "COMPLETED")
            #expect(try await daemon.postUnlimint("MON-2", secret: "guess").status != 200)
            let samples = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
            try await daemon.stop()
            return samples
        } catch {
            try? await daemon.stop()
            throw error
        }
    }
}

/// tools/check_monitoring.py, run on the repository's files or on a copy of them.
enum MonitoringCheck {
    struct Report {
        var problems: [String]
        var alerts: [String]
        /// Metric name to the label names its matchers use.
        var metrics: [String: [String]]
        var groupingLabels: [String]
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let python = URL(fileURLWithPath: "/usr/bin/env")

    static func isAvailable() async -> Bool {
        (try? await runProcess(python, ["python3", "-c", "import promql_parser, yaml"]))?.status == 0
    }

    static func run(root: URL? = nil) async throws -> Report {
        let script = repositoryRoot.appendingPathComponent("tools/check_monitoring.py").path
        let result = try await runProcess(python, ["python3", script, "--json"] + (root.map { ["--root", $0.path] } ?? []))
        guard result.status == 0 else { throw Failure(description: "check_monitoring.py exited \(result.status): \(result.stderr)") }
        guard let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
              let problems = object["problems"] as? [String], let alerts = object["alerts"] as? [String],
              let metrics = object["metrics"] as? [String: [String]], let grouping = object["grouping_labels"] as? [String]
        else { throw Failure(description: "unexpected output: \(result.stdout)") }
        return Report(problems: problems, alerts: alerts, metrics: metrics, groupingLabels: grouping)
    }
}
