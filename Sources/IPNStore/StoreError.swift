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

/// The store could not do what was asked; the daemon answers 503 and the CLI exits 3.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public let message: String
    /// The backend's own code for the failure, when it gave one: SQLite's extended result code.
    public let code: Int32?
    /// Whether the outcome of a commit is unknown (the connection was lost during COMMIT):
    /// the caller must not acknowledge, and must not assume nothing was written either.
    public let commitInDoubt: Bool

    public init(message: String, code: Int32? = nil, commitInDoubt: Bool = false) {
        self.message = message
        self.code = code
        self.commitInDoubt = commitInDoubt
    }

    public var description: String { message }
}
