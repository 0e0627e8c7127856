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
import Foundation
import IPNConfig
import IPNCore
import IPNDelivery
import IPNServer
import IPNStore

/// `ipnd deliveries list|retry|resume|ping` (product.md section 8).
struct Deliveries: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Push delivery to the merchant's application: list deliveries, retry them, resume a paused target, ping one.",
        subcommands: [ListDeliveries.self, RetryDeliveries.self, ResumeTarget.self, PingTarget.self]
    )
}

/// The target named on the command line, which the config must have.
private func requireTarget(_ config: IPNDConfig, _ name: String) throws -> DeliveryTarget {
    if let target = config.deliveries.first(where: { $0.name == name }) { return target }
    let configured = config.deliveries.map(\.name)
    Console.error("config error: no delivery target \"\(name)\" in \(config.path) "
                  + (configured.isEmpty ? "(the config has no deliveries section)" : "(configured: \(configured.joined(separator: ", ")))"))
    throw ExitStatus.configError
}

/// `ipnd deliveries list`: deliveries, newest first.
struct ListDeliveries: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List deliveries, newest first.")

    @OptionGroup var options: ConfigOptions

    @Option(help: "Only this target.")
    var target: String?

    @Option(help: "Only this state (pending, delivered, failed, paused).")
    var state: String?

    @Option(help: "Only deliveries created at or after this ISO 8601 time or date.")
    var since: String?

    @Option(help: "At most this many deliveries, newest first.")
    var limit: Int = QueryParameters.defaultLimit

    @Option(help: "table, json (one object per line) or csv.")
    var format: ListFormat = .table

    func validate() throws {
        do throws(QueryParameterError) {
            _ = try target.map(QueryParameters.targetName)
            _ = try state.map(QueryParameters.deliveryState)
            _ = try since.map(QueryParameters.since)
        } catch {
            throw ValidationError(error.message)
        }
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let config = try options.load(secrets: .skip)
        let filter = DeliveryFilter(
            target: target, state: state.flatMap(DeliveryState.init(rawValue:)), since: since.flatMap { try? QueryParameters.since($0) },
            limit: limit)
        let deliveries = try await StoreAccess.read(config) { store throws(StoreError) in try await store.deliveries(filter) }
        let objects = deliveries.map(RecordJSON.delivery)
        switch format {
        case .json: Console.output(JSONLines.text(objects))
        case .csv: Console.output(CSV.text(columns: RecordJSON.deliveryColumns, objects: objects))
        case .table: Console.output(DeliveryTables.list(deliveries))
        }
    }
}

/// `ipnd deliveries retry`: puts deliveries back to pending for an immediate attempt.
struct RetryDeliveries: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Put deliveries back to pending for an immediate attempt.",
        discussion: "Either --id (repeatable), or --target with --state (failed, or pending to attempt now) and optionally --since. "
            + "The retry schedule and its three days start again.")

    @OptionGroup var options: ConfigOptions

    @Option(name: .customLong("id"), help: "A delivery id (repeatable).")
    var ids: [Int64] = []

    @Option(help: "All of this target's deliveries in --state.")
    var target: String?

    @Option(help: "With --target: failed (or pending).")
    var state: String?

    @Option(help: "With --target: only deliveries created at or after this ISO 8601 time or date.")
    var since: String?

    func validate() throws {
        if !ids.isEmpty {
            guard target == nil, state == nil, since == nil else {
                throw ValidationError("give either --id, or --target with --state, not both")
            }
            return
        }
        guard let target, let state else { throw ValidationError("give --id N, or --target NAME --state failed") }
        do throws(QueryParameterError) {
            _ = try QueryParameters.targetName(target)
            let chosen = try QueryParameters.deliveryState(state)
            guard chosen == .failed || chosen == .pending else {
                throw QueryParameterError("--state must be failed or pending")
            }
            _ = try since.map(QueryParameters.since)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let config = try options.load(secrets: .skip)
        let selection: DeliveryRetrySelection
        if let target, let state = state.flatMap(DeliveryState.init(rawValue:)) {
            _ = try requireTarget(config, target)
            selection = .target(target, state: state, since: since.flatMap { try? QueryParameters.since($0) })
        } else {
            selection = .ids(ids)
        }
        let now = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        let count = try await StoreAccess.write(config) { store throws(StoreError) in try await store.retryDeliveries(selection, now: now) }
        Console.output("\(count) deliver\(count == 1 ? "y" : "ies") put back to pending for an immediate attempt")
        if count == 0, !ids.isEmpty { throw ExitStatus.notFound }
    }
}

/// `ipnd deliveries resume NAME`: a target paused by a 410 gets its backlog again.
struct ResumeTarget: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Resume a target paused after it answered 410; its backlog is sent in order.")

    @OptionGroup var options: ConfigOptions

    @Argument(help: "The delivery target's name.")
    var name: String

    func run() async throws {
        let config = try options.load(secrets: .skip)
        _ = try requireTarget(config, name)
        let name = name
        let now = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        let due = try await StoreAccess.write(config) { store throws(StoreError) in try await store.resumeTarget(name, now: now) }
        Console.output("delivery target \(name) resumed: \(due) pending deliver\(due == 1 ? "y" : "ies") due now")
    }
}

/// `ipnd deliveries ping NAME`: sends a signed `ipnd.ping` event (not stored) and prints the answer.
struct PingTarget: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ping",
        abstract: "Send a signed ipnd.ping event (not stored) to a target and print its answer.",
        discussion: "Exits 0 when the target answers 2xx, 1 otherwise.")

    @OptionGroup var options: ConfigOptions

    @Argument(help: "The delivery target's name.")
    var name: String

    func run() async throws {
        let config = try options.load()
        let target = try requireTarget(config, name)
        let sender = try WebhookSender(targets: [target], userAgent: "ipnd/\(BuildInfo.version)")
        let id = UUID().uuidString.lowercased()
        let now = Date()
        let event = JSONOut.object([
            ("id", .string(id)),
            ("type", .string("ipnd.ping")),
            ("occurred_at", .string(Timestamp.format(epochMilliseconds: Int64(now.timeIntervalSince1970 * 1000)))),
        ])
        let answer = try await sender.send(Array(event.text.utf8), id: id, to: target, now: now)
        await sender.shutdown()
        var lines = ["POST \(target.url)  webhook-id \(id)  (\(target.secrets.count) signature(s))"]
        if let status = answer.status {
            lines.append("HTTP \(status) in \(Int(answer.seconds * 1000)) ms")
            if !answer.body.isEmpty { lines.append(VisibleText.escaping(String(decoding: answer.body.prefix(1024), as: UTF8.self))) }
        } else {
            lines.append("no answer: \(answer.error ?? "unknown error")")
        }
        Console.output(lines.joined(separator: "\n"))
        guard let status = answer.status, (200...299).contains(status) else { throw ExitStatus.notFound }
    }
}

/// The table view of deliveries.
enum DeliveryTables {
    static func list(_ deliveries: [DeliveryRecord]) -> String {
        var table = TextTable(headers: [
            "ID", "TARGET", "SEQ", "TYPE", "PROVIDER", "ACCOUNT", "ORDER_REF", "STATE", "ATTEMPTS", "LAST_STATUS", "NEXT_ATTEMPT_AT",
            "LAST_ERROR",
        ])
        for delivery in deliveries {
            table.rows.append([
                String(delivery.id), delivery.target, String(delivery.seq), delivery.type.rawValue, delivery.provider,
                delivery.account, delivery.orderRef, delivery.state.rawValue, String(delivery.attempts),
                delivery.lastStatus.map(String.init) ?? "-", delivery.nextAttemptAt ?? "-", delivery.lastError ?? "-",
            ])
        }
        return table.text
    }
}
