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
import NIOCore
import PostgresNIO

/// The store on PostgreSQL: any number of ipnd nodes may share one database. Notifications are
/// group-committed by a few writer connections (`PostgresBatchWriter`), which queue their events;
/// the node holding the sequencer lock numbers them into the feed once committed
/// (`EventSequencer`). Reads and the delivery service's updates use the pool directly. The
/// client's pool runs in a task of the store's own from `open` to `close`.
public final class PostgresStore: Store {
    public let location: String
    public let eventSignal = EventSignal()
    public let recording = InFlightCount()
    public let auditObserver = AuditObserver()
    let client: PostgresClient
    let logger: Logger
    private let writer: PostgresBatchWriter
    private let statistics: TableStatistics
    private let routes = Locked<[DeliveryRoute]>([])
    private let schedule = Locked<InquirySchedule>(.standard)
    private let clientTask: Task<Void, Never>
    /// This node's name on its heartbeat row.
    private let node: String

    /// The time of day rows are stamped with.
    let clock: WallClock
    let timeouts: StoreTimeouts
    /// Numbers committed events into the feed while this node holds its lock; nil for a command,
    /// which numbers what it wrote as it closes, when no node does (`EventSequencer.drain`).
    private let sequencer: EventSequencer?
    /// Whether this store committed events (a command numbers them as it closes).
    private let wroteEvents = Locked(false)

    /// Connects with `configuration`, migrates (under the migration lock) unless `migrate` is
    /// false, in which case the schema must be this version's, and starts the writers.
    /// - Parameters:
    ///   - location: how logs name the database (no password).
    ///   - writers: connections writing notification batches concurrently (1 by default).
    ///   - sequencing: whether this store takes part in numbering the feed (`ipnd serve`); a
    ///     command's store does not, on a connection of its own.
    public static func open(
        configuration: PostgresClient.Configuration, location: String, poolSize: Int, maxBatch: Int = 256, writers: Int? = nil,
        migrate: Bool = true, sequencing: Bool = true, logger: Logger, clock: WallClock = .system,
        timeouts: StoreTimeouts = .production
    ) async throws(StoreError) -> PostgresStore {
        var configuration = configuration
        // The sequencer keeps a connection of its own (its lock and its LISTEN live on it).
        configuration.options.maximumConnections = max(2, poolSize) + (sequencing ? 1 : 0)
        configuration.options.connectTimeout = .seconds(5)
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let task = Task { await client.run() }
        do {
            if migrate {
                try await PostgresSchema.migrate(client, logger: logger)
            } else {
                try await PostgresSchema.requireCurrent(client, logger: logger)
            }
        } catch {
            task.cancel()
            await task.value
            throw error
        }
        // One writer: it takes every notification waiting when it starts a batch, so batches grow
        // with the load and each costs its statements and its commit once; on a 2-core host,
        // one writer per node recorded 10-25 % more per second than two, at a lower p99
        // (docs/benchmarks.md).
        let writerCount = writers ?? 1
        return PostgresStore(
            client: client, task: task, location: location, maxBatch: maxBatch, writers: writerCount, sequencing: sequencing,
            logger: logger, clock: clock, timeouts: timeouts)
    }

    private init(
        client: PostgresClient, task: Task<Void, Never>, location: String, maxBatch: Int, writers: Int, sequencing: Bool,
        logger: Logger, clock: WallClock, timeouts: StoreTimeouts
    ) {
        self.client = client
        self.clock = clock
        self.timeouts = timeouts
        self.clientTask = task
        self.location = location
        self.logger = logger
        statistics = TableStatistics(client: client, logger: logger)
        node = "\(ProcessInfo.processInfo.hostName)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let sequencer = sequencing ? EventSequencer(client: client, node: node, logger: logger, feed: eventSignal) : nil
        self.sequencer = sequencer
        let wroteEvents = self.wroteEvents
        writer = PostgresBatchWriter(
            client: client, writers: writers, maxBatch: maxBatch, routes: routes, schedule: schedule, logger: logger, clock: clock,
            timeouts: timeouts,
            eventsCommitted: { _ in
                wroteEvents.withLock { $0 = true }
                sequencer?.wake()
            })
        sequencer?.start()
    }

    /// How many times this node has looked whether the store outgrew the planner's statistics.
    var statisticsLooked: Int { statistics.looked }

    /// This store committed events: the sequencer numbers them.
    func eventsCommitted() {
        wroteEvents.withLock { $0 = true }
        sequencer?.wake()
    }

    // MARK: Writes

    public func record(_ entry: InboxEntry) async throws(StoreError) -> RecordOutcome {
        recording.enter()
        defer { recording.leave() }
        guard case .recorded(let outcome) = try await writer.submit(.record(entry)) else {
            throw StoreError(message: "the writer answered a notification with something else")
        }
        statistics.recorded()
        return outcome
    }

    public func record(_ entry: InboxEntry, audit: AuditEntry) async throws(StoreError) -> RecordOutcome {
        recording.enter()
        defer { recording.leave() }
        let (now, routes, schedule) = (timestamp(), routesNow, scheduleNow)
        let outcome = try await audited(doing: "record a notification") { [logger] connection in
            let results = try await BatchRecorder(connection: connection, logger: logger, now: now, routes: routes, schedule: schedule)
                .record([.record(entry)])
            guard case .recorded(let outcome)? = results.first else {
                throw StoreError(message: "the writer answered a notification with something else")
            }
            return (outcome, audit.recording(outcome))
        }
        if outcome.eventsWritten > 0 { eventsCommitted() }
        return outcome
    }

    public func setExpectation(provider: String, account: String, orderRef: String, amount: Money, audit: AuditEntry?)
        async throws(StoreError) -> ExpectationOutcome
    {
        let scope = Scope(provider: provider, account: account)
        if let audit {
            let (now, routes, schedule) = (timestamp(), routesNow, scheduleNow)
            let outcome = try await audited(doing: "register an expectation") { [logger] connection in
                let results = try await BatchRecorder(connection: connection, logger: logger, now: now, routes: routes, schedule: schedule)
                    .record([.expectation(scope: scope, orderRef: orderRef, amount: amount)])
                guard case .expectation(let outcome)? = results.first else {
                    throw StoreError(message: "the writer answered an expectation with something else")
                }
                return (outcome, audit.expecting(outcome))
            }
            eventsCommitted()
            return outcome
        }
        let result = try await writer.submit(.expectation(scope: Scope(provider: provider, account: account), orderRef: orderRef, amount: amount))
        guard case .expectation(let outcome) = result else {
            throw StoreError(message: "the writer answered an expectation with something else")
        }
        return outcome
    }

    public func heartbeat() async throws(StoreError) {
        var sql = SQL()
        sql.append("""
            INSERT INTO heartbeat (node, at) VALUES (\(sql.bind(node)), \(sql.bind(timestamp())))
            ON CONFLICT (node) DO UPDATE SET at = EXCLUDED.at
            """)
        try await execute(sql, doing: "write the heartbeat")
    }

    public func setDeliveryRoutes(_ routes: [DeliveryRoute]) {
        self.routes.withLock { $0 = routes }
    }

    /// The delivery routes events are written with now.
    var routesNow: [DeliveryRoute] { routes.withLock { $0 } }

    public func setInquirySchedule(_ schedule: InquirySchedule) {
        self.schedule.withLock { $0 = schedule }
    }

    /// The inquiry schedule changed orders are given now.
    var scheduleNow: InquirySchedule { schedule.withLock { $0 } }

    /// Makes sure every configured target has its row (pause state, the console's list).
    public func registerDeliveryTargets(_ names: [String]) async throws(StoreError) {
        guard !names.isEmpty else { return }
        var sql = SQL()
        sql.append("INSERT INTO delivery_targets (name) SELECT unnest(\(sql.bind(names))::text[]) ON CONFLICT DO NOTHING")
        try await execute(sql, doing: "register the delivery targets")
    }

    @discardableResult
    public func close() async throws(StoreError) -> StoreError? {
        await writer.close()
        var failure: StoreError?
        if let sequencer {
            await sequencer.stop()
        } else if wroteEvents.withLock({ $0 }) {
            // A command: what it wrote is numbered now unless a node numbers the feed.
            do {
                _ = try await withTimeout(timeouts.write) { [client, logger] in try await EventSequencer.drain(client: client, logger: logger) }
            } catch {
                failure = StoreError(postgres: error, doing: "number the events written (the next ipnd serve numbers them)")
            }
        }
        clientTask.cancel()
        await clientTask.value
        return failure
    }

    // MARK: The feed's numbering

    /// Whether this node numbers the feed now (it holds the sequencer lock).
    public var numbersTheFeed: Bool { sequencer?.isLeading ?? false }

    /// Returns once every event committed before the call is in the feed, or throws when that
    /// takes longer than `timeout` (no node numbers the feed, or the database is unavailable).
    public func eventsNumbered(timeout: Duration = .seconds(30)) async throws(StoreError) {
        guard let pending = try await rows(SQL("SELECT max(row_id) AS newest FROM events_unsequenced"), doing: "read the event queue").first,
              let newest = try record(pending, { try $0.optionalInt("newest") })
        else { return }
        let deadline = ContinuousClock.now + timeout
        while true {
            if sequencer == nil {
                do {
                    _ = try await EventSequencer.drain(client: client, logger: logger)
                } catch {
                    throw StoreError(postgres: error, doing: "number the events")
                }
            } else {
                sequencer?.wake()
            }
            var sql = SQL()
            sql.append("SELECT EXISTS (SELECT 1 FROM events_unsequenced WHERE row_id <= \(sql.bind(newest))) AS waiting")
            guard let row = try await rows(sql, doing: "read the event queue").first, try record(row, { try $0.bool("waiting") }) else {
                return
            }
            guard ContinuousClock.now < deadline else {
                throw StoreError(message: "events committed more than \(timeout) ago are not in the feed yet (is a node numbering it?)")
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    public func unsequencedEventCount() async throws(StoreError) -> Int {
        guard let row = try await rows(SQL("SELECT count(*) AS n FROM events_unsequenced"), doing: "count the event queue").first else {
            return 0
        }
        return Int(try record(row) { try $0.int("n") })
    }

    // MARK: Running statements

    /// Runs `sql` on a pooled connection (autocommit), within the write timeout.
    func execute(_ sql: SQL, doing action: String) async throws(StoreError) {
        do {
            try await withTimeout(timeouts.write) { [client, logger] in
                _ = try await client.query(sql.query, logger: logger)
            }
        } catch {
            throw StoreError(postgres: error, doing: action)
        }
    }

    /// Reads the rows of `sql` on a pooled connection, within the write timeout.
    func rows(_ sql: SQL, doing action: String) async throws(StoreError) -> [PGRow] {
        do {
            return try await withTimeout(timeouts.write) { [client, logger] in
                try await client.rows(sql, logger: logger)
            }.map { $0 }
        } catch {
            throw StoreError(postgres: error, doing: action)
        }
    }

    /// Runs `body` in one transaction on a pooled connection, within the write timeout.
    func transaction<T: Sendable>(doing action: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws(StoreError) -> T {
        do {
            return try await withTimeout(timeouts.write) { [client, logger] in
                try await client.withConnection { connection in
                    _ = try await connection.query("BEGIN", logger: logger)
                    do {
                        let value = try await body(connection)
                        _ = try await connection.query("COMMIT", logger: logger)
                        return value
                    } catch {
                        await connection.rollBackOrClose(logger: logger)
                        throw error
                    }
                }
            }
        } catch {
            throw StoreError(postgres: error, doing: action)
        }
    }

    /// Now on the store's clock, as stored text.
    func timestamp(offset milliseconds: Int64 = 0) -> String {
        clock.text(offset: milliseconds)
    }
}

/// `body` did not finish within its time.
struct TimedOut: Error, CustomStringConvertible {
    let limit: Duration
    var description: String { "no answer from PostgreSQL within \(limit)" }
}

/// Runs `body`, cancelling it and throwing `TimedOut` once `limit` has passed, or sooner once
/// `abandoned` (looked at every 100 ms) says waiting is pointless, without waiting for it to
/// end (`race`).
func withTimeout<T: Sendable>(
    _ limit: Duration, abandoningWhen abandoned: (@Sendable () -> Bool)? = nil, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let result = await race({ () async -> Result<T, any Error> in
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }, until: {
        guard let abandoned else {
            try? await Task.sleep(for: limit)
            return
        }
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline, !abandoned() {
            guard (try? await Task.sleep(for: .milliseconds(100))) != nil else { return }
        }
    })
    guard let result else { throw TimedOut(limit: limit) }
    return try result.get()
}

/// `work`'s value, or nil once `deadline` returns first; `work` is then cancelled and left to
/// end on its own, in the background.
///
/// Not a task group: a group waits for all its children, and a call into postgres-nio that does
/// not end on cancellation (a query on a connection lost while PostgreSQL restarted) would then
/// hold the caller, and every request waiting for it, for good. A transaction that ends after
/// its deadline was answered as not committed, or as in doubt: the provider's retry is then a
/// duplicate or applied, never counted twice.
func race<T: Sendable>(
    _ work: @escaping @Sendable () async -> T, until deadline: @escaping @Sendable () async -> Void
) async -> T? {
    let resumed = Locked(false)
    let timer = Locked<Task<Void, Never>?>(nil)
    return await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        /// True for the first caller only.
        @Sendable func claim() -> Bool {
            resumed.withLock { done in
                defer { done = true }
                return !done
            }
        }
        let worker = Task {
            let value = await work()
            timer.withLock { $0 }?.cancel()
            if claim() { continuation.resume(returning: value) }
        }
        timer.withLock {
            $0 = Task {
                await deadline()
                guard !Task.isCancelled, claim() else { return }
                worker.cancel()
                continuation.resume(returning: nil)
            }
        }
    }
}

extension PostgresSchema {
    /// A command (not `serve`) only opens a database at this version's schema.
    static func requireCurrent(_ client: PostgresClient, logger: Logger) async throws(StoreError) {
        do {
            var applied = Set<String>()
            let exists = try await client.query("SELECT to_regclass('ipnd_migrations') IS NOT NULL", logger: logger).decode(Bool.self)
            for try await value in exists where !value {
                throw StoreError(message: "the database is not an ipnd store yet (has ipnd serve run with this config?)")
            }
            for try await identifier in try await client.query("SELECT identifier FROM ipnd_migrations", logger: logger).decode(String.self) {
                applied.insert(identifier)
            }
            let known = Set(migrations.map(\.identifier))
            if !applied.subtracting(known).isEmpty {
                throw StoreError(message: "the store was migrated by a newer ipnd (\(applied.subtracting(known).sorted().joined(separator: "; "))); "
                    + "run that version, or restore a backup taken before the upgrade")
            }
            if !known.subtracting(applied).isEmpty {
                throw StoreError(message: "the store predates this ipnd (\(known.subtracting(applied).sorted().joined(separator: "; ")) not applied); "
                    + "start ipnd serve of this version once to upgrade it")
            }
        } catch {
            throw StoreError(postgres: error, doing: "open the PostgreSQL store")
        }
    }
}
