import Foundation
import GRDB
@testable import IPNStore
import Testing

/// Runs a command, returning its exit status.
@discardableResult
func run(_ arguments: [String]) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return -1 }
    process.waitUntilExit()
    return process.terminationStatus
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

        try await daemon.daemon.store.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = ON") }
        let second = UnlimintRequests.body(order: "RO-2", id: "2", status: "COMPLETED")
        let refused = try await daemon.post("/ipn/unlimint", body: second, headers: UnlimintRequests.headers(for: second))
        #expect(refused.status == 503)
        #expect(refused.text != "OK")
        #expect(refused.headers["Retry-After"] == ["30"])
        #expect(try await daemon.get("/readyz").status == 503)
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications") == 1)
        #expect(try daemon.orderState("RO-2") == nil)

        try await daemon.daemon.store.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = OFF") }
        let retried = try await daemon.post("/ipn/unlimint", body: second, headers: UnlimintRequests.headers(for: second))
        #expect(retried.status == 200)
        #expect(retried.text == "OK")
        #expect(try daemon.orderState("RO-2") == "paid")
        #expect(try daemon.verdicts(orderRef: "RO-2") == ["applied"])
        #expect(try await daemon.get("/readyz").status == 200)
        try await daemon.stop()
    }

    @Test("the filesystem under the store fills up mid-run: 503; after space is freed, the re-sent delivery is applied",
          .enabled(if: canMount, "needs root to mount a size-limited tmpfs"))
    func filesystemFull() async throws {
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-full-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        try #require(run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint.path]) == 0)
        defer { run(["umount", "-l", mountPoint.path]) }

        let daemon = try await TestDaemon.start(storeDirectory: mountPoint)
        let first = UnlimintRequests.body(order: "FS-1", id: "1", status: "COMPLETED")
        #expect(try await daemon.post("/ipn/unlimint", body: first, headers: UnlimintRequests.headers(for: first)).status == 200)

        let filler = mountPoint.appendingPathComponent("filler").path
        run(["dd", "if=/dev/zero", "of=\(filler)", "bs=64k"])  // fails with ENOSPC once the disk is full: that is the point
        let second = UnlimintRequests.body(order: "FS-2", id: "2", status: "COMPLETED")
        let refused = try await daemon.post("/ipn/unlimint", body: second, headers: UnlimintRequests.headers(for: second))
        #expect(refused.status == 503)
        #expect(refused.text != "OK")

        try FileManager.default.removeItem(atPath: filler)
        let retried = try await daemon.post("/ipn/unlimint", body: second, headers: UnlimintRequests.headers(for: second))
        #expect(retried.status == 200)
        #expect(try daemon.orderState("FS-2") == "paid")
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE order_ref = 'FS-2'") == 1)
        #expect(try daemon.count("SELECT COUNT(*) FROM transitions") == 2)
        let integrity = try daemon.query { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
        #expect(integrity == "ok")
        try await daemon.stop()
    }
}
