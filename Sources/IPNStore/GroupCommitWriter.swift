import Dispatch
import Foundation
import GRDB
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
final class GroupCommitWriter: Sendable {
    private let pool: DatabasePool
    let maxBatch: Int
    /// The longest a batch gathers jobs under load (never when the writer was idle).
    let gatherWait: Duration
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "ipnd.store.writer", qos: .userInitiated)
    private let observer: (@Sendable (_ batchSize: Int, _ seconds: Double, _ failed: Bool) -> Void)?

    private struct State {
        var waiting: [Job] = []
        var draining = false
        var closed = false
    }

    init(
        pool: DatabasePool,
        maxBatch: Int,
        gatherWait: Duration = .zero,
        observer: (@Sendable (_ batchSize: Int, _ seconds: Double, _ failed: Bool) -> Void)? = nil
    ) {
        self.pool = pool
        self.maxBatch = max(1, maxBatch)
        self.gatherWait = max(.zero, gatherWait)
        self.observer = observer
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

    /// Waits until every job accepted so far has finished.
    func drain() async {
        while state.withLock({ $0.draining || !$0.waiting.isEmpty }) {
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
        } catch {
            observe(batch.count, since: started, failed: true)
            guard batch.count > 1 else {
                batch[0].finish(StoreError(error, doing: "commit"))
                return
            }
            for job in batch { run([job]) }
        }
    }

    private func observe(_ count: Int, since started: UInt64, failed: Bool) {
        guard let observer else { return }
        observer(count, Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9, failed)
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
