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

import AsyncHTTPClient
import Foundation
import GRDB
import IPNConfig
import IPNCore
@testable import IPNServer
import IPNStore
import IPNTestSupport
import Logging
import Testing
import NIOCore
import NIOHTTP1

/// A real daemon on ephemeral loopback ports with a real SQLite file in a temporary directory.
final class TestDaemon: Sendable {
    let backend: Backend
    /// The test server and database of a PostgreSQL-backed daemon.
    let postgres: (server: PostgresTestServer, database: String)?
    let directory: URL
    let config: IPNDConfig
    let daemon: Daemon
    let ports: Daemon.ListeningPorts
    let logs: LogOutput
    private let task: Task<Void, any Error>

    /// Test secrets for every provider the daemon knows.
    static let unlimintSecret = "pzQf529Wa0AV"
    static let citconSecret = "braintree"
    static let citconToken = "1234567890abcdef1234567890abcdeq"
    static let ipay88Code = "KH00001"
    static let ipay88Key = "Apple88KEY"
    static let alipayClientID = "SANDBOX_5YTEST0000000001"
    static let juspayUsername = "test-juspay-user"
    static let juspayPassword = "test:juspay:password"

    static var alipayPrivateKeyPath: String {
        Bundle.module.url(forResource: "alipay-test-private-key.pem", withExtension: nil, subdirectory: "Fixtures")!.path
    }

    static func defaultProvidersYAML() -> String {
        let publicKey = String(decoding: Fixture.bytes("alipay-test-public-key.b64"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return """
            providers:
              citcon:
                - account: default
                  api_secret: \(citconSecret)
                  api_token: \(citconToken)
              ipay88:
                - account: default
                  merchant_code: \(ipay88Code)
                  merchant_key: \(ipay88Key)
                  signature: auto
              alipay:
                - account: default
                  client_id: \(alipayClientID)
                  public_key: "\(publicKey)"
                  simulate_private_key_file: \(alipayPrivateKeyPath)
              unlimint:
                - account: default
                  callback_secret: [old-rotated-out, \(unlimintSecret)]
                - account: shop2
                  callback_secret: shop2-secret
              juspay:
                - account: default
                  username: \(juspayUsername)
                  password: "\(juspayPassword)"
            """
    }

    /// The account settings the independent Python client signs with, per provider.
    static func independentAccount(_ provider: String) -> String {
        switch provider {
        case "citcon": #"{"api_secret":"\#(citconSecret)"}"#
        case "ipay88": #"{"merchant_code":"\#(ipay88Code)","merchant_key":"\#(ipay88Key)","signature":"sha256"}"#
        case "alipay": #"{"client_id":"\#(alipayClientID)","private_key_file":"\#(alipayPrivateKeyPath)"}"#
        case "unlimint": #"{"callback_secret":"\#(unlimintSecret)"}"#
        default: #"{"username":"\#(juspayUsername)","password":"\#(juspayPassword)"}"#
        }
    }

    /// The bearer token the test daemons accept on the ops API.
    static let opsToken = "test-ops-token"

    static func start(
        backend: Backend = .sqlite,
        providersYAML: String = defaultProvidersYAML(),
        serverYAML: String = "",
        maxBatch: Int = 256,
        storeDirectory: URL? = nil,
        opsTokens: [String] = [opsToken],
        extraYAML: String = "",
        opsYAML: String = "",
        deliveryRetryScale: Double = 1,
        postgresDatabase: (server: PostgresTestServer, database: String)? = nil,
        timing: Daemon.Timing = TestDaemon.timing()
    ) async throws -> TestDaemon {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let storePath = (storeDirectory ?? directory).appendingPathComponent("ipnd.sqlite").path
        var postgres: (server: PostgresTestServer, database: String)?
        var storeYAML = "  path: \(storePath)"
        if backend == .postgres {
            var chosen = postgresDatabase
            if chosen == nil { chosen = try await TestDaemon.freshPostgresDatabase() }
            guard let chosen else { throw DaemonDidNotListen() }
            postgres = chosen
            storeYAML = """
                  postgres:
                    host: \(chosen.server.socketDirectory)
                    port: \(chosen.server.port)
                    database: \(chosen.database)
                    user: \(chosen.server.user)
                    tls: disable
                    pool_size: 8
                """
        }
        let yaml = """
            server:
              host: 127.0.0.1
              port: 0
            \(serverYAML)
            store:
            \(storeYAML)
              max_batch: \(maxBatch)
            ops:
              host: 127.0.0.1
              port: 0
              tokens_sha256: [\(opsTokens.map { Hex.encode(Crypto.digest(.sha256, Array($0.utf8))) }.joined(separator: ", "))]
              \(opsYAML)
            \(providersYAML)
            \(extraYAML)
            """
        let configPath = directory.appendingPathComponent("ipnd.yaml").path
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: configPath))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: configPath)
        let config = try ConfigLoader.load(path: configPath, environment: [:])
        let logs = LogOutput.capture()
        let logger = Logger(label: "ipnd-test") { label in LogfmtLogHandler(label: label, level: .info, output: logs) }
        let daemon = try await Daemon.open(
            config: config, logger: logger, deliveryRetryScale: deliveryRetryScale, timing: timing,
            configEnvironment: [:])
        let task = Task { try await daemon.run(gracefulShutdownSignals: []) }
        guard let ports = await daemon.listeningPorts() else {
            _ = try await task.value  // the daemon's own error: why it did not listen
            throw DaemonDidNotListen()
        }
        return TestDaemon(backend: backend, postgres: postgres, directory: directory, config: config, daemon: daemon, ports: ports,
                          logs: logs, task: task)
    }

    /// A test daemon's timing: an adjustable clock (`advance(by:)` moves the daemon's time of day
    /// instead of a test sleeping through a schedule), production's periods unless given, and
    /// store timeouts for a busy machine.
    static func timing(
        clock: WallClock = .adjustable(), retentionInterval: Duration = .seconds(300), budgetWindow: Duration = .seconds(60),
        storeTimeouts: StoreTimeouts? = .busyMachine
    ) -> Daemon.Timing {
        Daemon.Timing(clock: clock, retentionInterval: retentionInterval, budgetWindow: budgetWindow, storeTimeouts: storeTimeouts)
    }

    /// The daemon's time of day.
    var clock: WallClock { daemon.clock }

    /// Moves the daemon's time of day forward by `duration` (its schedules come due as if it had
    /// passed); what is due then happens on the daemon's own time, for the test to wait for.
    func advance(by duration: Duration) {
        precondition(clock.isAdjustable, "this daemon runs on the system clock")
        clock.advance(by: duration)
    }

    /// A new, empty database on the test server `make test` started.
    static func freshPostgresDatabase() async throws -> (server: PostgresTestServer, database: String) {
        guard let server = PostgresTestServer.fromEnvironment() else {
            throw PostgresTestServerError.launchFailed(command: "PostgreSQL", reason: "IPND_TEST_PG_* unset: run the tests with make test")
        }
        let database = try await onDedicatedThread { Result { try server.createDatabase() } }.get()
        return (server, database)
    }

    private init(backend: Backend, postgres: (server: PostgresTestServer, database: String)?, directory: URL, config: IPNDConfig,
                 daemon: Daemon, ports: Daemon.ListeningPorts, logs: LogOutput, task: Task<Void, any Error>) {
        self.backend = backend
        self.postgres = postgres
        self.directory = directory
        self.config = config
        self.daemon = daemon
        self.ports = ports
        self.logs = logs
        self.task = task
    }

    /// AsyncHTTPClient's process-wide client: it needs no shutdown, so a test that fails
    /// half-way cannot crash the run by dropping an unshut client.
    var client: HTTPClient { HTTPClient.shared }

    /// Stops the daemon gracefully and the client; returns the daemon's own result.
    func stop() async throws {
        await daemon.shutdown()
        try await task.value
    }

    /// Coalesces concurrent waits for the feed (`eventsNumbered`).
    let feedCheck = CoalescedCheck()

    struct Answer: Sendable {
        let status: Int
        let headers: HTTPHeaders
        let body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// A provider's request. On PostgreSQL, returns once the events it committed are in the feed
    /// (numbered just after their commit, `EventSequencer`), so that a test reads them next.
    func post(_ path: String, body: [UInt8], headers: [(String, String)] = []) async throws -> Answer {
        let answer = try await send(.POST, path, body: body, headers: headers, port: ports.provider)
        if answer.status == 200 { try await eventsNumbered() }
        return answer
    }

    /// On PostgreSQL, waits (30 s at most) until no event committed before the call waits to be
    /// numbered into the feed. Concurrent callers share one psql check at a time.
    func eventsNumbered(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        guard postgres != nil else { return }
        try await feedCheck.settle { [self] in
            let deadline = ContinuousClock.now + .seconds(30)
            while try count("SELECT count(*) FROM events_unsequenced") != 0 {
                guard ContinuousClock.now < deadline else {
                    Issue.record("committed events still not in the feed after 30 s", sourceLocation: sourceLocation)
                    return
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    func get(_ path: String, ops: Bool = false, headers: [(String, String)] = []) async throws -> Answer {
        try await send(.GET, path, body: nil, headers: headers, port: ops ? ports.ops : ports.provider)
    }

    func send(_ method: HTTPMethod, _ path: String, body: [UInt8]?, headers: [(String, String)], port: Int) async throws -> Answer {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(request, timeout: .seconds(30))
        let buffer = try await response.body.collect(upTo: 16 * 1024 * 1024)
        return Answer(status: Int(response.status.code), headers: response.headers, body: Array(buffer: buffer))
    }

    /// `GET` on the ops listener with a bearer token.
    func api(_ path: String, token: String? = TestDaemon.opsToken) async throws -> Answer {
        try await get(path, ops: true, headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [])
    }

    /// The config file the daemon was started with (for `ipnd` commands).
    var configPath: String { config.path }

    /// Reads the SQLite file directly, as an independent reader would.
    func query<T>(_ body: (Database) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: config.store.path, configuration: configuration)
        return try queue.read(body)
    }

    /// The first column of every row `sql` returns (standard SQL; `?` placeholders take
    /// `arguments` in order), as text, NULL as nil: read from the SQLite file, or with psql from
    /// the PostgreSQL database, as an independent reader would.
    func column(_ sql: String, _ arguments: [String] = []) throws -> [String?] {
        try rows(sql, arguments).map { $0.first ?? nil }
    }

    /// Every row `sql` returns, each column as text (NULL as nil), as `column` reads them.
    func rows(_ sql: String, _ arguments: [String] = []) throws -> [[String?]] {
        if let postgres {
            var literal = ""
            var remaining = arguments[...]
            for character in sql {
                if character == "?", let value = remaining.popFirst() {
                    literal += "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
                } else {
                    literal.append(character)
                }
            }
            let output = try postgres.server.psql("\\pset null '<NULL>'\n" + literal, database: postgres.database)
            guard !output.isEmpty else { return [] }
            return output.split(separator: "\n", omittingEmptySubsequences: false).map { line in
                line.split(separator: "|", omittingEmptySubsequences: false).map { $0 == "<NULL>" ? nil : String($0) }
            }
        }
        return try query { db in
            try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).map { row -> [String?] in
                row.databaseValues.map { value -> String? in
                    switch value.storage {
                    case .null: return nil
                    case .int64(let number): return String(number)
                    case .double(let number): return String(number)
                    case .string(let text): return text
                    case .blob(let data): return String(decoding: data, as: UTF8.self)
                    }
                }
            }
        }
    }

    /// Runs a statement that changes the store, as another writer would (what retention leaves,
    /// a row as an earlier version wrote it).
    func execute(_ sql: String) throws {
        if let postgres {
            _ = try postgres.server.psql(sql, database: postgres.database)
            return
        }
        let queue = try DatabaseQueue(path: config.store.path)
        try queue.write { db in try db.execute(sql: sql) }
        try queue.close()
    }

    func count(_ sql: String, _ arguments: [String] = []) throws -> Int {
        try column(sql, arguments).first.flatMap { $0 }.flatMap { Int($0) } ?? -1
    }

    func orderState(_ ref: String, provider: String = "unlimint", account: String = "default") throws -> String? {
        try column("SELECT state FROM orders WHERE provider = ? AND account = ? AND order_ref = ?", [provider, account, ref]).first ?? nil
    }

    func verdicts(orderRef: String? = nil) throws -> [String] {
        if let orderRef {
            return try column("SELECT verdict FROM notifications WHERE order_ref = ? ORDER BY id", [orderRef]).compactMap { $0 }
        }
        return try column("SELECT verdict FROM notifications ORDER BY id").compactMap { $0 }
    }

    /// `answer` is the provider's acknowledgement to the byte, and the notification's order is in
    /// the file with its state and amount (the vector tests).
    func expectApplied(
        _ answer: Answer, acknowledgement: String, contentType: String,
        provider: String, orderRef: String, state: String, amountMinor: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(answer.status == 200, sourceLocation: sourceLocation)
        #expect(answer.body == Array(acknowledgement.utf8), sourceLocation: sourceLocation)
        #expect(answer.headers["Content-Type"] == [contentType], sourceLocation: sourceLocation)
        #expect(try orderState(orderRef, provider: provider) == state, sourceLocation: sourceLocation)
        #expect(try count("SELECT amount_minor FROM orders WHERE provider = ? AND order_ref = ?", [provider, orderRef]) == amountMinor,
                sourceLocation: sourceLocation)
    }
}

/// Unlimint requests signed the way Unlimint signs them.
enum UnlimintRequests {
    static func body(order: String, id: String, status: String, amount: String = "6.03", currency: String = "USD") -> [UInt8] {
        Array(#"{"callback_time":"2026-11-21T09:30:06.828Z","payment_method":"BANKCARD","merchant_order":{"id":"\#(order)"},"payment_data":{"id":"\#(id)","status":"\#(status)","amount":\#(amount),"currency":"\#(currency)"}}"#.utf8)
    }

    static func refundBody(order: String, paymentID: String, refundID: String, amount: String, remaining: String) -> [UInt8] {
        Array(#"{"callback_time":"2026-11-21T09:30:06.828Z","merchant_order":{"id":"\#(order)"},"payment_data":{"id":"\#(paymentID)","remaining_amount":\#(remaining)},"refund_data":{"id":"\#(refundID)","status":"COMPLETED","amount":\#(amount),"currency":"USD"}}"#.utf8)
    }

    static func headers(for body: [UInt8], secret: String = TestDaemon.unlimintSecret) -> [(String, String)] {
        [("Content-Type", "application/json"), ("Signature", Unlimint.signature(body: body, secret: secret))]
    }

    /// The whole raw HTTP request of a completed payment for `order` (its payment id the same),
    /// for tests that send it in pieces.
    static func rawPayment(order: String) -> [UInt8] {
        let body = body(order: order, id: order, status: "COMPLETED")
        return RawHTTP.request("/ipn/unlimint", headers: headers(for: body), body: body)
    }
}

enum Fixture {
    static func bytes(_ name: String) -> [UInt8] {
        guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
            let data = try? Data(contentsOf: url)
        else { fatalError("missing fixture \(name)") }
        return [UInt8](data)
    }

    /// The fixture's path on disk.
    static func path(_ name: String) -> String {
        guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures") else {
            fatalError("missing fixture \(name)")
        }
        return url.path
    }
}

/// `Daemon.run` returned without error before both listeners were bound.
struct DaemonDidNotListen: Error {}

/// One check at a time for many callers: a caller returns once a check that started after it
/// asked has passed.
actor CoalescedCheck {
    private var asked = 0
    private var passed = 0
    private var running: Task<Void, any Error>?

    func settle(_ check: @escaping @Sendable () async throws -> Void) async throws {
        asked += 1
        let ticket = asked
        while passed < ticket {
            let current: Task<Void, any Error>
            if let running {
                current = running
            } else {
                let covers = asked
                current = Task {
                    do {
                        try await check()
                    } catch {
                        await self.ended(covering: nil)
                        throw error
                    }
                    await self.ended(covering: covers)
                }
                running = current
            }
            // The check's own task records its end before this returns: no caller spins.
            try await current.value
        }
    }

    private func ended(covering covers: Int?) {
        if let covers { passed = max(passed, covers) }
        running = nil
    }
}
