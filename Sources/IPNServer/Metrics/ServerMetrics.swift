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

import CoreMetrics
import IPNCore

/// The daemon's metrics, created once so the hot path only increments existing instruments.
public struct ServerMetrics: Sendable {
    /// The verdicts a notification stored `unlinked` can end with once its payment arrives:
    /// `Recorder.applyWaitingNotifications` gives it what `OrderStateMachine.decide` decides for
    /// its effect (a capture's or refund's transition, a failed one's record, an unmapped
    /// status), never `duplicate`, `unlinked` or `rejected`, which are decided before it waits.
    /// Only these series of `ipnd_notifications_linked_total` exist from the start.
    static let linkedVerdicts: [Verdict] = [.applied, .recorded, .stale, .mismatch, .unknownStatus]

    /// One provider's instruments; `notifications` is indexed like `Verdict.allCases`.
    private struct ProviderInstruments: Sendable {
        let notifications: [Counter]
        /// Notifications stored `unlinked`, applied when their payment arrived, by their new
        /// verdict (`linkedVerdicts`).
        let linked: [Verdict: Counter]
        let latency: Timer
        let tooLarge: Counter
        let unavailable: Counter
    }

    private let providers: [String: ProviderInstruments]
    let commitDuration: Timer
    let commitBatchSize: Recorder
    let commitFailures: Counter
    let checkpointDuration: Timer
    let checkpointFailures: Counter
    private let timeouts: Counter
    private let reloadFailures: Counter
    /// `ipnd_accept_paused_total` and `ipnd_accept_failures_total` by listener (`server`, `ops`):
    /// there from the start, at 0.
    private let acceptCountersByListener: [String: AcceptCounters]

    /// A listener's counters of the times it did not accept (`ListenerGuard` increments them).
    struct AcceptCounters: Sendable {
        /// `ipnd_accept_paused_total`: stops at its connection limit.
        let pauses: Counter
        /// `ipnd_accept_failures_total`: accepts that failed.
        let failures: Counter

        init(listener: String, factory: any MetricsFactory) {
            pauses = Counter(label: "ipnd_accept_paused_total", dimensions: [("listener", listener)], factory: factory)
            failures = Counter(label: "ipnd_accept_failures_total", dimensions: [("listener", listener)], factory: factory)
        }
    }
    private let factory: any MetricsFactory
    /// `ipnd_rejected_unstored_total` by provider and reason, made when first counted (most
    /// pairs never are).
    private let unstored = Locked<[UnstoredKey: Counter]>([:])

    private struct UnstoredKey: Hashable {
        let provider: String
        let reason: RejectReason
    }

    /// - Parameter factory: where the instruments live (the daemon's own Prometheus registry;
    ///   never the process-wide `MetricsSystem`, so several daemons can share a process).
    public init(factory: any MetricsFactory) {
        var providers: [String: ProviderInstruments] = [:]
        for provider in ProviderRegistry.all.map({ $0.name }) {
            providers[provider] = ProviderInstruments(
                notifications: Verdict.allCases.map { verdict in
                    Counter(label: "ipnd_notifications_total", dimensions: [("provider", provider), ("verdict", verdict.rawValue)],
                            factory: factory)
                },
                linked: Dictionary(uniqueKeysWithValues: Self.linkedVerdicts.map { verdict in
                    (verdict, Self.linkedCounter(provider: provider, verdict: verdict, factory: factory))
                }),
                latency: Timer(label: "ipnd_request_duration_seconds", dimensions: [("provider", provider)],
                               preferredDisplayUnit: .seconds, factory: factory),
                tooLarge: Counter(label: "ipnd_requests_too_large_total", dimensions: [("provider", provider)], factory: factory),
                unavailable: Counter(label: "ipnd_store_unavailable_total", dimensions: [("provider", provider)], factory: factory)
            )
        }
        self.providers = providers
        commitDuration = Timer(label: "ipnd_store_commit_duration_seconds", preferredDisplayUnit: .seconds, factory: factory)
        commitBatchSize = Recorder(label: "ipnd_store_commit_batch_size", aggregate: true, factory: factory)
        commitFailures = Counter(label: "ipnd_store_commit_failures_total", factory: factory)
        checkpointDuration = Timer(label: "ipnd_store_checkpoint_duration_seconds", preferredDisplayUnit: .seconds, factory: factory)
        checkpointFailures = Counter(label: "ipnd_store_checkpoint_failures_total", factory: factory)
        timeouts = Counter(label: "ipnd_request_timeouts_total", factory: factory)
        reloadFailures = Counter(label: "ipnd_config_reload_failures_total", factory: factory)
        acceptCountersByListener = Dictionary(uniqueKeysWithValues: Self.listeners.map { listener in
            (listener, AcceptCounters(listener: listener, factory: factory))
        })
        self.factory = factory
    }

    private static func linkedCounter(provider: String, verdict: Verdict, factory: any MetricsFactory) -> Counter {
        Counter(label: "ipnd_notifications_linked_total", dimensions: [("provider", provider), ("verdict", verdict.rawValue)],
                factory: factory)
    }

    /// The listeners, by their config section.
    static let listeners = ["server", "ops"]

    func requestTimedOut() { timeouts.increment() }

    /// The `listener`'s counters of the times it did not accept.
    func acceptCounters(listener: String) -> AcceptCounters {
        acceptCountersByListener[listener] ?? AcceptCounters(listener: listener, factory: factory)
    }

    func configReloadFailed() { reloadFailures.increment() }

    func notification(provider: String, verdict: Verdict, latency duration: Duration) {
        guard let instruments = providers[provider] else { return }
        if let index = Verdict.allCases.firstIndex(of: verdict) { instruments.notifications[index].increment() }
        instruments.latency.record(duration: duration)
    }

    /// A waiting notification of `provider` applied when its payment arrived, ending `verdict`.
    /// A verdict outside `linkedVerdicts` (the state machine grew one) is still counted, in a
    /// series made when it first happens.
    func linked(provider: String, verdict: Verdict) {
        guard let instruments = providers[provider] else { return }
        let counter = instruments.linked[verdict] ?? Self.linkedCounter(provider: provider, verdict: verdict, factory: factory)
        counter.increment()
    }

    func tooLarge(provider: String) { providers[provider]?.tooLarge.increment() }

    /// A rejected request answered but not stored, its client past the rejected-storage budget:
    /// counted by provider and reason, and its wait is a provider request's duration like any other.
    func rejectedUnstored(provider: String, reason: RejectReason, latency duration: Duration) {
        guard let instruments = providers[provider] else { return }
        let key = UnstoredKey(provider: provider, reason: reason)
        let counter = unstored.withLock { counters in
            if let counter = counters[key] { return counter }
            let made = Counter(label: "ipnd_rejected_unstored_total", dimensions: [("provider", provider), ("reason", reason.rawValue)],
                               factory: factory)
            counters[key] = made
            return made
        }
        counter.increment()
        instruments.latency.record(duration: duration)
    }

    /// A 503: counted, and its wait is a provider request's duration like any other.
    func storeUnavailable(provider: String, latency duration: Duration) {
        guard let instruments = providers[provider] else { return }
        instruments.unavailable.increment()
        instruments.latency.record(duration: duration)
    }

    /// Feeds the store's commit observer.
    func commit(batchSize: Int, seconds: Double, failed: Bool) {
        commitDuration.recordNanoseconds(Int64(seconds * 1e9))
        commitBatchSize.record(batchSize)
        if failed { commitFailures.increment() }
    }

    /// Feeds the store's checkpoint observer.
    func checkpoint(seconds: Double, failed: Bool) {
        checkpointDuration.recordNanoseconds(Int64(seconds * 1e9))
        if failed { checkpointFailures.increment() }
    }
}
