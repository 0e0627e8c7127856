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

/// The store backends the behaviour tests run against. PostgreSQL is the throwaway server
/// `make test` starts; without it (a plain `swift test`), SQLite only.
public enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public static var allCases: [Backend] {
        PostgresTestServer.fromEnvironment() == nil ? [.sqlite] : [.sqlite, .postgres]
    }

    public var description: String { rawValue }
}
