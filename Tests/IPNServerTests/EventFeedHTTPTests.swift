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
import IPNTestSupport
import GRDB
import IPNCore
import Testing

/// The fields of an event and of its change, written out from product.md section 8.
enum SpecEventFields {
    static let event: Set<String> = ["id", "seq", "type", "occurred_at", "order", "change"]
    static let change: Set<String> = ["from", "to", "flag", "notification_id", "provider_status"]
    static let page: Set<String> = ["events", "next_after"]
}

@Suite("The order-event feed over HTTP and the CLI (issue 30)", .serialized)
struct EventFeedHTTPTests {
    @Test("GET /api/v1/events: each applied change once, with the order as orders show printed it; the CLI prints the same bytes", arguments: Backend.allCases)
    func feed(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await daemon.deliver("unlimint", order: "F-1", status: "IN_PROGRESS", uid: "f1")
        let shownAfterFirst = try await daemon.apiObject("/api/v1/orders/unlimint/F-1")
        try await daemon.deliver("unlimint", order: "F-1", status: "COMPLETED", uid: "f2")
        try await daemon.deliver("unlimint", order: "F-1", status: "COMPLETED", uid: "f2")  // duplicate: no event
        try await daemon.deliver("unlimint", order: "F-1", status: "IN_PROGRESS", uid: "f3")  // stale: no event
        let shownAfterPaid = try await daemon.apiObject("/api/v1/orders/unlimint/F-1")

        let page = try await daemon.apiObject("/api/v1/events")
        #expect(page.keySet == SpecEventFields.page)
        let events = page.objects("events")
        #expect(events.count == 2)
        #expect(page.int("next_after") == 2)
        #expect(events.map { $0.int("seq") } == [1, 2])
        for event in events {
            #expect(event.keySet == SpecEventFields.event)
            #expect(event.string("type") == "order.state_changed")
            #expect((event["order"] as? JSONDict)?.keySet == SpecFields.order)
            #expect((event["change"] as? JSONDict)?.keySet == SpecEventFields.change)
            #expect(UUID(uuidString: event.string("id") ?? "") != nil)
        }
        let first = try #require(events.first?["change"] as? JSONDict)
        #expect(first.isNull("from") && first.string("to") == "pending" && first.isNull("flag"))
        #expect(first.string("provider_status") == "IN_PROGRESS")
        let second = try #require(events.last?["change"] as? JSONDict)
        #expect(second.string("from") == "pending" && second.string("to") == "paid")
        // The order object as `orders show` printed it right after each change.
        func orderFields(_ object: JSONDict) -> NSDictionary { NSDictionary(dictionary: object.filter { SpecFields.order.contains($0.key) }) }
        #expect(orderFields(try #require(events[0]["order"] as? JSONDict)) == orderFields(shownAfterFirst))
        #expect(orderFields(try #require(events[1]["order"] as? JSONDict)) == orderFields(shownAfterPaid))
        // The notification that caused each.
        let notifications = shownAfterPaid.objects("notifications")
        #expect(first.int("notification_id") == notifications.first?.int("id"))

        // The CLI's json lines are the feed's bytes.
        let raw = try await daemon.api("/api/v1/events").text
        let cli = try await ipnd(["events", "list", "--config", daemon.configPath, "--format", "json"])
        #expect(cli.status == 0, "\(cli.stderr)")
        let lines = cli.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(raw == "{\"events\":[" + lines.joined(separator: ",") + "],\"next_after\":2}")
        let csv = try await ipnd(["events", "list", "--config", daemon.configPath, "--format", "csv", "--after", "1"])
        #expect(parseCSV(csv.stdout).first == ["seq", "id", "type", "occurred_at", "provider", "account", "order_ref", "from", "to",
                                               "flag", "notification_id", "provider_status"])
        #expect(parseCSV(csv.stdout).count == 2)
        let table = try await ipnd(["events", "list", "--config", daemon.configPath])
        #expect(table.stdout.contains("order.state_changed") && table.stdout.contains("F-1"))
        try await daemon.stop()
    }

    @Test("after, limit, filters and next_after; bad parameters are 400", arguments: Backend.allCases)
    func parameters(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        for index in 0..<3 {
            try await daemon.deliver("unlimint", order: "U-\(index)", status: "COMPLETED")
            try await daemon.deliver("citcon", order: "C-\(index)", status: "success")
        }
        var page = try await daemon.apiObject("/api/v1/events?after=2&limit=2")
        #expect(page.objects("events").map { $0.int("seq") } == [3, 4])
        #expect(page.int("next_after") == 4)
        page = try await daemon.apiObject("/api/v1/events?provider=citcon")
        #expect(page.objects("events").map { $0.int("seq") } == [2, 4, 6])
        #expect(page.int("next_after") == 6)
        page = try await daemon.apiObject("/api/v1/events?type=order.flagged")
        #expect(page.objects("events").isEmpty && page.int("next_after") == 6)
        page = try await daemon.apiObject("/api/v1/events?after=6")
        #expect(page.objects("events").isEmpty && page.int("next_after") == 6)
        for bad in ["after=-1", "after=x", "limit=0", "limit=1001", "wait=61", "wait=-1", "type=order.paid", "provider=paypal"] {
            let answer = try await daemon.api("/api/v1/events?\(bad)")
            #expect(answer.status == 400, "\(bad)")
            #expect((try? parseJSONObject(answer.text))?.string("error") != nil, "\(bad)")
        }
        #expect(try await daemon.api("/api/v1/events", token: nil).status == 401)
        try await daemon.stop()
    }

    @Test("long poll: a new event is answered within a second of its commit; with none, after the wait, empty", arguments: Backend.allCases)
    func longPoll(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        let started = ContinuousClock.now
        let empty = try await daemon.apiObject("/api/v1/events?wait=1")
        #expect(ContinuousClock.now - started >= .milliseconds(900))
        #expect(empty.objects("events").isEmpty && empty.int("next_after") == 0)

        let poll = Task { () -> (String, ContinuousClock.Instant) in
            let answer = try await daemon.api("/api/v1/events?after=0&wait=30")
            return (answer.text, ContinuousClock.now)
        }
        try await Task.sleep(for: .milliseconds(300))
        try await daemon.deliver("unlimint", order: "LP-1", status: "COMPLETED")
        let committed = ContinuousClock.now
        let (text, answered) = try await poll.value
        #expect(try parseJSONObject(text).objects("events").count == 1)
        #expect(answered - committed < .seconds(1), "answered \(answered - committed) after the commit")
        try await daemon.stop()
    }

    @Test("an after older than what retention kept answers 410 with oldest_seq", arguments: Backend.allCases)
    func pruned(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        for index in 0..<3 { try await daemon.deliver("unlimint", order: "R-\(index)", status: "COMPLETED") }
        // As retention leaves the store having removed events 1 and 2.
        try daemon.execute("DELETE FROM events WHERE seq <= 2; INSERT INTO store_meta (key, value) VALUES ('events_pruned_through', '2')")
        let gone = try await daemon.api("/api/v1/events?after=1")
        #expect(gone.status == 410)
        let body = try parseJSONObject(gone.text)
        #expect(body.int("oldest_seq") == 3)
        #expect(body.string("error") != nil)
        #expect(try await daemon.apiObject("/api/v1/events?after=2").objects("events").map { $0.int("seq") } == [3])
        let cli = try await ipnd(["events", "list", "--config", daemon.configPath, "--after", "0"])
        #expect(cli.status == 1)
        #expect(cli.stderr.contains("no longer kept"))
        try await daemon.stop()
    }

    @Test("events tail prints what commits while it runs, once each, in seq order", arguments: Backend.allCases)
    func tail(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await daemon.deliver("unlimint", order: "T-0", status: "COMPLETED")
        async let tailed = ipnd(["events", "tail", "--config", daemon.configPath, "--format", "json"], timeout: 4)
        try await Task.sleep(for: .milliseconds(800))
        for index in 1...5 { try await daemon.deliver("unlimint", order: "T-\(index)", status: "COMPLETED") }
        let result = try await tailed
        let seqs = try parseJSONLines(result.stdout).map { $0.int("seq") }
        // The last events before it started, then each new one.
        #expect(seqs == [1, 2, 3, 4, 5, 6], "\(result.stdout)\n\(result.stderr)")
        try await daemon.stop()
    }
}
