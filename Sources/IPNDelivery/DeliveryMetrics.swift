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

/// The delivery service's instruments: `ipnd_deliveries_total{target,outcome}` and
/// `ipnd_delivery_duration_seconds{target}` (the backlog gauges are read from the store at each
/// scrape). Created per target on first use.
public final class DeliveryMetrics: Sendable {
    /// What an attempt came to, as the counter's `outcome` label says it.
    public enum Outcome: String, Sendable, CaseIterable {
        case delivered
        /// Not delivered; attempted again later (a 410's pause included).
        case retried
        /// Given up three days after the first attempt.
        case failed
    }

    private struct Instruments: Sendable {
        let outcomes: [Outcome: Counter]
        let duration: Timer
    }

    private let factory: any MetricsFactory
    private let targets = Locked<[String: Instruments]>([:])

    public init(factory: any MetricsFactory) {
        self.factory = factory
    }

    /// Creates the target's series now, so they read 0 before its first delivery.
    public func register(target: String) {
        _ = instruments(target)
    }

    func attempted(target: String, seconds: Double) {
        instruments(target).duration.recordNanoseconds(Int64(seconds * 1e9))
    }

    func finished(target: String, outcome: Outcome) {
        instruments(target).outcomes[outcome]?.increment()
    }

    private func instruments(_ target: String) -> Instruments {
        targets.withLock { targets in
            if let existing = targets[target] { return existing }
            let made = Instruments(
                outcomes: Dictionary(uniqueKeysWithValues: Outcome.allCases.map { outcome in
                    (outcome, Counter(label: "ipnd_deliveries_total", dimensions: [("target", target), ("outcome", outcome.rawValue)],
                                      factory: factory))
                }),
                duration: Timer(label: "ipnd_delivery_duration_seconds", dimensions: [("target", target)],
                                 preferredDisplayUnit: .seconds, factory: factory))
            targets[target] = made
            return made
        }
    }
}
