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
import PostgresNIO

/// The delivery service's rows. Claims lock the rows they take (`FOR UPDATE SKIP LOCKED`), so
/// two nodes never lease one delivery; a lease runs out when its node stops renewing it.
extension PostgresStore {
    public func claimDeliveries(target: String, limit: Int, now: String, leaseUntil: String, owner: String) async throws(StoreError)
        -> [DeliveryAttempt]
    {
        guard limit > 0 else { return [] }
        var sql = SQL()
        let (targetParameter, nowParameter) = (sql.bind(target), sql.bind(now))
        sql.append("""
            WITH chosen AS (
                SELECT d.id FROM deliveries d
                WHERE d.target = \(targetParameter) AND d.state = 'pending' AND d.next_attempt_at <= \(nowParameter)
                  AND (d.lease_until IS NULL OR d.lease_until < \(nowParameter))
                  AND NOT EXISTS (SELECT 1 FROM delivery_targets t WHERE t.name = d.target AND t.paused_at IS NOT NULL)
                  AND NOT EXISTS (
                      SELECT 1 FROM deliveries p
                      WHERE p.target = d.target AND p.order_id = d.order_id AND p.state = 'pending' AND p.event_seq < d.event_seq)
                ORDER BY d.next_attempt_at
                LIMIT \(sql.bind(Int64(limit)))
                FOR UPDATE OF d SKIP LOCKED
            ), leased AS (
                UPDATE deliveries d SET lease_owner = \(sql.bind(owner)), lease_until = \(sql.bind(leaseUntil))
                FROM chosen WHERE d.id = chosen.id
                RETURNING d.id AS delivery_id, d.target, d.attempts, d.first_attempt_at, d.event_seq
            )
            SELECT leased.delivery_id, leased.target, leased.attempts, leased.first_attempt_at,
                   \(EventColumns.list.split(separator: ",").map { "e." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", "))
            FROM leased JOIN events e ON e.seq = leased.event_seq
            ORDER BY e.seq
            """)
        return try await rows(sql, doing: "claim deliveries").map { row throws(StoreError) in
            try record(row) { row in
                DeliveryAttempt(
                    id: try row.int("delivery_id"), target: try row.text("target"), attempts: Int(try row.int32("attempts")),
                    firstAttemptAt: try row.optionalText("first_attempt_at"), event: try EventColumns.record(row))
            }
        }
    }

    public func finishDeliveries(_ results: [DeliveryAttemptOutcome], owner: String) async throws(StoreError) {
        guard !results.isEmpty else { return }
        var batch = ColumnBatch(9)
        for result in results {
            let (state, next, deliveredAt): (DeliveryState, String?, String?) = switch result.outcome {
            case .delivered: (.delivered, nil, result.attemptedAt)
            case .retry(let at): (.pending, at, nil)
            case .failed: (.failed, nil, nil)
            case .paused: (.pending, result.attemptedAt, nil)
            }
            batch.add([
                .int(result.id), .text(state.rawValue), .text(result.attemptedAt), .int(result.status.map(Int64.init)),
                .text(result.error), .text(next), .text(deliveredAt), .text(owner), .text(nil),
            ])
        }
        var sql = SQL()
        let columns = batch.bindColumns(into: &sql, types: ["bigint", "text", "text", "bigint", "text", "text", "text", "text", "text"])
        sql.append("""
            UPDATE deliveries d SET state = u.c2, attempts = d.attempts + 1, first_attempt_at = coalesce(d.first_attempt_at, u.c3),
                last_attempt_at = u.c3, last_status = u.c4::integer, last_error = u.c5, next_attempt_at = u.c6, delivered_at = u.c7,
                lease_owner = NULL, lease_until = NULL
            FROM unnest(\(columns)) AS u (c1, c2, c3, c4, c5, c6, c7, c8, c9)
            WHERE d.id = u.c1 AND d.lease_owner = u.c8
            """)
        try await execute(sql, doing: "record delivery attempts")
    }

    public func renewLeases(ids: [Int64], owner: String, until: String) async throws(StoreError) {
        guard !ids.isEmpty else { return }
        var sql = SQL()
        sql.append("""
            UPDATE deliveries SET lease_until = \(sql.bind(until))
            WHERE id = ANY(\(sql.bind(ids))::bigint[]) AND lease_owner = \(sql.bind(owner))
            """)
        try await execute(sql, doing: "renew delivery leases")
    }

    public func releaseDeliveries(ids: [Int64], owner: String, now: String) async throws(StoreError) {
        guard !ids.isEmpty else { return }
        var sql = SQL()
        sql.append("""
            UPDATE deliveries SET lease_owner = NULL, lease_until = NULL
            WHERE id = ANY(\(sql.bind(ids))::bigint[]) AND lease_owner = \(sql.bind(owner))
            """)
        try await execute(sql, doing: "release delivery leases")
    }

    public func pauseTarget(_ target: String, reason: String, at: String) async throws(StoreError) {
        var sql = SQL()
        sql.append("""
            INSERT INTO delivery_targets (name, paused_at, paused_reason) VALUES (\(sql.bind(target)), \(sql.bind(at)), \(sql.bind(reason)))
            ON CONFLICT (name) DO UPDATE SET paused_at = coalesce(delivery_targets.paused_at, EXCLUDED.paused_at),
                paused_reason = EXCLUDED.paused_reason
            """)
        try await execute(sql, doing: "pause a delivery target")
    }

    public func resumeTarget(_ target: String, now: String) async throws(StoreError) -> Int {
        let count = try await transaction(doing: "resume a delivery target") { [logger] connection in
            var resume = SQL()
            resume.append("UPDATE delivery_targets SET paused_at = NULL, paused_reason = NULL WHERE name = \(resume.bind(target))")
            try await connection.run(resume, logger: logger)
            var due = SQL()
            due.append("""
                WITH due AS (UPDATE deliveries SET next_attempt_at = \(due.bind(now))
                             WHERE target = \(due.bind(target)) AND state = 'pending' RETURNING 1)
                SELECT count(*) AS n FROM due
                """)
            return try await connection.rows(due, logger: logger).first.map { try $0.int("n") } ?? 0
        }
        eventSignal.signal()
        return Int(count)
    }

    public func retryDeliveries(_ selection: DeliveryRetrySelection, now: String) async throws(StoreError) -> Int {
        var sql = SQL()
        let set = """
            state = 'pending', next_attempt_at = \(sql.bind(now)), attempts = 0, first_attempt_at = NULL, lease_owner = NULL,
            lease_until = NULL
            """
        switch selection {
        case .ids(let ids):
            sql.append("WITH changed AS (UPDATE deliveries SET \(set) WHERE id = ANY(\(sql.bind(ids))::bigint[]) RETURNING 1) ")
        case .target(let target, let state, let since):
            let stored = state == .paused ? DeliveryState.pending : state
            var condition = "target = \(sql.bind(target)) AND state = \(sql.bind(stored.rawValue))"
            if let since { condition += " AND created_at >= \(sql.bind(since))" }
            sql.append("WITH changed AS (UPDATE deliveries SET \(set) WHERE \(condition) RETURNING 1) ")
        }
        sql.append("SELECT count(*) AS n FROM changed")
        let count = try await rows(sql, doing: "retry deliveries").first.map { row throws(StoreError) in try record(row) { try $0.int("n") } } ?? 0
        eventSignal.signal()
        return Int(count)
    }
}
