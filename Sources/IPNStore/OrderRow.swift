import GRDB
import IPNCore

/// An order as the write path reads and writes it.
struct OrderRow {
    let id: Int64
    let orderRef: String
    var state: OrderState
    var amount: Money?
    var refundedMinor: Int64
    var expected: Money?
    var flags: [String]
    var providerTxnID: String?
    var updatedAt: String

    var snapshot: OrderSnapshot {
        OrderSnapshot(state: state, amount: amount, refundedMinor: refundedMinor, expected: expected)
    }

    private static let columns = """
        id, order_ref, state, amount_minor, currency, refunded_minor, expected_amount_minor, expected_currency,
        flags, provider_txn_id, updated_at
        """

    static func fetch(_ db: Database, scope: Scope, orderRef: String) throws -> OrderRow? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT \(columns) FROM orders WHERE provider = ? AND account = ? AND order_ref = ?"),
            arguments: [scope.provider, scope.account, orderRef]
        ).map { try OrderRow(row: $0) }
    }

    static func fetch(_ db: Database, id: Int64) throws -> OrderRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(columns) FROM orders WHERE id = ?"), arguments: [id])
            .map { try OrderRow(row: $0) }
    }

    static func insert(
        _ db: Database,
        scope: Scope,
        orderRef: String,
        state: OrderState,
        amount: Money?,
        refundedMinor: Int64,
        providerTxnID: String?,
        now: String
    ) throws -> OrderRow {
        try db.cachedStatement(sql: """
            INSERT INTO orders (provider, account, order_ref, provider_txn_id, state, amount_minor, currency,
                                refunded_minor, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [
            scope.provider, scope.account, orderRef, providerTxnID, state.rawValue, amount?.minor, amount?.currency,
            refundedMinor, now, now,
        ])
        return OrderRow(
            id: db.lastInsertedRowID, orderRef: orderRef, state: state, amount: amount, refundedMinor: refundedMinor,
            expected: nil, flags: [], providerTxnID: providerTxnID, updatedAt: now
        )
    }

    func update(_ db: Database) throws {
        try db.cachedStatement(sql: """
            UPDATE orders SET state = ?, amount_minor = ?, currency = ?, refunded_minor = ?, flags = ?,
                              provider_txn_id = ?, updated_at = ?
            WHERE id = ?
            """).execute(arguments: [
            state.rawValue, amount?.minor, amount?.currency, refundedMinor, flags.joined(separator: ","),
            providerTxnID, updatedAt, id,
        ])
    }

    private init(
        id: Int64, orderRef: String, state: OrderState, amount: Money?, refundedMinor: Int64, expected: Money?,
        flags: [String], providerTxnID: String?, updatedAt: String
    ) {
        self.id = id
        self.orderRef = orderRef
        self.state = state
        self.amount = amount
        self.refundedMinor = refundedMinor
        self.expected = expected
        self.flags = flags
        self.providerTxnID = providerTxnID
        self.updatedAt = updatedAt
    }

    private init(row: Row) throws {
        id = row["id"]
        orderRef = row["order_ref"]
        let stateText: String = row["state"]
        guard let state = OrderState(rawValue: stateText) else {
            throw StoreError(message: "order \(id) has an unknown state \"\(stateText)\" in the store")
        }
        self.state = state
        let amountMinor: Int64? = row["amount_minor"]
        let currency: String? = row["currency"]
        amount = zip(amountMinor, currency).map { Money(minor: $0, currency: $1) }
        refundedMinor = row["refunded_minor"]
        let expectedMinor: Int64? = row["expected_amount_minor"]
        let expectedCurrency: String? = row["expected_currency"]
        expected = zip(expectedMinor, expectedCurrency).map { Money(minor: $0, currency: $1) }
        let flagText: String = row["flags"]
        flags = flagText.split(separator: ",").map(String.init)
        providerTxnID = row["provider_txn_id"]
        updatedAt = row["updated_at"]
    }
}

/// Both values, or nil.
func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
