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

/// The built `ipnd` binary, beside the test bundle in the build folder.
let ipndBinary: URL = {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    if directory.pathExtension == "xctest" { directory.deleteLastPathComponent() }
    return directory.appendingPathComponent("ipnd")
}()

struct CommandResult {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Runs `ipnd` with `arguments` and waits for it on a thread of its own (with a deadline,
/// killing it past that).
func ipnd(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 20) async throws -> CommandResult {
    var env = ProcessInfo.processInfo.environment
    env.removeValue(forKey: "IPND_CONFIG")
    for (key, value) in environment { env[key] = value }
    return try await runProcess(ipndBinary, arguments, environment: env, timeout: timeout)
}

/// Runs `executable` with `arguments` (and `environment`, else this process's) on a thread of its
/// own, killing it past `timeout` seconds.
func runProcess(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
                timeout: Double = 20) async throws -> CommandResult {
    try await onDedicatedThread {
        Result { try blockingRun(executable, arguments, environment: environment, timeout: timeout) }
    }.get()
}

private func blockingRun(_ executable: URL, _ arguments: [String], environment: [String: String]?,
                         timeout: Double) throws -> CommandResult {
    let process = ChildProcess()
    // Its own process group: on a timeout, whatever it started goes with it.
    process.startsProcessGroup = true
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Drain both pipes while the process runs: output larger than a pipe buffer would
    // otherwise block it until the deadline.
    let stdout = PipeReader(out)
    let stderr = PipeReader(err)
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning, Date() < deadline { usleep(20_000) }
    if process.isRunning {
        // SIGTERM, then SIGKILL: a process that ignores SIGTERM (the hang this helper exists to
        // catch) must fail its test, not hang the run.
        process.terminate()
        let killAt = Date().addingTimeInterval(5)
        while process.isRunning, Date() < killAt { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        // The daemons and receivers a tool started, orphaned now.
        kill(-process.processIdentifier, SIGKILL)
    }
    process.waitUntilExit()
    return CommandResult(status: process.terminationStatus, stdout: stdout.text(), stderr: stderr.text())
}

func writeConfig(_ yaml: String, mode: Int = 0o600) throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-cli-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let path = directory.appendingPathComponent("ipnd.yaml").path
    try Data(yaml.utf8).write(to: URL(fileURLWithPath: path))
    try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    return path
}

@Suite("Startup config errors stop `ipnd serve` with exit 2 and a message naming the key")
struct CommandLineTests {
    @Test("missing secret, unknown key, bad port", arguments: [
        ("providers:\n  unlimint:\n    - account: default\n", "providers.unlimint[0].callback_secret"),
        ("server:\n  colour: blue\nproviders:\n  unlimint:\n    - callback_secret: x\n", "server.colour"),
        ("server:\n  port: 99999\nproviders:\n  unlimint:\n    - callback_secret: x\n", "server.port"),
    ])
    func startupErrors(yaml: String, key: String) async throws {
        let path = try writeConfig("store:\n  path: s.sqlite\n" + yaml)
        for command in ["serve", "check-config"] {
            let result = try await ipnd([command, "--config", path])
            #expect(result.status == 2, "\(command): \(result.stderr)")
            #expect(result.stderr.contains(key), "\(command) said: \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: (path as NSString).deletingLastPathComponent + "/s.sqlite"))
    }

    @Test("a world-readable config holding secrets is refused; check-config never prints secrets")
    func secretsStayHidden() async throws {
        let yaml = "store:\n  path: s.sqlite\nproviders:\n  unlimint:\n    - callback_secret: very-secret-value-123\n"
        let exposed = try await ipnd(["check-config", "--config", try writeConfig(yaml, mode: 0o644)])
        #expect(exposed.status == 2)
        #expect(exposed.stderr.contains("providers.unlimint[0].callback_secret"))
        #expect(!exposed.stderr.contains("very-secret-value-123"))
        let ok = try await ipnd(["check-config", "--config", try writeConfig(yaml)])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("unlimint/default"))
        #expect(ok.stdout.contains("redacted"))
        #expect(!ok.stdout.contains("very-secret-value-123"))
    }

    @Test("check-config prints the reconcile settings and each account's inquiry, never an inquiry secret")
    func inquiriesShown() async throws {
        let yaml = """
            store:
              path: s.sqlite
            reconcile:
              schedule: [5m, 1h]
              give_up_after: 2d
            providers:
              unlimint:
                - callback_secret: x
              juspay:
                - username: u
                  password: p
                  inquiry:
                    api_key: juspay-api-key-secret-42
                    merchant_id: acme
            """
        let result = try await ipnd(["check-config", "--config", try writeConfig(yaml)])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\n    inquiry: url: https://api.juspay.in; api_key: configured, redacted; merchant_id: acme\n"))
        #expect(result.stdout.contains("unlimint/default: POST /ipn/unlimint; callback_secret: 1 secret(s), redacted; allow_ips: any\n    inquiry: not configured\n"))
        #expect(result.stdout.contains("\nreconcile: schedule 5m, 1h (then every 1d), give_up_after 2d, max_in_flight 4, per_account_per_minute 60, timeout_seconds 10"))
        #expect(!result.stdout.contains("juspay-api-key-secret-42"))
    }

    @Test("the config path comes from $IPND_CONFIG when --config is not given")
    func configFromEnvironment() async throws {
        let path = try writeConfig("store:\n  path: s.sqlite\nproviders:\n  unlimint:\n    - callback_secret: x\n")
        let result = try await ipnd(["check-config"], environment: ["IPND_CONFIG": path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(path))
        let missing = try await ipnd(["check-config", "--config", "/nonexistent/ipnd.yaml"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("/nonexistent/ipnd.yaml"))
    }

    @Test("a listener address that is taken stops serve with exit 2, naming its keys, under systemd too",
          arguments: ["server", "ops"], [false, true])
    func listenerAddressTaken(section: String, underSystemd: Bool) async throws {
        let taken = try ListeningSocket()
        // Under systemd (NOTIFY_SOCKET set) the watchdog service waits for both listeners: it
        // must give up when one cannot bind, or serve hangs instead of exiting.
        let notify = underSystemd ? try NotifySocket() : nil
        let environment = notify.map { ["NOTIFY_SOCKET": $0.name, "WATCHDOG_USEC": "2000000"] } ?? [:]
        let ports = section == "server" ? (taken.port, 0) : (0, taken.port)
        let path = try writeConfig("""
            store:
              path: s.sqlite
            server:
              port: \(ports.0)
            ops:
              port: \(ports.1)
            providers:
              unlimint:
                - callback_secret: x

            """)
        let result = try await ipnd(["serve", "--config", path], environment: environment)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("cannot listen on 127.0.0.1:\(taken.port) (\(section).host, \(section).port)"),
                "\(result.stderr)")
        #expect(result.stderr.contains("Address already in use"), "\(result.stderr)")
    }

    @Test("unknown flags are usage errors (64)")
    func usage() async throws {
        #expect(try await ipnd(["serve", "--no-such-flag"]).status == 64)
    }

    @Test("IPND_LOG_LEVEL that is not a level stops serve, and fails check-config (the unit's ExecStartPre), with exit 2 naming the variable",
          arguments: ["serve", "check-config"])
    func badLogLevel(command: String) async throws {
        let config = try writeConfig("store:\n  path: s.sqlite\nproviders:\n  unlimint:\n    - callback_secret: x\n")
        for level in ["verbose", "warn", ""] {
            let result = try await ipnd([command, "--config", config], environment: ["IPND_LOG_LEVEL": level])
            #expect(result.status == 2, "\(level): \(result.stderr)")
            #expect(result.stderr.contains(#"IPND_LOG_LEVEL: "\#(level)" is not a log level (trace, debug, info, notice, warning, error, critical)"#),
                    "\(result.stderr)")
        }
        let valid = try await ipnd(["check-config", "--config", config], environment: ["IPND_LOG_LEVEL": "warning"])
        #expect(valid.status == 0, "\(valid.stderr)")
    }
}

@Suite("Store commands run outside the service's credentials")
struct StoreCommandsWithoutCredentialsTests {
    @Test("orders list, notifications list and backup work with a production config whose secret files they cannot see; serve does not")
    func productionConfig() async throws {
        let daemon = try await TestDaemon.start()
        let body = UnlimintRequests.body(order: "PROD-1", id: "1", status: "COMPLETED")
        #expect(try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body)).status == 200)
        // The way deploy/ipnd.yaml reads: every secret a credential file, none readable here.
        let path = try writeConfig("""
            store:
              path: \(daemon.config.store.path)
            providers:
              unlimint:
                - account: default
                  callback_secret_file: unlimint-callback-secret
            """, mode: 0o644)
        let orders = try await ipnd(["orders", "list", "--config", path, "--format", "json"])
        #expect(orders.status == 0, "\(orders.stderr)")
        #expect(orders.stdout.contains(#""order_ref":"PROD-1""#))
        let notifications = try await ipnd(["notifications", "list", "--config", path, "--format", "csv"])
        #expect(notifications.status == 0, "\(notifications.stderr)")
        let copy = daemon.directory.appendingPathComponent("prod-backup.sqlite").path
        let backup = try await ipnd(["backup", "--config", path, copy])
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(FileManager.default.fileExists(atPath: copy))
        let serve = try await ipnd(["check-config", "--config", path])
        #expect(serve.status == 2)
        #expect(serve.stderr.contains("providers.unlimint[0].callback_secret_file"))
        try await daemon.stop()
    }
}

/// A TCP socket listening on 127.0.0.1 at a port the system picked, closed on deinit.
final class ListeningSocket {
    let descriptor: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = RawHTTP.loopbackAddress(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard fd >= 0, bound else {
            if fd >= 0 { close(fd) }
            throw POSIXError(.EADDRNOTAVAIL)
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}
