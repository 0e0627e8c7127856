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
import IPNStore

/// The reconciler's instruments: `ipnd_inquiries_total{provider,outcome}`,
/// `ipnd_inquiry_duration_seconds{provider}` and `ipnd_inquiries_unauthorized_total{provider,account}`
/// (the gauges of awaiting and unsettled orders are read from the store at each scrape).
public final class ReconcileMetrics: Sendable {
    private struct Instruments: Sendable {
        let outcomes: [InquiryOutcome: Counter]
        let duration: Timer
    }

    private let factory: any MetricsFactory
    private let providers = Locked<[String: Instruments]>([:])
    private let refusals = Locked<[Scope: Counter]>([:])

    public init(factory: any MetricsFactory) {
        self.factory = factory
    }

    /// Creates the account's series now, so that they read 0 before its first inquiry.
    public func register(_ scope: Scope) {
        _ = instruments(scope.provider)
        _ = refused(scope)
    }

    /// The provider refused the account's credential (401): counted per account, as the
    /// once-an-hour log line says only the first.
    func unauthorized(_ scope: Scope) {
        refused(scope).increment()
    }

    private func refused(_ scope: Scope) -> Counter {
        refusals.withLock { refusals in
            if let existing = refusals[scope] { return existing }
            let made = Counter(
                label: "ipnd_inquiries_unauthorized_total", dimensions: [("provider", scope.provider), ("account", scope.account)],
                factory: factory)
            refusals[scope] = made
            return made
        }
    }

    func asked(provider: String, outcome: InquiryOutcome, milliseconds: Int64) {
        let instruments = instruments(provider)
        instruments.outcomes[outcome]?.increment()
        instruments.duration.recordNanoseconds(milliseconds * 1_000_000)
    }

    private func instruments(_ provider: String) -> Instruments {
        providers.withLock { providers in
            if let existing = providers[provider] { return existing }
            let made = Instruments(
                outcomes: Dictionary(uniqueKeysWithValues: InquiryOutcome.allCases.map { outcome in
                    (outcome, Counter(label: "ipnd_inquiries_total", dimensions: [("provider", provider), ("outcome", outcome.rawValue)],
                                      factory: factory))
                }),
                duration: Timer(label: "ipnd_inquiry_duration_seconds", dimensions: [("provider", provider)],
                                preferredDisplayUnit: .seconds, factory: factory))
            providers[provider] = made
            return made
        }
    }
}
