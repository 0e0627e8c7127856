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

/// When ipnd asks about an order that has not settled (product.md section 12), as a pure
/// function of the order's last change: the steps are waits after that change (`10m, 30m, 1h,
/// ...`), then one every 24 h, until `give_up_after` has passed since the change. A step whose
/// moment has passed by the time the previous inquiry ends is skipped, never asked late in a
/// burst. The moment `give_up_after` passes is the schedule's last due time: the order is then
/// flagged `unsettled` without another inquiry, and no longer asked.
public struct InquirySchedule: Sendable, Equatable {
    /// Waits after the last change, in milliseconds, ascending.
    public let stepsMillis: [Int64]
    /// After the last step, one inquiry every this many milliseconds.
    public let repeatMillis: Int64
    /// Since the last change: when the order is flagged `unsettled` instead of asked.
    public let giveUpAfterMillis: Int64

    public init(stepsMillis: [Int64], giveUpAfterMillis: Int64, repeatMillis: Int64 = 24 * 3_600_000) {
        let steps = stepsMillis.filter { $0 >= 0 }.sorted()
        self.stepsMillis = steps.isEmpty ? [0] : steps
        self.repeatMillis = max(1000, repeatMillis)
        self.giveUpAfterMillis = max(0, giveUpAfterMillis)
    }

    /// product.md's defaults: 10m, 30m, 1h, 3h, 6h, 12h, 24h, then every 24 h; give up after 7 d.
    public static let standard = InquirySchedule(
        stepsMillis: [10, 30, 60, 180, 360, 720, 1440].map { Int64($0) * 60_000 }, giveUpAfterMillis: 7 * 86_400_000)

    /// What comes next for an order.
    public enum Next: Sendable, Equatable {
        /// Ask at this moment (Unix ms); `step` counts the inquiries since the change.
        case ask(atMillis: Int64, step: Int)
        /// Nothing more to ask: `give_up_after` has passed; flag the order `unsettled`.
        case giveUp
    }

    /// The wait after the change of step `index` (0 is the first inquiry).
    public func offset(ofStep index: Int) -> Int64 {
        if index < stepsMillis.count { return stepsMillis[index] }
        let extra = Int64(index - stepsMillis.count + 1)
        let (product, overflow) = repeatMillis.multipliedReportingOverflow(by: extra)
        guard !overflow else { return .max }
        let (sum, overflowSum) = (stepsMillis.last ?? 0).addingReportingOverflow(product)
        return overflowSum ? .max : sum
    }

    /// The first inquiry after a change at `changedAt` (Unix ms).
    public func first(changedAt: Int64) -> Next {
        step(atLeast: 0, changedAt: changedAt, after: Int64.min)
    }

    /// What follows inquiry number `step` (asked at `askedAt`) of the schedule counted from
    /// `changedAt`: the next step whose moment is after `askedAt`, the give-up moment when no
    /// step comes before it (the order is then flagged, not asked), or `giveUp` when that moment
    /// had already passed.
    public func next(afterStep step: Int, changedAt: Int64, askedAt: Int64) -> Next {
        if isLastStep(changedAt: changedAt, askedAt: askedAt) { return .giveUp }
        return self.step(atLeast: step + 1, changedAt: changedAt, after: askedAt)
    }

    /// Whether `give_up_after` has passed at `askedAt`: the order is flagged, not asked.
    public func isLastStep(changedAt: Int64, askedAt: Int64) -> Bool {
        askedAt >= giveUpAt(changedAt: changedAt)
    }

    /// The moment the schedule gives up (Unix ms).
    public func giveUpAt(changedAt: Int64) -> Int64 {
        let (sum, overflow) = changedAt.addingReportingOverflow(giveUpAfterMillis)
        return overflow ? .max : sum
    }

    private func step(atLeast first: Int, changedAt: Int64, after moment: Int64) -> Next {
        let giveUp = giveUpAt(changedAt: changedAt)
        var index = first
        // Skip the steps already past (at most a few hundred: every 24 h over years).
        while index < 100_000 {
            let (at, overflow) = changedAt.addingReportingOverflow(offset(ofStep: index))
            let when = overflow ? Int64.max : at
            if when >= giveUp { return .ask(atMillis: giveUp, step: index) }
            if when > moment { return .ask(atMillis: when, step: index) }
            index += 1
        }
        return .ask(atMillis: giveUp, step: index)
    }
}

extension OrderState {
    /// Settled: a state reconciliation no longer asks about (anything but `expected`,
    /// `pending` and `authorized`).
    public var isSettled: Bool {
        switch self {
        case .expected, .pending, .authorized: false
        default: true
        }
    }
}
