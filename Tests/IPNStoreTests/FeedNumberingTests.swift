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

/// The feed's numbering (as docs/reliability.md states it): seqs increase in
/// the order events enter the feed, with no gap a reader can fall into, one order's events in
/// their commit order. SQLite numbers events as its one writer inserts them; PostgreSQL after
/// their commit (`EventSequencer`), so that writers of several nodes never wait for each other.
@Suite("The feed's numbering: after commit on PostgreSQL, at insert on SQLite", .serialized, .heavy)
struct FeedNumberingTests {
    @Test("event ids are UUIDs of version 7 on every store", arguments: Backend.allCases)
    func version7(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        _ = try await test.record(notification("a", .transition(.authorized)))
        _ = try await test.record(notification("b", .transition(.paid)))
        let ids = try await test.allEvents().map(\.id)
        #expect(ids.count == 2)
        for id in ids {
            #expect(id.range(of: #"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"#, options: .regularExpression) != nil, "\(id)")
        }
        try await test.close()
    }

    @Test("two writers changing the same orders at once: each order's events in the feed follow its transitions, each once",
          arguments: Backend.allCases)
    func perOrderOrder(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend, maxBatch: 8)
        // On PostgreSQL a second store on the same database: another node.
        let other = backend == .postgres ? try await test.sibling() : nil
        let orders = 30
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (lane, store) in [test.store, other?.store ?? test.store].enumerated() {
                group.addTask {
                    for index in 0..<orders {
                        let ref = "PO-\(index)"
                        let step: NotificationEffect = lane == 0 ? .transition(.authorized) : .transition(.paid)
                        _ = try await store.record(.verified(request(), notification("\(ref)-\(lane)", step, order: ref)))
                    }
                }
            }
            try await group.waitForAll()
        }
        try await other?.settle()
        let events = try await test.allEvents()
        #expect(events.map(\.seq) == Array(1...Int64(events.count)))
        #expect(Set(events.map(\.id)).count == events.count)
        for index in 0..<orders {
            let chain = events.filter { $0.orderRef == "PO-\(index)" && $0.type == .stateChanged }
            let transitions = try #require(try await test.order("PO-\(index)")).transitions
            #expect(chain.map(\.to) == transitions.map(\.to), "PO-\(index)")
            #expect(chain.map(\.from) == transitions.map(\.from), "PO-\(index)")
        }
        try await other?.close()
        try await test.close()
    }

    @Test("a writer that commits after a later writer's events were numbered is numbered after them: a reader never sees a smaller seq later",
          .enabled(if: Backend.allCases.contains(.postgres)))
    func lateCommitter() async throws {
        let test = try await StoreUnderTest.make(.postgres)
        _ = try await test.record(notification("late-order", .transition(.authorized), order: "LATE"))
        let orderID = try #require(try await test.order("LATE")).order.id
        // An earlier writer: its row id is taken now, its commit comes last.
        try await RawSession.with(test) { held in
            try await held.run("BEGIN")
            try await held.run(queueRow(orderID: orderID, orderRef: "LATE", id: EventID.next()))
            for index in 0..<5 {
                _ = try await test.record(notification("later-\(index)", .transition(.paid), order: "LATER-\(index)"))
            }
            let before = try await test.allEvents()
            #expect(before.map(\.seq) == Array(1...6))
            try await held.run("COMMIT")
            let after = try await test.allEvents()
            #expect(after.map(\.seq) == Array(1...7))
            #expect(after.last?.orderRef == "LATE" && after.last?.from == .authorized)
        }
        try await test.close()
    }

    @Test("a round numbers the rows above where it looks and every older row of their orders, in row-id order; an older row of another order waits for a round that looks lower",
          .enabled(if: Backend.allCases.contains(.postgres)))
    func roundWindow() async throws {
        // No sequencer of its own: the test runs the rounds.
        let test = try await StoreUnderTest.make(.postgres, sequencing: false)
        _ = try await test.record(notification("a", .transition(.authorized), order: "A"))
        _ = try await test.record(notification("b", .transition(.authorized), order: "B"))
        _ = try await test.record(notification("c", .transition(.authorized), order: "C"))
        // The three writes above queued three rows; rounds number them below.
        try await RawSession.with(test) { raw in
            let queued = try await raw.ints("SELECT row_id FROM events_unsequenced ORDER BY row_id")
            #expect(queued.count == 3)
            let (a, b, c) = (queued[0], queued[1], queued[2])
            let orderA = try #require(try await test.order("A")).order.id
            try await raw.run(queueRow(orderID: orderA, orderRef: "A", id: EventID.next()))
            let a2 = try #require(try await raw.ints("SELECT max(row_id) FROM events_unsequenced").first)

            try await raw.connection { connection in
                #expect(try await EventSequencer.tryLock(connection, logger: testLogger))
                // Looking above B: C and A's second row, and A's first with them; B waits.
                let first = try await EventSequencer.round(after: b, connection: connection, logger: testLogger)
                #expect(first.rowIDs == [a, c, a2])
                let second = try await EventSequencer.round(after: 0, connection: connection, logger: testLogger)
                #expect(second.rowIDs == [b])
                #expect(try await EventSequencer.round(after: 0, connection: connection, logger: testLogger).rowIDs.isEmpty)
            }
            let events = try await test.store.events(EventFilter(after: 0, limit: 100)).events
            #expect(events.map(\.orderRef) == ["A", "C", "A", "B"])
            #expect(events.map(\.seq) == [1, 2, 3, 4])
        }
        try await test.close()
    }

    @Test("a transaction another client holds open does not stop the feed", .enabled(if: Backend.allCases.contains(.postgres)))
    func longTransaction() async throws {
        let test = try await StoreUnderTest.make(.postgres)
        try await RawSession.with(test) { holder in
            // A snapshot and a transaction id held: nothing it could see goes away meanwhile.
            try await holder.run("BEGIN ISOLATION LEVEL REPEATABLE READ")
            _ = try await holder.ints("SELECT txid_current()")
            try await test.recordPaid(lanes: 8, perLane: 25, prefix: "lt")
            let events = try await test.allEvents()
            #expect(events.map(\.seq) == Array(1...200))
            // Still open all along.
            #expect(try await holder.ints("SELECT count(*) FROM events").first == 0)
            try await holder.run("ROLLBACK")
        }
        try await test.close()
    }

    @Test("the node numbering the feed loses its connection: another takes over within seconds; nothing numbered twice, nothing left out",
          .enabled(if: Backend.allCases.contains(.postgres)))
    func takeover() async throws {
        let test = try await StoreUnderTest.make(.postgres)
        let other = try await test.sibling()
        let stores = [test.store, other.store].compactMap { $0 as? PostgresStore }
        let leader = try await waitForLeader(stores)
        try await RawSession.with(test) { raw in
            var recorded = 0
            for round in 0..<3 {
                for (lane, store) in stores.enumerated() {
                    for index in 0..<10 {
                        _ = try await store.record(.verified(request(), notification("to-\(round)-\(lane)-\(index)", .transition(.paid),
                                                                                   order: "TO-\(round)-\(lane)-\(index)")))
                        recorded += 1
                    }
                }
                // A node holds the sequencer lock again (the one before was killed a round ago)...
                let holder = """
                    FROM pg_locks
                    WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                      AND classid = \(EventSequencer.lockKey >> 32)
                      AND objid = \(EventSequencer.lockKey & 0xFFFF_FFFF) AND objsubid = 1
                    """
                try await waitUntil("a node holding the sequencer lock, round \(round)") {
                    try await raw.ints("SELECT count(*) \(holder)").first == 1
                }
                // ... and its session dies, as when its process is killed.
                let killed = try await raw.ints("SELECT count(pg_terminate_backend(pid)) \(holder)")
                #expect(killed.first == 1, "round \(round)")
            }
            _ = leader
            for store in stores { try await store.eventsNumbered() }
            let events = try await test.allEvents()
            // Every event once, in increasing seqs (a round cut off mid-way may leave seqs unused).
            #expect(events.count == recorded)
            #expect(zip(events, events.dropFirst()).allSatisfy { $0.seq < $1.seq })
            #expect(Set(events.map(\.id)).count == recorded)
            #expect(try await test.count("SELECT count(DISTINCT order_ref) FROM events") == recorded)
            #expect(try await test.count("SELECT count(*) FROM events_unsequenced") == 0)
        }
        try await other.close()
        try await test.close()
    }

    /// The store of `stores` that numbers the feed, once one does (30 s at most).
    private func waitForLeader(_ stores: [PostgresStore]) async throws -> PostgresStore {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let leading = stores.filter(\.numbersTheFeed)
            #expect(leading.count <= 1)
            if let leader = leading.first { return leader }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw StoreError(message: "no store numbered the feed within 30 s")
    }

    /// An event row as a writer queues it, for `order`.
    private func queueRow(orderID: Int64, orderRef: String, id: String) -> String {
        """
        INSERT INTO events_unsequenced (row_id, id, type, occurred_at, provider, account, order_id, order_ref, order_json, from_state,
                                        to_state, flag, notification_id, provider_status, targets)
        VALUES (nextval('events_row_ids'), '\(id)', 'order.state_changed', '2026-11-21T00:00:00.000Z', 'test', 'default', \(orderID),
                '\(orderRef)', '{}', 'authorized', 'paid', NULL, NULL, 'PAID', '{}')
        """
    }
}

/// One connection of its own to a PostgreSQL store's database, as another client would hold.
final class RawSession: Sendable {
    private let connection: PostgresConnection

    /// Runs `body` with a session of its own on `test`'s database, and closes it whatever
    /// `body` does (a connection dropped unclosed stops a debug build).
    static func with<T>(_ test: StoreUnderTest, _ body: (RawSession) async throws -> T) async throws -> T {
        let session = try await RawSession(test)
        do {
            let value = try await body(session)
            try await session.close()
            return value
        } catch {
            try? await session.close()
            throw error
        }
    }

    init(_ test: StoreUnderTest) async throws {
        guard let server = PostgresTestServer.fromEnvironment(), let database = test.postgresDatabase else { throw PostgresUnavailable() }
        connection = try await PostgresConnection.connect(
            configuration: PostgresConnection.Configuration(
                unixSocketPath: "\(server.socketDirectory)/.s.PGSQL.\(server.port)", username: server.user, password: nil,
                database: database),
            id: 1, logger: testLogger)
    }

    func run(_ sql: String) async throws {
        _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: testLogger)
    }

    /// The first column of every row, as integers.
    func ints(_ sql: String) async throws -> [Int64] {
        var values: [Int64] = []
        for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: testLogger).decode(Int64?.self) {
            if let value { values.append(value) }
        }
        return values
    }

    func connection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await body(connection)
    }

    func close() async throws {
        try await connection.close()
    }
}
