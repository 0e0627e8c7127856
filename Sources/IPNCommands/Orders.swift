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
import IPNConfig
import IPNCore
import IPNServer
import IPNStore
import IPNStoreSQLite

/// `ipnd orders list|show|expect|reconcile`.
struct Orders: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Query orders in the store (read-only, safe while the daemon runs), or register an expected amount.",
        subcommands: [ListOrders.self, ShowOrder.self, ExpectOrder.self, ReconcileOrder.self]
    )
}

/// `--provider --account --since --limit`, shared by the list commands.
struct ListFilterOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Only this provider (\(ProviderRegistry.names))."))
    var provider: String?

    @Option(help: "Only this account.")
    var account: String?

    @Option(help: "Only records at or after this ISO 8601 time or date (2026-11-21, 2026-11-21T10:00:00Z).")
    var since: String?

    @Option(help: "At most this many records, newest first.")
    var limit: Int = QueryParameters.defaultLimit

    func validate() throws {
        do throws(QueryParameterError) {
            _ = try provider.map(QueryParameters.provider)
            _ = try since.map(QueryParameters.since)
        } catch {
            throw ValidationError(error.message)
        }
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
    }

    /// The `since` value as the stored timestamp text it compares with.
    var sinceTimestamp: String? { since.flatMap { try? QueryParameters.since($0) } }
}

/// `ipnd orders list`: orders, newest first.
struct ListOrders: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List orders, newest first.")

    @OptionGroup var options: ConfigOptions
    @OptionGroup var filter: ListFilterOptions

    @Option(help: "Only orders in this state (expected, pending, authorized, failed, canceled, expired, paid, partially_refunded, refunded, charged_back).")
    var state: String?

    @Option(help: "table, json (one object per line) or csv.")
    var format: ListFormat = .table

    func validate() throws {
        do throws(QueryParameterError) {
            _ = try state.map(QueryParameters.state)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let config = try options.load(secrets: .skip)
        let query = OrderFilter(
            provider: filter.provider, account: filter.account, state: state.flatMap { OrderState(rawValue: $0) },
            since: filter.sinceTimestamp, limit: filter.limit)
        let orders = try await StoreAccess.read(config) { store throws(StoreError) in try await store.orders(query) }
        switch format {
        case .json: Console.output(JSONLines.text(orders.map(RecordJSON.order)))
        case .csv: Console.output(CSV.text(columns: RecordJSON.orderColumns, objects: orders.map(RecordJSON.order)))
        case .table: Console.output(OrderTables.list(orders))
        }
    }
}

/// `ipnd orders show PROVIDER ORDER_REF`: one order with its transitions and notifications.
struct ShowOrder: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show one order: state, amounts, flags, transitions and notifications.")

    @OptionGroup var options: ConfigOptions

    @Argument(help: ArgumentHelp("The provider (\(ProviderRegistry.names))."))
    var provider: String

    @Argument(help: "The merchant's order reference.")
    var orderRef: String

    @Option(help: "The account the order belongs to.")
    var account: String = "default"

    @Option(help: "table or json (one object on one line).")
    var format: ShowFormat = .table

    func validate() throws {
        do throws(QueryParameterError) {
            _ = try QueryParameters.provider(provider)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let config = try options.load(secrets: .skip)
        let (provider, account, orderRef) = (provider, account, orderRef)
        let stored = try await StoreAccess.read(config) { store throws(StoreError) in
            try await store.order(provider: provider, account: account, orderRef: orderRef, includeRaw: false)
        }
        guard let found = stored else {
            Console.error("no order \"\(orderRef)\" for \(provider)/\(account) in \(storeLocation(config))")
            throw ExitStatus.notFound
        }
        let detail = found.scheduledOnlyWhenAsked(by: config.askedScopes)
        switch format {
        case .json: Console.output(RecordJSON.orderDetail(detail).text)
        case .table: Console.output(OrderTables.detail(detail))
        }
    }
}

/// `ipnd orders expect PROVIDER ORDER_REF --amount 12.34 --currency USD`: written directly to
/// the store in one short transaction (SQLite serialises it with the daemon's writer), so it
/// works whether or not the daemon runs and needs no ops token.
struct ExpectOrder: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "expect",
        abstract: "Register the amount and currency an order must be paid with.",
        discussion: """
            A notification that would authorize or pay the order with another amount or currency is then \
            recorded as `mismatch`, flags the order `amount_mismatch`, is acknowledged and changes nothing.
            """
    )

    @OptionGroup var options: ConfigOptions

    @Argument(help: ArgumentHelp("The provider (\(ProviderRegistry.names))."))
    var provider: String

    @Argument(help: "The merchant's order reference.")
    var orderRef: String

    @Option(help: "The amount in major units, as a decimal (12.34).")
    var amount: String

    @Option(help: "The ISO 4217 currency code (USD).")
    var currency: String

    @Option(help: "The account the order belongs to.")
    var account: String = "default"

    func validate() throws {
        do throws(QueryParameterError) {
            _ = try QueryParameters.provider(provider)
            _ = try QueryParameters.orderReference(orderRef)
        } catch {
            throw ValidationError(error.message)
        }
        _ = try money()
    }

    func run() async throws {
        let config = try options.load(secrets: .skip)
        try Accounts.requireName(config, provider: provider, account: account)
        let amount = try money()
        let (provider, account, orderRef) = (provider, account, orderRef)
        let outcome = try await StoreAccess.write(config) { store throws(StoreError) in
            try await store.setExpectation(provider: provider, account: account, orderRef: orderRef, amount: amount)
        }
        Console.output("expectation registered: \(provider)/\(account) order \(orderRef) must be paid with \(amount) (order is \(outcome.state.rawValue))")
        if let mismatch = outcome.mismatch {
            Console.error("warning: flagged amount_mismatch: \(mismatch)")
        }
    }

    private func money() throws -> Money {
        do {
            return try Money.parseMajor(amount, currency: currency)
        } catch {
            throw ValidationError("--amount \(amount) --currency \(currency): \(error.description)")
        }
    }
}

/// The table views of orders.
enum OrderTables {
    static func list(_ orders: [OrderRecord]) -> String {
        var table = TextTable(headers: ["PROVIDER", "ACCOUNT", "ORDER_REF", "STATE", "AMOUNT", "REFUNDED", "EXPECTED", "FLAGS", "CREATED_AT", "UPDATED_AT"])
        for order in orders {
            table.rows.append([
                order.provider, order.account, order.orderRef, order.state.rawValue, amount(order.amount),
                refunded(order), amount(order.expected), flags(order.flags), order.createdAt, order.updatedAt,
            ])
        }
        return table.text
    }

    static func detail(_ detail: OrderDetail) -> String {
        let order = detail.order
        var fields = TextTable(headers: ["order", "\(order.provider)/\(order.account) \(order.orderRef)"])
        fields.rows = [
            ["state", order.state.rawValue],
            ["amount", amount(order.amount)],
            ["refunded", refunded(order)],
            ["expected", amount(order.expected)],
            ["flags", flags(order.flags)],
            ["provider_txn_id", order.providerTxnID ?? "-"],
            ["created_at", order.createdAt],
            ["updated_at", order.updatedAt],
        ]
        var transitions = TextTable(headers: ["FROM", "TO", "AT", "NOTIFICATION_ID"])
        for transition in detail.transitions {
            transitions.rows.append([
                transition.from?.rawValue ?? "-", transition.to.rawValue, transition.at,
                transition.notificationID.map(String.init) ?? "-",
            ])
        }
        fields.rows.append(["next_inquiry_at", detail.nextInquiryAt ?? "-"])
        return [
            fields.text,
            "",
            "transitions:",
            transitions.text,
            "",
            "notifications:",
            NotificationTables.list(detail.notifications),
            "",
            "inquiries (newest \(OrderDetail.inquiryLimit)):",
            InquiryTables.list(detail.inquiries),
        ].joined(separator: "\n")
    }

    static func amount(_ money: Money?) -> String {
        money.map { "\($0.decimal) \($0.currency)" } ?? "-"
    }

    private static func refunded(_ order: OrderRecord) -> String {
        guard let currency = order.amount?.currency ?? order.expected?.currency else { return String(order.refundedMinor) }
        return amount(Money(minor: order.refundedMinor, currency: currency))
    }

    private static func flags(_ flags: [String]) -> String {
        flags.isEmpty ? "-" : flags.joined(separator: ",")
    }
}
