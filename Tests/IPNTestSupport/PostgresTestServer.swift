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

/// A throwaway PostgreSQL server for the tests, driven through `psql` and
/// `scripts/pg-test-server.sh` (no PostgreSQL client library involved).
///
/// `make test` starts one shared server for the whole run and exports its `IPND_TEST_PG_*`
/// variables: `fromEnvironment()` finds it. Every test takes a database of its own there
/// (`createDatabase()`). A test that restarts the server (`restartImmediate()`) runs alone among
/// the heavy tests (`.heavy(.whole)`), since a restart drops every connection to it: there is one
/// server per run, never one per test.
///
/// The methods block the calling thread until `psql` or the script ends (tens of milliseconds;
/// seconds for a start or a restart): from async tests, run them on a thread of their own.
public struct PostgresTestServer: Sendable {
    /// The directory holding the server's unix socket (`.s.PGSQL.<port>`): a libpq `host`.
    public let socketDirectory: String
    /// The port, which also names the socket file; on TCP, the port on `tcpHost`.
    public let port: Int
    /// A superuser, admitted without a password over the socket and from 127.0.0.1.
    public let user: String
    /// The database the script creates (`ipnd_test`); tests use `createDatabase()` instead.
    public let database: String
    /// The server's binaries (`pg_ctl`, `psql`, `pg_isready`, ...).
    public let binDirectory: String
    /// The cluster's data directory.
    public let dataDirectory: String
    /// `127.0.0.1` when the server also listens on TCP, with TLS on; nil for a socket-only server.
    public let tcpHost: String?
    /// The CA that signed the server's TLS certificate (for `localhost` and `127.0.0.1`),
    /// when it listens on TCP.
    public let caFile: String?

    /// The server `make test` started, from `IPND_TEST_PG_SOCKET_DIR`, `IPND_TEST_PG_PORT`,
    /// `IPND_TEST_PG_USER`, `IPND_TEST_PG_DATABASE`, `IPND_TEST_PG_BIN` and `IPND_TEST_PG_DATA`
    /// (`IPND_TEST_PG_HOST` and `IPND_TEST_PG_CA_FILE` when it listens on TCP); nil when any of
    /// those six is missing or the port is not a number (a plain `swift test` without one).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> PostgresTestServer? {
        guard let socketDirectory = environment["IPND_TEST_PG_SOCKET_DIR"], !socketDirectory.isEmpty,
              let port = environment["IPND_TEST_PG_PORT"].flatMap({ Int($0) }),
              let user = environment["IPND_TEST_PG_USER"], !user.isEmpty,
              let database = environment["IPND_TEST_PG_DATABASE"], !database.isEmpty,
              let binDirectory = environment["IPND_TEST_PG_BIN"], !binDirectory.isEmpty,
              let dataDirectory = environment["IPND_TEST_PG_DATA"], !dataDirectory.isEmpty
        else { return nil }
        return PostgresTestServer(
            socketDirectory: socketDirectory, port: port, user: user, database: database,
            binDirectory: binDirectory, dataDirectory: dataDirectory,
            tcpHost: environment["IPND_TEST_PG_HOST"].flatMap { $0.isEmpty ? nil : $0 },
            caFile: environment["IPND_TEST_PG_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 })
    }

    /// Creates a fresh, empty database with a unique name and returns that name.
    public func createDatabase() throws(PostgresTestServerError) -> String {
        let name = "ipnd_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        _ = try psql("CREATE DATABASE \(Self.quotedIdentifier(name))", database: "postgres")
        return name
    }

    /// Drops `name` if it exists, closing any connection still open to it.
    public func dropDatabase(_ name: String) throws(PostgresTestServerError) {
        _ = try psql("DROP DATABASE IF EXISTS \(Self.quotedIdentifier(name)) WITH (FORCE)", database: "postgres")
    }

    /// Runs `sql` (one statement or several, each on its own, stopping at the first error) in
    /// `database` (default: `self.database`) over the socket, and returns what the statements
    /// printed: one line per row, columns separated by `|`, NULL as an empty string, without
    /// headers, command tags or the final newline. Throws with PostgreSQL's message when a
    /// statement fails or the server cannot be reached.
    public func psql(_ sql: String, database: String? = nil) throws(PostgresTestServerError) -> String {
        // From a file rather than standard input: psql may exit (a connection refused) before
        // reading a pipe, and writing to that pipe then would kill this process with SIGPIPE.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-psql-\(UUID().uuidString).sql")
        do {
            try Data(sql.utf8).write(to: file)
        } catch {
            throw .launchFailed(command: "psql", reason: "could not write \(file.path): \(error)")
        }
        defer { try? FileManager.default.removeItem(at: file) }
        let arguments = [
            "--no-psqlrc", "--quiet", "--no-align", "--tuples-only", "--set=ON_ERROR_STOP=1",
            "--host=\(socketDirectory)", "--port=\(port)", "--username=\(user)",
            "--dbname=\(database ?? self.database)", "--file=\(file.path)",
        ]
        // The one server of a run is shared by every heavy test, and a DROP DATABASE makes
        // PostgreSQL 15 run an immediate checkpoint and wait for it: on a machine whose cores other
        // jobs take (make test-stress) one took 20 s to a minute. The deadline fits that machine,
        // and a statement slower than 10 s says so on stderr, with what it ran.
        let started = ContinuousClock.now
        let output = try Self.run(binDirectory + "/psql", arguments, timeout: 3 * Waits.timeout)
        let took = ContinuousClock.now - started
        if took > .seconds(10) {
            FileHandle.standardError.write(Data("pg-test-server: psql took \(took) for: \(sql.prefix(200))\n".utf8))
        }
        return output.hasSuffix("\n") ? String(output.dropLast()) : output
    }

    /// Crashes and restarts the server (`pg_ctl restart -m immediate`: no shutdown checkpoint,
    /// committed work replayed from the WAL on start) through `scripts/pg-test-server.sh
    /// restart-immediate`, which runs it as the server's owner (postgres when the tests run as
    /// root) and returns once the server accepts connections again. Every open connection is
    /// lost, other tests' included: only a test that runs alone (`.heavy(.whole)`) restarts it.
    public func restartImmediate() throws(PostgresTestServerError) {
        guard dataDirectory == socketDirectory + "/data" else {
            throw .launchFailed(command: "pg-test-server.sh restart-immediate \(socketDirectory)",
                                reason: "the data directory \(dataDirectory) is not the script's (\(socketDirectory)/data): this server was not started by scripts/pg-test-server.sh")
        }
        _ = try Self.runScript(["restart-immediate", socketDirectory], timeout: 180)
    }

    // MARK: - Running the tools

    /// scripts/pg-test-server.sh, three levels up from this file (Tests/IPNTestSupport/).
    private static let script: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/pg-test-server.sh").path

    private static func runScript(_ arguments: [String], timeout: Double) throws(PostgresTestServerError) -> String {
        try run("/bin/bash", [script] + arguments, timeout: timeout)
    }

    /// `"name"`, with any double quote in it doubled.
    private static func quotedIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Runs `executable` and returns its standard output; throws with its standard error when it
    /// exits non-zero or outlives `timeout` seconds (then it is killed). The `PG*` variables of
    /// this process (PGHOST, PGOPTIONS, ...) are not passed on: the arguments say where to go.
    private static func run(_ executable: String, _ arguments: [String],
                            timeout: Double) throws(PostgresTestServerError) -> String {
        let command = ([executable] + arguments).joined(separator: " ")
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        environment["PGCONNECT_TIMEOUT"] = "10"
        process.environment = environment
        let standardOutput = Pipe()
        let standardError = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = standardOutput
        process.standardError = standardError
        do {
            try process.run()
        } catch {
            throw .launchFailed(command: command, reason: "\(error)")
        }
        let output = PipeReader(standardOutput)
        let errors = PipeReader(standardError)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        let timedOut = process.isRunning
        if timedOut {
            process.terminate()
            let killAt = Date().addingTimeInterval(5)
            while process.isRunning, Date() < killAt { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        let stdout = output.text()
        let stderr = errors.text()
        if timedOut { throw .timedOut(command: command, seconds: timeout, stderr: stderr) }
        guard process.terminationStatus == 0 else {
            throw .failed(command: command, status: process.terminationStatus, stderr: stderr)
        }
        return stdout
    }
}

/// Why a `PostgresTestServer` operation failed, with what the tool said.
public enum PostgresTestServerError: Error, CustomStringConvertible {
    /// The tool could not be started at all (e.g. PostgreSQL's binaries are missing).
    case launchFailed(command: String, reason: String)
    /// The tool exited non-zero: `stderr` holds PostgreSQL's or the script's message.
    case failed(command: String, status: Int32, stderr: String)
    /// The tool did not finish within `seconds` and was killed.
    case timedOut(command: String, seconds: Double, stderr: String)
    /// The script printed something other than the `export NAME=VALUE` lines expected.
    case unexpectedOutput(command: String, output: String)

    public var description: String {
        switch self {
        case let .launchFailed(command, reason):
            "could not run \(command): \(reason)"
        case let .failed(command, status, stderr):
            "\(command) exited with status \(status): \(stderr.trimmingCharacters(in: .whitespacesAndNewlines))"
        case let .timedOut(command, seconds, stderr):
            "\(command) did not finish within \(Int(seconds)) s and was killed; it said: \(stderr.trimmingCharacters(in: .whitespacesAndNewlines))"
        case let .unexpectedOutput(command, output):
            "\(command) printed what is not a list of plain `export NAME=VALUE` lines: \(output)"
        }
    }
}
