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
import GRDB
import GRDBSQLite
import IPNStore
@testable import IPNStoreSQLite
import Testing

@Suite("SQLite's process-wide settings")
struct SQLiteLibraryTests {
    /// In a process of its own, as the daemon is: the store is its first connection, and every
    /// connection then goes without a mutex of its own (multi-thread mode).
    @Test("a process whose first connection is the store opens its connections without a mutex")
    func multiThreadMode() async {
        await #expect(processExitsWith: .success) {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-sqlite-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let store = try SQLiteDatabase(path: directory.appendingPathComponent("ipnd.sqlite").path)
            let writerHasMutex = try store.pool.writeWithoutTransaction { db in sqlite3_db_mutex(db.sqliteConnection) != nil }
            let readerHasMutex = try store.pool.read { db in sqlite3_db_mutex(db.sqliteConnection) != nil }
            try store.close()
            guard SQLiteLibrary.configure() == .applied, !writerHasMutex, !readerHasMutex else { exit(1) }
        }
    }

    @Test("the settings are made once: later calls report the first outcome")
    func idempotent() {
        let first = SQLiteLibrary.configure()
        #expect(SQLiteLibrary.configure() == first)
    }
}
