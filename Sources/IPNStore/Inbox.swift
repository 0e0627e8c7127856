import GRDB
import IPNCore

/// The store's write side: records notifications (group-committed), expectations and
/// heartbeats, each acknowledged only once committed.
public final class Inbox: Sendable {
    public let store: Store
    private let writer: GroupCommitWriter

    /// - Parameters:
    ///   - maxBatch: the most jobs one commit carries; 1 gives one transaction per notification.
    public init(
        store: Store,
        maxBatch: Int = 256,
        commitObserver: (@Sendable (_ batchSize: Int, _ seconds: Double, _ failed: Bool) -> Void)? = nil,
        checkpointObserver: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)? = nil
    ) {
        self.store = store
        writer = GroupCommitWriter(
            store: store, maxBatch: maxBatch,
            observer: commitObserver, checkpointObserver: checkpointObserver
        )
    }

    public var maxBatch: Int { writer.maxBatch }

    /// Records `entry` and returns its verdict once it is durably committed.
    public func record(_ entry: InboxEntry) async throws(StoreError) -> RecordOutcome {
        let prepared = PreparedEntry(entry)
        return try await writer.submit { tx in try Recorder.record(prepared, in: tx) }
    }

    /// Registers the amount and currency `orderRef` must be paid with, creating the order in
    /// state `expected` when it is not known yet.
    public func setExpectation(
        provider: String,
        account: String,
        orderRef: String,
        amount: Money
    ) async throws(StoreError) -> ExpectationOutcome {
        try await writer.submit { tx in
            try Expectations.set(tx, scope: Scope(provider: provider, account: account), orderRef: orderRef,
                                 amount: amount)
        }
    }

    /// Proves the store accepts a durable write right now (readiness and watchdog).
    public func heartbeat() async throws(StoreError) {
        try await writer.submit { tx in
            try tx.db.execute(sql: "INSERT INTO heartbeat (id, at) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET at = excluded.at",
                           arguments: [tx.now])
        }
    }

    /// Stops taking writes and waits for those already accepted.
    public func shutdown() async {
        writer.close()
        await writer.drain()
    }
}

/// What registering an expectation found.
public struct ExpectationOutcome: Sendable, Equatable {
    /// The order's state (`expected` when the expectation created it).
    public let state: OrderState
    /// Why the order was flagged `amount_mismatch`: it was already authorized or paid with
    /// another amount.
    public let mismatch: String?
}

enum Expectations {
    static func set(_ tx: WriteContext, scope: Scope, orderRef: String, amount: Money) throws -> ExpectationOutcome {
        let (db, now) = (tx.db, tx.now)
        if var order = try OrderRow.fetch(tx, scope: scope, orderRef: orderRef) {
            try db.execute(
                sql: "UPDATE orders SET expected_amount_minor = ?, expected_currency = ?, updated_at = ? WHERE id = ?",
                arguments: [amount.minor, amount.currency, now, order.id]
            )
            let mismatch = OrderStateMachine.expectationConflict(order: order.snapshot, expected: amount)
            if mismatch != nil { try order.raise(.amountMismatch, tx) }
            return ExpectationOutcome(state: order.state, mismatch: mismatch)
        }
        var order = try OrderRow.insert(
            tx, scope: scope, orderRef: orderRef, state: .expected, amount: nil, refundedMinor: 0,
            providerTxnID: nil
        )
        try db.execute(
            sql: "UPDATE orders SET expected_amount_minor = ?, expected_currency = ? WHERE id = ?",
            arguments: [amount.minor, amount.currency, order.id]
        )
        order.expected = amount
        try Recorder.insertTransition(tx, orderID: order.id, from: nil, to: .expected, notificationID: nil)
        return ExpectationOutcome(state: .expected, mismatch: nil)
    }
}
