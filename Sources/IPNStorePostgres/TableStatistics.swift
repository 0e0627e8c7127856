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

/// Keeps the planner's statistics in step with a store that fills quickly. Autovacuum
/// analyzes a table once a minute at best, after it changed by a tenth; a new database taking
/// thousands of notifications a second outgrows its statistics within seconds, and the
/// planner, believing `orders` holds a few rows, picks an index that reads every order of an
/// account for each lookup. So a node runs ANALYZE itself, in the background, when the store
/// has outgrown what the planner believes (`needsAnalyze`: 1,000 notifications, then each time
/// they are four times what the planner counted, up to about a million; past that, autovacuum's
/// own schedule keeps up).
///
/// One node analyzes for all: every `checkEvery` notifications it recorded, a node looks, in a
/// transaction holding `lock` (tried, never waited for: a node that finds it taken leaves the
/// work to the one holding it), at the planner's row count and the server's live count of
/// `notifications`, and analyzes only if the store outgrew the first. So two nodes filling one
/// database analyze it once per step, not once each, and a node restarted on a large store does
/// not analyze it again.
final class TableStatistics: Sendable {
    /// The tables a batch reads by key.
    static let tables = "orders, notifications, dedup_keys, payment_links, refunds, transitions, events, deliveries"
    /// How many notifications a node records between two looks.
    static let checkEvery = 1_000
    /// The transaction advisory lock of the node analyzing ('ipndstat').
    static let lock: Int64 = 0x6970_6E64_7374_6174
    /// The fewest notifications worth analyzing for.
    static let firstStep: Int64 = 1_000
    /// How much the store grows between two ANALYZEs.
    static let growth: Int64 = 4
    /// Past this many rows in the planner's view, autovacuum's schedule keeps up.
    static let plannerRowsEnough: Int64 = 1_024_000

    /// Whether the store outgrew the planner's view of it: `plannerRows` is `pg_class.reltuples`
    /// of `notifications` (negative when never analyzed), `liveRows` what it holds now.
    static func needsAnalyze(plannerRows: Int64, liveRows: Int64) -> Bool {
        guard liveRows >= firstStep, plannerRows < plannerRowsEnough else { return false }
        return liveRows >= growth * max(plannerRows, firstStep / growth)
    }

    private struct State {
        var recorded = 0
        var running = false
        var looked = 0
    }

    private let state = Locked(State())
    private let client: PostgresClient
    private let logger: Logger

    init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Counts a notification this node recorded; every `checkEvery`, looks in the background
    /// whether the store outgrew the planner's statistics, and analyzes if so.
    func recorded() {
        let recorded = state.withLock { state -> Int? in
            state.recorded += 1
            guard state.recorded % Self.checkEvery == 0, !state.running else { return nil }
            state.running = true
            return state.recorded
        }
        guard let recorded else { return }
        Task {
            defer {
                state.withLock { state in
                    state.running = false
                    state.looked += 1
                }
            }
            do {
                if try await analyzeIfOutgrown(recordedHere: recorded) {
                    logger.debug("table statistics refreshed", metadata: ["recorded": "\(recorded)"])
                }
            } catch {
                // Autovacuum will do it later; the lookups are slower meanwhile, not wrong.
                logger.warning("ANALYZE failed", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    /// How many looks this node has finished (analyzing or not).
    var looked: Int { state.withLock { $0.looked } }

    /// Looks and analyzes, in one transaction holding `lock`; true if it analyzed.
    private func analyzeIfOutgrown(recordedHere: Int) async throws -> Bool {
        try await client.withConnection { connection in
            _ = try await connection.query("BEGIN", logger: logger)
            do {
                var look = SQL()
                // The live count is the server's (every node's rows, reported within a second or
                // so); this node's own count is a floor under it.
                look.append("""
                    SELECT pg_try_advisory_xact_lock(\(look.bind(Self.lock))),
                           c.reltuples::bigint, greatest(coalesce(s.n_live_tup, 0), \(look.bind(Int64(recordedHere))))
                    FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
                    WHERE c.oid = 'notifications'::regclass
                    """)
                var analyze = false
                for try await (locked, plannerRows, liveRows) in try await connection.query(look.query, logger: logger)
                    .decode((Bool, Int64, Int64).self)
                {
                    analyze = locked && Self.needsAnalyze(plannerRows: plannerRows, liveRows: liveRows)
                }
                if analyze { _ = try await connection.query("ANALYZE \(unescaped: Self.tables)", logger: logger) }
                _ = try await connection.query("COMMIT", logger: logger)
                return analyze
            } catch {
                await connection.rollBackOrClose(logger: logger)
                throw error
            }
        }
    }
}
