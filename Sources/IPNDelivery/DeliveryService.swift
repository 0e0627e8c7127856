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
import IPNConfig
import IPNCore
import IPNStore
import Logging
import Metrics
import NIOCore
import ServiceLifecycle

/// Push delivery (product.md section 8): for each configured target, takes the deliveries that
/// are due from the store, POSTs them signed, and records what came of each. The store holds
/// every delivery's state, so a dead target's backlog grows on disk, not here, and a crash loses
/// nothing: a delivery not answered 2xx is sent again, with the same `webhook-id`.
///
/// Per target, at most `max_in_flight` requests at a time; per order and target, the store hands
/// out the first pending event only, so an order's events arrive in seq order while other
/// orders go on. A graceful shutdown stops taking deliveries, lets the attempts in flight
/// finish for `shutdownGrace`, then abandons the rest, which are attempted again later.
public final class DeliveryService: Service, Sendable {
    private let store: any Store
    private let logger: Logger
    private let metrics: DeliveryMetrics
    private let owner: String
    private let userAgent: String
    private let shutdownGrace: Duration
    /// Scales the retry schedule's waits: 1 in production; `IPND_DELIVERY_RETRY_SCALE` (0.001 to
    /// 1) shortens them for drills and tests.
    private let retryScale: Double
    private let state = Locked(State())
    /// The HTTP clients' event loops and the delivery tasks' executors, at a lower priority.
    let threads = DeliveryThreads()

    /// How long a claimed delivery is leased, in milliseconds: renewed every third of it while its
    /// attempt runs, so another node takes over one whose node died within this (and a poll).
    /// 45 s; `IPND_DELIVERY_LEASE_SECONDS` (3 to 300) changes it for drills and tests.
    let leaseLength: Int64
    private var leaseRenewal: Duration { .milliseconds(leaseLength / 3) }
    /// How often a target with nothing due looks again without being woken (another node's
    /// commits, retries coming due).
    static let pollInterval: Duration = .milliseconds(250)

    private struct State {
        var targets: [DeliveryTarget] = []
        var workers: [String: TargetWorker] = [:]
        var sender: WebhookSender?
        var started = false
        var stopping = false
    }

    /// - Parameters:
    ///   - owner: this process's name on the leases it takes (unique among the nodes).
    public init(
        store: any Store, targets: [DeliveryTarget], logger: Logger, metrics: DeliveryMetrics, userAgent: String,
        owner: String = DeliveryService.ownerName(), shutdownGrace: Duration = .seconds(5),
        retryScale: Double = DeliveryService.environmentRetryScale()
    ) throws {
        self.store = store
        self.logger = logger
        self.metrics = metrics
        self.owner = owner
        self.userAgent = userAgent
        self.shutdownGrace = shutdownGrace
        self.retryScale = min(1, max(0.001, retryScale))
        leaseLength = 1000 * (ProcessInfo.processInfo.environment["IPND_DELIVERY_LEASE_SECONDS"].flatMap(Int64.init).map { min(300, max(3, $0)) } ?? 45)
        let sender = try WebhookSender(targets: targets, userAgent: userAgent, eventLoopGroup: threads.group)
        state.withLock { state in
            state.targets = targets
            state.sender = sender
            for target in targets {
                state.workers[target.name] = TargetWorker(target: target, sender: sender, service: self)
            }
        }
    }

    /// `IPND_DELIVERY_RETRY_SCALE` (0.001 to 1; 1 when unset): shortens the retry schedule's waits
    /// for drills and tests.
    public static func environmentRetryScale() -> Double {
        ProcessInfo.processInfo.environment["IPND_DELIVERY_RETRY_SCALE"].flatMap(Double.init) ?? 1
    }

    /// `host-pid-random`: names this process on the leases it takes.
    public static func ownerName() -> String {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count) == 0 ? String(cString: name) : "host"
        return "\(host)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    public func run() async throws {
        let workers = state.withLock { state -> [TargetWorker] in
            state.started = true
            return Array(state.workers.values)
        }
        for worker in workers { worker.start() }
        let leases = Task { await renewLeases() }
        let wakeups = Task { await forwardStoreSignals() }
        await withGracefulShutdownHandler {
            while !Task.isCancelled, !state.withLock({ $0.stopping }) {
                try? await Task.sleep(for: .milliseconds(200))
            }
        } onGracefulShutdown: {
            self.state.withLock { $0.stopping = true }
        }
        state.withLock { $0.stopping = true }
        let all = state.withLock { Array($0.workers.values) }
        await withTaskGroup(of: Void.self) { group in
            for worker in all { group.addTask { await worker.stop(grace: self.shutdownGrace) } }
        }
        leases.cancel()
        wakeups.cancel()
        await state.withLock { $0.sender }?.shutdown()
        await threads.shutdown()
    }

    /// Replaces the targets (a reload). Unchanged targets change nothing. Otherwise every
    /// target's loop stops claiming and its attempts in flight finish (each within its
    /// target's timeout), then the loops start again with the new settings and secrets: a
    /// delivery is never attempted by an old and a new loop at once, so order per order holds.
    public func update(targets: [DeliveryTarget]) async throws {
        guard state.withLock({ $0.targets != targets }) else { return }
        let sender = try WebhookSender(targets: targets, userAgent: userAgent, eventLoopGroup: threads.group)
        let (old, oldSender) = state.withLock { state -> ([TargetWorker], WebhookSender?) in
            defer {
                state.workers = [:]
                state.sender = nil
            }
            return (Array(state.workers.values), state.sender)
        }
        await withTaskGroup(of: Void.self) { group in
            for worker in old {
                group.addTask { await worker.stop(grace: .seconds(worker.target.timeoutSeconds + 1)) }
            }
        }
        await oldSender?.shutdown()
        let fresh = state.withLock { state -> [TargetWorker]? in
            state.targets = targets
            // Shutting down meanwhile: `run` has stopped the workers it saw and no new ones start.
            guard !state.stopping else { return nil }
            state.sender = sender
            for target in targets { state.workers[target.name] = TargetWorker(target: target, sender: sender, service: self) }
            return state.started ? Array(state.workers.values) : []
        }
        guard let fresh else {
            await sender.shutdown()
            return
        }
        for worker in fresh { worker.start() }
    }

    /// Wakes the workers when this process commits events (new deliveries are due at once).
    private func forwardStoreSignals() async {
        var generation = store.eventSignal.generation
        while !Task.isCancelled {
            await store.eventSignal.wait(since: generation, timeout: .seconds(5))
            let now = store.eventSignal.generation
            if now != generation {
                generation = now
                for worker in state.withLock({ Array($0.workers.values) }) { worker.wake() }
            }
        }
    }

    /// Keeps the leases of attempts in flight alive while they run.
    private func renewLeases() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: leaseRenewal)
            let ids = state.withLock { $0.workers.values.flatMap { $0.leasedIDs } }
            guard !ids.isEmpty else { continue }
            do {
                try await store.renewLeases(ids: ids, owner: owner, until: Self.timestamp(offset: leaseLength))
            } catch {
                logger.warning("delivery leases not renewed", metadata: ["error": "\(error)"])
            }
        }
    }

    static func timestamp(offset milliseconds: Int64 = 0) -> String {
        Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000) + milliseconds)
    }

    // MARK: One attempt

    /// Sends `delivery` and decides what came of it; nil when the attempt was abandoned
    /// (shutdown), having given the delivery back: due again at once, not counted as an attempt.
    /// The outcome is for the caller to record.
    func attempt(_ delivery: DeliveryAttempt, target: DeliveryTarget, sender: WebhookSender) async
        -> DeliveryAttemptOutcome?
    {
        let body = Array(RecordJSON.event(delivery.event).text.utf8)
        let answer: WebhookSender.Answer
        do {
            answer = try await sender.send(body, id: delivery.event.id, to: target)
        } catch {
            await release([delivery.id])
            return nil
        }
        let nowMillis = Int64(Date().timeIntervalSince1970 * 1000)
        let now = Timestamp.format(epochMilliseconds: nowMillis)
        let firstAttempt = delivery.firstAttemptAt.flatMap(Timestamp.parse) ?? nowMillis
        let decision = RetrySchedule.decide(
            answer.result, attempts: delivery.attempts + 1, firstAttemptAt: firstAttempt, now: nowMillis,
            jitter: Double.random(in: 0..<1), delayScale: retryScale)
        metrics.attempted(target: target.name, seconds: answer.seconds)
        let outcome: DeliveryAttemptOutcome.Outcome
        var metadata: Logger.Metadata = [
            "target": .string(target.name), "event_id": .string(delivery.event.id), "delivery_id": .string(String(delivery.id)),
            "seq": .string(String(delivery.event.seq)), "attempts": .string(String(delivery.attempts + 1)),
        ]
        if let status = answer.status { metadata["status"] = .string(String(status)) }
        if let error = answer.error { metadata["error"] = .string(error) }
        switch decision {
        case .delivered:
            outcome = .delivered
            metrics.finished(target: target.name, outcome: .delivered)
        case .retry(let at):
            outcome = .retry(at: Timestamp.format(epochMilliseconds: at))
            metrics.finished(target: target.name, outcome: .retried)
            metadata["next_attempt_at"] = .string(Timestamp.format(epochMilliseconds: at))
            logger.warning("delivery attempt failed; retried later", metadata: metadata)
        case .failed:
            outcome = .failed
            metrics.finished(target: target.name, outcome: .failed)
            logger.error("delivery failed: no 2xx in the three days since its first attempt; `ipnd deliveries retry` sends it again",
                         metadata: metadata)
        case .pauseTarget:
            outcome = .paused
            metrics.finished(target: target.name, outcome: .retried)
            logger.error("delivery target answered 410 and is paused; nothing is lost: `ipnd deliveries resume \(target.name)` resumes it",
                         metadata: metadata)
            do {
                try await store.pauseTarget(target.name, reason: "answered 410 to event \(delivery.event.id)", at: now)
            } catch {
                logger.error("delivery target not paused: store unavailable", metadata: ["target": .string(target.name), "error": "\(error)"])
            }
        }
        return DeliveryAttemptOutcome(
            id: delivery.id, attemptedAt: now, status: answer.status,
            error: outcome == .delivered ? nil : answer.error.map { String($0.prefix(500)) }, outcome: outcome)
    }

    /// Gives back deliveries leased but not attempted: due again at once.
    func release(_ ids: [Int64]) async {
        guard !ids.isEmpty else { return }
        try? await store.releaseDeliveries(ids: ids, owner: owner, now: Self.timestamp())
    }

    /// Waits, up to `maxYield`, while `busyRecording` or more notifications are being recorded:
    /// providers' notifications come first, and the deliveries' claims and outcomes wait for a
    /// lull. Under a steady flood of notifications, deliveries still go on, one round of
    /// writes per `maxYield`.
    func yieldToProviders() async {
        let deadline = ContinuousClock.now + Self.maxYield
        while store.recording.count >= Self.busyRecording, ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Notifications being recorded at once that make delivery wait: a few requests at a time is
    /// ordinary traffic, more is a burst.
    static let busyRecording = 4
    static let maxYield: Duration = .milliseconds(100)

    /// A round of `target`'s loop: records `outcomes`, then claims up to `limit` deliveries that
    /// are due (none when 0), in one write where the store can. A store that fails is logged:
    /// the outcomes' leases run out and those deliveries are attempted again (at least once),
    /// and nothing is claimed this round.
    func settle(_ outcomes: [DeliveryAttemptOutcome], thenClaim limit: Int, for target: DeliveryTarget) async -> [DeliveryAttempt] {
        do {
            return try await store.settleDeliveries(
                outcomes, thenClaim: target.name, limit: limit, now: Self.timestamp(), leaseUntil: Self.timestamp(offset: leaseLength),
                owner: owner)
        } catch {
            var metadata: Logger.Metadata = ["target": .string(target.name), "store_error": "\(error)"]
            if !outcomes.isEmpty {
                metadata["deliveries"] = .string(outcomes.map { String($0.id) }.joined(separator: " "))
                logger.error("delivery outcomes not recorded: store unavailable; they will be attempted again", metadata: metadata)
            } else {
                logger.error("deliveries not claimed: store unavailable", metadata: metadata)
            }
            return []
        }
    }
}

