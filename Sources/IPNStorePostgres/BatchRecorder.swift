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
/// statements, records each job in order through `Recording` (the planner's decisions turned
/// into rows, the facts kept current by `BatchFacts`), then writes all rows with one statement
/// per kind of row, the events queued for the sequencer to number once committed.
struct BatchRecorder {
    let connection: PostgresConnection
    let logger: Logger
    let now: String
    let routes: [DeliveryRoute]
    var schedule: InquirySchedule = .standard

    var planner: RecordingPlanner { RecordingPlanner(now: now, routes: routes, schedule: schedule) }

    func record(_ jobs: [WriteJob]) async throws -> [WriteResult] {
        try await lock(jobs)
        let ids = try await allocateIDs(notifications: jobs.count, orders: jobs.count)
        let session = PostgresSession(facts: try await read(needed(jobs), lockRows: true), planner: planner, ids: ids)
        let results = try jobs.map { try record($0, in: session) }
        try await write(session.rows)
        return results
    }

    /// What `record` would answer for `jobs`, read without locks and written nowhere (the dry
    /// run of `notifications reverify`): new rows get id 0.
    func preview(_ jobs: [WriteJob]) async throws -> [WriteResult] {
        let session = PostgresSession(facts: try await read(needed(jobs), lockRows: false), planner: planner, ids: .zeros(jobs.count))
        return try jobs.map { try record($0, in: session) }
    }

    private func needed(_ jobs: [WriteJob]) -> FactsNeeded {
        var needed = FactsNeeded()
        for job in jobs {
            switch job {
            case .record(let entry): needed.add(entry)
            case .expectation(let scope, let orderRef, _): needed.addExpectation(scope: scope, orderRef: orderRef)
            }
        }
        return needed
    }

    private func record(_ job: WriteJob, in session: PostgresSession) throws -> WriteResult {
        switch job {
        case .record(let entry):
            return .recorded(try Recording.record(PreparedEntry(entry), in: session))
        case .expectation(let scope, let orderRef, let amount):
            return .expectation(try Recording.setExpectation(amount, scope: scope, orderRef: orderRef, in: session))
        }
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

    /// Ids for the rows the batch may insert, ascending: one notification per job, at most one
    /// new order per job, and `inquiries` inquiry records. Unused ones are gaps, as with any sequence.
    func allocateIDs(notifications: Int, orders: Int, inquiries: Int = 0) async throws -> AllocatedIDs {
        var sql = SQL()
        sql.append("""
            SELECT (SELECT array_agg(nextval('notifications_id_seq')) FROM generate_series(1, \(sql.bind(Int64(notifications))))) AS n,
                   (SELECT array_agg(nextval('orders_id_seq')) FROM generate_series(1, \(sql.bind(Int64(orders))))) AS o,
                   (SELECT array_agg(nextval('inquiries_id_seq')) FROM generate_series(1, \(sql.bind(Int64(inquiries))))) AS i
            """)
        var result = AllocatedIDs()
        for try await (n, o, i) in try await connection.query(sql.query, logger: logger).decode(([Int64]?, [Int64]?, [Int64]?).self) {
            result = AllocatedIDs(notifications: (n ?? []).sorted(), orders: (o ?? []).sorted(), inquiries: (i ?? []).sorted())
        }
        return result
    }

    // MARK: Reading the facts

    /// Reads what `needed` lists. With `lockRows`, the orders read are locked to the commit
    /// (`FOR NO KEY UPDATE`: other writers of the order wait; a foreign key check does not).
    func read(_ needed: FactsNeeded, lockRows: Bool) async throws -> BatchFacts {
        let forUpdate = lockRows ? "FOR NO KEY UPDATE" : ""
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
                \(lockRows ? "FOR NO KEY UPDATE OF o" : "")
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

    // MARK: Writing the rows

    func write(_ rows: PostgresRows) async throws {
        try await rows.write(connection: connection, logger: logger)
        try await writeEvents(rows.events)
    }

    /// The events, queued for the sequencer (`EventSequencer`), which numbers them once this
    /// transaction committed: each takes the next row id in the order it was written, and the
    /// order's lock this transaction holds keeps one order's rows in commit order.
    private func writeEvents(_ events: [EventRow]) async throws {
        guard !events.isEmpty else { return }
        let shape = RowShape(table: "events_unsequenced", columns: EventRow.shape.columns + [("targets", .text)])
        var batch = ColumnBatch(shape.columns.count)
        for event in events { batch.add(event.values + [.text(event.targets.joined(separator: ","))]) }
        var sql = SQL()
        let arrays = batch.bindColumns(into: &sql, shape: shape)
        let names = (1...shape.columns.count).map { "c\($0)" }
        // Delivery target names are [a-z0-9_-]: a comma separates them.
        sql.append("""
            INSERT INTO events_unsequenced (row_id, \(EventRow.shape.columnList), targets)
            SELECT nextval('events_row_ids'), \(names.dropLast().joined(separator: ", ")), string_to_array(\(names.last ?? "''"), ',')
            FROM unnest(\(arrays)) WITH ORDINALITY AS u (\(names.joined(separator: ", ")), position)
            ORDER BY position
            """)
        try await connection.run(sql, logger: logger)
    }
}

/// A batch of rows, column by column, bound as arrays and expanded with `unnest`.
struct ColumnBatch {
    typealias Value = RowValue

    private var columns: [[Value]]

    init(_ width: Int) {
        columns = Array(repeating: [], count: width)
    }

    var isEmpty: Bool { columns.first?.isEmpty ?? true }

    mutating func add(_ row: [Value]) {
        for (index, value) in row.enumerated() { columns[index].append(value) }
    }

    /// Binds each column as an array of its type in `shape`; returns `$1::bigint[], $2::text[], ...`.
    func bindColumns(into sql: inout SQL, shape: RowShape) -> String {
        bindColumns(into: &sql, types: shape.columns.map { RowShape.postgresType($0.type) })
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
