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
import IPNTestSupport
@testable import IPNStore
import Testing

/// Runs a command (looked up on PATH, output discarded), returning its exit status, or -1 when
/// it could not start or was killed by a signal. `ChildProcess` and a wait on its own pid, not
/// Foundation's `Process`: a 2-core CI run once hung in `Process.waitUntilExit` for a `mount` on
/// the cooperative pool, and the pool's other thread then starved the test whose pipe reader
/// needed it.
@discardableResult
func run(_ arguments: [String]) -> Int32 {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return -1 }
    process.waitUntilExit()
    return process.endedBySignal ? -1 : process.terminationStatus
}

/// Whether this machine lets tests mount a small tmpfs (root with CAP_SYS_ADMIN).
let canMount: Bool = {
    guard getuid() == 0 else { return false }
    let probe = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-mount-probe-\(UUID().uuidString)")
    guard (try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)) != nil,
        run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", probe.path]) == 0
    else { return false }
    run(["umount", probe.path])
    return true
}()

@Suite("The store cannot commit: 503, nothing acknowledged, nothing half-written")
struct StoreFailureTests {
    @Test("store made read-only mid-run (SQLite query_only): 503, no ack; the next delivery after recovery is applied",
          arguments: [1, 256])
    func readOnlyMidRun(maxBatch: Int) async throws {
        let daemon = try await TestDaemon.start(maxBatch: maxBatch)
        let first = UnlimintRequests.body(order: "RO-1", id: "1", status: "COMPLETED")
        #expect(try await daemon.post("/ipn/unlimint", body: first, headers: UnlimintRequests.headers(for: first)).status == 200)

        try await daemon.daemon.sqliteStore!.database.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = ON") }
        let second = UnlimintRequests.body(order: "RO-2", id: "2", status: "COMPLETED")
        let refused = try await daemon.post("/ipn/unlimint", body: second, headers: UnlimintRequests.headers(for: second))
        #expect(refused.status == 503)
        #expect(refused.text != "OK")
        #expect(refused.headers["Retry-After"] == ["30"])
        // The log line says which notification was refused, for whoever watches the 503s.
        #expect(daemon.logs.captured.contains {
            $0.contains("notification not stored") && $0.contains("order_ref=RO-2") && $0.contains("status=503")
                && $0.contains("latency_ms=")
        })
        // A 503 is a provider request like any other in the latency histogram.
        let metrics = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        #expect(metrics.value("ipnd_request_duration_seconds_count", ["provider": "unlimint"]) == 2)
        #expect(metrics.value("ipnd_store_unavailable_total", ["provider": "unlimint"]) == 1)
        #expect(try await daemon.get("/readyz").status == 503)
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications") == 1)
        #expect(try daemon.orderState("RO-2") == nil)

        try await daemon.daemon.sqliteStore!.database.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = OFF") }
        let retried = try await daemon.post("/ipn/unlimint", body: second, headers: UnlimintRequests.headers(for: second))
        #expect(retried.status == 200)
        #expect(retried.text == "OK")
        #expect(try daemon.orderState("RO-2") == "paid")
        #expect(try daemon.verdicts(orderRef: "RO-2") == ["applied"])
        #expect(try await daemon.get("/readyz").status == 200)
        try await daemon.stop()
    }

    @Test("the filesystem under the store fills up under load: 503 and no ack for what was not stored; after space is freed, every re-sent delivery is applied once; integrity ok",
          .enabled(if: canMount, "needs root to mount a size-limited filesystem"),
          arguments: SmallFilesystem.Kind.available)
    func filesystemFull(kind: SmallFilesystem.Kind) async throws {
        let filesystem = try #require(SmallFilesystem(kind), "cannot mount a \(kind)")
        defer { filesystem.unmount() }

        let daemon = try await TestDaemon.start(storeDirectory: filesystem.mountPoint)
        let first = UnlimintRequests.body(order: "FS-0", id: "0", status: "COMPLETED")
        #expect(try await daemon.post("/ipn/unlimint", body: first, headers: UnlimintRequests.headers(for: first)).status == 200)

        // 40 deliveries at once, each with a 16 KB field (kept in the raw body) so the WAL must
        // grow: the 256 KB left take the first few, then the filesystem is full.
        filesystem.fill(leaving: 262_144)
        let padding = String(repeating: "p", count: 16_384)
        let bodies = (1...40).map { index in
            Array(#"{"callback_time":"2026-11-21T09:30:06.828Z","note":"\#(padding)","merchant_order":{"id":"FS-\#(index)"},"payment_data":{"id":"\#(index)","status":"COMPLETED","amount":6.03,"currency":"USD"}}"#.utf8)
        }
        func deliverAll(_ indices: [Int]) async throws -> [Int: TestDaemon.Answer] {
            try await withThrowingTaskGroup(of: (Int, TestDaemon.Answer).self) { group in
                for index in indices {
                    group.addTask {
                        let body = bodies[index]
                        return (index, try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body)))
                    }
                }
                return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
        }
        let whileFull = try await deliverAll(Array(bodies.indices))
        let acked = whileFull.filter { $0.value.status == 200 }.map(\.key)
        let refused = whileFull.filter { $0.value.status == 503 }.map(\.key)
        #expect(acked.count + refused.count == bodies.count, "only 200 or 503: \(whileFull.values.map(\.status))")
        #expect(!refused.isEmpty, "the filesystem never filled up")
        #expect(!acked.isEmpty, "the filesystem was full before the first delivery")
        for index in refused {
            #expect(whileFull[index]?.text != "OK")
            #expect(whileFull[index]?.headers["Retry-After"] == ["30"])
        }
        // Acknowledged means stored; refused means nothing of it is.
        for index in acked {
            #expect(try daemon.orderState("FS-\(index + 1)") == "paid", "acknowledged FS-\(index + 1) not stored")
        }
        for index in refused {
            #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE order_ref = ?", ["FS-\(index + 1)"]) == 0)
            #expect(try daemon.orderState("FS-\(index + 1)") == nil)
        }

        filesystem.free()
        // The provider re-sends what was refused (and, here, what was acknowledged too).
        var resent = try await deliverAll(Array(bodies.indices))
        // As a provider does, again after a 503: the first commits after the space came back
        // may still meet a busy disk past the busy timeout.
        for _ in 0..<3 where resent.values.contains(where: { $0.status == 503 }) {
            try await Task.sleep(for: .seconds(1))
            resent.merge(try await deliverAll(resent.filter { $0.value.status == 503 }.map(\.key))) { $1 }
        }
        #expect(resent.values.allSatisfy { $0.status == 200 && $0.text == "OK" },
                "\(resent.values.map(\.status)); \(daemon.logs.captured.filter { $0.contains("level=error") }.suffix(3))")
        #expect(try await daemon.get("/readyz").status == 200)
        for index in bodies.indices {
            let verdicts = try daemon.verdicts(orderRef: "FS-\(index + 1)")
            #expect(verdicts == (acked.contains(index) ? ["applied", "duplicate"] : ["applied"]), "FS-\(index + 1): \(verdicts)")
        }
        #expect(try daemon.count("SELECT COUNT(*) FROM transitions") == bodies.count + 1)
        #expect(try daemon.count("SELECT COUNT(*) FROM orders WHERE state = 'paid'") == bodies.count + 1)
        let integrity = try daemon.query { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
        #expect(integrity == "ok")
        try await daemon.stop()
        print("full disk (\(kind)): \(acked.count) acknowledged and \(refused.count) refused while full; all 40 applied after")
    }

    /// Posts an Unlimint payment for `order` while another connection holds the store's write
    /// lock for `lockSeconds`; returns the answer and how long it took, once the lock is released.
    static func paymentWhileLocked(
        _ daemon: TestDaemon, order: String, lockSeconds: Double
    ) async throws -> (answer: TestDaemon.Answer, waited: Duration) {
        let release = try await holdStoreWriteLock(path: daemon.config.store.path, seconds: lockSeconds)
        let body = UnlimintRequests.body(order: order, id: order, status: "COMPLETED")
        let started = ContinuousClock.now
        let answer = try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body))
        let waited = ContinuousClock.now - started
        await release.value
        return (answer, waited)
    }

    @Test("stopped while another process holds the write lock: a clean stop with a warning, nothing committed lost")
    func stopUnderForeignLock() async throws {
        let daemon = try await TestDaemon.start()
        try await daemon.deliver("unlimint", order: "SL-1", status: "COMPLETED")
        // Held until the daemon has stopped, past the store's 5 s busy timeout: the final
        // checkpoint cannot run.
        let stopped = Locked(false)
        let release = try await holdStoreWriteLock(path: daemon.config.store.path, seconds: 60, release: stopped)
        defer { stopped.withLock { $0 = true } }
        try await daemon.stop()  // used to throw "cannot close: database is locked", and serve exited 1
        stopped.withLock { $0 = true }
        #expect(daemon.logs.captured.contains { $0.contains("level=warning") && $0.contains("without its final checkpoint") },
                "\(daemon.logs.captured.suffix(5))")
        #expect(daemon.logs.captured.contains { $0.contains("msg=stopped") })
        await release.value
        #expect(try daemon.orderState("SL-1") == "paid")
    }

    @Test("another connection holds the write lock for less than the busy timeout: the notification waits, then is applied and acknowledged")
    func briefWriteLock() async throws {
        let daemon = try await TestDaemon.start()
        let (answer, waited) = try await Self.paymentWhileLocked(daemon, order: "LK-1", lockSeconds: 1.5)
        #expect(answer.status == 200 && answer.text == "OK", "\(answer.status) \(answer.text)")
        #expect(waited >= .milliseconds(1000), "answered after \(waited): the lock did not hold the writer")
        #expect(try daemon.verdicts(orderRef: "LK-1") == ["applied"])
        try await daemon.stop()
    }

    @Test("a write lock held past the request deadline: a request that arrived in time waits for its commit and is acknowledged, not cut off with 408")
    func writeLockPastDeadline() async throws {
        // request_timeout_seconds bounds a request's arrival (product.md section 2), not its
        // wait for the store: that ends in the acknowledgement, or in 503 at the busy timeout.
        let daemon = try await TestDaemon.start(serverYAML: "  request_timeout_seconds: 1")
        let (answer, waited) = try await Self.paymentWhileLocked(daemon, order: "LK-2", lockSeconds: 2.5)
        #expect(answer.status == 200 && answer.text == "OK", "\(answer.status) \(answer.text)")
        #expect(waited >= .milliseconds(2000), "answered after \(waited): the lock did not hold the writer")
        #expect(try daemon.verdicts(orderRef: "LK-2") == ["applied"])
        #expect(!daemon.logs.captured.contains { $0.contains("request not received in time") })
        try await daemon.stop()
    }

    @Test("a write lock held past the busy timeout: what is answered while it is held is 503, what commits after it goes is acknowledged; never 408; the retries apply each once")
    func writeLockPastBusyTimeout() async throws {
        let daemon = try await TestDaemon.start(serverYAML: "  request_timeout_seconds: 1")
        // The first request pays for one-time set-up; not one of those timed.
        let warmUp = UnlimintRequests.body(order: "LK-3-warm", id: "3-warm", status: "COMPLETED")
        #expect(try await daemon.post("/ipn/unlimint", body: warmUp, headers: UnlimintRequests.headers(for: warmUp)).status == 200)
        // 9 s: the first batch gives up at the 5 s busy timeout with a wide margin, and a later
        // one may wait out the lock and commit.
        let lockSeconds = 9.0
        let locked = ContinuousClock.now
        let release = try await holdStoreWriteLock(path: daemon.config.store.path, seconds: lockSeconds)
        let bodies = (0..<3).map { UnlimintRequests.body(order: "LK-3-\($0)", id: "3-\($0)", status: "COMPLETED") }
        let answers = try await withThrowingTaskGroup(of: (Int, Int, Duration).self) { group in
            for (index, body) in bodies.enumerated() {
                group.addTask {
                    let status = try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body)).status
                    return (index, status, ContinuousClock.now - locked)
                }
            }
            return try await group.reduce(into: [Int: (status: Int, at: Duration)]()) { $0[$1.0] = ($1.1, $1.2) }
        }
        await release.value
        let held = Duration.seconds(lockSeconds - 0.2)
        #expect(answers.values.allSatisfy { $0.status == 503 || $0.status == 200 }, "\(answers)")
        #expect(answers.values.allSatisfy { $0.at >= held || $0.status == 503 }, "acknowledged while the lock was held: \(answers)")
        #expect(answers.values.contains { $0.at < held }, "nothing was answered while the lock was held: \(answers)")
        for (index, answer) in answers {
            let stored = try daemon.verdicts(orderRef: "LK-3-\(index)")
            #expect(stored == (answer.status == 200 ? ["applied"] : []), "answered \(answer), stored \(stored)")
        }
        // The providers' retries: what got 503 is applied now, what was acknowledged is a duplicate.
        for (index, body) in bodies.enumerated() {
            let retried = try await daemon.post("/ipn/unlimint", body: body, headers: UnlimintRequests.headers(for: body))
            #expect(retried.status == 200)
            #expect(try daemon.verdicts(orderRef: "LK-3-\(index)") == (answers[index]?.status == 200 ? ["applied", "duplicate"] : ["applied"]))
        }
        try await daemon.stop()
    }
}

/// Holds the store's write lock (`BEGIN IMMEDIATE`) from a connection of its own, as an
/// operator's `sqlite3` session would, for `seconds` or until `release` is set, on a thread of
/// its own. Returns once the lock is held; awaiting the returned task waits for its release.
func holdStoreWriteLock(path: String, seconds: Double, release: Locked<Bool>? = nil) async throws -> Task<Void, Never> {
    let queue = try DatabaseQueue(path: path)
    let (held, signalHeld) = AsyncStream<Void>.makeStream()
    let released = Task {
        await onDedicatedThread {
            defer { signalHeld.finish() }  // also when the lock could not be taken: the checks then fail
            try? queue.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                signalHeld.yield()
                let until = Date().addingTimeInterval(seconds)
                while Date() < until, release?.withLock({ $0 }) != true {
                    Thread.sleep(forTimeInterval: 0.01)
                }
                try db.execute(sql: "COMMIT")
            }
        }
    }
    for await _ in held { break }
    return released
}

/// A small filesystem mounted for one test: a size-limited tmpfs, or an ext4 image on a loop
/// device (a real block filesystem, with its own way of running out of space).
struct SmallFilesystem {
    enum Kind: String, CaseIterable, CustomStringConvertible {
        case tmpfs
        case ext4Image = "ext4 image"
        var description: String { rawValue }

        /// tmpfs where mounting works; the ext4 image too where loop devices and mkfs.ext4 do.
        static let available: [Kind] = {
            guard canMount else { return [] }
            guard let probe = SmallFilesystem(.ext4Image) else { return [.tmpfs] }
            probe.unmount()
            return [.tmpfs, .ext4Image]
        }()
    }

    let mountPoint: URL

    init?(_ kind: Kind) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-full-\(UUID().uuidString)")
        mountPoint = root.appendingPathComponent("mnt")
        guard (try? FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)) != nil else { return nil }
        switch kind {
        case .tmpfs:
            guard run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mountPoint.path]) == 0 else { return nil }
        case .ext4Image:
            let image = root.appendingPathComponent("disk.img")
            guard run(["dd", "if=/dev/zero", "of=\(image.path)", "bs=1M", "count=16"]) == 0,
                run(["mkfs.ext4", "-q", "-F", image.path]) == 0,
                run(["mount", "-o", "loop", image.path, mountPoint.path]) == 0
            else {
                try? FileManager.default.removeItem(at: root)
                return nil
            }
        }
    }

    private var filler: String { mountPoint.appendingPathComponent("filler").path }

    /// Writes until the filesystem refuses (ENOSPC: dd failing is the point), then frees
    /// `leaving` bytes so that what is written next fills it up.
    func fill(leaving reserve: Int = 0) {
        let reservePath = mountPoint.appendingPathComponent("reserve").path
        if reserve > 0 { run(["dd", "if=/dev/zero", "of=\(reservePath)", "bs=\(reserve)", "count=1"]) }
        for blockSize in ["64k", "4k", "512"] {
            run(["dd", "if=/dev/zero", "of=\(filler)-\(blockSize)", "bs=\(blockSize)"])
        }
        try? FileManager.default.removeItem(atPath: reservePath)
    }

    func free() {
        for blockSize in ["64k", "4k", "512"] { try? FileManager.default.removeItem(atPath: "\(filler)-\(blockSize)") }
        run(["sync"])
    }

    func unmount() {
        run(["umount", "-l", mountPoint.path])
        try? FileManager.default.removeItem(at: mountPoint.deletingLastPathComponent())
    }
}
