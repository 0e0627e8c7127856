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

/// `ipnd audit list|verify`: who did what, and whether the trail is intact.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Read the audit trail (read-only, safe while the daemon runs) and check its hash chain.",
        subcommands: [ListAudit.self, VerifyAudit.self]
    )
}

/// `ipnd audit list`: audit records, newest first.
struct ListAudit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List audit records, newest first.")

    @OptionGroup var options: ConfigOptions

    @Option(help: "Only this actor (a user's name, token:..., cli:LOGIN, system).")
    var actor: String?

    @Option(help: ArgumentHelp("Only this action (\(AuditAction.allCases.map(\.rawValue).joined(separator: ", ")))."))
    var action: String?

    @Option(help: "Only this outcome (ok, refused, error).")
    var outcome: String?

    @Option(help: "Only records at or after this ISO 8601 time or date (2026-11-21, 2026-11-21T10:00:00Z).")
    var since: String?

    @Option(help: "At most this many records, newest first.")
    var limit: Int = QueryParameters.defaultLimit

    @Option(help: "table, json (one object per line) or csv.")
    var format: ListFormat = .table

    func validate() throws {
        do throws(QueryParameterError) {
            _ = try action.map(QueryParameters.auditAction)
            _ = try outcome.map(QueryParameters.auditOutcome)
            _ = try since.map(QueryParameters.since)
        } catch {
            throw ValidationError(error.message)
        }
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let config = try options.load(secrets: .skip)
        let filter = AuditFilter(
            actor: actor, action: action, outcome: outcome.flatMap(AuditOutcome.init(rawValue:)),
            since: since.flatMap { try? QueryParameters.since($0) }, limit: limit)
        let records = try await StoreAccess.read(config) { store throws(StoreError) in try await store.auditRecords(filter) }
        switch format {
        case .json: Console.output(JSONLines.text(records.map(\.json)))
        case .csv:
            let rows = records.map { $0.columnValues.map { CSV.field($0 ?? "") }.joined(separator: ",") }
            Console.output(([AuditRecord.columns.joined(separator: ",")] + rows).joined(separator: "\n"))
        case .table: Console.output(AuditTables.list(records))
        }
    }
}

/// `ipnd audit verify`: walks the hash chain; exit 0 intact, 1 naming the first bad record.
struct VerifyAudit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check the audit trail's hash chain, from the oldest record kept.",
        discussion: "Exits 0 when every record is intact, 1 naming the first record that was changed, removed or put out of order.")

    @OptionGroup var options: ConfigOptions

    @Option(help: "table or json (one object on one line).")
    var format: ShowFormat = .table

    func run() async throws {
        let config = try options.load(secrets: .skip)
        let verification = try await StoreAccess.read(config) { store throws(StoreError) in try await store.verifyAudit() }
        switch format {
        case .json: Console.output(verification.json.text)
        case .table: Console.output(verification.summary)
        }
        if !verification.isIntact { throw ExitStatus.notFound }
    }
}

/// The table view of audit records.
enum AuditTables {
    static func list(_ records: [AuditRecord]) -> String {
        var table = TextTable(headers: ["ID", "AT", "ACTOR", "ROLE", "VIA", "ACTION", "TARGET", "OUTCOME", "CLIENT_IP", "DETAIL"])
        for record in records {
            table.rows.append([
                String(record.id), record.at, record.actor, record.role ?? "-", record.via, record.action, record.target ?? "-",
                record.outcome, record.clientIP ?? "-", record.detail == "{}" ? "-" : record.detail,
            ])
        }
        return table.text
    }
}
