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
import Logging
import PostgresNIO

/// Numbers the order events writers committed into the feed, on PostgreSQL.
///
/// Writers do not number their events: each batch inserts its events into `events_unsequenced`
/// with a row id from a sequence, taken as the row is inserted, and commits. One node at a time
/// holds the sequencer lock (a session advisory lock on a connection of its own, `lockKey`);
/// that node moves committed rows into `events` in short transactions, giving each the next
/// `seq` in row-id order and writing its deliveries, and notifies every node's feed readers
/// and delivery service (`NOTIFY ipnd_events`, which each node listens to on the same
/// connection). Every other node tries to take the lock each `takeoverInterval`, so when the
/// sequencing node dies its connection closes, the lock is free, and another node goes on.
///
/// Why this keeps the feed's contract (docs/reliability.md, "The feed under several writers"):
/// - A seq is handed out only inside a sequencing transaction, and those run one at a time,
///   each to its COMMIT, under the lock; the sequence only rises. So every seq a reader can see
///   was committed before any larger one: once it has seen N, no smaller seq appears later.
/// - A round numbers only rows it can see, that is rows whose writers have committed; a writer
///   still in progress is numbered by a later round, after the rows already numbered.
/// - Events of one order: a writer holds its order's row lock to its commit, and takes its row
///   ids after it got the lock, so one order's rows have ids in commit order; a round numbers
///   the rows it takes in row-id order and also takes every older row of the orders it numbers
///   (`events_unsequenced_by_order`), so an order's events are numbered in commit order even
///   when an older one lies below the window a round looks at.
/// - A round deletes the rows it numbers in its own transaction: each is numbered once.
///
/// A round looks at rows above `ScanState.from` (the rows of the last second are the only ones
/// that may still come below the highest id numbered), and every `fullScanInterval` at the
/// whole table, so a row whose writer took longer than that to commit is numbered within that
/// interval of its commit.
final class EventSequencer: Sendable {
    /// The session advisory lock whose holder numbers the feed ('ipndseqr').
    static let lockKey: Int64 = 0x6970_6E64_7365_7172
    /// What the sequencer notifies after each round that numbered events.
    static let channel = "ipnd_events"
    /// The most rows one round numbers.
    static let roundLimit: Int64 = 5_000
    /// How long a gap below the highest row id numbered is looked for in every round.
    static let gapPatience: Duration = .seconds(1)
    /// How often a round looks at the whole table.
    static let fullScanInterval: Duration = .milliseconds(500)
    /// How soon the sequencing node looks for rows again after a look that found none, when
    /// nothing woke it: other nodes' commits are found by looking. Each look that finds none
    /// doubles the wait, up to `idlePollLongest`; a round that numbers rows starts again here.
    static let idlePoll: Duration = .milliseconds(10)
    /// The longest wait between two looks on a quiet feed: an idle cluster's sequencer costs a
    /// tenth of what 10 ms looks would (each is a query), and another node's event still reaches
    /// the feed well within the second the feed promises.
    static let idlePollLongest: Duration = .milliseconds(100)
    /// How often another node tries to take the lock.
    static let takeoverInterval: Duration = .seconds(1)
    /// The shortest time from one round to the next while rounds find rows: a round costs a
    /// commit whatever it numbers, and the feed can wait this long.
    static let roundInterval: Duration = .milliseconds(10)
    /// How long one statement (or one round, BEGIN to COMMIT) may take before the connection is
    /// given up: a connection the server dropped can leave a query unanswered for good
    /// (postgres-nio), and a connection given up releases the lock for another node.
    static let statementTimeout: Duration = .seconds(30)

    private let client: PostgresClient
    private let logger: Logger
    /// This node's name: the sequencer's connection shows it (`application_name`, "ipnd sequencer NODE").
    private let node: String
    /// Woken when this node committed events, or a round numbered some.
    private let feed: EventSignal
    private let wakeups = EventSignal()
    /// Signalled once, by `stop`: what cuts short the wait of a node that does not number.
    private let stopped = EventSignal()
    private let state = Locked(RunState())
    private let task = Locked<Task<Void, Never>?>(nil)

    private struct RunState {
        var stopping = false
        var leading = false
    }

    init(client: PostgresClient, node: String, logger: Logger, feed: EventSignal) {
        self.client = client
        self.node = node
        self.logger = logger
        self.feed = feed
    }

    /// Starts taking part: listening for other nodes' rounds, and numbering when this node holds the lock.
    func start() {
        task.withLock { $0 = Task { await self.run() } }
    }

    /// This node committed events: a round now, if this node numbers the feed.
    func wake() { wakeups.signal() }

    /// Whether this node numbers the feed now.
    var isLeading: Bool { state.withLock { $0.leading } }

    /// Stops; the sequencing node first numbers what is committed (within a few seconds).
    func stop() async {
        state.withLock { $0.stopping = true }
        wakeups.signal()
        stopped.signal()
        let running = task.withLock { $0 }
        await running?.value
    }

    private var stopping: Bool { state.withLock { $0.stopping } }

    private func run() async {
        while !stopping {
            do {
                try await client.withConnection { connection in
                    // Closed (the session lock goes with it) before the pool gets it back: a
                    // connection still closing would be leased to the next query, which would fail.
                    do {
                        try await self.serve(connection)
                    } catch {
                        try? await connection.close()
                        throw error
                    }
                    try? await connection.close()
                }
            } catch {
                if !stopping { logger.warning("event sequencer: connection lost", metadata: ["error": "\(String(reflecting: error))"]) }
            }
            state.withLock { $0.leading = false }
            if stopping { return }
            await wakeups.wait(since: wakeups.generation, timeout: Self.takeoverInterval)
        }
    }

    /// On one connection: listens for rounds, and takes the lock when free and numbers.
    private func serve(_ connection: PostgresConnection) async throws {
        // A node that stops answering mid-round does not hold the lock for good; pg_stat_activity
        // names the node whose connection holds it.
        var settings = SQL()
        settings.append("""
            SELECT set_config('idle_in_transaction_session_timeout', '10s', false),
                   set_config('application_name', \(settings.bind("ipnd sequencer \(node)")), false)
            """)
        try await connection.run(settings, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await connection.listen(on: Self.channel) { notifications in
                    for try await _ in notifications { self.feed.signal() }
                }
            }
            group.addTask { try await self.lead(connection) }
            // Either ends: the connection is lost, or the sequencer stopped.
            _ = try await group.next()
            group.cancelAll()
        }
    }

    private func lead(_ connection: PostgresConnection) async throws {
        var scan = ScanState()
        var lastFullScan: ContinuousClock.Instant?
        var busy = false
        var idleWait = Self.idlePoll
        while true {
            let generation = wakeups.generation
            var leading = state.withLock { $0.leading }
            if !leading {
                // A node stopping takes the lock if it is free, to number what it committed.
                let stopGeneration = stopped.generation
                guard try await Self.tryLock(connection, logger: logger) else {
                    if stopping { return }
                    // The next try in `takeoverInterval`, or at once when stopping; this node's
                    // own commits (`wakeups`) are the holder's to number.
                    await stopped.wait(since: stopGeneration, timeout: Self.takeoverInterval)
                    continue
                }
                state.withLock { $0.leading = true }
                leading = true
                logger.info("event sequencer: this node numbers the feed")
                scan = ScanState()
                lastFullScan = nil
                busy = true
            }
            if stopping {
                // Everything committed, numbered before the lock goes with the connection.
                while try await !Self.round(after: 0, connection: connection, logger: logger).rowIDs.isEmpty { feed.signal() }
                return
            }
            let now = ContinuousClock.now
            let full = lastFullScan.map { now - $0 >= Self.fullScanInterval } ?? true
            let from = full ? 0 : scan.from
            if !busy, try await !Self.anyWaiting(after: from, connection: connection, logger: logger) {
                if full { lastFullScan = now }
                await wakeups.wait(since: generation, timeout: idleWait)
                idleWait = Self.nextIdleWait(after: idleWait)
                continue
            }
            idleWait = Self.idlePoll
            let moved = try await Self.round(after: from, connection: connection, logger: logger)
            if full { lastFullScan = now }
            scan.numbered(moved.rowIDs, at: now)
            if !moved.rowIDs.isEmpty { feed.signal() }
            busy = !moved.rowIDs.isEmpty
            // Each round is a commit (a WAL flush, and the standby's acknowledgement): under load,
            // rounds come at most every `roundInterval`, each taking what committed meanwhile.
            if busy, moved.rowIDs.count < Self.roundLimit, !stopping {
                try? await Task.sleep(until: now + Self.roundInterval, clock: .continuous)
            }
        }
    }

    /// The wait after a look that found no rows, when the last wait was `wait`.
    static func nextIdleWait(after wait: Duration) -> Duration { min(wait * 2, idlePollLongest) }

    // MARK: Rounds

    /// What one round numbered.
    struct Round: Sendable {
        /// The row ids it took, ascending.
        var rowIDs: [Int64] = []
        /// The highest seq it gave (0 for none).
        var newest: Int64 = 0
    }

    static func tryLock(_ connection: PostgresConnection, logger: Logger) async throws -> Bool {
        var sql = SQL()
        sql.append("SELECT pg_try_advisory_lock(\(sql.bind(lockKey)))")
        return try await bool(sql, connection: connection, logger: logger)
    }

    static func anyWaiting(after from: Int64, connection: PostgresConnection, logger: Logger) async throws -> Bool {
        try await bounded(connection) {
            try await connection.rows(SequencerProbe(from: from), logger: logger).first ?? false
        }
    }

    private static func bool(_ sql: SQL, connection: PostgresConnection, logger: Logger) async throws -> Bool {
        try await bounded(connection) {
            var value = false
            for try await row in try await connection.query(sql.query, logger: logger).decode(Bool.self) { value = row }
            return value
        }
    }

    /// `body`, within `statementTimeout` and while the connection is open; past the one or once
    /// the other, the connection is closed and an error thrown.
    private static func bounded<T: Sendable>(_ connection: PostgresConnection, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T
    {
        // A query sent on a connection the server closed is never answered: none is sent then,
        // nor once the listener found the connection lost (and cancelled the rounds); and a query
        // already sent when the server closed it (its backend terminated) may never be answered
        // either, so the wait ends when the connection is seen closed, not only at the timeout:
        // another node can take the lock within `takeoverInterval`, and this one try again.
        try Task.checkCancellation()
        guard !connection.isClosed else { throw StoreError(message: "the sequencer's connection is closed") }
        do {
            return try await withTimeout(statementTimeout, abandoningWhen: { connection.isClosed }, body)
        } catch let error as TimedOut {
            let closed = connection.isClosed
            try? await connection.close()
            if closed { throw StoreError(message: "the sequencer's connection closed during a statement") }
            throw error
        }
    }

    /// One round, in its own transaction on `connection` (which must hold the sequencer lock):
    /// numbers the committed rows above `from` (at most `roundLimit`), and every older row of
    /// their orders, in row-id order; moves them into `events` with their deliveries; notifies
    /// (`SequencerRound`).
    static func round(after from: Int64, connection: PostgresConnection, logger: Logger) async throws -> Round {
        try await bounded(connection) { try await roundUnbounded(after: from, connection: connection, logger: logger) }
    }

    private static func roundUnbounded(after from: Int64, connection: PostgresConnection, logger: Logger) async throws -> Round {
        _ = try await connection.query("BEGIN", logger: logger)
        do {
            // Writers of an earlier ipnd take seqs under this lock, held to their commit.
            try await connection.run(SQL("SELECT pg_advisory_xact_lock(\(PostgresSchema.eventLock))"), logger: logger)
            var round = Round()
            for (rowIDs, newest) in try await connection.rows(SequencerRound(from: from, limit: roundLimit), logger: logger) {
                round = Round(rowIDs: rowIDs, newest: newest)
            }
            _ = try await connection.query("COMMIT", logger: logger)
            return round
        } catch {
            await connection.rollBackOrClose(logger: logger)
            throw error
        }
    }

    /// Numbers everything committed, on a pooled connection, if no node holds the sequencer
    /// lock (a command that wrote events with no daemon running; a store copy). Returns false
    /// when another node holds it (that node numbers them).
    static func drain(client: PostgresClient, logger: Logger) async throws -> Bool {
        try await client.withConnection { connection in
            guard try await tryLock(connection, logger: logger) else { return false }
            do {
                while try await !round(after: 0, connection: connection, logger: logger).rowIDs.isEmpty {}
                var unlock = SQL()
                unlock.append("SELECT pg_advisory_unlock(\(unlock.bind(lockKey)))")
                try await connection.run(unlock, logger: logger)
            } catch {
                try? await connection.close()
                throw error
            }
            return true
        }
    }
}

/// Where the sequencing node's rounds look: above the highest row id numbered, or below it
/// where ids were skipped (rows whose writers had not committed yet), for `gapPatience`.
struct ScanState: Sendable {
    /// The highest row id numbered so far (0 before the first round).
    private(set) var highest: Int64 = 0
    /// Row ids below `highest` not numbered yet, and since when.
    private(set) var gaps: [Int64: ContinuousClock.Instant] = [:]
    /// The most gaps kept: past that, the full scans find the late rows.
    static let maxGaps = 100_000

    /// The row id rounds look above.
    var from: Int64 { gaps.keys.min().map { $0 - 1 } ?? highest }

    /// A round numbered `rowIDs` (ascending) at `now`.
    mutating func numbered(_ rowIDs: [Int64], at now: ContinuousClock.Instant) {
        for id in rowIDs { gaps[id] = nil }
        if let top = rowIDs.last, top > highest {
            // Nothing is known below the first round's rows: those are the full scans' to find.
            let start = highest == 0 ? (rowIDs.first ?? top) : highest + 1
            if top - start < Int64(Self.maxGaps) {
                var next = rowIDs.firstIndex { $0 >= start } ?? rowIDs.endIndex
                var id = start
                while id < top {
                    if next < rowIDs.endIndex, rowIDs[next] == id {
                        next += 1
                    } else {
                        gaps[id] = now
                    }
                    id += 1
                }
            }
            highest = top
        }
        gaps = gaps.filter { now - $0.value < EventSequencer.gapPatience }
        if gaps.count > Self.maxGaps { gaps = [:] }
    }
}

/// A round's statement (`EventSequencer.round`), prepared once on the sequencer's connection.
/// Every row it touches is found through the queue's indexes (by row id; by order, for the
/// older rows of the orders it numbers), never by reading the table, which holds the dead rows
/// of every round until autovacuum comes.
struct SequencerRound: PostgresPreparedStatement {
    typealias Row = ([Int64], Int64)
    var from: Int64 = 0
    var limit: Int64 = 0

    static let sql = SequencerRound().statement.text

    var statement: SQL {
        var sql = SQL()
        let (fromParameter, limitParameter) = (sql.bind(from), sql.bind(limit))
        let columns = EventRow.shape.columnList
        sql.append("""
            WITH fresh AS (
                SELECT row_id, order_id FROM events_unsequenced WHERE row_id > \(fromParameter) ORDER BY row_id LIMIT \(limitParameter)
            ), picked AS (
                SELECT row_id FROM fresh
                UNION
                SELECT q.row_id FROM (SELECT DISTINCT order_id FROM fresh) AS f,
                LATERAL (SELECT q.row_id FROM events_unsequenced q
                         WHERE q.order_id = f.order_id AND q.row_id <= \(fromParameter) OFFSET 0) AS q
            ), numbered AS (
                SELECT row_id, nextval('events_seq') AS seq FROM picked ORDER BY row_id
            ), deleted AS (
                DELETE FROM events_unsequenced q WHERE q.row_id = ANY (ARRAY(SELECT row_id FROM numbered)) RETURNING q.*
            ), moved AS (
                SELECT n.seq, d.* FROM deleted d JOIN numbered n ON n.row_id = d.row_id
            ), inserted AS (
                INSERT INTO events (seq, \(columns)) SELECT seq, \(columns) FROM moved
            ), owed AS (
                INSERT INTO deliveries (\(DeliveryRow.shape.columnList))
                SELECT t.target, m.seq, m.order_id, 'pending', m.occurred_at, m.occurred_at
                FROM moved m, unnest(m.targets) AS t (target)
            ), notified AS (
                SELECT pg_notify('\(EventSequencer.channel)', max(seq)::text) FROM moved HAVING count(*) > 0
            )
            SELECT coalesce(array_agg(row_id ORDER BY row_id), '{}') AS row_ids, coalesce(max(seq), 0) AS newest,
                   (SELECT count(*) FROM notified) AS notified
            FROM moved
            """)
        return sql
    }

    func makeBindings() throws -> PostgresBindings { statement.bindings }

    func decodeRow(_ row: PostgresRow) throws -> ([Int64], Int64) {
        let (rowIDs, newest, _) = try row.decode(([Int64], Int64, Int64).self)
        return (rowIDs, newest)
    }
}

/// Whether any row waits above `from` (one index entry read).
struct SequencerProbe: PostgresPreparedStatement {
    typealias Row = Bool
    var from: Int64 = 0

    static let sql = "SELECT EXISTS (SELECT 1 FROM events_unsequenced WHERE row_id > $1::bigint)"

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(from)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Bool { try row.decode(Bool.self) }
}
