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
import GRDB
import IPNCore
@testable import IPNServer
import Testing

/// The ops console in Debian's Chromium, driven by tools/console_browser_test.py (Selenium)
/// against a real daemon filled through real HTTP; what the pages showed is compared with what
/// the CLI reports. Screenshots of every page at 1280 and 360 px go to `$IPND_TEST_ARTIFACTS/console`
/// when that is set, else to a directory under the test's TMPDIR (printed).
@Suite("The ops console in a real browser (issue 32)", .serialized)
struct ConsoleBrowserTests {
    static let hostile = "<script>window.__ipndPwned=1</script>\"><img src=x onerror=\"window.__ipndPwned=2\">\u{202E}gnp.exe"
    /// The shuffled lifecycle, in the order sent, with the verdict each must get.
    static let shuffled: [(status: String, verdict: String)] = [
        ("COMPLETED", "applied"), ("AUTHORIZED", "stale"), ("NEW", "stale"), ("COMPLETED", "duplicate"),
        ("CHARGED_BACK", "applied"), ("AUTHORIZED", "duplicate"),
    ]

    @Test("Chromium signs in, reads every page, registers an expectation, retries a failed delivery and resumes a paused target; the pages agree with the CLI, and no script ran, no request failed")
    func console() async throws {
        let secret = WebhookReceiver.newSecret()
        let appPort = try WebhookReceiver.freePort()  // nothing listens there until the retry
        let gone = try WebhookReceiver(secrets: [secret], mode: "gone")
        defer { gone.stop() }
        let daemon = try await TestDaemon.start(extraYAML: """
            deliveries:
              - name: app
                url: http://127.0.0.1:\(appPort)/hooks
                secret: [\(secret)]
                timeout_seconds: 2
                providers: [juspay]
              - name: gone
                url: \(gone.url)
                secret: [\(secret)]
                timeout_seconds: 2
                providers: [citcon]
            """, deliveryRetryScale: 0.002)

        // Real data, through the provider listener and the ops API.
        for step in Self.shuffled {
            let answer = try await daemon.post(try daemon.simulated(
                "unlimint", order: "SHUF-1", status: step.status, amount: Money(minor: 1000, currency: "USD"), uid: "SHUF-PAY"))
            #expect(answer.status == 200, "\(step.status): \(answer.text)")
        }
        try await daemon.deliver("unlimint", order: Self.hostile, status: "COMPLETED")
        try await daemon.deliver("unlimint", order: "EXP-1", status: "NEW")
        let expectation = try await daemon.send(
            .PUT, ops: "/api/v1/orders/unlimint/MISMATCH-1/expectation", body: #"{"amount":"5.00","currency":"USD"}"#)
        #expect(expectation.status == 200)
        try await daemon.deliver("unlimint", order: "MISMATCH-1", status: "COMPLETED")
        let forged = UnlimintRequests.body(order: "FORGED-1", id: "F1", status: "COMPLETED")
        let rejected = try await daemon.post("/ipn/unlimint", body: forged, headers: UnlimintRequests.headers(for: forged, secret: "wrong"))
        #expect(rejected.status >= 400)
        for index in 1...55 { try await daemon.deliver("unlimint", order: String(format: "PAGE-%02d", index), status: "COMPLETED") }
        try await daemon.deliver("juspay", order: "FAIL-1", status: "CHARGED", amount: Money(minor: 60000, currency: "INR"))
        try await daemon.deliver("citcon", order: "GONE-1", status: "success")

        // FAIL-1's delivery: three days of failed attempts, made short by moving its first attempt back.
        try await waitUntil { try daemon.count("SELECT COUNT(*) FROM deliveries WHERE target = 'app' AND attempts > 0") == 1 }
        try writeStore(daemon, "UPDATE deliveries SET first_attempt_at = '2026-01-01T00:00:00.000Z' WHERE target = 'app'")
        let failedID = try await waitForDelivery(daemon, target: "app", state: "failed")
        _ = try await waitForDelivery(daemon, target: "gone", state: "paused")
        let app = try WebhookReceiver(secrets: [secret], port: appPort)
        defer { app.stop() }
        try gone.setMode("ok")

        // The notifications page from the hostile one down (newer ones fill the first page).
        let hostileID = try daemon.count("SELECT id FROM notifications WHERE order_ref = ?", [Self.hostile])
        let artifacts = try Self.artifactsDirectory()
        let scenario: [String: Any] = [
            "base_url": "http://127.0.0.1:\(daemon.ports.ops)", "token": TestDaemon.opsToken, "bad_token": "wrong-token",
            "artifacts": artifacts.path, "shuffled_order_path": "/orders/unlimint/default/SHUF-1",
            "hostile_prefix": "<script>", "hostile_ref": Self.hostile, "hostile_notifications_path": "/notifications?before=\(hostileID + 1)",
            "expectation_order_path": "/orders/unlimint/default/EXP-1", "search_prefix": "PAGE-",
            "failed_delivery_id": failedID, "paused_target": "gone",
        ]
        let scenarioPath = daemon.directory.appendingPathComponent("console-scenario.json")
        try JSONSerialization.data(withJSONObject: scenario).write(to: scenarioPath)
        let run = try await runPythonTool("console_browser_test.py", [scenarioPath.path], timeout: 300)
        try #require(run.status == 0, "console_browser_test.py failed (\(run.status)):\n\(run.stderr.suffix(4000))")
        let report = try parseJSONObject(String(run.stdout.split(separator: "\n").last ?? ""))
        print("console screenshots: \(artifacts.path)")

        // Nothing the browser reports went wrong; no page is wider than a 360 px window.
        #expect((report["console_errors"] as? [Any])?.isEmpty == true, "\(report["console_errors"] ?? "")")
        #expect((report["failed_requests"] as? [Any])?.isEmpty == true, "\(report["failed_requests"] ?? "")")
        #expect((report["overflowing"] as? [Any])?.isEmpty == true, "\(report["overflowing"] ?? "")")
        let screenshots = (report["screenshots"] as? [String]) ?? []
        #expect(screenshots.count == 18)
        for path in screenshots {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            #expect(size > 2000, "\(path)")
        }

        // Signing in: a bad token is refused with no session; the good one returns to the page asked for.
        #expect((report["signed_out_path"] as? String)?.hasPrefix("/sign-in?next=") == true)
        let bad = try #require(report["bad_token"] as? JSONDict)
        #expect(bad.string("path") == "/sign-in" && bad.string("error") == "That token is not accepted.")
        #expect(bad["session_cookie"] as? Bool == false)
        #expect((report["good_token"] as? JSONDict)?.string("path") == "/orders?state=paid")
        let cookie = try #require(report["cookie"] as? JSONDict)
        #expect(cookie["http_only"] as? Bool == true && cookie.string("same_site") == "Strict" && cookie["secure"] as? Bool == false)
        #expect((43_000...43_200).contains(cookie.int("lifetime_seconds") ?? 0))

        // The overview's counts are the CLI's.
        let notifications = try parseJSONLines(try await cli(daemon, ["notifications", "list", "--limit", "10000", "--format", "json"]))
        let orders = try parseJSONLines(try await cli(daemon, ["orders", "list", "--limit", "10000", "--format", "json"]))
        let overview = try #require(report["overview"] as? JSONDict)
        var verdicts = Dictionary(uniqueKeysWithValues: Verdict.allCases.map { ($0.rawValue, 0) })
        for note in notifications { verdicts[note.string("verdict") ?? "?", default: 0] += 1 }
        #expect(overview["verdicts"] as? [String: Int] == verdicts)
        #expect(overview.int("total_notifications") == notifications.count)
        var states: [String: Int] = [:]
        for order in orders { states[order.string("state") ?? "?", default: 0] += 1 }
        #expect(overview["states"] as? [String: Int] == states)
        #expect(overview.int("total_orders") == orders.count)
        #expect(overview["rejections"] as? [String: Int] == ["bad_signature": 1])
        #expect(overview.int("mismatch") == orders.filter { ($0["flags"] as? [String])?.contains("amount_mismatch") == true }.count)
        #expect(overview.int("mismatch") == 1)
        #expect(overview.int("chart_bars") == 24 && (overview.int("chart_segments") ?? 0) >= 1)

        // Orders, newest first, two pages; the search, by reference, in two pages of 50 and 5.
        let pages = try #require(report["orders_pages"] as? JSONDict)
        let newest = orders.compactMap { $0.string("order_ref") }.map(VisibleText.escaping)
        #expect(pages["first"] as? [String] == Array(newest.prefix(50)))
        #expect(pages["second"] as? [String] == Array(newest.dropFirst(50).prefix(50)))
        let search = try #require(report["search_pages"] as? [[String]])
        #expect(search.map(\.count) == [50, 5])
        #expect(search.flatMap { $0 } == (1...55).map { String(format: "PAGE-%02d", $0) })

        // The shuffled order: its notifications in arrival order with their verdicts, as the CLI lists them.
        let shown = try parseJSONObject(try await cli(daemon, ["orders", "show", "unlimint", "SHUF-1", "--format", "json"]))
        let cliVerdicts = shown.objects("notifications").compactMap { $0.string("verdict") }
        #expect(cliVerdicts == Self.shuffled.map(\.verdict))
        let timeline = try #require(report["timeline"] as? [JSONDict])
        #expect(timeline.filter { $0.string("kind") == "notification" }.compactMap { $0.string("verdict") } == cliVerdicts)
        #expect(timeline.filter { $0.string("kind") == "transition" }.count == shown.objects("transitions").count)
        #expect(timeline.filter { $0.string("kind") == "event" }.count == 2)
        #expect(timeline.first?.string("kind") == "notification")
        #expect(report["order_state"] as? String == "charged_back")
        let raw = try #require(report["raw"] as? JSONDict)
        #expect(raw.int("bodies") == Self.shuffled.count)
        #expect(raw.string("text")?.contains("content-type: application/json") == true)
        #expect(raw.string("text")?.contains("SHUF-1") == true)
        #expect((report["notification_page"] as? JSONDict)?.string("title")?.hasPrefix("Notification ") == true)

        // The hostile reference is text wherever it is shown, written as the CLI writes it; nothing ran.
        let hostile = try #require(report["hostile"] as? JSONDict)
        let visible = VisibleText.escaping(Self.hostile)
        #expect(visible.contains("\\u{202e}"))
        #expect(hostile.string("order_ref_shown") == visible)
        #expect(hostile.string("title_shown") == "Order \(visible) · ipnd")
        #expect((hostile["search_results"] as? [String]) == [visible])
        #expect((hostile["notifications_shown"] as? [String])?.contains(visible) == true)
        for page in ["search", "order", "notifications", "overview"] {
            let inert = try #require(hostile[page] as? JSONDict, "\(page)")
            #expect(inert.int("images") == 0 && inert.int("scripts") == 0 && inert["pwned"] as? Bool == false, "\(page): \(inert)")
        }

        // The expectation registered from the page is the CLI's; the form without its CSRF token changed nothing.
        let registered = try #require(report["expectation"] as? JSONDict)
        #expect(registered.string("flash") == "Expectation registered.")
        #expect(registered.string("expected") == "12.34 USD")
        let refused = try #require(report["without_csrf"] as? JSONDict)
        #expect(refused.string("title") == "Refused" && refused.string("error")?.contains("CSRF") == true)
        let exp = try parseJSONObject(try await cli(daemon, ["orders", "show", "unlimint", "EXP-1", "--format", "json"]))
        #expect((exp["expected"] as? JSONDict)?.string("amount") == "12.34")

        // The failed delivery retried from the page, and the paused target resumed: both delivered, as the CLI shows.
        #expect(report["failed_row_state"] as? String == "failed")
        #expect((report["retry"] as? JSONDict)?.string("flash") == "1 delivery put back to pending for an immediate attempt.")
        #expect((report["resume"] as? JSONDict)?.string("flash")?.hasPrefix("Target resumed; 1 pending delivery is due now.") == true)
        #expect(try await waitForDelivery(daemon, target: "app", state: "delivered") == failedID)
        _ = try await waitForDelivery(daemon, target: "gone", state: "delivered")
        #expect(try app.deliveredSeqs().count == 1)

        // Signing out ends the session.
        #expect((report["signed_out"] as? JSONDict)?.string("path") == "/sign-in")
        #expect((report["after_sign_out"] as? JSONDict)?.string("path")?.hasPrefix("/sign-in") == true)
        try await daemon.stop()
    }

    /// Where the screenshots go: `$IPND_TEST_ARTIFACTS/console`, else a fresh directory under TMPDIR.
    static func artifactsDirectory() throws -> URL {
        let directory = ProcessInfo.processInfo.environment["IPND_TEST_ARTIFACTS"].map {
            URL(fileURLWithPath: $0).appendingPathComponent("console")
        } ?? FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-console-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// `ipnd ARGS --config ...`'s standard output, expecting success.
    private func cli(_ daemon: TestDaemon, _ arguments: [String]) async throws -> String {
        let result = try await ipnd(arguments + ["--config", daemon.configPath])
        #expect(result.status == 0, "ipnd \(arguments.joined(separator: " ")): \(result.stderr)")
        return result.stdout
    }

    /// Waits until `ipnd deliveries list --target` shows one delivery in `state`; returns its id.
    private func waitForDelivery(_ daemon: TestDaemon, target: String, state: String) async throws -> Int {
        var found: Int?
        try await waitUntil(timeout: 30) {
            let listed = try parseJSONLines(try await cli(daemon, ["deliveries", "list", "--target", target, "--format", "json"]))
            found = listed.first { $0.string("state") == state }?.int("id")
            return found != nil
        }
        return try #require(found, "no \(state) delivery for \(target)")
    }

    /// Writes to the daemon's store beside it, as `ipnd` commands do (SQLite's locks serialise the two).
    private func writeStore(_ daemon: TestDaemon, _ sql: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let queue = try DatabaseQueue(path: daemon.config.store.path, configuration: configuration)
        try queue.write { db in try db.execute(sql: sql) }
    }
}
