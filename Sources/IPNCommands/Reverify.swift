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

/// `ipnd notifications reverify`: verifies stored rejected notifications again with today's
/// config; `--apply` records those that now verify (product.md section 11).
struct ReverifyNotifications: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reverify",
        abstract: "Verify stored rejected notifications again with the current config; --apply records those that now verify.",
        discussion: """
            Without --apply nothing is written: each selected rejected notification is shown with the verdict it would get \
            now (applied, duplicate, stale, ..., still_rejected with the reason, cannot_reverify when verifying it needs a \
            credential header ipnd stored redacted, already_reverified when an earlier --apply recorded it). With --apply, \
            each one that verifies is recorded as a new notification (reverified_from = the rejected one's id) through the \
            normal path: dedup, the state machine, events and deliveries apply, and one the provider has re-sent since ends \
            duplicate. The client address is checked against today's allow_ips. Safe while the daemon runs; reads the \
            config's secrets, so run it as the service's user (with its credentials).
            """)

    @OptionGroup var options: ConfigOptions

    @Option(name: .customLong("id"), help: "A rejected notification's id (repeatable).")
    var ids: [Int64] = []

    @Option(help: "Only this provider's.")
    var provider: String?

    @Option(help: "Only this account's (with --provider, or any provider's).")
    var account: String?

    @Option(help: "Only those rejected for this reason (bad_signature, bad_credentials, ip_not_allowed, ...).")
    var reason: String?

    @Option(help: "Only those received at or after this ISO 8601 time or date.")
    var since: String?

    @Option(help: "At most this many rejected notifications, oldest first (default: all selected).")
    var limit: Int?

    @Flag(help: "Record each one that now verifies (without it, a dry run that writes nothing).")
    var apply = false

    @Option(help: "table, or json (one object per line).")
    var format: ShowFormat = .table

    /// Rejected notifications read per store query.
    static let pageSize = 200

    func validate() throws {
        do throws(QueryParameterError) {
            _ = try provider.map(QueryParameters.provider)
            _ = try reason.map(QueryParameters.rejectReason)
            _ = try since.map(QueryParameters.since)
        } catch {
            throw ValidationError(error.message)
        }
        guard ids.count <= RejectedSelection.maxIDs else { throw ValidationError("at most \(RejectedSelection.maxIDs) --id") }
        guard ids.allSatisfy({ $0 > 0 }) else { throw ValidationError("--id must be a positive notification id") }
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let config = try options.load()
        let remaining = limit ?? Int.max
        var selection: RejectedSelection? = RejectedSelection(
            ids: ids, provider: provider, account: account, reason: reason, since: since.flatMap { try? QueryParameters.since($0) },
            limit: min(Self.pageSize, remaining))
        let apply = apply
        let results = try await StoreAccess.write(config) { store throws(StoreError) in
            var run = Reverification(config: config, store: store, apply: apply)
            var results: [ReverifyResult] = []
            while var page = selection {
                page.limit = min(page.limit, remaining - results.count)
                let (found, next) = try await run.next(page)
                results += found
                selection = results.count < remaining ? next : nil
            }
            return results
        }
        switch format {
        case .json: Console.output(JSONLines.text(results.map(\.json)))
        case .table: Console.output(ReverifyTables.list(results, apply: apply))
        }
        let missing = Set(ids).subtracting(results.map(\.id))
        if !missing.isEmpty {
            Console.error("not a stored rejected notification: \(missing.sorted().map(String.init).joined(separator: ", "))")
            throw ExitStatus.notFound
        }
    }
}

/// The table view of reverify results, with a summary line.
enum ReverifyTables {
    static func list(_ results: [ReverifyResult], apply: Bool) -> String {
        var table = TextTable(headers: [
            "ID", "RECEIVED_AT", "PROVIDER", "ACCOUNT", "WAS", "NOW", "REASON", "ORDER_REF", "ORDER_STATE", "NOTIFICATION_ID", "DETAIL",
        ])
        for result in results {
            table.rows.append([
                String(result.id), result.receivedAt, result.provider, result.account, result.rejectedReason ?? "-", result.verdict,
                result.reason ?? "-", result.orderRef ?? "-", result.orderState?.rawValue ?? "-",
                result.notificationID.map(String.init) ?? "-", result.detail ?? "-",
            ])
        }
        return (results.isEmpty ? "" : table.text + "\n") + summary(results, apply: apply)
    }

    static func summary(_ results: [ReverifyResult], apply: Bool) -> String {
        guard !results.isEmpty else { return "no stored rejected notification matches" }
        let counts = results.verdictCounts.map { "\($0.count) \($0.verdict)" }.joined(separator: ", ")
        if apply {
            let recorded = results.filter(\.recorded).count
            return "\(results.count) rejected notification(s) verified again: \(counts); \(recorded) recorded"
        }
        let wouldRecord = results.filter { if case .verified = $0.outcome { true } else { false } }.count
        return "dry run, nothing written: \(results.count) rejected notification(s) verified again: \(counts); "
            + "\(wouldRecord) would be recorded with --apply"
    }
}
