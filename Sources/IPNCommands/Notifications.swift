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

/// `ipnd notifications list|reverify`.
struct Notifications: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Query received notifications and their verdicts; verify rejected ones again (safe while the daemon runs).",
        subcommands: [ListNotifications.self, ReverifyNotifications.self]
    )
}

/// `ipnd notifications list`: received notifications with their verdicts, newest first.
struct ListNotifications: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List received notifications with their verdicts, newest first.")

    @OptionGroup var options: ConfigOptions
    @OptionGroup var filter: ListFilterOptions

    @Option(help: "Only this verdict (applied, recorded, stale, duplicate, mismatch, unknown_status, unlinked, rejected).")
    var verdict: String?

    @Option(help: "table, json (one object per line) or csv.")
    var format: ListFormat = .table

    func validate() throws {
        do throws(QueryParameterError) {
            _ = try verdict.map(QueryParameters.verdict)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let config = try options.load(secrets: .skip)
        let query = NotificationFilter(
            provider: filter.provider, account: filter.account, verdict: verdict.flatMap { Verdict(rawValue: $0) },
            since: filter.sinceTimestamp, limit: filter.limit)
        let notifications = try await StoreAccess.read(config) { store throws(StoreError) in try await store.notifications(query, includeRaw: false) }
        let objects = notifications.map { RecordJSON.notification($0) }
        switch format {
        case .json: Console.output(JSONLines.text(objects))
        case .csv: Console.output(CSV.text(columns: RecordJSON.notificationColumns, objects: objects))
        case .table: Console.output(NotificationTables.list(notifications))
        }
    }
}

/// The table view of notifications.
enum NotificationTables {
    static func list(_ notifications: [NotificationRecord]) -> String {
        var table = TextTable(headers: [
            "ID", "RECEIVED_AT", "PROVIDER", "ACCOUNT", "ORDER_REF", "VERDICT", "REASON", "PROVIDER_STATUS", "CLIENT_IP",
        ])
        for notification in notifications {
            table.rows.append([
                String(notification.id), notification.receivedAt, notification.provider, notification.account,
                notification.orderRef ?? "-", notification.verdict.rawValue, notification.reason ?? "-",
                notification.providerStatus ?? "-", notification.clientIP ?? "-",
            ])
        }
        return table.text
    }
}
