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
import ArgumentParser
import IPNConfig
import IPNCore

/// `ipnd token new`: a fresh ops token, printed once, and the config lines that accept it.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Make ops tokens.", subcommands: [NewToken.self])
}

struct NewToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Print a new random ops token once, and the ops.users lines that accept it.",
        discussion: "The token is 32 random bytes, base64url (43 characters). Only its SHA-256 goes in the config: "
            + "ipnd never stores the token itself, so keep it where its user keeps secrets.")

    @Option(help: "The user's name (1-128 characters of A-Z a-z 0-9 . _ @ + -).")
    var name: String = "NAME"

    @Option(help: "viewer, operator or admin.")
    var role: String = "viewer"

    func validate() throws {
        guard OpsUser.isValidName(name) else {
            throw ValidationError("--name \"\(name.prefix(40))\" must be 1-128 characters of A-Z a-z 0-9 . _ @ + -")
        }
        guard OpsRole(rawValue: role) != nil else { throw ValidationError("--role must be viewer, operator or admin") }
    }

    func run() async throws {
        let (token, digest) = Self.make()
        Console.output("""
            token: \(token)
            (shown once: ipnd keeps only its SHA-256; give it to \(name) and keep it secret)

            # in ops.users of the config, then reload (systemctl reload ipnd):
              - name: \(name)
                role: \(role)
                token_sha256: "\(digest)"
            """)
    }

    /// 32 bytes from the system's random source, base64url without padding, and its SHA-256 in hex.
    static func make() -> (token: String, digest: String) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let token = Base64.encode(bytes).replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return (token, Hex.encode(Crypto.digest(.sha256, Array(token.utf8))))
    }
}
