import Foundation
@testable import IPNServer
import Testing

/// Out of file descriptors: more connections than `LimitNOFILE=` (issue 39).
@Suite("Out of file descriptors (issue 39)")
struct DescriptorLimitTests {
    static let healthz = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)

    @Test("more connections than RLIMIT_NOFILE allows: the failed accepts are logged naming the limit, counted in /metrics, and the listener serves again once they close")
    func acceptFailures() async throws {
        let limit = 64
        let installation = try UnitLikeInstallation()
        let daemon = try DaemonProcess(
            configPath: installation.configPath, environment: installation.environment(),
            launcher: ["/bin/sh", "-c", "ulimit -n \(limit) && exec \"$0\" \"$@\""])
        let ports = try await daemon.waitUntilListening()
        #expect(await RawHTTP.exchange(port: ports.provider, Self.healthz).status == 200)

        // Twice the limit: the kernel completes every handshake (the listen backlog is 256), the
        // daemon accepts until its descriptors run out.
        let held = await onDedicatedThread { (0..<(2 * limit)).compactMap { _ in RawHTTP.connectLoopback(port: ports.provider) } }
        #expect(held.count == 2 * limit)
        let failure = "accept failed: too many open files (RLIMIT_NOFILE \(limit))"
        let logged = await Self.waitFor(seconds: 10) { daemon.logLines.first { $0.contains(failure) } }
        #expect(logged?.contains("listener=server") == true, "\(daemon.logLines.suffix(5))")
        #expect(logged?.contains("level=error") == true, "\(logged ?? "")")
        // Meanwhile a health check waits in the listen queue, unanswered.
        #expect(await RawHTTP.exchange(port: ports.provider, Self.healthz, timeout: 1.5).status == nil)
        // NIO retries every second; the log says it once a minute.
        try await Task.sleep(for: .seconds(2))
        #expect(daemon.logLines.filter { $0.contains("accept failed") }.count == 1, "\(daemon.logLines.suffix(5))")

        for fd in held { close(fd) }
        let recovered = await Self.waitFor(seconds: 15) { () -> RawHTTP.Answer? in
            let answer = RawHTTP.blockingHealthz(port: ports.provider)
            return answer.status == 200 ? answer : nil
        }
        #expect(recovered?.text == "ok\n")
        #expect(daemon.logLines.contains { $0.contains("accepting connections again") && $0.contains("listener=server") },
                "\(daemon.logLines.suffix(5))")

        let metrics = await RawHTTP.exchange(port: ports.ops, Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        #expect(metrics.status == 200)
        #expect(metrics.text.contains("# HELP ipnd_accept_failures_total "))
        // About one a second while the connections were held (4 s or so): the listener paused
        // between attempts instead of calling accept(2) again at once, hundreds of thousands of times.
        let server = Self.sample(metrics.text, #"ipnd_accept_failures_total{listener="server"}"#)
        #expect((2...30).contains(server ?? 0), "\(String(describing: server))")
        #expect(Self.sample(metrics.text, #"ipnd_accept_failures_total{listener="ops"}"#) == 0)

        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: 30) == 0, "\(daemon.logLines.suffix(5))")
    }

    @Test("the first failure is logged at once, then one line a minute counting those since; recovery is logged after a logged failure only")
    func rateLimit() {
        var log = AcceptFailureLog()
        let start = ContinuousClock.now
        #expect(log.failed(at: start) == 1)
        #expect(log.failed(at: start + .seconds(1)) == nil)
        #expect(log.failed(at: start + .seconds(59)) == nil)
        #expect(log.accepted() == 3)
        #expect(log.accepted() == nil)
        // Flapping at the limit within the minute: counted, not logged, no recovery line.
        #expect(log.failed(at: start + .seconds(70)) == 3)
        #expect(log.accepted() == 1)
        #expect(log.failed(at: start + .seconds(80)) == nil)
        #expect(log.accepted() == nil)
        #expect(log.failed(at: start + .seconds(131)) == 2)
    }

    @Test("the problem names the limit the process ran into")
    func problems() {
        #expect(AcceptProblem(errno: EMFILE) == .processDescriptors(limit: AcceptProblem.descriptorLimit()))
        #expect(AcceptProblem.processDescriptors(limit: 256).description == "too many open files (RLIMIT_NOFILE 256)")
        #expect(AcceptProblem(errno: ENFILE)?.description == "too many open files in the system (fs.file-max)")
        #expect(AcceptProblem(errno: ENOMEM) == .kernelMemory && AcceptProblem(errno: ENOBUFS) == .kernelMemory)
        // A client that gave up before its connection was accepted is no failure of ipnd's.
        #expect(AcceptProblem(errno: ECONNABORTED) == nil)
    }

    /// The value of the series `name` (with its labels) in a Prometheus text exposition.
    static func sample(_ text: String, _ name: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.dropFirst(name.count + 1)) }
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
