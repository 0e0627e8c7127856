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
import IPNTestSupport
import Testing

@Suite("ipnd store copy: SQLite to PostgreSQL and back (issue 31)", .enabled(if: PostgresTestServer.fromEnvironment() != nil))
struct StoreCopyTests {
    /// A config file beside `directory` naming `storeYAML` (the lines under `store:`).
    private func writeConfig(_ directory: URL, name: String, storeYAML: String, providersYAML: String = TestDaemon.defaultProvidersYAML()) throws -> String {
        let path = directory.appendingPathComponent(name).path
        let yaml = """
            server:
              host: 127.0.0.1
              port: 0
            store:
            \(storeYAML)
            ops:
              host: 127.0.0.1
              port: 0
            \(providersYAML)
            deliveries:
              - name: app
                url: http://127.0.0.1:9/hooks
                secret: \(WebhookReceiver.newSecret())
            """
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }

    private func listings(_ config: String) async throws -> [String] {
        var outputs: [String] = []
        for command in [["orders", "list"], ["notifications", "list"], ["events", "list"], ["deliveries", "list"], ["inquiries", "list"]] {
            let result = try await ipnd(command + ["--config", config, "--format", "json", "--limit", "1000"])
            #expect(result.status == 0, "\(command): \(result.stderr)")
            outputs.append(result.stdout)
        }
        for order in ["CP-1", "CP-3", "CP-ALI"] {
            let provider = order == "CP-ALI" ? "alipay" : "unlimint"
            let result = try await ipnd(["orders", "show", provider, order, "--config", config, "--format", "json"])
            #expect(result.status == 0, "\(order): \(result.stderr)")
            outputs.append(result.stdout)
        }
        return outputs
    }

    @Test("orders, notifications, events and deliveries list the same JSON in the SQLite original, its PostgreSQL copy and the SQLite copy of that; a daemon goes on from the copy")
    func roundTrip() async throws {
        let secret = WebhookReceiver.newSecret()
        // Unlimint's account is asked (an inquiry is part of the store copied).
        let double = try ProviderDouble()
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-copy-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        let providers = try ReconcileHarness.providersYAML(double: double, directory: keys)
        let daemon = try await TestDaemon.start(
            providersYAML: providers,
            extraYAML: deliveriesYAML(url: "http://127.0.0.1:9/hooks", secrets: [secret]) + "\n" + ReconcileHarness.reconcileYAML(schedule: "[1h]"))
        try await daemon.deliver("unlimint", order: "CP-1", status: "NEW", uid: "cp1a")
        let asked = try await daemon.send(.POST, ops: "/api/v1/orders/unlimint/CP-1/inquiries", body: "")
        #expect(asked.status == 200 && asked.text.contains(#""outcome":"not_found""#), "\(asked.text)")
        try await daemon.deliver("unlimint", order: "CP-1", status: "COMPLETED", uid: "cp1b")
        try await daemon.deliver("unlimint", order: "CP-1", status: "COMPLETED", uid: "cp1b")  // duplicate
        try await daemon.deliver("citcon", order: "CP-2", status: "success")
        _ = try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/CP-3/expectation", body: #"{"amount":"5.00","currency":"USD"}"#)
        try await daemon.deliver("unlimint", order: "CP-3", status: "COMPLETED")  // 10.00 USD: a mismatch, flagged
        let forged = UnlimintRequests.body(order: "CP-4", id: "f", status: "COMPLETED")
        _ = try await daemon.post("/ipn/unlimint", body: forged, headers: UnlimintRequests.headers(for: forged, secret: "guess"))
        // An Alipay refund before its payment: unlinked, then applied when the payment links it.
        let key = try RSAPrivateKey(pem: String(contentsOfFile: TestDaemon.alipayPrivateKeyPath, encoding: .utf8))
        let refundBody = Array(#"{"notifyType":"REFUND_RESULT","refundRequestId":"RR-CP","refundId":"R-CP","paymentId":"PAY-CP","refundAmount":{"currency":"SGD","value":"4200"},"refundTime":"2026-11-21T13:00:00+08:00","refundStatus":"SUCCESS","result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#.utf8)
        #expect(try await daemon.post("/ipn/alipay", body: refundBody, headers: alipayHeaders(refundBody, key: key)).status == 200)
        let payment = try daemon.simulated("alipay", order: "CP-ALI", status: "S", amount: Money(minor: 4200, currency: "SGD"), uid: "PAY-CP")
        #expect(try await daemon.post(payment).status == 200)
        try await daemon.stop()
        double.stop()

        let directory = daemon.directory
        let original = daemon.configPath
        let (server, database) = try await TestDaemon.freshPostgresDatabase()
        let postgres = try writeConfig(directory, name: "postgres.yaml", storeYAML: """
              postgres:
                host: \(server.socketDirectory)
                port: \(server.port)
                database: \(database)
                user: \(server.user)
                tls: disable
            """, providersYAML: providers)
        let back = try writeConfig(
            directory, name: "back.yaml", storeYAML: "  path: \(directory.appendingPathComponent("back.sqlite").path)", providersYAML: providers)

        let before = try await listings(original)
        let toPostgres = try await ipnd(["store", "copy", "--config", original, "--to", postgres], timeout: 60)
        #expect(toPostgres.status == 0, "\(toPostgres.stdout)\n\(toPostgres.stderr)")
        #expect(toPostgres.stdout.contains("every count matches"))
        #expect(try await listings(postgres) == before)
        let toSQLite = try await ipnd(["store", "copy", "--config", postgres, "--to", back], timeout: 60)
        #expect(toSQLite.status == 0, "\(toSQLite.stdout)\n\(toSQLite.stderr)")
        #expect(try await listings(back) == before)
        // The console's hourly counts, which the write path keeps and the copy does not carry, are
        // counted anew from the notifications copied into SQLite.
        func hourlyCounts(_ path: String) throws -> [String] {
            var configuration = Configuration()
            configuration.readonly = true
            return try DatabaseQueue(path: path, configuration: configuration).read { db in
                try String.fetchAll(db, sql: """
                    SELECT hour || ' ' || provider || ' ' || account || ' ' || verdict || ' ' || reason || ' ' || count
                    FROM notification_counts ORDER BY 1
                    """)
            }
        }
        let copiedCounts = try hourlyCounts(directory.appendingPathComponent("back.sqlite").path)
        let originalCounts = try hourlyCounts(daemon.config.store.path)
        #expect(!copiedCounts.isEmpty && copiedCounts == originalCounts, "\(copiedCounts) vs \(originalCounts)")
        #expect(!before[2].isEmpty && before[2].split(separator: "\n").count >= 5)

        // A second copy into a store that now has rows is refused.
        let again = try await ipnd(["store", "copy", "--config", original, "--to", postgres], timeout: 60)
        #expect(again.status == 2)
        #expect(again.stderr.contains("not empty"))

        // A daemon on the PostgreSQL copy goes on: new ids and seqs follow the copied ones.
        let resumed = try await TestDaemon.start(backend: .postgres, postgresDatabase: (server, database))
        try await resumed.deliver("unlimint", order: "CP-5", status: "COMPLETED")
        let events = try await resumed.apiObject("/api/v1/events?limit=1000").objects("events")
        let seqs = events.compactMap { $0.int("seq") }
        #expect(seqs == Array(1...seqs.count))
        #expect(events.last.flatMap { ($0["order"] as? JSONDict)?.string("order_ref") } == "CP-5")
        try await resumed.stop()
    }
}
