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
@testable import IPNServer
import Testing

/// The metrics the alerting rules (deploy/prometheus/ipnd.rules.yml) need beside the others:
/// per-account notifications and rejections, readiness, a paused target, the last reload.
@Suite("/metrics for the alerts: accounts, rejections by reason, readiness, paused targets, reload (issue 45)", .heavy)
struct AlertMetricsTests {
    @Test("every configured account has ipnd_account_notifications_total from the start; authentic notifications count under their account, rejected ones do not")
    func accountNotifications() async throws {
        let daemon = try await TestDaemon.start()
        let before = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        let accounts = before.filter { $0.name == "ipnd_account_notifications_total" }.map { $0.labels }
        let configured = daemon.config.accountNames.map { ["provider": $0.provider, "account": $0.account] }
        #expect(Set(accounts) == Set(configured), "\(accounts)")
        #expect(accounts.count == configured.count)
        #expect(before.value("ipnd_account_notifications_total", ["provider": "unlimint", "account": "shop2"]) == 0)

        try await daemon.deliver("unlimint", order: "ACC-1", status: "COMPLETED")
        try await daemon.deliver("unlimint", order: "ACC-1", status: "COMPLETED", uid: "ACC-1-again")
        try await daemon.deliverShop2(order: "ACC-2")
        #expect(try await daemon.postUnlimint("ACC-3", secret: "guess").status != 200)

        let after = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        #expect(after.value("ipnd_account_notifications_total", ["provider": "unlimint", "account": "default"]) == 2)
        #expect(after.value("ipnd_account_notifications_total", ["provider": "unlimint", "account": "shop2"]) == 1)
        #expect(after.value("ipnd_account_notifications_total", ["provider": "citcon", "account": "default"]) == 0)
        try await daemon.stop()
    }

    @Test("ipnd_rejected_total counts every rejection by provider, configured account and reason, stored or past the budget; a made-up account name is no series")
    func rejectionsByAccountAndReason() async throws {
        // No rejected request is stored (a budget of 0), and each is counted all the same.
        let daemon = try await TestDaemon.start(serverYAML: "  rejected_store_per_minute: 0")
        #expect(try await daemon.postUnlimint("REJ-1", secret: "guess").status != 200)
        #expect(try await daemon.postUnlimint("REJ-2", secret: "guess").status != 200)
        #expect(try await daemon.postUnlimint("REJ-3", path: "/ipn/unlimint/shop2", secret: "guess").status != 200)
        #expect(try await daemon.postUnlimint("REJ-4", path: "/ipn/unlimint/made-up-1").status == 404)
        #expect(try await daemon.postUnlimint("REJ-5", path: "/ipn/unlimint/made-up-2").status == 404)

        let metrics = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        let rejected = metrics.filter { $0.name == "ipnd_rejected_total" }
        #expect(metrics.value("ipnd_rejected_total", ["provider": "unlimint", "account": "default", "reason": "bad_signature"]) == 2)
        #expect(metrics.value("ipnd_rejected_total", ["provider": "unlimint", "account": "shop2", "reason": "bad_signature"]) == 1)
        #expect(metrics.value("ipnd_rejected_total", ["provider": "unlimint", "account": "", "reason": "unknown_account"]) == 2)
        #expect(rejected.count == 3, "\(rejected)")
        #expect(metrics.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "rejected"]) == 0)
        #expect(metrics.filter { $0.name == "ipnd_rejected_unstored_total" }.map(\.value).reduce(0, +) == 5)
        #expect(metrics.value("ipnd_account_notifications_total", ["provider": "unlimint", "account": "default"]) == 0)
        try await daemon.stop()
    }

    @Test("ipnd_ready is 1 while the store takes the heartbeat and 0 while it cannot, as /readyz answers")
    func readiness() async throws {
        let daemon = try await TestDaemon.start()
        #expect(try parsePrometheus(try await daemon.get("/metrics", ops: true).text).value("ipnd_ready") == 1)
        let pool = try #require(daemon.daemon.sqliteStore).database.pool
        try await pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = ON") }
        #expect(try parsePrometheus(try await daemon.get("/metrics", ops: true).text).value("ipnd_ready") == 0)
        #expect(try await daemon.get("/readyz").status == 503)
        try await pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = OFF") }
        #expect(try parsePrometheus(try await daemon.get("/metrics", ops: true).text).value("ipnd_ready") == 1)
        try await daemon.stop()
    }

    @Test("ipnd_delivery_target_paused follows the target's pause and resume")
    func pausedTarget() async throws {
        let daemon = try await TestDaemon.start(extraYAML: deliveriesYAML(name: "app", url: "http://127.0.0.1:9/hook", secrets: [WebhookReceiver.newSecret()]))
        let paused = { try parsePrometheus(try await daemon.get("/metrics", ops: true).text).value("ipnd_delivery_target_paused", ["target": "app"]) }
        #expect(try await paused() == 0)
        try await daemon.daemon.store.pauseTarget("app", reason: "answered 410 (test)", at: Timestamp.format(epochMilliseconds: 1_800_000_000_000))
        #expect(try await paused() == 1)
        _ = try await daemon.daemon.store.resumeTarget("app", now: Timestamp.format(epochMilliseconds: 1_800_000_060_000))
        #expect(try await paused() == 0)
        try await daemon.stop()
    }

    @Test("a refused reload sets ipnd_config_last_reload_successful to 0 until one is put in force; the accounts' series follow the reload")
    func reloadOutcome() async throws {
        let daemon = try await TestDaemon.start()
        let scrape = { try parsePrometheus(try await daemon.get("/metrics", ops: true).text) }
        #expect(try await scrape().value("ipnd_config_last_reload_successful") == 1)

        try daemon.editConfig { $0.replacingOccurrences(of: "callback_secret: shop2-secret", with: "callback_secret: shop2-secret\n      no_such_key: 1") }
        guard case .refused = await daemon.daemon.reload() else {
            Issue.record("a config with an unknown key was not refused")
            return
        }
        let refused = try await scrape()
        #expect(refused.value("ipnd_config_last_reload_successful") == 0)
        #expect(refused.value("ipnd_config_reload_failures_total") == 1)

        // Fixed, with shop2 gone and an account eu added.
        try daemon.editConfig {
            $0.replacingOccurrences(of: "    - account: shop2\n      callback_secret: shop2-secret\n      no_such_key: 1\n", with: "")
                .replacingOccurrences(of: "  unlimint:\n", with: "  unlimint:\n    - account: eu\n      callback_secret: eu-secret\n")
        }
        #expect(await daemon.daemon.reload() == .applied(needsRestart: []))
        let applied = try await scrape()
        #expect(applied.value("ipnd_config_last_reload_successful") == 1)
        #expect(applied.value("ipnd_account_notifications_total", ["provider": "unlimint", "account": "eu"]) == 0)
        #expect(applied.value("ipnd_account_notifications_total", ["provider": "unlimint", "account": "shop2"]) == nil)
        #expect(applied.value("ipnd_account_notifications_total", ["provider": "unlimint", "account": "default"]) == 0)
        try await daemon.stop()
    }
}
