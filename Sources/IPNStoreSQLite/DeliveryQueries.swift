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

/// The deliveries' rows: claiming what is due, recording attempts, pausing and retrying, and
/// the lists.
enum DeliveryQueries {
    /// Leases up to `limit` of `target`'s deliveries that are due, not leased, and first in line
    /// for their order (no earlier delivery of the same order to the same target is pending),
    /// unless the target is paused.
    static func claim(_ db: Database, target: String, limit: Int, now: String, leaseUntil: String, owner: String) throws
        -> [DeliveryAttempt]
    {
        let paused = try Bool.fetchOne(
            db, sql: "SELECT paused_at IS NOT NULL FROM delivery_targets WHERE name = ?", arguments: [target]) ?? false
        guard !paused, limit > 0 else { return [] }
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT d.id AS delivery_id, d.target, d.attempts, d.first_attempt_at, \(EventQueries.columns.split(separator: ",").map { "e." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", "))
            FROM deliveries AS d INDEXED BY deliveries_due JOIN events AS e ON e.seq = d.event_seq
            WHERE d.target = ? AND d.state = 'pending' AND d.next_attempt_at <= ?
              AND (d.lease_until IS NULL OR d.lease_until < ?)
              AND NOT EXISTS (
                  SELECT 1 FROM deliveries AS p INDEXED BY deliveries_order_queue
                  WHERE p.target = d.target AND p.order_id = d.order_id AND p.state = 'pending' AND p.event_seq < d.event_seq)
            ORDER BY d.next_attempt_at
            LIMIT ?
            """), arguments: [target, now, now, limit])
        var attempts: [DeliveryAttempt] = []
        let lease = try db.cachedStatement(sql: "UPDATE deliveries SET lease_owner = ?, lease_until = ? WHERE id = ?")
        for row in rows {
            let id: Int64 = row["delivery_id"]
            try lease.execute(arguments: [owner, leaseUntil, id])
            attempts.append(DeliveryAttempt(
                id: id, target: row["target"], attempts: row["attempts"], firstAttemptAt: row["first_attempt_at"],
                event: try EventQueries.event(row)))
        }
        return attempts
    }

    /// Records attempts' outcomes, for deliveries `owner` still leases.
    static func finish(_ db: Database, _ results: [DeliveryAttemptOutcome], owner: String) throws {
        let update = try db.cachedStatement(sql: """
            UPDATE deliveries SET
                state = ?, attempts = attempts + 1, first_attempt_at = COALESCE(first_attempt_at, ?), last_attempt_at = ?,
                last_status = ?, last_error = ?, next_attempt_at = ?, delivered_at = ?, lease_owner = NULL, lease_until = NULL
            WHERE id = ? AND lease_owner = ?
            """)
        for result in results {
            let (state, next, deliveredAt): (DeliveryState, String?, String?) = switch result.outcome {
            case .delivered: (.delivered, nil, result.attemptedAt)
            case .retry(let at): (.pending, at, nil)
            case .failed: (.failed, nil, nil)
            // Due as soon as the target is resumed.
            case .paused: (.pending, result.attemptedAt, nil)
            }
            try update.execute(arguments: [
                state.rawValue, result.attemptedAt, result.attemptedAt, result.status, result.error, next, deliveredAt,
                result.id, owner,
            ])
        }
    }

    static func release(_ db: Database, ids: [Int64], owner: String) throws {
        let release = try db.cachedStatement(sql: "UPDATE deliveries SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?")
        for id in ids { try release.execute(arguments: [id, owner]) }
    }

    static func pause(_ db: Database, target: String, reason: String, at: String) throws {
        try db.execute(sql: """
            INSERT INTO delivery_targets (name, paused_at, paused_reason) VALUES (?, ?, ?)
            ON CONFLICT(name) DO UPDATE SET paused_at = COALESCE(paused_at, excluded.paused_at), paused_reason = excluded.paused_reason
            """, arguments: [target, at, reason])
    }

    static func resume(_ db: Database, target: String, now: String) throws -> Int {
        try db.execute(sql: "UPDATE delivery_targets SET paused_at = NULL, paused_reason = NULL WHERE name = ?", arguments: [target])
        try db.execute(sql: "UPDATE deliveries SET next_attempt_at = ? WHERE target = ? AND state = 'pending'", arguments: [now, target])
        return db.changesCount
    }

    static func retry(_ db: Database, _ selection: DeliveryRetrySelection, now: String) throws -> Int {
        // A fresh start: the schedule begins again and the three days count from the next attempt.
        let set = "state = 'pending', next_attempt_at = ?, attempts = 0, first_attempt_at = NULL, lease_owner = NULL, lease_until = NULL"
        switch selection {
        case .ids(let ids):
            var count = 0
            let statement = try db.cachedStatement(sql: "UPDATE deliveries SET \(set) WHERE id = ?")
            for id in ids {
                try statement.execute(arguments: [now, id])
                count += db.changesCount
            }
            return count
        case .target(let target, let state, let since):
            let stored = state == .paused ? DeliveryState.pending : state
            var sql = "UPDATE deliveries SET \(set) WHERE target = ? AND state = ?"
            var arguments: [any DatabaseValueConvertible] = [now, target, stored.rawValue]
            if let since {
                sql += " AND created_at >= ?"
                arguments.append(since)
            }
            try db.execute(sql: sql, arguments: StatementArguments(arguments))
            return db.changesCount
        }
    }

    // MARK: Lists

    static func list(_ db: Database, _ filter: DeliveryFilter) throws -> [DeliveryRecord] {
        let paused = try pausedTargets(db)
        var clauses: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        if let target = filter.target {
            clauses.append("d.target = ?")
            arguments.append(target)
        }
        switch filter.state {
        case .paused?:
            clauses.append("d.state = 'pending'")
            clauses.append("d.target IN (SELECT name FROM delivery_targets WHERE paused_at IS NOT NULL)")
        case .pending?:
            clauses.append("d.state = 'pending'")
            clauses.append("d.target NOT IN (SELECT name FROM delivery_targets WHERE paused_at IS NOT NULL)")
        case let state?:
            clauses.append("d.state = ?")
            arguments.append(state.rawValue)
        case nil:
            break
        }
        if let since = filter.since {
            clauses.append("d.created_at >= ?")
            arguments.append(since)
        }
        if let beforeID = filter.beforeID {
            clauses.append("d.id < ?")
            arguments.append(beforeID)
        }
        arguments.append(max(0, filter.limit))
        let whereClause = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
        return try Row.fetchAll(db, sql: """
            SELECT d.*, e.id AS event_id, e.type, e.provider, e.account, e.order_ref
            FROM deliveries AS d JOIN events AS e ON e.seq = d.event_seq
            \(whereClause) ORDER BY d.id DESC LIMIT ?
            """, arguments: StatementArguments(arguments)).map { try record($0, paused: paused) }
    }

    /// The deliveries of one order's events, newest first.
    static func forOrder(_ db: Database, orderID: Int64) throws -> [DeliveryRecord] {
        let paused = try pausedTargets(db)
        return try Row.fetchAll(db, sql: """
            SELECT d.*, e.id AS event_id, e.type, e.provider, e.account, e.order_ref
            FROM events AS e JOIN deliveries AS d ON d.event_seq = e.seq
            WHERE e.order_id = ? ORDER BY d.id DESC
            """, arguments: [orderID]).map { try record($0, paused: paused) }
    }

    static func targets(_ db: Database) throws -> [DeliveryTargetStatus] {
        try Row.fetchAll(db, sql: "SELECT name, paused_at, paused_reason FROM delivery_targets ORDER BY name").map { row in
            let name: String = row["name"]
            let backlog = try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM deliveries INDEXED BY deliveries_by_target WHERE target = ? AND state = 'pending'",
                arguments: [name]) ?? 0
            let oldest = try String.fetchOne(
                db, sql: "SELECT created_at FROM deliveries INDEXED BY deliveries_by_target WHERE target = ? AND state = 'pending' ORDER BY id LIMIT 1",
                arguments: [name])
            let failed = try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM deliveries INDEXED BY deliveries_by_target WHERE target = ? AND state = 'failed'",
                arguments: [name]) ?? 0
            return DeliveryTargetStatus(
                name: name, pausedAt: row["paused_at"], pausedReason: row["paused_reason"], backlog: backlog,
                oldestPendingAt: oldest, failed: failed)
        }
    }

    private static func pausedTargets(_ db: Database) throws -> Set<String> {
        Set(try String.fetchAll(db, sql: "SELECT name FROM delivery_targets WHERE paused_at IS NOT NULL"))
    }

    private static func record(_ row: Row, paused: Set<String>) throws -> DeliveryRecord {
        let target: String = row["target"]
        let stateText: String = row["state"]
        guard var state = DeliveryState(rawValue: stateText), let type = EventType(rawValue: row["type"]) else {
            throw StoreError(message: "delivery \(row["id"] as Int64) has an unknown state or type in the store")
        }
        if state == .pending, paused.contains(target) { state = .paused }
        return DeliveryRecord(
            id: row["id"], target: target, eventID: row["event_id"], seq: row["event_seq"], type: type,
            provider: row["provider"], account: row["account"], orderRef: row["order_ref"], state: state,
            attempts: row["attempts"], lastAttemptAt: row["last_attempt_at"], lastStatus: row["last_status"],
            lastError: row["last_error"], nextAttemptAt: state == .pending ? row["next_attempt_at"] : nil,
            deliveredAt: row["delivered_at"], createdAt: row["created_at"])
    }
}
