import Foundation
import GRDB
import IPNCore
import IPNStore
@testable import IPNStoreSQLite
import Testing

/// A store in a fresh temporary file.
struct TemporaryStore {
    let path: String
    let store: SQLiteDatabase
    let inbox: SQLiteStore

    init(maxBatch: Int, busyTimeout: TimeInterval = 5) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("ipnd.sqlite").path
        store = try SQLiteDatabase(path: path, busyTimeout: busyTimeout)
        inbox = SQLiteStore(database: store, maxBatch: maxBatch)
    }

    func order(_ ref: String, provider: String = "test") async throws -> OrderDetail? {
        try await store.read { db in try Queries.order(db, provider: provider, account: "default", orderRef: ref) }
    }

    func count(_ sql: String) async throws -> Int {
        try await store.read { db in try Int.fetchOne(db, sql: sql) ?? -1 }
    }
}

func request(provider: String = "test", body: String = "{}") -> ReceivedRequest {
    ReceivedRequest(provider: provider, account: "default", receivedAt: "2026-11-21T00:00:00.000Z", clientIP: "127.0.0.1",
                    target: "/ipn/\(provider)", headers: "[]", body: Array(body.utf8))
}

func notification(
    _ key: String, _ effect: NotificationEffect, order: String? = "O1", kind: NotificationKind = .payment,
    amount: Money? = Money(minor: 500, currency: "USD"), link: PaymentLink? = nil
) -> VerifiedNotification {
    VerifiedNotification(kind: kind, orderRef: order, providerTxnID: "T-\(key)", dedupKey: key, providerStatus: key,
                         effect: effect, amount: amount, link: link)
}

/// Both write paths: one transaction per notification, and group commit.
let commitPaths = [1, 256]

@Suite("The one write path, on both commit paths")
struct InboxTests {
    @Test("ten concurrent deliveries of one notification: one applied, nine duplicates, one transition", arguments: commitPaths)
    func concurrentDuplicates(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        let paid = notification("pay-1", .transition(.paid))
        let verdicts = try await withThrowingTaskGroup(of: Verdict.self) { group in
            for _ in 0..<10 {
                group.addTask { try await store.inbox.record(.verified(request(), paid)).verdict }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(verdicts.filter { $0 == .applied }.count == 1)
        #expect(verdicts.filter { $0 == .duplicate }.count == 9)
        #expect(try await store.count("SELECT COUNT(*) FROM transitions") == 1)
        #expect(try await store.count("SELECT COUNT(*) FROM notifications") == 10)
        #expect(try await store.order("O1")?.order.state == .paid)
    }

    @Test("many orders delivered concurrently with duplicates: exactly one applied per dedup key", arguments: commitPaths)
    func manyConcurrent(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        let outcomes = try await withThrowingTaskGroup(of: (String, Verdict).self) { group in
            for index in 0..<200 {
                for _ in 0..<3 {
                    group.addTask {
                        let note = notification("k\(index)", .transition(.paid), order: "order-\(index)")
                        return ("k\(index)", try await store.inbox.record(.verified(request(), note)).verdict)
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let applied = Dictionary(grouping: outcomes.filter { $0.1 == .applied }, by: \.0)
        #expect(applied.count == 200)
        #expect(applied.values.allSatisfy { $0.count == 1 })
        #expect(outcomes.filter { $0.1 == .duplicate }.count == 400)
        #expect(try await store.count("SELECT COUNT(*) FROM orders WHERE state = 'paid'") == 200)
        #expect(try await store.count("SELECT COUNT(*) FROM transitions") == 200)
    }

    @Test("a lifecycle in every order ends in the same state; a late pending is stale", arguments: commitPaths)
    func everyOrder(maxBatch: Int) async throws {
        let lifecycle = [
            notification("pending", .transition(.pending)),
            notification("authorized", .transition(.authorized)),
            notification("paid", .transition(.paid)),
            notification("refunded", .refund(RefundInfo(refundID: "R1", amount: Money(minor: 500, currency: "USD"), fullyRefunded: true)),
                         kind: .refund),
        ]
        for permutation in permutations(of: lifecycle) {
            let store = try TemporaryStore(maxBatch: maxBatch)
            for note in permutation { _ = try await store.inbox.record(.verified(request(), note)) }
            let detail = try #require(try await store.order("O1"))
            #expect(detail.order.state == .refunded, "\(permutation.map(\.dedupKey))")
            #expect(detail.order.refundedMinor == 500)
            // Replaying everything changes nothing.
            for note in permutation {
                #expect(try await store.inbox.record(.verified(request(), note)).verdict == .duplicate)
            }
            #expect(try await store.order("O1")?.order.state == .refunded)
        }
        let store = try TemporaryStore(maxBatch: maxBatch)
        #expect(try await store.inbox.record(.verified(request(), notification("paid", .transition(.paid)))).verdict == .applied)
        let late = try await store.inbox.record(.verified(request(), notification("pending", .transition(.pending))))
        #expect(late.verdict == .stale)
        #expect(late.orderState == .paid)
        let detail = try #require(try await store.order("O1"))
        #expect(detail.transitions.map(\.to) == [.paid])
        #expect(detail.transitions.first?.from == nil)
        #expect(detail.notifications.map(\.verdict) == [.applied, .stale])
    }

    @Test("a payment and two refunds in every order: the same state, amount and refunded total, the same on replay",
          arguments: [(1, true), (1, false), (256, true), (256, false)])
    func refundsInEveryOrder(maxBatch: Int, remainingReported: Bool) async throws {
        let usd = { (minor: Int64) in Money(minor: minor, currency: "USD") }
        func refund(_ id: String, _ minor: Int64, remaining: Int64) -> VerifiedNotification {
            // Unlimint reports what remains; Citcon and Alipay only the refund's own amount.
            let info = remainingReported
                ? RefundInfo(refundID: id, amount: usd(minor), fullyRefunded: remaining == 0, remainingMinor: remaining)
                : RefundInfo(refundID: id, amount: usd(minor))
            return notification(id, .refund(info), kind: .refund, amount: usd(minor))
        }
        let paid = notification("paid", .transition(.paid), amount: usd(1000))
        let lifecycles: [(notes: [VerifiedNotification], state: OrderState, refunded: Int64)] = [
            ([paid, refund("R1", 300, remaining: 700), refund("R2", 700, remaining: 0)], .refunded, 1000),
            ([paid, refund("R1", 300, remaining: 700), refund("R2", 200, remaining: 500)], .partiallyRefunded, 500),
        ]
        for lifecycle in lifecycles {
            for permutation in permutations(of: lifecycle.notes) {
                let store = try TemporaryStore(maxBatch: maxBatch)
                for note in permutation + permutation { _ = try await store.inbox.record(.verified(request(), note)) }
                let detail = try #require(try await store.order("O1"))
                let order = permutation.map(\.dedupKey)
                #expect(detail.order.state == lifecycle.state, "\(order)")
                #expect(detail.order.refundedMinor == lifecycle.refunded, "\(order)")
                #expect(detail.order.amount == usd(1000), "\(order)")
                #expect(detail.order.providerTxnID == "T-paid", "\(order)")
                // Transitions only climb, and the last one reached the final state.
                #expect(detail.transitions.last?.to == lifecycle.state, "\(order)")
                #expect(zip(detail.transitions.dropLast(), detail.transitions.dropFirst()).allSatisfy { $0.to.rank <= $1.to.rank })
            }
        }
    }

    @Test("a refund in another currency flags the order and leaves its total alone", arguments: commitPaths)
    func refundInOtherCurrency(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        _ = try await store.inbox.record(.verified(request(), notification("paid", .transition(.paid))))
        let euros = Money(minor: 300, currency: "EUR")
        let outcome = try await store.inbox.record(.verified(request(), notification(
            "R1", .refund(RefundInfo(refundID: "R1", amount: euros)), kind: .refund, amount: euros)))
        #expect(outcome.verdict == .mismatch)
        let detail = try #require(try await store.order("O1"))
        #expect(detail.order.state == .paid)
        #expect(detail.order.refundedMinor == 0)
        #expect(detail.order.flags == ["amount_mismatch"])
        #expect(try await store.count("SELECT COUNT(*) FROM refunds") == 0)

        // The other way round: the euro refund is counted first, so the dollar payment comes too
        // late to move the order. It is stale, like any late payment with no expectation to
        // disagree with (product.md section 5), and its amount is not taken as the order's.
        let refundFirst = notification("R2", .refund(RefundInfo(refundID: "R2", amount: euros)), order: "O2", kind: .refund, amount: euros)
        #expect(try await store.inbox.record(.verified(request(), refundFirst)).verdict == .applied)
        let payment = try await store.inbox.record(.verified(request(), notification("paid-2", .transition(.paid), order: "O2")))
        #expect(payment.verdict == .stale)
        let second = try #require(try await store.order("O2"))
        #expect(second.order.flags == [])
        #expect(second.order.amount == nil)
        #expect(second.order.refundedMinor == 300)
    }

    @Test("refunds whose amounts add up past Int64 are stored as a mismatch; later ones still record", arguments: commitPaths)
    func refundOverflow(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        let big = Money(minor: .max - 10, currency: "USD")
        func refund(_ id: String, _ amount: Money) -> VerifiedNotification {
            notification(id, .refund(RefundInfo(refundID: id, amount: amount)), kind: .refund, amount: amount)
        }
        #expect(try await store.inbox.record(.verified(request(), refund("R1", big))).verdict == .applied)
        #expect(try await store.inbox.record(.verified(request(), refund("R2", big))).verdict == .mismatch)
        #expect(try await store.inbox.record(.verified(request(), refund("R3", Money(minor: 5, currency: "USD")))).verdict == .applied)
        let detail = try #require(try await store.order("O1"))
        #expect(detail.order.refundedMinor == .max - 5)
        #expect(detail.order.flags == ["amount_mismatch"])
    }

    @Test("transitions record from, to and the notification that caused them", arguments: commitPaths)
    func transitions(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        let first = try await store.inbox.record(.verified(request(), notification("a", .transition(.pending))))
        let second = try await store.inbox.record(.verified(request(), notification("b", .transition(.paid))))
        let detail = try #require(try await store.order("O1"))
        #expect(detail.transitions.map(\.from) == [nil, .pending])
        #expect(detail.transitions.map(\.to) == [.pending, .paid])
        #expect(detail.transitions.map(\.notificationID) == [first.notificationID, second.notificationID])
        #expect(detail.order.amount == Money(minor: 500, currency: "USD"))
        #expect(detail.order.providerTxnID == "T-b")
    }

    @Test("a refund or capture before its payment is unlinked, then linked and applied when the payment arrives",
          arguments: commitPaths)
    func unlinked(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        let refund = notification("refund", .refund(RefundInfo(refundID: "R1", amount: Money(minor: 4200, currency: "SGD"))),
                                  order: nil, kind: .refund, amount: Money(minor: 4200, currency: "SGD"), link: .requires("P1"))
        let waiting = try await store.inbox.record(.verified(request(), refund))
        #expect(waiting.verdict == .unlinked)
        #expect(try await store.inbox.record(.verified(request(), refund)).verdict == .duplicate)
        let payment = notification("payment", .transition(.paid), order: "PAY-1", amount: Money(minor: 4200, currency: "SGD"),
                                   link: .registers("P1"))
        #expect(try await store.inbox.record(.verified(request(), payment)).verdict == .applied)
        let detail = try #require(try await store.order("PAY-1"))
        #expect(detail.order.state == .refunded)
        #expect(detail.order.refundedMinor == 4200)
        #expect(detail.transitions.map(\.to) == [.paid, .refunded])
        let linked = try #require(detail.notifications.first { $0.id == waiting.notificationID })
        #expect(linked.verdict == .applied)
        #expect(linked.orderRef == "PAY-1")
        // Its redelivery, a duplicate stored while it waited, is the order's too.
        #expect(detail.notifications.filter { $0.verdict == .duplicate }.map(\.orderRef) == ["PAY-1"])
        // A later capture for the same payment links at once.
        let capture = notification("capture", .transition(.paid), order: nil, kind: .capture,
                                   amount: Money(minor: 4200, currency: "SGD"), link: .requires("P1"))
        let captured = try await store.inbox.record(.verified(request(), capture))
        #expect(captured.verdict == .stale)
        #expect(captured.orderRef == "PAY-1")
        #expect(try await store.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'unlinked'") == 0)
    }

    @Test("a waiting notification whose stored effect cannot be read stays unlinked; the payment is still recorded",
          arguments: commitPaths)
    func unreadableWaitingEffect(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        let capture = notification("capture", .transition(.paid), order: nil, kind: .capture, link: .requires("P3"))
        let waiting = try await store.inbox.record(.verified(request(), capture))
        #expect(waiting.verdict == .unlinked)
        // As if stored by a version whose effect format this one cannot read.
        try await DatabaseQueue(path: store.path).write { db in
            try db.execute(sql: "UPDATE notifications SET pending_effect = '{\"from\":\"elsewhere\"}' WHERE id = ?",
                           arguments: [waiting.notificationID])
        }
        let payment = notification("payment", .transition(.authorized), order: "PAY-3", link: .registers("P3"))
        let outcome = try await store.inbox.record(.verified(request(), payment))
        #expect(outcome.verdict == .applied)
        #expect(outcome.orderState == .authorized)
        let detail = try #require(try await store.order("PAY-3"))
        #expect(detail.order.state == .authorized)
        let reason = try await store.store.read { db in
            try String.fetchOne(db, sql: "SELECT reason_detail FROM notifications WHERE id = ? AND verdict = 'unlinked'",
                                arguments: [waiting.notificationID])
        }
        #expect(reason?.contains("cannot be read") == true)
    }

    @Test("a capture waiting for a pending payment is applied when it links", arguments: commitPaths)
    func captureAfterPending(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        let capture = notification("capture", .transition(.paid), order: nil, kind: .capture, link: .requires("P2"))
        #expect(try await store.inbox.record(.verified(request(), capture)).verdict == .unlinked)
        let pending = notification("pending", .transition(.pending), order: "PAY-2", link: .registers("P2"))
        let outcome = try await store.inbox.record(.verified(request(), pending))
        #expect(outcome.verdict == .applied)
        #expect(outcome.orderState == .paid)
        let detail = try #require(try await store.order("PAY-2"))
        #expect(detail.notifications.map(\.verdict) == [.applied, .applied])
        // The order keeps the payment's id; the capture has its own on its notification.
        #expect(detail.order.providerTxnID == "T-pending")
        #expect(detail.notifications.map(\.providerTxnID).contains("T-capture"))
    }

    @Test("expectations: another amount is a mismatch that flags the order and does not transition", arguments: commitPaths)
    func expectations(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        let outcome = try await store.inbox.setExpectation(provider: "test", account: "default", orderRef: "O1",
                                                            amount: Money(minor: 1234, currency: "USD"))
        #expect(outcome == ExpectationOutcome(state: .expected, mismatch: nil))
        let wrong = notification("wrong", .transition(.paid), amount: Money(minor: 1200, currency: "USD"))
        #expect(try await store.inbox.record(.verified(request(), wrong)).verdict == .mismatch)
        var detail = try #require(try await store.order("O1"))
        #expect(detail.order.state == .expected)
        #expect(detail.order.flags == ["amount_mismatch"])
        #expect(detail.order.expected == Money(minor: 1234, currency: "USD"))
        let right = notification("right", .transition(.paid), amount: Money(minor: 1234, currency: "USD"))
        #expect(try await store.inbox.record(.verified(request(), right)).verdict == .applied)
        detail = try #require(try await store.order("O1"))
        #expect(detail.order.state == .paid)
        #expect(detail.transitions.map(\.to) == [.expected, .paid])
        #expect(detail.transitions.first?.notificationID == nil)
    }

    @Test("an expectation registered after the order was paid with another amount flags it; a matching one does not",
          arguments: commitPaths)
    func lateExpectation(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        _ = try await store.inbox.record(.verified(request(), notification("paid", .transition(.paid))))  // 5.00 USD
        let same = try await store.inbox.setExpectation(provider: "test", account: "default", orderRef: "O1",
                                                        amount: Money(minor: 500, currency: "USD"))
        #expect(same == ExpectationOutcome(state: .paid, mismatch: nil))
        #expect(try await store.order("O1")?.order.flags == [])
        let other = try await store.inbox.setExpectation(provider: "test", account: "default", orderRef: "O1",
                                                         amount: Money(minor: 1234, currency: "USD"))
        #expect(other.state == .paid)
        #expect(other.mismatch?.contains("not the expected 12.34 USD") == true, "\(String(describing: other.mismatch))")
        let detail = try #require(try await store.order("O1"))
        #expect(detail.order.state == .paid)
        #expect(detail.order.flags == ["amount_mismatch"])
        // A pending order's amount is not yet a payment: no flag until one arrives.
        _ = try await store.inbox.record(.verified(request(), notification("pending", .transition(.pending), order: "O2")))
        let pending = try await store.inbox.setExpectation(provider: "test", account: "default", orderRef: "O2",
                                                           amount: Money(minor: 1234, currency: "USD"))
        #expect(pending.mismatch == nil)
        // Paid by a notification that stated no amount: registered first, the expectation would
        // have made it a mismatch, so it flags the order now.
        _ = try await store.inbox.record(.verified(request(), notification("bare", .transition(.paid), order: "O3", amount: nil)))
        let bare = try await store.inbox.setExpectation(provider: "test", account: "default", orderRef: "O3",
                                                        amount: Money(minor: 1234, currency: "USD"))
        #expect(bare.mismatch == "order is paid with no amount stated, not the expected 12.34 USD")
        #expect(try await store.order("O3")?.order.flags == ["amount_mismatch"])
        // A refund first: the payment has not been seen, and is checked when it comes.
        _ = try await store.inbox.record(.verified(request(), notification(
            "refund", .refund(RefundInfo(refundID: "R1", amount: Money(minor: 300, currency: "USD"))), order: "O4", kind: .refund)))
        let refunded = try await store.inbox.setExpectation(provider: "test", account: "default", orderRef: "O4",
                                                            amount: Money(minor: 1234, currency: "USD"))
        #expect(refunded.mismatch == nil)
        #expect(try await store.order("O4")?.order.flags == [])
    }

    @Test("since: exactly the rows that new, whether few (ids bounded through the index) or many, in any id order")
    func sinceLists() async throws {
        let store = try TemporaryStore(maxBatch: 256)
        let count = Queries.sinceBoundRows + 50
        try await store.store.pool.write { db in
            let insert = try db.makeStatement(sql: """
                INSERT INTO notifications (provider, account, received_at, verdict, client_ip, target, headers, body)
                VALUES (?, 'default', ?, 'rejected', '127.0.0.1', '/ipn/x', '[]', x'')
                """)
            for index in 0..<count {
                // One per second from 2026-01-01, so the last 10 050 seconds hold every row.
                let time = Timestamp.format(epochMilliseconds: (1_767_225_600 + Int64(index)) * 1000)
                try insert.execute(arguments: [index % 7 == 0 ? "citcon" : "unlimint", time])
            }
            // A row received late but stored early: `since` must still find it.
            try db.execute(sql: "UPDATE notifications SET received_at = '2026-12-01T00:00:00.000Z' WHERE id = 1")
        }
        func list(_ filter: NotificationFilter) async throws -> [Int64] {
            try await store.store.read { db in try Queries.notifications(db, filter).map(\.id) }
        }
        #expect(try await list(NotificationFilter(since: "2026-11-01T00:00:00.000Z")) == [1])
        #expect(try await list(NotificationFilter(since: "2027-01-01T00:00:00.000Z")) == [])
        // Few rows that new: the last 20 seconds, citcon's among them.
        let recent = Timestamp.format(epochMilliseconds: (1_767_225_600 + Int64(count - 20)) * 1000)
        let isCitcon: (Int64) -> Bool = { ($0 - 1) % 7 == 0 }
        let last20: [Int64] = Array((Int64(count - 19)...Int64(count)).reversed())
        let expected: [Int64] = last20.filter(isCitcon) + [1]
        let few = try await list(NotificationFilter(provider: "citcon", since: recent))
        #expect(few == expected)
        // More rows that new than the bound takes: read without it, still exact.
        let all = try await list(NotificationFilter(provider: "citcon", since: "2026-01-01T00:00:00.000Z", limit: 100_000))
        let everyCitcon: [Int64] = Array((1...Int64(count)).reversed()).filter(isCitcon)
        #expect(all == everyCitcon)
    }

    @Test("a store migrated by a newer ipnd is refused by serve and by orders expect, naming the migration; reopened by its own version it opens")
    func newerSchemaRefused() async throws {
        let first = try TemporaryStore(maxBatch: 1)
        _ = try await first.inbox.record(.verified(request(), notification("paid", .transition(.paid))))
        try first.store.close()
        let queue = try DatabaseQueue(path: first.path)
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v9: from the future')")
        }
        try queue.close()
        #expect(throws: StoreError.self) { try SQLiteDatabase(path: first.path) }
        do {
            _ = try SQLiteDatabase(path: first.path)
        } catch {
            #expect(error.message == "the store was migrated by a newer ipnd (v9: from the future); "
                + "run that version, or restore a backup taken before the upgrade")
        }
        // Commands (`orders expect`, `deliveries retry`) write to the file themselves: they refuse
        // the newer store too, and write nothing.
        do {
            _ = try SQLiteDatabase(path: first.path, role: .command)
            Issue.record("a command opened a store migrated by a newer ipnd")
        } catch {
            #expect(error.message.hasPrefix("the store was migrated by a newer ipnd (v9: from the future)"))
        }
        let undo = try DatabaseQueue(path: first.path)
        try await undo.write { db in try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v9:%'") }
        try undo.close()
        let reopened = try SQLiteDatabase(path: first.path)
        #expect(try await reopened.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM orders") } == 1)
        try reopened.close()
    }

    @Test("rejected requests are stored with their reason and never applied", arguments: commitPaths)
    func rejected(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        let outcome = try await store.inbox.record(.rejected(request(body: "forged"), Rejection(.badSignature, "no match")))
        #expect(outcome.verdict == .rejected)
        let rows = try await store.store.read { db in try Queries.notifications(db, NotificationFilter(), includeRaw: true) }
        #expect(rows.count == 1)
        #expect(rows.first?.reason == "bad_signature")
        #expect(rows.first?.body == Array("forged".utf8))
        #expect(try await store.count("SELECT COUNT(*) FROM orders") == 0)
        #expect(try await store.count("SELECT COUNT(*) FROM dedup_keys") == 0)
    }

    @Test("under load jobs share commits; a job that finds the writer idle is committed alone")
    func sharedCommits() async throws {
        let base = try TemporaryStore(maxBatch: 256)
        let sizes = Locked<[Int]>([])
        let inbox = SQLiteStore(database: base.store, maxBatch: 256) { size, _, _ in
            sizes.withLock { $0.append(size) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<64 {
                group.addTask {
                    _ = try await inbox.record(.verified(request(), notification("G\(index)", .transition(.paid), order: "G\(index)")))
                }
            }
            try await group.waitForAll()
        }
        let concurrent = sizes.withLock { $0 }
        #expect(concurrent.reduce(0, +) == 64)
        #expect(concurrent.count < 64, "64 concurrent jobs should share commits, got batches \(concurrent)")

        let outcome = try await inbox.record(.verified(request(), notification("alone", .transition(.paid), order: "alone")))
        #expect(outcome.verdict == .applied)
        #expect(sizes.withLock { $0.last } == 1)
        #expect(try await base.count("SELECT count(*) FROM notifications WHERE verdict = 'applied'") == 65)
    }

    @Test("the WAL stays short: background passes and the writer's last copy, or the writer alone, start it over",
          arguments: [true, false])
    func checkpoints(background: Bool) async throws {
        let base = try TemporaryStore(maxBatch: 1)
        let results = Locked<[StoreError?]>([])
        let writer = GroupCommitWriter(
            store: base.store, maxBatch: 256, checkpointFrames: 32, restartFrames: 128, chaseFrames: 16,
            backgroundCheckpoints: background,
            checkpointObserver: { _, error in results.withLock { $0.append(error) } }
        )
        // 800 notifications with 4 KB bodies: at least 3.2 MB of WAL frames if nothing were copied
        // back, and SQLite's own automatic checkpoint (off while the writer's hook is installed)
        // would only start at 1000 frames, about 4 MB. Starting over at 128 frames keeps it
        // near 0.5 MB plus what is committed while the last passes run.
        let body = String(repeating: "x", count: 4096)
        for wave in 0..<40 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        let key = "W\(wave)-\(index)"
                        let entry = InboxEntry.verified(request(body: body), notification(key, .transition(.paid), order: key))
                        _ = try await writer.submit { tx in try Recorder.record(PreparedEntry(entry), in: tx) }
                    }
                }
                try await group.waitForAll()
            }
        }
        await writer.drain()
        let checkpoints = results.withLock { $0 }
        #expect(checkpoints.count > 5)
        #expect(checkpoints.allSatisfy { $0 == nil }, "checkpoint errors: \(checkpoints.compactMap { $0 })")
        let wal = try FileManager.default.attributesOfItem(atPath: base.path + "-wal")[.size] as? Int ?? -1
        #expect(wal > 0 && wal < 2_000_000, "the WAL grew to \(wal) bytes")
        #expect(try await base.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'applied'") == 800)
        let integrity = try await base.store.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
        #expect(integrity == "ok")
    }

    @Test("a reader holding the old log: checkpoints do not repeat after every commit, and the log starts over once it ends")
    func pinnedLog() async throws {
        let base = try TemporaryStore(maxBatch: 1)
        let checkpoints = Locked(0)
        let commits = Locked(0)
        let writer = GroupCommitWriter(
            store: base.store, maxBatch: 1, checkpointFrames: 32, restartFrames: 128, chaseFrames: 16,
            observer: { _, _, _ in commits.withLock { $0 += 1 } },
            checkpointObserver: { _, _ in checkpoints.withLock { $0 += 1 } }
        )
        func write(_ prefix: String, count: Int) async throws {
            for index in 0..<count {
                let key = "\(prefix)-\(index)"
                let entry = InboxEntry.verified(request(), notification(key, .transition(.paid), order: key))
                _ = try await writer.submit { tx in try Recorder.record(PreparedEntry(entry), in: tx) }
            }
        }
        try await write("before", count: 20)
        // A reader in the middle of a transaction keeps the frames it may read in the log.
        let reader = try DatabaseQueue(path: base.path)
        let release = DispatchSemaphore(value: 0)
        let reading = DispatchSemaphore(value: 0)
        let thread = Thread {
            try? reader.read { db in
                _ = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications")
                reading.signal()
                release.wait()
            }
        }
        thread.start()
        reading.wait()
        try await write("pinned", count: 300)
        await writer.drain()
        let pinnedFrames = base.store.walLength.frames
        let pinnedCommits = commits.withLock { $0 }
        let pinnedCheckpoints = checkpoints.withLock { $0 }
        #expect(pinnedFrames > 128, "the log should outgrow its restart length while held, at \(pinnedFrames)")
        // A pass and a try at the writer's copy per 32 new frames at most; not one per commit.
        #expect(pinnedCheckpoints <= 2 * Int(pinnedFrames) / 32 + 8,
                "\(pinnedCheckpoints) checkpoints for \(pinnedCommits) commits and \(pinnedFrames) frames")
        release.signal()
        try await write("after", count: 300)
        await writer.drain()
        #expect(base.store.walLength.frames < pinnedFrames, "the log should have started over once the reader left")
        #expect(try await base.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'applied'") == 620)
    }

    @Test("a pass that finds another checkpoint running copies nothing, and is not reported as a failure")
    func busyCheckpoint() async throws {
        let base = try TemporaryStore(maxBatch: 1)
        for index in 0..<5 {
            _ = try await base.inbox.record(.verified(request(), notification("b\(index)", .transition(.paid), order: "b\(index)")))
        }
        // One connection holds the write lock; a FULL checkpoint on a second takes the checkpoint
        // lock at once and waits for the first. A third connection's passive pass is then busy.
        let holder = try DatabaseQueue(path: base.path)
        var waiting = Configuration()
        waiting.busyMode = .timeout(10)
        let waiter = try DatabaseQueue(path: base.path, configuration: waiting)
        let passive = try DatabaseQueue(path: base.path)
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let waited = DispatchSemaphore(value: 0)
        Thread {
            try? holder.inTransaction(.immediate) { _ in
                holding.signal()
                release.wait()
                return .rollback
            }
        }.start()
        await blockingWait(holding)
        Thread {
            // The FULL checkpoint fails at once, without waiting, whenever it finds the third
            // connection's pass holding the checkpoint lock: it tries again until it holds it.
            let deadline = Date().addingTimeInterval(8)
            while (try? waiter.writeWithoutTransaction({ db in try db.checkpoint(.full) })) == nil, Date() < deadline {}
            waited.signal()
        }.start()
        var busy = false
        for _ in 0..<500 where !busy {
            do {
                _ = try await passive.writeWithoutTransaction { db in try db.checkpoint(.passive) }
                try await Task.sleep(for: .milliseconds(10))
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
                busy = true
            }
        }
        #expect(busy, "the FULL checkpoint should hold the checkpoint lock")

        let reported = Locked<[StoreError?]>([])
        let copied = await onThread {
            BackgroundCheckpointer.checkpoint(on: passive, observer: { _, error in reported.withLock { $0.append(error) } })
        }
        release.signal()
        await blockingWait(waited)
        #expect(copied == nil)
        let errors = reported.withLock { $0 }
        #expect(errors.count == 1)
        #expect(errors.allSatisfy { $0 == nil }, "a busy pass was reported as \(errors.compactMap { $0 })")
        // The next pass copies what the busy one would have.
        let next = BackgroundCheckpointer.checkpoint(on: passive, observer: nil)
        #expect(next == Int32(base.store.walLength.frames))
    }

    @Test("the store runs in WAL mode with synchronous=FULL")
    func durability() async throws {
        let store = try TemporaryStore(maxBatch: 1)
        let journal = try await store.store.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(journal == "wal")
        // The writer's connection, which commits, and a reader's.
        let writing = try await store.store.pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(writing == 2, "the writer commits with synchronous=\(writing.map(String.init) ?? "?"), not FULL (2)")
        let reading = try await store.store.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(reading == 2)
        _ = try await store.inbox.record(.verified(request(), notification("x", .transition(.paid))))
        try store.store.close()
        // Reopening migrates nothing twice and keeps the data.
        let reopened = try SQLiteDatabase(path: store.path)
        let orders = try await reopened.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM orders") }
        #expect(orders == 1)
    }

    @Test("opening a store of an earlier version drops the creation transitions no notification caused, and nothing else")
    func migrationDropsCreationTransitions() async throws {
        let store = try TemporaryStore(maxBatch: 1)
        _ = try await store.inbox.record(.verified(request(), notification("x", .transition(.paid))))
        _ = try await store.inbox.setExpectation(provider: "test", account: "default", orderRef: "EXP-1",
                                                 amount: Money(minor: 100, currency: "USD"))
        try store.store.close()
        // What the earlier version wrote for an order an unknown status created.
        let queue = try DatabaseQueue(path: store.path)
        try await queue.write { db in
            try db.execute(sql: """
                INSERT INTO orders (provider, account, order_ref, state, created_at, updated_at)
                VALUES ('unlimint', 'default', 'OLD-1', 'pending', '2026-11-24T00:00:00Z', '2026-11-24T00:00:00Z');
                INSERT INTO transitions (order_id, from_state, to_state, at) VALUES (last_insert_rowid(), NULL, 'pending', '2026-11-24T00:00:00Z');
                DELETE FROM grdb_migrations WHERE identifier LIKE 'v2:%';
                """)
        }
        try queue.close()
        let reopened = try SQLiteDatabase(path: store.path)
        let left = try await reopened.read { db in
            try Row.fetchAll(db, sql: "SELECT from_state, to_state, notification_id IS NULL FROM transitions ORDER BY id").map {
                "\($0[0] as String? ?? "nil")->\($0[1] as String) \($0[2] as Bool ? "no notification" : "notification")"
            }
        }
        #expect(left == ["nil->paid notification", "nil->expected no notification"])
        try reopened.close()
    }

    @Test("opening a store of an earlier version links the redeliveries it left without their order, and nothing else")
    func migrationLinksWaitingDuplicates() async throws {
        let store = try TemporaryStore(maxBatch: 1)
        let refund = notification("refund", .refund(RefundInfo(refundID: "R1", amount: Money(minor: 4200, currency: "SGD"))),
                                  order: nil, kind: .refund, amount: Money(minor: 4200, currency: "SGD"), link: .requires("P1"))
        _ = try await store.inbox.record(.verified(request(), refund))
        let redelivery = try await store.inbox.record(.verified(request(), refund))
        // Still waiting: nothing to link it to.
        let stillWaiting = try await store.inbox.record(.verified(request(), notification(
            "other", .refund(RefundInfo(refundID: "R9", amount: Money(minor: 1, currency: "SGD"))),
            order: nil, kind: .refund, amount: Money(minor: 1, currency: "SGD"), link: .requires("P9"))))
        let stillWaitingAgain = try await store.inbox.record(.verified(request(), notification(
            "other", .refund(RefundInfo(refundID: "R9", amount: Money(minor: 1, currency: "SGD"))),
            order: nil, kind: .refund, amount: Money(minor: 1, currency: "SGD"), link: .requires("P9"))))
        #expect(stillWaiting.verdict == .unlinked)
        _ = try await store.inbox.record(.verified(request(), notification(
            "payment", .transition(.paid), order: "PAY-1", amount: Money(minor: 4200, currency: "SGD"), link: .registers("P1"))))
        try store.store.close()
        // What the earlier version left: the redelivery without its order, the migration not run.
        let queue = try DatabaseQueue(path: store.path)
        try await queue.write { db in
            try db.execute(sql: """
                UPDATE notifications SET order_id = NULL, order_ref = NULL WHERE id = \(redelivery.notificationID);
                DROP INDEX notifications_waiting_duplicates;
                DELETE FROM grdb_migrations WHERE identifier LIKE 'v3:%';
                """)
        }
        try queue.close()
        let reopened = try SQLiteDatabase(path: store.path)
        let rows = try await reopened.read { db in
            try Row.fetchAll(db, sql: "SELECT id, order_ref FROM notifications WHERE verdict = 'duplicate' ORDER BY id").map {
                "\($0[0] as Int64) \($0[1] as String? ?? "nil")"
            }
        }
        #expect(rows == ["\(redelivery.notificationID) PAY-1", "\(stillWaitingAgain.notificationID) nil"])
        try reopened.close()
    }

    @Test("a read-only store answers with an error and writes nothing; after recovery writes succeed", arguments: commitPaths)
    func storeFailure(maxBatch: Int) async throws {
        let store = try TemporaryStore(maxBatch: maxBatch)
        try await store.store.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = ON") }
        await #expect(throws: StoreError.self) {
            try await store.inbox.record(.verified(request(), notification("a", .transition(.paid))))
        }
        await #expect(throws: StoreError.self) { try await store.inbox.heartbeat() }
        try await store.store.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = OFF") }
        #expect(try await store.count("SELECT COUNT(*) FROM notifications") == 0)
        #expect(try await store.inbox.record(.verified(request(), notification("a", .transition(.paid)))).verdict == .applied)
    }

    @Test("another connection holding the write lock past the busy timeout fails a whole batch at once, without a busy wait per job")
    func lockTimeoutFailsTheBatch() async throws {
        let attempts = Locked<[(size: Int, failed: Bool)]>([])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("ipnd.sqlite").path
        let store = try SQLiteDatabase(path: path, busyTimeout: 0.4)
        let inbox = SQLiteStore(database: store, maxBatch: 256, commitObserver: { size, _, failed in
            attempts.withLock { $0.append((size, failed)) }
        })
        // An operator's session holds the lock until every write below has given up, however
        // slowly this runs (a sanitizer build).
        let holder = try DatabaseQueue(path: path)
        let (held, signalHeld) = AsyncStream<Void>.makeStream()
        let releaseLock = DispatchSemaphore(value: 0)
        let lockReleased = DispatchSemaphore(value: 0)
        Thread {
            try? holder.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                signalHeld.yield()
                releaseLock.wait()
                try db.execute(sql: "COMMIT")
            }
            signalHeld.finish()
            lockReleased.signal()
        }.start()
        for await _ in held { break }
        let keys = ["a", "b", "c", "d"]
        // The first job finds the writer idle and waits on the lock alone; the other three queue
        // behind it and make a batch.
        async let first: Verdict? = try? await inbox.record(.verified(request(), notification(keys[0], .transition(.paid), order: keys[0]))).verdict
        try await Task.sleep(for: .milliseconds(150))
        let rest = await withTaskGroup(of: Verdict?.self) { group in
            for key in keys.dropFirst() {
                group.addTask { try? await inbox.record(.verified(request(), notification(key, .transition(.paid), order: key))).verdict }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let all = [await first] + rest
        let seen = attempts.withLock { $0 }
        let countWhileHeld = try await store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications") }
        releaseLock.signal()
        while lockReleased.wait(timeout: .now()) == .timedOut { try await Task.sleep(for: .milliseconds(20)) }
        #expect(all.allSatisfy { $0 == nil }, "committed while the lock was held: \(all)")
        #expect(countWhileHeld == 0)
        // Each job was tried once: a failed batch was not followed by a retry of each of its
        // jobs, every one waiting out the busy timeout again.
        #expect(seen.allSatisfy(\.failed) && seen.map(\.size).reduce(0, +) == keys.count, "commit attempts: \(seen)")
        #expect(seen.contains { $0.size > 1 }, "no batch was formed: \(seen)")
        for key in keys {
            #expect(try await inbox.record(.verified(request(), notification(key, .transition(.paid), order: key))).verdict == .applied)
        }
    }
}

func permutations<T>(of items: [T]) -> [[T]] {
    guard items.count > 1 else { return [items] }
    return items.indices.flatMap { index -> [[T]] in
        var rest = items
        let item = rest.remove(at: index)
        return permutations(of: rest).map { [item] + $0 }
    }
}

@Suite("Read queries on a large store")
struct QueryPlanTests {
    @Test("orders show reads the order, its transitions and its notifications through indexes, never a table scan")
    func orderDetailUsesIndexes() async throws {
        let store = try TemporaryStore(maxBatch: 64)
        _ = try await store.inbox.record(.verified(request(), notification("pay-1", .transition(.paid))))
        let plans = try await store.store.read { db -> [String] in
            let statements = Locked<[String]>([])
            db.trace(options: .statement) { event in
                if case .statement(let statement) = event { statements.withLock { $0.append(statement.sql) } }
            }
            _ = try Queries.order(db, provider: "test", account: "default", orderRef: "O1")
            db.trace(options: [])
            let executed = statements.withLock { $0 }
            return try executed.flatMap { sql in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: StatementArguments(
                    Array(repeating: DatabaseValue.null, count: sql.filter { $0 == "?" }.count)
                )).map { "\($0["detail"] as String? ?? "")  <- \(sql)" }
            }
        }
        #expect(plans.count >= 3)
        for plan in plans {
            #expect(!plan.hasPrefix("SCAN"), "\(plan)")
        }
    }
}

/// Waits for `semaphore` on a thread of its own, keeping the cooperative pool free.
func blockingWait(_ semaphore: DispatchSemaphore) async {
    await onThread { semaphore.wait() }
}

/// Runs blocking `work` on a new thread and returns its result.
func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
