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

/// A named person or application with ops tokens of their own (`ops.users`), or one digest of
/// `ops.tokens_sha256` (an admin named `token:` and the digest's first 12 hex digits).
public struct OpsUser: Sendable, Equatable {
    /// 1-128 characters of A-Z a-z 0-9 . _ @ + -, unique.
    public var name: String
    public var role: OpsRole
    /// The SHA-256 digests of the user's tokens (several while one is rotated).
    public var digests: [[UInt8]]

    public init(name: String, role: OpsRole, digests: [[UInt8]]) {
        self.name = name
        self.role = role
        self.digests = digests
    }

    /// The admin a digest of `ops.tokens_sha256` stands for: `token:` and its first 12 hex digits.
    public static func legacy(digest: [UInt8]) -> OpsUser {
        OpsUser(name: "token:" + Hex.encode(Array(digest.prefix(6))), role: .admin, digests: [digest])
    }

    /// Whether `name` is a user name the config accepts.
    public static func isValidName(_ name: String) -> Bool {
        (1...128).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "+"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }
}

/// `ops.proxy_auth`: the person an authenticating proxy in front of ipnd names in a header
/// (oauth2-proxy behind nginx `auth_request`, say), believed only from `trustedProxies`.
public struct ProxyAuthSettings: Sendable, Equatable {
    /// The peers whose identity headers are believed; any other address's are ignored.
    public var trustedProxies: [IPNetwork]
    /// The header naming the person (`X-Auth-Request-Email`).
    public var userHeader: String
    /// The header listing the person's groups, comma-separated; nil when there is none.
    public var groupsHeader: String?
    /// Group -> role, in config order.
    public var roles: [(group: String, role: OpsRole)]
    /// Person -> role, overriding the groups.
    public var users: [String: OpsRole]

    public init(trustedProxies: [IPNetwork], userHeader: String, groupsHeader: String? = nil,
                roles: [(group: String, role: OpsRole)] = [], users: [String: OpsRole] = [:]) {
        self.trustedProxies = trustedProxies
        self.userHeader = userHeader
        self.groupsHeader = groupsHeader
        self.roles = roles
        self.users = users
    }

    public static func == (lhs: ProxyAuthSettings, rhs: ProxyAuthSettings) -> Bool {
        lhs.trustedProxies == rhs.trustedProxies && lhs.userHeader == rhs.userHeader && lhs.groupsHeader == rhs.groupsHeader
            && lhs.roles.map(\.group) == rhs.roles.map(\.group) && lhs.roles.map(\.role) == rhs.roles.map(\.role)
            && lhs.users == rhs.users
    }

    /// The role of `person` whose groups header fields are `groupFields`: their entry in
    /// `users`, else the highest role any of their groups maps to (each field a comma-separated
    /// list, each group trimmed of spaces); nil when none does.
    public func role(person: String, groupFields: [String]) -> OpsRole? {
        if let role = users[person] { return role }
        var best: OpsRole?
        for field in groupFields {
            for item in field.split(separator: ",") {
                let group = item.trimmingCharacters(in: " \t")
                guard !group.isEmpty else { continue }
                for mapping in roles where mapping.group == group {
                    best = max(best ?? mapping.role, mapping.role)
                }
            }
        }
        return best
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var result = self
        while let first = result.first, set.contains(first) { result.removeFirst() }
        while let last = result.last, set.contains(last) { result.removeLast() }
        return String(result)
    }
}
