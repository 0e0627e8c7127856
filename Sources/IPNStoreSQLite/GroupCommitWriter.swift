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

import Dispatch
import Foundation
import GRDB
import GRDBSQLite
import IPNCore
import IPNStore

/// The store's only writer. Each call waits in a queue; the writer takes every job waiting at
/// that moment (up to `maxBatch`), runs them in order in one IMMEDIATE transaction, commits
/// (one fsync for the lot) and only then resumes their callers. When idle a job starts at once,
/// so batching adds no latency; under load the jobs that arrived during one commit share the
/// next, so batches grow with the load and with the disk's fsync time.
///
/// Semantics are those of one transaction per job: jobs run sequentially, each seeing the
/// effects of the ones before it. If a batch fails, its jobs are retried one transaction each,
/// so one failing job cannot take the others down with it; except when another connection held
/// the write lock past the busy timeout, which fails every job of the batch at once.
///
/// The WAL is copied back into the database file (PASSIVE checkpoints) as SQLite's automatic
/// checkpoint would, but never inside a commit: SQLite's own runs inside the COMMIT that crosses
/// its threshold and held that batch's acknowledgements, and every job behind them, back for the
/// copy and the database fsync. A `BackgroundCheckpointer` copies every `checkpointFrames` new
/// frames while the writer goes on committing. The log only starts over once every frame is
/// copied and a write transaction begins, which a copy on another connection cannot arrange
/// while commits keep coming; so once the WAL holds `restartFrames` frames, background passes
/// chase the end of the log until at most `chaseFrames` are left, and the writer copies those
/// itself, after acknowledging a batch, so that its next transaction starts the log over. The
/// writer pauses for that once per `restartFrames`, for a short copy and two fsyncs. Should the
/// commits outrun the passes, the chase stops a pass's length later and the writer copies all
/// that is left: the log stays within about `restartFrames + 2 * checkpointFrames`.
final class GroupCommitWriter: Sendable {
    /// Held, not just its pool: the store owns the WAL hook's context.
    private let store: SQLiteDatabase
    private var pool: DatabasePool { store.pool }
    let maxBatch: Int
    /// New WAL frames that start a background pass.
    let checkpointFrames: Int32
    /// The WAL length, in frames, at which the log is brought to an end and started over.
    let restartFrames: Int32
    /// How few frames may be left uncopied for the writer to copy them itself and end the log.
    let chaseFrames: Int32
    private let background: BackgroundCheckpointer?
    /// Read and written by the writer queue only (between batches).
    private let log = Locked(LogState())
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "ipnd.store.writer", qos: .userInitiated)
    private let observer: (@Sendable (_ batchSize: Int, _ seconds: Double, _ failed: Bool) -> Void)?
    /// The delivery routes the write path creates deliveries by (the config's, reloadable).
    let routes = Locked<[DeliveryRoute]>([])
    /// The inquiry schedule changed orders are given (the config's `reconcile`, reloadable).
    let schedule = Locked<InquirySchedule>(.standard)
    /// Told, after a commit, how many order events it wrote.
    let eventsCommitted = Locked<(@Sendable (Int) -> Void)?>(nil)
    private let checkpointObserver: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)?

    private struct State {
        var waiting: [Job] = []
        var draining = false
        var closed = false
    }

    /// What the writer knows of the WAL between batches.
    private struct LogState {
        /// The WAL's length after the previous batch (a shorter one means it started over).
        var frames: Int32 = 0
        /// WAL length at the writer's last copy, while the log has not started over since (a
        /// reader still in the old log holds it; the next try waits for `checkpointFrames` more).
        var writerCopiedAt: Int32?
    }

    init(
        store: SQLiteDatabase,
        maxBatch: Int,
        checkpointFrames: Int32 = 1000,
        restartFrames: Int32 = 8000,
        chaseFrames: Int32 = 100,
        backgroundCheckpoints: Bool = true,
        observer: (@Sendable (_ batchSize: Int, _ seconds: Double, _ failed: Bool) -> Void)? = nil,
        checkpointObserver: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)? = nil
    ) {
        self.store = store
        self.maxBatch = max(1, maxBatch)
        self.checkpointFrames = max(1, checkpointFrames)
        self.restartFrames = max(self.checkpointFrames, restartFrames)
        self.chaseFrames = max(0, chaseFrames)
        self.observer = observer
        self.checkpointObserver = checkpointObserver
        background = backgroundCheckpoints ? BackgroundCheckpointer(path: store.path, observer: checkpointObserver) : nil
    }

    /// Runs `operation` inside a write transaction and returns its result once committed.
    func submit<T: Sendable>(
        _ operation: @escaping @Sendable (WriteContext) throws -> T
    ) async throws(StoreError) -> T {
        let box = ResultBox<T>()
        do {
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let job = Job(
                    run: { context in box.value = try operation(context) },
                    finish: { error in
                        if let error {
                            continuation.resume(throwing: error)
                        } else if let value = box.value {
                            continuation.resume(returning: value)
                        } else {
                            continuation.resume(throwing: StoreError(message: "write finished without a result"))
                        }
                    }
                )
                enqueue(job)
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(error, doing: "write")
        }
    }

    /// Refuses new jobs; jobs already waiting still run.
    func close() {
        state.withLock { $0.closed = true }
    }

    /// Waits until every job accepted so far has finished, and any checkpoint pass with them.
    func drain() async {
        while state.withLock({ $0.draining || !$0.waiting.isEmpty }) || background?.isRunning == true {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    private func enqueue(_ job: Job) {
        let (accepted, startDrain) = state.withLock { state -> (Bool, Bool) in
            guard !state.closed else { return (false, false) }
            state.waiting.append(job)
            guard !state.draining else { return (true, false) }
            state.draining = true
            return (true, true)
        }
        guard accepted else {
            job.finish(StoreError(message: "the store is shutting down"))
            return
        }
        if startDrain {
            queue.async { self.drainLoop() }
        }
    }

    private func drainLoop() {
        while true {
            let batch = state.withLock { state -> [Job] in
                guard !state.waiting.isEmpty else {
                    state.draining = false
                    return []
                }
                let count = min(maxBatch, state.waiting.count)
                let batch = Array(state.waiting.prefix(count))
                state.waiting.removeFirst(count)
                return batch
            }
            guard !batch.isEmpty else { return }
            run(batch)
        }
    }

    private func run(_ batch: [Job]) {
        let started = DispatchTime.now().uptimeNanoseconds
        let now = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        let routes = self.routes.withLock { $0 }
        let schedule = self.schedule.withLock { $0 }
        let effects = BatchEffects()
        do {
            try pool.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    let context = WriteContext(
                        db: db, now: now, statements: WriteStatements(db), routes: routes, schedule: schedule, effects: effects)
                    for job in batch { try job.run(context) }
                    try context.writeCounts()
                    return .commit
                }
            }
            observe(batch.count, since: started, failed: false)
            if effects.events > 0, let told = eventsCommitted.withLock({ $0 }) { told(effects.events) }
            for job in batch { job.finish(nil) }
            checkpointIfDue()
        } catch {
            observe(batch.count, since: started, failed: true)
            // A lock another connection held past the busy timeout fails every job alike, and
            // each retry would wait the timeout out again: the jobs would be answered one busy
            // timeout after another. They are all answered now, 503, and the providers retry.
            guard batch.count > 1, !Self.isLockTimeout(error) else {
                let failure = StoreError(error, doing: "commit")
                for job in batch { job.finish(failure) }
                return
            }
            for job in batch { run([job]) }
        }
    }

    private static func isLockTimeout(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED
    }

    /// After each committed batch: starts a background pass each time the WAL has grown by
    /// `checkpointFrames`; once it holds `restartFrames`, chases its end with further passes and
    /// copies the last few frames itself (or, at `restartFrames + checkpointFrames`, whatever is
    /// left), so that its next transaction starts the log over (unless a reader still uses the
    /// old log: then it tries again `checkpointFrames` later).
    /// Without a background connection the writer copies the whole WAL at `checkpointFrames`.
    /// A failed copy loses nothing: the commits are in the WAL, and the next pass retries it.
    private func checkpointIfDue() {
        let frames = store.walLength.frames
        let (restarted, retryAt) = log.withLock { log -> (Bool, Int32) in
            let restarted = frames < log.frames
            if restarted { log.writerCopiedAt = nil }
            log.frames = frames
            return (restarted, log.writerCopiedAt.map { $0 + checkpointFrames } ?? 0)
        }
        guard let background else {
            if frames >= checkpointFrames, frames >= retryAt { copyAsWriter(frames: frames) }
            return
        }
        if restarted { background.logRestarted() }
        guard let pass = background.lastPass else { return }
        let pending = frames - min(pass.copied, frames)
        if frames >= restartFrames {
            // The chase ends when the passes have nearly caught up, or, should commits outrun
            // them, once the log is a pass longer than it should be: the writer copies the rest.
            let end = pending <= chaseFrames || frames >= restartFrames + checkpointFrames
            if end, frames >= retryAt {
                copyAsWriter(frames: frames)
                return
            }
            if !end, pass.progressed {
                background.start(walFrames: frames)
                return
            }
        }
        if frames - pass.startedAt >= checkpointFrames { background.start(walFrames: frames) }
    }

    /// Copies what is left of the WAL on the writer's own connection, between batches.
    private func copyAsWriter(frames: Int32) {
        let copied = BackgroundCheckpointer.checkpoint(on: pool, observer: checkpointObserver)
        log.withLock { $0.writerCopiedAt = frames }
        if let copied { background?.writerCopied(copied) }
    }

    private func observe(_ count: Int, since started: UInt64, failed: Bool) {
        guard let observer else { return }
        observer(count, Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9, failed)
    }
}

/// The WAL's length in frames after the writer connection's last commit, as SQLite's WAL hook
/// reports it. Installing the hook turns SQLite's automatic checkpoint off for that connection
/// (the automatic checkpoint is itself a WAL hook); the group-commit writer checkpoints instead.
final class WALLength: Sendable {
    /// Set by the hook inside every commit on the connection, read by the writer between
    /// batches.
    private let length = Locked<Int32>(0)

    var frames: Int32 { length.withLock { $0 } }

    /// Installs the hook on `pool`'s writer connection. The hook holds this object unretained:
    /// its owner (the `Store`) must outlive every commit on the pool, which it does by owning
    /// the pool.
    init(installedOn pool: DatabasePool) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        pool.writeWithoutTransaction { db in
            _ = sqlite3_wal_hook(db.sqliteConnection, { context, _, _, frames in
                if let context { Unmanaged<WALLength>.fromOpaque(context).takeUnretainedValue().length.withLock { $0 = frames } }
                return SQLITE_OK
            }, context)
        }
    }
}

/// One queued write.
private final class Job: Sendable {
    let run: @Sendable (WriteContext) throws -> Void
    let finish: @Sendable ((any Error)?) -> Void

    init(run: @escaping @Sendable (WriteContext) throws -> Void, finish: @escaping @Sendable ((any Error)?) -> Void) {
        self.run = run
        self.finish = finish
    }
}

/// Carries a job's result from the writer queue to its caller; written and read on the
/// writer queue only, before the continuation resumes.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
