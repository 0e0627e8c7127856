import Foundation
import GRDB
import IPNCore

/// The one write path: dedup, the state machine, the transition and the notification row,
/// all inside the caller's write transaction.
enum Recorder {
    static func record(_ entry: InboxEntry, in tx: WriteContext) throws -> RecordOutcome {
        try record(PreparedEntry(entry), in: tx)
    }

    static func record(_ prepared: PreparedEntry, in tx: WriteContext) throws -> RecordOutcome {
        switch prepared.entry {
        case .rejected(let request, let rejection):
            let id = try insertNotification(
                tx, request: request, verdict: .rejected, reason: rejection.reason.rawValue,
                reasonDetail: rejection.detail, notification: nil, detail: nil, orderID: nil, orderRef: nil
            )
            return RecordOutcome(notificationID: id, verdict: .rejected, explanation: rejection.description)
        case .verified(let request, let notification):
            return try recordVerified(request, notification, detail: prepared.detailJSON, in: tx)
        }
    }

    private static func recordVerified(
        _ request: ReceivedRequest,
        _ notification: VerifiedNotification,
        detail: String?,
        in tx: WriteContext
    ) throws -> RecordOutcome {
        let db = tx.db
        let scope = Scope(provider: request.provider, account: request.account)
        let dedup = try RawStatement(tx, .dedupKeyLookup)
        if let firstID = try dedup.first(.text(scope.provider), .text(scope.account), .text(notification.dedupKey), read: { $0.int(0) }) ?? nil {
            let first = try RawStatement(tx, .deliveryOrder).first(.int(firstID)) { try FirstDelivery(row: $0) }
            let id = try insertNotification(
                tx, request: request, verdict: .duplicate, reason: nil,
                reasonDetail: "same dedup key as notification \(firstID)", notification: notification, detail: detail,
                orderID: first?.orderID, orderRef: first?.orderRef
            )
            return RecordOutcome(notificationID: id, verdict: .duplicate, orderState: first?.orderState,
                                 orderRef: first?.currentOrderRef ?? notification.orderRef)
        }

        var order: OrderRow?
        if let orderRef = notification.orderRef {
            order = try OrderRow.fetch(tx, scope: scope, orderRef: orderRef)
        } else if case .requires(let key) = notification.link {
            order = try linkedOrder(tx, scope: scope, key: key)
            if order == nil {
                let id = try insertNotification(
                    tx, request: request, verdict: .unlinked, reason: nil,
                    reasonDetail: "no payment with id \(key) yet; applied when it arrives",
                    notification: notification, detail: detail, orderID: nil, orderRef: nil, pendingEffect: true
                )
                try insertDedupKey(tx, scope: scope, key: notification.dedupKey, notificationID: id)
                return RecordOutcome(notificationID: id, verdict: .unlinked, explanation: "waiting for payment \(key)")
            }
        }

        var notificationID: Int64 = 0
        let outcome = try apply(notification, to: &order, scope: scope, in: tx) { order, decision in
            notificationID = try insertNotification(
                tx, request: request, verdict: decision.verdict,
                reason: decision.flag?.rawValue, reasonDetail: decision.explanation,
                notification: notification, detail: detail, orderID: order?.id, orderRef: order?.orderRef
            )
            return notificationID
        }
        try insertDedupKey(tx, scope: scope, key: notification.dedupKey, notificationID: notificationID)

        var linked: [LinkedNotification] = []
        if case .registers(let key) = notification.link, let registered = order {
            let inserted = try registerLink(db, scope: scope, key: key, orderID: registered.id)
            if inserted {
                (order, linked) = try applyWaitingNotifications(tx, scope: scope, key: key, order: registered)
            }
        }
        return RecordOutcome(
            notificationID: notificationID, verdict: outcome.verdict, orderState: order?.state,
            orderRef: order?.orderRef ?? notification.orderRef, explanation: outcome.explanation, flag: outcome.flag,
            linked: linked
        )
    }

    /// Decides and applies `notification` to `order` (creating it when needed). `store` writes
    /// the notification row once the order exists and returns its id.
    private static func apply(
        _ notification: VerifiedNotification,
        to order: inout OrderRow?,
        scope: Scope,
        in tx: WriteContext,
        store: (OrderRow?, Decision) throws -> Int64
    ) throws -> Decision {
        let (db, now) = (tx.db, tx.now)
        var refundCounted = false
        var refundsRecorded: Int64 = 0
        if case .refund(let info) = notification.effect, let existing = order {
            // The order's refunds, read once: whether this one is among them, and their sum,
            // added up here rather than with SQL's SUM, which fails the statement on overflow.
            let refunds = try Row.fetchAll(
                db.cachedStatement(sql: "SELECT refund_id, amount_minor FROM refunds WHERE order_id = ?"), arguments: [existing.id])
            for refund in refunds {
                if let refundID = info.refundID, refund["refund_id"] == refundID { refundCounted = true }
                guard let amount: Int64 = refund["amount_minor"] else { continue }
                let (sum, overflow) = refundsRecorded.addingReportingOverflow(amount)
                refundsRecorded = overflow ? .max : sum
            }
        }
        var snapshot = order?.snapshot
        if let existing = order, existing.state == .pending {
            // Only notifications with no state effect may have named it so far (see below).
            snapshot?.hasTransitions = try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM transitions WHERE order_id = ?)"),
                arguments: [existing.id]) ?? true
        }
        if let existing = order, existing.amount == nil, existing.refundedMinor > 0 {
            // Refunds came first: their currency is the order's until a payment says otherwise.
            snapshot?.refundCurrency = try String.fetchOne(
                db.cachedStatement(sql: """
                    SELECT currency FROM notifications
                    WHERE order_id = ? AND kind = 'refund' AND verdict = 'applied' AND currency IS NOT NULL LIMIT 1
                    """),
                arguments: [existing.id])
        }
        let decision = OrderStateMachine.decide(
            order: snapshot, notification: notification, refundAlreadyCounted: refundCounted,
            refundsRecordedMinor: refundsRecorded)

        // The first transition is from null (product.md section 1), also for an order that
        // notifications with no state effect created.
        let previousState = snapshot?.hasTransitions == false ? nil : order?.state
        let txnID = notification.describesThePayment ? notification.providerTxnID : nil
        if var existing = order, decision.newState != nil || decision.orderAmount != nil || decision.refundedMinor != nil {
            // A transition, or facts a late notification still tells (the amount, the total).
            if let newState = decision.newState { existing.state = newState }
            if let amount = decision.orderAmount { existing.amount = amount }
            if let refunded = decision.refundedMinor { existing.refundedMinor = refunded }
            // The payment's own id: payments set it; a capture's id only fills it when unknown.
            if let txnID, existing.providerTxnID == nil || notification.kind == .payment {
                existing.providerTxnID = txnID
            }
            existing.updatedAt = now
            try existing.update(tx)
            order = existing
        } else if order == nil, let newState = decision.newState, let orderRef = notification.orderRef {
            order = try OrderRow.insert(
                tx, scope: scope, orderRef: orderRef, state: newState, amount: decision.orderAmount,
                refundedMinor: decision.refundedMinor ?? 0, providerTxnID: txnID ?? notification.providerTxnID
            )
        } else if order == nil, let orderRef = notification.orderRef {
            // A notification that names an unknown order creates it whatever its kind
            // (product.md section 5). One with no state effect (a payout, a chargeback stage,
            // an unknown status) says nothing settled about the payment and causes no
            // transition (providers.md): the order shows `pending` (`expected` is only for
            // orders known from an expectation alone) with no transition yet, and the first
            // notification that moves it, `pending` included, is applied from null.
            order = try OrderRow.insert(
                tx, scope: scope, orderRef: orderRef, state: .pending,
                amount: notification.describesThePayment ? notification.amount : nil,
                refundedMinor: 0, providerTxnID: txnID
            )
        }
        if let flag = decision.flag, var existing = order {
            try existing.raise(flag, tx)
            order = existing
        }
        let notificationID = try store(order, decision)
        if let newState = decision.newState, let order {
            try insertTransition(tx, orderID: order.id, from: previousState, to: newState, notificationID: notificationID)
        }
        // Every authentic refund of the order's currency is remembered by id, a stale one too:
        // its amount counts in the sum a refund arriving later is checked against.
        if case .refund(let info) = notification.effect, let refundID = info.refundID, let order,
           decision.verdict == .applied || decision.verdict == .stale {
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO refunds (order_id, refund_id, amount_minor, notification_id) VALUES (?, ?, ?, ?)"
            ).execute(arguments: [order.id, refundID, info.amount?.minor, notificationID])
        }
        return decision
    }

    /// Applies, in arrival order, the captures and refunds that waited for payment `key`;
    /// returns the order as they left it, and what each of them did.
    private static func applyWaitingNotifications(
        _ tx: WriteContext, scope: Scope, key: String, order: OrderRow
    ) throws -> (OrderRow, [LinkedNotification]) {
        let db = tx.db
        let waiting = try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT id, pending_effect FROM notifications
                WHERE provider = ? AND account = ? AND link_key = ? AND verdict = 'unlinked' ORDER BY id
                """),
            arguments: [scope.provider, scope.account, key]
        )
        // Redeliveries of the waiting notifications were stored as duplicates with no order:
        // they belong to this one as well. Only a waiting notification has such redeliveries,
        // so a payment nothing waited for (nearly all) skips the statement.
        if !waiting.isEmpty {
            try db.cachedStatement(sql: """
                UPDATE notifications SET order_id = ?, order_ref = ?
                WHERE provider = ? AND account = ? AND link_key = ? AND verdict = 'duplicate' AND order_id IS NULL
                """).execute(arguments: [order.id, order.orderRef, scope.provider, scope.account, key])
        }
        var current: OrderRow? = order
        var linked: [LinkedNotification] = []
        for row in waiting {
            let id: Int64 = row["id"]
            // One waiting row that cannot be read (stored by another version) must not stop the
            // payment from being recorded: it stays unlinked, saying why, for people to look at.
            guard let json: String = row["pending_effect"],
                  let notification = try? JSONDecoder().decode(VerifiedNotification.self, from: Data(json.utf8)) else {
                try db.cachedStatement(sql: "UPDATE notifications SET reason_detail = ? WHERE id = ?").execute(arguments: [
                    "payment \(key) arrived, but this notification's stored effect cannot be read; not applied", id,
                ])
                continue
            }
            let decision = try apply(notification, to: &current, scope: scope, in: tx) { order, decision in
                try db.cachedStatement(sql: """
                    UPDATE notifications SET verdict = ?, reason = ?, reason_detail = ?, order_id = ?, order_ref = ?,
                    pending_effect = NULL WHERE id = ?
                    """).execute(arguments: [decision.verdict.rawValue, decision.flag?.rawValue,
                                             decision.explanation ?? "linked to payment \(key)", order?.id, order?.orderRef, id])
                return id
            }
            linked.append(LinkedNotification(
                notificationID: id, verdict: decision.verdict, orderState: current?.state,
                explanation: decision.explanation ?? "linked to payment \(key)", flag: decision.flag))
        }
        return (current ?? order, linked)
    }

    private static func linkedOrder(_ tx: WriteContext, scope: Scope, key: String) throws -> OrderRow? {
        let db = tx.db
        guard let orderID = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT order_id FROM payment_links WHERE provider = ? AND account = ? AND link_key = ?"),
            arguments: [scope.provider, scope.account, key]
        ) else { return nil }
        return try OrderRow.fetch(tx, id: orderID)
    }

    private static func registerLink(_ db: Database, scope: Scope, key: String, orderID: Int64) throws -> Bool {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO payment_links (provider, account, link_key, order_id) VALUES (?, ?, ?, ?)")
            .execute(arguments: [scope.provider, scope.account, key, orderID])
        return db.changesCount > 0
    }

    /// One row of an order's history: `from` is nil for its first, and `notificationID` is nil for a
    /// transition no notification caused (the order's creation by an expectation).
    static func insertTransition(
        _ tx: WriteContext, orderID: Int64, from: OrderState?, to: OrderState, notificationID: Int64?
    ) throws {
        try RawStatement(tx, .transitionInsert).run(
            .int(orderID), .text(from?.rawValue), .text(to.rawValue), .text(tx.now), .int(notificationID))
    }

    private static func insertDedupKey(_ tx: WriteContext, scope: Scope, key: String, notificationID: Int64) throws {
        let insert = try RawStatement(tx, .dedupKeyInsert)
        try insert.run(.text(scope.provider), .text(scope.account), .text(key), .int(notificationID))
    }

    private static func insertNotification(
        _ tx: WriteContext,
        request: ReceivedRequest,
        verdict: Verdict,
        reason: String?,
        reasonDetail: String?,
        notification: VerifiedNotification?,
        detail: String?,
        orderID: Int64?,
        orderRef: String?,
        pendingEffect: Bool = false
    ) throws -> Int64 {
        let db = tx.db
        let effect = try pendingEffect ? notification.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) } : nil
        let insert = try RawStatement(tx, .notificationInsert)
        try insert.run(
            .text(request.provider), .text(request.account), .text(request.receivedAt), .text(request.clientIP),
            .text(request.target), .text(request.headers), .blob(request.body), .text(verdict.rawValue), .text(reason),
            .text(reasonDetail), .text(notification?.kind.rawValue), .text(notification?.providerStatus),
            .text(notification?.dedupKey), .text(orderRef ?? notification?.orderRef), .int(orderID),
            .text(notification?.providerTxnID), .text(notification?.link?.key), .int(notification?.amount?.minor),
            .text(notification?.amount?.currency), .text(detail)
        )
        let id = db.lastInsertedRowID
        if let effect {
            try db.cachedStatement(sql: "UPDATE notifications SET pending_effect = ? WHERE id = ?").execute(arguments: [effect, id])
        }
        return id
    }
}

/// An entry, with what needs no database worked out by the caller before the writer's turn: the
/// writer is the one serial stage, so the notification's details become JSON text beforehand.
struct PreparedEntry: Sendable {
    let entry: InboxEntry
    /// The verified notification's `detail` as a JSON object, nil when it has none.
    let detailJSON: String?

    init(_ entry: InboxEntry) {
        self.entry = entry
        if case .verified(_, let notification) = entry, !notification.detail.isEmpty {
            detailJSON = JSONText.object(notification.detail)
        } else {
            detailJSON = nil
        }
    }
}

/// What a duplicate is recorded and answered with: its first delivery's order, as it is now.
struct FirstDelivery {
    /// The order the first delivery's row names: the order's reference when it is linked to
    /// one, else the reference the first delivery itself carried.
    let orderRef: String?
    let orderID: Int64?
    /// The linked order's reference and state; nil when the first delivery has no order.
    let currentOrderRef: String?
    let orderState: OrderState?

    /// Reads `WriteSQL.deliveryOrder`'s columns: `n.order_ref, o.id, o.order_ref, o.state`.
    init(row: RawStatement.Row) throws {
        orderID = row.int(1)
        currentOrderRef = row.text(2)
        orderRef = currentOrderRef ?? row.text(0)
        if let stateText = row.text(3) {
            guard let state = OrderState(rawValue: stateText) else {
                throw StoreError(message: "order \(orderID ?? 0) has an unknown state \"\(stateText)\" in the store")
            }
            orderState = state
        } else {
            orderState = nil
        }
    }
}

/// Orders, notifications and dedup keys are scoped by provider and account.
struct Scope {
    let provider: String
    let account: String
}
