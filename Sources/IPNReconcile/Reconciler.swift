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
import IPNDelivery
import IPNStore
import Logging
import NIOCore
import ServiceLifecycle

/// Reconciliation (product.md section 12): asks each provider's status API about the orders
/// that have not settled and went quiet, and records each answer through the store's one write
/// path, so that a lost notification no longer leaves a paid order `pending` for good.
///
/// The store keeps each order's schedule (`InquiryScheduleState`) and hands out due orders from
/// an index; this service claims them per account, at most `max_in_flight` inquiries on the wire
/// and `per_account_per_minute` per account (spread evenly), holds an account that answered 429
/// with `Retry-After`, and yields to providers' notifications as delivery does. A claim is a
/// lease: an order whose inquiry never got recorded (a crash, a node killed) is due again once it
/// runs out, so nothing is lost and another node takes it over.
public final class Reconciler: Service, InquiryAsking, Sendable {
    /// The config's `reconcile` section, as the reconciler uses it.
    public struct Settings: Sendable, Equatable {
        public var schedule: InquirySchedule
        public var maxInFlight: Int
        public var perAccountPerMinute: Int
        public var timeoutSeconds: Int

        public init(schedule: InquirySchedule = .standard, maxInFlight: Int = 4, perAccountPerMinute: Int = 60, timeoutSeconds: Int = 10) {
            self.schedule = schedule
            self.maxInFlight = max(1, maxInFlight)
            self.perAccountPerMinute = max(1, perAccountPerMinute)
            self.timeoutSeconds = max(1, timeoutSeconds)
        }

        /// How long a claim holds an order: a token request and the inquiry, each within the
        /// timeout, the wait for the account's pacing slot, and a margin.
        var leaseMillis: Int64 { Int64(timeoutSeconds) * 2_000 + Reconciler.claimHorizonMillis + 5_000 }

        /// How many of one account's pacing slots fall within a claim's horizon.
        var slotsPerHorizon: Int { perAccountPerMinute * Int(Reconciler.claimHorizonMillis) / 60_000 + 1 }
    }

    /// An account with an `inquiry` section.
    public struct Account: Sendable {
        public var scope: Scope
        public var inquiry: any StatusInquiry

        public init(scope: Scope, inquiry: any StatusInquiry) {
            self.scope = scope
            self.inquiry = inquiry
        }
    }

    /// How often the loop looks for due orders without being woken.
    static let pollMillis: Int64 = 250
    /// How far ahead a round claims the account's pacing slots: two polls, so that a steady
    /// rate is claimed a few batches a second rather than one order per write.
    static let claimHorizonMillis: Int64 = 2 * pollMillis
    /// Notifications being recorded at once that make the reconciler wait (as delivery does).
    static let busyRecording = 4
    static let maxYield: Duration = .milliseconds(100)
    /// How long a graceful stop waits for the inquiries on the wire.
    static let shutdownGrace: Duration = .seconds(5)
    /// The most orders one claim takes.
    static let claimLimit = 64

    private let store: any Store
    private let logger: Logger
    private let metrics: ReconcileMetrics
    private let client: InquiryClient
    private let inquirer: Inquirer
    /// The HTTP client's event loop and the inquiries' executor: one thread of its own, at the
    /// lower priority delivery runs at, owned here so that it outlives the client whatever stops
    /// first.
    private let threads = DeliveryThreads(count: 1)
    private let state: Locked<State>
    /// Wakes the loop when an inquiry ends (a slot is free) or the settings change.
    private let wakeups = EventSignal()

    private struct State {
        var settings: Settings
        var accounts: [Account]
        var pacer: AccountPacer
        /// Claimed orders not finished yet: waiting for their pacing slot or on the wire.
        var inFlight = 0
        /// Inquiries on the wire (`max_in_flight` at most).
        var onWire = 0
        /// Inquiries waiting for a place on the wire, in the order they came.
        var wireQueue: [CheckedContinuation<Bool, Never>] = []
        var stopping = false
        /// When each account's refused credential was last logged at error (Unix ms).
        var unauthorizedLogged: [Scope: Int64] = [:]
        /// Where the next round starts among the accounts (fair to each).
        var nextAccount = 0

        /// The most orders claimed at once: those on the wire and each account's pacing slots
        /// within a claim's horizon.
        var claimCap: Int { settings.maxInFlight + settings.slotsPerHorizon * max(1, accounts.count) }
    }

    public init(
        store: any Store, settings: Settings, accounts: [Account], logger: Logger, metrics: ReconcileMetrics, userAgent: String
    ) {
        self.store = store
        self.logger = logger
        self.metrics = metrics
        client = InquiryClient(userAgent: userAgent, eventLoopGroup: threads.group)
        inquirer = Inquirer(client: client, tokens: TokenCache(client: client))
        state = Locked(State(settings: settings, accounts: accounts, pacer: AccountPacer(perMinute: settings.perAccountPerMinute)))
        store.setInquirySchedule(settings.schedule)
        for account in accounts { metrics.register(account.scope) }
    }

    /// The accounts asked now.
    public var scopes: [Scope] { state.withLock { $0.accounts.map(\.scope) } }

    /// Replaces the settings and accounts (a reload). Inquiries in flight finish with the old
    /// ones; tokens are fetched again with the new credentials.
    public func update(settings: Settings, accounts: [Account]) async {
        state.withLock { state in
            state.settings = settings
            state.accounts = accounts
            state.pacer.perMinute = settings.perAccountPerMinute
            state.nextAccount = 0
        }
        store.setInquirySchedule(settings.schedule)
        for account in accounts { metrics.register(account.scope) }
        await inquirer.tokens.clear()
        serveWireQueue()
        wakeups.signal()
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                while !state.withLock({ $0.stopping }), !Task.isCancelled {
                    let generation = wakeups.generation
                    await yieldToProviders()
                    for claimed in await claimRound() {
                        group.addTask(executorPreference: threads.executor(0)) { [self] in
                            await perform(claimed)
                        }
                    }
                    // Until an inquiry ends or the poll interval passes.
                    await wakeups.wait(since: generation, timeout: .milliseconds(Self.pollMillis))
                }
                // Stopping: the inquiries on the wire have `shutdownGrace` to end; the rest are
                // cancelled and their claims given back, due again at once.
                let deadline = ContinuousClock.now + Self.shutdownGrace
                while state.withLock({ $0.inFlight }) > 0, ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(50))
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.state.withLock { $0.stopping = true }
            self.serveWireQueue()
            self.wakeups.signal()
        }
        state.withLock { $0.stopping = true }
        serveWireQueue()
        await shutdown()
    }

    /// Asks about one order now, outside the schedule (`orders reconcile`, the API, the
    /// console), records the answer and returns its record. The order's schedule moves only if
    /// the answer changes the order.
    public func ask(provider: String, account: String, orderRef: String, trigger: InquiryTrigger) async throws(InquiryAskError) -> InquiryRecord {
        let scope = Scope(provider: provider, account: account)
        guard let configured = state.withLock({ $0.accounts.first { $0.scope == scope } }) else { throw .noInquiry }
        let detail: OrderDetail?
        do {
            detail = try await store.order(provider: provider, account: account, orderRef: orderRef, includeRaw: false)
        } catch {
            throw .store(error)
        }
        guard let order = detail?.order else { throw .unknownOrder }
        let askedAt = WallClock.millis()
        let (timeout, heldUntil) = state.withLock { ($0.settings.timeoutSeconds, $0.pacer.heldUntil(scope, now: askedAt)) }
        let attempt: InquiryAttempt
        if let heldUntil {
            // The provider asked (429/503 with Retry-After) to be left alone: not asked now either.
            attempt = InquiryAttempt(
                url: configured.inquiry.baseURL, httpStatus: nil, providerStatus: nil,
                result: .error("not asked: the provider asked ipnd to wait (Retry-After) until \(WallClock.text(heldUntil))"),
                durationMs: 0, retryAfterMillis: nil, unauthorized: false)
        } else {
            attempt = await inquirer.ask(configured.inquiry, scope: scope, order: InquiryOrder(order), timeout: .seconds(timeout))
        }
        if let until = attempt.retryAfterMillis { state.withLock { $0.pacer.hold(scope, until: until) } }
        do {
            let record = try await store.recordInquiry(CompletedInquiry(
                scope: scope, orderRef: orderRef, askedAt: WallClock.text(askedAt), trigger: trigger, url: attempt.url,
                durationMs: attempt.durationMs, httpStatus: attempt.httpStatus, providerStatus: attempt.providerStatus,
                result: attempt.result))
            report(record, attempt: attempt)
            return record
        } catch {
            logger.error("inquiry not recorded: store unavailable", metadata: [
                "provider": "\(provider)", "account": "\(account)", "order_ref": "\(orderRef)", "store_error": "\(error)",
            ])
            throw .store(error)
        }
    }

    /// Closes the HTTP client and stops its thread (`run` does so when it ends; a reconciler
    /// used for `ask` only, never run, is shut down by its user).
    public func shutdown() async {
        await client.shutdown()
        await threads.shutdown()
    }

    // MARK: The loop

    /// An order claimed by a round: when its pacing slot starts and when its lease ends (Unix ms).
    private typealias ClaimedOrder = (order: DueOrder, account: Account, claim: InquiryClaim, startAt: Int64, leaseEnd: Int64)

    /// Claims what the free slots and the accounts' pacing allow, each order with its slot.
    private func claimRound() async -> [ClaimedOrder] {
        let (accounts, settings, start) = state.withLock { state in
            (state.accounts, state.settings, state.nextAccount)
        }
        guard !accounts.isEmpty else { return [] }
        var started: [ClaimedOrder] = []
        let leaseMillis = settings.leaseMillis
        for offset in 0..<accounts.count {
            let account = accounts[(start + offset) % accounts.count]
            let now = WallClock.millis()
            let wanted = state.withLock { state -> Int in
                let free = state.claimCap - state.inFlight
                guard free > 0, !state.stopping else { return 0 }
                return min(free, Self.claimLimit, state.pacer.available(account.scope, now: now, horizon: Self.claimHorizonMillis))
            }
            guard wanted > 0 else { continue }
            let due: [DueOrder]
            do {
                due = try await store.claimDueOrders(
                    scope: account.scope, limit: wanted, now: WallClock.text(now), leaseUntil: WallClock.text(now + leaseMillis))
            } catch {
                logger.error("due orders not claimed: store unavailable", metadata: [
                    "provider": "\(account.scope.provider)", "account": "\(account.scope.account)", "store_error": "\(error)",
                ])
                continue
            }
            for order in due {
                let claim = InquiryClaim(orderID: order.orderID, lease: order.lease, next: .giveUp)
                let startAt = state.withLock { state -> Int64 in
                    state.inFlight += 1
                    return state.pacer.reserve(account.scope, now: now)
                }
                started.append((order: order, account: account, claim: claim, startAt: startAt, leaseEnd: now + leaseMillis))
            }
        }
        state.withLock { $0.nextAccount = (start + 1) % max(1, accounts.count) }
        return started
    }

    /// One scheduled inquiry: waits for its pacing slot and a place on the wire, asks, records,
    /// and frees both.
    private func perform(_ claimed: ClaimedOrder) async {
        let (order, account, claim) = (claimed.order, claimed.account, claimed.claim)
        defer {
            // The loop is woken early only when it could claim nothing more: otherwise its next
            // poll claims what this order's end allows, in one write with the rest.
            let wasFull = state.withLock { state -> Bool in
                defer { state.inFlight -= 1 }
                return state.inFlight >= state.claimCap
            }
            if wasFull { wakeups.signal() }
        }
        let settings = state.withLock { $0.settings }
        let schedule = settings.schedule
        let changedAt = order.schedule.changedAtMillis(createdAt: order.createdAt) ?? WallClock.millis()
        if schedule.isLastStep(changedAt: changedAt, askedAt: WallClock.millis()) {
            // give_up_after has passed since the last change: flagged, not asked again.
            await giveUp(claimed)
            return
        }
        guard await waitForTheWire(claimed) else {
            // Stopping before it was asked, or its lease too short now to ask and record within
            // it: given back, due again at once (for this node's next round, or another node).
            try? await store.releaseInquiryClaims([claim], now: WallClock.text())
            return
        }
        // What changed while it waited: give_up_after passed, or the account was put on hold by
        // another of its inquiries (429 or 503 with Retry-After).
        let askedAt = WallClock.millis()
        if schedule.isLastStep(changedAt: changedAt, askedAt: askedAt) {
            freeWirePlace()
            await giveUp(claimed)
            return
        }
        if let until = state.withLock({ $0.pacer.heldUntil(account.scope, now: askedAt) }) {
            freeWirePlace()
            try? await store.releaseInquiryClaims([claim], now: WallClock.text(until))
            return
        }
        let attempt = await inquirer.ask(
            account.inquiry, scope: account.scope, order: InquiryOrder(order), timeout: .seconds(settings.timeoutSeconds))
        freeWirePlace()
        if Task.isCancelled {
            // Cut short by a stop: not an answer; asked again, by this node's next start or another.
            try? await store.releaseInquiryClaims([claim], now: WallClock.text())
            return
        }
        var next = schedule.next(afterStep: order.schedule.step, changedAt: changedAt, askedAt: askedAt)
        if let until = attempt.retryAfterMillis {
            // Asked to wait: this step is asked again once the wait is over.
            state.withLock { $0.pacer.hold(account.scope, until: until) }
            next = .ask(atMillis: until, step: order.schedule.step)
        }
        var completed = CompletedInquiry(
            scope: account.scope, orderRef: order.orderRef, askedAt: WallClock.text(askedAt), trigger: .schedule, url: attempt.url,
            durationMs: attempt.durationMs, httpStatus: attempt.httpStatus, providerStatus: attempt.providerStatus,
            result: attempt.result)
        completed.claim = InquiryClaim(orderID: order.orderID, lease: claim.lease, next: next)
        do {
            let record = try await store.recordInquiry(completed)
            report(record, attempt: attempt)
        } catch {
            // The claim runs out and the order is asked again: at least once, never lost.
            logger.error("inquiry not recorded: store unavailable; the order is asked again", metadata: [
                "provider": "\(account.scope.provider)", "account": "\(account.scope.account)", "order_ref": "\(order.orderRef)",
                "store_error": "\(error)",
            ])
        }
    }

    /// Flags the claimed order `unsettled` and ends its schedule, without asking.
    private func giveUp(_ claimed: ClaimedOrder) async {
        let metadata: Logger.Metadata = [
            "provider": "\(claimed.account.scope.provider)", "account": "\(claimed.account.scope.account)",
            "order_ref": "\(claimed.order.orderRef)",
        ]
        do {
            if try await store.giveUpInquiries(claimed.claim, scope: claimed.account.scope, orderRef: claimed.order.orderRef) {
                logger.warning("order flagged unsettled: give_up_after has passed since its last change; no longer asked", metadata: metadata)
            }
        } catch {
            // The claim runs out and the order is due again: given up on at the next round.
            logger.error("order not flagged unsettled: store unavailable", metadata: metadata.merging(["store_error": "\(error)"]) { $1 })
        }
    }

    /// Waits until the order's pacing slot starts, then for a place on the wire (at most
    /// `max_in_flight`, handed out in the order asked for), and takes it. False, without a
    /// place: the reconciler is stopping, or the lease has too little left for a token request,
    /// the inquiry and the record (a provider so slow that the wire stayed full).
    ///
    /// One sleep to the slot and one wake for the place: at 100 inquiries/s, a wake every few
    /// milliseconds per waiting order cost more CPU than the inquiries themselves.
    private func waitForTheWire(_ claimed: ClaimedOrder) async -> Bool {
        let wait = claimed.startAt - WallClock.millis()
        if wait > 0 { try? await Task.sleep(for: .milliseconds(wait)) }
        let placed = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let now: Bool? = state.withLock { state in
                if state.stopping { return false }
                if state.onWire < state.settings.maxInFlight, state.wireQueue.isEmpty {
                    state.onWire += 1
                    return true
                }
                state.wireQueue.append(continuation)
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
        guard placed else { return false }
        let timeoutSeconds = state.withLock { $0.settings.timeoutSeconds }
        let fits = WallClock.millis() + Int64(timeoutSeconds) * 2_000 + 1_000 <= claimed.leaseEnd
        if !fits { freeWirePlace() }
        return fits
    }

    /// Gives a place on the wire back: to the longest waiting inquiry, or free.
    private func freeWirePlace() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if !state.stopping, state.onWire <= state.settings.maxInFlight, !state.wireQueue.isEmpty {
                return state.wireQueue.removeFirst()
            }
            state.onWire -= 1
            return nil
        }
        next?.resume(returning: true)
    }

    /// Hands free places on the wire to waiting inquiries (`max_in_flight` raised by a reload),
    /// or, when stopping, sends every waiting one away without a place.
    private func serveWireQueue() {
        let (placed, refused) = state.withLock { state -> ([CheckedContinuation<Bool, Never>], [CheckedContinuation<Bool, Never>]) in
            if state.stopping {
                defer { state.wireQueue.removeAll() }
                return ([], state.wireQueue)
            }
            var placed: [CheckedContinuation<Bool, Never>] = []
            while state.onWire < state.settings.maxInFlight, !state.wireQueue.isEmpty {
                state.onWire += 1
                placed.append(state.wireQueue.removeFirst())
            }
            return (placed, [])
        }
        for continuation in placed { continuation.resume(returning: true) }
        for continuation in refused { continuation.resume(returning: false) }
    }

    /// Waits, up to `maxYield`, while providers' notifications are being recorded in numbers.
    private func yieldToProviders() async {
        let deadline = ContinuousClock.now + Self.maxYield
        while store.recording.count >= Self.busyRecording, ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(2))
        }
    }

    // MARK: Reporting

    /// One log line per inquiry, its metrics, and a refused credential at error once an hour.
    private func report(_ record: InquiryRecord, attempt: InquiryAttempt) {
        metrics.asked(provider: record.provider, outcome: record.outcome, milliseconds: record.durationMs)
        var metadata: Logger.Metadata = [
            "provider": "\(record.provider)", "account": "\(record.account)", "order_ref": "\(record.orderRef)",
            "trigger": "\(record.trigger.rawValue)", "outcome": "\(record.outcome.rawValue)",
            "http_status": "\(record.httpStatus.map(String.init) ?? "-")", "provider_status": "\(record.providerStatus ?? "-")",
            "notification_id": "\(record.notificationID.map(String.init) ?? "-")", "latency_ms": "\(record.durationMs)",
            "inquiry_id": "\(record.id)",
        ]
        if let verdict = record.verdict { metadata["verdict"] = "\(verdict.rawValue)" }
        if let error = record.error { metadata["error"] = "\(error)" }
        if let detail = attempt.detail { metadata["detail"] = "\(detail)" }
        let level: Logger.Level = switch record.outcome {
        case .badSignature: .warning
        case .error where attempt.unauthorized: .warning
        case .error where attempt.misconfigured: .error
        case .error, .cannotAsk: .notice
        default: record.verdict == .mismatch ? .warning : .info
        }
        logger.log(level: level, "inquiry", metadata: metadata)
        if attempt.unauthorized {
            let scope = Scope(provider: record.provider, account: record.account)
            metrics.unauthorized(scope)
            let now = WallClock.millis()
            let due = state.withLock { state -> Bool in
                guard now - (state.unauthorizedLogged[scope] ?? .min / 2) >= 3_600_000 else { return false }
                state.unauthorizedLogged[scope] = now
                return true
            }
            if due {
                logger.error("the provider refused the account's inquiry credential (401); check its inquiry section", metadata: [
                    "provider": "\(record.provider)", "account": "\(record.account)",
                ])
            }
        }
    }
}

extension InquiryOrder {
    init(_ order: DueOrder) {
        self.init(
            orderRef: order.orderRef, providerTxnID: order.providerTxnID, state: order.state, amount: order.amount,
            expected: order.expected, createdAtMillis: Timestamp.parse(order.createdAt) ?? 0)
    }

    init(_ order: OrderRecord) {
        self.init(
            orderRef: order.orderRef, providerTxnID: order.providerTxnID, state: order.state, amount: order.amount,
            expected: order.expected, createdAtMillis: Timestamp.parse(order.createdAt) ?? 0)
    }
}
