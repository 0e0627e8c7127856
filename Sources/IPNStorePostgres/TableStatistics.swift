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

import IPNCore
import Logging
import PostgresNIO

/// Keeps the planner's statistics in step with tables this node fills quickly. Autovacuum
/// analyzes a table once a minute at best, after it changed by a tenth; a new database taking
/// thousands of notifications a second outgrows its statistics within seconds, and the
/// planner, believing `orders` holds a few rows, picks an index that reads every order of an
/// account for each lookup. So this node runs ANALYZE itself, in the background, each time the
/// notifications it recorded since it started reach the next of 1,000, 4,000, 16,000, ...
/// 1,024,000; past that, autovacuum's own schedule keeps up.
final class TableStatistics: Sendable {
    /// The tables a batch reads by key.
    static let tables = "orders, notifications, dedup_keys, payment_links, refunds, transitions, events, deliveries"
    static let thresholds: [Int] = [1_000, 4_000, 16_000, 64_000, 256_000, 1_024_000]

    private struct State {
        var recorded = 0
        var next = 0
        var running = false
    }

    private let state = Locked(State())
    private let client: PostgresClient
    private let logger: Logger

    init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Counts a notification this node recorded; starts an ANALYZE when a threshold is reached.
    func recorded() {
        let start = state.withLock { state -> Bool in
            state.recorded += 1
            guard state.next < Self.thresholds.count, state.recorded >= Self.thresholds[state.next], !state.running else {
                return false
            }
            state.next += 1
            state.running = true
            return true
        }
        guard start else { return }
        Task {
            defer { state.withLock { $0.running = false } }
            do {
                try await client.query("ANALYZE \(unescaped: Self.tables)", logger: logger)
                logger.debug("table statistics refreshed", metadata: ["recorded": "\(state.withLock { $0.recorded })"])
            } catch {
                // Autovacuum will do it later; the lookups are slower meanwhile, not wrong.
                logger.warning("ANALYZE failed", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }
}
