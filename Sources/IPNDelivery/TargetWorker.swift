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

import IPNConfig
import IPNCore
import IPNStore

/// One target's deliveries: `max_in_flight` senders, each sending one delivery at a time, and a
/// store loop that keeps leased deliveries waiting for them, so that a sender whose request
/// ended starts the next at once instead of waiting for a write. Each round of the store loop
/// records the outcomes that came in since the last and claims what the queue needs, in one
/// write where the store can. A delivery stays leased until its outcome is committed, so it is
/// neither claimed twice nor followed by its order's next event before then: order per order
/// holds.
final class TargetWorker: Sendable {
    let target: DeliveryTarget
    let sender: WebhookSender
    unowned let service: DeliveryService
    private let wakeSignal = EventSignal()
    private let claimed = ClaimedQueue()
    private let state = Locked(WorkerState())

    private struct WorkerState {
        /// Leased by this worker: waiting, being sent, or with an outcome not yet committed.
        var leased: Set<Int64> = []
        /// Requests in flight.
        var sending = 0
        /// Outcomes for the store loop's next round.
        var outcomes: [DeliveryAttemptOutcome] = []
        var senders: [Task<Void, Never>] = []
        var storeLoop: Task<Void, Never>?
        /// No more claims; the store loop records what is left, once `sendersDone`.
        var stopping = false
        var sendersDone = false
    }

    /// How many deliveries may be leased ahead of the senders, beyond those in flight.
    private var claimAhead: Int { 2 * target.maxInFlight }

    init(target: DeliveryTarget, sender: WebhookSender, service: DeliveryService) {
        self.target = target
        self.sender = sender
        self.service = service
    }

    /// The deliveries whose leases must be kept alive.
    var leasedIDs: [Int64] { state.withLock { Array($0.leased) } }

    func wake() { wakeSignal.signal() }

    func start() {
        let threads = service.threads
        let storeLoop = Task(executorPreference: threads.executor(0)) { [self] in await self.storeLoop() }
        var senders: [Task<Void, Never>] = []
        for lane in 0..<target.maxInFlight {
            senders.append(Task(executorPreference: threads.executor(lane)) { [self] in await sendLoop() })
        }
        state.withLock { state in
            state.storeLoop = storeLoop
            state.senders = senders
        }
    }

    /// Stops claiming, gives back what was claimed and not started, waits up to `grace` for the
    /// requests in flight, then abandons them (they are given back), and returns once the
    /// outcomes are recorded.
    func stop(grace: Duration) async {
        let (senders, storeLoop) = state.withLock { state -> ([Task<Void, Never>], Task<Void, Never>?) in
            state.stopping = true
            return (state.senders, state.storeLoop)
        }
        wake()
        await giveBack(claimed.close())
        let deadline = ContinuousClock.now + grace
        while ContinuousClock.now < deadline, state.withLock({ $0.sending > 0 }) {
            try? await Task.sleep(for: .milliseconds(20))
        }
        for task in senders { task.cancel() }
        for task in senders { await task.value }
        state.withLock { $0.sendersDone = true }
        wake()
        await storeLoop?.value
    }

    /// Rounds of writes: each records the outcomes that came in and, while fewer than
    /// `max_in_flight` deliveries wait, claims enough to have `claimAhead` waiting. Sleeps when
    /// there is nothing to record and nothing more was due, until a request ends, the store says
    /// events committed, or the poll interval passes.
    private func storeLoop() async {
        var nothingDue = false
        while true {
            let generation = wakeSignal.generation
            let (outcomes, stopping, sendersDone, sending) = state.withLock { state in
                defer { state.outcomes = [] }
                return (state.outcomes, state.stopping, state.sendersDone, state.sending)
            }
            let waiting = claimed.count
            let room = target.maxInFlight + claimAhead - waiting - sending
            let limit = !stopping && !nothingDue && waiting < target.maxInFlight && room > 0 ? room : 0
            if outcomes.isEmpty, limit == 0 {
                if sendersDone { return }
                await wakeSignal.wait(since: generation, timeout: DeliveryService.pollInterval)
                nothingDue = false
                continue
            }
            await service.yieldToProviders()
            let deliveries = await service.settle(outcomes, thenClaim: limit, for: target)
            // Recorded (or, failing that, left to their leases' end): the orders' next events may be due.
            let kept = state.withLock { state -> Bool in
                for outcome in outcomes { state.leased.remove(outcome.id) }
                guard !state.stopping else { return false }
                state.leased.formUnion(deliveries.map(\.id))
                return true
            }
            if !kept || !claimed.push(deliveries) { await giveBack(deliveries) }
            nothingDue = deliveries.count < limit
        }
    }

    /// One sender: sends the claimed deliveries one at a time until the queue closes.
    private func sendLoop() async {
        while let delivery = await claimed.next() {
            state.withLock { $0.sending += 1 }
            let outcome = await service.attempt(delivery, target: target, sender: sender)
            state.withLock { state in
                state.sending -= 1
                if let outcome { state.outcomes.append(outcome) } else { state.leased.remove(delivery.id) }
            }
            // Paused (410): what was claimed behind it waits for the resume.
            if case .paused? = outcome?.outcome { await giveBack(claimed.takeAll()) }
            wake()
        }
    }

    private func giveBack(_ deliveries: [DeliveryAttempt]) async {
        guard !deliveries.isEmpty else { return }
        await service.release(deliveries.map(\.id))
        state.withLock { state in for delivery in deliveries { state.leased.remove(delivery.id) } }
    }
}
