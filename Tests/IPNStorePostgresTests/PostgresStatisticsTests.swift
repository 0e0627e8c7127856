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
import Testing

/// The planner's statistics keep up with a database that fills quickly: without them a batch's
/// lookup by order reference read every order of the account (TableStatistics).
@Suite("PostgreSQL: the planner's statistics follow a filling database", .heavy)
struct PostgresStatisticsTests {
    private let analyzed = "SELECT COUNT(*) FROM pg_stat_user_tables WHERE relname IN ('orders', 'notifications', 'dedup_keys') AND last_analyze IS NOT NULL"
    /// Manual ANALYZEs only (autovacuum's are `autoanalyze_count`).
    private let analyzes = "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'notifications'"

    @Test("a node that has recorded 1,000 notifications has analyzed the tables its batches read itself, not waiting for autovacuum",
          .enabled(if: Backend.allCases.contains(.postgres)))
    func analyzedAfterAThousand() async throws {
        let store = try await StoreUnderTest.make(.postgres)
        try await Self.withoutAutovacuum(store)
        #expect(try await store.count(analyzed) == 0)
        try await store.recordPaid(lanes: 20, perLane: 50, prefix: "st")
        // ANALYZE runs in the background; the statistics views see it once it committed.
        try await waitUntil("the three tables analyzed") { try await store.count(analyzed) == 3 }
        #expect(try await store.count("SELECT reltuples::bigint FROM pg_class WHERE relname = 'orders'") == 1000)
        try await store.close()
    }

    @Test("two nodes filling one database analyze it once per step, not once each",
          .enabled(if: Backend.allCases.contains(.postgres)))
    func oneNodeAnalyzesForAll() async throws {
        let first = try await StoreUnderTest.make(.postgres)
        try await Self.withoutAutovacuum(first)
        let second = try await first.sibling()
        try await first.recordPaid(lanes: 20, perLane: 50, prefix: "a")
        try await waitUntil("the first node's look") { try postgres(first).statisticsLooked == 1 }
        try await waitUntil("the first node's ANALYZE seen") { try await first.count(analyzes) == 1 }

        // The second node's first 1,000 find the planner counting 1,000 of the 2,000: not yet
        // four times as many, so no second ANALYZE (each node analyzed for its own count before).
        try await second.recordPaid(lanes: 20, perLane: 50, prefix: "b")
        try await waitUntil("the second node's look") { try postgres(second).statisticsLooked == 1 }
        #expect(try await first.count(analyzes) == 1)
        try await second.close()
        try await first.close()
    }

    /// These tests are about ipnd's own ANALYZE. On a test server that every heavy test shares,
    /// autovacuum may analyze `notifications` first while the tests fill it, and ipnd then
    /// rightly finds nothing to do: so autovacuum leaves that table alone here.
    private static func withoutAutovacuum(_ store: StoreUnderTest) async throws {
        try await store.execute("ALTER TABLE notifications SET (autovacuum_enabled = false)")
    }

    private func postgres(_ store: StoreUnderTest) throws -> PostgresStore {
        guard let node = store.store as? PostgresStore else { throw StoreUnderTestIsNotPostgres() }
        return node
    }

    private struct StoreUnderTestIsNotPostgres: Error {}
}

/// When a node analyzes: the planner's view of `notifications` against what the store holds.
@Suite("PostgreSQL: when the statistics are refreshed")
struct TableStatisticsPolicyTests {
    @Test("never analyzed: from 1,000 notifications on", arguments: [
        (-1, 0, false), (-1, 999, false), (-1, 1_000, true), (0, 999, false), (0, 1_000, true), (-1, 50_000, true),
    ] as [(Int64, Int64, Bool)])
    func firstStep(planner: Int64, live: Int64, expected: Bool) {
        #expect(TableStatistics.needsAnalyze(plannerRows: planner, liveRows: live) == expected)
    }

    @Test("then each time the store holds four times what the planner counted", arguments: [
        (1_000, 3_999, false), (1_000, 4_000, true), (4_000, 15_999, false), (4_000, 16_000, true),
        (256_000, 1_023_999, false), (256_000, 1_024_000, true), (100, 1_000, true),
    ] as [(Int64, Int64, Bool)])
    func growth(planner: Int64, live: Int64, expected: Bool) {
        #expect(TableStatistics.needsAnalyze(plannerRows: planner, liveRows: live) == expected)
    }

    @Test("past about a million rows in the planner's view, autovacuum's schedule", arguments: [
        (1_024_000, 10_000_000), (5_000_000, 50_000_000),
    ] as [(Int64, Int64)])
    func autovacuumBeyond(planner: Int64, live: Int64) {
        #expect(!TableStatistics.needsAnalyze(plannerRows: planner, liveRows: live))
    }
}
