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

import ArgumentParser
import Foundation
import GRDB
import IPNCore
import IPNStore
import IPNStoreSQLite

/// `ipnd-bench due-orders`: seeds a store with ORDERS orders of which DUE are waiting and due
/// (iPay88, expected 10.00 MYR, as an `orders expect` leaves them), then, with `--measure`, times
/// finding a batch of due orders: the reconciler's claim (the index read, the lease written and
/// committed) and the index read alone, each `--rounds` times, and prints the query plan.
struct BenchDueOrders: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "due-orders", abstract: "Seed a store with due orders; time finding a batch of them.")

    @Option(help: "The SQLite store to create (it must not exist yet) or to measure.")
    var store: String

    @Option(help: "How many orders to seed (0: seed nothing, measure the store as it is).")
    var orders = 0

    @Option(help: "How many of them are due for an inquiry.")
    var due = 0

    @Option(help: "A prefix of the seeded order references.")
    var prefix = "R"

    @Flag(help: "Time finding a batch of due orders.")
    var measure = false

    @Option(help: "Orders per batch (the reconciler claims at most 64 at once).")
    var batch = 64

    @Option(help: "Batches to time.")
    var rounds = 100

    func run() async throws {
        if orders > 0 { try seed() }
        if measure { try await time() }
    }

    /// The orders in one transaction: the due ones first (pending, due an hour ago), the rest paid
    /// (settled: not in the schedule's index).
    private func seed() throws {
        let created = try SQLiteStore(path: store)
        _ = try created.database.close()
        let queue = try DatabaseQueue(path: store)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let dueAt = Timestamp.format(epochMilliseconds: now - 3_600_000)
        let stamp = Timestamp.format(epochMilliseconds: now - 7_200_000)
        try queue.write { db in
            try db.execute(sql: """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                INSERT INTO orders (provider, account, order_ref, state, expected_amount_minor, expected_currency, flags,
                                    created_at, updated_at, inquiry_from, inquiry_step, inquiry_due_at)
                SELECT 'ipay88', 'default', ? || i, CASE WHEN i <= ? THEN 'pending' ELSE 'paid' END, 1000, 'MYR', '', ?, ?,
                       CASE WHEN i <= ? THEN ? END, 0, CASE WHEN i <= ? THEN ? END
                FROM n
                """, arguments: [orders, prefix, due, stamp, stamp, due, stamp, due, dueAt])
        }
        try queue.close()
        print("seeded \(orders) orders, \(due) due, in \(store)")
    }

    private func time() async throws {
        let measured = try SQLiteStore(path: store)
        let scope = Scope(provider: "ipay88", account: "default")
        let queue = measured.database
        let plan = try await queue.read { db in
            try Row.fetchAll(db, sql: """
                EXPLAIN QUERY PLAN SELECT id FROM orders INDEXED BY orders_inquiry_due
                WHERE provider = 'ipay88' AND account = 'default' AND inquiry_due_at IS NOT NULL AND inquiry_due_at <= '9999'
                ORDER BY inquiry_due_at LIMIT 64
                """).map { $0["detail"] as String? ?? "" }
        }
        print("query plan: \(plan.joined(separator: "; "))")
        var reads: [Double] = []
        var claims: [Double] = []
        var claimed = 0
        for round in 0..<rounds {
            let now = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
            let lease = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000 + Int64(round))
            var started = DispatchTime.now().uptimeNanoseconds
            _ = try await queue.read { db in
                try Int64.fetchAll(db, sql: """
                    SELECT id FROM orders INDEXED BY orders_inquiry_due
                    WHERE provider = ? AND account = ? AND inquiry_due_at IS NOT NULL AND inquiry_due_at <= ?
                    ORDER BY inquiry_due_at LIMIT ?
                    """, arguments: [scope.provider, scope.account, now, batch])
            }
            reads.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6)
            started = DispatchTime.now().uptimeNanoseconds
            claimed += try await measured.claimDueOrders(scope: scope, limit: batch, now: now, leaseUntil: lease).count
            claims.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6)
        }
        let backlogStarted = DispatchTime.now().uptimeNanoseconds
        let backlog = try await measured.inquiryBacklog(scopes: [scope], now: Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000)))
        let backlogMs = Double(DispatchTime.now().uptimeNanoseconds - backlogStarted) / 1e6
        _ = try await measured.close()
        func percentile(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        print(String(format: "RESULT due_read_p50_ms=%.3f due_read_p99_ms=%.3f claim_p50_ms=%.3f claim_p99_ms=%.3f claimed=%d backlog_ms=%.1f awaiting=%d",
                     percentile(reads, 0.5), percentile(reads, 0.99), percentile(claims, 0.5), percentile(claims, 0.99), claimed,
                     backlogMs, backlog.awaiting))
    }
}
