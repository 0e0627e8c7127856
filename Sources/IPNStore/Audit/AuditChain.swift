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

/// Where retention left the audit trail: the last record it removed (its id and hash), which
/// the oldest kept record must follow. Kept in `store_meta` as `audit_pruned_through`.
public struct AuditRetentionMark: Sendable, Equatable {
    public var id: Int64
    public var hash: String

    public init(id: Int64, hash: String) {
        self.id = id
        self.hash = hash
    }

    /// `store_meta`'s text: `ID HASH`.
    public var text: String { "\(id) \(hash)" }

    public init?(text: String) {
        let parts = text.split(separator: " ")
        guard parts.count == 2, let id = Int64(parts[0]), parts[1].utf8.count == 64 else { return nil }
        self.init(id: id, hash: String(parts[1]))
    }

    /// The `store_meta` key.
    public static let metaKey = "audit_pruned_through"
}

/// What `ipnd audit verify` found: the whole chain intact, or the first record that is not.
public struct AuditVerification: Sendable, Equatable {
    /// Records read.
    public var checked = 0
    public var firstID: Int64?
    public var lastID: Int64?
    public var lastHash: String?
    /// Retention removed the records up to this one: the check starts after it.
    public var retention: AuditRetentionMark?
    /// The first record found changed, removed or out of order, and what is wrong with it.
    public var problem: (id: Int64, reason: String)?

    public init(retention: AuditRetentionMark? = nil) {
        self.retention = retention
    }

    public var isIntact: Bool { problem == nil }

    public static func == (lhs: AuditVerification, rhs: AuditVerification) -> Bool {
        lhs.checked == rhs.checked && lhs.firstID == rhs.firstID && lhs.lastID == rhs.lastID && lhs.lastHash == rhs.lastHash
            && lhs.retention == rhs.retention && lhs.problem?.id == rhs.problem?.id && lhs.problem?.reason == rhs.problem?.reason
    }

    /// Checks `record`, the next in id order; false once a problem is found (the walk stops).
    public mutating func check(_ record: AuditRecord) -> Bool {
        guard problem == nil else { return false }
        let expectedID = (lastID ?? retention?.id ?? 0) + 1
        let expectedPrevious = lastHash ?? retention?.hash ?? AuditRecord.genesisHash
        let before = lastID.map { "record \($0)" } ?? (retention.map { "record \($0.id), the last one retention removed" } ?? "the start of the trail")
        if record.computedHash != record.hash {
            problem = (record.id, "record \(record.id) was changed: its hash does not match its fields")
        } else if record.prevHash != expectedPrevious {
            let missing = record.id > expectedID ? " (records \(expectedID) to \(record.id - 1) are missing)" : ""
            problem = (record.id, "record \(record.id) does not follow \(before): a record before it was removed or the records are out of order\(missing)")
        } else if record.id != expectedID {
            problem = (record.id, "record \(record.id) follows \(before) but its id should be \(expectedID)")
        }
        if problem != nil { return false }
        checked += 1
        if firstID == nil { firstID = record.id }
        lastID = record.id
        lastHash = record.hash
        return true
    }

    /// One line for people.
    public var summary: String {
        let start = retention.map { " (starts at record \($0.id + 1): retention removed the records before it)" } ?? ""
        if let problem { return "audit trail broken at record \(problem.id): \(problem.reason)\(start)" }
        guard let firstID, let lastID else {
            return "audit trail intact: no records" + start
        }
        return "audit trail intact: \(checked) record\(checked == 1 ? "" : "s"), \(firstID) to \(lastID)\(start)"
    }

    /// `intact`, `records`, `first_id`, `last_id`, `last_hash`, `starts_after_retention`,
    /// `retention_removed_through`, `first_bad_id`, `problem`.
    public var json: JSONOut {
        .object([
            ("intact", .bool(isIntact)),
            ("records", .int(Int64(checked))),
            ("first_id", .optional(firstID)),
            ("last_id", .optional(lastID)),
            ("last_hash", .optional(lastHash)),
            ("starts_after_retention", .bool(retention != nil)),
            ("retention_removed_through", .optional(retention?.id)),
            ("first_bad_id", .optional(problem?.id)),
            ("problem", .optional(problem?.reason)),
        ])
    }
}

/// The audit trail in the store: appended in the writer's transaction of the change it
/// records (the backends' write methods take an `AuditEntry`), or alone (`appendAudit`).
public protocol AuditReading: Sendable {
    /// Audit records, newest first.
    func auditRecords(_ filter: AuditFilter) async throws(StoreError) -> [AuditRecord]
    /// Up to `limit` records with an id above `afterID`, ascending: the chain, read in pages.
    func auditChain(afterID: Int64, limit: Int) async throws(StoreError) -> [AuditRecord]
    /// Where retention left the trail; nil when it has removed nothing.
    func auditRetentionMark() async throws(StoreError) -> AuditRetentionMark?
}

extension AuditReading {
    /// Walks the whole chain in pages of `pageSize`, from where retention left it.
    public func verifyAudit(pageSize: Int = 1000) async throws(StoreError) -> AuditVerification {
        var verification = AuditVerification(retention: try await auditRetentionMark())
        var after: Int64 = 0
        while true {
            let page = try await auditChain(afterID: after, limit: pageSize)
            for record in page where !verification.check(record) { return verification }
            guard page.count == pageSize, let last = page.last else { return verification }
            after = last.id
        }
    }
}

/// Writing the audit trail alone, and keeping it bounded.
public protocol AuditStore: AuditReading {
    /// Appends one record in a transaction of its own (reads of raw bodies, sign-ins, refusals,
    /// the daemon's start, stop and reloads) and returns it once committed.
    @discardableResult
    func appendAudit(_ entry: AuditEntry) async throws(StoreError) -> AuditRecord
    /// Retention: removes, in one short write transaction, up to `limit` of the oldest records
    /// made before `before` (`Timestamp` text), never the newest record, and moves the
    /// retention mark to the last one removed. Returns how many were.
    func pruneAudit(before: String, limit: Int) async throws(StoreError) -> Int
    /// Told of each record once it is committed, by this process (the daemon logs and counts them).
    var auditObserver: AuditObserver { get }
}

/// Hears of every audit record this process commits, after the commit.
public final class AuditObserver: Sendable {
    private let observer = Locked<(@Sendable (AuditRecord) -> Void)?>(nil)

    public init() {}

    public func observe(_ body: @escaping @Sendable (AuditRecord) -> Void) {
        observer.withLock { $0 = body }
    }

    public func committed(_ records: [AuditRecord]) {
        guard !records.isEmpty, let body = observer.withLock({ $0 }) else { return }
        for record in records { body(record) }
    }
}
