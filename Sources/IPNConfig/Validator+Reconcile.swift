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

/// `reconcile:` (product.md section 12).
extension Validator {
    private static let reconcileKeys = ["schedule", "give_up_after", "max_in_flight", "per_account_per_minute", "timeout_seconds"]

    func reconcileSettings(_ node: ConfigNode?) throws(ConfigError) -> ReconcileSettings {
        var settings = ReconcileSettings()
        guard let node, let pairs = try optionalMapping(node, key: "reconcile") else { return settings }
        try checkKeys(pairs, allowed: Self.reconcileKeys, in: "reconcile")
        if let schedule = node["schedule"] { settings.schedule = try reconcileSchedule(schedule) }
        if let giveUp = node["give_up_after"] {
            settings.giveUpAfterSeconds = try duration(giveUp, key: "reconcile.give_up_after")
        }
        if let first = settings.schedule.first, settings.giveUpAfterSeconds <= first {
            throw ConfigError(
                key: "reconcile.give_up_after",
                "\(ReconcileSettings.Duration.text(settings.giveUpAfterSeconds)) is not longer than the schedule's first step "
                    + "(\(ReconcileSettings.Duration.text(first))): no order would ever be asked")
        }
        if let limit = node["max_in_flight"] {
            settings.maxInFlight = try integer(limit, key: "reconcile.max_in_flight", in: 1...256, what: "an inquiry count")
        }
        if let rate = node["per_account_per_minute"] {
            settings.perAccountPerMinute = try integer(
                rate, key: "reconcile.per_account_per_minute", in: 1...100_000, what: "an inquiry count per account and minute")
        }
        if let timeout = node["timeout_seconds"] {
            settings.timeoutSeconds = try integer(timeout, key: "reconcile.timeout_seconds", in: 1...300, what: "seconds")
        }
        return settings
    }

    /// A non-empty list of durations, each longer than the one before.
    private func reconcileSchedule(_ node: ConfigNode) throws(ConfigError) -> [Int] {
        let key = "reconcile.schedule"
        guard case .sequence(let items, _) = node, !items.isEmpty else {
            throw ConfigError(key: key, "must be a non-empty list of waits such as [10m, 30m, 1h, 3h, 6h, 12h, 24h], found \(node.kindName)")
        }
        var steps: [Int] = []
        for (index, item) in items.enumerated() {
            let step = try duration(item, key: "\(key)[\(index)]")
            if let previous = steps.last, step <= previous {
                throw ConfigError(
                    key: "\(key)[\(index)]",
                    "\(ReconcileSettings.Duration.text(step)) is not longer than the step before it "
                        + "(\(ReconcileSettings.Duration.text(previous))): the steps are waits after the order's last change, in increasing order")
            }
            steps.append(step)
        }
        return steps
    }

    /// `Ns`, `Nm`, `Nh` or `Nd`, N a positive integer; in seconds.
    private func duration(_ node: ConfigNode, key: String) throws(ConfigError) -> Int {
        let text = (try? scalar(node, key: key)) ?? ""
        guard let seconds = ReconcileSettings.Duration.seconds(text) else {
            let shown = text.isEmpty ? node.kindName : "\"\(text.prefix(40))\""
            throw ConfigError(
                key: key,
                "must be a duration: a positive integer and s, m, h or d (90s, 10m, 1h, 7d), at most 3650d; got \(shown)")
        }
        return seconds
    }
}
