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
import IPNConfig
import IPNCore
@testable import IPNServer
import IPNStore
import IPNStoreSQLite
import Logging
import Testing

@Suite("Retention passes with an injected clock (issue 33)")
struct RetentionServiceTests {
    private static let day: TimeInterval = 86_400

    /// A fresh store whose events are owed to target `app` (provider `unlimint` only).
    private func makeStore() throws -> SQLiteStore {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-retention-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try SQLiteStore(path: directory.appendingPathComponent("ipnd.sqlite").path)
        store.setDeliveryRoutes([DeliveryRoute(name: "app", providers: ["unlimint"])])
        return store
    }

    private func request(_ provider: String, receivedAt: Date) -> ReceivedRequest {
        ReceivedRequest(provider: provider, account: "default",
                        receivedAt: Timestamp.format(epochMilliseconds: Int64(receivedAt.timeIntervalSince1970 * 1000)),
                        clientIP: "203.0.113.9", target: "/ipn/\(provider)", headers: "[]", body: Array(repeating: 0x41, count: 1000))
    }

    private func payment(_ key: String, order: String) -> VerifiedNotification {
        VerifiedNotification(kind: .payment, orderRef: order, providerTxnID: key, dedupKey: key, providerStatus: "COMPLETED",
                             effect: .transition(.paid), amount: Money(minor: 100, currency: "USD"))
    }

    @Test("a pass removes rejected rows past rejected_days and owed-nothing events past events_days, in batches, never anything authentic")
    func passes() async throws {
        let store = try makeStore()
        let start = Date()
        let clock = Locked(start)
        let logs = LogOutput.capture()
        let logger = Logger(label: "test") { LogfmtLogHandler(label: $0, level: .info, output: logs) }
        var settings = RetentionSettings()
        settings.rejectedDays = 30
        settings.eventsDays = 90
        let service = RetentionService(
            store: store, retention: settings, logger: logger,
            schedule: RetentionService.Schedule(interval: .milliseconds(50), rejectedBatchSize: 2, eventBatchSize: 2, pause: .milliseconds(1)),
            now: { clock.withLock { $0 } })

        // 5 rejected 40 days old, 3 rejected 10 days old; authentic notifications as old.
        for _ in 0..<5 {
            _ = try await store.record(.rejected(request("unlimint", receivedAt: start - 40 * Self.day), Rejection(.badSignature, "x")))
        }
        for _ in 0..<3 {
            _ = try await store.record(.rejected(request("unlimint", receivedAt: start - 10 * Self.day), Rejection(.badSignature, "x")))
        }
        for index in 0..<3 {
            _ = try await store.record(.verified(request("unlimint", receivedAt: start - 400 * Self.day), payment("u\(index)", order: "U\(index)")))
        }
        _ = try await store.record(.verified(request("unlimint", receivedAt: start - 400 * Self.day), payment("u0", order: "U0")))
        for index in 0..<2 {
            _ = try await store.record(.verified(request("citcon", receivedAt: start - 400 * Self.day), payment("c\(index)", order: "C\(index)")))
        }
        // Events 1-3 owed to app; deliver 1 and 2; 4 and 5 (citcon) are owed to nobody.
        let claimed = try await store.claimDeliveries(target: "app", limit: 10, now: "9999-01-01T00:00:00.000Z",
                                                       leaseUntil: "9999-01-02T00:00:00.000Z", owner: "t")
        try await store.finishDeliveries(claimed.filter { $0.event.seq <= 2 }.map {
            DeliveryAttemptOutcome(id: $0.id, attemptedAt: "2026-11-26T00:00:00.000Z", status: 200, error: nil, outcome: .delivered)
        }, owner: "t")
        func count(_ sql: String) async throws -> Int { try await store.database.read { db in try Int.fetchOne(db, sql: sql) ?? -1 } }
        let authentic = try await count("SELECT COUNT(*) FROM notifications WHERE verdict <> 'rejected'")
        #expect(authentic == 6)

        // Today: the 40-day-old rejected rows go (in batches of 2), nothing else.
        var report = try await service.pass()
        #expect(report.rejected == 5 && report.events == 0 && report.prunedThrough == 0)
        #expect(report.batches >= 3)
        #expect(try await count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected'") == 3)

        // 100 days on: the other rejected rows, and the events nobody owes any more.
        clock.withLock { $0 = start + 100 * Self.day }
        report = try await service.pass()
        #expect(report.rejected == 3)
        #expect(report.events == 4 && report.deliveries == 2 && report.eventsOwed == 1 && report.prunedThrough == 5)
        #expect(try await count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected'") == 0)
        #expect(try await count("SELECT COUNT(*) FROM events") == 1)
        #expect(try await count("SELECT MIN(seq) FROM events") == 3)
        #expect(try await count("SELECT COUNT(*) FROM notifications WHERE verdict <> 'rejected'") == authentic)
        #expect(try await count("SELECT COUNT(*) FROM orders WHERE state = 'paid'") == 5)
        #expect(try await count("SELECT COUNT(*) FROM transitions") == 5)
        #expect(try await store.events(EventFilter(after: 0)).oldestSeq == 6)

        // The service runs passes by itself and logs what each removed.
        for _ in 0..<3 {
            _ = try await store.record(.rejected(request("unlimint", receivedAt: start), Rejection(.badSignature, "x")))
        }
        clock.withLock { $0 = start + 200 * Self.day }
        let running = Task { try await service.run() }
        try await waitUntil { try await count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected'") == 0 }
        running.cancel()
        _ = try? await running.value
        let line = try #require(logs.captured.first { $0.contains("retention pass") })
        #expect(line.contains("rejected_removed=3") && line.contains("events_removed=0"))
        _ = try await store.close()
    }
}
