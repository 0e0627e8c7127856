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

/// `ops.users` and `ops.proxy_auth` (README, "Who may do what").
extension Validator {
    /// A token digest as configured: 64 hex characters, not the digest of an empty string.
    func tokenDigest(_ value: String, key: String) throws(ConfigError) -> [UInt8] {
        guard Hex.isHex(value, count: 64), let digest = Hex.decode(value) else {
            throw ConfigError(key: key, "must be 64 hex characters: the SHA-256 of a bearer token")
        }
        // What `printf '%s' "$TOKEN" | sha256sum` prints with TOKEN unset: no token can match it.
        guard value.lowercased() != Self.emptyTokenDigest else {
            throw ConfigError(key: key, "is the SHA-256 of an empty string, which no bearer token can match: hash the token itself")
        }
        return digest
    }

    func role(_ node: ConfigNode, key: String) throws(ConfigError) -> OpsRole {
        let text = try scalar(node, key: key)
        guard let role = OpsRole(rawValue: text) else {
            throw ConfigError(key: key, "\"\(text.prefix(40))\" is not a role; roles: viewer, operator, admin")
        }
        return role
    }

    func opsUsers(_ node: ConfigNode) throws(ConfigError) -> [OpsUser] {
        if node.isEmptyList { return [] }
        guard case .sequence(let items, _) = node else {
            throw ConfigError(key: "ops.users", "must be a list of users (- name: alice@example.com, role: operator, token_sha256: ...), found \(node.kindName)")
        }
        var users: [OpsUser] = []
        for (index, item) in items.enumerated() {
            let keyPath = "ops.users[\(index)]"
            let pairs = try mapping(item, key: keyPath)
            try checkKeys(pairs, allowed: ["name", "role", "token_sha256"], in: keyPath)
            guard let nameNode = item["name"] else { throw ConfigError(key: "\(keyPath).name", "is required") }
            let name = try nonEmptyString(nameNode, key: "\(keyPath).name")
            guard OpsUser.isValidName(name) else {
                throw ConfigError(key: "\(keyPath).name", "\"\(name.prefix(40))\" must be 1-128 characters of A-Z a-z 0-9 . _ @ + -")
            }
            if let earlier = users.firstIndex(where: { $0.name == name }) {
                throw ConfigError(key: "\(keyPath).name", "\"\(name)\" is already the name of ops.users[\(earlier)]")
            }
            guard let roleNode = item["role"] else { throw ConfigError(key: "\(keyPath).role", "is required (viewer, operator or admin)") }
            let role = try role(roleNode, key: "\(keyPath).role")
            guard let tokens = item["token_sha256"] else {
                throw ConfigError(key: "\(keyPath).token_sha256", "is required: the SHA-256 of the user's token (ipnd token new prints it)")
            }
            let values = try stringList(tokens, key: "\(keyPath).token_sha256")
            let digests = try values.enumerated().map { offset, value throws(ConfigError) in
                try tokenDigest(value, key: values.count > 1 ? "\(keyPath).token_sha256[\(offset)]" : "\(keyPath).token_sha256")
            }
            users.append(OpsUser(name: name, role: role, digests: digests))
        }
        return users
    }

    /// A token identifies one user: the same digest twice is refused, naming both places.
    func checkDistinctDigests(_ settings: OpsSettings) throws(ConfigError) {
        var seen: [[UInt8]: String] = [:]
        for (index, user) in settings.users.enumerated() {
            for digest in user.digests {
                if let earlier = seen[digest] {
                    throw ConfigError(key: "ops.users[\(index)].token_sha256", "lists a digest \(earlier) already lists: a token identifies one user")
                }
                seen[digest] = "ops.users[\(index)]"
            }
        }
        for (index, digest) in settings.tokenDigests.enumerated() {
            if let earlier = seen[digest] {
                throw ConfigError(key: "ops.tokens_sha256[\(index)]", "is a digest \(earlier) already lists: a token identifies one user")
            }
            seen[digest] = "ops.tokens_sha256"
        }
    }

    func proxyAuth(_ node: ConfigNode) throws(ConfigError) -> ProxyAuthSettings? {
        let key = "ops.proxy_auth"
        guard let pairs = try optionalMapping(node, key: key) else { return nil }
        try checkKeys(pairs, allowed: ["trusted_proxies", "user_header", "groups_header", "roles", "users"], in: key)
        guard let proxies = node["trusted_proxies"] else {
            throw ConfigError(key: "\(key).trusted_proxies", "is required: the addresses of the proxies whose identity headers ipnd believes")
        }
        let trusted = try networks(proxies, key: "\(key).trusted_proxies")
        guard !trusted.isEmpty else {
            throw ConfigError(key: "\(key).trusted_proxies", "is empty: name the proxies whose identity headers ipnd believes (127.0.0.1/32)")
        }
        guard let userNode = node["user_header"] else {
            throw ConfigError(key: "\(key).user_header", "is required: the header naming the person (X-Auth-Request-Email)")
        }
        let userHeader = try headerName(userNode, key: "\(key).user_header")
        let groupsHeader = try node["groups_header"].map { node throws(ConfigError) in try headerName(node, key: "\(key).groups_header") }
        var roles: [(group: String, role: OpsRole)] = []
        if let rolesNode = node["roles"], let rolePairs = try optionalMapping(rolesNode, key: "\(key).roles") {
            for (group, value) in rolePairs {
                let groupKey = "\(key).roles.\(group)"
                guard !group.isEmpty, !group.contains(",") else { throw ConfigError(key: groupKey, "a group name has no comma and is not empty") }
                roles.append((group, try role(value, key: groupKey)))
            }
        }
        var users: [String: OpsRole] = [:]
        if let usersNode = node["users"], let userPairs = try optionalMapping(usersNode, key: "\(key).users") {
            for (person, value) in userPairs {
                guard !person.isEmpty else { throw ConfigError(key: "\(key).users", "a person's name is empty") }
                users[person] = try role(value, key: "\(key).users.\(person)")
            }
        }
        if groupsHeader == nil, !roles.isEmpty {
            throw ConfigError(key: "\(key).roles", "maps groups, but no groups_header says which groups a person is in")
        }
        return ProxyAuthSettings(trustedProxies: trusted, userHeader: userHeader, groupsHeader: groupsHeader, roles: roles, users: users)
    }

    /// An HTTP header name (RFC 9110 token characters).
    func headerName(_ node: ConfigNode, key: String) throws(ConfigError) -> String {
        let name = try nonEmptyString(node, key: key)
        let allowed = "!#$%&'*+-.^_`|~"
        guard name.utf8.count <= 128, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || allowed.contains($0)) }) else {
            throw ConfigError(key: key, "\"\(name.prefix(40))\" is not an HTTP header name")
        }
        return name
    }
}
