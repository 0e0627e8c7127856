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
@testable import IPNServer
import Testing

/// More connections than `LimitNOFILE=` allows (issue 39).
@Suite("Connections past the descriptor limit (issue 39)")
struct DescriptorLimitTests {
    static let healthz = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
    static let metrics = Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)

    @Test("more connections than RLIMIT_NOFILE allows: the listener stops at its limit, says so naming it, counts it, and serves again once they close")
    func connectionsPastTheLimit() async throws {
        let descriptors = 128
        let limit = try #require(ConnectionLimit.limits(descriptors: UInt64(descriptors)).server)
        let installation = try UnitLikeInstallation()
        let daemon = try DaemonProcess(
            configPath: installation.configPath, environment: installation.environment(),
            launcher: ["/bin/sh", "-c", "ulimit -n \(descriptors) && exec \"$0\" \"$@\""])
        let ports = try await daemon.waitUntilListening()
        #expect(await RawHTTP.exchange(port: ports.provider, Self.healthz).status == 200)

        // More connections than the process has descriptors: the kernel completes every handshake
        // (the listen backlog is 256), the daemon accepts up to its limit.
        let held = await onDedicatedThread { (0..<descriptors).compactMap { _ in RawHTTP.connectLoopback(port: ports.provider) } }
        #expect(held.count == descriptors)
        let stopped = "not accepting connections: \(limit) open, this listener's limit (RLIMIT_NOFILE \(descriptors) less"
        let logged = await Self.waitFor(seconds: 10) { daemon.logLines.first { $0.contains(stopped) } }
        #expect(logged?.contains("listener=server") == true && logged?.contains("level=error") == true,
                "\(daemon.logLines.suffix(5))")
        // A health check on the provider port waits in the listen queue; the ops listener, with a
        // share of its own, answers meanwhile, and its metrics show why.
        #expect(await RawHTTP.exchange(port: ports.provider, Self.healthz, timeout: 1.5).status == nil)
        let during = await RawHTTP.exchange(port: ports.ops, Self.metrics)
        #expect(during.status == 200)
        #expect(during.text.contains("# HELP ipnd_accept_paused_total "))
        #expect(MetricsText.sample(during.text, "ipnd_connections_limit", ["listener": "server"]) == Double(limit))
        #expect((Double(limit)...Double(limit + 4)).contains(MetricsText.sample(during.text, "ipnd_connections", ["listener": "server"]) ?? 0),
                "\(during.text)")
        #expect((MetricsText.sample(during.text, "ipnd_accept_paused_total", ["listener": "server"]) ?? 0) >= 1)
        // It never ran out: no accept failed, and nothing died for want of a descriptor.
        #expect(MetricsText.sample(during.text, "ipnd_accept_failures_total", ["listener": "server"]) == 0)
        try await Task.sleep(for: .seconds(1))
        #expect(daemon.logLines.filter { $0.contains("not accepting connections") }.count == 1, "\(daemon.logLines.suffix(5))")
        #expect(!daemon.logLines.contains { $0.contains("accepting connections again") }, "\(daemon.logLines.suffix(5))")

        for fd in held { close(fd) }
        let recovered = await Self.waitFor(seconds: 15) { () -> RawHTTP.Answer? in
            let answer = RawHTTP.blockingHealthz(port: ports.provider)
            return answer.status == 200 ? answer : nil
        }
        #expect(recovered?.text == "ok\n")
        #expect(daemon.logLines.contains { $0.contains("accepting connections again") && $0.contains("listener=server") },
                "\(daemon.logLines.suffix(5))")
        let after = await RawHTTP.exchange(port: ports.ops, Self.metrics)
        #expect((MetricsText.sample(after.text, "ipnd_connections", ["listener": "server"]) ?? .infinity) < Double(limit))

        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: 30) == 0, "\(daemon.logLines.suffix(5))")
    }

    @Test("the listeners share the descriptors the process does not keep for itself; the ops listener has a small share of its own")
    func limits() {
        #expect(ConnectionLimit.limits(descriptors: 65536) == (61376, 64))
        #expect(ConnectionLimit.limits(descriptors: 1024) == (896, 64))
        #expect(ConnectionLimit.limits(descriptors: 128) == (48, 16))
        // A small limit keeps at most half for itself (and wants raising).
        #expect(ConnectionLimit.limits(descriptors: 64) == (24, 8))
        #expect(ConnectionLimit.limits(descriptors: nil) == (nil, nil))
    }

    @Test("the first stop is logged at once, then one line a minute counting those since; recovery is logged after a logged stop only")
    func rateLimit() {
        var log = ListenerPauseLog()
        let start = ContinuousClock.now
        #expect(log.paused(at: start) == 1)
        #expect(log.paused(at: start + .seconds(1)) == nil)
        #expect(log.paused(at: start + .seconds(59)) == nil)
        #expect(log.accepted() == 3)
        #expect(log.accepted() == nil)
        // Flapping at the limit within the minute: counted, not logged, no recovery line.
        #expect(log.paused(at: start + .seconds(70)) == 3)
        #expect(log.accepted() == 1)
        #expect(log.paused(at: start + .seconds(80)) == nil)
        #expect(log.accepted() == nil)
        #expect(log.paused(at: start + .seconds(131)) == 2)
    }

    @Test("a failed accept names the limit the process ran into")
    func problems() {
        #expect(AcceptProblem(errno: EMFILE) == .processDescriptors(limit: ConnectionLimit.descriptorLimit()))
        #expect(AcceptProblem.processDescriptors(limit: 256).description == "too many open files (RLIMIT_NOFILE 256)")
        #expect(AcceptProblem(errno: ENFILE)?.description == "too many open files in the system (fs.file-max)")
        #expect(AcceptProblem(errno: ENOMEM) == .kernelMemory && AcceptProblem(errno: ENOBUFS) == .kernelMemory)
        // A client that gave up before its connection was accepted is no failure of ipnd's.
        #expect(AcceptProblem(errno: ECONNABORTED) == nil)
    }

    /// Polls `probe` on a thread of its own every 100 ms until it returns a value or `seconds` pass.
    static func waitFor<T: Sendable>(seconds: Double, _ probe: @escaping @Sendable () -> T?) async -> T? {
        await onDedicatedThread {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if let value = probe() { return value }
                usleep(100_000)
            }
            return probe()
        }
    }
}

extension RawHTTP {
    /// `GET /healthz` on a connection of its own, waiting up to 2 s (call on a dedicated thread).
    static func blockingHealthz(port: Int) -> Answer {
        guard let fd = connectLoopback(port: port) else { return Answer() }
        defer { close(fd) }
        sendAll(fd, DescriptorLimitTests.healthz)
        return readAnswer(fd, timeout: 2)
    }
}
