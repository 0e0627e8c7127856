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
import CoreMetrics
import IPNConfig
import IPNCore
import IPNReconcile
import IPNServer
import IPNStore

/// `ipnd inquiries list`.
struct Inquiries: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Query the status inquiries ipnd made to providers (read-only, safe while the daemon runs).",
        subcommands: [ListInquiries.self]
    )
}

/// `ipnd inquiries list`: the inquiries made, newest first.
struct ListInquiries: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List status inquiries, newest first.")

    @OptionGroup var options: ConfigOptions
    @OptionGroup var filter: ListFilterOptions

    @Option(help: "Only inquiries about this order reference.")
    var order: String?

    @Option(help: "Only this outcome (recorded, no_news, not_found, error, bad_signature, cannot_ask).")
    var outcome: String?

    @Option(help: "table, json (one object per line) or csv.")
    var format: ListFormat = .table

    func validate() throws {
        do throws(QueryParameterError) {
            _ = try outcome.map(QueryParameters.inquiryOutcome)
            _ = try order.map(QueryParameters.orderReference)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let config = try options.load(secrets: .skip)
        let query = InquiryFilter(
            provider: filter.provider, account: filter.account, orderRef: order, outcome: outcome.flatMap(InquiryOutcome.init(rawValue:)),
            since: filter.sinceTimestamp, limit: filter.limit)
        let inquiries = try await StoreAccess.read(config) { store throws(StoreError) in try await store.inquiries(query) }
        let objects = inquiries.map(RecordJSON.inquiry)
        switch format {
        case .json: Console.output(JSONLines.text(objects))
        case .csv: Console.output(CSV.text(columns: RecordJSON.inquiryColumns, objects: objects))
        case .table: Console.output(InquiryTables.list(inquiries))
        }
    }
}

/// `ipnd orders reconcile PROVIDER ORDER_REF`: asks the provider now, records the answer as the
/// daemon would, and prints the inquiry record. The store is written directly, as `orders
/// expect` does, so it works whether or not the daemon runs.
struct ReconcileOrder: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Ask the provider about one order now and record the answer.",
        discussion: """
            Uses the account's inquiry section (product.md section 12). Exit 0 when the provider answered \
            (recorded, no_news, not_found), 1 when ipnd does not know the order (register it with orders expect), \
            2 when the account has no inquiry section, 3 when the store is unavailable, 5 when the provider could \
            not be asked or gave no usable answer (error, bad_signature, cannot_ask).
            """
    )

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
            _ = try QueryParameters.orderReference(orderRef)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let config = try options.load()
        try Accounts.requireName(config, provider: provider, account: account)
        guard config.askedScopes.contains(Scope(provider: provider, account: account)) else {
            Console.error("config error: \(provider)/\(account) has no inquiry section in \(config.path): it is never asked "
                + "(product.md section 12 says how to add one)")
            throw ExitStatus.configError
        }
        let (provider, account, orderRef) = (provider, account, orderRef)
        let result = try await StoreAccess.write(config) { store throws(StoreError) -> Result<InquiryRecord, InquiryAskError> in
            let reconciler = Reconciler(
                store: store, settings: config.reconcilerSettings, accounts: config.inquiryAccounts, logger: quietLogger,
                metrics: ReconcileMetrics(factory: NOOPMetricsHandler.instance), userAgent: "ipnd/\(BuildInfo.version)")
            let asked: Result<InquiryRecord, InquiryAskError>
            do throws(InquiryAskError) {
                asked = .success(try await reconciler.ask(provider: provider, account: account, orderRef: orderRef, trigger: .cli))
            } catch {
                asked = .failure(error)
            }
            await reconciler.shutdown()
            if case .failure(.store(let failure)) = asked { throw failure }
            return asked
        }
        switch result {
        case .failure(.unknownOrder):
            Console.error("no order \"\(orderRef)\" for \(provider)/\(account) in \(storeLocation(config)); "
                + "register it with ipnd orders expect first")
            throw ExitStatus.notFound
        case .failure(let error):
            Console.error("\(error)")
            throw ExitStatus.configError
        case .success(let record):
            switch format {
            case .json: Console.output(RecordJSON.inquiry(record).text)
            case .table: Console.output(InquiryTables.detail(record))
            }
            guard record.outcome.isAnswer else { throw ExitStatus.providerUnusable }
        }
    }
}

/// The table views of inquiries.
enum InquiryTables {
    static func list(_ inquiries: [InquiryRecord]) -> String {
        var table = TextTable(headers: [
            "ID", "ASKED_AT", "PROVIDER", "ACCOUNT", "ORDER_REF", "TRIGGER", "OUTCOME", "HTTP", "PROVIDER_STATUS", "NOTIFICATION_ID",
            "MS",
        ])
        for inquiry in inquiries {
            table.rows.append([
                String(inquiry.id), inquiry.askedAt, inquiry.provider, inquiry.account, inquiry.orderRef, inquiry.trigger.rawValue,
                inquiry.outcome.rawValue + (inquiry.error.map { " (\($0))" } ?? ""), inquiry.httpStatus.map(String.init) ?? "-",
                inquiry.providerStatus ?? "-", inquiry.notificationID.map(String.init) ?? "-", String(inquiry.durationMs),
            ])
        }
        return table.text
    }

    static func detail(_ inquiry: InquiryRecord) -> String {
        var fields = TextTable(headers: ["inquiry", String(inquiry.id)])
        fields.rows = [
            ["order", "\(inquiry.provider)/\(inquiry.account) \(inquiry.orderRef)"],
            ["asked_at", inquiry.askedAt],
            ["trigger", inquiry.trigger.rawValue],
            ["outcome", inquiry.outcome.rawValue],
            ["http_status", inquiry.httpStatus.map(String.init) ?? "-"],
            ["provider_status", inquiry.providerStatus ?? "-"],
            ["notification_id", inquiry.notificationID.map(String.init) ?? "-"],
            ["verdict", inquiry.verdict?.rawValue ?? "-"],
            ["error", inquiry.error ?? "-"],
            ["duration_ms", String(inquiry.durationMs)],
            ["url", inquiry.url],
        ]
        return fields.text
    }
}
