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
import IPNServer
import NIOCore
import NIOHTTP1

/// `ipnd simulate PROVIDER --order REF --status S`: a notification signed with the config's
/// secrets, sent to the running daemon (or printed as a curl command).
struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a correctly signed test notification to the running daemon, or print it as a curl command.",
        discussion: """
            The notification is signed with the account's secrets from the config (Alipay needs \
            simulate_private_key_file). --status takes the provider's own status word; paid is \
            \(ProviderRegistry.all.map { "\($0.name) \($0.simulationDefaults.paidStatus)" }.joined(separator: ", ")). \
            The words each provider sends: \(Self.knownStatusList). Another word is sent as given, with a \
            warning: ipnd stores it as unknown_status. \
            Every run uses new provider ids, so it is never a duplicate. Prints the daemon's HTTP status and \
            body; exits 0 only on a 2xx answer.
            """
    )

    @OptionGroup var options: ConfigOptions

    @Argument(help: ArgumentHelp("The provider (\(ProviderRegistry.names))."))
    var provider: String

    @Option(help: "The merchant's order reference.")
    var order: String

    @Option(help: "The provider's own status word (COMPLETED, 1, S, CHARGED, ...; the discussion below lists each provider's).")
    var status: String

    @Option(help: "The amount in major units (default 10.00).")
    var amount: String = "10.00"

    @Option(help: ArgumentHelp("The ISO 4217 currency (default USD\(Self.otherCurrencies))."))
    var currency: String?

    @Option(help: "The account to sign for and post to.")
    var account: String = "default"

    @Option(help: "Where ipnd listens (default http://<server.host>:<server.port> from the config); the provider route is appended when the URL has no path. https:// URLs only with --print.")
    var url: String?

    @Flag(name: .customLong("print"), help: "Print a runnable curl command instead of sending.")
    var printOnly = false

    func validate() throws {
        do throws(QueryParameterError) {
            _ = try QueryParameters.provider(provider)
        } catch {
            throw ValidationError(error.message)
        }
        _ = try money()
        guard !order.isEmpty else { throw ValidationError("--order must not be empty") }
        if let url { _ = try target(base: url) }
    }

    func run() async throws {
        let config = try options.load()
        let account = try Accounts.require(config, provider: provider, account: self.account)
        let target = try target(base: url ?? Self.defaultBase(config.server))
        let now = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        let spec = SimulationSpec(
            orderRef: order, status: status, amount: try money(), path: target.path, uniqueID: Self.uniqueID(),
            time: String(now.prefix(19)) + "Z")
        let request: RawRequest
        do {
            request = try account.provider.simulatedRequest(spec)
        } catch {
            Console.error("config error: \(account.keyPath): cannot sign a simulated notification: \(error)")
            throw ExitStatus.configError
        }
        if let warning = Self.unknownStatusWarning(provider: type(of: account.provider), status: status) {
            Console.warning(warning)
        }
        if printOnly {
            Console.print(CurlCommand.text(url: target.url, request: request))
            return
        }
        Console.print("POST \(target.url)  order \(order)  status \(status)  \(spec.amount)")
        let answer: PlainHTTPClient.Answer
        do {
            answer = try await PlainHTTPClient().post(
                host: target.host, port: target.port, target: target.path, headers: request.headers, body: request.body)
        } catch {
            Console.error("cannot reach ipnd at \(target.url): \(error) (is `ipnd serve` running with this config?)")
            throw ExitCode.failure
        }
        Console.print("HTTP \(answer.status.code) \(answer.status.reasonPhrase)")
        Console.output(answer.body.hasSuffix("\n") ? String(answer.body.dropLast()) : answer.body)
        guard (200..<300).contains(answer.status.code) else { throw ExitCode.failure }
    }

    /// What to say when `status` is a word `provider` never sends: the notification is still sent
    /// (testing how ipnd keeps an unknown status is a use), and the daemon stores it as
    /// `unknown_status`, which is rarely what was meant (`SUCCESS` for Alipay's `S`).
    static func unknownStatusWarning(provider: any NotificationProvider.Type, status: String) -> String? {
        guard !provider.knownStatuses.contains(status) else { return nil }
        return "warning: \(provider.name) never sends status \"\(status)\": it is sent as given, and ipnd will store it as "
            + "unknown_status. \(provider.name)'s status words: \(provider.knownStatuses.joined(separator: ", "))"
    }

    /// `citcon success, succeeded, ...; ipay88 1, 0, 6; ...`: every provider's known status words.
    private static var knownStatusList: String {
        ProviderRegistry.all.map { "\($0.name) \($0.knownStatuses.joined(separator: ", "))" }.joined(separator: "; ")
    }

    /// `; INR for juspay`: the providers whose default currency is not USD.
    private static var otherCurrencies: String {
        ProviderRegistry.all.filter { $0.simulationDefaults.currency != "USD" }
            .map { "; \($0.simulationDefaults.currency) for \($0.name)" }.joined()
    }

    private func money() throws -> Money {
        let currency = currency ?? ProviderRegistry.provider(named: provider)?.simulationDefaults.currency ?? "USD"
        do {
            return try Money.parseMajor(amount, currency: currency)
        } catch {
            throw ValidationError("--amount \(amount) --currency \(currency): \(error.description)")
        }
    }

    /// Where a simulated notification goes: the URL as printed, the request target (path and
    /// query, which Alipay signs), and the host and port to connect to.
    struct Target {
        let url: String
        let path: String
        let host: String
        let port: Int
    }

    private func target(base: String) throws -> Target {
        guard var components = URLComponents(string: base), let scheme = components.scheme?.lowercased(),
            ["http", "https"].contains(scheme), var host = components.host, !host.isEmpty
        else {
            throw ValidationError("--url \(base) is not an http:// or https:// URL")
        }
        guard scheme == "http" || printOnly else {
            throw ValidationError(
                "--url \(base): simulate sends plain HTTP to ipnd's own listener; add --print for a curl command to run through a TLS proxy"
            )
        }
        if components.path.isEmpty || components.path == "/" {
            components.path = account == "default" ? "/ipn/\(provider)" : "/ipn/\(provider)/\(account)"
        }
        guard let url = components.string else { throw ValidationError("--url \(base) is not a usable URL") }
        let path = components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return Target(url: url, path: path, host: host, port: components.port ?? 80)
    }

    /// `http://<server.host>:<server.port>`, with a wildcard host replaced by loopback.
    static func defaultBase(_ server: ServerSettings) -> String {
        var host = server.host
        if host == "0.0.0.0" || host.isEmpty { host = "127.0.0.1" }
        if host == "::" { host = "::1" }
        if host.contains(":") { host = "[\(host)]" }
        return "http://\(host):\(server.port)"
    }

    /// New provider ids for every run: `SIM` and 16 hex digits.
    static func uniqueID() -> String {
        "SIM" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16)
    }
}

/// A request as a runnable curl command line (POSIX shell quoting).
enum CurlCommand {
    static func text(url: String, request: RawRequest) -> String {
        var lines = ["curl -sS -i \(quote(url))"]
        for (name, value) in request.headers { lines.append("-H \(quote("\(name): \(value)"))") }
        lines.append("--data-binary \(quote(String(decoding: request.body, as: UTF8.self)))")
        return lines.joined(separator: " \\\n  ")
    }

    /// Single-quoted for a POSIX shell: nothing inside is special but the quote itself.
    static func quote(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }
}
