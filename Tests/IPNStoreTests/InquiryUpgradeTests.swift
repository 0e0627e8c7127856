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
import IPNTestSupport
import Logging
import PostgresNIO
import Testing

/// A PostgreSQL store written by the ipnd before reconciliation (migrations p1 to p3) upgrades in
/// place: its orders still waiting are due at once, its settled ones never.
@Suite("A PostgreSQL store from before reconciliation upgrades in place", .enabled(if: PostgresTestServer.fromEnvironment() != nil))
struct InquiryUpgradeTests {
    @Test("p4 schedules the orders still waiting, due at once; settled ones stay unscheduled; the new store asks about them")
    func upgrade() async throws {
        let (configuration, name) = try await freshPostgresDatabase()
        let client = PostgresClient(configuration: configuration, backgroundLogger: testLogger)
        let task = Task { await client.run() }
        try await PostgresSchema.migrate(client, logger: testLogger, through: "p3: the ops console's order indexes")
        for (id, ref, state) in [(1, "OLD-PENDING", "pending"), (2, "OLD-PAID", "paid"), (3, "OLD-EXPECTED", "expected")] {
            _ = try await client.query(PostgresQuery(unsafeSQL: """
                INSERT INTO orders (id, provider, account, order_ref, state, flags, created_at, updated_at)
                VALUES (\(id), 'test', 'default', '\(ref)', '\(state)', '', '2026-11-20T10:00:00.000Z', '2026-11-20T10:0\(id):00.000Z')
                """), logger: testLogger)
        }
        task.cancel()
        await task.value

        let store = try await PostgresStore.open(configuration: configuration, location: name, poolSize: 4, logger: testLogger)
        let waiting = try #require(try await store.order(provider: "test", account: "default", orderRef: "OLD-PENDING", includeRaw: false))
        #expect(waiting.nextInquiryAt == "2026-11-20T10:01:00.000Z")
        #expect(try await store.order(provider: "test", account: "default", orderRef: "OLD-PAID", includeRaw: false)?.nextInquiryAt == nil)
        let due = try await store.claimDueOrders(
            scope: Scope(provider: "test", account: "default"), limit: 10, now: Timestamp.format(epochMilliseconds: 1_900_000_000_000),
            leaseUntil: Timestamp.format(epochMilliseconds: 1_900_000_060_000))
        #expect(due.map(\.orderRef) == ["OLD-PENDING", "OLD-EXPECTED"])
        #expect(due.first?.schedule.from == "2026-11-20T10:01:00.000Z" && due.first?.schedule.step == 0)
        #expect(try await store.inquiries(InquiryFilter()).isEmpty)
        _ = try await store.close()
    }
}
