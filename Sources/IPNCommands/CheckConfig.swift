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

/// `ipnd check-config`: validates and prints a summary with secrets redacted.
struct CheckConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate the config and print a summary with secrets redacted."
    )

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        _ = try DaemonLogging.configuredLevel()
        let config = try options.load()
        Console.print(ConfigSummary.text(config))
    }
}

/// The redacted, human summary of a config.
enum ConfigSummary {
    static func text(_ config: IPNDConfig) -> String {
        let server = config.server
        var lines = [
            "config \(config.path): ok",
            "server: listening on \(server.host):\(server.port), max_body_bytes \(server.maxBodyBytes), "
                + "request_timeout_seconds \(server.requestTimeoutSeconds), idle_timeout_seconds \(server.idleTimeoutSeconds), "
                + "trusted_proxies \(list(server.trustedProxies))",
            "rejected requests stored: " + (server.rejectedStorePerMinute == 0
                ? "none (server.rejected_store_per_minute is 0)"
                : "at most \(server.rejectedStorePerMinute) per client address per minute"),
            "store: \(config.store.summary)",
            "retention: \(config.store.retention.summary)",
            "ops: listening on \(config.ops.host):\(config.ops.port), " + (config.ops.tokenDigests.isEmpty
                ? "no bearer tokens (ops.tokens_sha256 is empty: the ops API refuses every request)"
                : "\(config.ops.tokenDigests.count) bearer token(s)")
                + ", console_secure_cookie \(config.ops.consoleSecureCookie)",
            "providers:",
        ]
        for account in config.accounts {
            let route = account.name == "default" ? "/ipn/\(account.providerName)" : "/ipn/\(account.providerName)/\(account.name)"
            var line = "  \(account.providerName)/\(account.name): POST \(route)"
            for (key, value) in account.provider.summary { line += "; \(key): \(value)" }
            line += "; allow_ips: \(account.allowIPs.map(list) ?? "any")"
            lines.append(line)
            lines.append("    inquiry: \(account.inquirySummary)")
        }
        lines.append(config.deliveries.isEmpty ? "deliveries: none" : "deliveries:")
        for target in config.deliveries { lines.append("  " + target.summary) }
        lines.append("reconcile: \(config.reconcile.summary)")
        return lines.joined(separator: "\n")
    }

    private static func list(_ networks: [IPNetwork]) -> String {
        networks.isEmpty ? "none" : networks.map(\.description).joined(separator: ", ")
    }
}
