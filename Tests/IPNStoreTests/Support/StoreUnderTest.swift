import Foundation
import GRDB
import IPNCore
import IPNStore
import IPNStoreSQLite
import Testing

/// The store backends every behaviour test runs against.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite

    var testDescription: String { rawValue }
}

/// A fresh, empty store of one backend, with a way to count rows as an independent reader would.
final class StoreUnderTest: Sendable {
    let backend: Backend
    let store: any Store
    private let countQuery: @Sendable (String) async throws -> Int

    private init(backend: Backend, store: any Store, countQuery: @escaping @Sendable (String) async throws -> Int) {
        self.backend = backend
        self.store = store
        self.countQuery = countQuery
    }

    static func make(_ backend: Backend, maxBatch: Int = 256, routes: [DeliveryRoute] = []) async throws -> StoreUnderTest {
        switch backend {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-store-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let store = try SQLiteStore(path: directory.appendingPathComponent("ipnd.sqlite").path, maxBatch: maxBatch)
            store.setDeliveryRoutes(routes)
            try await store.registerDeliveryTargets(routes.map(\.name))
            let database = store.database
            return StoreUnderTest(backend: backend, store: store) { sql in
                try await database.read { db in try Int.fetchOne(db, sql: sql) ?? -1 }
            }
        }
    }

    /// The single integer a SQL query (standard SQL, the same on every backend) returns.
    func count(_ sql: String) async throws -> Int {
        try await countQuery(sql)
    }

    func order(_ ref: String, provider: String = "test", account: String = "default") async throws -> OrderDetail? {
        try await store.order(provider: provider, account: account, orderRef: ref, includeRaw: false)
    }

    func record(_ notification: VerifiedNotification, provider: String = "test") async throws -> RecordOutcome {
        try await store.record(.verified(request(provider: provider), notification))
    }

    /// Every event in the feed, ascending.
    func allEvents() async throws -> [EventRecord] {
        try await store.events(EventFilter(after: 0, limit: 100_000)).events
    }
}

func request(provider: String = "test", account: String = "default", body: String = "{}") -> ReceivedRequest {
    ReceivedRequest(provider: provider, account: account, receivedAt: "2026-11-21T00:00:00.000Z", clientIP: "127.0.0.1",
                    target: "/ipn/\(provider)", headers: "[]", body: Array(body.utf8))
}

func notification(
    _ key: String, _ effect: NotificationEffect, order: String? = "O1", kind: NotificationKind = .payment,
    amount: Money? = Money(minor: 500, currency: "USD"), link: PaymentLink? = nil
) -> VerifiedNotification {
    VerifiedNotification(kind: kind, orderRef: order, providerTxnID: "T-\(key)", dedupKey: key, providerStatus: key,
                         effect: effect, amount: amount, link: link)
}

func refund(_ key: String, id: String, amount: Money, order: String? = "O1", link: PaymentLink? = nil) -> VerifiedNotification {
    notification(key, .refund(RefundInfo(refundID: id, amount: amount)), order: order, kind: .refund, amount: amount, link: link)
}
