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
import IPNStore
@testable import IPNStoreSQLite
import Testing

/// A store in a fresh temporary file.
struct TemporaryStore {
    let path: String
    let store: SQLiteDatabase
    let inbox: SQLiteStore

    init(maxBatch: Int, busyTimeout: TimeInterval = 5) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("ipnd.sqlite").path
        store = try SQLiteDatabase(path: path, busyTimeout: busyTimeout)
        inbox = SQLiteStore(database: store, maxBatch: maxBatch)
    }

    func order(_ ref: String, provider: String = "test") async throws -> OrderDetail? {
        try await store.read { db in try Queries.order(db, provider: provider, account: "default", orderRef: ref) }
    }

    func count(_ sql: String) async throws -> Int {
        try await store.read { db in try Int.fetchOne(db, sql: sql) ?? -1 }
    }
}

func request(provider: String = "test", body: String = "{}") -> ReceivedRequest {
    ReceivedRequest(provider: provider, account: "default", receivedAt: "2026-11-21T00:00:00.000Z", clientIP: "127.0.0.1",
                    target: "/ipn/\(provider)", headers: "[]", body: Array(body.utf8))
}

func notification(
    _ key: String, _ effect: NotificationEffect, order: String? = "O1", kind: NotificationKind = .payment,
    amount: Money? = Money(minor: 500, currency: "USD"), link: PaymentLink? = nil
) -> VerifiedNotification {
    VerifiedNotification(kind: kind, orderRef: order, providerTxnID: "T-\(key)", dedupKey: key, providerStatus: key,
                         effect: effect, amount: amount, link: link)
}

/// Both write paths: one transaction per notification, and group commit.
let commitPaths = [1, 256]

@Suite("The one write path, on both commit paths")
struct InboxTests {
    @Test("since: exactly the rows that new, whether few (ids bounded through the index) or many, in any id order")
    func sinceLists() async throws {
        let store = try TemporaryStore(maxBatch: 256)
        let count = Queries.sinceBoundRows + 50
        try await store.store.pool.write { db in
            let insert = try db.makeStatement(sql: """
                INSERT INTO notifications (provider, account, received_at, verdict, client_ip, target, headers, body)
                VALUES (?, 'default', ?, 'rejected', '127.0.0.1', '/ipn/x', '[]', x'')
                """)
            for index in 0..<count {
                // One per second from 2026-01-01, so the last 10 050 seconds hold every row.
                let time = Timestamp.format(epochMilliseconds: (1_767_225_600 + Int64(index)) * 1000)
                try insert.execute(arguments: [index % 7 == 0 ? "citcon" : "unlimint", time])
            }
            // A row received late but stored early: `since` must still find it.
            try db.execute(sql: "UPDATE notifications SET received_at = '2026-12-01T00:00:00.000Z' WHERE id = 1")
        }
        func list(_ filter: NotificationFilter) async throws -> [Int64] {
            try await store.store.read { db in try Queries.notifications(db, filter).map(\.id) }
        }
        #expect(try await list(NotificationFilter(since: "2026-11-01T00:00:00.000Z")) == [1])
        #expect(try await list(NotificationFilter(since: "2027-01-01T00:00:00.000Z")) == [])
        // Few rows that new: the last 20 seconds, citcon's among them.
        let recent = Timestamp.format(epochMilliseconds: (1_767_225_600 + Int64(count - 20)) * 1000)
        let isCitcon: (Int64) -> Bool = { ($0 - 1) % 7 == 0 }
        let last20: [Int64] = Array((Int64(count - 19)...Int64(count)).reversed())
        let expected: [Int64] = last20.filter(isCitcon) + [1]
        let few = try await list(NotificationFilter(provider: "citcon", since: recent))
        #expect(few == expected)
        // More rows that new than the bound takes: read without it, still exact.
        let all = try await list(NotificationFilter(provider: "citcon", since: "2026-01-01T00:00:00.000Z", limit: 100_000))
        let everyCitcon: [Int64] = Array((1...Int64(count)).reversed()).filter(isCitcon)
        #expect(all == everyCitcon)
    }

    @Test("a store migrated by a newer ipnd is refused by serve and by orders expect, naming the migration; reopened by its own version it opens")
    func newerSchemaRefused() async throws {
        let first = try TemporaryStore(maxBatch: 1)
        _ = try await first.inbox.record(.verified(request(), notification("paid", .transition(.paid))))
        try first.store.close()
        let queue = try DatabaseQueue(path: first.path)
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v9: from the future')")
        }
        try queue.close()
        #expect(throws: StoreError.self) { try SQLiteDatabase(path: first.path) }
        do {
            _ = try SQLiteDatabase(path: first.path)
        } catch {
            #expect(error.message == "the store was migrated by a newer ipnd (v9: from the future); "
                + "run that version, or restore a backup taken before the upgrade")
        }
        // Commands (`orders expect`, `deliveries retry`) write to the file themselves: they refuse
        // the newer store too, and write nothing.
        do {
            _ = try SQLiteDatabase(path: first.path, role: .command)
            Issue.record("a command opened a store migrated by a newer ipnd")
        } catch {
            #expect(error.message.hasPrefix("the store was migrated by a newer ipnd (v9: from the future)"))
        }
        let undo = try DatabaseQueue(path: first.path)
        try await undo.write { db in try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v9:%'") }
        try undo.close()
        let reopened = try SQLiteDatabase(path: first.path)
        #expect(try await reopened.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM orders") } == 1)
        try reopened.close()
    }

    @Test("under load jobs share commits; a job that finds the writer idle is committed alone")
    func sharedCommits() async throws {
        let base = try TemporaryStore(maxBatch: 256)
        let sizes = Locked<[Int]>([])
        let inbox = SQLiteStore(database: base.store, maxBatch: 256) { size, _, _ in
            sizes.withLock { $0.append(size) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<64 {
                group.addTask {
                    _ = try await inbox.record(.verified(request(), notification("G\(index)", .transition(.paid), order: "G\(index)")))
                }
            }
            try await group.waitForAll()
        }
        let concurrent = sizes.withLock { $0 }
        #expect(concurrent.reduce(0, +) == 64)
        #expect(concurrent.count < 64, "64 concurrent jobs should share commits, got batches \(concurrent)")

        let outcome = try await inbox.record(.verified(request(), notification("alone", .transition(.paid), order: "alone")))
        #expect(outcome.verdict == .applied)
        #expect(sizes.withLock { $0.last } == 1)
        #expect(try await base.count("SELECT count(*) FROM notifications WHERE verdict = 'applied'") == 65)
    }

    @Test("the WAL stays short: background passes and the writer's last copy, or the writer alone, start it over",
          arguments: [true, false])
    func checkpoints(background: Bool) async throws {
        let base = try TemporaryStore(maxBatch: 1)
        let results = Locked<[StoreError?]>([])
        let writer = GroupCommitWriter(
            store: base.store, maxBatch: 256, checkpointFrames: 32, restartFrames: 128, chaseFrames: 16,
            backgroundCheckpoints: background,
            checkpointObserver: { _, error in results.withLock { $0.append(error) } }
        )
        // 800 notifications with 4 KB bodies: at least 3.2 MB of WAL frames if nothing were copied
        // back, and SQLite's own automatic checkpoint (off while the writer's hook is installed)
        // would only start at 1000 frames, about 4 MB. Starting over at 128 frames keeps it
        // near 0.5 MB plus what is committed while the last passes run.
        let body = String(repeating: "x", count: 4096)
        for wave in 0..<40 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        let key = "W\(wave)-\(index)"
                        let entry = InboxEntry.verified(request(body: body), notification(key, .transition(.paid), order: key))
                        _ = try await writer.submit { tx in try Recorder.record(PreparedEntry(entry), in: tx) }
                    }
                }
                try await group.waitForAll()
            }
        }
        await writer.drain()
        let checkpoints = results.withLock { $0 }
        #expect(checkpoints.count > 5)
        #expect(checkpoints.allSatisfy { $0 == nil }, "checkpoint errors: \(checkpoints.compactMap { $0 })")
        let wal = try FileManager.default.attributesOfItem(atPath: base.path + "-wal")[.size] as? Int ?? -1
        #expect(wal > 0 && wal < 2_000_000, "the WAL grew to \(wal) bytes")
        #expect(try await base.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'applied'") == 800)
        let integrity = try await base.store.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
        #expect(integrity == "ok")
    }

    @Test("a reader holding the old log: checkpoints do not repeat after every commit, and the log starts over once it ends")
    func pinnedLog() async throws {
        let base = try TemporaryStore(maxBatch: 1)
        let checkpoints = Locked(0)
        let commits = Locked(0)
        let writer = GroupCommitWriter(
            store: base.store, maxBatch: 1, checkpointFrames: 32, restartFrames: 128, chaseFrames: 16,
            observer: { _, _, _ in commits.withLock { $0 += 1 } },
            checkpointObserver: { _, _ in checkpoints.withLock { $0 += 1 } }
        )
        func write(_ prefix: String, count: Int) async throws {
            for index in 0..<count {
                let key = "\(prefix)-\(index)"
                let entry = InboxEntry.verified(request(), notification(key, .transition(.paid), order: key))
                _ = try await writer.submit { tx in try Recorder.record(PreparedEntry(entry), in: tx) }
            }
        }
        try await write("before", count: 20)
        // A reader in the middle of a transaction keeps the frames it may read in the log.
        let reader = try DatabaseQueue(path: base.path)
        let release = DispatchSemaphore(value: 0)
        let reading = DispatchSemaphore(value: 0)
        let thread = Thread {
            try? reader.read { db in
                _ = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications")
                reading.signal()
                release.wait()
            }
        }
        thread.start()
        reading.wait()
        try await write("pinned", count: 300)
        await writer.drain()
        let pinnedFrames = base.store.walLength.frames
        let pinnedCommits = commits.withLock { $0 }
        let pinnedCheckpoints = checkpoints.withLock { $0 }
        #expect(pinnedFrames > 128, "the log should outgrow its restart length while held, at \(pinnedFrames)")
        // A pass and a try at the writer's copy per 32 new frames at most; not one per commit.
        #expect(pinnedCheckpoints <= 2 * Int(pinnedFrames) / 32 + 8,
                "\(pinnedCheckpoints) checkpoints for \(pinnedCommits) commits and \(pinnedFrames) frames")
        release.signal()
        try await write("after", count: 300)
        await writer.drain()
        #expect(base.store.walLength.frames < pinnedFrames, "the log should have started over once the reader left")
        #expect(try await base.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'applied'") == 620)
    }

    @Test("a pass that finds another checkpoint running copies nothing, and is not reported as a failure")
    func busyCheckpoint() async throws {
        let base = try TemporaryStore(maxBatch: 1)
        for index in 0..<5 {
            _ = try await base.inbox.record(.verified(request(), notification("b\(index)", .transition(.paid), order: "b\(index)")))
        }
        // One connection holds the write lock; a FULL checkpoint on a second takes the checkpoint
        // lock at once and waits for the first. A third connection's passive pass is then busy.
        let holder = try DatabaseQueue(path: base.path)
        var waiting = Configuration()
        waiting.busyMode = .timeout(10)
        let waiter = try DatabaseQueue(path: base.path, configuration: waiting)
        let passive = try DatabaseQueue(path: base.path)
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let waited = DispatchSemaphore(value: 0)
        Thread {
            try? holder.inTransaction(.immediate) { _ in
                holding.signal()
                release.wait()
                return .rollback
            }
        }.start()
        await blockingWait(holding)
        Thread {
            // The FULL checkpoint fails at once, without waiting, whenever it finds the third
            // connection's pass holding the checkpoint lock: it tries again until it holds it.
            let deadline = Date().addingTimeInterval(8)
            while (try? waiter.writeWithoutTransaction({ db in try db.checkpoint(.full) })) == nil, Date() < deadline {}
            waited.signal()
        }.start()
        var busy = false
        for _ in 0..<500 where !busy {
            do {
                _ = try await passive.writeWithoutTransaction { db in try db.checkpoint(.passive) }
                try await Task.sleep(for: .milliseconds(10))
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                busy = true
            }
        }
        #expect(busy, "the FULL checkpoint should hold the checkpoint lock")

        let reported = Locked<[StoreError?]>([])
        let copied = await onThread {
            BackgroundCheckpointer.checkpoint(on: passive, observer: { _, error in reported.withLock { $0.append(error) } })
        }
        release.signal()
        await blockingWait(waited)
        #expect(copied == nil)
        let errors = reported.withLock { $0 }
        #expect(errors.count == 1)
        #expect(errors.allSatisfy { $0 == nil }, "a busy pass was reported as \(errors.compactMap { $0 })")
        // The next pass copies what the busy one would have.
        let next = BackgroundCheckpointer.checkpoint(on: passive, observer: nil)
        #expect(next == Int32(base.store.walLength.frames))
    }

    @Test("the store runs in WAL mode with synchronous=FULL")
    func durability() async throws {
        let store = try TemporaryStore(maxBatch: 1)
        let journal = try await store.store.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(journal == "wal")
        // The writer's connection, which commits, and a reader's.
        let writing = try await store.store.pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(writing == 2, "the writer commits with synchronous=\(writing.map(String.init) ?? "?"), not FULL (2)")
        let reading = try await store.store.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(reading == 2)
        _ = try await store.inbox.record(.verified(request(), notification("x", .transition(.paid))))
        try store.store.close()
        // Reopening migrates nothing twice and keeps the data.
        let reopened = try SQLiteDatabase(path: store.path)
        let orders = try await reopened.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM orders") }
        #expect(orders == 1)
    }

    @Test("opening a store of an earlier version drops the creation transitions no notification caused, and nothing else")
    func migrationDropsCreationTransitions() async throws {
        let store = try TemporaryStore(maxBatch: 1)
        _ = try await store.inbox.record(.verified(request(), notification("x", .transition(.paid))))
        _ = try await store.inbox.setExpectation(provider: "test", account: "default", orderRef: "EXP-1",
                                                 amount: Money(minor: 100, currency: "USD"))
        try store.store.close()
        // What the earlier version wrote for an order an unknown status created.
        let queue = try DatabaseQueue(path: store.path)
        try await queue.write { db in
            try db.execute(sql: """
                INSERT INTO orders (provider, account, order_ref, state, created_at, updated_at)
                VALUES ('unlimint', 'default', 'OLD-1', 'pending', '2026-11-24T00:00:00Z', '2026-11-24T00:00:00Z');
                INSERT INTO transitions (order_id, from_state, to_state, at) VALUES (last_insert_rowid(), NULL, 'pending', '2026-11-24T00:00:00Z');
                DELETE FROM grdb_migrations WHERE identifier LIKE 'v2:%';
                """)
        }
        try queue.close()
        let reopened = try SQLiteDatabase(path: store.path)
        let left = try await reopened.read { db in
            try Row.fetchAll(db, sql: "SELECT from_state, to_state, notification_id IS NULL FROM transitions ORDER BY id").map {
                "\($0[0] as String? ?? "nil")->\($0[1] as String) \($0[2] as Bool ? "no notification" : "notification")"
            }
        }
        #expect(left == ["nil->paid notification", "nil->expected no notification"])
        try reopened.close()
    }

    @Test("opening a store of an earlier version links the redeliveries it left without their order, and nothing else")
    func migrationLinksWaitingDuplicates() async throws {
        let store = try TemporaryStore(maxBatch: 1)
        let refund = notification("refund", .refund(RefundInfo(refundID: "R1", amount: Money(minor: 4200, currency: "SGD"))),
                                  order: nil, kind: .refund, amount: Money(minor: 4200, currency: "SGD"), link: .requires("P1"))
        _ = try await store.inbox.record(.verified(request(), refund))
        let redelivery = try await store.inbox.record(.verified(request(), refund))
        // Still waiting: nothing to link it to.
        let stillWaiting = try await store.inbox.record(.verified(request(), notification(
            "other", .refund(RefundInfo(refundID: "R9", amount: Money(minor: 1, currency: "SGD"))),
            order: nil, kind: .refund, amount: Money(minor: 1, currency: "SGD"), link: .requires("P9"))))
        let stillWaitingAgain = try await store.inbox.record(.verified(request(), notification(
            "other", .refund(RefundInfo(refundID: "R9", amount: Money(minor: 1, currency: "SGD"))),
            order: nil, kind: .refund, amount: Money(minor: 1, currency: "SGD"), link: .requires("P9"))))
        #expect(stillWaiting.verdict == .unlinked)
        _ = try await store.inbox.record(.verified(request(), notification(
            "payment", .transition(.paid), order: "PAY-1", amount: Money(minor: 4200, currency: "SGD"), link: .registers("P1"))))
        try store.store.close()
        // What the earlier version left: the redelivery without its order, the migration not run.
        let queue = try DatabaseQueue(path: store.path)
        try await queue.write { db in
            try db.execute(sql: """
                UPDATE notifications SET order_id = NULL, order_ref = NULL WHERE id = \(redelivery.notificationID);
                DROP INDEX notifications_waiting_duplicates;
                DELETE FROM grdb_migrations WHERE identifier LIKE 'v3:%';
                """)
        }
        try queue.close()
        let reopened = try SQLiteDatabase(path: store.path)
        let rows = try await reopened.read { db in
            try Row.fetchAll(db, sql: "SELECT id, order_ref FROM notifications WHERE verdict = 'duplicate' ORDER BY id").map {
                "\($0[0] as Int64) \($0[1] as String? ?? "nil")"
            }
        }
        #expect(rows == ["\(redelivery.notificationID) PAY-1", "\(stillWaitingAgain.notificationID) nil"])
        try reopened.close()
    }

    @Test("a read-only store answers with an error and writes nothing; after recovery writes succeed", arguments: commitPaths)
    func storeFailure(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        try await store.store.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = ON") }
        await #expect(throws: StoreError.self) {
            try await store.inbox.record(.verified(request(), notification("a", .transition(.paid))))
        }
        await #expect(throws: StoreError.self) { try await store.inbox.heartbeat() }
        try await store.store.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = OFF") }
        #expect(try await store.count("SELECT COUNT(*) FROM notifications") == 0)
        #expect(try await store.inbox.record(.verified(request(), notification("a", .transition(.paid)))).verdict == .applied)
    }

    @Test("another connection holding the write lock past the busy timeout fails a whole batch at once, without a busy wait per job")
    func lockTimeoutFailsTheBatch() async throws {
        let attempts = Locked<[(size: Int, failed: Bool)]>([])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("ipnd.sqlite").path
        let store = try SQLiteDatabase(path: path, busyTimeout: 0.4)
        let inbox = SQLiteStore(database: store, maxBatch: 256, commitObserver: { size, _, failed in
            attempts.withLock { $0.append((size, failed)) }
        })
        // An operator's session holds the lock until every write below has given up, however
        // slowly this runs (a sanitizer build).
        let holder = try DatabaseQueue(path: path)
        let (held, signalHeld) = AsyncStream<Void>.makeStream()
        let releaseLock = DispatchSemaphore(value: 0)
        let lockReleased = DispatchSemaphore(value: 0)
        Thread {
            try? holder.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                signalHeld.yield()
                releaseLock.wait()
                try db.execute(sql: "COMMIT")
            }
            signalHeld.finish()
            lockReleased.signal()
        }.start()
        for await _ in held { break }
        let keys = ["a", "b", "c", "d"]
        // The first job finds the writer idle and waits on the lock alone; the other three queue
        // behind it and make a batch.
        async let first: Verdict? = try? await inbox.record(.verified(request(), notification(keys[0], .transition(.paid), order: keys[0]))).verdict
        try await Task.sleep(for: .milliseconds(150))
        let rest = await withTaskGroup(of: Verdict?.self) { group in
            for key in keys.dropFirst() {
                group.addTask { try? await inbox.record(.verified(request(), notification(key, .transition(.paid), order: key))).verdict }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let all = [await first] + rest
        let seen = attempts.withLock { $0 }
        let countWhileHeld = try await store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications") }
        releaseLock.signal()
        while lockReleased.wait(timeout: .now()) == .timedOut { try await Task.sleep(for: .milliseconds(20)) }
        #expect(all.allSatisfy { $0 == nil }, "committed while the lock was held: \(all)")
        #expect(countWhileHeld == 0)
        // Each job was tried once: a failed batch was not followed by a retry of each of its
        // jobs, every one waiting out the busy timeout again.
        #expect(seen.allSatisfy(\.failed) && seen.map(\.size).reduce(0, +) == keys.count, "commit attempts: \(seen)")
        #expect(seen.contains { $0.size > 1 }, "no batch was formed: \(seen)")
        for key in keys {
            #expect(try await inbox.record(.verified(request(), notification(key, .transition(.paid), order: key))).verdict == .applied)
        }
    }
}

func permutations<T>(of items: [T]) -> [[T]] {
    guard items.count > 1 else { return [items] }
    return items.indices.flatMap { index -> [[T]] in
        var rest = items
        let item = rest.remove(at: index)
        return permutations(of: rest).map { [item] + $0 }
    }
}

@Suite("Read queries on a large store")
struct QueryPlanTests {
    @Test("orders show reads the order, its transitions and its notifications through indexes, never a table scan")
    func orderDetailUsesIndexes() async throws {
        let store = try TemporaryStore(maxBatch: 64)
        _ = try await store.inbox.record(.verified(request(), notification("pay-1", .transition(.paid))))
        let plans = try await store.store.read { db -> [String] in
            let statements = Locked<[String]>([])
            db.trace(options: .statement) { event in
                if case .statement(let statement) = event { statements.withLock { $0.append(statement.sql) } }
            }
            _ = try Queries.order(db, provider: "test", account: "default", orderRef: "O1")
            db.trace(options: [])
            let executed = statements.withLock { $0 }
            return try executed.flatMap { sql in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: StatementArguments(
                    Array(repeating: DatabaseValue.null, count: sql.filter { $0 == "?" }.count)
                )).map { "\($0["detail"] as String? ?? "")  <- \(sql)" }
            }
        }
        #expect(plans.count >= 3)
        for plan in plans {
            #expect(!plan.hasPrefix("SCAN"), "\(plan)")
        }
    }
}

/// Waits for `semaphore` on a thread of its own, keeping the cooperative pool free.
func blockingWait(_ semaphore: DispatchSemaphore) async {
    await onThread { semaphore.wait() }
}

/// Runs blocking `work` on a new thread and returns its result.
func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
