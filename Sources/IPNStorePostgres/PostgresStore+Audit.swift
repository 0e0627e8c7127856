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
import IPNStore
import Logging
import PostgresNIO

/// The audit trail on PostgreSQL: one hash chain for every node. A transaction that appends a
/// record takes the audit lock just before it appends and holds it until it commits (an
/// advisory transaction lock), so that the next record, written by whichever node, reads this
/// one as its predecessor. Only transactions that append audit records take it, never a
/// notification's: audit records come at the pace of people (sign-ins, changes, raw reads), a
/// few a second at most, and each holds the lock for one SELECT, one INSERT and its COMMIT.
enum AuditAppend {
    /// Appends `entry` inside the transaction open on `connection`.
    static func append(_ entry: AuditEntry, at clock: WallClock, on connection: PostgresConnection, logger: Logger) async throws -> AuditRecord {
        try await connection.run(SQL("SELECT pg_advisory_xact_lock(\(PostgresSchema.auditLock))"), logger: logger)
        let last = try await connection.rows(SQL("SELECT id, hash FROM audit_records ORDER BY id DESC LIMIT 1"), logger: logger).first
        var previous: (id: Int64, hash: String) = (0, AuditRecord.genesisHash)
        if let last {
            previous = (try last.int("id"), try last.text("hash"))
        } else if let mark = try await retentionMark(connection, logger: logger) {
            previous = (mark.id, mark.hash)
        }
        // Taken under the lock: `at` never goes back along the chain on one node.
        let record = entry.record(id: previous.id + 1, at: clock.text(), previousHash: previous.hash)
        var insert = SQL()
        insert.append("""
            INSERT INTO audit_records (\(columns)) VALUES (\(insert.bind(record.id)), \(insert.bind(record.at)), \(insert.bind(record.actor)),
                \(insert.bind(record.role)), \(insert.bind(record.via)), \(insert.bind(record.action)), \(insert.bind(record.target)),
                \(insert.bind(record.outcome)), \(insert.bind(record.clientIP)), \(insert.bind(record.detail)), \(insert.bind(record.prevHash)),
                \(insert.bind(record.hash)))
            """)
        try await connection.run(insert, logger: logger)
        return record
    }

    static let columns = "id, at, actor, role, via, action, target, outcome, client_ip, detail, prev_hash, hash"

    static func retentionMark(_ connection: PostgresConnection, logger: Logger) async throws -> AuditRetentionMark? {
        var sql = SQL()
        sql.append("SELECT value FROM store_meta WHERE key = \(sql.bind(AuditRetentionMark.metaKey))")
        return try await connection.rows(sql, logger: logger).first.flatMap { AuditRetentionMark(text: try $0.text("value")) }
    }

    static func record(_ row: PGRow) throws -> AuditRecord {
        AuditRecord(
            id: try row.int("id"), at: try row.text("at"), actor: try row.text("actor"), role: try row.optionalText("role"),
            via: try row.text("via"), action: try row.text("action"), target: try row.optionalText("target"),
            outcome: try row.text("outcome"), clientIP: try row.optionalText("client_ip"), detail: try row.text("detail"),
            prevHash: try row.text("prev_hash"), hash: try row.text("hash"))
    }
}

extension PostgresStore {
    public func appendAudit(_ entry: AuditEntry) async throws(StoreError) -> AuditRecord {
        let record = try await transaction(doing: "append an audit record") { [logger, clock] connection in
            try await AuditAppend.append(entry, at: clock, on: connection, logger: logger)
        }
        auditObserver.committed([record])
        return record
    }

    /// Runs `change` and appends the audit record it makes, in one transaction of its own (not
    /// a notification batch's: those never take the audit lock).
    func audited<T: Sendable>(
        doing action: String, _ change: @escaping @Sendable (PostgresConnection) async throws -> (T, AuditEntry?)
    ) async throws(StoreError) -> T {
        let (value, record) = try await transaction(doing: action) { [logger, clock] connection in
            let (value, entry) = try await change(connection)
            guard let entry else { return (value, AuditRecord?.none) }
            return (value, try await AuditAppend.append(entry, at: clock, on: connection, logger: logger))
        }
        if let record { auditObserver.committed([record]) }
        return value
    }

    public func pruneAudit(before: String, limit: Int) async throws(StoreError) -> Int {
        guard limit > 0 else { return 0 }
        return try await transaction(doing: "remove old audit records") { [logger] connection in
            var oldest = SQL()
            oldest.append("""
                SELECT id, hash FROM audit_records
                WHERE at < \(oldest.bind(before)) AND id < (SELECT max(id) FROM audit_records)
                ORDER BY id LIMIT \(oldest.bind(Int64(limit)))
                """)
            let rows = try await connection.rows(oldest, logger: logger)
            guard let last = rows.last else { return 0 }
            let mark = AuditRetentionMark(id: try last.int("id"), hash: try last.text("hash"))
            var delete = SQL()
            delete.append("DELETE FROM audit_records WHERE id <= \(delete.bind(mark.id))")
            try await connection.run(delete, logger: logger)
            var meta = SQL()
            meta.append("""
                INSERT INTO store_meta (key, value) VALUES (\(meta.bind(AuditRetentionMark.metaKey)), \(meta.bind(mark.text)))
                ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value
                """)
            try await connection.run(meta, logger: logger)
            return rows.count
        }
    }

    public func auditRecords(_ filter: AuditFilter) async throws(StoreError) -> [AuditRecord] {
        var sql = SQL("SELECT \(AuditAppend.columns) FROM audit_records")
        var clauses: [String] = []
        if let actor = filter.actor { clauses.append("actor = \(sql.bind(actor))") }
        if let action = filter.action { clauses.append("action = \(sql.bind(action))") }
        if let outcome = filter.outcome { clauses.append("outcome = \(sql.bind(outcome.rawValue))") }
        if let since = filter.since {
            clauses.append("at >= \(sql.bind(since))")
            var bound = SQL()
            bound.append("""
                SELECT count(*) AS n, min(id) AS lowest FROM (
                    SELECT id FROM audit_records WHERE at >= \(bound.bind(since)) LIMIT \(bound.bind(Self.sinceBoundRows + 1))) AS recent
                """)
            if let row = try await rows(bound, doing: "list audit records").first {
                if try record(row, { try $0.int("n") }) <= Self.sinceBoundRows {
                    let lowest = try record(row) { try $0.optionalInt("lowest") }
                    clauses.append(lowest.map { "id >= \(sql.bind($0))" } ?? "FALSE")
                }
            }
        }
        if let beforeID = filter.beforeID { clauses.append("id < \(sql.bind(beforeID))") }
        if !clauses.isEmpty { sql.append(" WHERE " + clauses.joined(separator: " AND ")) }
        sql.append(" ORDER BY id DESC LIMIT \(sql.bind(Int64(max(0, filter.limit))))")
        return try await rows(sql, doing: "list audit records").map { row throws(StoreError) in try record(row, AuditAppend.record) }
    }

    public func auditChain(afterID: Int64, limit: Int) async throws(StoreError) -> [AuditRecord] {
        var sql = SQL()
        sql.append("""
            SELECT \(AuditAppend.columns) FROM audit_records WHERE id > \(sql.bind(afterID)) ORDER BY id LIMIT \(sql.bind(Int64(limit)))
            """)
        return try await rows(sql, doing: "read the audit trail").map { row throws(StoreError) in try record(row, AuditAppend.record) }
    }

    public func auditRetentionMark() async throws(StoreError) -> AuditRetentionMark? {
        var sql = SQL()
        sql.append("SELECT value FROM store_meta WHERE key = \(sql.bind(AuditRetentionMark.metaKey))")
        return try await rows(sql, doing: "read the audit retention mark").first.flatMap { row throws(StoreError) in
            AuditRetentionMark(text: try record(row) { try $0.text("value") })
        }
    }
}
