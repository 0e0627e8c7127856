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
import Foundation
import IPNCore
import IPNStore
import Prometheus

/// One daemon's Prometheus registry: the swift-metrics instruments of `ServerMetrics`, orders
/// by state (refreshed from the store at each scrape) and build info. Each daemon owns one,
/// so tests can run many daemons in one process without sharing counters.
///
/// Instruments are made through `factory` (swift-metrics' `Counter`, `Gauge`, `Timer`,
/// `Recorder`) with no help text: `scrape` prints each family's HELP from `MetricHelp`, and
/// families and series in a stable order (`PrometheusExposition`).
final class MetricsRegistry: Sendable {
    let registry = PrometheusCollectorRegistry()
    /// Makes instruments in `registry`, with ipnd's histogram buckets.
    let factory: PrometheusMetricsFactory
    let server: ServerMetrics
    private let ordersByState: [OrderState: CoreMetrics.Gauge]
    /// `ipnd_delivery_backlog`, `ipnd_delivery_oldest_pending_seconds` and
    /// `ipnd_delivery_target_paused` per target, read from the store at each scrape.
    private let deliveryGaugesByTarget = Locked<[String: DeliveryGauges]>([:])
    /// `ipnd_ready`: whether the store took the heartbeat write of the latest scrape; made by
    /// the first scrape that was given readiness (never 0 for "not asked").
    private let ready = Locked<CoreMetrics.Gauge?>(nil)

    private struct DeliveryGauges {
        let backlog: CoreMetrics.Gauge
        let oldest: CoreMetrics.Gauge
        let paused: CoreMetrics.Gauge
    }
    /// `ipnd_orders_awaiting_inquiry` and `ipnd_orders_unsettled`, read from the store at each scrape.
    private let awaitingInquiry: CoreMetrics.Gauge
    private let unsettled: CoreMetrics.Gauge
    /// `ipnd_events_unsequenced`, read from the store at each scrape.
    private let unsequencedEvents: CoreMetrics.Gauge

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        // Notifications are answered in milliseconds unless the disk is slow; commits fsync.
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        ]
        factory.defaultValueHistogramBuckets = [1, 2, 4, 8, 16, 32, 64, 128, 256]
        // A delivery attempt takes up to its target's timeout (15 s by default, at most 300 s).
        factory.durationHistogramBuckets["ipnd_delivery_duration_seconds"] = [
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
            .seconds(15), .seconds(30), .seconds(60), .seconds(300),
        ]
        // An inquiry takes up to `reconcile.timeout_seconds` (10 s by default), twice with a token.
        factory.durationHistogramBuckets["ipnd_inquiry_duration_seconds"] = [
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
        ]
        self.factory = factory
        server = ServerMetrics(factory: factory)
        var gauges: [OrderState: CoreMetrics.Gauge] = [:]
        for state in OrderState.allCases {
            gauges[state] = CoreMetrics.Gauge(label: "ipnd_orders", dimensions: [("state", state.rawValue)], factory: factory)
        }
        ordersByState = gauges
        awaitingInquiry = CoreMetrics.Gauge(label: "ipnd_orders_awaiting_inquiry", factory: factory)
        unsettled = CoreMetrics.Gauge(label: "ipnd_orders_unsettled", factory: factory)
        unsequencedEvents = CoreMetrics.Gauge(label: "ipnd_events_unsequenced", factory: factory)
        CoreMetrics.Gauge(label: "ipnd_build_info", dimensions: [("version", BuildInfo.version)], factory: factory).record(1)
    }

    /// The Prometheus text exposition, with order counts read from `store` now: every family
    /// with HELP and TYPE, families sorted by name and series by labels, the same from scrape
    /// to scrape. When the store cannot be read, the order gauges keep their last values.
    /// - Parameters:
    ///   - inquiryScopes: the accounts reconciliation asks about (their due orders are the ones
    ///     awaiting an inquiry).
    ///   - ready: whether the store accepts a durable write now, as `/readyz` answers; nil leaves
    ///     `ipnd_ready` as it was (absent until a scrape gives it).
    ///   - clock: the time of day due inquiries and the oldest pending delivery's age are read on.
    func scrape(store: any StoreReading, inquiryScopes: [Scope] = [], ready: Bool? = nil, clock: WallClock = .system) async -> String {
        if let ready {
            let gauge = self.ready.withLock { gauge in
                if let gauge { return gauge }
                let made = CoreMetrics.Gauge(label: "ipnd_ready", factory: factory)
                gauge = made
                return made
            }
            gauge.record(ready ? 1 : 0)
        }
        let now = clock.text()
        if let backlog = try? await store.inquiryBacklog(scopes: inquiryScopes, now: now) {
            awaitingInquiry.record(Double(backlog.awaiting))
            unsettled.record(Double(backlog.unsettled))
        }
        if let waiting = try? await store.unsequencedEventCount() { unsequencedEvents.record(Double(waiting)) }
        if let counts = try? await store.orderCountsByState() {
            for (state, gauge) in ordersByState { gauge.record(Double(counts[state] ?? 0)) }
        }
        if let targets = try? await store.deliveryTargets() {
            let now = Double(clock.millis()) / 1000
            for target in targets {
                let gauges = deliveryGauges(target.name)
                gauges.backlog.record(Double(target.backlog))
                let oldestAt = target.oldestPendingAt.flatMap(Timestamp.parse).map { Double($0) / 1000 }
                gauges.oldest.record(oldestAt.map { max(0, now - $0) } ?? 0)
                gauges.paused.record(target.pausedAt == nil ? 0 : 1)
            }
        }
        return PrometheusExposition(parsing: registry.emitToString()).rendered(help: MetricHelp.text(for:))
    }

    private func deliveryGauges(_ target: String) -> DeliveryGauges {
        deliveryGaugesByTarget.withLock { gauges in
            if let existing = gauges[target] { return existing }
            let made = DeliveryGauges(
                backlog: CoreMetrics.Gauge(label: "ipnd_delivery_backlog", dimensions: [("target", target)], factory: factory),
                oldest: CoreMetrics.Gauge(label: "ipnd_delivery_oldest_pending_seconds", dimensions: [("target", target)], factory: factory),
                paused: CoreMetrics.Gauge(label: "ipnd_delivery_target_paused", dimensions: [("target", target)], factory: factory)
            )
            gauges[target] = made
            return made
        }
    }
}
