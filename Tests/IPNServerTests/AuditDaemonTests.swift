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
@testable import IPNServer
@testable import IPNServerTestSupport
import IPNTestSupport
import NIOHTTP1
import Testing

/// The audit trail as a running daemon writes it: reloads, refused writes, what it never holds,
/// the CLI's records and checks, and the chain checked from outside ipnd.
@Suite("The audit trail of a running daemon (issue 43)", .heavy)
struct AuditDaemonTests {
    @Test("reload: a removed user loses the API and the console at once, a changed role applies to the next request; each reload is recorded as system",
          arguments: Backend.allCases)
    func reload(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend, opsTokens: [], opsYAML: OpsUsersFixture.yaml())
        let vera = ConsoleClient(daemon)
        try await vera.signIn(OpsUsersFixture.token(.viewer))
        #expect(try await vera.get("/").status == 200)
        #expect(try await daemon.api("/api/v1/orders", token: OpsUsersFixture.token(.viewer)).status == 200)
        let otto = OpsUsersFixture.token(.operator)
        #expect(try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/R-1/expectation", body: #"{"amount":"1.00","currency":"USD"}"#,
                                      token: otto).status == 200)
        let ottoConsole = ConsoleClient(daemon)
        try await ottoConsole.signIn(otto)
        #expect(try await ottoConsole.get("/orders/unlimint/default/R-1").text.contains("expectation-form"))

        // Vera removed, Otto made a viewer.
        let path = daemon.configPath
        var yaml = try String(contentsOfFile: path, encoding: .utf8)
        yaml = yaml.replacingOccurrences(of: OpsUsersFixture.yaml(), with: OpsUsersFixture.yaml([
            ("otto@example.com", .viewer, otto), ("ada@example.com", .admin, OpsUsersFixture.token(.admin)),
        ]))
        try TestDaemon.writeConfig(yaml, to: path)
        #expect(await daemon.daemon.reload() == .applied(needsRestart: []))
        #expect(try await daemon.api("/api/v1/orders", token: OpsUsersFixture.token(.viewer)).status == 401)
        let after = try await vera.get("/")
        #expect(after.status == 303 && after.location?.hasPrefix("/sign-in") == true)
        let refused = try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/R-2/expectation", body: #"{"amount":"1.00","currency":"USD"}"#,
                                            token: otto)
        #expect(refused.status == 403)
        #expect(refused.text == #"{"error":"forbidden: order.expectation_set needs role operator; otto@example.com is viewer"}"#)
        #expect(try daemon.orderState("R-2") == nil)
        // His console session goes on, as a viewer from this page on.
        let page = try await ottoConsole.get("/orders/unlimint/default/R-1")
        #expect(page.status == 200 && !page.text.contains("expectation-form") && page.text.contains(#"<span id="user-role">viewer</span>"#))

        // A config that does not validate: refused, recorded as refused with the reason.
        try TestDaemon.writeConfig(yaml + "\nbogus: 1\n", to: path)
        guard case .refused = await daemon.daemon.reload() else { Issue.record("a bad config was applied"); return }
        let reloads = try daemon.rows("SELECT actor, role, via, outcome, detail FROM audit_records WHERE action = 'config.reload' ORDER BY id")
        #expect(reloads.count == 2)
        #expect(reloads.first?[0...3] == ["system", nil, "system", "ok"])
        #expect(reloads.last?[3] == "refused" && (reloads.last?[4] ?? "").contains("bogus"))
        #expect(try daemon.column("SELECT actor FROM audit_records WHERE action = 'daemon.start'") == ["system"])
        try await daemon.stop()
    }

    @Test("an audit record that cannot be written refuses the change and the raw read (503), and nothing else", arguments: Backend.allCases)
    func auditWriteFails(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend, opsTokens: [], opsYAML: OpsUsersFixture.yaml())
        try await daemon.deliver("unlimint", order: "F-1", status: "COMPLETED")
        let otto = OpsUsersFixture.token(.operator)
        // Signed in before: a sign-in is recorded too, and would be refused afterwards.
        let console = ConsoleClient(daemon)
        try await console.signIn(otto)
        switch backend {
        case .sqlite:
            try daemon.execute("CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_records BEGIN SELECT RAISE(ABORT, 'disk full'); END")
        case .postgres:
            try daemon.execute("CREATE FUNCTION refuse_audit() RETURNS trigger AS 'BEGIN RAISE EXCEPTION ''disk full''; END' LANGUAGE plpgsql")
            try daemon.execute("CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_records FOR EACH ROW EXECUTE FUNCTION refuse_audit()")
        }
        let change = try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/F-2/expectation", body: #"{"amount":"1.00","currency":"USD"}"#,
                                           token: otto)
        #expect(change.status == 503)
        #expect(try daemon.orderState("F-2") == nil)
        let raw = try await daemon.api("/api/v1/orders/unlimint/F-1?include=raw", token: otto)
        #expect(raw.status == 503)
        #expect(!raw.text.contains("raw_body") && !raw.text.contains("payment_data"))
        #expect(try await console.get("/notifications/1?raw=1").status == 503)
        #expect(try await ConsoleClient(daemon).signIn(otto).status == 503)
        // Reads without raw bodies, and providers' notifications, go on.
        #expect(try await daemon.api("/api/v1/orders/unlimint/F-1", token: otto).status == 200)
        try await daemon.deliver("unlimint", order: "F-3", status: "COMPLETED")
        #expect(try daemon.orderState("F-3") == "paid")
        try await daemon.stop()
    }

    @Test("the store made read-only: the change and the raw read are refused (SQLite query_only)")
    func readOnlyStore() async throws {
        let daemon = try await TestDaemon.start(opsTokens: [], opsYAML: OpsUsersFixture.yaml())
        try await daemon.deliver("unlimint", order: "Q-1", status: "COMPLETED")
        let pool = try #require(daemon.daemon.sqliteStore).database.pool
        try await pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = ON") }
        let otto = OpsUsersFixture.token(.operator)
        #expect(try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/Q-2/expectation", body: #"{"amount":"1.00","currency":"USD"}"#,
                                      token: otto).status == 503)
        #expect(try await daemon.api("/api/v1/notifications?include=raw", token: otto).status == 503)
        try await pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = OFF") }
        #expect(try await daemon.api("/api/v1/notifications?include=raw", token: otto).status == 200)
        try await daemon.stop()
    }

    @Test("no token, provider secret or raw body in any audit record or log line; every record is also a log line", arguments: Backend.allCases)
    func noSecrets(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend, opsTokens: [], opsYAML: OpsUsersFixture.yaml())
        try await daemon.deliver("unlimint", order: "S-1", status: "COMPLETED")
        let wrong = "wrong-secret-token-4321"
        _ = try await daemon.api("/api/v1/orders", token: wrong)
        let console = ConsoleClient(daemon)
        try await console.signIn(wrong)
        for role in OpsRole.allCases {
            let client = ConsoleClient(daemon)
            try await client.signIn(OpsUsersFixture.token(role))
            _ = try await client.get("/notifications/1?raw=1")
            _ = try await daemon.api("/api/v1/orders/unlimint/S-1?include=raw", token: OpsUsersFixture.token(role))
            _ = try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/S-1/expectation", body: #"{"amount":"6.03","currency":"USD"}"#,
                                      token: OpsUsersFixture.token(role))
        }
        try await daemon.stop()
        let records = try daemon.rows("SELECT * FROM audit_records ORDER BY id").map { $0.compactMap { $0 }.joined(separator: " ") }
        #expect(records.count > 10)
        let secrets = OpsUsersFixture.users.map(\.token) + [wrong, TestDaemon.unlimintSecret, "payment_data", "callback_time",
                                                          OpsUsersFixture.digest(OpsUsersFixture.token(.admin))]
        for secret in secrets {
            #expect(!records.contains { $0.contains(secret) }, "\(secret) in an audit record")
            #expect(!daemon.logs.captured.contains { $0.contains(secret) }, "\(secret) in a log line")
        }
        let auditLines = daemon.logs.captured.filter { $0.contains("msg=audit ") }
        #expect(auditLines.count == records.count, "\(auditLines.count) log lines for \(records.count) records")
        #expect(auditLines.contains { $0.contains("action=notification.raw_read") && $0.contains("actor=otto@example.com") })
    }

    @Test("the CLI: changes recorded as cli:LOGIN; audit list and verify; the chain checked from outside with README's Python; the copy verifies")
    func commandLine() async throws {
        let daemon = try await TestDaemon.start(opsTokens: [], opsYAML: OpsUsersFixture.yaml())
        try await daemon.deliver("unlimint", order: "C-1", status: "COMPLETED")
        _ = try await daemon.api("/api/v1/orders/unlimint/C-1?include=raw", token: OpsUsersFixture.token(.operator))
        let config = daemon.configPath
        let expect = try await ipnd(["orders", "expect", "unlimint", "C-2", "--amount", "5.00", "--currency", "USD", "--config", config],
                                    environment: ["SUDO_USER": "carla"])
        #expect(expect.status == 0, "\(expect.stderr)")
        let list = try await ipnd(["audit", "list", "--actor", "cli:carla", "--format", "json", "--config", config])
        let records = try parseJSONLines(list.stdout)
        #expect(records.count == 1)
        #expect(records.first?.string("action") == "order.expectation_set" && records.first?.string("via") == "cli")
        #expect(records.first?.string("target") == "unlimint/default/C-2" && records.first?.isNull("client_ip") == true)
        #expect(records.first?.keySet == ["id", "at", "actor", "role", "via", "action", "target", "outcome", "client_ip", "detail",
                                          "prev_hash", "hash"])
        // A retry, a resume and a dry-run reverify from the CLI: recorded as its login.
        #expect(try await ipnd(["deliveries", "retry", "--id", "1", "--config", config], environment: ["SUDO_USER": "carla"]).status == 1)
        _ = try await ipnd(["notifications", "reverify", "--config", config], environment: ["SUDO_USER": "carla"])
        let carla = try parseJSONLines(try await ipnd(["audit", "list", "--actor", "cli:carla", "--format", "json", "--config", config]).stdout)
        #expect(carla.compactMap { $0.string("action") } == ["notification.reverify", "delivery.retry", "order.expectation_set"])
        let csv = try await ipnd(["audit", "list", "--format", "csv", "--config", config])
        #expect(parseCSV(csv.stdout).first == ["id", "at", "actor", "role", "via", "action", "target", "outcome", "client_ip", "detail",
                                               "prev_hash", "hash"])

        let verify = try await ipnd(["audit", "verify", "--format", "json", "--config", config])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        #expect(try parseJSONObject(verify.stdout)["intact"] as? Bool == true)

        // README's check from outside, over `audit list --format json` oldest first.
        let all = try await ipnd(["audit", "list", "--limit", "1000000", "--format", "json", "--config", config])
        let lines = all.stdout.split(separator: "\n").reversed().joined(separator: "\n") + "\n"
        let script = try #require(Self.readmeVerifier(), "README has no audit verifier snippet")
        let outside = try await Self.python(script, input: lines)
        #expect(outside.status == 0 && outside.stdout.contains("intact"), "\(outside.stdout) \(outside.stderr)")

        // A changed record: verify exits 1 naming it, and so does the outside check.
        try await daemon.stop()
        let second = try daemon.count("SELECT MIN(id) FROM audit_records WHERE id > (SELECT MIN(id) FROM audit_records)")
        #expect(second == 2)
        try daemon.execute("UPDATE audit_records SET target = 'unlimint/default/C-9' WHERE id = 2")
        let broken = try await ipnd(["audit", "verify", "--config", config])
        #expect(broken.status == 1)
        #expect(broken.stdout.contains("broken at record 2"), "\(broken.stdout)")
        let changed = try await ipnd(["audit", "list", "--limit", "1000000", "--format", "json", "--config", config])
        let outsideBroken = try await Self.python(script, input: changed.stdout.split(separator: "\n").reversed().joined(separator: "\n") + "\n")
        #expect(outsideBroken.status != 0 && outsideBroken.stderr.contains("record 2"), "\(outsideBroken.stdout) \(outsideBroken.stderr)")
    }

    @Test("retention removes the oldest audit records; verify then starts after them and says so", arguments: Backend.allCases)
    func retention(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend, opsTokens: [], opsYAML: OpsUsersFixture.yaml())
        for _ in 0..<3 { _ = try await daemon.api("/api/v1/notifications?include=raw", token: OpsUsersFixture.token(.operator)) }
        _ = try await daemon.api("/api/v1/orders", token: "not-a-token")
        let before = try daemon.count("SELECT COUNT(*) FROM audit_records")
        #expect(before >= 2)
        // 401 days later (audit_days 400 by default): all but the newest record go.
        daemon.advance(by: .seconds(401 * 86_400))
        try await waitUntil("retention to leave one audit record") { try daemon.count("SELECT COUNT(*) FROM audit_records") == 1 }
        let newest = try daemon.count("SELECT MAX(id) FROM audit_records")
        let verify = try await ipnd(["audit", "verify", "--config", daemon.configPath])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        #expect(verify.stdout == "audit trail intact: 1 record, \(newest) to \(newest) (starts at record \(newest): retention removed the records before it)\n",
                "\(verify.stdout)")
        try await daemon.stop()
        // The next record (daemon.stop) follows the one kept.
        #expect(try await ipnd(["audit", "verify", "--config", daemon.configPath]).status == 0)
    }

    @Test("reverify through the API: a dry run is recorded before the answer; with apply, each notification recorded carries its own record")
    func reverify() async throws {
        let daemon = try await TestDaemon.start(opsTokens: [], opsYAML: OpsUsersFixture.yaml())
        // Signed with a secret the config does not have yet: rejected.
        let body = UnlimintRequests.body(order: "RV-1", id: "RV-1", status: "COMPLETED")
        let rejected = try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body, secret: "fresh-secret"))
        #expect(rejected.status >= 400)
        let otto = OpsUsersFixture.token(.operator)
        #expect(try await daemon.send(.POST, ops: "/api/v1/notifications/reverify", body: #"{"apply":false}"#, token: otto).status == 200)
        let dry = try #require(try daemon.auditRows("notification.reverify").first)
        #expect(dry[0] == "otto@example.com" && dry[3] == "notification:1")
        #expect(dry[4] == #"{"apply":false,"examined":1,"still_rejected":1}"#)
        // The secret added (a reload): applied, the new notification's record in its own transaction.
        let yaml = try String(contentsOfFile: daemon.configPath, encoding: .utf8)
            .replacingOccurrences(of: "[old-rotated-out,", with: "[fresh-secret, old-rotated-out,")
        try TestDaemon.writeConfig(yaml, to: daemon.configPath)
        #expect(await daemon.daemon.reload() == .applied(needsRestart: []))
        #expect(try await daemon.send(.POST, ops: "/api/v1/notifications/reverify", body: #"{"apply":true}"#, token: otto).status == 200)
        let applied = try #require(try daemon.auditRows("notification.reverify").first)
        #expect(applied[3] == "notification:1")
        #expect(applied[4] == #"{"apply":true,"notification_id":2,"verdict":"applied","order_state":"paid"}"#)
        #expect(try daemon.orderState("RV-1") == "paid")
        try await daemon.stop()
    }

    @Test("API 401s: at most 60 a minute per client address are recorded, the rest counted in ipnd_audit_dropped_total")
    func refusalsBounded() async throws {
        let daemon = try await TestDaemon.start(opsTokens: [], opsYAML: OpsUsersFixture.yaml())
        for index in 0..<65 { #expect(try await daemon.api("/api/v1/orders", token: "guess-\(index)").status == 401) }
        let recorded = try daemon.count("SELECT COUNT(*) FROM audit_records WHERE action = 'auth.refused'")
        let metrics = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        #expect(metrics.value("ipnd_audit_records_total", ["action": "auth.refused", "outcome": "refused"]) == Double(recorded))
        #expect(Int(metrics.value("ipnd_audit_dropped_total") ?? -1) == 65 - recorded)
        // Windows are whole minutes: within one, exactly 60 (a run across a minute's turn gets more).
        let times = try daemon.column("SELECT at FROM audit_records WHERE action = 'auth.refused' ORDER BY id").compactMap { $0?.prefix(16) }
        if times.first == times.last { #expect(recorded == 60) } else { #expect(recorded > 60 && recorded <= 65) }
        try await daemon.stop()
    }

    @Test("token new: 32 random bytes, URL-safe, printed once with the ops.users lines that accept it")
    func tokenNew() async throws {
        let result = try await ipnd(["token", "new", "--name", "alice@example.com", "--role", "operator"])
        #expect(result.status == 0)
        let token = try #require(result.stdout.split(separator: "\n").first.map { String($0.dropFirst("token: ".count)) })
        #expect(token.count == 43 && token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        #expect(result.stdout.contains("- name: alice@example.com\n    role: operator\n    token_sha256: \"\(OpsUsersFixture.digest(token))\""))
        let other = try await ipnd(["token", "new"])
        #expect(!other.stdout.contains(token))
        #expect(try await ipnd(["token", "new", "--role", "root"]).status == 64)
    }

    /// The Python of README's "Checking the chain from outside" section.
    static func readmeVerifier() -> String? {
        var directory = URL(fileURLWithPath: #filePath)
        while directory.path != "/" {
            directory.deleteLastPathComponent()
            if let readme = try? String(contentsOf: directory.appendingPathComponent("README.md"), encoding: .utf8),
               let start = readme.range(of: "```python\n# ipnd audit chain check"),
               let end = readme[start.upperBound...].range(of: "```") {
                return "# ipnd audit chain check" + String(readme[start.upperBound..<end.lowerBound])
            }
        }
        return nil
    }

    static func python(_ script: String, input: String) async throws -> CommandResult {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-audit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let scriptPath = directory.appendingPathComponent("verify.py").path
        let inputPath = directory.appendingPathComponent("records.jsonl").path
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        try input.write(toFile: inputPath, atomically: true, encoding: .utf8)
        return try await runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "python3 \(scriptPath) < \(inputPath)"])
    }
}
