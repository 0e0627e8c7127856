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
import IPNCore
import IPNStore
import Logging
import NIOCore
import PostgresNIO

/// One write job of a batch: a notification or an expectation.
enum WriteJob: Sendable {
    case record(InboxEntry)
    case expectation(scope: Scope, orderRef: String, amount: Money)
}

/// What a job came to, once the batch commits.
enum WriteResult: Sendable {
    case recorded(RecordOutcome)
    case expectation(ExpectationOutcome)
}

/// Records a batch of jobs inside one transaction on `connection`: takes the batch's advisory
/// locks (sorted, so batches never deadlock on them), reads every fact the batch needs in a few
/// statements, plans each job in order with `RecordingPlanner` through `BatchFacts`, then writes
/// all plans with one statement per table, the events last under the event lock so that seqs
/// follow commit order.
struct BatchRecorder {
    let connection: PostgresConnection
    let logger: Logger
    let now: String
    let routes: [DeliveryRoute]
    var schedule: InquirySchedule = .standard

    func record(_ jobs: [WriteJob]) async throws -> [WriteResult] {
        try await lock(jobs)
        let (notificationIDs, orderIDs) = try await allocateIDs(notifications: jobs.count, orders: jobs.count)
        let (planned, results) = try await plan(jobs, notificationIDs: notificationIDs, orderIDs: orderIDs, lockRows: true)
        try await write(planned)
        return results
    }

    /// What `record` would answer for `jobs`, read without locks and written nowhere (the dry
    /// run of `notifications reverify`): new rows get id 0.
    func preview(_ jobs: [WriteJob]) async throws -> [WriteResult] {
        let zeros = Array(repeating: Int64(0), count: jobs.count)
        return try await plan(jobs, notificationIDs: zeros, orderIDs: zeros, lockRows: false).results
    }

    func plan(
        _ jobs: [WriteJob], notificationIDs: [Int64], orderIDs: [Int64], lockRows: Bool
    ) async throws -> (planned: [(plan: WritePlan, notificationID: Int64?, orderID: Int64?)], results: [WriteResult]) {
        var needed = FactsNeeded()
        for job in jobs {
            switch job {
            case .record(let entry): needed.add(entry)
            case .expectation(let scope, let orderRef, _): needed.addExpectation(scope: scope, orderRef: orderRef)
            }
        }
        let facts = try await read(needed, lockRows: lockRows)

        let planner = RecordingPlanner(now: now, routes: routes, schedule: schedule)
        var planned: [(plan: WritePlan, notificationID: Int64?, orderID: Int64?)] = []
        var results: [WriteResult] = []
        var nextNotification = 0
        var nextOrder = 0
        for job in jobs {
            let plan: WritePlan
            var expectation: ExpectationOutcome?
            switch job {
            case .record(.rejected(let request, let rejection)):
                plan = planner.plan(rejected: request, rejection)
            case .record(.verified(let request, let notification)):
                let scope = Scope(provider: request.provider, account: request.account)
                let recordingFacts = try RecordingFacts.read(for: notification, scope: scope, from: facts)
                plan = planner.plan(verified: request, notification, detailJSON: PreparedDetail.json(notification), facts: recordingFacts)
            case .expectation(let scope, let orderRef, let amount):
                let order = try facts.order(scope: scope, orderRef: orderRef)
                (plan, expectation) = planner.plan(expectation: amount, scope: scope, orderRef: orderRef, order: order)
            }
            var notificationID: Int64?
            if plan.notification != nil {
                notificationID = notificationIDs[nextNotification]
                nextNotification += 1
            }
            var orderID = plan.order?.order.id
            if case .insert? = plan.order {
                orderID = orderIDs[nextOrder]
                nextOrder += 1
            }
            facts.apply(plan, notificationID: notificationID, orderID: orderID)
            planned.append((plan, notificationID, orderID))
            if let expectation {
                results.append(.expectation(expectation))
            } else {
                var outcome = plan.outcome
                outcome.notificationID = notificationID ?? 0
                results.append(.recorded(outcome))
            }
        }
        return (planned, results)
    }

    // MARK: Locks and ids

    /// The advisory locks of every order reference and payment link the batch touches, taken in
    /// one order for every batch of every node; and, in the same statement, no sequential scans
    /// for the rest of the transaction. Every read of a batch looks rows up by key, but the
    /// planner joins a batch's keys to a table it believes small with a hash join over the
    /// whole table, and a table that grew since its last ANALYZE (a new database filling up, a
    /// burst) is scanned whole in every batch: at 17,000 orders that was 6 ms a batch, the
    /// slowest statement of all.
    func lock(_ jobs: [WriteJob], alsoLocking extraKeys: Set<Int64> = []) async throws {
        var keys = extraKeys
        for job in jobs {
            switch job {
            case .record(.verified(let request, let notification)):
                let scope = Scope(provider: request.provider, account: request.account)
                if let ref = notification.orderRef { keys.insert(LockKey.order(scope, ref)) }
                if let link = notification.link { keys.insert(LockKey.link(scope, link.key)) }
                if notification.orderRef == nil, notification.link == nil {
                    keys.insert(LockKey.dedup(scope, notification.dedupKey))
                }
            case .expectation(let scope, let orderRef, _):
                keys.insert(LockKey.order(scope, orderRef))
            case .record(.rejected):
                break
            }
        }
        var sql = SQL()
        sql.append("""
            SELECT set_config('enable_seqscan', 'off', true), count(pg_advisory_xact_lock(k))
            FROM unnest(\(sql.bind(keys.sorted()))::bigint[]) AS k
            """)
        try await connection.run(sql, logger: logger)
    }

    /// Ids for the rows the batch may insert, ascending: one notification per job, and at most one
    /// new order per job. Unused ones are gaps, as with any sequence.
    func allocateIDs(notifications: Int, orders: Int) async throws -> ([Int64], [Int64]) {
        var sql = SQL()
        sql.append("""
            SELECT (SELECT array_agg(nextval('notifications_id_seq')) FROM generate_series(1, \(sql.bind(Int64(notifications))))) AS n,
                   (SELECT array_agg(nextval('orders_id_seq')) FROM generate_series(1, \(sql.bind(Int64(orders))))) AS o
            """)
        var result: ([Int64], [Int64]) = ([], [])
        for try await (n, o) in try await connection.query(sql.query, logger: logger).decode(([Int64], [Int64]).self) {
            result = (n.sorted(), o.sorted())
        }
        return result
    }

    // MARK: Reading the facts

    private func read(_ needed: FactsNeeded, lockRows: Bool) async throws -> BatchFacts {
        let forUpdate = lockRows ? "FOR UPDATE" : ""
        let facts = BatchFacts()
        if !needed.dedupKeys.isEmpty {
            let keys = Array(needed.dedupKeys)
            var sql = SQL()
            let (p, a, k) = (sql.bind(keys.map(\.scope.provider)), sql.bind(keys.map(\.scope.account)), sql.bind(keys.map(\.key)))
            sql.append("""
                SELECT d.provider, d.account, d.dedup_key, d.notification_id, n.order_ref AS stored_ref, o.id AS order_id,
                       o.order_ref AS current_ref, o.state
                FROM unnest(\(p)::text[], \(a)::text[], \(k)::text[]) AS wanted (provider, account, dedup_key)
                JOIN dedup_keys d ON d.provider = wanted.provider AND d.account = wanted.account AND d.dedup_key = wanted.dedup_key
                JOIN notifications n ON n.id = d.notification_id
                LEFT JOIN orders o ON o.id = n.order_id
                """)
            var found = Set<FactsNeeded.ScopedKey>()
            for row in try await connection.rows(sql, logger: logger) {
                let key = FactsNeeded.ScopedKey(scope: Scope(provider: try row.text("provider"), account: try row.text("account")),
                                                key: try row.text("dedup_key"))
                found.insert(key)
                facts.setFirst(BatchFacts.FirstRow(
                    notificationID: try row.int("notification_id"), storedOrderRef: try row.optionalText("stored_ref"),
                    orderID: try row.optionalInt("order_id"), currentOrderRef: try row.optionalText("current_ref"),
                    orderState: try row.optionalState("state")), scope: key.scope, dedupKey: key.key)
            }
            for key in needed.dedupKeys where !found.contains(key) { facts.setFirst(nil, scope: key.scope, dedupKey: key.key) }
        }
        if !needed.orderRefs.isEmpty {
            let keys = Array(needed.orderRefs)
            var sql = SQL()
            let (p, a, r) = (sql.bind(keys.map(\.scope.provider)), sql.bind(keys.map(\.scope.account)), sql.bind(keys.map(\.key)))
            sql.append("""
                SELECT \(OrderColumns.list.split(separator: ",").map { "o." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", "))
                FROM unnest(\(p)::text[], \(a)::text[], \(r)::text[]) AS wanted (provider, account, order_ref)
                JOIN orders o ON o.provider = wanted.provider AND o.account = wanted.account AND o.order_ref = wanted.order_ref
                ORDER BY o.id
                \(lockRows ? "FOR UPDATE OF o" : "")
                """)
            var found = Set<FactsNeeded.ScopedKey>()
            for row in try await connection.rows(sql, logger: logger) {
                let order = try OrderColumns.stored(row)
                found.insert(FactsNeeded.ScopedKey(scope: order.scope, key: order.orderRef))
                facts.setOrder(order, scope: order.scope, orderRef: order.orderRef)
            }
            for key in needed.orderRefs where !found.contains(key) { facts.setOrder(nil, scope: key.scope, orderRef: key.key) }
        }
        if !needed.linkKeys.isEmpty {
            let keys = Array(needed.linkKeys)
            var sql = SQL()
            let (p, a, k) = (sql.bind(keys.map(\.scope.provider)), sql.bind(keys.map(\.scope.account)), sql.bind(keys.map(\.key)))
            sql.append("""
                SELECT l.provider, l.account, l.link_key, l.order_id
                FROM unnest(\(p)::text[], \(a)::text[], \(k)::text[]) AS wanted (provider, account, link_key)
                JOIN payment_links l ON l.provider = wanted.provider AND l.account = wanted.account AND l.link_key = wanted.link_key
                """)
            var found = Set<FactsNeeded.ScopedKey>()
            var linkedOrders = Set<Int64>()
            for row in try await connection.rows(sql, logger: logger) {
                let key = FactsNeeded.ScopedKey(scope: Scope(provider: try row.text("provider"), account: try row.text("account")),
                                                key: try row.text("link_key"))
                found.insert(key)
                let orderID = try row.int("order_id")
                linkedOrders.insert(orderID)
                facts.setLink(orderID, scope: key.scope, linkKey: key.key)
            }
            for key in needed.linkKeys where !found.contains(key) { facts.setLink(nil, scope: key.scope, linkKey: key.key) }
            let missing = linkedOrders.subtracting(facts.readOrders.compactMap(\.id))
            if !missing.isEmpty {
                var orders = SQL()
                orders.append("SELECT \(OrderColumns.list) FROM orders WHERE id = ANY(\(orders.bind(missing.sorted()))::bigint[]) ORDER BY id \(forUpdate)")
                for row in try await connection.rows(orders, logger: logger) { facts.setOrder(try OrderColumns.stored(row)) }
            }
        }
        if !needed.waitingLinks.isEmpty {
            let keys = Array(needed.waitingLinks)
            var sql = SQL()
            let (p, a, k) = (sql.bind(keys.map(\.scope.provider)), sql.bind(keys.map(\.scope.account)), sql.bind(keys.map(\.key)))
            sql.append("""
                SELECT n.provider, n.account, n.link_key, n.id, n.pending_effect
                FROM unnest(\(p)::text[], \(a)::text[], \(k)::text[]) AS wanted (provider, account, link_key)
                JOIN notifications n ON n.provider = wanted.provider AND n.account = wanted.account AND n.link_key = wanted.link_key
                WHERE n.verdict = 'unlinked'
                ORDER BY n.id
                """)
            var waiting: [FactsNeeded.ScopedKey: [WaitingNotification]] = [:]
            for row in try await connection.rows(sql, logger: logger) {
                let key = FactsNeeded.ScopedKey(scope: Scope(provider: try row.text("provider"), account: try row.text("account")),
                                                key: try row.text("link_key"))
                waiting[key, default: []].append(WaitingNotification(id: try row.int("id"), pendingEffect: try row.optionalText("pending_effect")))
            }
            for key in needed.waitingLinks { facts.setWaiting(waiting[key] ?? [], scope: key.scope, linkKey: key.key) }
        }
        try await readDependentFacts(facts)
        return facts
    }

    /// For every order read: its refunds, whether it has a transition (when pending), and its
    /// refunds' currency (when its amount is unknown).
    private func readDependentFacts(_ facts: BatchFacts) async throws {
        let orders = facts.readOrders
        guard !orders.isEmpty else { return }
        let ids = orders.compactMap(\.id)
        var refunds: [Int64: [StoredRefund]] = [:]
        var sql = SQL()
        sql.append("SELECT order_id, refund_id, amount_minor FROM refunds WHERE order_id = ANY(\(sql.bind(ids))::bigint[])")
        for row in try await connection.rows(sql, logger: logger) {
            refunds[try row.int("order_id"), default: []].append(
                StoredRefund(refundID: try row.text("refund_id"), amountMinor: try row.optionalInt("amount_minor")))
        }
        for id in ids { facts.setRefunds(refunds[id] ?? [], orderID: id) }

        let pending = orders.filter(FactsReading.needsTransitionCheck).compactMap(\.id)
        if !pending.isEmpty {
            var sql = SQL()
            sql.append("SELECT DISTINCT order_id FROM transitions WHERE order_id = ANY(\(sql.bind(pending))::bigint[])")
            var with = Set<Int64>()
            for row in try await connection.rows(sql, logger: logger) { with.insert(try row.int("order_id")) }
            for id in pending { facts.setHasTransitions(with.contains(id), orderID: id) }
        }
        let unknownAmount = orders.filter(FactsReading.needsRefundCurrency).compactMap(\.id)
        if !unknownAmount.isEmpty {
            var sql = SQL()
            sql.append("""
                SELECT DISTINCT ON (order_id) order_id, currency FROM notifications
                WHERE order_id = ANY(\(sql.bind(unknownAmount))::bigint[]) AND kind = 'refund' AND verdict = 'applied'
                  AND currency IS NOT NULL
                ORDER BY order_id, id
                """)
            var currencies: [Int64: String] = [:]
            for row in try await connection.rows(sql, logger: logger) { currencies[try row.int("order_id")] = try row.text("currency") }
            for id in unknownAmount { facts.setRefundCurrency(currencies[id], orderID: id) }
        }
    }

    // MARK: Writing the plans

    func write(_ planned: [(plan: WritePlan, notificationID: Int64?, orderID: Int64?)]) async throws {
        // Each order as the batch leaves it: inserted (first written by the batch) or updated.
        var inserted: [Int64: StoredOrder] = [:]
        var updated: [Int64: StoredOrder] = [:]
        var orderSequence: [Int64] = []
        for (plan, _, orderID) in planned {
            guard let write = plan.order, let orderID else { continue }
            var order = write.order
            order.id = orderID
            switch write {
            case .insert:
                inserted[orderID] = order
                orderSequence.append(orderID)
            case .update:
                if inserted[orderID] != nil { inserted[orderID] = order } else { updated[orderID] = order }
            case .unchanged:
                break
            }
        }
        if !inserted.isEmpty { try await insertOrders(orderSequence.compactMap { inserted[$0] }) }
        if !updated.isEmpty { try await updateOrders(Array(updated.values)) }
        try await insertNotifications(planned)

        var transitions = ColumnBatch(5)
        var refunds = ColumnBatch(4)
        var dedup = ColumnBatch(4)
        var links = ColumnBatch(4)
        for (plan, notificationID, orderID) in planned {
            if let orderID {
                for transition in plan.transitions {
                    transitions.add([.int(orderID), .text(transition.from?.rawValue), .text(transition.to.rawValue), .text(now),
                                     .int(transition.cause.notificationID(planned: notificationID))])
                }
                for refund in plan.refunds {
                    refunds.add([.int(orderID), .text(refund.refundID), .int(refund.amountMinor), .int(refund.cause.notificationID(planned: notificationID))])
                }
            }
            if let key = plan.dedupKey, let request = plan.notification?.request, let notificationID {
                dedup.add([.text(request.provider), .text(request.account), .text(key), .int(notificationID)])
            }
            if let key = plan.linkToRegister, let orderID, let order = plan.order?.order {
                links.add([.text(order.scope.provider), .text(order.scope.account), .text(key), .int(orderID)])
            }
        }
        if !transitions.isEmpty {
            try await transitions.insert(
                "INSERT INTO transitions (order_id, from_state, to_state, at, notification_id)",
                types: ["bigint", "text", "text", "text", "bigint"], connection: connection, logger: logger)
        }
        if !refunds.isEmpty {
            try await refunds.insert(
                "INSERT INTO refunds (order_id, refund_id, amount_minor, notification_id)",
                types: ["bigint", "text", "bigint", "bigint"], suffix: "ON CONFLICT DO NOTHING", connection: connection, logger: logger)
        }
        if !dedup.isEmpty {
            try await dedup.insert(
                "INSERT INTO dedup_keys (provider, account, dedup_key, notification_id)",
                types: ["text", "text", "text", "bigint"], connection: connection, logger: logger)
        }
        if !links.isEmpty {
            try await links.insert(
                "INSERT INTO payment_links (provider, account, link_key, order_id)",
                types: ["text", "text", "text", "bigint"], suffix: "ON CONFLICT DO NOTHING", connection: connection, logger: logger)
        }
        // Rare: a payment that notifications waited for.
        for (plan, _, orderID) in planned {
            guard let orderID, let order = plan.order?.order else { continue }
            if let key = plan.adoptWaitingDuplicates {
                var sql = SQL()
                sql.append("""
                    UPDATE notifications SET order_id = \(sql.bind(orderID)), order_ref = \(sql.bind(order.orderRef))
                    WHERE provider = \(sql.bind(order.scope.provider)) AND account = \(sql.bind(order.scope.account))
                      AND link_key = \(sql.bind(key)) AND verdict = 'duplicate' AND order_id IS NULL
                    """)
                try await connection.run(sql, logger: logger)
            }
            for update in plan.waitingUpdates {
                var sql = SQL()
                switch update {
                case .applied(let id, let verdict, let reason, let detail):
                    sql.append("""
                        UPDATE notifications SET verdict = \(sql.bind(verdict.rawValue)), reason = \(sql.bind(reason)),
                            reason_detail = \(sql.bind(detail)), order_id = \(sql.bind(orderID)), order_ref = \(sql.bind(order.orderRef)),
                            pending_effect = NULL
                        WHERE id = \(sql.bind(id))
                        """)
                case .unreadable(let id, let detail):
                    sql.append("UPDATE notifications SET reason_detail = \(sql.bind(detail)) WHERE id = \(sql.bind(id))")
                }
                try await connection.run(sql, logger: logger)
            }
        }
        try await writeEvents(planned)
    }

    private func insertOrders(_ orders: [StoredOrder]) async throws {
        var batch = ColumnBatch(17)
        for order in orders {
            batch.add([
                .int(order.id), .text(order.scope.provider), .text(order.scope.account), .text(order.orderRef), .text(order.providerTxnID),
                .text(order.state.rawValue), .int(order.amount?.minor), .text(order.amount?.currency), .int(order.refundedMinor),
                .int(order.expected?.minor), .text(order.expected?.currency), .text(order.flagsText), .text(order.createdAt),
                .text(order.updatedAt), .text(order.inquiry.from), .int(Int64(order.inquiry.step)), .text(order.inquiry.dueAt),
            ])
        }
        try await batch.insert(
            """
            INSERT INTO orders (id, provider, account, order_ref, provider_txn_id, state, amount_minor, currency, refunded_minor,
                                expected_amount_minor, expected_currency, flags, created_at, updated_at, inquiry_from, inquiry_step,
                                inquiry_due_at)
            """,
            types: ["bigint", "text", "text", "text", "text", "text", "bigint", "text", "bigint", "bigint", "text", "text", "text", "text",
                    "text", "bigint", "text"],
            connection: connection, logger: logger)
    }

    private func updateOrders(_ orders: [StoredOrder]) async throws {
        var batch = ColumnBatch(13)
        for order in orders {
            batch.add([
                .int(order.id), .text(order.state.rawValue), .int(order.amount?.minor), .text(order.amount?.currency),
                .int(order.refundedMinor), .int(order.expected?.minor), .text(order.expected?.currency), .text(order.flagsText),
                .text(order.providerTxnID), .text(order.updatedAt), .text(order.inquiry.from), .int(Int64(order.inquiry.step)),
                .text(order.inquiry.dueAt),
            ])
        }
        var sql = SQL()
        let columns = batch.bindColumns(
            into: &sql, types: ["bigint", "text", "bigint", "text", "bigint", "bigint", "text", "text", "text", "text", "text", "bigint", "text"])
        sql.append("""
            UPDATE orders AS o SET state = u.c2, amount_minor = u.c3, currency = u.c4, refunded_minor = u.c5,
                expected_amount_minor = u.c6, expected_currency = u.c7, flags = u.c8, provider_txn_id = u.c9, updated_at = u.c10,
                inquiry_from = u.c11, inquiry_step = u.c12, inquiry_due_at = u.c13
            FROM unnest(\(columns)) AS u (c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13)
            WHERE o.id = u.c1
            """)
        try await connection.run(sql, logger: logger)
    }

    private func insertNotifications(_ planned: [(plan: WritePlan, notificationID: Int64?, orderID: Int64?)]) async throws {
        var batch = ColumnBatch(24)
        for (plan, notificationID, orderID) in planned {
            guard let planned = plan.notification, let notificationID else { continue }
            let request = planned.request
            let notification = planned.notification
            let order: Int64? = switch planned.order {
            case .none: nil
            case .stored(let id): id
            case .planned: orderID
            }
            batch.add([
                .int(notificationID), .text(request.provider), .text(request.account), .text(request.receivedAt), .text(request.clientIP),
                .text(request.target), .text(request.headers), .bytes(request.body), .text(planned.verdict.rawValue), .text(planned.reason),
                .text(planned.reasonDetail), .text(notification?.kind.rawValue), .text(notification?.providerStatus),
                .text(notification?.dedupKey), .text(planned.orderRef), .int(order), .text(notification?.providerTxnID),
                .text(notification?.link?.key), .int(notification?.amount?.minor), .text(notification?.amount?.currency),
                .text(planned.detailJSON), .text(planned.pendingEffect), .int(request.reverifiedFrom), .int(request.inquiryID),
            ])
        }
        guard !batch.isEmpty else { return }
        try await batch.insert(
            """
            INSERT INTO notifications (id, provider, account, received_at, client_ip, target, headers, body, verdict, reason,
                reason_detail, kind, provider_status, dedup_key, order_ref, order_id, provider_txn_id, link_key, amount_minor,
                currency, detail, pending_effect, reverified_from, inquiry_id)
            """,
            types: ["bigint", "text", "text", "text", "text", "text", "text", "bytea", "text", "text", "text", "text", "text", "text",
                    "text", "bigint", "text", "text", "bigint", "text", "text", "text", "bigint", "bigint"],
            connection: connection, logger: logger)
    }

    /// The events, under the event lock held to the commit: seqs are taken in commit order.
    private func writeEvents(_ planned: [(plan: WritePlan, notificationID: Int64?, orderID: Int64?)]) async throws {
        let count = planned.reduce(0) { $0 + ($1.orderID == nil ? 0 : $1.plan.events.count) }
        guard count > 0 else { return }
        try await connection.run(SQL("SELECT pg_advisory_xact_lock(\(PostgresSchema.eventLock))"), logger: logger)
        var allocate = SQL()
        allocate.append("SELECT array_agg(nextval('events_seq')) FROM generate_series(1, \(allocate.bind(Int64(count))))")
        var seqs: [Int64] = []
        for try await values in try await connection.query(allocate.query, logger: logger).decode([Int64].self) { seqs = values.sorted() }
        var events = ColumnBatch(14)
        var deliveries = ColumnBatch(5)
        var next = 0
        for (plan, notificationID, orderID) in planned {
            guard let orderID, let order = plan.order?.order else { continue }
            for event in plan.events {
                let seq = seqs[next]
                next += 1
                events.add([
                    .int(seq), .text(UUID().uuidString.lowercased()), .text(event.type.rawValue), .text(now), .text(order.scope.provider),
                    .text(order.scope.account), .int(orderID), .text(order.orderRef), .text(event.orderJSON), .text(event.from?.rawValue),
                    .text(event.to.rawValue), .text(event.flag), .int(event.cause.notificationID(planned: notificationID)), .text(event.providerStatus),
                ])
                for target in event.routes {
                    deliveries.add([.text(target), .int(seq), .int(orderID), .text(now), .text(now)])
                }
            }
        }
        try await events.insert(
            """
            INSERT INTO events (seq, id, type, occurred_at, provider, account, order_id, order_ref, order_json, from_state, to_state,
                                flag, notification_id, provider_status)
            """,
            types: ["bigint", "text", "text", "text", "text", "text", "bigint", "text", "text", "text", "text", "text", "bigint", "text"],
            connection: connection, logger: logger)
        if !deliveries.isEmpty {
            var sql = SQL()
            let columns = deliveries.bindColumns(into: &sql, types: ["text", "bigint", "bigint", "text", "text"])
            sql.append("""
                INSERT INTO deliveries (target, event_seq, order_id, state, next_attempt_at, created_at)
                SELECT c1, c2, c3, 'pending', c4, c5 FROM unnest(\(columns)) AS u (c1, c2, c3, c4, c5)
                """)
            try await connection.run(sql, logger: logger)
        }
    }
}

/// A batch of rows, column by column, bound as arrays and expanded with `unnest`.
struct ColumnBatch {
    enum Value {
        case int(Int64?)
        case text(String?)
        case bytes([UInt8])
    }

    private var columns: [[Value]]

    init(_ width: Int) {
        columns = Array(repeating: [], count: width)
    }

    var isEmpty: Bool { columns.first?.isEmpty ?? true }

    mutating func add(_ row: [Value]) {
        for (index, value) in row.enumerated() { columns[index].append(value) }
    }

    /// Binds each column as an array of `types[i]`; returns `$1::bigint[], $2::text[], ...`.
    func bindColumns(into sql: inout SQL, types: [String]) -> String {
        var placeholders: [String] = []
        for (index, column) in columns.enumerated() {
            let placeholder: String
            switch types[index] {
            case "bigint":
                placeholder = sql.bind(NullableArray(column.map { if case .int(let value) = $0 { value } else { nil } }))
            case "bytea":
                placeholder = sql.bind(NullableArray(column.map { value -> ByteBuffer? in
                    if case .bytes(let bytes) = value { return ByteBuffer(bytes: bytes) }
                    return nil
                }))
            default:
                placeholder = sql.bind(NullableArray(column.map { if case .text(let value) = $0 { value } else { nil } }))
            }
            placeholders.append("\(placeholder)::\(types[index])[]")
        }
        return placeholders.joined(separator: ", ")
    }

    /// `head` (an `INSERT INTO table (columns)`) with the rows, through one statement.
    func insert(_ head: String, types: [String], suffix: String = "", connection: PostgresConnection, logger: Logger) async throws {
        var sql = SQL()
        let columns = bindColumns(into: &sql, types: types)
        let names = (1...types.count).map { "c\($0)" }.joined(separator: ", ")
        sql.append("\(head) SELECT \(names) FROM unnest(\(columns)) AS u (\(names)) \(suffix)")
        try await connection.run(sql, logger: logger)
    }
}

/// The advisory lock keys: 64-bit FNV-1a of what the lock guards. A collision only makes two
/// unrelated orders wait for each other.
enum LockKey {
    static func order(_ scope: Scope, _ ref: String) -> Int64 { hash("o", scope, ref) }
    static func link(_ scope: Scope, _ key: String) -> Int64 { hash("l", scope, key) }
    static func dedup(_ scope: Scope, _ key: String) -> Int64 { hash("d", scope, key) }

    private static func hash(_ kind: String, _ scope: Scope, _ value: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in [kind, scope.provider, scope.account, value] {
            for byte in part.utf8 {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01b3
            }
            hash ^= 0xff
            hash &*= 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }
}

/// The verified notification's `detail` as a JSON object text, as the SQLite backend stores it.
enum PreparedDetail {
    static func json(_ notification: VerifiedNotification) -> String? {
        notification.detail.isEmpty ? nil : JSONText.object(notification.detail)
    }
}
