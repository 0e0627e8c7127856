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

import CSQLiteSetup

/// SQLite's process-wide settings, made once before the process opens its first connection.
///
/// Debian's SQLite is built serialized: each connection locks a mutex of its own around every
/// call (about 60 lock and unlock pairs per notification on the write path), and with memory
/// statistics on every SQLite allocation takes a process-wide mutex as well. GRDB already lets
/// one thread at a time use a connection, so ipnd opens its connections in multi-thread mode
/// and without memory statistics.
enum SQLiteLibrary {
    /// Whether the settings hold for the connections this process opens.
    enum Setup: Sendable, Equatable {
        /// Made before SQLite started: every connection of this process is in multi-thread mode.
        case applied
        /// SQLite had already started (something opened a connection first): its defaults stay.
        case tooLate
    }

    /// Makes the settings the first time it is called; later calls return the first outcome.
    static func configure() -> Setup { setup }

    private static let setup: Setup = {
        guard ipnd_sqlite_config_multithread() == SQLITE_OK else { return .tooLate }
        _ = ipnd_sqlite_config_no_memstatus()
        return .applied
    }()
}
