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

import GRDB
import IPNCore
import IPNStore

/// The audit trail in the SQLite file: one hash chain, appended inside the writer's
/// transaction (the one writer, and SQLite's write lock for a command beside the daemon,
/// serialise appends: each reads the newest record and follows it).
enum AuditQueries {
    /// audit_by_actor, audit_by_action, audit_by_outcome: the filters of `audit list`, the API and
    /// the console's Audit page, each read newest first in index order; audit_by_at: `since`
    /// and retention, oldest first.
    static let schemaSQL = """
        CREATE TABLE audit_records (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            actor TEXT NOT NULL,
            role TEXT,
            via TEXT NOT NULL,
            action TEXT NOT NULL,
            target TEXT,
            outcome TEXT NOT NULL,
            client_ip TEXT,
            detail TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL
        );
        CREATE INDEX audit_by_actor ON audit_records(actor, id);
        CREATE INDEX audit_by_action ON audit_records(action, id);
        CREATE INDEX audit_by_outcome ON audit_records(outcome, id);
        CREATE INDEX audit_by_at ON audit_records(at);
        """

    static let columns = "id, at, actor, role, via, action, target, outcome, client_ip, detail, prev_hash, hash"

    /// Appends `entry` after the newest record (or where retention left the trail), in `tx`;
    /// the record is reported to the store's observer once the transaction commits.
    @discardableResult
    static func append(_ entry: AuditEntry, in tx: WriteContext) throws -> AuditRecord {
        let (lastID, lastHash) = try previous(tx.db)
        let record = entry.record(id: lastID + 1, at: tx.now, previousHash: lastHash)
        try tx.db.execute(
            sql: "INSERT INTO audit_records (\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            arguments: [
                record.id, record.at, record.actor, record.role, record.via, record.action, record.target, record.outcome,
                record.clientIP, record.detail, record.prevHash, record.hash,
            ])
        tx.effects.audited.append(record)
        return record
    }

    /// The id and hash the next record follows.
    private static func previous(_ db: Database) throws -> (Int64, String) {
        if let row = try Row.fetchOne(db, sql: "SELECT id, hash FROM audit_records ORDER BY id DESC LIMIT 1") {
            return (row[0], row[1])
        }
        if let mark = try retentionMark(db) { return (mark.id, mark.hash) }
        return (0, AuditRecord.genesisHash)
    }

    static func retentionMark(_ db: Database) throws -> AuditRetentionMark? {
        try String.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = ?", arguments: [AuditRetentionMark.metaKey])
            .flatMap(AuditRetentionMark.init(text:))
    }

    static func list(_ db: Database, _ filter: AuditFilter) throws -> [AuditRecord] {
        try Queries.newestFirst(
            db, from: "audit_records",
            where: [("actor = ?", filter.actor), ("action = ?", filter.action), ("outcome = ?", filter.outcome?.rawValue)],
            since: filter.since.map { ("at", "audit_by_at", $0) }, beforeID: filter.beforeID, limit: filter.limit
        ).map(record)
    }

    static func chain(_ db: Database, afterID: Int64, limit: Int) throws -> [AuditRecord] {
        try Row.fetchAll(
            db, sql: "SELECT \(columns) FROM audit_records WHERE id > ? ORDER BY id LIMIT ?", arguments: [afterID, limit]
        ).map(record)
    }

    /// Removes up to `limit` of the oldest records made before `before`, never the newest, and
    /// moves the retention mark to the last one removed.
    static func prune(_ db: Database, before: String, limit: Int) throws -> Int {
        let rows = try Row.fetchAll(db, sql: """
            SELECT id, hash FROM audit_records
            WHERE at < ? AND id < (SELECT MAX(id) FROM audit_records)
            ORDER BY id LIMIT ?
            """, arguments: [before, limit])
        guard let last = rows.last else { return 0 }
        let lastID: Int64 = last[0]
        try db.execute(sql: "DELETE FROM audit_records WHERE id <= ?", arguments: [lastID])
        try db.execute(
            sql: "INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            arguments: [AuditRetentionMark.metaKey, AuditRetentionMark(id: lastID, hash: last[1]).text])
        return rows.count
    }

    static func record(_ row: Row) -> AuditRecord {
        AuditRecord(
            id: row["id"], at: row["at"], actor: row["actor"], role: row["role"], via: row["via"], action: row["action"],
            target: row["target"], outcome: row["outcome"], clientIP: row["client_ip"], detail: row["detail"],
            prevHash: row["prev_hash"], hash: row["hash"])
    }
}

extension SQLiteStore {
    public func appendAudit(_ entry: AuditEntry) async throws(StoreError) -> AuditRecord {
        try await writer.submit { tx in try AuditQueries.append(entry, in: tx) }
    }

    public func pruneAudit(before: String, limit: Int) async throws(StoreError) -> Int {
        try await writer.submit { tx in try AuditQueries.prune(tx.db, before: before, limit: limit) }
    }

    public func auditRecords(_ filter: AuditFilter) async throws(StoreError) -> [AuditRecord] {
        try await database.read { db in try AuditQueries.list(db, filter) }
    }

    public func auditChain(afterID: Int64, limit: Int) async throws(StoreError) -> [AuditRecord] {
        try await database.read { db in try AuditQueries.chain(db, afterID: afterID, limit: limit) }
    }

    public func auditRetentionMark() async throws(StoreError) -> AuditRetentionMark? {
        try await database.read { db in try AuditQueries.retentionMark(db) }
    }
}

extension SQLiteReadOnlyStore {
    public func auditRecords(_ filter: AuditFilter) async throws(StoreError) -> [AuditRecord] {
        try read { db in try AuditQueries.list(db, filter) }
    }

    public func auditChain(afterID: Int64, limit: Int) async throws(StoreError) -> [AuditRecord] {
        try read { db in try AuditQueries.chain(db, afterID: afterID, limit: limit) }
    }

    public func auditRetentionMark() async throws(StoreError) -> AuditRetentionMark? {
        try read { db in try AuditQueries.retentionMark(db) }
    }
}
