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

/// Issue 33's store methods: the stored rejected requests `notifications reverify` verifies
/// again, a notification planned without writing it, and retention in short transactions.
extension PostgresStore {
    public func rejectedRequests(_ selection: RejectedSelection) async throws(StoreError) -> [RejectedRequest] {
        guard selection.ids.count <= RejectedSelection.maxIDs else {
            throw StoreError(message: "a selection names at most \(RejectedSelection.maxIDs) notification ids, not \(selection.ids.count)")
        }
        guard selection.limit > 0 else { return [] }
        var sql = SQL()
        var clauses = ["verdict = 'rejected'", "id > \(sql.bind(selection.afterID))"]
        if !selection.ids.isEmpty { clauses.append("id = ANY(\(sql.bind(selection.ids))::bigint[])") }
        if let provider = selection.provider { clauses.append("provider = \(sql.bind(provider))") }
        if let account = selection.account { clauses.append("account = \(sql.bind(account))") }
        if let reason = selection.reason { clauses.append("reason = \(sql.bind(reason))") }
        if let since = selection.since { clauses.append("received_at >= \(sql.bind(since))") }
        sql.append("""
            SELECT id, provider, account, received_at, client_ip, target, headers, body, reason, reason_detail
            FROM notifications WHERE \(clauses.joined(separator: " AND ")) ORDER BY id LIMIT \(sql.bind(Int64(selection.limit)))
            """)
        var requests = try await rows(sql, doing: "read rejected notifications").map { row throws(StoreError) in
            try record(row) { row in
                RejectedRequest(
                    id: try row.int("id"), provider: try row.text("provider"), account: try row.text("account"),
                    receivedAt: try row.text("received_at"), clientIP: try row.optionalText("client_ip"), target: try row.text("target"),
                    headers: try row.text("headers"), body: try row.bytes("body"), reason: try row.optionalText("reason"),
                    reasonDetail: try row.optionalText("reason_detail"))
            }
        }
        guard !requests.isEmpty else { return [] }
        var copies = SQL()
        copies.append("""
            SELECT reverified_from, id, verdict FROM notifications
            WHERE reverified_from = ANY(\(copies.bind(requests.map(\.id)))::bigint[]) ORDER BY id
            """)
        var byOriginal: [Int64: [ReverifiedCopy]] = [:]
        for row in try await rows(copies, doing: "read reverified notifications") {
            let (original, id, verdictText) = try record(row) { (try $0.int("reverified_from"), try $0.int("id"), try $0.text("verdict")) }
            guard let verdict = Verdict(rawValue: verdictText) else {
                throw StoreError(message: "notification \(id) has an unknown verdict \"\(verdictText)\" in the store")
            }
            byOriginal[original, default: []].append(ReverifiedCopy(notificationID: id, verdict: verdict))
        }
        for index in requests.indices { requests[index].reverifiedAs = byOriginal[requests[index].id] ?? [] }
        return requests
    }

    public func plan(_ entry: InboxEntry) async throws(StoreError) -> RecordOutcome {
        let now = Self.timestamp()
        let routes = self.routesNow
        let schedule = self.scheduleNow
        let results = try await transaction(doing: "plan a notification") { [logger] connection in
            try await BatchRecorder(connection: connection, logger: logger, now: now, routes: routes, schedule: schedule)
                .preview([.record(entry)])
        }
        guard case .recorded(let outcome)? = results.first else {
            throw StoreError(message: "planning a notification gave no outcome")
        }
        return outcome
    }

    public func pruneRejected(receivedBefore: String, limit: Int) async throws(StoreError) -> Int {
        guard limit > 0 else { return 0 }
        var sql = SQL()
        sql.append("""
            WITH gone AS (
                DELETE FROM notifications WHERE id IN (
                    SELECT id FROM notifications WHERE verdict = 'rejected' AND received_at < \(sql.bind(receivedBefore))
                    ORDER BY received_at LIMIT \(sql.bind(Int64(limit))))
                RETURNING 1)
            SELECT count(*) AS n FROM gone
            """)
        guard let row = try await rows(sql, doing: "remove old rejected notifications").first else { return 0 }
        return Int(try record(row) { try $0.int("n") })
    }

    public func pruneEvents(occurredBefore: String, afterSeq: Int64, limit: Int) async throws(StoreError) -> EventPruning {
        try await transaction(doing: "remove old events") { [logger] connection in
            let previous = try await connection.rows(SQL("SELECT value FROM store_meta WHERE key = 'events_pruned_through'"), logger: logger)
                .first.flatMap { try? $0.text("value") }.flatMap { Int64($0) } ?? 0
            guard limit > 0 else { return EventPruning(examined: 0, lastExamined: nil, events: 0, deliveries: 0, prunedThrough: previous) }
            var candidates = SQL()
            candidates.append("""
                SELECT e.seq, EXISTS (
                    SELECT 1 FROM deliveries d WHERE d.event_seq = e.seq AND d.state NOT IN ('delivered', 'failed')) AS owed
                FROM events e
                WHERE e.seq > \(candidates.bind(afterSeq)) AND e.occurred_at < \(candidates.bind(occurredBefore))
                ORDER BY e.seq LIMIT \(candidates.bind(Int64(limit)))
                """)
            let rows = try await connection.rows(candidates, logger: logger)
            var removable: [Int64] = []
            var last: Int64?
            for row in rows {
                let seq = try row.int("seq")
                last = seq
                if !(try row.bool("owed")) { removable.append(seq) }
            }
            var deliveries: Int64 = 0
            var prunedThrough = previous
            if !removable.isEmpty {
                var delete = SQL()
                delete.append("""
                    WITH gone AS (DELETE FROM deliveries WHERE event_seq = ANY(\(delete.bind(removable))::bigint[]) RETURNING 1)
                    SELECT count(*) AS n FROM gone
                    """)
                deliveries = try await connection.rows(delete, logger: logger).first.map { try $0.int("n") } ?? 0
                var events = SQL()
                events.append("DELETE FROM events WHERE seq = ANY(\(events.bind(removable))::bigint[])")
                try await connection.run(events, logger: logger)
                if let highest = removable.max() {
                    // Every node runs retention: the marker only ever rises.
                    var marker = SQL()
                    marker.append("""
                        INSERT INTO store_meta (key, value) VALUES ('events_pruned_through', \(marker.bind(String(highest))))
                        ON CONFLICT (key) DO UPDATE SET value = greatest(store_meta.value::bigint, EXCLUDED.value::bigint)::text
                        RETURNING value
                        """)
                    prunedThrough = try await connection.rows(marker, logger: logger).first.flatMap { try? $0.text("value") }
                        .flatMap { Int64($0) } ?? highest
                }
            }
            return EventPruning(
                examined: rows.count, lastExamined: last, events: removable.count, deliveries: Int(deliveries), prunedThrough: prunedThrough)
        }
    }
}
