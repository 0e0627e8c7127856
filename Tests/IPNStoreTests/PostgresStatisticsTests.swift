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
import IPNTestSupport
import Testing

/// The planner's statistics keep up with a database that fills quickly: without them a batch's
/// lookup by order reference read every order of the account (TableStatistics).
@Suite("PostgreSQL: the planner's statistics follow a filling database")
struct PostgresStatisticsTests {
    @Test("a node that has recorded 1,000 notifications has analyzed the tables its batches read itself, not waiting for autovacuum",
          .enabled(if: Backend.allCases.contains(.postgres)))
    func analyzedAfterAThousand() async throws {
        let store = try await StoreUnderTest.make(.postgres)
        let analyzed = "SELECT COUNT(*) FROM pg_stat_user_tables WHERE relname IN ('orders', 'notifications', 'dedup_keys') AND last_analyze IS NOT NULL"
        #expect(try await store.count(analyzed) == 0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<20 {
                group.addTask {
                    for index in 0..<50 {
                        let note = notification("st-\(lane)-\(index)", .transition(.paid), order: "ST-\(lane)-\(index)")
                        _ = try await store.store.record(.verified(request(), note))
                    }
                }
            }
            try await group.waitForAll()
        }
        // ANALYZE runs in the background; the statistics views see it once it committed.
        let deadline = ContinuousClock.now + .seconds(20)
        while try await store.count(analyzed) < 3, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await store.count(analyzed) == 3)
        #expect(try await store.count("SELECT reltuples::bigint FROM pg_class WHERE relname = 'orders'") == 1000)
        try await store.close()
    }
}
