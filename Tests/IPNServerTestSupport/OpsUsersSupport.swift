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
import NIOHTTP1
import Testing

/// Three named users, one per role, for the access tests.
enum OpsUsersFixture {
    static let users: [(name: String, role: OpsRole, token: String)] = [
        ("vera@example.com", .viewer, "viewer-token-43"),
        ("otto@example.com", .operator, "operator-token-43"),
        ("ada@example.com", .admin, "admin-token-43"),
    ]

    static func token(_ role: OpsRole) -> String { users.first { $0.role == role }!.token }
    static func name(_ role: OpsRole) -> String { users.first { $0.role == role }!.name }

    static func digest(_ token: String) -> String { Hex.encode(Crypto.digest(.sha256, Array(token.utf8))) }

    /// `ops.users` as the test daemon's `opsYAML` takes it (its first line indented by the caller).
    static func yaml(_ chosen: [(name: String, role: OpsRole, token: String)] = users, extra: String = "") -> String {
        "users:\n" + chosen.map { user in
            "    - name: \(user.name)\n      role: \(user.role)\n      token_sha256: \"\(digest(user.token))\"\n"
        }.joined() + extra
    }
}

extension TestDaemon {
    /// What a change through the ops listener would alter, read from the store: orders and their
    /// expectations, notifications, inquiries, deliveries and paused targets.
    func changeFingerprint() throws -> [Int] {
        [
            try count("SELECT COUNT(*) FROM orders"),
            try count("SELECT COUNT(*) FROM orders WHERE expected_amount_minor IS NOT NULL"),
            try count("SELECT COUNT(*) FROM notifications"),
            try count("SELECT COUNT(*) FROM inquiries"),
            try count("SELECT COUNT(*) FROM deliveries WHERE state = 'pending'"),
            try count("SELECT COUNT(*) FROM delivery_targets WHERE paused_at IS NOT NULL"),
            try count("SELECT COUNT(*) FROM audit_records WHERE action NOT IN ('auth.forbidden', 'auth.refused', 'console.sign_in', 'console.sign_out', 'notification.raw_read')"),
        ]
    }

    /// The audit records of `action`, newest first, as `(actor, role, outcome, target)`.
    func auditRows(_ action: String) throws -> [[String?]] {
        try rows("SELECT actor, role, outcome, target, detail FROM audit_records WHERE action = ? ORDER BY id DESC", [action])
    }
}
