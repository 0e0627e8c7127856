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
@testable import IPNStoreTestSupport
import IPNTestSupport
import Testing

@Suite("Order events: written with their change, read in seq order", .heavy)
struct EventTests {
    @Test("each applied transition and each newly raised flag writes exactly one event; the other verdicts none",
          arguments: Backend.allCases)
    func eventsFollowChanges(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        _ = try await test.store.setExpectation(provider: "test", account: "default", orderRef: "O1", amount: Money(minor: 500, currency: "USD"))
        let steps: [(VerifiedNotification, Verdict, [EventType])] = [
            (notification("pending", .transition(.pending)), .applied, [.stateChanged]),
            (notification("pending", .transition(.pending)), .duplicate, []),
            (notification("wrong", .transition(.paid), amount: Money(minor: 400, currency: "USD")), .mismatch, [.flagged]),
            (notification("wrong-again", .transition(.paid), amount: Money(minor: 300, currency: "USD")), .mismatch, []),
            (notification("paid", .transition(.paid)), .applied, [.stateChanged]),
            (notification("late-pending", .transition(.pending)), .stale, []),
            (notification("status?", .unknownStatus), .unknownStatus, []),
            (notification("payout", .record, kind: .payout), .recorded, []),
            (refund("refund-1", id: "R1", amount: Money(minor: 100, currency: "USD")), .applied, [.stateChanged]),
            (refund("refund-1", id: "R1", amount: Money(minor: 100, currency: "USD")), .duplicate, []),
            (refund("refund-2", id: "R2", amount: Money(minor: 100, currency: "USD")), .applied, [.stateChanged]),
        ]
        var expected: [EventType] = [.stateChanged]  // the expectation created the order
        #expect(try await test.allEvents().map(\.type) == expected)
        for (note, verdict, types) in steps {
            let outcome = try await test.record(note)
            #expect(outcome.verdict == verdict, "\(note.dedupKey)")
            #expect(outcome.eventsWritten == types.count, "\(note.dedupKey)")
            expected += types
            let events = try await test.allEvents()
            #expect(events.map(\.type) == expected, "after \(note.dedupKey)")
            for event in events.suffix(types.count) {
                #expect(event.notificationID == outcome.notificationID, "\(note.dedupKey)")
                #expect(event.providerStatus == note.providerStatus)
            }
        }
        // A rejected request writes none either.
        _ = try await test.store.record(.rejected(request(), Rejection(.badSignature, "no")))
        #expect(try await test.allEvents().count == expected.count)
        let events = try await test.allEvents()
        #expect(events.map(\.seq) == Array(1...Int64(events.count)))
        #expect(Set(events.map(\.id)).count == events.count)
        if backend == .sqlite {
            // Time-ordered ids (EventID): each lands at the end of the ids' unique index.
            #expect(events.map(\.id) == events.map(\.id).sorted())
        }
        // Every transition has its event, in the same order.
        let detail = try #require(try await test.order("O1"))
        let changes = events.filter { $0.type == .stateChanged }
        #expect(changes.map(\.from) == detail.transitions.map(\.from))
        #expect(changes.map(\.to) == detail.transitions.map(\.to))
        #expect(changes.map(\.notificationID) == detail.transitions.map(\.notificationID))
        #expect(detail.events == events)
        // The second partial refund is partially_refunded -> partially_refunded, with the total grown.
        let last = try #require(events.last)
        #expect(last.from == .partiallyRefunded && last.to == .partiallyRefunded)
        #expect(last.orderJSON.contains("\"refunded_minor\":200"))
        let flag = try #require(events.first { $0.type == .flagged })
        #expect(flag.from == .pending && flag.to == .pending && flag.flag == "amount_mismatch")
        try await test.close()
    }

    @Test("an event's order object is the order as orders show printed it right after the change", arguments: Backend.allCases)
    func orderObject(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        let notes = [
            notification("a", .transition(.authorized), order: "A"),
            notification("b", .transition(.paid), order: "A", amount: Money(minor: 750, currency: "EUR")),
            refund("c", id: "R1", amount: Money(minor: 750, currency: "EUR"), order: "A"),
        ]
        for note in notes {
            _ = try await test.record(note)
            let shown = try #require(try await test.order("A")).order
            let event = try #require(try await test.allEvents().last)
            #expect(event.orderJSON == RecordJSON.order(shown).text)
            #expect(event.provider == "test" && event.account == "default" && event.orderRef == "A")
        }
        let event = try #require(try await test.allEvents().last)
        let json = RecordJSON.event(event).text
        #expect(json.hasPrefix("{\"id\":\"\(event.id)\",\"seq\":3,\"type\":\"order.state_changed\",\"occurred_at\":\"\(event.occurredAt)\",\"order\":{\"provider\":\"test\""))
        #expect(json.hasSuffix(",\"change\":{\"from\":\"paid\",\"to\":\"refunded\",\"flag\":null,\"notification_id\":3,\"provider_status\":\"c\"}}"))
        try await test.close()
    }

    @Test("a notification that moves and flags an order writes order.state_changed, then order.flagged", arguments: Backend.allCases)
    func moveAndFlag(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        _ = try await test.record(notification("paid", .transition(.paid)))  // 5.00 USD
        let over = try await test.record(refund("big", id: "R1", amount: Money(minor: 900, currency: "USD")))
        #expect(over.flag == .amountMismatch)
        let events = try await test.allEvents()
        #expect(events.map(\.type) == [.stateChanged, .stateChanged, .flagged])
        #expect(events[1].notificationID == over.notificationID && events[2].notificationID == over.notificationID)
        #expect(events[2].from == .refunded && events[2].to == .refunded)
        #expect(events[1].orderJSON == events[2].orderJSON)
        try await test.close()
    }

    @Test("notifications that waited for their payment get events of their own when it arrives", arguments: Backend.allCases)
    func waitingNotifications(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        let waiting = try await test.record(
            refund("refund", id: "R1", amount: Money(minor: 4200, currency: "SGD"), order: nil, link: .requires("P1")))
        #expect(waiting.verdict == .unlinked)
        #expect(try await test.allEvents().isEmpty)
        let payment = try await test.record(notification(
            "payment", .transition(.paid), order: "PAY-1", amount: Money(minor: 4200, currency: "SGD"), link: .registers("P1")))
        #expect(payment.eventsWritten == 2)
        let events = try await test.allEvents()
        #expect(events.map(\.to) == [.paid, .refunded])
        #expect(events.map(\.notificationID) == [payment.notificationID, waiting.notificationID])
        #expect(events[0].orderJSON.contains("\"state\":\"paid\""))
        #expect(events[1].orderJSON.contains("\"state\":\"refunded\""))
        try await test.close()
    }

    @Test("each event is owed to every matching delivery target, and to no other", arguments: Backend.allCases)
    func deliveriesPerRoute(backend: Backend) async throws {
        let routes = [
            DeliveryRoute(name: "everything"),
            DeliveryRoute(name: "flags", types: [.flagged]),
            DeliveryRoute(name: "elsewhere", providers: ["unlimint"]),
            DeliveryRoute(name: "shop2", accounts: ["shop2"]),
        ]
        let test = try await StoreUnderTest.make(backend, routes: routes)
        _ = try await test.store.setExpectation(provider: "test", account: "default", orderRef: "O1", amount: Money(minor: 100, currency: "USD"))
        _ = try await test.record(notification("paid", .transition(.paid)))  // 5.00 USD: a mismatch
        try await test.settle()
        let deliveries = try await test.store.deliveries(DeliveryFilter(limit: 100))
        #expect(deliveries.map(\.target).sorted() == ["everything", "everything", "flags"])
        #expect(deliveries.allSatisfy { $0.state == .pending && $0.attempts == 0 && $0.orderRef == "O1" })
        let events = try await test.allEvents()
        #expect(Set(deliveries.map(\.eventID)) == Set(events.map(\.id)))
        let targets = try await test.store.deliveryTargets()
        #expect(targets.map(\.name) == ["elsewhere", "everything", "flags", "shop2"])
        #expect(targets.map(\.backlog) == [0, 2, 1, 0])
        try await test.close()
    }

    @Test("the feed: pages after a seq, filters, next_after is the highest seq examined", arguments: Backend.allCases)
    func feedPages(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        for index in 0..<5 {
            _ = try await test.record(notification("p\(index)", .transition(.paid), order: "P\(index)"), provider: "test")
            _ = try await test.record(notification("q\(index)", .transition(.paid), order: "Q\(index)"), provider: "other")
        }
        try await test.settle()
        var page = try await test.store.events(EventFilter(after: 0, limit: 4))
        #expect(page.events.map(\.seq) == [1, 2, 3, 4] && page.nextAfter == 4)
        page = try await test.store.events(EventFilter(after: 8, limit: 4))
        #expect(page.events.map(\.seq) == [9, 10] && page.nextAfter == 10)
        page = try await test.store.events(EventFilter(after: 10, limit: 4))
        #expect(page.events.isEmpty && page.nextAfter == 10)
        page = try await test.store.events(EventFilter(after: 0, limit: 3, provider: "other"))
        #expect(page.events.map(\.seq) == [2, 4, 6] && page.nextAfter == 6)
        page = try await test.store.events(EventFilter(after: 6, limit: 3, provider: "other"))
        #expect(page.events.map(\.seq) == [8, 10] && page.nextAfter == 10)
        page = try await test.store.events(EventFilter(after: 0, limit: 10, type: .flagged))
        #expect(page.events.isEmpty && page.nextAfter == 10)
        try await test.close()
    }

    @Test("a reader polling after its last seq while 64 writers commit sees every seq once, ascending, with no gap",
          arguments: Backend.allCases)
    func gapFreeUnderLoad(backend: Backend) async throws {
        let test = try await StoreUnderTest.make(backend)
        let total = 1500
        let done = Locked(false)
        let reader = Task {
            var seen: [Int64] = []
            var after: Int64 = 0
            while true {
                let finished = done.withLock { $0 }
                let page = try await test.store.events(EventFilter(after: after, limit: 37))
                seen += page.events.map(\.seq)
                after = page.nextAfter
                if finished && page.events.isEmpty { return seen }
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<64 {
                group.addTask {
                    for index in stride(from: writer, to: total, by: 64) {
                        _ = try await test.record(notification("n\(index)", .transition(.paid), order: "L\(index)"))
                    }
                }
            }
            try await group.waitForAll()
        }
        // Every event committed is in the feed (PostgreSQL numbers them just after their commit).
        try await test.settle()
        done.withLock { $0 = true }
        let seen = try await reader.value
        #expect(seen.count == total)
        #expect(seen == Array(1...Int64(total)))
        try await test.close()
    }
}
