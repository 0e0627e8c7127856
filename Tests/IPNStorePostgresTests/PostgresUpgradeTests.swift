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
import IPNStore
@testable import IPNStorePostgres
@testable import IPNStoreTestSupport
import IPNTestSupport
import Logging
import PostgresNIO
import Testing

/// A PostgreSQL store written by the ipnd that numbered events as it wrote them (migrations p1 to
/// p4: seqs taken under the event lock, deliveries naming them) upgrades in place to numbering
/// after commit (p6; p5 is the audit trail): consumers' cursors and pending deliveries stay valid.
@Suite("A PostgreSQL store from before events were numbered after commit upgrades in place",
       .enabled(if: PostgresTestServer.fromEnvironment() != nil), .heavy)
struct PostgresUpgradeTests {
    @Test("two nodes upgrade it under the migration lock, once; old seqs and ids stay; the feed goes on from the next seq; an order's pending deliveries come first, in seq order")
    func upgrade() async throws {
        let (configuration, name) = try await freshPostgresDatabase()
        let client = PostgresClient(configuration: configuration, backgroundLogger: testLogger)
        let task = Task { await client.run() }
        try await PostgresSchema.migrate(client, logger: testLogger, through: "p4: reconciliation: the orders' inquiry schedule, inquiry records, notifications from inquiries")
        // What the earlier ipnd wrote: order OLD-1 authorized then paid (two events; the first
        // delivered, the second still owed to `app`), order OLD-2 paid (owed, failed once).
        let statements = [
            """
            INSERT INTO orders (id, provider, account, order_ref, state, amount_minor, currency, flags, created_at, updated_at)
            VALUES (nextval('orders_id_seq'), 'test', 'default', 'OLD-1', 'paid', 500, 'USD', '', '2026-11-20T10:00:00.000Z',
                    '2026-11-20T10:01:00.000Z'),
                   (nextval('orders_id_seq'), 'test', 'default', 'OLD-2', 'paid', 700, 'USD', '', '2026-11-20T10:02:00.000Z',
                    '2026-11-20T10:02:00.000Z')
            """,
            """
            INSERT INTO events (seq, id, type, occurred_at, provider, account, order_id, order_ref, order_json, from_state, to_state)
            SELECT nextval('events_seq'), e.id, 'order.state_changed', e.at, 'test', 'default', o.id, o.order_ref, '{}', e.from_state, e.to_state
            FROM (VALUES ('4b9cf4f2-1b5e-4d7e-9f6a-000000000001', 'OLD-1', '2026-11-20T10:00:00.000Z', NULL, 'authorized', 1),
                         ('4b9cf4f2-1b5e-4d7e-9f6a-000000000002', 'OLD-1', '2026-11-20T10:01:00.000Z', 'authorized', 'paid', 2),
                         ('4b9cf4f2-1b5e-4d7e-9f6a-000000000003', 'OLD-2', '2026-11-20T10:02:00.000Z', NULL, 'paid', 3))
                 AS e (id, ref, at, from_state, to_state, position)
            JOIN orders o ON o.order_ref = e.ref
            ORDER BY e.position
            """,
            "INSERT INTO delivery_targets (name) VALUES ('app')",
            """
            INSERT INTO deliveries (target, event_seq, order_id, state, attempts, next_attempt_at, delivered_at, created_at)
            SELECT 'app', e.seq, e.order_id, CASE WHEN e.seq = 1 THEN 'delivered' ELSE 'pending' END, CASE WHEN e.seq = 3 THEN 1 ELSE 0 END,
                   CASE WHEN e.seq = 1 THEN NULL ELSE '2026-11-20T10:05:00.000Z' END,
                   CASE WHEN e.seq = 1 THEN '2026-11-20T10:00:01.000Z' END, e.occurred_at
            FROM events e
            """,
        ]
        for sql in statements { _ = try await client.query(PostgresQuery(unsafeSQL: sql), logger: testLogger) }
        task.cancel()
        await task.value

        // Two nodes start at once: one migrates under the lock, the other finds nothing to do.
        let routes = [DeliveryRoute(name: "app")]
        let stores = try await twoNodesStarting(configuration, name)
        for store in stores { store.setDeliveryRoutes(routes) }
        let store = stores[0]
        let migrations = try await migrationsApplied(configuration)
        #expect(migrations.filter { $0.hasPrefix("p6:") }.count == 1)
        #expect(migrations.count == PostgresSchema.migrations.count)

        // A consumer's cursors: the old events read as they were.
        let old = try await store.events(EventFilter(after: 0))
        #expect(old.events.map(\.seq) == [1, 2, 3] && old.nextAfter == 3)
        #expect(old.events.map(\.id).last == "4b9cf4f2-1b5e-4d7e-9f6a-000000000003")
        #expect(try await store.events(EventFilter(after: 3)).events.isEmpty)

        // New changes, on both nodes, go on from seq 4, with their deliveries.
        _ = try await stores[1].record(.verified(request(), notification("old1-refund", .refund(RefundInfo(
            refundID: "R1", amount: Money(minor: 500, currency: "USD"), fullyRefunded: true)), order: "OLD-1", kind: .refund)))
        _ = try await store.record(.verified(request(), notification("new-paid", .transition(.paid), order: "NEW-1")))
        for store in stores { try await store.eventsNumbered() }
        let after = try await store.events(EventFilter(after: 3))
        #expect(after.events.map(\.seq) == [4, 5])
        #expect(after.events.map(\.orderRef) == ["OLD-1", "NEW-1"])
        #expect(after.events.allSatisfy { $0.id.range(of: "^[0-9a-f]{8}-[0-9a-f]{4}-7", options: .regularExpression) != nil })

        // OLD-1's owed event (seq 2) goes before its new one (seq 4); OLD-2's and NEW-1's are due.
        let claimed = try await store.claimDeliveries(
            target: "app", limit: 10, now: "9999-01-01T00:00:00.000Z", leaseUntil: "9999-01-01T00:01:00.000Z", owner: "test")
        #expect(claimed.map(\.event.seq).sorted() == [2, 3, 5])
        let now = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        try await store.finishDeliveries(claimed.map {
            DeliveryAttemptOutcome(id: $0.id, attemptedAt: now, status: 200, error: nil, outcome: .delivered)
        }, owner: "test")
        let next = try await store.claimDeliveries(
            target: "app", limit: 10, now: "9999-01-01T00:00:00.000Z", leaseUntil: "9999-01-01T00:01:00.000Z", owner: "test")
        #expect(next.map(\.event.seq) == [4])
        for store in stores { _ = try await store.close() }
    }

    @Test("a store ipnd e391700 wrote (its own pg_dump: seven notifications, pending and delivered deliveries) upgrades under two starting nodes: every event keeps its seq and id, cursors read as before, owed deliveries go first per order in seq order, new events follow from the next seq")
    func upgradeFromDump() async throws {
        guard let server = PostgresTestServer.fromEnvironment() else { throw PostgresUnavailable() }
        let (configuration, name) = try await freshPostgresDatabase()
        let fixture = try #require(Bundle.module.url(forResource: "store-p4-e391700", withExtension: "sql", subdirectory: "Fixtures"))
        let dump = try String(contentsOf: fixture, encoding: .utf8)
        _ = try server.psql(dump, database: name)
        // What the old ipnd left, read before the upgrade as any SQL client would.
        func rows(_ sql: String) throws -> [[Substring]] {
            try server.psql(sql, database: name).split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false) }
        }
        let oldEvents = try rows("SELECT seq, id, order_ref FROM events ORDER BY seq")
        #expect(oldEvents.count == 7)
        // Per order, the seqs still owed to `app`, oldest first.
        var owed: [Substring: [Int64]] = [:]
        for row in try rows("""
            SELECT e.order_ref, e.seq FROM deliveries d JOIN events e ON e.seq = d.event_seq
            WHERE d.target = 'app' AND d.state = 'pending' ORDER BY e.seq
            """) {
            owed[row[0], default: []].append(Int64(row[1]) ?? -1)
        }
        #expect(owed.values.reduce(0) { $0 + $1.count } == 7)
        #expect(try rows("SELECT count(*) FROM deliveries WHERE target = 'ledger' AND state = 'delivered'") == [["7"]])

        let stores = try await twoNodesStarting(configuration, name)
        for store in stores { store.setDeliveryRoutes([DeliveryRoute(name: "app"), DeliveryRoute(name: "ledger")]) }
        let store = stores[0]
        let migrations = try await migrationsApplied(configuration)
        #expect(migrations.count == PostgresSchema.migrations.count)
        #expect(migrations.filter { $0.hasPrefix("p5:") || $0.hasPrefix("p6:") }.count == 2)

        // Every old event as it was; a consumer at any cursor reads what it read before.
        let old = try await store.events(EventFilter(after: 0))
        #expect(old.events.map { "\($0.seq)|\($0.id)|\($0.orderRef)" } == oldEvents.map { $0.joined(separator: "|") })
        #expect(try await store.events(EventFilter(after: 4)).events.map(\.seq) == [5, 6, 7])
        #expect(try await store.events(EventFilter(after: 7)).events.isEmpty)

        // New changes on both nodes follow from seq 8.
        _ = try await stores[1].record(.verified(request(), notification("new-auth", .transition(.authorized), order: "NEW-1")))
        _ = try await store.record(.verified(request(), notification("new-paid", .transition(.paid), order: "NEW-1")))
        for store in stores { try await store.eventsNumbered() }
        let new = try await store.events(EventFilter(after: 7))
        #expect(new.events.map(\.seq) == [8, 9] && new.events.allSatisfy { $0.orderRef == "NEW-1" })

        // `app` is owed every old event and the new ones: per order, the oldest owed first.
        var delivered: [String: [Int64]] = [:]
        for _ in 0..<10 {
            let claimed = try await store.claimDeliveries(
                target: "app", limit: 50, now: "9999-01-01T00:00:00.000Z", leaseUntil: "9999-01-01T00:01:00.000Z", owner: "test")
            if claimed.isEmpty { break }
            #expect(Set(claimed.map(\.event.orderRef)).count == claimed.count, "one delivery per order at a time")
            for delivery in claimed { delivered[delivery.event.orderRef, default: []].append(delivery.event.seq) }
            try await store.finishDeliveries(claimed.map {
                DeliveryAttemptOutcome(id: $0.id, attemptedAt: "2026-12-07T13:10:00.000Z", status: 200, error: nil, outcome: .delivered)
            }, owner: "test")
        }
        var expected = Dictionary(uniqueKeysWithValues: owed.map { (String($0.key), $0.value) })
        expected["NEW-1"] = [8, 9]
        #expect(delivered == expected)
        for store in stores { _ = try await store.close() }
    }

    /// Two nodes opening the store at once, as two `ipnd serve` starting together would (with the
    /// test stores' timeouts for a busy machine).
    private func twoNodesStarting(_ configuration: PostgresClient.Configuration, _ name: String) async throws -> [PostgresStore] {
        async let first = PostgresStore.open(
            configuration: configuration, location: name, poolSize: 4, logger: testLogger, timeouts: .busyMachine)
        async let second = PostgresStore.open(
            configuration: configuration, location: name, poolSize: 4, logger: testLogger, timeouts: .busyMachine)
        return try await [first, second]
    }

    private func migrationsApplied(_ configuration: PostgresClient.Configuration) async throws -> [String] {
        let client = PostgresClient(configuration: configuration, backgroundLogger: testLogger)
        let task = Task { await client.run() }
        defer { task.cancel() }
        var applied: [String] = []
        for try await identifier in try await client.query("SELECT identifier FROM ipnd_migrations ORDER BY applied_at", logger: testLogger)
            .decode(String.self) {
            applied.append(identifier)
        }
        return applied
    }
}
