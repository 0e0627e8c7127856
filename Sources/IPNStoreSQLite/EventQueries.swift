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

/// Reading the order-event feed.
enum EventQueries {
    /// How many seqs past `after` a filtered read examines at most: a filter that matches
    /// rarely answers with fewer events and a `next_after` further on, instead of reading the
    /// table to its end.
    static let filteredWindow: Int64 = 10_000

    static let columns = """
        seq, id, type, occurred_at, provider, account, order_ref, order_json, from_state, to_state, flag,
        notification_id, provider_status
        """

    static func page(_ db: Database, _ filter: EventFilter) throws -> EventPage {
        let prunedThrough = try Self.prunedThrough(db)
        if filter.after < prunedThrough {
            return EventPage(events: [], nextAfter: filter.after, oldestSeq: prunedThrough + 1)
        }
        var clauses = ["seq > ?"]
        var arguments: [any DatabaseValueConvertible] = [filter.after]
        if !filter.isUnfiltered {
            clauses.append("seq <= ?")
            arguments.append(filter.after + filteredWindow)
        }
        if let provider = filter.provider {
            clauses.append("provider = ?")
            arguments.append(provider)
        }
        if let account = filter.account {
            clauses.append("account = ?")
            arguments.append(account)
        }
        if let type = filter.type {
            clauses.append("type = ?")
            arguments.append(type.rawValue)
        }
        let limit = max(1, filter.limit)
        arguments.append(limit)
        let events = try Row.fetchAll(
            db, sql: "SELECT \(columns) FROM events WHERE \(clauses.joined(separator: " AND ")) ORDER BY seq LIMIT ?",
            arguments: StatementArguments(arguments)
        ).map(event)
        if events.count == limit, let last = events.last {
            return EventPage(events: events, nextAfter: last.seq)
        }
        // Fewer than asked: everything up to the newest event (within the window) was examined.
        let newest = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM events") ?? filter.after
        let examined = filter.isUnfiltered ? newest : min(newest, filter.after + filteredWindow)
        return EventPage(events: events, nextAfter: max(filter.after, examined, events.last?.seq ?? 0))
    }

    /// The newest seq given out, kept or not.
    static func newestSeq(_ db: Database) throws -> Int64 {
        max(try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM events") ?? 0, try prunedThrough(db))
    }

    /// Events of one order, ascending.
    static func forOrder(_ db: Database, orderID: Int64) throws -> [EventRecord] {
        try Row.fetchAll(db, sql: "SELECT \(columns) FROM events WHERE order_id = ? ORDER BY seq", arguments: [orderID]).map(event)
    }

    /// The highest seq retention removed (0 when none): a reader after an older seq would
    /// miss events.
    static func prunedThrough(_ db: Database) throws -> Int64 {
        try String.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'events_pruned_through'").flatMap { Int64($0) } ?? 0
    }

    static func event(_ row: Row) throws -> EventRecord {
        let typeText: String = row["type"]
        guard let type = EventType(rawValue: typeText) else {
            throw StoreError(message: "event \(row["seq"] as Int64) has an unknown type \"\(typeText)\" in the store")
        }
        return EventRecord(
            seq: row["seq"], id: row["id"], type: type, occurredAt: row["occurred_at"], provider: row["provider"],
            account: row["account"], orderRef: row["order_ref"], orderJSON: row["order_json"],
            from: try (row["from_state"] as String?).map(Queries.state), to: try Queries.state(row["to_state"]),
            flag: row["flag"], notificationID: row["notification_id"], providerStatus: row["provider_status"])
    }
}
