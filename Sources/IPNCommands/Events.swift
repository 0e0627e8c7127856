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

import ArgumentParser
import IPNCore
import IPNServer
import IPNStore

/// `ipnd events list|tail`: the order-event feed, ascending by seq (product.md section 8).
struct Events: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read the order-event feed, ascending by seq (read-only, safe while the daemon runs).",
        subcommands: [ListEvents.self, TailEvents.self]
    )
}

/// `--after --provider --account --type`, shared by list and tail.
struct EventFilterOptions: ParsableArguments {
    @Option(help: "Only events with a greater seq (default 0: from the first).")
    var after: Int64 = 0

    @Option(help: ArgumentHelp("Only this provider (\(ProviderRegistry.names))."))
    var provider: String?

    @Option(help: "Only this account.")
    var account: String?

    @Option(help: "Only this type (order.state_changed, order.flagged).")
    var type: String?

    func validate() throws {
        do throws(QueryParameterError) {
            _ = try QueryParameters.seq(String(after), name: "--after")
            _ = try provider.map(QueryParameters.provider)
            _ = try type.map(QueryParameters.eventType)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func filter(limit: Int) -> EventFilter {
        EventFilter(after: after, limit: limit, provider: provider, account: account, type: type.flatMap { EventType(rawValue: $0) })
    }
}

/// `ipnd events list`: events after a seq, ascending.
struct ListEvents: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List events after a seq, ascending.")

    @OptionGroup var options: ConfigOptions
    @OptionGroup var filter: EventFilterOptions

    @Option(help: "At most this many events.")
    var limit: Int = QueryParameters.defaultLimit

    @Option(help: "table, json (one object per line, the feed's bytes) or csv.")
    var format: ListFormat = .table

    func validate() throws {
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let config = try options.load(secrets: .skip)
        var query = filter.filter(limit: limit)
        var events: [EventRecord] = []
        // A filtered read examines a window of seqs at a time: read on until the limit is
        // reached or the feed's end.
        while events.count < limit {
            let chosen = query
            let page = try await StoreAccess.read(config) { store throws(StoreError) in try await store.events(chosen) }
            if let oldest = page.oldestSeq {
                Console.error("events after \(query.after) are no longer kept (retention); the oldest readable is \(oldest): "
                              + "resync from `ipnd orders list`, then read with --after \(oldest - 1)")
                throw ExitStatus.notFound
            }
            events += page.events
            guard page.nextAfter > query.after else { break }
            query.after = page.nextAfter
            query.limit = limit - events.count
            if page.events.isEmpty, filter.type == nil, filter.provider == nil, filter.account == nil { break }
        }
        switch format {
        case .json: Console.output(JSONLines.text(events.map(RecordJSON.event)))
        case .csv: Console.output(CSV.text(columns: RecordJSON.eventColumns, objects: events.map(RecordJSON.eventRow)))
        case .table: Console.output(EventTables.list(events))
        }
    }
}

/// `ipnd events tail`: prints events as they commit, until interrupted (like `tail -f`).
struct TailEvents: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tail",
        abstract: "Print events as they commit, until interrupted.",
        discussion: "Without --after, starts with the last 10 events, as tail -f does.")

    @OptionGroup var options: ConfigOptions

    @Option(help: "Start after this seq (default: the last 10 events, then new ones).")
    var after: Int64?

    @Option(help: "table (one line per event) or json (one object per line, the feed's bytes).")
    var format: ShowFormat = .table

    /// How often the store is looked at for new commits.
    static let pollInterval: Duration = .milliseconds(200)

    func validate() throws {
        if let after, after < 0 { throw ValidationError("--after must be 0 or more") }
    }

    func run() async throws {
        let config = try options.load(secrets: .skip)
        let store = try await StoreAccess.open(config)
        var position: Int64
        if let after {
            position = after
        } else {
            let newest = try await StoreAccess.read(store) { store throws(StoreError) in try await store.newestEventSeq() }
            position = max(0, newest - 10)
        }
        if format == .table { Console.print(EventTables.header) }
        while true {
            let chosen = EventFilter(after: position, limit: 1000)
            let page = try await StoreAccess.read(store) { store throws(StoreError) in try await store.events(chosen) }
            if let oldest = page.oldestSeq {
                Console.error("events after \(position) are no longer kept (retention); the oldest readable is \(oldest)")
                throw ExitStatus.notFound
            }
            for event in page.events {
                Console.print(format == .json ? RecordJSON.event(event).text : EventTables.line(event))
            }
            position = max(position, page.nextAfter)
            if page.events.count < chosen.limit { try await Task.sleep(for: Self.pollInterval) }
        }
    }
}

/// The table views of events.
enum EventTables {
    static let headers = ["SEQ", "OCCURRED_AT", "TYPE", "PROVIDER", "ACCOUNT", "ORDER_REF", "FROM", "TO", "FLAG", "NOTIFICATION_ID"]

    static var header: String { headers.joined(separator: "  ") }

    static func list(_ events: [EventRecord]) -> String {
        var table = TextTable(headers: headers)
        table.rows = events.map(cells)
        return table.text
    }

    /// One event on one line, for `tail` (columns are not aligned across lines it has not seen).
    static func line(_ event: EventRecord) -> String {
        cells(event).map(VisibleText.escaping).joined(separator: "  ")
    }

    private static func cells(_ event: EventRecord) -> [String] {
        [
            String(event.seq), event.occurredAt, event.type.rawValue, event.provider, event.account, event.orderRef,
            event.from?.rawValue ?? "-", event.to.rawValue, event.flag ?? "-", event.notificationID.map(String.init) ?? "-",
        ]
    }
}
