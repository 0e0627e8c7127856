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
import IPNTestSupport
import GRDB
import IPNConfig
import IPNCore
import NIOCore
import Synchronization
import Testing

/// A directory laid out like the unit lays out the service: a world-readable config without
/// secrets, a credentials directory with one 0400 file per secret, and a state directory.
struct UnitLikeInstallation {
    let root: URL
    let configPath: String
    let credentials: URL
    let state: URL

    /// - Parameter owner: the uid and gid the service runs as (DynamicUser), when not the current user.
    init(storeDirectory: URL? = nil, extraServerYAML: String = "", owner: UInt32? = nil) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-unit-\(UUID().uuidString)")
        credentials = root.appendingPathComponent("credentials")
        state = storeDirectory ?? root.appendingPathComponent("state")
        for directory in [root, credentials, state] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        chmod(root.path, 0o755)
        let secret = credentials.appendingPathComponent("unlimint-callback-secret").path
        try Data("\(TestDaemon.unlimintSecret)\n".utf8).write(to: URL(fileURLWithPath: secret))
        chmod(secret, 0o400)
        configPath = root.appendingPathComponent("ipnd.yaml").path
        let yaml = """
            server:
              host: 127.0.0.1
              port: 0
            \(extraServerYAML)
            store:
              path: \(state.appendingPathComponent("ipnd.sqlite").path)
            ops:
              host: 127.0.0.1
              port: 0
            providers:
              unlimint:
                - account: default
                  callback_secret_file: unlimint-callback-secret
            """
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: configPath))
        chmod(configPath, 0o644)
        if let owner {
            chown(credentials.path, owner, owner)
            chown(secret, owner, owner)
            chown(state.path, owner, owner)
            chmod(credentials.path, 0o500)
            chmod(state.path, 0o700)
        }
    }

    var storePath: String { state.appendingPathComponent("ipnd.sqlite").path }

    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ["CREDENTIALS_DIRECTORY": credentials.path]
        for (key, value) in extra { environment[key] = value }
        return environment
    }

    func query<T>(_ body: (Database) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: storePath, configuration: configuration).read(body)
    }
}

/// Posts one signed Unlimint notification with a fresh client; nil when no answer came back.
func postUnlimint(port: Int, order: String, client: HTTPClient) async -> Int? {
    let body = UnlimintRequests.body(order: order, id: "id-\(order)", status: "COMPLETED")
    var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/ipn/unlimint")
    request.method = .POST
    for (name, value) in UnlimintRequests.headers(for: body) { request.headers.add(name: name, value: value) }
    request.body = .bytes(ByteBuffer(bytes: body))
    do {
        let response = try await client.execute(request, timeout: .seconds(10))
        let answer = try await response.body.collect(upTo: 1024)
        return response.status.code == 200 && String(buffer: answer) == "OK" ? 200 : Int(response.status.code)
    } catch {
        return nil
    }
}

let setprivAvailable = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

/// Whether the kernel enforces memory-deny-write-execute for a process (PR_SET_MDWE).
let mdweAvailable: Bool = {
    run(["python3", repositoryRoot.appendingPathComponent("tools/mdwe_exec.py").path, "/bin/true"]) == 0
}()

@Suite("Running as a systemd service (issue 5)")
struct ProductionTests {
    @Test("sd_notify: READY=1 first, WATCHDOG=1 at half of WATCHDOG_USEC, STOPPING=1 on SIGTERM, exit 0",
          arguments: [true, false])
    func sdNotify(abstractSocket: Bool) async throws {
        let installation = try UnitLikeInstallation()
        let notify = try NotifySocket(abstract: abstractSocket)
        let spawned = Date()
        let daemon = try DaemonProcess(configPath: installation.configPath, environment: installation.environment([
            "NOTIFY_SOCKET": notify.name, "WATCHDOG_USEC": "400000",
        ]))
        // The pings are counted over the 1.5 s after READY=1 arrives, not after the start: a slow
        // start (a loaded machine, a sanitizer build) must not shorten the window. One receiver
        // reads throughout, so no pings pile up unread between two windows either.
        let readyAt = Locked<Date?>(nil)
        let received = await notify.receive(for: 15) { message in
            readyAt.withLock { at in
                if at == nil, message.hasPrefix("READY=1") { at = Date() }
                return at.map { Date().timeIntervalSince($0) > 1.5 } ?? false
            }
        }
        let messages = received.map(\.message)
        try #require(!messages.isEmpty, "no sd_notify message; daemon said: \(daemon.logLines)")
        #expect(messages.first?.hasPrefix("READY=1") == true, "\(messages)")
        let window = received[0].at...received[0].at.addingTimeInterval(1.5)
        let pings = received.filter { $0.message.hasPrefix("WATCHDOG=1") && window.contains($0.at) }
        #expect(pings.count >= 4, "\(messages)")
        #expect(pings.allSatisfy { $0.message.contains("STATUS=serving") })
        // No bursts: at most one ping per 0.2 s over the daemon's whole life so far. Arrival times
        // cannot show that on their own: a receiver thread that starts late reads the pings queued
        // meanwhile all at once: 11 in the 1.5 s window after a 0.7 s late start, most likely how
        // the CI run of 8c215e7 failed.
        let allPings = received.filter { $0.message.hasPrefix("WATCHDOG=1") }
        let lifetime = (received.last?.at ?? Date()).timeIntervalSince(spawned)
        #expect(allPings.count <= Int(lifetime / 0.2) + 2, "\(allPings.count) pings in the daemon's first \(lifetime) s")
        if pings.count >= 3 {
            // Pings come every half interval (0.2 s). Arrival times are read by a thread a loaded
            // machine may delay, so single gaps prove little; the median gap (half the interval,
            // not the whole of it) does.
            let gaps = zip(pings.dropFirst(), pings).map { $0.at.timeIntervalSince($1.at) }.sorted()
            // 0.35, not the midpoint 0.3: a loaded machine measured a median of 0.324 (pings at the
            // whole interval would give 0.4).
            #expect(gaps[gaps.count / 2] < 0.35, "median gap of \(gaps)")
        }
        daemon.signal(SIGTERM)
        let stopping = await notify.receive(for: 5) { $0.hasPrefix("STOPPING=1") }
        #expect(stopping.contains { $0.message.hasPrefix("STOPPING=1") }, "\(stopping.map(\.message))")
        #expect(await daemon.waitForExit(timeout: 15) == 0)
    }

    @Test("a notify socket nobody reads stalls nothing: ipnd keeps serving, STOPPING=1 is retried, SIGTERM stops it")
    func notifySocketNotRead() async throws {
        let installation = try UnitLikeInstallation()
        let notify = try NotifySocket()  // never read: its queue fills after a few pings
        let daemon = try DaemonProcess(configPath: installation.configPath, environment: installation.environment([
            "NOTIFY_SOCKET": notify.name, "WATCHDOG_USEC": "40000",
        ]))
        let ports = try await daemon.waitUntilListening()
        // Pings every 20 ms: the socket's queue (net.unix.max_dgram_qlen, 10 by default) is full
        // long before this delivery, and before the STOPPING=1 that SIGTERM sends.
        try await Task.sleep(for: .seconds(1))
        #expect(await postUnlimint(port: ports.provider, order: "UNREAD-1", client: HTTPClient.shared) == 200)
        daemon.signal(SIGTERM)
        // STOPPING=1 found the queue full; it is sent again until the queue drains (here: now).
        let stopping = await notify.receive(for: 5) { $0.hasPrefix("STOPPING=1") }
        #expect(stopping.contains { $0.message.hasPrefix("STOPPING=1") }, "\(stopping.map(\.message))")
        #expect(await daemon.waitForExit(timeout: 30) == 0, "\(daemon.logLines.suffix(5))")
        #expect(daemon.logLines.contains { $0.contains("systemd notification not delivered") })
    }

    @Test("as an unprivileged user with no capabilities and credentials from $CREDENTIALS_DIRECTORY, as DynamicUser runs it",
          .enabled(if: setprivAvailable, "needs root and setpriv to drop to another user"))
    func unprivileged() async throws {
        let uid: UInt32 = 61_999
        let installation = try UnitLikeInstallation(owner: uid)
        let notify = try NotifySocket()
        let daemon = try DaemonProcess(
            configPath: installation.configPath,
            environment: installation.environment(["NOTIFY_SOCKET": notify.name, "WATCHDOG_USEC": "1000000"]),
            launcher: ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--no-new-privs",
                       "--inh-caps=-all", "--bounding-set=-all"]
        )
        let ports = try await daemon.waitUntilListening()
        #expect(await notify.receive(for: 1) { $0.hasPrefix("READY=1") }.contains { $0.message.hasPrefix("READY=1") })
        let client = HTTPClient.shared
        #expect(await postUnlimint(port: ports.provider, order: "UNPRIV-1", client: client) == 200)
        daemon.signal(SIGTERM)
        // Generous: under make test-sanitizers on two busy cores a graceful stop can take long.
        let status = await daemon.waitForExit(timeout: 40)
        #expect(status == 0, "exit \(status.map(String.init) ?? "none, killed"): \(daemon.logLines.suffix(8))")
        let state = try installation.query { db in
            try String.fetchOne(db, sql: "SELECT state FROM orders WHERE order_ref = 'UNPRIV-1'")
        }
        #expect(state == "paid")
        var info = stat()
        stat(installation.storePath, &info)
        #expect(info.st_uid == uid)
        #expect(info.st_mode & 0o077 == 0, "store file mode \(String(info.st_mode & 0o777, radix: 8))")
    }

    @Test("runs with memory-deny-write-execute enforced by the kernel, as MemoryDenyWriteExecute=yes runs it",
          .enabled(if: mdweAvailable, "needs Linux >= 6.3 (prctl PR_SET_MDWE)"))
    func memoryDenyWriteExecute() async throws {
        let installation = try UnitLikeInstallation()
        let daemon = try DaemonProcess(
            configPath: installation.configPath, environment: installation.environment(),
            launcher: ["/usr/bin/env", "python3", repositoryRoot.appendingPathComponent("tools/mdwe_exec.py").path])
        let ports = try await daemon.waitUntilListening()
        #expect(await postUnlimint(port: ports.provider, order: "MDWE-1", client: HTTPClient.shared) == 200)
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: 15) == 0, "\(daemon.logLines.suffix(5))")
        let state = try installation.query { db in
            try String.fetchOne(db, sql: "SELECT state FROM orders WHERE order_ref = 'MDWE-1'")
        }
        #expect(state == "paid")
    }

    @Test("WATCHDOG=1 is withheld while the store cannot commit and resumes after",
          .enabled(if: canMount, "needs root to mount a size-limited tmpfs"))
    func watchdogFollowsStore() async throws {
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-wd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        try #require(run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint.path]) == 0)
        defer { run(["umount", "-l", mountPoint.path]) }
        let installation = try UnitLikeInstallation(storeDirectory: mountPoint)
        let notify = try NotifySocket()
        let daemon = try DaemonProcess(configPath: installation.configPath, environment: installation.environment([
            "NOTIFY_SOCKET": notify.name, "WATCHDOG_USEC": "400000",
        ]))
        // Start-up may be slow (sanitizer builds on busy cores): count pings from READY=1 on.
        let started = await notify.receive(for: 30) { $0.hasPrefix("READY=1") }
        try #require(started.contains { $0.message.hasPrefix("READY=1") }, "\(daemon.logLines.suffix(5))")
        #expect(await notify.receive(for: 1).filter { $0.message.hasPrefix("WATCHDOG=1") }.count >= 2)
        let filler = mountPoint.appendingPathComponent("filler").path
        run(["dd", "if=/dev/zero", "of=\(filler)", "bs=64k"])
        _ = await notify.receive(for: 0.5)  // a ping already under way may still arrive
        let whileFull = await notify.receive(for: 1.2)
        #expect(!whileFull.contains { $0.message.hasPrefix("WATCHDOG=1") }, "\(whileFull.map(\.message))")
        #expect(whileFull.contains { $0.message.contains("store not answering") })
        try FileManager.default.removeItem(atPath: filler)
        let afterwards = await notify.receive(for: 1.5)
        #expect(afterwards.contains { $0.message.hasPrefix("WATCHDOG=1") }, "\(afterwards.map(\.message))")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: 15) == 0)
    }

    @Test("under systemd's journal (JOURNAL_STREAM names stderr) each line starts with its syslog priority")
    func journalPriorities() async throws {
        let installation = try UnitLikeInstallation()
        let daemon = try DaemonProcess(configPath: installation.configPath, environment: installation.environment(), journalStream: true)
        let ports = try await daemon.waitUntilListening()
        #expect(await postUnlimint(port: ports.provider, order: "JOURNAL-1", client: HTTPClient.shared) == 200)
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: 15) == 0)
        let lines = await daemon.allLogLines() ?? []
        #expect(lines.contains { $0.hasPrefix("<6>ts=") && $0.contains("msg=notification") && $0.contains("order_ref=JOURNAL-1") }, "\(lines)")
        #expect(lines.allSatisfy { line in
            ["<2>", "<3>", "<4>", "<5>", "<6>", "<7>"].contains(String(line.prefix(3))) && line.dropFirst(3).hasPrefix("ts=")
        }, "\(lines)")
    }

    @Test("under systemd's journal, an error that stops serve before its log starts is filed at error priority")
    func journalStartupErrors() async throws {
        let installation = try UnitLikeInstallation()
        for (variable, value, message) in [("IPND_LOG_LEVEL", "warn", "IPND_LOG_LEVEL: "), ("IPND_SERVER_PORT", "eighty", "config error: server.port")] {
            let daemon = try DaemonProcess(
                configPath: installation.configPath, environment: installation.environment([variable: value]), journalStream: true)
            #expect(await daemon.waitForExit(timeout: 15) == 2)
            let lines = await daemon.allLogLines() ?? []
            #expect(lines.contains { $0.hasPrefix("<3>\(message)") }, "\(lines)")
            #expect(lines.allSatisfy { $0.hasPrefix("<") }, "\(lines)")
        }
    }

    @Test("a second serve on the same store is refused (exit 3, naming the first's pid) and leaves the first serving")
    func oneDaemonPerStore() async throws {
        let installation = try UnitLikeInstallation()
        let first = try DaemonProcess(configPath: installation.configPath, environment: installation.environment())
        let ports = try await first.waitUntilListening()
        let second = try DaemonProcess(configPath: installation.configPath, environment: installation.environment())
        #expect(await second.waitForExit(timeout: 20) == 3)
        let refusal = await second.allLogLines() ?? []
        #expect(refusal.contains { $0.contains("level=critical") && $0.contains("another ipnd serve (pid \(first.process.processIdentifier)) is using this store") },
                "\(refusal)")
        #expect(await postUnlimint(port: ports.provider, order: "FIRST-STILL-SERVES", client: HTTPClient.shared) == 200)
        first.signal(SIGTERM)
        #expect(await first.waitForExit(timeout: 15) == 0)
        // The kernel drops the lock with its holder: the next daemon starts.
        let third = try DaemonProcess(configPath: installation.configPath, environment: installation.environment())
        _ = try await third.waitUntilListening()
        third.signal(SIGTERM)
        #expect(await third.waitForExit(timeout: 15) == 0)
    }

    @Test("SIGTERM under concurrent load: every success ack is in the store, none without it, exit 0")
    func sigtermUnderLoad() async throws {
        let installation = try UnitLikeInstallation()
        let daemon = try DaemonProcess(configPath: installation.configPath, environment: installation.environment())
        let ports = try await daemon.waitUntilListening()
        let client = HTTPClient.shared
        let acknowledged = Locked<[String]>([])
        let attempted = Locked<Int>(0)
        let stop = Locked<Bool>(false)
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<16 {
                    group.addTask {
                        var sequence = 0
                        while !stop.withLock({ $0 }) {
                            sequence += 1
                            let order = "TERM-\(worker)-\(sequence)"
                            attempted.withLock { $0 += 1 }
                            if await postUnlimint(port: ports.provider, order: order, client: client) == 200 {
                                acknowledged.withLock { $0.append(order) }
                            }
                        }
                    }
                }
            }
        }
        // Signal once the load is real: plenty acknowledged and more in flight.
        let loadDeadline = Date().addingTimeInterval(30)
        while acknowledged.withLock({ $0.count }) < 40, Date() < loadDeadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let signalled = Date()
        daemon.signal(SIGTERM)
        let status = await daemon.waitForExit(timeout: 20)
        let stopDuration = Date().timeIntervalSince(signalled)
        stop.withLock { $0 = true }
        await load.value

        #expect(status == 0, "daemon logs: \(daemon.logLines.suffix(5))")
        #expect(stopDuration < 15, "took \(stopDuration)s to stop")
        let acked = acknowledged.withLock { $0 }
        #expect(acked.count >= 40, "only \(acked.count) of \(attempted.withLock { $0 }) acknowledged before SIGTERM")
        let applied = Set(try installation.query { db in
            try String.fetchAll(db, sql: "SELECT order_ref FROM notifications WHERE verdict = 'applied'")
        })
        let paid = Set(try installation.query { db in
            try String.fetchAll(db, sql: "SELECT order_ref FROM orders WHERE state = 'paid'")
        })
        let missing = acked.filter { !applied.contains($0) || !paid.contains($0) }
        #expect(missing.isEmpty, "acknowledged but not stored: \(missing.prefix(10))")
        let integrity = try installation.query { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
        #expect(integrity == "ok")
        // The log is written in batches: the lines of the last notifications before the exit are
        // out too, one per acknowledged notification, and the last line says it stopped.
        let lines = try #require(await daemon.allLogLines())
        let logged = Set(lines.filter { $0.contains("msg=notification") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("order_ref=") }.map { String($0.dropFirst("order_ref=".count)) }
        })
        let unlogged = acked.filter { !logged.contains($0) }
        #expect(unlogged.isEmpty, "acknowledged without a log line: \(unlogged.prefix(10))")
        #expect(lines.last?.contains("msg=stopped") == true, "last line: \(lines.last ?? "none")")
        // Clean shutdown checkpoints the WAL away.
        let walSize = (try? FileManager.default.attributesOfItem(atPath: installation.storePath + "-wal")[.size] as? Int) ?? 0
        #expect(walSize == 0)
    }

    @Test("a client sending headers byte by byte slower than the timeout is cut off; others are served meanwhile",
          arguments: ["header", "body"])
    func slowClient(phase: String) async throws {
        // 4 s: on a loaded 2-core machine a normal request has taken over 2 s, and one must
        // be served while the slow client is still held.
        let daemon = try await TestDaemon.start(serverYAML: "  request_timeout_seconds: 4")
        let port = daemon.ports.provider
        // The first request pays for one-time set-up (slow under a sanitizer); not the one timed.
        let warmUp = UnlimintRequests.body(order: "WARM-\(phase)", id: "warm", status: "COMPLETED")
        #expect(try await daemon.post("/ipn/unlimint", body: warmUp, headers: UnlimintRequests.headers(for: warmUp)).status == 200)
        // Blocking socket calls belong on a thread of their own, not on the cooperative pool
        // the in-process daemon needs.
        async let slow = onDedicatedThread { () -> (closed: Bool, after: Double) in
            guard let fd = RawHTTP.connectLoopback(port: port) else { return (false, 0) }
            defer { close(fd) }
            var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let head = phase == "header"
                ? "POST /ipn/unlimint HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + String(repeating: "a", count: 200)
                : "POST /ipn/unlimint HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 500\r\n\r\n" + String(repeating: "{", count: 200)
            let start = Date()
            var buffer = [UInt8](repeating: 0, count: 512)
            for byte in Array(head.utf8) {
                var value = byte
                if send(fd, &value, 1, Int32(MSG_NOSIGNAL)) < 0 { return (true, Date().timeIntervalSince(start)) }
                let received = recv(fd, &buffer, buffer.count, 0)
                if received == 0 { return (true, Date().timeIntervalSince(start)) }
                if Date().timeIntervalSince(start) > 12 { break }
                usleep(100_000)
            }
            return (false, Date().timeIntervalSince(start))
        }
        // Meanwhile, a normal client is served: its requests complete while the slow
        // connection is still being held open.
        let slowStarted = Date()
        var servedAt: [Double] = []
        for index in 0..<5 {
            let body = UnlimintRequests.body(order: "FAST-\(phase)-\(index)", id: "\(index)", status: "COMPLETED")
            let answer = try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body))
            #expect(answer.status == 200)
            servedAt.append(Date().timeIntervalSince(slowStarted))
            try await Task.sleep(for: .milliseconds(100))
        }
        let outcome = await slow
        #expect(outcome.closed, "the slow connection was not closed")
        #expect(outcome.after >= 3.9 && outcome.after < 11, "closed after \(outcome.after)s")
        #expect(servedAt.filter { $0 < outcome.after }.count >= 1, "served at \(servedAt), slow client cut at \(outcome.after)")
        #expect(try daemon.count("SELECT COUNT(*) FROM orders WHERE state = 'paid'") == 6)
        #expect(daemon.logs.captured.contains { $0.contains("request not received in time") })
        try await daemon.stop()
    }

    @Test("each request on a keep-alive connection has its own deadline, from its first byte")
    func deadlinePerRequest() async throws {
        let daemon = try await TestDaemon.start(serverYAML: "  request_timeout_seconds: 2")
        let port = daemon.ports.provider
        let requests = ["KA-1", "KA-2"].map(UnlimintRequests.rawPayment(order:))
        let answers = await RawHTTP.onConnection(port: port) { fd in
            var answers: [RawHTTP.Answer] = []
            RawHTTP.sendAll(fd, requests[0])
            answers.append(RawHTTP.readAnswer(fd, timeout: 5))
            // The second request starts 1.2 s later and stops short of its last bytes. At 2 s
            // (the first request's deadline) it is still in time; at 3.2 s its own ends.
            usleep(1_200_000)
            RawHTTP.sendAll(fd, Array(requests[1].dropLast(10)))
            answers.append(RawHTTP.readAnswer(fd, timeout: 1.2))
            answers.append(RawHTTP.readAnswer(fd, timeout: 8))
            return answers
        }
        #expect(answers.map(\.status) == [200, nil, 408], "\(answers)")
        #expect(answers.count == 3 && !answers[1].closed, "cut off at the first request's deadline: \(answers)")
        #expect(try daemon.count("SELECT COUNT(*) FROM orders WHERE state = 'paid'") == 1)
        try await daemon.stop()
    }

    @Test("allow_ips without a trusted proxy: the peer address decides and X-Forwarded-For is ignored")
    func allowIPsDirect() async throws {
        let daemon = try await TestDaemon.start(providersYAML: """
            providers:
              unlimint:
                - account: default
                  callback_secret: \(TestDaemon.unlimintSecret)
                  allow_ips: [10.0.0.0/8]
                - account: local
                  callback_secret: \(TestDaemon.unlimintSecret)
                  allow_ips: [127.0.0.1/32, "::1"]
            """)
        let body = UnlimintRequests.body(order: "IP-1", id: "1", status: "COMPLETED")
        let refused = try await daemon.post("/ipn/unlimint", body: body,
                                            headers: UnlimintRequests.headers(for: body) + [("X-Forwarded-For", "10.1.2.3")])
        #expect(refused.status == 403)
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE reason = 'ip_not_allowed' AND client_ip = '127.0.0.1'") == 1)
        #expect(try daemon.orderState("IP-1") == nil)
        #expect(try await daemon.post("/ipn/unlimint/local", body: body, headers: UnlimintRequests.headers(for: body)).status == 200)
        try await daemon.stop()
    }

    @Test("allow_ips behind a trusted proxy: the rightmost untrusted X-Forwarded-For address decides")
    func allowIPsBehindProxy() async throws {
        let daemon = try await TestDaemon.start(
            providersYAML: """
                providers:
                  unlimint:
                    - account: default
                      callback_secret: \(TestDaemon.unlimintSecret)
                      allow_ips: [10.0.0.0/8]
                """,
            serverYAML: "  trusted_proxies: [127.0.0.1/32, 172.16.0.0/12]")
        func post(_ order: String, forwardedFor: [String]) async throws -> Int {
            let body = UnlimintRequests.body(order: order, id: order, status: "COMPLETED")
            return try await daemon.post("/ipn/unlimint", body: body,
                                         headers: UnlimintRequests.headers(for: body) + forwardedFor.map { ("X-Forwarded-For", $0) }).status
        }
        #expect(try await post("P-1", forwardedFor: ["10.1.2.3"]) == 200)
        #expect(try await post("P-2", forwardedFor: ["10.9.9.9, 172.16.0.5"]) == 200)  // through a second trusted hop
        #expect(try await post("P-3", forwardedFor: ["10.1.2.3, 192.0.2.9"]) == 403)  // spoofed left part, real client 192.0.2.9
        #expect(try await post("P-4", forwardedFor: ["10.1.2.3", "192.0.2.9"]) == 403)  // repeated header, same rule
        #expect(try await post("P-5", forwardedFor: []) == 403)  // the proxy itself is not an allowed client
        #expect(try await post("P-6", forwardedFor: ["not-an-ip"]) == 403)
        // With the port some proxies add, IPv4 and bracketed IPv6 alike.
        #expect(try await post("P-7", forwardedFor: ["10.4.5.6:51234"]) == 200)
        #expect(try await post("P-8", forwardedFor: ["10.7.7.7, [2001:db8::1]:443"]) == 403)
        #expect(try await post("P-9", forwardedFor: ["10.8.8.8:99999999"]) == 403)  // no such port: not believed
        let clients = try daemon.query { db in
            try Row.fetchAll(db, sql: "SELECT order_ref, client_ip FROM notifications ORDER BY id").map { row -> String in
                let ref: String? = row["order_ref"]
                let ip: String? = row["client_ip"]
                return "\(ref ?? "-")@\(ip ?? "-")"
            }
        }
        #expect(clients == ["P-1@10.1.2.3", "P-2@10.9.9.9", "-@192.0.2.9", "-@192.0.2.9", "-@127.0.0.1", "-@127.0.0.1",
                            "P-7@10.4.5.6", "-@2001:db8::1", "-@127.0.0.1"])
        try await daemon.stop()
    }

    @Test("one log line per notification with provider, account, order ref, verdict, reason and latency; no secret, no card number")
    func logs() async throws {
        let daemon = try await TestDaemon.start()
        let pan = "4111111111111111"
        let body = Array(#"{"merchant_order":{"id":"\#(pan)"},"payment_data":{"id":"\#(pan)","status":"COMPLETED","amount":1,"currency":"USD"},"card_account":{"masked_pan":"\#(pan)"}}"#.utf8)
        #expect(try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body)).status == 200)
        #expect(try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body, secret: "wrong")).status == 400)
        let lines = daemon.logs.captured.filter { $0.contains("msg=notification") }
        #expect(lines.count == 2)
        for key in ["provider=unlimint", "account=default", "order_ref=", "verdict=", "latency_ms=", "status="] {
            #expect(lines.allSatisfy { $0.contains(key) }, "\(key) missing in \(lines)")
        }
        #expect(lines.last?.contains("reason=bad_signature") == true)
        let everything = daemon.logs.captured.joined()
        #expect(!everything.contains(pan))
        #expect(everything.contains("411111******1111"))
        #expect(!everything.contains(TestDaemon.unlimintSecret))
        #expect(!everything.contains(UnlimintRequests.headers(for: body)[1].1))
        try await daemon.stop()
    }

    @Test("ipnd backup produces a consistent copy while deliveries continue")
    func backupUnderLoad() async throws {
        let daemon = try await TestDaemon.start()
        let configPath = daemon.directory.appendingPathComponent("ipnd.yaml").path
        let stop = Locked<Bool>(false)
        let delivered = Locked<Int>(0)
        let load = Task {
            var index = 0
            // At least 21 deliveries whatever the machine's speed (sanitizer builds are slow).
            while !stop.withLock({ $0 }) || index <= 20 {
                index += 1
                let body = UnlimintRequests.body(order: "BK-\(index)", id: "\(index)", status: index % 3 == 0 ? "NEW" : "COMPLETED")
                _ = try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body))
                delivered.withLock { $0 = index }
            }
            return index
        }
        // Deliveries keep arriving before, between and after the copies: wait for them by
        // count, not by the clock, which a loaded machine stretches.
        // (Bounded, so a load task that failed cannot hang the test: `sent` below then fails.)
        func deliveries(beyond count: Int) async throws {
            for _ in 0..<6000 where delivered.withLock({ $0 }) < count + 7 { try await Task.sleep(for: .milliseconds(10)) }
        }
        try await deliveries(beyond: 0)
        var copies: [String] = []
        for round in 0..<3 {
            let copy = daemon.directory.appendingPathComponent("backup-\(round).sqlite").path
            let result = try await ipnd(["backup", "--config", configPath, copy])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("integrity ok"))
            copies.append(copy)
            try await deliveries(beyond: delivered.withLock { $0 })
        }
        stop.withLock { $0 = true }
        let sent = try await load.value
        #expect(sent > 20)
        var previous = 0
        for copy in copies {
            let facts = try BackupFacts(path: copy)
            #expect(facts.integrity == "ok")
            #expect(facts.notifications >= previous)
            previous = facts.notifications
            // A snapshot, never half a notification: every applied row has its order and transition.
            #expect(facts.appliedWithoutTransition == 0)
            #expect(facts.transitions == facts.notifications)
            #expect(facts.orders == facts.notifications)
            #expect(facts.journalMode == "delete")
        }
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications") >= previous)
        try await daemon.stop()
    }

    @Test("ipnd backup replaces an existing copy whole, writes it owner-only, and refuses to overwrite the live store")
    func backupReplacesAndRefuses() async throws {
        let daemon = try await TestDaemon.start()
        let configPath = daemon.configPath
        func deliver(_ order: String) async throws {
            let body = UnlimintRequests.body(order: order, id: order, status: "COMPLETED")
            #expect(try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body)).status == 200)
        }
        try await deliver("BR-1")
        let copy = daemon.directory.appendingPathComponent("copy.sqlite").path
        #expect(try await ipnd(["backup", "--config", configPath, copy]).status == 0)
        #expect(try BackupFacts(path: copy).notifications == 1)
        let mode = try FileManager.default.attributesOfItem(atPath: copy)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // The second copy to the same path replaces the first.
        try await deliver("BR-2")
        let again = try await ipnd(["backup", "--config", configPath, copy])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try BackupFacts(path: copy).notifications == 2)

        // The store itself, by its path, through a symbolic link to its directory, its WAL, or
        // the daemon's lock file: refused, and the daemon goes on committing into the same file.
        let link = daemon.directory.appendingPathComponent("linked-dir").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: daemon.directory.path)
        let storePath = daemon.config.store.path
        for target in [storePath, link + "/ipnd.sqlite", storePath + "-wal", storePath + ".lock", link + "/ipnd.sqlite.lock"] {
            let refused = try await ipnd(["backup", "--config", configPath, target])
            #expect(refused.status == 3, "\(target)")
            #expect(refused.stderr.contains("refusing to back up onto"), "\(refused.stderr)")
        }
        try await deliver("BR-3")
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications") == 3)
        #expect(FileManager.default.fileExists(atPath: storePath))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: daemon.directory.path).filter { $0.contains(".partial-") }
        #expect(leftovers.isEmpty)
        try await daemon.stop()
    }

    @Test("deploy/ipnd.yaml names exactly the unit's credentials, and loads once they exist")
    func templateMatchesTheUnit() throws {
        let unit = try String(contentsOf: repositoryRoot.appendingPathComponent("deploy/ipnd.service"), encoding: .utf8)
        let template = try String(contentsOf: repositoryRoot.appendingPathComponent("deploy/ipnd.yaml"), encoding: .utf8)
        let loaded = Set(unit.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("LoadCredential=") else { return nil }
            return String(line.dropFirst("LoadCredential=".count).prefix { $0 != ":" })
        })
        let named = Set(template.split(separator: "\n").compactMap { line -> String? in
            let code = line.prefix { $0 != "#" }
            guard let range = code.range(of: "_file: "), !code.contains("public_key_file") else { return nil }
            return code[range.upperBound...].trimmingCharacters(in: .whitespaces)
        })
        #expect(named == loaded)
        #expect(named.contains("citcon-api-token"))  // CHOP notifications need it
        let credentials = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-credentials-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        for name in named {
            let file = credentials.appendingPathComponent(name)
            try Data("secret-\(name)".utf8).write(to: file)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)  // as systemd hands them over
        }
        let config = try ConfigLoader.load(path: repositoryRoot.appendingPathComponent("deploy/ipnd.yaml").path,
                                           environment: ["CREDENTIALS_DIRECTORY": credentials.path])
        #expect(Set(config.accounts.map(\.providerName)) == ["citcon", "ipay88", "unlimint", "juspay"])
    }

    @Test("deploy/ipnd-cluster.yaml names exactly the unit's and the cluster drop-in's credentials, and loads once they exist")
    func clusterTemplateMatchesTheUnit() throws {
        func credentialNames(_ path: String) throws -> Set<String> {
            let text = try String(contentsOf: repositoryRoot.appendingPathComponent(path), encoding: .utf8)
            return Set(text.split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix("LoadCredential=") else { return nil }
                return String(line.dropFirst("LoadCredential=".count).prefix { $0 != ":" })
            })
        }
        let loaded = try credentialNames("deploy/ipnd.service").union(try credentialNames("deploy/ipnd-cluster.conf"))
        var template = try String(contentsOf: repositoryRoot.appendingPathComponent("deploy/ipnd-cluster.yaml"), encoding: .utf8)
        let named = Set(template.split(separator: "\n").compactMap { line -> String? in
            let code = line.prefix { $0 != "#" }
            // ca_file names a file on disk (a public certificate), not a credential.
            guard let range = code.range(of: "_file: "), !code.contains("public_key_file"),
                  !code.contains("ca_file") else { return nil }
            return code[range.upperBound...].trimmingCharacters(in: .whitespaces)
        })
        #expect(named == loaded)
        #expect(named.contains("db-password"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-cluster-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for name in named {
            let file = directory.appendingPathComponent(name)
            try Data("secret-\(name)".utf8).write(to: file)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        }
        // The database's CA, where the template expects it.
        let ca = directory.appendingPathComponent("db-ca.pem").path
        try Data(String(decoding: Fixture.bytes("test-ca.pem"), as: UTF8.self).utf8).write(to: URL(fileURLWithPath: ca))
        template = template.replacingOccurrences(of: "/etc/ipnd/db-ca.pem", with: ca)
        let path = directory.appendingPathComponent("ipnd.yaml").path
        try Data(template.utf8).write(to: URL(fileURLWithPath: path))
        let config = try ConfigLoader.load(path: path, environment: ["CREDENTIALS_DIRECTORY": directory.path])
        guard case .postgres(let postgres) = config.store.backend else {
            Issue.record("the cluster template does not name a PostgreSQL store")
            return
        }
        #expect(postgres.password == "secret-db-password")
        #expect(postgres.tls == .require)
        #expect(!postgres.description.contains("secret-db-password"))
    }

    @Test("deploy/ipnd.service passes systemd-analyze verify and carries the hardening it promises")
    func unitVerifies() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let unit = try String(contentsOf: repository.appendingPathComponent("deploy/ipnd.service"), encoding: .utf8)
        for directive in [
            "Type=notify", "WatchdogSec=", "Restart=on-failure", "DynamicUser=yes", "StateDirectory=ipnd",
            "ConfigurationDirectory=ipnd", "LoadCredential=", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
            "NoNewPrivileges=yes", "CapabilityBoundingSet=\n", "RestrictAddressFamilies=", "SystemCallFilter=@system-service",
            "MemoryDenyWriteExecute=yes",
        ] {
            #expect(unit.contains(directive), "\(directive) missing")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-unit-verify-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // verify checks that ExecStart exists: point it at the binary this build made.
        for name in ["ipnd.service", "ipnd-backup.service", "ipnd-backup.timer"] {
            let text = try String(contentsOf: repository.appendingPathComponent("deploy/\(name)"), encoding: .utf8)
                .replacingOccurrences(of: "/usr/local/bin/ipnd", with: ipndBinary.path)
            try Data(text.utf8).write(to: directory.appendingPathComponent(name))
        }
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["systemd-analyze", "verify"] + ["ipnd.service", "ipnd-backup.service", "ipnd-backup.timer"]
            .map { directory.appendingPathComponent($0).path }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = errors
        try process.run()
        process.waitUntilExit()
        let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(output)")
        #expect(output.isEmpty, "\(output)")
    }
}

/// What a backup copy holds, read synchronously.
struct BackupFacts {
    let integrity: String?
    let notifications: Int
    let transitions: Int
    let orders: Int
    let appliedWithoutTransition: Int
    let journalMode: String?

    init(path: String) throws {
        let queue = try DatabaseQueue(path: path)
        (integrity, notifications, transitions, orders, appliedWithoutTransition, journalMode) = try queue.inDatabase { db in
            (
                try String.fetchOne(db, sql: "PRAGMA integrity_check"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications") ?? -1,
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM transitions") ?? -1,
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM orders") ?? -1,
                try Int.fetchOne(db, sql: """
                    SELECT COUNT(*) FROM notifications n
                    WHERE n.verdict = 'applied' AND NOT EXISTS (SELECT 1 FROM transitions t WHERE t.notification_id = n.id)
                    """) ?? -1,
                try String.fetchOne(db, sql: "PRAGMA journal_mode")
            )
        }
    }
}

/// Runs blocking `work` on a new thread and returns its result.
func onDedicatedThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.start()
    }
}
