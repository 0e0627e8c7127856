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

/// The stored rejected requests `notifications reverify` verifies again.
enum RejectedQueries {
    static func requests(_ db: Database, _ selection: RejectedSelection) throws -> [RejectedRequest] {
        guard selection.ids.count <= RejectedSelection.maxIDs else {
            throw StoreError(message: "a selection names at most \(RejectedSelection.maxIDs) notification ids, not \(selection.ids.count)")
        }
        guard selection.limit > 0 else { return [] }
        var clauses = ["verdict = 'rejected'", "id > ?"]
        var arguments: [any DatabaseValueConvertible] = [selection.afterID]
        if !selection.ids.isEmpty {
            clauses.append("id IN (\(Array(repeating: "?", count: selection.ids.count).joined(separator: ", ")))")
            arguments.append(contentsOf: selection.ids)
        }
        for (column, value) in [("provider", selection.provider), ("account", selection.account), ("reason", selection.reason)] {
            guard let value else { continue }
            clauses.append("\(column) = ?")
            arguments.append(value)
        }
        if let since = selection.since {
            clauses.append("received_at >= ?")
            arguments.append(since)
            // On the first page, the first rejected row that new (read through its partial
            // index) is where reading by id starts, rather than the first rejected row of all.
            if selection.afterID == 0, selection.ids.isEmpty {
                let first = try Int64.fetchOne(db, sql: """
                    SELECT MIN(id) FROM notifications INDEXED BY notifications_rejected_by_received_at
                    WHERE verdict = 'rejected' AND received_at >= ?
                    """, arguments: [since])
                guard let first else { return [] }
                clauses.append("id >= ?")
                arguments.append(first)
            }
        }
        arguments.append(selection.limit)
        let rows = try Row.fetchAll(db, sql: """
            SELECT id, provider, account, received_at, client_ip, target, headers, body, reason, reason_detail
            FROM notifications WHERE \(clauses.joined(separator: " AND ")) ORDER BY id LIMIT ?
            """, arguments: StatementArguments(arguments))
        var requests = rows.map { row in
            RejectedRequest(
                id: row["id"], provider: row["provider"], account: row["account"], receivedAt: row["received_at"],
                clientIP: row["client_ip"], target: row["target"], headers: row["headers"],
                body: (row["body"] as Data?).map { [UInt8]($0) } ?? [], reason: row["reason"], reasonDetail: row["reason_detail"])
        }
        guard !requests.isEmpty else { return [] }
        let copies = try Row.fetchAll(db, sql: """
            SELECT reverified_from, id, verdict FROM notifications INDEXED BY notifications_by_reverified_from
            WHERE reverified_from IN (\(Array(repeating: "?", count: requests.count).joined(separator: ", "))) ORDER BY id
            """, arguments: StatementArguments(requests.map(\.id)))
        var byOriginal: [Int64: [ReverifiedCopy]] = [:]
        for row in copies {
            let verdictText: String = row["verdict"]
            guard let verdict = Verdict(rawValue: verdictText) else {
                throw StoreError(message: "notification \(row["id"] as Int64) has an unknown verdict \"\(verdictText)\" in the store")
            }
            byOriginal[row["reverified_from"], default: []].append(ReverifiedCopy(notificationID: row["id"], verdict: verdict))
        }
        for index in requests.indices {
            requests[index].reverifiedAs = byOriginal[requests[index].id] ?? []
        }
        return requests
    }
}

/// Retention (`store.retention`): each call one short transaction on the writer.
enum RetentionQueries {
    /// Removes up to `limit` rejected notifications received before `cutoff`, oldest first.
    static func pruneRejected(_ db: Database, receivedBefore cutoff: String, limit: Int) throws -> Int {
        guard limit > 0 else { return 0 }
        try db.execute(sql: """
            DELETE FROM notifications WHERE id IN (
                SELECT id FROM notifications INDEXED BY notifications_rejected_by_received_at
                WHERE verdict = 'rejected' AND received_at < ? ORDER BY received_at LIMIT ?)
            """, arguments: [cutoff, limit])
        return db.changesCount
    }

    /// Examines up to `limit` events after `afterSeq` that occurred before `cutoff` and removes
    /// those no delivery target still owes, with their deliveries.
    static func pruneEvents(_ db: Database, occurredBefore cutoff: String, afterSeq: Int64, limit: Int) throws -> EventPruning {
        let previous = try EventQueries.prunedThrough(db)
        guard limit > 0 else {
            return EventPruning(examined: 0, lastExamined: nil, events: 0, deliveries: 0, prunedThrough: previous)
        }
        // Seq and occurred_at both follow commit order: the newest event older than the cutoff
        // (one step down its index) bounds the seqs read, so the read stops there instead of
        // going on through every newer event.
        guard let bound = try Int64.fetchOne(db, sql: """
            SELECT seq FROM events INDEXED BY events_by_occurred_at WHERE occurred_at < ? ORDER BY occurred_at DESC LIMIT 1
            """, arguments: [cutoff]), bound > afterSeq
        else {
            return EventPruning(examined: 0, lastExamined: nil, events: 0, deliveries: 0, prunedThrough: previous)
        }
        let rows = try Row.fetchAll(db, sql: """
            SELECT e.seq, EXISTS (
                SELECT 1 FROM deliveries AS d INDEXED BY deliveries_by_event
                WHERE d.event_seq = e.seq AND d.state NOT IN ('delivered', 'failed')) AS owed
            FROM events AS e WHERE e.seq > ? AND e.seq <= ? AND e.occurred_at < ? ORDER BY e.seq LIMIT ?
            """, arguments: [afterSeq, bound, cutoff, limit])
        let removable: [Int64] = rows.filter { !($0["owed"] as Bool) }.map { $0["seq"] }
        var deliveries = 0
        if !removable.isEmpty {
            let list = Array(repeating: "?", count: removable.count).joined(separator: ", ")
            try db.execute(sql: "DELETE FROM deliveries WHERE event_seq IN (\(list))", arguments: StatementArguments(removable))
            deliveries = db.changesCount
            try db.execute(sql: "DELETE FROM events WHERE seq IN (\(list))", arguments: StatementArguments(removable))
        }
        var prunedThrough = previous
        if let highest = removable.max(), highest > previous {
            prunedThrough = highest
            try db.execute(sql: """
                INSERT INTO store_meta (key, value) VALUES ('events_pruned_through', ?)
                ON CONFLICT(key) DO UPDATE SET value = excluded.value
                """, arguments: [String(highest)])
        }
        return EventPruning(
            examined: rows.count, lastExamined: rows.last.map { $0["seq"] }, events: removable.count, deliveries: deliveries,
            prunedThrough: prunedThrough)
    }
}
