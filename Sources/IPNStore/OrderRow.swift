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

    static func fetch(_ tx: WriteContext, scope: Scope, orderRef: String) throws -> OrderRow? {
        let query = try RawStatement(tx, .orderByRef)
        return try query.first(.text(scope.provider), .text(scope.account), .text(orderRef), read: OrderRow.init(row:))
    }

    static func fetch(_ tx: WriteContext, id: Int64) throws -> OrderRow? {
        let query = try RawStatement(tx, .orderByID)
        return try query.first(.int(id), read: OrderRow.init(row:))
    }

    static func insert(
        _ tx: WriteContext,
        scope: Scope,
        orderRef: String,
        state: OrderState,
        amount: Money?,
        refundedMinor: Int64,
        providerTxnID: String?
    ) throws -> OrderRow {
        let now = tx.now
        let insert = try RawStatement(tx, .orderInsert)
        try insert.run(
            .text(scope.provider), .text(scope.account), .text(orderRef), .text(providerTxnID), .text(state.rawValue),
            .int(amount?.minor), .text(amount?.currency), .int(refundedMinor), .text(now), .text(now))
        return OrderRow(
            id: tx.db.lastInsertedRowID, orderRef: orderRef, state: state, amount: amount, refundedMinor: refundedMinor,
            expected: nil, flags: [], providerTxnID: providerTxnID, updatedAt: now
        )
    }

    /// Raises `flag` on the order, once; the order is written only when the flag is new.
    mutating func raise(_ flag: OrderFlag, _ tx: WriteContext) throws {
        guard !flags.contains(flag.rawValue) else { return }
        flags.append(flag.rawValue)
        updatedAt = tx.now
        try update(tx)
    }

    func update(_ tx: WriteContext) throws {
        let update = try RawStatement(tx, .orderUpdate)
        try update.run(
            .text(state.rawValue), .int(amount?.minor), .text(amount?.currency), .int(refundedMinor),
            .text(flags.joined(separator: ",")), .text(providerTxnID), .text(updatedAt), .int(id))
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

    /// Reads the order's columns (`WriteSQL.orderColumns`) from `row`.
    private init(row: RawStatement.Row) throws {
        id = row.int(0) ?? 0
        orderRef = row.text(1) ?? ""
        let stateText = row.text(2) ?? ""
        guard let state = OrderState(rawValue: stateText) else {
            throw StoreError(message: "order \(id) has an unknown state \"\(stateText)\" in the store")
        }
        self.state = state
        amount = zip(row.int(3), row.text(4)).map { Money(minor: $0, currency: $1) }
        refundedMinor = row.int(5) ?? 0
        expected = zip(row.int(6), row.text(7)).map { Money(minor: $0, currency: $1) }
        flags = (row.text(8) ?? "").split(separator: ",").map(String.init)
        providerTxnID = row.text(9)
        updatedAt = row.text(10) ?? ""
    }
}

/// Both values, or nil.
func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
