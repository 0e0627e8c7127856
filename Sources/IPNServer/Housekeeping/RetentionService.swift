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
import ServiceLifecycle

/// `store.retention` (README.md, "Rejected notifications"): every `interval`, removes rejected notifications
/// older than `rejected_days`, and events older than `events_days` that no delivery target
/// still owes, with their deliveries. Authentic notifications, orders and transitions are never
/// removed.
///
/// Each batch is one short transaction through the store's writer, with a pause after it, so
/// notifications keep being committed between batches however much there is to remove. A
/// rejected row carries its body (up to 64 KB), which SQLite overwrites as it frees it
/// (`secure_delete`, on in Debian's build: the bodies may hold card data), so its batches are
/// smaller: 100 such rows write about 6 MB to the WAL, tens of milliseconds. Each pass that
/// removed something logs what.
final class RetentionService: Service, Sendable {
    /// How a pass runs: the production values, or a test's.
    struct Schedule: Sendable {
        /// Between the end of one pass and the start of the next (the first starts at once).
        var interval: Duration = .seconds(300)
        /// Rejected notifications removed per transaction.
        var rejectedBatchSize = 100
        /// Events examined per transaction.
        var eventBatchSize = 500
        /// After each batch: the writer's time for notifications.
        var pause: Duration = .milliseconds(100)

        init(interval: Duration = .seconds(300), rejectedBatchSize: Int = 100, eventBatchSize: Int = 500,
             pause: Duration = .milliseconds(100)) {
            self.interval = interval
            self.rejectedBatchSize = rejectedBatchSize
            self.eventBatchSize = eventBatchSize
            self.pause = pause
        }
    }

    /// What one pass removed.
    struct PassReport: Sendable, Equatable {
        var rejected = 0
        var events = 0
        var deliveries = 0
        /// Events old enough but still owed to a delivery target, kept.
        var eventsOwed = 0
        /// The highest seq retention has removed so far (`events_pruned_through`).
        var prunedThrough: Int64 = 0
        /// Audit records removed from the oldest end.
        var audit = 0
        var batches = 0
    }

    private let store: any Store
    private let retention: Locked<RetentionSettings>
    private let logger: Logger
    private let schedule: Schedule
    /// Cutoffs are counted back from its time of day, and passes are `interval` apart on it.
    private let clock: WallClock

    init(store: any Store, retention: RetentionSettings, logger: Logger, schedule: Schedule = Schedule(),
         clock: WallClock = .system) {
        self.store = store
        self.retention = Locked(retention)
        self.logger = logger
        self.schedule = schedule
        self.clock = clock
    }

    /// The retention periods from the next pass on (a reloaded config).
    func setRetention(_ settings: RetentionSettings) {
        retention.withLock { $0 = settings }
    }

    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            // Passes start `interval` apart on the clock, counted from each pass's start: a clock
            // that moved on during a pass (its cutoffs read before) brings the next one at once.
            let started = clock.millis()
            do {
                let report = try await pass()
                if report.rejected + report.events + report.audit > 0 {
                    let settings = retention.withLock { $0 }
                    logger.info("retention pass", metadata: [
                        "rejected_removed": "\(report.rejected)", "events_removed": "\(report.events)",
                        "deliveries_removed": "\(report.deliveries)", "events_owed_kept": "\(report.eventsOwed)",
                        "events_pruned_through": "\(report.prunedThrough)", "batches": "\(report.batches)",
                        "rejected_days": "\(settings.rejectedDays)", "events_days": "\(settings.eventsDays)",
                        "audit_removed": "\(report.audit)", "audit_days": "\(settings.auditDays)",
                    ])
                }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("retention pass failed; tried again at the next pass", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown {
                try await self.clock.sleep(untilMillis: started + WallClock.millis(of: self.schedule.interval))
            }
        }
    }

    /// One pass: rejected notifications, then events, batch by batch until none is left to
    /// remove, each batch its own transaction. Stops between batches on shutdown.
    func pass() async throws -> PassReport {
        let settings = retention.withLock { $0 }
        let nowMillis = clock.millis()
        let day: Int64 = 86_400_000
        let rejectedCutoff = Timestamp.format(epochMilliseconds: nowMillis - Int64(settings.rejectedDays) * day)
        let eventsCutoff = Timestamp.format(epochMilliseconds: nowMillis - Int64(settings.eventsDays) * day)
        let auditCutoff = Timestamp.format(epochMilliseconds: nowMillis - Int64(settings.auditDays) * day)
        var report = PassReport()
        while true {
            try checkStillRunning()
            let removed = try await store.pruneRejected(receivedBefore: rejectedCutoff, limit: schedule.rejectedBatchSize)
            report.rejected += removed
            report.batches += 1
            guard removed == schedule.rejectedBatchSize else { break }
            try await pauseBetweenBatches()
        }
        var afterSeq: Int64 = 0
        while true {
            try checkStillRunning()
            let batch = try await store.pruneEvents(occurredBefore: eventsCutoff, afterSeq: afterSeq, limit: schedule.eventBatchSize)
            report.batches += 1
            report.events += batch.events
            report.deliveries += batch.deliveries
            report.eventsOwed += batch.examined - batch.events
            report.prunedThrough = batch.prunedThrough
            guard batch.examined == schedule.eventBatchSize, let last = batch.lastExamined else { break }
            afterSeq = last
            try await pauseBetweenBatches()
        }
        // The audit trail, from its oldest end only: `audit verify` then starts where it was left.
        while true {
            try checkStillRunning()
            let removed = try await store.pruneAudit(before: auditCutoff, limit: schedule.rejectedBatchSize)
            report.audit += removed
            report.batches += 1
            guard removed == schedule.rejectedBatchSize else { break }
            try await pauseBetweenBatches()
        }
        return report
    }

    private func checkStillRunning() throws {
        if Task.isCancelled || Task.isShuttingDownGracefully { throw CancellationError() }
    }

    private func pauseBetweenBatches() async throws {
        try await cancelWhenGracefulShutdown { try await Task.sleep(for: self.schedule.pause) }
    }
}
