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
import GRDB
import IPNCore
import IPNStore

/// The embedded store: one SQLite file (WAL, `synchronous=FULL`), written by one group-commit
/// writer, read by concurrent readers. Every write is acknowledged only once committed.
public final class SQLiteStore: Store {
    public let database: SQLiteDatabase
    private let writer: GroupCommitWriter
    public let eventSignal = EventSignal()

    /// Opens (creating and migrating) the store at `path` for the daemon.
    /// - Parameters:
    ///   - maxBatch: the most jobs one commit carries; 1 gives one transaction per notification.
    public convenience init(
        path: String,
        maxBatch: Int = 256,
        busyTimeout: TimeInterval = 5,
        role: SQLiteDatabase.Role = .daemon,
        commitObserver: (@Sendable (_ batchSize: Int, _ seconds: Double, _ failed: Bool) -> Void)? = nil,
        checkpointObserver: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)? = nil
    ) throws(StoreError) {
        self.init(
            database: try SQLiteDatabase(path: path, busyTimeout: busyTimeout, role: role), maxBatch: maxBatch,
            commitObserver: commitObserver, checkpointObserver: checkpointObserver)
    }

    public init(
        database: SQLiteDatabase,
        maxBatch: Int = 256,
        commitObserver: (@Sendable (_ batchSize: Int, _ seconds: Double, _ failed: Bool) -> Void)? = nil,
        checkpointObserver: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)? = nil
    ) {
        self.database = database
        writer = GroupCommitWriter(
            store: database, maxBatch: maxBatch, backgroundCheckpoints: database.role == .daemon, observer: commitObserver,
            checkpointObserver: checkpointObserver)
        let signal = eventSignal
        writer.eventsCommitted.withLock { $0 = { _ in signal.signal() } }
    }

    public var path: String { database.path }
    public let recording = InFlightCount()
    public var maxBatch: Int { writer.maxBatch }

    // MARK: Writes

    public func record(_ entry: InboxEntry) async throws(StoreError) -> RecordOutcome {
        recording.enter()
        defer { recording.leave() }
        let prepared = PreparedEntry(entry)
        return try await writer.submit { tx in try Recorder.record(prepared, in: tx) }
    }

    public func plan(_ entry: InboxEntry) async throws(StoreError) -> RecordOutcome {
        let prepared = PreparedEntry(entry)
        let routes = writer.routes.withLock { $0 }
        let schedule = writer.schedule.withLock { $0 }
        let now = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        // The writer's own reads and decision, on a reader connection: nothing can be written.
        return try await database.read { db in
            try Recorder.plan(
                prepared, in: WriteContext(db: db, now: now, statements: WriteStatements(db), routes: routes, schedule: schedule)
            ).outcome
        }
    }

    public func setExpectation(provider: String, account: String, orderRef: String, amount: Money) async throws(StoreError)
        -> ExpectationOutcome
    {
        try await writer.submit { tx in
            try Recorder.setExpectation(amount, scope: Scope(provider: provider, account: account), orderRef: orderRef, in: tx)
        }
    }

    public func heartbeat() async throws(StoreError) {
        try await writer.submit { tx in
            try tx.db.execute(sql: "INSERT INTO heartbeat (id, at) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET at = excluded.at",
                              arguments: [tx.now])
        }
    }

    public func setDeliveryRoutes(_ routes: [DeliveryRoute]) {
        writer.routes.withLock { $0 = routes }
    }

    /// Makes sure every configured target has its row (pause state, the console's list).
    public func registerDeliveryTargets(_ names: [String]) async throws(StoreError) {
        guard !names.isEmpty else { return }
        try await writer.submit { tx in
            for name in names {
                try tx.db.execute(sql: "INSERT OR IGNORE INTO delivery_targets (name) VALUES (?)", arguments: [name])
            }
        }
    }

    public var location: String { database.path }

    @discardableResult
    public func close() async throws(StoreError) -> StoreError? {
        await shutdown()
        return try database.close()
    }

    /// Stops taking writes and waits for those already accepted (the file stays open).
    public func shutdown() async {
        writer.close()
        await writer.drain()
    }

    // MARK: Deliveries

    public func claimDeliveries(target: String, limit: Int, now: String, leaseUntil: String, owner: String) async throws(StoreError)
        -> [DeliveryAttempt]
    {
        try await writer.submit { tx in
            try DeliveryQueries.claim(tx.db, target: target, limit: limit, now: now, leaseUntil: leaseUntil, owner: owner)
        }
    }

    /// One transaction: a round of a delivery loop costs one commit, not two.
    public func settleDeliveries(
        _ results: [DeliveryAttemptOutcome], thenClaim target: String, limit: Int, now: String, leaseUntil: String, owner: String
    ) async throws(StoreError) -> [DeliveryAttempt] {
        guard !results.isEmpty || limit > 0 else { return [] }
        return try await writer.submit { tx in
            if !results.isEmpty { try DeliveryQueries.finish(tx.db, results, owner: owner) }
            guard limit > 0 else { return [] }
            return try DeliveryQueries.claim(tx.db, target: target, limit: limit, now: now, leaseUntil: leaseUntil, owner: owner)
        }
    }

    public func finishDeliveries(_ results: [DeliveryAttemptOutcome], owner: String) async throws(StoreError) {
        guard !results.isEmpty else { return }
        try await writer.submit { tx in try DeliveryQueries.finish(tx.db, results, owner: owner) }
    }

    public func renewLeases(ids: [Int64], owner: String, until: String) async throws(StoreError) {
        guard !ids.isEmpty else { return }
        try await writer.submit { tx in
            let renew = try tx.db.cachedStatement(sql: "UPDATE deliveries SET lease_until = ? WHERE id = ? AND lease_owner = ?")
            for id in ids { try renew.execute(arguments: [until, id, owner]) }
        }
    }

    public func releaseDeliveries(ids: [Int64], owner: String, now: String) async throws(StoreError) {
        guard !ids.isEmpty else { return }
        try await writer.submit { tx in try DeliveryQueries.release(tx.db, ids: ids, owner: owner) }
    }

    public func pauseTarget(_ target: String, reason: String, at: String) async throws(StoreError) {
        try await writer.submit { tx in try DeliveryQueries.pause(tx.db, target: target, reason: reason, at: at) }
    }

    public func resumeTarget(_ target: String, now: String) async throws(StoreError) -> Int {
        let resumed = try await writer.submit { tx in try DeliveryQueries.resume(tx.db, target: target, now: now) }
        eventSignal.signal()
        return resumed
    }

    public func retryDeliveries(_ selection: DeliveryRetrySelection, now: String) async throws(StoreError) -> Int {
        let count = try await writer.submit { tx in try DeliveryQueries.retry(tx.db, selection, now: now) }
        eventSignal.signal()
        return count
    }

    // MARK: Reconciliation

    public func setInquirySchedule(_ schedule: InquirySchedule) {
        writer.schedule.withLock { $0 = schedule }
    }

    public func claimDueOrders(scope: Scope, limit: Int, now: String, leaseUntil: String) async throws(StoreError) -> [DueOrder] {
        guard limit > 0 else { return [] }
        // Looked for on a reader first: a poll that finds nothing due takes no turn of the
        // writer, which the providers' notifications queue for.
        guard try await database.read({ db in try InquiryQueries.anyDue(db, scope: scope, now: now) }) else { return [] }
        return try await writer.submit { tx in
            try InquiryQueries.claim(tx.db, scope: scope, limit: limit, now: now, leaseUntil: leaseUntil)
        }
    }

    public func recordInquiry(_ inquiry: CompletedInquiry) async throws(StoreError) -> InquiryRecord {
        try await writer.submit { tx in try InquiryQueries.record(inquiry, in: tx) }
    }

    public func releaseInquiryClaims(_ claims: [InquiryClaim], now: String) async throws(StoreError) {
        guard !claims.isEmpty else { return }
        try await writer.submit { tx in try InquiryQueries.release(tx.db, claims, now: now) }
    }

    public func giveUpInquiries(_ claim: InquiryClaim, scope: Scope, orderRef: String) async throws(StoreError) -> Bool {
        try await writer.submit { tx in try InquiryQueries.giveUp(claim, scope: scope, orderRef: orderRef, in: tx) }
    }

    public func inquiries(_ filter: InquiryFilter) async throws(StoreError) -> [InquiryRecord] {
        try await database.read { db in try InquiryQueries.list(db, filter) }
    }

    public func inquiryBacklog(scopes: [Scope], now: String) async throws(StoreError) -> InquiryBacklog {
        try await database.read { db in try InquiryQueries.backlog(db, scopes: scopes, now: now) }
    }

    // MARK: Retention

    public func pruneRejected(receivedBefore: String, limit: Int) async throws(StoreError) -> Int {
        try await writer.submit { tx in try RetentionQueries.pruneRejected(tx.db, receivedBefore: receivedBefore, limit: limit) }
    }

    public func pruneEvents(occurredBefore: String, afterSeq: Int64, limit: Int) async throws(StoreError) -> EventPruning {
        try await writer.submit { tx in
            try RetentionQueries.pruneEvents(tx.db, occurredBefore: occurredBefore, afterSeq: afterSeq, limit: limit)
        }
    }

    /// Leases left by a process that ended (the store lock says no other daemon runs): due
    /// again at once rather than when the lease runs out.
    public func releaseAbandonedLeases() async throws(StoreError) {
        try await writer.submit { tx in
            try tx.db.execute(sql: "UPDATE deliveries SET lease_owner = NULL, lease_until = NULL WHERE state = 'pending' AND lease_owner IS NOT NULL")
        }
    }

    // MARK: Reads

    public func orders(_ filter: OrderFilter) async throws(StoreError) -> [OrderRecord] {
        try await database.read { db in try Queries.orders(db, filter) }
    }

    public func order(provider: String, account: String, orderRef: String, includeRaw: Bool) async throws(StoreError) -> OrderDetail? {
        try await database.read { db in
            try Queries.order(db, provider: provider, account: account, orderRef: orderRef, includeRaw: includeRaw)
        }
    }

    public func notifications(_ filter: NotificationFilter, includeRaw: Bool) async throws(StoreError) -> [NotificationRecord] {
        try await database.read { db in try Queries.notifications(db, filter, includeRaw: includeRaw) }
    }

    public func orderCountsByState() async throws(StoreError) -> [OrderState: Int] {
        try await database.read { db in try Queries.orderCountsByState(db) }
    }

    public func events(_ filter: EventFilter) async throws(StoreError) -> EventPage {
        try await database.read { db in try EventQueries.page(db, filter) }
    }

    public func newestEventSeq() async throws(StoreError) -> Int64 {
        try await database.read { db in try EventQueries.newestSeq(db) }
    }

    public func deliveries(_ filter: DeliveryFilter) async throws(StoreError) -> [DeliveryRecord] {
        try await database.read { db in try DeliveryQueries.list(db, filter) }
    }

    public func deliveryTargets() async throws(StoreError) -> [DeliveryTargetStatus] {
        try await database.read { db in try DeliveryQueries.targets(db) }
    }

    public func notificationCounts(since: String) async throws(StoreError) -> [HourlyNotificationCount] {
        try await database.read { db in try ConsoleQueries.notificationCounts(db, since: since) }
    }

    public func flaggedOrders(_ flag: String, limit: Int) async throws(StoreError) -> FlaggedOrders {
        try await database.read { db in try ConsoleQueries.flaggedOrders(db, flag: flag, limit: limit) }
    }

    public func searchOrders(_ search: OrderSearch) async throws(StoreError) -> [OrderRecord] {
        try await database.read { db in try ConsoleQueries.searchOrders(db, search) }
    }

    public func notification(id: Int64, includeRaw: Bool) async throws(StoreError) -> NotificationRecord? {
        try await database.read { db in try ConsoleQueries.notification(db, id: id, includeRaw: includeRaw) }
    }

    public func deliveries(orderID: Int64) async throws(StoreError) -> [DeliveryRecord] {
        try await database.read { db in try DeliveryQueries.forOrder(db, orderID: orderID) }
    }

    public func rejectedRequests(_ selection: RejectedSelection) async throws(StoreError) -> [RejectedRequest] {
        try await database.read { db in try RejectedQueries.requests(db, selection) }
    }
}
