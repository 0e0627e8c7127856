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
import IPNCore
import IPNStore
import Logging
import PostgresNIO

/// Group commit for PostgreSQL: notifications and expectations wait in one queue; each of
/// `writers` tasks takes every job waiting (up to `maxBatch`), records them in one transaction
/// on a connection of its own (`BatchRecorder`) and answers them only once COMMIT returned.
///
/// A batch that fails on a serialization failure, a deadlock or a row another transaction
/// committed first is run again (the retried batch reads what that transaction wrote, so a
/// notification is never applied twice); a batch that fails otherwise is retried one job per
/// transaction, so that one bad job cannot take the others down. A COMMIT whose outcome is
/// unknown (the connection was lost) answers every job of its batch with a store error marked
/// `commitInDoubt`: not acknowledged, the provider retries, and dedup answers the retry.
final class PostgresBatchWriter: Sendable {
    private let client: PostgresClient
    private let logger: Logger
    let maxBatch: Int
    private let routes: Locked<[DeliveryRoute]>
    private let schedule: Locked<InquirySchedule>
    private let eventsCommitted: @Sendable (Int) -> Void
    private let timeouts: PostgresTimeouts
    private let state = Locked(State())
    private let runners = Locked<[Task<Void, Never>]>([])

    /// Attempts of a batch that keeps meeting serialization failures before it fails.
    static let maxAttempts = 8

    private struct State {
        var waiting: [Job] = []
        var idle: [CheckedContinuation<[Job]?, Never>] = []
        var closed = false
        var busy = 0
    }

    final class Job: Sendable {
        let work: WriteJob
        let continuation: CheckedContinuation<WriteResult, any Error>

        init(work: WriteJob, continuation: CheckedContinuation<WriteResult, any Error>) {
            self.work = work
            self.continuation = continuation
        }
    }

    init(client: PostgresClient, writers: Int, maxBatch: Int, routes: Locked<[DeliveryRoute]>, schedule: Locked<InquirySchedule>,
         timeouts: PostgresTimeouts = PostgresTimeouts(), logger: Logger, eventsCommitted: @escaping @Sendable (Int) -> Void) {
        self.client = client
        self.timeouts = timeouts
        self.logger = logger
        self.maxBatch = max(1, maxBatch)
        self.routes = routes
        self.schedule = schedule
        self.eventsCommitted = eventsCommitted
        let tasks = (0..<max(1, writers)).map { _ in Task { await self.runLoop() } }
        runners.withLock { $0 = tasks }
    }

    func submit(_ work: WriteJob) async throws(StoreError) -> WriteResult {
        do {
            return try await withCheckedThrowingContinuation { continuation in
                let job = Job(work: work, continuation: continuation)
                let (accepted, runner) = state.withLock { state -> (Bool, CheckedContinuation<[Job]?, Never>?) in
                    guard !state.closed else { return (false, nil) }
                    if let runner = state.idle.popLast() {
                        state.busy += 1
                        return (true, runner)
                    }
                    state.waiting.append(job)
                    return (true, nil)
                }
                guard accepted else {
                    continuation.resume(throwing: StoreError(message: "the store is shutting down"))
                    return
                }
                runner?.resume(returning: [job])
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(postgres: error, doing: "write")
        }
    }

    /// Refuses new jobs, lets the waiting ones run, and waits for every batch to end.
    func close() async {
        let idle = state.withLock { state -> [CheckedContinuation<[Job]?, Never>] in
            state.closed = true
            guard state.waiting.isEmpty else { return [] }
            defer { state.idle = [] }
            return state.idle
        }
        for runner in idle { runner.resume(returning: nil) }
        for task in runners.withLock({ $0 }) { await task.value }
    }

    private func nextBatch() async -> [Job]? {
        await withCheckedContinuation { continuation in
            let batch = state.withLock { state -> [Job]?? in
                if !state.waiting.isEmpty {
                    let count = min(maxBatch, state.waiting.count)
                    let batch = Array(state.waiting.prefix(count))
                    state.waiting.removeFirst(count)
                    state.busy += 1
                    return .some(batch)
                }
                if state.closed { return .some(nil) }
                state.idle.append(continuation)
                return .none
            }
            if let batch { continuation.resume(returning: batch) }
        }
    }

    private func runLoop() async {
        while let batch = await nextBatch() {
            await run(batch)
            let wake = state.withLock { state -> [CheckedContinuation<[Job]?, Never>] in
                state.busy -= 1
                // Once closed and drained, the idle runners end.
                guard state.closed, state.waiting.isEmpty else { return [] }
                defer { state.idle = [] }
                return state.idle
            }
            for runner in wake { runner.resume(returning: nil) }
        }
    }

    private func run(_ batch: [Job]) async {
        let now = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        let routes = self.routes.withLock { $0 }
        let schedule = self.schedule.withLock { $0 }
        var attempt = 0
        while true {
            attempt += 1
            switch await transaction(batch.map(\.work), now: now, routes: routes, schedule: schedule) {
            case .success(let results):
                let events = zip(batch, results).reduce(0) { count, pair in
                    if case .recorded(let outcome) = pair.1 { return count + outcome.eventsWritten }
                    return count
                }
                for (job, result) in zip(batch, results) { job.continuation.resume(returning: result) }
                if events > 0 { eventsCommitted(events) }
                return
            case .failure(let failure):
                if failure.retryable, attempt < Self.maxAttempts {
                    // Back off a little, by a random amount, so that two nodes do not collide again.
                    try? await Task.sleep(for: .milliseconds(Int64.random(in: 1...(5 * Int64(attempt)))))
                    continue
                }
                if batch.count > 1, !failure.error.commitInDoubt, !failure.connectionLost {
                    for job in batch { await run([job]) }
                    return
                }
                if !failure.retryable {
                    logger.error("store write failed", metadata: ["error": "\(failure.error)", "jobs": "\(batch.count)"])
                }
                for job in batch { job.continuation.resume(throwing: failure.error) }
                return
            }
        }
    }

    private struct Failure: Error {
        let error: StoreError
        let retryable: Bool
        var connectionLost = false
    }

    /// One transaction: BEGIN, the batch, COMMIT, within `timeouts.batch` up to the COMMIT and
    /// `timeouts.commit` in all (`PostgresTimeouts`).
    private func transaction(
        _ jobs: [WriteJob], now: String, routes: [DeliveryRoute], schedule: InquirySchedule
    ) async -> Result<[WriteResult], Failure> {
        let committing = Locked(false)
        let (batchTimeout, commitTimeout) = (timeouts.batch, timeouts.commit)
        let outcome = await race({ [self] in
            await attempt(jobs, now: now, routes: routes, schedule: schedule, committing: committing)
        }, until: {
            var waited: Duration = .zero
            while waited < batchTimeout || (committing.withLock { $0 } && waited < commitTimeout) {
                guard (try? await Task.sleep(for: .milliseconds(100))) != nil else { return }
                waited += .milliseconds(100)
            }
        })
        if let outcome { return outcome }
        let inDoubt = committing.withLock { $0 }
        return .failure(Failure(
            error: StoreError(
                message: inDoubt
                    ? "cannot commit within \(commitTimeout) (its outcome is unknown)"
                    : "cannot reach PostgreSQL within \(batchTimeout)",
                commitInDoubt: inDoubt),
            retryable: false, connectionLost: true))
    }

    private func attempt(
        _ jobs: [WriteJob], now: String, routes: [DeliveryRoute], schedule: InquirySchedule, committing: Locked<Bool>
    ) async -> Result<[WriteResult], Failure> {
        do {
            return try await client.withConnection { connection in
                do {
                    _ = try await connection.query("BEGIN", logger: logger)
                } catch {
                    try? await connection.close()
                    return .failure(Failure(error: StoreError(postgres: error, doing: "begin a transaction"), retryable: false,
                                            connectionLost: true))
                }
                let results: [WriteResult]
                do {
                    results = try await BatchRecorder(
                        connection: connection, logger: logger, now: now, routes: routes, schedule: schedule
                    ).record(jobs)
                } catch {
                    await connection.rollBackOrClose(logger: logger)
                    let retryable = (error as? PSQLError)?.isRetryable ?? false
                    return .failure(Failure(error: StoreError(postgres: error, doing: "record"), retryable: retryable,
                                            connectionLost: connection.isClosed))
                }
                do {
                    committing.withLock { $0 = true }
                    _ = try await connection.query("COMMIT", logger: logger)
                } catch {
                    if let server = error as? PSQLError, server.sqlState != nil {
                        // The server refused the commit (a serialization failure at commit): nothing was written.
                        return .failure(Failure(error: StoreError(postgres: error, doing: "commit"), retryable: server.isRetryable))
                    }
                    try? await connection.close()
                    return .failure(Failure(
                        error: StoreError(postgres: error, doing: "commit (its outcome is unknown: the connection was lost)",
                                          commitInDoubt: true),
                        retryable: false, connectionLost: true))
                }
                return .success(results)
            }
        } catch {
            return .failure(Failure(error: StoreError(postgres: error, doing: "reach PostgreSQL"), retryable: false, connectionLost: true))
        }
    }
}
