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
import IPNCore

/// Turns the parsed YAML into an `IPNDConfig`, naming the key of the first problem found.
struct Validator {
    let resolver: PathResolver
    let file: ConfigFile
    let secrets: SecretHandling

    private static let topLevelKeys = ["server", "store", "ops", "providers", "deliveries", "reconcile"]
    private static let serverKeys = [
        "host", "port", "max_body_bytes", "request_timeout_seconds", "idle_timeout_seconds", "trusted_proxies", "rejected_store_per_minute",
    ]
    private static let storeKeys = ["path", "max_batch", "postgres", "retention"]
    private static let opsKeys = ["host", "port", "tokens_sha256", "console_secure_cookie"]
    private static let emptyTokenDigest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    func config(from root: ConfigNode) throws(ConfigError) -> IPNDConfig {
        let top = try mapping(root, key: nil)
        try checkKeys(top, allowed: Self.topLevelKeys, in: nil)
        var inlineSecrets: [String] = []
        let server = try serverSettings(root["server"])
        let store = try storeSettings(root["store"], inlineSecrets: &inlineSecrets)
        let ops = try opsSettings(root["ops"])
        if server.host == ops.host, server.port == ops.port, server.port != 0 {
            throw ConfigError(key: "ops.port", "must differ from server.port (\(server.port)): the ops listener is a separate port")
        }
        var names: [AccountName] = []
        let accounts = try providerAccounts(root["providers"], inlineSecrets: &inlineSecrets, names: &names)
        let deliveries = try deliveryTargets(root["deliveries"], accountNames: names, inlineSecrets: &inlineSecrets)
        let reconcile = try reconcileSettings(root["reconcile"])
        if secrets == .resolve, let first = inlineSecrets.first, FileAccess.readableByOthers(mode: file.mode) {
            throw ConfigError(
                key: first,
                "is a secret written inline in \(file.absolutePath), which is world-readable (mode \(FileAccess.octal(file.mode))); run chmod o-r (or 600) on it, or move the secret to \(first.split(separator: ".").last.map(String.init) ?? "NAME")_file (LoadCredential=)"
            )
        }
        return IPNDConfig(
            path: file.absolutePath, server: server, store: store, ops: ops, accounts: accounts, accountNames: names, deliveries: deliveries,
            reconcile: reconcile)
    }

    // MARK: Sections

    private func serverSettings(_ node: ConfigNode?) throws(ConfigError) -> ServerSettings {
        var settings = ServerSettings()
        guard let node, let pairs = try optionalMapping(node, key: "server") else { return settings }
        try checkKeys(pairs, allowed: Self.serverKeys, in: "server")
        if let host = node["host"] { settings.host = try hostName(host, key: "server.host") }
        if let port = node["port"] { settings.port = try integer(port, key: "server.port", in: 0...65535, what: "a TCP port") }
        if let limit = node["max_body_bytes"] {
            settings.maxBodyBytes = try integer(limit, key: "server.max_body_bytes", in: 1...16_777_216, what: "a byte count")
        }
        if let timeout = node["request_timeout_seconds"] {
            settings.requestTimeoutSeconds = try integer(timeout, key: "server.request_timeout_seconds", in: 1...3600, what: "seconds")
        }
        if let timeout = node["idle_timeout_seconds"] {
            settings.idleTimeoutSeconds = try integer(timeout, key: "server.idle_timeout_seconds", in: 1...86_400, what: "seconds")
        }
        if let proxies = node["trusted_proxies"] {
            settings.trustedProxies = try networks(proxies, key: "server.trusted_proxies")
        }
        if let budget = node["rejected_store_per_minute"] {
            settings.rejectedStorePerMinute = try integer(
                budget, key: "server.rejected_store_per_minute", in: 0...1_000_000, what: "a request count per client address (0 stores none)")
        }
        return settings
    }

    private func storeSettings(_ node: ConfigNode?, inlineSecrets: inout [String]) throws(ConfigError) -> StoreSettings {
        var settings = StoreSettings()
        guard let node, let pairs = try optionalMapping(node, key: "store") else { return settings }
        try checkKeys(pairs, allowed: Self.storeKeys, in: "store")
        if node["path"] != nil, node["postgres"] != nil {
            throw ConfigError(key: "store.postgres", "is set along with store.path; keep one: path for an SQLite file, postgres for a PostgreSQL database")
        }
        if let path = node["path"] { settings.path = resolver.configRelative(try nonEmptyString(path, key: "store.path")) }
        if let batch = node["max_batch"] {
            settings.maxBatch = try integer(batch, key: "store.max_batch", in: 1...4096, what: "a notification count")
        }
        if let postgres = node["postgres"] { settings.postgres = try postgresSettings(postgres, inlineSecrets: &inlineSecrets) }
        if let retention = node["retention"] { settings.retention = try retentionSettings(retention) }
        return settings
    }

    private func retentionSettings(_ node: ConfigNode) throws(ConfigError) -> RetentionSettings {
        var settings = RetentionSettings()
        guard let pairs = try optionalMapping(node, key: "store.retention") else { return settings }
        try checkKeys(pairs, allowed: ["rejected_days", "events_days"], in: "store.retention")
        if let days = node["rejected_days"] {
            settings.rejectedDays = try integer(days, key: "store.retention.rejected_days", in: 1...36_500, what: "a number of days")
        }
        if let days = node["events_days"] {
            settings.eventsDays = try integer(days, key: "store.retention.events_days", in: 1...36_500, what: "a number of days")
        }
        return settings
    }

    private func opsSettings(_ node: ConfigNode?) throws(ConfigError) -> OpsSettings {
        var settings = OpsSettings()
        guard let node, let pairs = try optionalMapping(node, key: "ops") else { return settings }
        try checkKeys(pairs, allowed: Self.opsKeys, in: "ops")
        if let host = node["host"] { settings.host = try hostName(host, key: "ops.host") }
        if let port = node["port"] { settings.port = try integer(port, key: "ops.port", in: 0...65535, what: "a TCP port") }
        // `[]`, as in product.md's sample, is allowed: the ops API then refuses every request
        // (serve warns at start).
        if let tokens = node["tokens_sha256"], !tokens.isEmptyList {
            let values = try stringList(tokens, key: "ops.tokens_sha256")
            settings.tokenDigests = try values.enumerated().map { index, value throws(ConfigError) in
                guard Hex.isHex(value, count: 64), let digest = Hex.decode(value) else {
                    throw ConfigError(key: "ops.tokens_sha256[\(index)]", "must be 64 hex characters: the SHA-256 of a bearer token")
                }
                // What `printf '%s' "$TOKEN" | sha256sum` prints with TOKEN unset: no token can match it.
                guard value.lowercased() != Self.emptyTokenDigest else {
                    throw ConfigError(key: "ops.tokens_sha256[\(index)]",
                                      "is the SHA-256 of an empty string, which no bearer token can match: hash the token itself")
                }
                return digest
            }
        }
        if let secure = node["console_secure_cookie"] { settings.consoleSecureCookie = try boolean(secure, key: "ops.console_secure_cookie") }
        return settings
    }

    // MARK: Providers

    private func providerAccounts(
        _ node: ConfigNode?,
        inlineSecrets: inout [String],
        names: inout [AccountName]
    ) throws(ConfigError) -> [ProviderAccount] {
        let known = ProviderRegistry.all.map { $0.name }
        guard let node, let pairs = try optionalMapping(node, key: "providers"), !pairs.isEmpty else {
            throw ConfigError(key: "providers", "no provider account is configured (known providers: \(known.joined(separator: ", ")))")
        }
        var accounts: [ProviderAccount] = []
        for (name, entries) in pairs {
            guard let type = ProviderRegistry.provider(named: name) else {
                throw ConfigError(key: "providers.\(name)", "unknown provider; known providers: \(known.joined(separator: ", "))")
            }
            guard case .sequence(let items, _) = entries, !items.isEmpty else {
                throw ConfigError(key: "providers.\(name)", "must be a list of accounts (- account: default ...), found \(entries.kindName)")
            }
            var seen = Set<String>()
            for (index, item) in items.enumerated() {
                let keyPath = "providers.\(name)[\(index)]"
                let (accountName, settings) = try accountSettings(type, item, keyPath: keyPath, inlineSecrets: &inlineSecrets)
                guard seen.insert(accountName).inserted else {
                    throw ConfigError(key: "\(keyPath).account", "\"\(accountName)\" is configured twice for \(name)")
                }
                names.append(AccountName(provider: type.name, account: accountName, asked: settings.inquiry != nil))
                guard secrets == .resolve else { continue }
                let provider: any NotificationProvider
                do {
                    provider = try type.init(settings: settings)
                } catch {
                    throw ConfigError(key: error.key, error.message)
                }
                let allowIPs = try item["allow_ips"].map { node throws(ConfigError) in try networks(node, key: "\(keyPath).allow_ips") }
                accounts.append(ProviderAccount(
                    providerName: type.name, name: accountName, keyPath: keyPath, allowIPs: allowIPs, provider: provider))
            }
        }
        return accounts
    }

    /// Validates one account entry and resolves its settings (secret files are read only when
    /// `secrets` is `.resolve`); returns the account name and the settings.
    private func accountSettings(
        _ type: any NotificationProvider.Type,
        _ node: ConfigNode,
        keyPath: String,
        inlineSecrets: inout [String]
    ) throws(ConfigError) -> (String, AccountSettings) {
        let pairs = try mapping(node, key: keyPath)
        var allowed = ["account", "allow_ips"]
        for key in type.accountKeys {
            allowed.append(key.name)
            if key.kind == .secret || key.kind == .keyMaterial { allowed.append(key.name + "_file") }
        }
        allowed.append("inquiry")
        try checkKeys(pairs, allowed: allowed, in: keyPath)

        var accountName = "default"
        if let value = node["account"] {
            accountName = try nonEmptyString(value, key: "\(keyPath).account")
            // "." and ".." are dot-segments: clients and proxies remove them from a URL's path
            // (RFC 3986 section 5.2.4), so no request could reach such an account.
            guard accountName.utf8.count <= 64, accountName != ".", accountName != "..",
                accountName.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
            else {
                throw ConfigError(key: "\(keyPath).account", "must be 1-64 letters, digits, '.', '_' or '-', and not '.' or '..' (it is a URL path segment)")
            }
        }
        if let allowIPs = node["allow_ips"] { _ = try networks(allowIPs, key: "\(keyPath).allow_ips") }

        var settings = AccountSettings(provider: type.name, account: accountName, keyPath: keyPath)
        for key in type.accountKeys {
            let keyName = "\(keyPath).\(key.name)"
            switch key.kind {
            case .secret, .keyMaterial:
                let inline = node[key.name]
                let fileNode = node[key.name + "_file"]
                if inline != nil, fileNode != nil {
                    throw ConfigError(key: keyName, "is set both inline and as \(key.name)_file; keep one")
                }
                var values: [String] = []
                if let inline {
                    values = try stringList(inline, key: keyName)
                    if key.kind == .secret { inlineSecrets.append(keyName) }
                } else if let fileNode {
                    let paths = try stringList(fileNode, key: keyName + "_file")
                    if secrets == .skip {
                        // Configured; its files are the service's business (LoadCredential=).
                        settings.lists[key.name] = paths.map { _ in "<not read>" }
                        continue
                    }
                    for (index, path) in paths.enumerated() {
                        let fileKey = paths.count > 1 ? "\(keyName)_file[\(index)]" : "\(keyName)_file"
                        values.append(try secretFile(resolver.credential(path), key: fileKey, isSecret: key.kind == .secret))
                    }
                }
                if let empty = values.firstIndex(where: \.isEmpty) {
                    throw ConfigError(key: values.count > 1 ? "\(keyName)[\(empty)]" : keyName, "is empty")
                }
                if !values.isEmpty { settings.lists[key.name] = values }
            case .string:
                if let value = node[key.name] { settings.strings[key.name] = try nonEmptyString(value, key: keyName) }
            case .fileContents:
                if let value = node[key.name] {
                    let path = resolver.configRelative(try nonEmptyString(value, key: keyName))
                    settings.strings[key.name] = secrets == .resolve ? try readFile(path, key: keyName) : "<not read>"
                }
            }
            if key.required, settings.lists[key.name] == nil, settings.strings[key.name] == nil {
                let hint = (key.kind == .secret || key.kind == .keyMaterial) ? " (inline or as \(key.name)_file)" : ""
                throw ConfigError(key: keyName, "is required\(hint)")
            }
        }
        settings.inquiry = try inquirySettings(type, node["inquiry"], keyPath: keyPath, inlineSecrets: &inlineSecrets)
        return (accountName, settings)
    }

    /// Reads a secret file: one secret, without its trailing line break. Secret files must not
    /// be world-readable.
    func secretFile(_ path: String, key: String, isSecret: Bool) throws(ConfigError) -> String {
        var text = try readFile(path, key: key)
        if isSecret, let mode = FileAccess.mode(of: path), FileAccess.readableByOthers(mode: mode) {
            throw ConfigError(key: key, "\(path) holds a secret but is world-readable (mode \(FileAccess.octal(mode))); run chmod o-r (or 600) on it")
        }
        // Bytes, not Characters: "\r\n" is a single Character in Swift.
        var bytes = Array(text.utf8)
        if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        text = String(decoding: bytes, as: UTF8.self)
        return text
    }

    func readFile(_ path: String, key: String) throws(ConfigError) -> String {
        let bytes: [UInt8]
        switch FileAccess.contents(of: path) {
        case .success(let contents): bytes = contents
        case .failure(let reason): throw ConfigError(key: key, "cannot read \(path): \(reason)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigError(key: key, "\(path) is not UTF-8 text")
        }
        return text
    }

    // MARK: Values

    func mapping(_ node: ConfigNode, key: String?) throws(ConfigError) -> [(key: String, value: ConfigNode)] {
        guard case .mapping(let pairs, _) = node else {
            throw ConfigError(key: key, "must be a mapping of keys, found \(node.kindName)")
        }
        return pairs
    }

    /// A section's pairs; nil when the section is present but empty (`server:`).
    func optionalMapping(_ node: ConfigNode, key: String) throws(ConfigError) -> [(key: String, value: ConfigNode)]? {
        if case .null = node { return nil }
        return try mapping(node, key: key)
    }

    func checkKeys(_ pairs: [(key: String, value: ConfigNode)], allowed: [String], in section: String?) throws(ConfigError) {
        for (key, _) in pairs where !allowed.contains(key) {
            let path = section.map { "\($0).\(key)" } ?? key
            throw ConfigError(key: path, "unknown key; \(section ?? "the top level") takes \(allowed.joined(separator: ", "))")
        }
    }

    func scalar(_ node: ConfigNode, key: String) throws(ConfigError) -> String {
        guard case .scalar(let text, _) = node else {
            throw ConfigError(key: key, "must be a single value, found \(node.kindName)")
        }
        return text
    }

    func nonEmptyString(_ node: ConfigNode, key: String) throws(ConfigError) -> String {
        let text = try scalar(node, key: key)
        guard !text.isEmpty else { throw ConfigError(key: key, "is empty") }
        return text
    }

    /// A listener's address: an IP address as `getaddrinfo` takes it (IPv6 without brackets) or
    /// a host name of RFC 1123 labels. `999.999.1.1` is neither: it used to pass here and stop
    /// `serve` at bind time without naming the key.
    func hostName(_ node: ConfigNode, key: String) throws(ConfigError) -> String {
        let text = try nonEmptyString(node, key: key)
        if text.hasPrefix("[") {
            throw ConfigError(key: key, "\"\(text.prefix(80))\": write an IPv6 address without brackets, e.g. ::1")
        }
        guard IPAddress(text) != nil || Self.isHostName(text) else {
            throw ConfigError(key: key, "\"\(text.prefix(80))\" is neither an IP address nor a host name (e.g. 127.0.0.1, ::1, localhost)")
        }
        return text
    }

    /// RFC 1123 host name syntax: dot-separated labels of 1-63 letters, digits and inner
    /// hyphens, 253 characters at most, and a last label that is not all digits (so a mistyped
    /// IPv4 address is not taken for a name).
    static func isHostName(_ text: String) -> Bool {
        let name = text.hasSuffix(".") ? text.dropLast() : Substring(text)
        guard (1...253).contains(name.utf8.count) else { return false }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
        let hyphen = UInt8(ascii: "-")
        for label in labels {
            let bytes = label.utf8
            guard (1...63).contains(bytes.count), bytes.first != hyphen, bytes.last != hyphen,
                bytes.allSatisfy({ digits.contains($0) || $0 == hyphen || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0 | 0x20) })
            else { return false }
        }
        return labels.last.map { !$0.utf8.allSatisfy(digits.contains) } ?? false
    }

    func integer(_ node: ConfigNode, key: String, in range: ClosedRange<Int>, what: String) throws(ConfigError) -> Int {
        let text = (try? scalar(node, key: key)) ?? ""
        guard let value = Int(text), range.contains(value) else {
            let shown = text.isEmpty ? node.kindName : "\"\(text.prefix(40))\""
            throw ConfigError(key: key, "must be \(what), an integer from \(range.lowerBound) to \(range.upperBound); got \(shown)")
        }
        return value
    }

    /// `true` or `false`, exactly.
    func boolean(_ node: ConfigNode, key: String) throws(ConfigError) -> Bool {
        switch try? scalar(node, key: key) {
        case "true": return true
        case "false": return false
        case let text?: throw ConfigError(key: key, "must be true or false; got \"\(text.prefix(40))\"")
        case nil: throw ConfigError(key: key, "must be true or false; got \(node.kindName)")
        }
    }

    /// A readable PEM file of CA certificates, relative to the config directory; its absolute
    /// path.
    func caFile(_ node: ConfigNode, key: String) throws(ConfigError) -> String {
        let path = resolver.configRelative(try nonEmptyString(node, key: key))
        let text = try readFile(path, key: key)
        guard text.contains("-----BEGIN CERTIFICATE-----") else {
            throw ConfigError(key: key, "\(path) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        return path
    }

    /// A list of strings; a single value is a one-element list.
    func stringList(_ node: ConfigNode, key: String) throws(ConfigError) -> [String] {
        switch node {
        case .scalar(let text, _):
            return [text]
        case .sequence(let items, _):
            guard !items.isEmpty else { throw ConfigError(key: key, "is an empty list") }
            return try items.enumerated().map { index, item throws(ConfigError) in
                guard case .scalar(let text, _) = item else {
                    throw ConfigError(key: "\(key)[\(index)]", "must be a single value, found \(item.kindName)")
                }
                return text
            }
        case .null:
            throw ConfigError(key: key, "is empty")
        case .mapping:
            throw ConfigError(key: key, "must be a value or a list of values, found a mapping")
        }
    }

    func networks(_ node: ConfigNode, key: String) throws(ConfigError) -> [IPNetwork] {
        if node.isEmptyList { return [] }
        let values = try stringList(node, key: key)
        return try values.enumerated().map { index, value throws(ConfigError) in
            guard let network = IPNetwork(value) else {
                throw ConfigError(key: "\(key)[\(index)]", "\"\(value.prefix(60))\" is not an IP address or CIDR block")
            }
            return network
        }
    }
}
