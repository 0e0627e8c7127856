import IPNConfig
import IPNCore
import IPNStore

/// One target's deliveries: `max_in_flight` senders, each sending one delivery at a time, and a
/// claimer that keeps leased deliveries waiting for them, so that a sender whose request ended
/// starts the next at once instead of waiting for a write. Outcomes are recorded in batches
/// behind the senders; a delivery stays leased until its outcome is committed, so it is neither
/// claimed twice nor followed by its order's next event before then: order per order holds.
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
        var outcomes: [DeliveryAttemptOutcome] = []
        var recording = false
        var tasks: [Task<Void, Never>] = []
        var stopping = false
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
        var tasks = [Task(executorPreference: threads.executor(0)) { [self] in await claimLoop() }]
        for lane in 0..<target.maxInFlight {
            tasks.append(Task(executorPreference: threads.executor(lane)) { [self] in await sendLoop() })
        }
        state.withLock { $0.tasks = tasks }
    }

    /// Stops claiming, gives back what was claimed and not started, waits up to `grace` for the
    /// requests in flight, then abandons them (they are given back), and waits until the
    /// outcomes are recorded.
    func stop(grace: Duration) async {
        let tasks = state.withLock { state -> [Task<Void, Never>] in
            state.stopping = true
            return state.tasks
        }
        wake()
        await giveBack(claimed.close())
        let deadline = ContinuousClock.now + grace
        while ContinuousClock.now < deadline, state.withLock({ $0.sending > 0 }) {
            try? await Task.sleep(for: .milliseconds(20))
        }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        while state.withLock({ $0.recording || !$0.outcomes.isEmpty }) {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Keeps up to `claimAhead` deliveries waiting for the senders: claims once fewer than
    /// `max_in_flight` wait, and sleeps until a request ends, an outcome is recorded, the store
    /// says events committed, or the poll interval passes.
    private func claimLoop() async {
        while !Task.isCancelled {
            let generation = wakeSignal.generation
            let (stopping, waiting, sending) = state.withLock { ($0.stopping, claimed.count, $0.sending) }
            if stopping { return }
            let room = target.maxInFlight + claimAhead - waiting - sending
            var full = false
            if waiting < target.maxInFlight, room > 0 {
                await service.yieldToProviders()
                let deliveries = await service.claim(target, limit: room)
                let kept = state.withLock { state -> Bool in
                    guard !state.stopping else { return false }
                    state.leased.formUnion(deliveries.map(\.id))
                    return true
                }
                if !kept || !claimed.push(deliveries) {
                    await giveBack(deliveries)
                    return
                }
                // More may be due at once.
                full = deliveries.count == room
            }
            if !full { await wakeSignal.wait(since: generation, timeout: DeliveryService.pollInterval) }
        }
    }

    /// One sender: sends the claimed deliveries one at a time until the queue closes.
    private func sendLoop() async {
        while let delivery = await claimed.next() {
            state.withLock { $0.sending += 1 }
            let outcome = await service.attempt(delivery, target: target, sender: sender)
            state.withLock { state in
                state.sending -= 1
                if outcome == nil { state.leased.remove(delivery.id) }
            }
            if let outcome {
                record(outcome)
                // Paused (410): what was claimed behind it waits for the resume.
                if case .paused = outcome.outcome { await giveBack(claimed.takeAll()) }
            }
            wake()
        }
    }

    /// Queues an outcome; one writer records all that are queued, in one write, then the next lot.
    private func record(_ outcome: DeliveryAttemptOutcome) {
        let startRecording = state.withLock { state -> Bool in
            state.outcomes.append(outcome)
            guard !state.recording else { return false }
            state.recording = true
            return true
        }
        guard startRecording else { return }
        Task(executorPreference: service.threads.executor(0)) { [self] in
            while true {
                await service.yieldToProviders()
                let batch = state.withLock { state -> [DeliveryAttemptOutcome] in
                    defer { state.outcomes = [] }
                    if state.outcomes.isEmpty { state.recording = false }
                    return state.outcomes
                }
                if batch.isEmpty { return }
                await service.record(batch, target: target)
                // Recorded (or, failing that, left to their leases' end): the orders' next events may be due.
                state.withLock { state in for outcome in batch { state.leased.remove(outcome.id) } }
                wake()
            }
        }
    }

    private func giveBack(_ deliveries: [DeliveryAttempt]) async {
        guard !deliveries.isEmpty else { return }
        await service.release(deliveries.map(\.id))
        state.withLock { state in for delivery in deliveries { state.leased.remove(delivery.id) } }
    }
}
