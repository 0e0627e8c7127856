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

import IPNCore

/// Reading the store: what the query commands, the ops API, the console and the metrics ask.
/// Every backend answers the same questions with the same records.
public protocol StoreReading: AuditReading {
    /// Orders, newest first.
    func orders(_ filter: OrderFilter) async throws(StoreError) -> [OrderRecord]
    /// One order with its transitions, notifications and events; nil when unknown.
    func order(provider: String, account: String, orderRef: String, includeRaw: Bool) async throws(StoreError) -> OrderDetail?
    /// Received notifications, newest first.
    func notifications(_ filter: NotificationFilter, includeRaw: Bool) async throws(StoreError) -> [NotificationRecord]
    /// Order counts by state.
    func orderCountsByState() async throws(StoreError) -> [OrderState: Int]
    /// Events after `filter.after`, ascending; a page with `oldestSeq` set when retention removed
    /// events after `filter.after`.
    func events(_ filter: EventFilter) async throws(StoreError) -> EventPage
    /// The seq of the newest event committed (0 when there has been none).
    func newestEventSeq() async throws(StoreError) -> Int64
    /// Events committed but not in the feed yet (PostgreSQL numbers them just after their commit;
    /// SQLite as it writes them: always 0).
    func unsequencedEventCount() async throws(StoreError) -> Int
    /// Deliveries, newest first.
    func deliveries(_ filter: DeliveryFilter) async throws(StoreError) -> [DeliveryRecord]
    /// Each delivery target the store knows of (configured or with deliveries): pause, backlog.
    func deliveryTargets() async throws(StoreError) -> [DeliveryTargetStatus]

    // MARK: The ops console's reads. Each answers from an index or a few hundred rows at most,
    // however large the store: the console's pages must stay fast on millions of notifications.

    /// Notification counts per hour, provider, account, verdict and reason, for the hours
    /// starting at or after `since` (`Timestamp` text; pass an hour's first millisecond to
    /// include that hour). Read from counts kept as notifications are stored (see
    /// `HourlyNotificationCount`), not by counting notifications; in no particular order.
    func notificationCounts(since: String) async throws(StoreError) -> [HourlyNotificationCount]
    /// How many orders carry `flag` (`amount_mismatch`), and the newest `limit` of them.
    /// Flagged orders are few: a backend indexes the orders that carry any flag.
    func flaggedOrders(_ flag: String, limit: Int) async throws(StoreError) -> FlaggedOrders
    /// Orders of any provider and account whose reference starts with `search.referencePrefix`,
    /// ascending by (reference, id), after `search.after`, at most `search.limit`: an index on
    /// (order_ref, id) answers it.
    func searchOrders(_ search: OrderSearch) async throws(StoreError) -> [OrderRecord]
    /// One notification by id (raw body and stored headers when `includeRaw`); nil when unknown.
    func notification(id: Int64, includeRaw: Bool) async throws(StoreError) -> NotificationRecord?
    /// The deliveries of the events of order `orderID` (`OrderRecord.id`), newest first.
    func deliveries(orderID: Int64) async throws(StoreError) -> [DeliveryRecord]

    /// Stored `rejected` notifications matching `selection`, ascending by id, at most
    /// `selection.limit`: each with its request as kept (target, headers, body) and the
    /// notifications `notifications reverify` already recorded from it (`reverified_from`).
    func rejectedRequests(_ selection: RejectedSelection) async throws(StoreError) -> [RejectedRequest]

    // MARK: Reconciliation (README.md, "Reconciliation")

    /// Inquiries, newest first.
    func inquiries(_ filter: InquiryFilter) async throws(StoreError) -> [InquiryRecord]
    /// Due and overdue orders of `scopes` (the accounts with `inquiry`, read from the schedule's
    /// index), and how many orders are flagged `unsettled`.
    func inquiryBacklog(scopes: [Scope], now: String) async throws(StoreError) -> InquiryBacklog
}

/// The store the daemon writes: one notification, one expectation, one delivery outcome at a
/// time, each acknowledged only once committed. `SQLiteStore` and `PostgresStore` implement it.
public protocol Store: StoreReading, InquiryStore, AuditStore {
    /// Records `entry` through the one write path and returns its verdict once committed.
    func record(_ entry: InboxEntry) async throws(StoreError) -> RecordOutcome
    /// Records `entry` as `record` does, and `audit` in the same transaction (a notification
    /// `notifications reverify --apply` records). Never batched with providers' notifications.
    func record(_ entry: InboxEntry, audit: AuditEntry) async throws(StoreError) -> RecordOutcome
    /// What `record(entry)` would conclude if it ran now, writing nothing: the facts are read
    /// and `RecordingPlanner` decides inside one read transaction (a dry run of
    /// `notifications reverify`). The outcome's `notificationID` is 0; `eventsWritten` counts
    /// the events the write would make.
    func plan(_ entry: InboxEntry) async throws(StoreError) -> RecordOutcome
    /// Registers the amount and currency `orderRef` must be paid with, creating the order in
    /// state `expected` when it is not known yet.
    /// `audit`, when given, is written in the same transaction (its detail gains the order's state).
    func setExpectation(provider: String, account: String, orderRef: String, amount: Money, audit: AuditEntry?) async throws(StoreError)
        -> ExpectationOutcome
    /// Proves the store accepts a durable write right now (readiness and watchdog).
    func heartbeat() async throws(StoreError)
    /// The delivery targets events are written with from now on (the config's, at start and
    /// on reload).
    func setDeliveryRoutes(_ routes: [DeliveryRoute])
    /// Makes sure every configured target has its row (its pause state, the console's list).
    func registerDeliveryTargets(_ names: [String]) async throws(StoreError)
    /// Told when events enter the feed (on PostgreSQL, also those another node committed).
    var eventSignal: EventSignal { get }
    /// Counts the notifications being recorded by this process right now: how busy providers
    /// keep it. Delivery holds its own writes back while they are many.
    var recording: InFlightCount { get }

    /// Takes up to `limit` deliveries of `target` that are due at `now` and first in line for
    /// their order, leasing them to `owner` until `leaseUntil`.
    func claimDeliveries(target: String, limit: Int, now: String, leaseUntil: String, owner: String) async throws(StoreError)
        -> [DeliveryAttempt]
    /// Records what attempts came to (only for deliveries `owner` still leases).
    func finishDeliveries(_ results: [DeliveryAttemptOutcome], owner: String) async throws(StoreError)
    /// A delivery loop's round: records `results` as `finishDeliveries` does, then claims as
    /// `claimDeliveries` does (nothing when `limit` is 0), in one write where the store can.
    func settleDeliveries(
        _ results: [DeliveryAttemptOutcome], thenClaim target: String, limit: Int, now: String, leaseUntil: String, owner: String
    ) async throws(StoreError) -> [DeliveryAttempt]
    /// Extends the leases `owner` holds on deliveries whose attempts still run.
    func renewLeases(ids: [Int64], owner: String, until: String) async throws(StoreError)
    /// Gives back deliveries `owner` leased without an answer (shutdown): due again at once.
    func releaseDeliveries(ids: [Int64], owner: String, now: String) async throws(StoreError)
    /// Pauses `target` (it answered 410) until `resumeTarget`.
    func pauseTarget(_ target: String, reason: String, at: String) async throws(StoreError)
    /// Resumes a paused target; returns how many of its deliveries are due again. `audit`, when
    /// given, is written in the same transaction (its detail gains the count).
    func resumeTarget(_ target: String, now: String, audit: AuditEntry?) async throws(StoreError) -> Int
    /// Puts deliveries back to pending for an immediate attempt; returns how many. `audit`, when
    /// given, is written in the same transaction (its detail gains the count).
    func retryDeliveries(_ selection: DeliveryRetrySelection, now: String, audit: AuditEntry?) async throws(StoreError) -> Int

    /// Retention: removes, in one short write transaction, up to `limit` `rejected`
    /// notifications received before `receivedBefore` (`Timestamp` text), oldest first. No
    /// other verdict is ever removed. Returns how many were.
    func pruneRejected(receivedBefore: String, limit: Int) async throws(StoreError) -> Int
    /// Retention: in one short write transaction, examines up to `limit` events with a seq above
    /// `afterSeq` that occurred before `occurredBefore`, in seq order, and removes those whose
    /// deliveries are all `delivered` or `failed` (with those deliveries); an event still owed
    /// to a target stays. `events_pruned_through` rises to the highest seq removed, so the
    /// feed answers 410 to a reader after an older seq.
    func pruneEvents(occurredBefore: String, afterSeq: Int64, limit: Int) async throws(StoreError) -> EventPruning

    /// Where the store is, for logs: a file path, or the database's address (never a password).
    var location: String { get }

    /// Stops taking writes, waits for those already accepted and closes the store. Returns a
    /// failure that lost nothing, for the log (a final checkpoint SQLite could not make).
    @discardableResult
    func close() async throws(StoreError) -> StoreError?
}

/// A delivery target as the store sees it.
public struct DeliveryTargetStatus: Sendable, Equatable {
    public var name: String
    /// When it was paused (410), nil when it is not.
    public var pausedAt: String?
    public var pausedReason: String?
    /// Deliveries not yet delivered nor failed.
    public var backlog: Int
    /// When the oldest of them was created.
    public var oldestPendingAt: String?
    public var failed: Int

    public init(name: String, pausedAt: String?, pausedReason: String?, backlog: Int, oldestPendingAt: String?, failed: Int) {
        self.name = name
        self.pausedAt = pausedAt
        self.pausedReason = pausedReason
        self.backlog = backlog
        self.oldestPendingAt = oldestPendingAt
        self.failed = failed
    }
}

/// A delivery leased for one attempt, with its event.
public struct DeliveryAttempt: Sendable, Equatable {
    public var id: Int64
    public var target: String
    /// Attempts made before this one.
    public var attempts: Int
    /// When the first attempt was made (`Timestamp` text); nil before it.
    public var firstAttemptAt: String?
    public var event: EventRecord

    public init(id: Int64, target: String, attempts: Int, firstAttemptAt: String?, event: EventRecord) {
        self.id = id
        self.target = target
        self.attempts = attempts
        self.firstAttemptAt = firstAttemptAt
        self.event = event
    }
}

/// What one attempt came to.
public struct DeliveryAttemptOutcome: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        case delivered
        /// Not delivered; attempted again at this time (`Timestamp` text).
        case retry(at: String)
        /// Not delivered, and given up (three days after the first attempt).
        case failed
        /// The target answered 410: the delivery waits, pending, until the target is resumed.
        case paused
    }

    public var id: Int64
    public var attemptedAt: String
    /// The HTTP status, nil when none came (timeout, connection or TLS error).
    public var status: Int?
    /// What went wrong, for people; nil when delivered.
    public var error: String?
    public var outcome: Outcome

    public init(id: Int64, attemptedAt: String, status: Int?, error: String?, outcome: Outcome) {
        self.id = id
        self.attemptedAt = attemptedAt
        self.status = status
        self.error = error
        self.outcome = outcome
    }
}

extension StoreReading {
    /// A store that numbers its events as it writes them has none waiting.
    public func unsequencedEventCount() async throws(StoreError) -> Int { 0 }
}

extension Store {
    /// `setExpectation` with no audit record (tests, tools).
    public func setExpectation(provider: String, account: String, orderRef: String, amount: Money) async throws(StoreError)
        -> ExpectationOutcome
    {
        try await setExpectation(provider: provider, account: account, orderRef: orderRef, amount: amount, audit: nil)
    }

    /// `resumeTarget` with no audit record (tests, tools).
    public func resumeTarget(_ target: String, now: String) async throws(StoreError) -> Int {
        try await resumeTarget(target, now: now, audit: nil)
    }

    /// `retryDeliveries` with no audit record (tests, tools).
    public func retryDeliveries(_ selection: DeliveryRetrySelection, now: String) async throws(StoreError) -> Int {
        try await retryDeliveries(selection, now: now, audit: nil)
    }

    /// Two writes: the outcomes, then the claim.
    public func settleDeliveries(
        _ results: [DeliveryAttemptOutcome], thenClaim target: String, limit: Int, now: String, leaseUntil: String, owner: String
    ) async throws(StoreError) -> [DeliveryAttempt] {
        if !results.isEmpty { try await finishDeliveries(results, owner: owner) }
        guard limit > 0 else { return [] }
        return try await claimDeliveries(target: target, limit: limit, now: now, leaseUntil: leaseUntil, owner: owner)
    }
}
