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
import IPNCore
import IPNStore

/// The SQLite file: WAL, `synchronous=FULL`, one writer (`SQLiteStore`'s group-commit writer), concurrent readers.
public final class SQLiteDatabase: Sendable {
    /// Where the file is.
    public let path: String
    public let pool: DatabasePool
    /// The WAL's length after the last commit (the writer's checkpoints go by it).
    let walLength: WALLength
    public let role: Role

    /// Who opens the file.
    public enum Role: Sendable {
        /// `ipnd serve`: creates and migrates the store, checkpoints the WAL.
        case daemon
        /// A command that writes a few rows beside a running daemon (`orders expect`,
        /// `deliveries retry`): the store must exist at this version's schema; SQLite's locks
        /// serialise its transactions with the daemon's writer.
        case command
    }

    /// Opens the store: for the daemon creating and migrating it; for a command, an existing
    /// store at this version's schema. A write waits up to `busyTimeout` seconds for a lock
    /// another connection holds.
    public init(path: String, busyTimeout: TimeInterval = 5, role: Role = .daemon) throws(StoreError) {
        self.path = path
        self.role = role
        if role == .command, !FileManager.default.fileExists(atPath: path) {
            throw StoreError(message: "no store at \(path) (has ipnd serve run with this config?)")
        }
        // The daemon opens no connection before this one, so the settings hold for all of them.
        _ = SQLiteLibrary.configure()
        var configuration = Configuration()
        configuration.label = "ipnd"
        configuration.busyMode = .timeout(busyTimeout)
        configuration.maximumReaderCount = 4
        configuration.prepareDatabase { db in
            // Every commit is on disk before it returns: an acknowledgement is never sent for
            // a notification a power loss could take back.
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA journal_size_limit = 67108864")
        }
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // GRDB turns WAL on after `prepareDatabase` and sets the writer connection to
            // synchronous=NORMAL as it does: a commit would then return before its fsync.
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            try pool.read { db in try Schema.refuseNewerSchema(db) }
            switch role {
            case .daemon:
                try Schema.migrator.migrate(pool)
            case .command:
                try pool.read { db in try Schema.requireCurrentSchema(db, path: path) }
            }
        } catch {
            throw StoreError(error, doing: "open \(path)")
        }
        self.pool = pool
        walLength = WALLength(installedOn: pool)
    }

    /// Runs `body` against a consistent read snapshot (the ops API, readiness checks).
    public func read<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws(StoreError) -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw StoreError(error, doing: "read")
        }
    }

    /// Runs `body` in a write transaction of its own, outside the group-commit writer (a store
    /// copy, with no daemon running).
    public func write<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws(StoreError) -> T {
        do {
            return try await pool.write(body)
        } catch {
            throw StoreError(error, doing: "write")
        }
    }

    /// Checkpoints the WAL into the main file and closes all connections. A checkpoint that
    /// cannot run (another process holds the lock, the disk is full) loses nothing: what was
    /// committed stays in the WAL, which the next open reads. It is returned for the log.
    @discardableResult
    public func close() throws(StoreError) -> StoreError? {
        var checkpointFailure: StoreError?
        // A command leaves the WAL to the daemon's checkpoints.
        if role == .daemon {
            do {
                try pool.writeWithoutTransaction { db in
                    _ = try db.checkpoint(.truncate)
                }
            } catch {
                checkpointFailure = StoreError(error, doing: "checkpoint the WAL before closing")
            }
        }
        do {
            try pool.close()
        } catch {
            throw StoreError(error, doing: "close")
        }
        return checkpointFailure
    }
}

extension StoreError {
    /// `error` as a store error: SQLite's message and extended result code when SQLite
    /// reported it.
    init(_ error: any Error, doing action: String) {
        if let error = error as? StoreError {
            self = error
        } else if let error = error as? DatabaseError {
            self.init(message: "cannot \(action): \(error.message ?? "\(error.resultCode)") (\(error.resultCode))",
                      code: error.extendedResultCode.rawValue)
        } else {
            self.init(message: "cannot \(action): \(error)")
        }
    }
}
