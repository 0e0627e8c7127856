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

/// `IPND_` environment variables override scalar keys: `IPND_SERVER_PORT=9000` sets
/// `server.port`, `IPND_STORE_POSTGRES_HOST=db2` sets `store.postgres.host`; list keys take
/// comma-separated values. A variable that looks like an override but names no key is an
/// error, so a typo cannot silently do nothing. Secrets never come from the environment (a
/// process's environment is readable in more places than a credential file).
enum EnvironmentOverrides {
    struct Key {
        /// The key's path, section first: `["store", "postgres", "host"]`.
        let components: [String]
        let isList: Bool

        init(_ path: String, isList: Bool = false) {
            components = path.split(separator: ".").map(String.init)
            self.isList = isList
        }

        var path: String { components.joined(separator: ".") }
        var variable: String { "IPND_" + components.joined(separator: "_").uppercased() }
    }

    static let keys: [Key] = [
        Key("server.host"),
        Key("server.port"),
        Key("server.max_body_bytes"),
        Key("server.request_timeout_seconds"),
        Key("server.idle_timeout_seconds"),
        Key("server.trusted_proxies", isList: true),
        Key("server.rejected_store_per_minute"),
        Key("store.path"),
        Key("store.max_batch"),
        Key("store.postgres.host"),
        Key("store.postgres.port"),
        Key("store.postgres.database"),
        Key("store.postgres.user"),
        Key("store.postgres.password_file"),
        Key("store.postgres.tls"),
        Key("store.postgres.ca_file"),
        Key("store.postgres.pool_size"),
        Key("store.retention.rejected_days"),
        Key("store.retention.events_days"),
        Key("ops.host"),
        Key("ops.port"),
        Key("ops.tokens_sha256", isList: true),
        Key("ops.console_secure_cookie"),
        Key("reconcile.schedule", isList: true),
        Key("reconcile.give_up_after"),
        Key("reconcile.max_in_flight"),
        Key("reconcile.per_account_per_minute"),
        Key("reconcile.timeout_seconds"),
    ]

    private static let overridablePrefixes = [
        "IPND_SERVER_", "IPND_STORE_", "IPND_OPS_", "IPND_PROVIDERS_", "IPND_DELIVERIES_", "IPND_RECONCILE_",
    ]

    /// Variables refused with a reason of their own: they would carry a secret or a structure.
    private static func refusal(_ variable: String) -> String? {
        if variable == "IPND_STORE_POSTGRES_PASSWORD" {
            return "the database password cannot come from the environment; use store.postgres.password_file (LoadCredential=)"
        }
        if variable.hasPrefix("IPND_PROVIDERS_") {
            return "provider settings (inquiry sections included) cannot come from the environment; use NAME_file secrets (LoadCredential=)"
        }
        if variable.hasPrefix("IPND_DELIVERIES_") {
            return "delivery targets cannot come from the environment; write them under deliveries, with secret_file for their secrets"
        }
        return nil
    }

    /// The variable in `environment` that set `key` (or an item of it), if one did.
    static func variable(overriding key: String, in environment: [String: String]) -> String? {
        keys.first { ($0.path == key || key.hasPrefix($0.path + "[")) && environment[$0.variable] != nil }?.variable
    }

    static func apply(_ environment: [String: String], to root: inout ConfigNode) throws(ConfigError) {
        guard case .mapping = root else { return }  // the validator reports a non-mapping root
        for (variable, value) in environment.sorted(by: { $0.key < $1.key })
        where overridablePrefixes.contains(where: { variable.hasPrefix($0) }) {
            guard let key = keys.first(where: { $0.variable == variable }) else {
                throw ConfigError(key: variable, refusal(variable) ?? "names no config key; overridable: \(keys.map(\.variable).joined(separator: ", "))")
            }
            let node: ConfigNode = key.isList
                ? .sequence(value.split(separator: ",").map { ConfigNode.scalar($0.trimmingCharacters(in: " "), line: nil) }, line: nil)
                : .scalar(value, line: nil)
            root = try setting(node, at: key.components[...], in: root, walked: [])
        }
    }

    /// `node` with `value` at `path`, creating the mappings on the way; a non-mapping on the way
    /// is an error naming it.
    private static func setting(_ value: ConfigNode, at path: ArraySlice<String>, in node: ConfigNode, walked: [String]) throws(ConfigError) -> ConfigNode {
        var node = node
        if case .null = node { node = .mapping([], line: nil) }
        guard case .mapping = node else {
            throw ConfigError(key: walked.joined(separator: "."), "must be a mapping, found \(node.kindName)")
        }
        guard let name = path.first else { return value }
        let rest = path.dropFirst()
        if rest.isEmpty {
            node.set(name, to: value)
        } else {
            node.set(name, to: try setting(value, at: rest, in: node[name] ?? .mapping([], line: nil), walked: walked + [name]))
        }
        return node
    }
}

extension Substring {
    func trimmingCharacters(in set: Character) -> String {
        var result = self
        while result.first == set { result.removeFirst() }
        while result.last == set { result.removeLast() }
        return String(result)
    }
}
