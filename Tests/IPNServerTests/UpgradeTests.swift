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
import Testing

@Suite("A store written before order events opens and upgrades in place (issue 30)")
struct UpgradeTests {
    /// Fixtures/store-v4-before-events.sqlite was written by `ipnd serve` and `ipnd orders
    /// expect` of main at 4393897 (schema v1 to v4): OLD-1 pending then paid (Unlimint), OLD-2
    /// paid (Citcon), OLD-3 paid 12.00 MYR (iPay88), OLD-4 expected 5.00 USD and paid 6.00 (a
    /// mismatch, flagged), and one forged request (rejected).
    @Test("its orders, transitions and notifications read as before; new changes write events from seq 1")
    func upgradeInPlace() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-upgrade-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(Fixture.bytes("store-v4-before-events.sqlite")).write(to: directory.appendingPathComponent("ipnd.sqlite"))

        let daemon = try await TestDaemon.start(storeDirectory: directory)
        let migrations = try daemon.query { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid") }
        // The four it had, then every later one in order, through v8 (reconciliation).
        let versions = migrations.compactMap { Int($0.dropFirst().prefix { $0.isNumber }) }
        #expect(versions.count == migrations.count && versions == versions.sorted())
        #expect(Array(versions.prefix(5)) == [1, 2, 3, 4, 5] && versions.last == 8)
        #expect(versions.contains(6))
        // v6 counted the notifications already stored, hour by hour, for the console's overview.
        #expect(try daemon.count("SELECT SUM(count) FROM notification_counts") == (try daemon.count("SELECT COUNT(*) FROM notifications")))
        #expect(try daemon.count("SELECT SUM(count) FROM notification_counts WHERE verdict = 'rejected'") == 1)

        let orders = try await daemon.apiObject("/api/v1/orders").objects("items")
        #expect(orders.map { $0.string("order_ref") } == ["OLD-4", "OLD-3", "OLD-2", "OLD-1"])
        #expect(orders.map { $0.string("state") } == ["expected", "paid", "paid", "paid"])
        #expect(orders.first?["flags"] as? [String] == ["amount_mismatch"])
        #expect(orders[1].int("amount_minor") == 1200 && orders[1].string("currency") == "MYR")
        let old1 = try await daemon.apiObject("/api/v1/orders/unlimint/OLD-1")
        #expect(old1.objects("transitions").map { $0.string("to") } == ["pending", "paid"])
        let notifications = try await daemon.apiObject("/api/v1/notifications?limit=100").objects("items")
        #expect(notifications.count == 6)
        #expect(notifications.filter { $0.string("verdict") == "rejected" }.count == 1)

        // Nothing before the upgrade is in the feed; the first change after it is seq 1.
        #expect(try await daemon.apiObject("/api/v1/events").objects("events").isEmpty)
        try await daemon.deliver("unlimint", order: "OLD-1", status: "REFUNDED")
        try await daemon.deliver("unlimint", order: "NEW-1", status: "COMPLETED")
        let events = try await daemon.apiObject("/api/v1/events").objects("events")
        #expect(events.map { $0.int("seq") } == [1, 2])
        let refunded = try #require(events.first?["order"] as? JSONDict)
        #expect(refunded.string("order_ref") == "OLD-1" && refunded.string("state") == "refunded")
        #expect(refunded.string("created_at") == old1.string("created_at"))
        #expect((events.first?["change"] as? JSONDict)?.string("from") == "paid")
        try await daemon.stop()

        // The upgraded store opens again as it is.
        let again = try await TestDaemon.start(storeDirectory: directory)
        #expect(try await again.apiObject("/api/v1/events").objects("events").count == 2)
        try await again.stop()
    }
}

/// A SQLite store written by the ipnd before reconciliation (v7, `4b1af94`: a pending, a paid, an
/// expected and an authorized order) opens, upgrades in place, and its waiting orders are asked.
@Suite("A store written before reconciliation opens and upgrades in place (issue 37)")
struct ReconciliationUpgradeTests {
    @Test("v8 schedules the orders still waiting, due at once; the reconciler asks about them; the paid one is never asked")
    func upgrade() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-v7-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(Fixture.bytes("store-v7-before-reconciliation.sqlite")).write(to: directory.appendingPathComponent("ipnd.sqlite"))
        let double = try ProviderDouble()
        try await double.script("unlimint", order: "OLD-PENDING", json: [#"{"payments": [{"id": "P-old", "status": "COMPLETED", "amount": "12.34", "currency": "USD"}]}"#])
        try await double.script("ipay88", order: "OLD-EXPECTED", json: [#"{"text": "00"}"#])
        try await double.script("juspay", order: "OLD-AUTH", json: [#"{"order": {"status": "CHARGED", "amount": "10.00", "currency": "INR", "id": "o", "txn_id": "t"}}"#])
        let harness = try await ReconcileHarness.start(
            reconcile: ReconcileHarness.reconcileYAML(schedule: "[1s, 1h]", giveUpAfter: "30d"), double: double, storeDirectory: directory)
        let migrations = try harness.daemon.query { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid") }
        #expect(migrations.count == 8 && migrations.last?.hasPrefix("v8:") == true)
        for (provider, order) in [("unlimint", "OLD-PENDING"), ("ipay88", "OLD-EXPECTED"), ("juspay", "OLD-AUTH")] {
            #expect(try await harness.waitForState(provider, order, "paid") == "paid", "\(provider) \(order)")
            let detail = try await harness.order(provider, order)
            #expect(detail.objects("notifications").map { $0.string("source") }.contains("provider") || provider == "ipay88")
            #expect(detail.objects("inquiries").count == 1)
        }
        #expect(try await double.inquiries("unlimint", order: "OLD-PAID").isEmpty)
        // Every notification kept from before reads as the provider's own.
        let notes = try await harness.daemon.apiObject("/api/v1/notifications?limit=100").objects("items")
        #expect(notes.filter { $0.string("source") == "provider" }.count == 3 && notes.filter { $0.string("source") == "inquiry" }.count == 3)
        try await harness.stop()
    }
}
