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

import IPNCore

/// `store.postgres` (product.md section 9).
extension Validator {
    private static let postgresKeys = ["host", "port", "database", "user", "password", "password_file", "tls", "ca_file", "pool_size"]

    /// The database settings. The password is read (from `password_file` too) whatever
    /// `secrets` says: every command that opens the store needs it.
    func postgresSettings(_ node: ConfigNode, inlineSecrets: inout [String]) throws(ConfigError) -> PostgresSettings {
        let section = "store.postgres"
        let pairs = try mapping(node, key: section)
        try checkKeys(pairs, allowed: Self.postgresKeys, in: section)
        func required(_ name: String) throws(ConfigError) -> ConfigNode {
            guard let value = node[name] else { throw ConfigError(key: "\(section).\(name)", "is required") }
            return value
        }
        let host = try databaseHost(try required("host"), key: "\(section).host")
        let database = try identifier(try required("database"), key: "\(section).database")
        let user = try identifier(try required("user"), key: "\(section).user")
        var settings = PostgresSettings(host: host, database: database, user: user)
        if let port = node["port"] { settings.port = try integer(port, key: "\(section).port", in: 1...65535, what: "a TCP port") }
        if let size = node["pool_size"] {
            settings.poolSize = try integer(size, key: "\(section).pool_size", in: 1...256, what: "a connection count")
        }

        let passwordKey = "\(section).password"
        switch (node["password"], node["password_file"]) {
        case (.some, .some):
            throw ConfigError(key: passwordKey, "is set both inline and as password_file; keep one")
        case (let inline?, nil):
            let password = try scalar(inline, key: passwordKey)
            guard !password.isEmpty else { throw ConfigError(key: passwordKey, "is empty; leave it out for peer or certificate authentication") }
            inlineSecrets.append(passwordKey)
            settings.password = password
        case (nil, let file?):
            let fileKey = "\(passwordKey)_file"
            let password = try secretFile(resolver.credential(try nonEmptyString(file, key: fileKey)), key: fileKey, isSecret: true)
            guard !password.isEmpty else { throw ConfigError(key: fileKey, "names an empty file") }
            settings.password = password
        case (nil, nil):
            break
        }

        if let tls = node["tls"] {
            let text = (try? scalar(tls, key: "\(section).tls")) ?? ""
            guard let mode = PostgresSettings.TLSMode(rawValue: text) else {
                throw ConfigError(key: "\(section).tls", "must be require, prefer or disable; got \(text.isEmpty ? tls.kindName : "\"\(text.prefix(40))\"")")
            }
            if mode == .disable, !settings.isUnixSocket, !Self.isLoopback(settings.host) {
                throw ConfigError(
                    key: "\(section).tls",
                    "disable is only allowed for a unix socket directory or a loopback address (127.0.0.1, ::1, localhost), not for \(settings.host): the password and every row would cross the network in the clear")
            }
            settings.tls = mode
        }
        if let file = node["ca_file"] {
            guard settings.tls != .disable else {
                throw ConfigError(key: "\(section).ca_file", "is set but tls is disable; remove one of them")
            }
            settings.caFile = try caFile(file, key: "\(section).ca_file")
        }
        return settings
    }

    /// A host name, an IP address, or the absolute path of a unix socket directory.
    private func databaseHost(_ node: ConfigNode, key: String) throws(ConfigError) -> String {
        let text = try nonEmptyString(node, key: key)
        if text.hasPrefix("/") { return PathResolver.absolute(text, relativeTo: "/") }
        guard !text.contains("/") else {
            throw ConfigError(key: key, "a unix socket directory must be an absolute path, such as /run/postgresql")
        }
        let bare = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
        guard IPAddress(bare) != nil || Self.isHostName(bare) else {
            throw ConfigError(key: key, "\"\(text.prefix(80))\" is neither a host name, an IP address nor an absolute unix socket directory")
        }
        return bare
    }

    /// A database or role name: 1-63 bytes (PostgreSQL's NAMEDATALEN), no control characters.
    private func identifier(_ node: ConfigNode, key: String) throws(ConfigError) -> String {
        let text = try nonEmptyString(node, key: key)
        guard text.utf8.count <= 63, !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw ConfigError(key: key, "must be 1 to 63 bytes without control characters (a PostgreSQL name)")
        }
        return text
    }

    /// 127.0.0.0/8, ::1 or `localhost` (which RFC 6761 keeps for the loopback interface).
    static func isLoopback(_ host: String) -> Bool {
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        if name.lowercased() == "localhost" { return true }
        guard let address = IPAddress(host) else { return false }
        if address.isIPv4 { return address.bytes[0] == 127 }
        return address.bytes == Array(repeating: 0, count: 15) + [1]
    }
}
