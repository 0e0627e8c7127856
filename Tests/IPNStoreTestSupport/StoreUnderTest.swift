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
import GRDB
import IPNCore
import IPNStore
import IPNStorePostgres
import IPNStoreSQLite
import IPNTestSupport
import Logging
import PostgresNIO
import Testing

/// Runs a blocking call (psql) on a thread of its own, off the concurrency pool.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

let testLogger = Logger(label: "ipnd-test", factory: { _ in SwiftLogNoOpLogHandler() })

/// A fresh database on the test server, as a postgres-nio configuration.
func freshPostgresDatabase() async throws -> (PostgresClient.Configuration, String) {
    guard let server = PostgresTestServer.fromEnvironment() else { throw PostgresUnavailable() }
    let name = try await blocking { try server.createDatabase() }
    let configuration = PostgresClient.Configuration(
        unixSocketPath: "\(server.socketDirectory)/.s.PGSQL.\(server.port)", username: server.user, password: nil, database: name)
    return (configuration, name)
}

struct PostgresUnavailable: Error, CustomStringConvertible {
    var description: String { "no PostgreSQL test server (IPND_TEST_PG_* unset): run the tests with make test" }
}

/// A fresh, empty store of one backend, with a way to count rows as an independent reader would.
final class StoreUnderTest: Sendable {
    let backend: Backend
    let store: any Store
    /// The PostgreSQL database's configuration and name (nil on SQLite).
    let postgres: (configuration: PostgresClient.Configuration, name: String)?
    var postgresDatabase: String? { postgres?.name }
    /// A statement run outside the store, as an independent reader or writer would.
    enum Raw: Sendable {
        case count(String)
        case text(String)
        case execute(String)
    }

    struct RawResult: Sendable {
        var count = -1
        var text: String?
    }

    private let countQuery: @Sendable (Raw) async throws -> RawResult
    private let onClose: @Sendable () -> Void

    private init(backend: Backend, store: any Store, postgres: (configuration: PostgresClient.Configuration, name: String)? = nil,
                 countQuery: @escaping @Sendable (Raw) async throws -> RawResult, onClose: @escaping @Sendable () -> Void) {
        self.backend = backend
        self.store = store
        self.postgres = postgres
        self.countQuery = countQuery
        self.onClose = onClose
    }

    /// Closes the store (a PostgreSQL one gives its connections back).
    func close() async throws {
        onClose()
        _ = try await store.close()
    }

    static func make(_ backend: Backend, maxBatch: Int = 256, routes: [DeliveryRoute] = [], sequencing: Bool = true) async throws
        -> StoreUnderTest
    {
        switch backend {
        case .postgres:
            let (configuration, name) = try await freshPostgresDatabase()
            return try await postgres(configuration, name, maxBatch: maxBatch, routes: routes, sequencing: sequencing)
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-store-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let store = try SQLiteStore(
                path: directory.appendingPathComponent("ipnd.sqlite").path, maxBatch: maxBatch, busyTimeout: StoreTimeouts.busyMachine.writeSeconds)
            store.setDeliveryRoutes(routes)
            try await store.registerDeliveryTargets(routes.map(\.name))
            let database = store.database
            return StoreUnderTest(backend: backend, store: store, countQuery: { raw in
                switch raw {
                case .count(let sql): return RawResult(count: try await database.read { db in try Int.fetchOne(db, sql: sql) ?? -1 })
                case .text(let sql): return RawResult(text: try await database.read { db in try String.fetchOne(db, sql: sql) })
                case .execute(let sql):
                    try await database.pool.write { db in try db.execute(sql: sql) }
                    return RawResult()
                }
            }, onClose: {})
        }
    }

    /// A store on the PostgreSQL database `name`, with a client of its own to count rows.
    private static func postgres(
        _ configuration: PostgresClient.Configuration, _ name: String, maxBatch: Int, routes: [DeliveryRoute], sequencing: Bool
    ) async throws -> StoreUnderTest {
        let store = try await PostgresStore.open(
            configuration: configuration, location: name, poolSize: 8, maxBatch: maxBatch, sequencing: sequencing, logger: testLogger,
            timeouts: .busyMachine)
        store.setDeliveryRoutes(routes)
        try await store.registerDeliveryTargets(routes.map(\.name))
        let counter = PostgresClient(configuration: configuration, backgroundLogger: testLogger)
        let task = Task { await counter.run() }
        return StoreUnderTest(backend: .postgres, store: store, postgres: (configuration, name), countQuery: { raw in
            var result = RawResult()
            switch raw {
            case .count(let sql):
                for try await count in try await counter.query(PostgresQuery(unsafeSQL: sql), logger: testLogger).decode(Int64?.self) {
                    result.count = Int(count ?? -1)
                }
            case .text(let sql):
                for try await text in try await counter.query(PostgresQuery(unsafeSQL: sql), logger: testLogger).decode(String?.self) {
                    result.text = text
                }
            case .execute(let sql):
                _ = try await counter.query(PostgresQuery(unsafeSQL: sql), logger: testLogger)
            }
            return result
        }, onClose: { task.cancel() })
    }

    /// Another store on the same PostgreSQL database: a second node.
    func sibling(routes: [DeliveryRoute] = []) async throws -> StoreUnderTest {
        guard let postgres else { throw PostgresUnavailable() }
        return try await Self.postgres(postgres.configuration, postgres.name, maxBatch: 256, routes: routes, sequencing: true)
    }

    /// The single integer a SQL query (standard SQL, the same on every backend) returns.
    func count(_ sql: String) async throws -> Int {
        try await countQuery(.count(sql)).count
    }

    /// The single text a SQL query returns (nil for none or NULL).
    func text(_ sql: String) async throws -> String? {
        try await countQuery(.text(sql)).text
    }

    /// Runs a SQL statement that returns nothing, as another connection would.
    func execute(_ sql: String) async throws {
        _ = try await countQuery(.execute(sql))
    }

    func order(_ ref: String, provider: String = "test", account: String = "default") async throws -> OrderDetail? {
        try await store.order(provider: provider, account: account, orderRef: ref, includeRaw: false)
    }

    func record(_ notification: VerifiedNotification, provider: String = "test") async throws -> RecordOutcome {
        try await store.record(.verified(request(provider: provider), notification))
    }

    /// Records `lanes` × `perLane` paid notifications at once, `lanes` of them in flight, each
    /// for an order of its own: notification `PREFIX-LANE-INDEX`, order `PREFIX-LANE-INDEX` in
    /// capitals.
    func recordPaid(lanes: Int, perLane: Int, prefix: String) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    for index in 0..<perLane {
                        let id = "\(prefix)-\(lane)-\(index)"
                        _ = try await self.record(notification(id, .transition(.paid), order: id.uppercased()))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Every event in the feed, ascending, once every event committed so far is in it.
    func allEvents() async throws -> [EventRecord] {
        try await settle()
        return try await store.events(EventFilter(after: 0, limit: 100_000)).events
    }

    /// Returns once every event committed so far is in the feed, with its deliveries: at once on
    /// SQLite, which numbers events as it writes them; PostgreSQL numbers them just after their
    /// commit (`EventSequencer`).
    func settle() async throws {
        if let postgres = store as? PostgresStore { try await postgres.eventsNumbered() }
    }
}

func request(provider: String = "test", account: String = "default", body: String = "{}") -> ReceivedRequest {
    ReceivedRequest(provider: provider, account: account, receivedAt: "2026-11-21T00:00:00.000Z", clientIP: "127.0.0.1",
                    target: "/ipn/\(provider)", headers: "[]", body: Array(body.utf8))
}

func notification(
    _ key: String, _ effect: NotificationEffect, order: String? = "O1", kind: NotificationKind = .payment,
    amount: Money? = Money(minor: 500, currency: "USD"), link: PaymentLink? = nil
) -> VerifiedNotification {
    VerifiedNotification(kind: kind, orderRef: order, providerTxnID: "T-\(key)", dedupKey: key, providerStatus: key,
                         effect: effect, amount: amount, link: link)
}

func refund(_ key: String, id: String, amount: Money, order: String? = "O1", link: PaymentLink? = nil) -> VerifiedNotification {
    notification(key, .refund(RefundInfo(refundID: id, amount: amount)), order: order, kind: .refund, amount: amount, link: link)
}
