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

/// The ops tokens ipnd accepts, by their SHA-256 (`ops.tokens_sha256`): one instance shared by
/// the ops API's bearer check and the console's sign-in, so replacing the digests (a config
/// reload) takes effect for both at once, and ends console sessions signed in with a token
/// that is no longer accepted.
public final class OpsCredentials: Sendable {
    private let digests: Locked<[[UInt8]]>

    /// - Parameter digests: SHA-256 digests of the accepted tokens.
    public init(digests: [[UInt8]]) {
        self.digests = Locked(digests)
    }

    /// The digests accepted from now on.
    public func replace(digests: [[UInt8]]) {
        self.digests.withLock { $0 = digests }
    }

    /// Whether no token is accepted at all (every request is refused).
    public var isEmpty: Bool { digests.withLock { $0.isEmpty } }

    /// Whether `token`'s SHA-256 is one of the accepted digests. Compared in constant time
    /// against every digest, with no early exit: the time taken says nothing about which one
    /// matched, if any.
    public func accepts(token: String) -> Bool {
        acceptedDigest(token: token) != nil
    }

    /// The accepted digest `token` hashes to, nil when it is not accepted.
    public func acceptedDigest(token: String) -> [UInt8]? {
        let digest = Crypto.digest(.sha256, Array(token.utf8))
        var matched = false
        for accepted in digests.withLock({ $0 }) where Crypto.constantTimeEquals(digest, accepted) {
            matched = true
        }
        return matched ? digest : nil
    }

    /// Whether any accepted digest `matches` (a session names the digest it signed in with by
    /// a keyed hash of it). Every digest is tried.
    func acceptsAny(where matches: ([UInt8]) -> Bool) -> Bool {
        var matched = false
        for accepted in digests.withLock({ $0 }) where matches(accepted) {
            matched = true
        }
        return matched
    }
}
