import Dispatch
import Foundation
import GRDB
import GRDBSQLite
import IPNCore

/// The store's only writer. Each call waits in a queue; the writer takes every job waiting at
/// that moment (up to `maxBatch`), runs them in order in one IMMEDIATE transaction, commits
/// (one fsync for the lot) and only then resumes their callers. When idle a job starts at once,
/// so batching adds no latency; under load many jobs share one commit, and a batch may wait
/// up to `gatherWait` for more while they keep arriving.
///
/// Semantics are those of one transaction per job: jobs run sequentially, each seeing the
/// effects of the ones before it. If a batch fails, its jobs are retried one transaction each,
/// so one failing job cannot take the others down with it.
///
/// The WAL is copied back into the database file (PASSIVE checkpoints) once it holds
/// `checkpointFrames` frames, as SQLite's automatic checkpoint would, but never inside a
/// commit: SQLite's own runs inside the COMMIT that crosses the threshold and held that batch's
/// acknowledgements, and every job behind them, back for the copy and the database fsync. The
/// copy runs on a `BackgroundCheckpointer` while the writer goes on committing; the writer
/// itself, after acknowledging a batch, copies only what was committed during that pass, so
/// that its next transaction starts the WAL over.
final class GroupCommitWriter: Sendable {
    /// Held, not just its pool: the store owns the WAL hook's context.
    private let store: Store
    private var pool: DatabasePool { store.pool }
    let maxBatch: Int
    /// The longest a batch gathers jobs under load (never when the writer was idle).
    let gatherWait: Duration
    /// The WAL length, in frames, past which the writer checkpoints after a batch.
    let checkpointFrames: Int32
    private let background: BackgroundCheckpointer?
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "ipnd.store.writer", qos: .userInitiated)
    private let observer: (@Sendable (_ batchSize: Int, _ seconds: Double, _ failed: Bool) -> Void)?
    private let checkpointObserver: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)?

    private struct State {
        var waiting: [Job] = []
        var draining = false
        var closed = false
    }

    init(
        store: Store,
        maxBatch: Int,
        gatherWait: Duration = .zero,
        checkpointFrames: Int32 = 1000,
        backgroundCheckpoints: Bool = true,
        observer: (@Sendable (_ batchSize: Int, _ seconds: Double, _ failed: Bool) -> Void)? = nil,
        checkpointObserver: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)? = nil
    ) {
        self.store = store
        self.maxBatch = max(1, maxBatch)
        self.gatherWait = max(.zero, gatherWait)
        self.checkpointFrames = max(1, checkpointFrames)
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
        while state.withLock({ $0.draining || !$0.waiting.isEmpty }) || background?.current == .running {
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
        // The first batch of a drain starts at once: a notification that finds the writer idle
        // is never held back. Jobs that queued up while a commit was running mean concurrent
        // senders; then the next batch gathers for up to `gatherWait` so that one commit and
        // one fsync carry more of them.
        var gather = false
        while true {
            if gather { waitForMoreJobs() }
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
            gather = gatherWait > .zero
        }
    }

    /// Sleeps in short slices until `maxBatch` jobs wait, the queue stops growing or
    /// `gatherWait` has passed, whichever comes first.
    private func waitForMoreJobs() {
        let deadline = ContinuousClock.now + gatherWait
        var seen = state.withLock { $0.waiting.count }
        while seen > 0, seen < maxBatch, ContinuousClock.now < deadline {
            usleep(Self.gatherSlice)
            let count = state.withLock { $0.waiting.count }
            if count == seen { return }
            seen = count
        }
    }

    private static let gatherSlice: UInt32 = 200

    private func run(_ batch: [Job]) {
        let started = DispatchTime.now().uptimeNanoseconds
        let now = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        do {
            try pool.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    let context = WriteContext(db: db, now: now, statements: WriteStatements(db))
                    for job in batch { try job.run(context) }
                    return .commit
                }
            }
            observe(batch.count, since: started, failed: false)
            for job in batch { job.finish(nil) }
            checkpointIfDue()
        } catch {
            observe(batch.count, since: started, failed: true)
            guard batch.count > 1 else {
                batch[0].finish(StoreError(error, doing: "commit"))
                return
            }
            for job in batch { run([job]) }
        }
    }

    /// Once the WAL has grown past `checkpointFrames`: starts a background pass, or, when one has
    /// finished, copies what was committed during it, so that the next write transaction starts
    /// the log over (unless a reader still uses part of it: then the cycle runs again, as
    /// SQLite's own checkpoint would). A failed copy loses nothing: the commits are in the WAL,
    /// and the next pass retries it.
    private func checkpointIfDue() {
        guard store.walLength.frames >= checkpointFrames else {
            background?.reset()
            return
        }
        if let background {
            switch background.current {
            case .idle:
                background.start()
                return
            case .running:
                return
            case .finished:
                background.reset()
            }
        }
        BackgroundCheckpointer.checkpoint(on: pool, observer: checkpointObserver)
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
