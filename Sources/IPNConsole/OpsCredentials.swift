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

import IPNConfig
import IPNCore

/// Who a bearer token identifies: the users of `ops.users` and an admin per digest of
/// `ops.tokens_sha256` (`IPNDConfig.ops.tokenHolders`). One instance is shared by the ops API's
/// bearer check and the console's sign-in and sessions, so a reload that replaces the users
/// takes effect for both at once: a removed user or digest loses the API at once, and their
/// console sessions end at their next request; a changed role applies from the next request.
public final class OpsCredentials: Sendable {
    private let users: Locked<[OpsUser]>

    public init(users: [OpsUser]) {
        self.users = Locked(users)
    }

    /// The users from now on.
    public func replace(users: [OpsUser]) {
        self.users.withLock { $0 = users }
    }

    /// Whether no token is accepted at all.
    public var isEmpty: Bool { users.withLock { $0.allSatisfy(\.digests.isEmpty) } }

    /// The user `token` identifies and the digest it hashes to; nil when no one's. Compared in
    /// constant time against every digest of every user, with no early exit: the time taken
    /// says nothing about which one matched, if any.
    public func holder(token: String) -> (user: OpsUser, digest: [UInt8])? {
        let digest = Crypto.digest(.sha256, Array(token.utf8))
        var found: OpsUser?
        for user in users.withLock({ $0 }) {
            for accepted in user.digests where Crypto.constantTimeEquals(digest, accepted) {
                found = user
            }
        }
        return found.map { ($0, digest) }
    }

    /// The user called `name` when one of their digests `matches` (a session names the digest
    /// it signed in with by a keyed hash of it). Every digest of theirs is tried.
    func user(named name: String, holding matches: ([UInt8]) -> Bool) -> OpsUser? {
        guard let user = users.withLock({ $0.first { $0.name == name } }) else { return nil }
        var matched = false
        for digest in user.digests where matches(digest) {
            matched = true
        }
        return matched ? user : nil
    }
}
