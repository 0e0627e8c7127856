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
import IPNConfig
import IPNCore
import Testing

@Suite("Config: ops.users, ops.proxy_auth, store.retention.audit_days (issue 43)")
struct OpsAccessConfigTests {
    static let digestA = String(repeating: "a", count: 64)
    static let digestB = String(repeating: "b", count: 64)

    func load(_ ops: String, store: String = "") throws -> IPNDConfig {
        try ConfigDirectory().load("ops:\n" + ops + "\n" + store + minimalProviders)
    }

    func error(_ ops: String, store: String = "") throws -> ConfigError? {
        try ConfigDirectory().error("ops:\n" + ops + "\n" + store + minimalProviders)
    }

    @Test("users with a digest or a list of them; tokens_sha256 entries are admins named token: + 12 hex digits")
    func users() throws {
        let config = try load("""
              tokens_sha256: [\(Self.digestA)]
              users:
                - name: alice@example.com
                  role: operator
                  token_sha256: [\(Self.digestB), \(String(repeating: "c", count: 64))]
                - name: orders-app
                  role: viewer
                  token_sha256: \(String(repeating: "d", count: 64))
            """)
        #expect(config.ops.users.map(\.name) == ["alice@example.com", "orders-app"])
        #expect(config.ops.users.map(\.role) == [.operator, .viewer])
        #expect(config.ops.users[0].digests.count == 2)
        let holders = config.ops.tokenHolders
        #expect(holders.last == OpsUser(name: "token:aaaaaaaaaaaa", role: .admin, digests: [Hex.decode(Self.digestA)!]))
    }

    @Test("a bad user names the key: name, role, digest, a digest listed twice")
    func badUsers() throws {
        let cases: [(String, String, String)] = [
            ("    - name: al ice\n      role: viewer\n      token_sha256: \(Self.digestA)", "ops.users[0].name", "A-Z a-z 0-9"),
            ("    - name: alice\n      role: root\n      token_sha256: \(Self.digestA)", "ops.users[0].role", "viewer, operator, admin"),
            ("    - name: alice\n      role: viewer", "ops.users[0].token_sha256", "ipnd token new"),
            ("    - name: alice\n      role: viewer\n      token_sha256: abc", "ops.users[0].token_sha256", "64 hex"),
            ("    - name: alice\n      role: viewer\n      token_sha256: \(Self.digestA)\n    - name: alice\n      role: admin\n      token_sha256: \(Self.digestB)",
             "ops.users[1].name", "already"),
            ("    - name: alice\n      role: viewer\n      token_sha256: \(Self.digestA)\n    - name: bob\n      role: admin\n      token_sha256: \(Self.digestA)",
             "ops.users[1].token_sha256", "identifies one user"),
            ("    - name: alice\n      role: viewer\n      token_sha256: \(Self.digestA)\n      password: x", "ops.users[0].password", "unknown key"),
        ]
        for (users, key, words) in cases {
            let error = try #require(try error("  users:\n" + users), "\(users) loaded")
            #expect(error.key == key, "\(error)")
            #expect(error.message.contains(words), "\(error)")
        }
    }

    @Test("proxy_auth: roles by group, highest wins, groups trimmed, users override; required keys named")
    func proxyAuth() throws {
        let config = try load("""
              proxy_auth:
                trusted_proxies: [127.0.0.1/32]
                user_header: X-Auth-Request-Email
                groups_header: X-Auth-Request-Groups
                roles:
                  payments ops: operator
                  support: viewer
                  payments-admins: admin
                users:
                  carol@example.com: viewer
            """)
        let proxy = try #require(config.ops.proxyAuth)
        #expect(proxy.role(person: "pat", groupFields: [" support , payments ops"]) == .operator)
        #expect(proxy.role(person: "pat", groupFields: ["support", "payments-admins,x"]) == .admin)
        #expect(proxy.role(person: "pat", groupFields: ["marketing", ""]) == nil)
        #expect(proxy.role(person: "pat", groupFields: []) == nil)
        #expect(proxy.role(person: "carol@example.com", groupFields: ["payments-admins"]) == .viewer)

        let missing: [(String, String)] = [
            ("    user_header: X-User", "ops.proxy_auth.trusted_proxies"),
            ("    trusted_proxies: []\n    user_header: X-User", "ops.proxy_auth.trusted_proxies"),
            ("    trusted_proxies: [127.0.0.1/32]", "ops.proxy_auth.user_header"),
            ("    trusted_proxies: [127.0.0.1/32]\n    user_header: \"X User\"", "ops.proxy_auth.user_header"),
            ("    trusted_proxies: [127.0.0.1/32]\n    user_header: X-User\n    groups_header: X-Groups\n    roles:\n      support: boss",
             "ops.proxy_auth.roles.support"),
            ("    trusted_proxies: [127.0.0.1/32]\n    user_header: X-User\n    roles:\n      support: viewer", "ops.proxy_auth.roles"),
            ("    trusted_proxies: [not-a-cidr]\n    user_header: X-User", "ops.proxy_auth.trusted_proxies[0]"),
        ]
        for (body, key) in missing {
            let error = try #require(try error("  proxy_auth:\n" + body), "\(body) loaded")
            #expect(error.key == key, "\(body): \(error)")
        }
    }

    @Test("store.retention.audit_days: 400 by default, at least 365")
    func auditDays() throws {
        #expect(try load("  host: 127.0.0.1").store.retention.auditDays == 400)
        #expect(try load("  host: 127.0.0.1", store: "store:\n  retention:\n    audit_days: 365\n").store.retention.auditDays == 365)
        let error = try #require(try error("  host: 127.0.0.1", store: "store:\n  retention:\n    audit_days: 30\n"))
        #expect(error.key == "store.retention.audit_days")
    }
}
