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
import IPNTestSupport
import Testing

/// The PostgreSQL server `make test` starts (scripts/pg-test-server.sh) and the helper the
/// PostgreSQL store's tests drive it with: if these fail, so would every test of that store.
@Suite("PostgreSQL test server", .enabled(if: PostgresTestServer.fromEnvironment() != nil,
                                          "needs the server make test starts (IPND_TEST_PG_*)"))
struct PostgresTestServerTests {
    /// The shared server; the suite is disabled without one.
    private var shared: PostgresTestServer {
        get throws { try #require(PostgresTestServer.fromEnvironment()) }
    }

    @Test("a fresh database per test: created empty, written and read back, then dropped")
    func freshDatabase() async throws {
        let server = try shared
        let first = try await blocking { try server.createDatabase() }
        let second = try await blocking { try server.createDatabase() }
        #expect(first != second)
        let tables = try await blocking { try server.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database: first) }
        #expect(tables == "0")
        let rows = try await blocking {
            try server.psql("""
                CREATE TABLE notes (id integer PRIMARY KEY, body text);
                INSERT INTO notes VALUES (1, 'one|1'), (2, NULL);
                SELECT id, body FROM notes ORDER BY id;
                """, database: first)
        }
        #expect(rows == "1|one|1\n2|")
        // The second database is a separate one: the table is not there.
        let absent = try await blocking { try server.psql("SELECT to_regclass('notes') IS NULL", database: second) }
        #expect(absent == "t")

        try await blocking { try server.dropDatabase(first) }
        let listed = try await blocking {
            try server.psql("SELECT count(*) FROM pg_database WHERE datname IN ('\(first)', '\(second)')")
        }
        #expect(listed == "1")
        try await blocking { try server.dropDatabase(second) }
    }

    @Test("a failing statement throws with PostgreSQL's message, and stops what follows it")
    func failingStatement() async throws {
        let server = try shared
        let database = try await blocking { try server.createDatabase() }
        let outcome = await onDedicatedThread {
            Result { () throws(PostgresTestServerError) -> String in
                try server.psql("CREATE TABLE kept (x integer); SELECT * FROM no_such_table; CREATE TABLE skipped (x integer);",
                                database: database)
            }
        }
        guard case let .failure(error) = outcome else {
            Issue.record("a query of a missing table succeeded: \(outcome)")
            return
        }
        #expect(error.description.contains("relation \"no_such_table\" does not exist"), "\(error)")
        let tables = try await blocking {
            try server.psql("SELECT to_regclass('kept') IS NOT NULL, to_regclass('skipped') IS NULL", database: database)
        }
        #expect(tables == "t|t")
        try await blocking { try server.dropDatabase(database) }
    }

    @Test("the server keeps production's durability and takes 300 connections")
    func settings() async throws {
        let server = try shared
        let settings = try await blocking {
            try server.psql("""
                SELECT name || '=' || setting FROM pg_settings
                WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'max_connections')
                ORDER BY name
                """)
        }
        #expect(settings == "fsync=on\nfull_page_writes=on\nmax_connections=300\nsynchronous_commit=on")
    }

    @Test("TCP on 127.0.0.1 with TLS, the certificate verified against the script's CA",
          .enabled(if: PostgresTestServer.fromEnvironment()?.tcpHost != nil, "the server listens on the socket only"))
    func tlsOverTCP() async throws {
        let server = try shared
        let host = try #require(server.tcpHost)
        let caFile = try #require(server.caFile)
        for name in [host, "localhost"] {
            let connection = "host=\(name) port=\(server.port) user=\(server.user) dbname=\(server.database) sslmode=verify-full sslrootcert=\(caFile)"
            let result = try await runProcess(URL(fileURLWithPath: server.binDirectory + "/psql"),
                                              ["--no-psqlrc", "--tuples-only", "--no-align", "--dbname=\(connection)",
                                               "--command=SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"])
            #expect(result.status == 0, "\(name): \(result.stderr)")
            #expect(result.stdout == "t\n", "\(name): \(result.stdout)")
        }
    }

    @Test("a committed row survives an immediate restart (a crash) of a private server, which then takes queries again")
    func restartImmediate() async throws {
        let server = try await blocking { try PostgresTestServer.startPrivate() }
        #expect(server.isPrivate)
        #expect(server.socketDirectory != PostgresTestServer.fromEnvironment()?.socketDirectory)
        do {
            let database = try await blocking { try server.createDatabase() }
            let startedBefore = try await blocking {
                try server.psql("CREATE TABLE payments (id integer PRIMARY KEY); INSERT INTO payments VALUES (7);", database: database)
                return try server.psql("SELECT pg_postmaster_start_time()")
            }

            try await blocking { try server.restartImmediate() }

            let startedAfter = try await blocking { try server.psql("SELECT pg_postmaster_start_time()") }
            #expect(startedAfter != startedBefore, "the server was not restarted")
            let kept = try await blocking { try server.psql("SELECT id FROM payments", database: database) }
            #expect(kept == "7")
            let count = try await blocking {
                try server.psql("INSERT INTO payments VALUES (8); SELECT count(*) FROM payments;", database: database)
            }
            #expect(count == "2")
        } catch {
            try? await blocking { try server.stop() }
            throw error
        }

        try await blocking { try server.stop() }
        #expect(!FileManager.default.fileExists(atPath: server.socketDirectory))
        let afterStop = await onDedicatedThread { Result { try server.psql("SELECT 1") } }
        #expect(throws: PostgresTestServerError.self) { try afterStop.get() }
    }

    /// Runs `work`, which blocks on psql and the script, on a thread of its own rather than on
    /// one of the few threads Swift's concurrency shares among all tests. Expectations stay
    /// outside it: Swift Testing ties an issue to its test only on the test's own task.
    private func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await onDedicatedThread { Result { try work() } }.get()
    }
}

/// Outside the suite above, which is skipped when the environment does not describe a server:
/// this runs whenever any IPND_TEST_PG_* is set, so that a half-set environment (a broken
/// make test) fails here rather than silently skipping every PostgreSQL test.
@Test("the IPND_TEST_PG_* variables, when any is set, describe a server",
      .enabled(if: ProcessInfo.processInfo.environment.keys.contains { $0.hasPrefix("IPND_TEST_PG_") }))
func postgresTestEnvironmentIsComplete() {
    #expect(PostgresTestServer.fromEnvironment() != nil,
            "IPND_TEST_PG_SOCKET_DIR, _PORT, _USER, _DATABASE, _BIN and _DATA must all be set (scripts/pg-test-server.sh env)")
}
