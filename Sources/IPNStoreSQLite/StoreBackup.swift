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
import IPNStore

/// `ipnd backup`: a consistent copy of a live store through SQLite's online backup API.
public enum StoreBackup {
    public struct Summary: Sendable {
        public let path: String
        public let orders: Int
        public let notifications: Int
        public let bytes: Int64
    }

    /// Copies the store at `source` to `destination` in one read transaction (so the copy is
    /// one consistent snapshot while the daemon keeps writing), checks the copy's integrity,
    /// and moves it into place atomically.
    public static func run(source: String, destination: String) throws(StoreError) -> Summary {
        guard FileManager.default.fileExists(atPath: source) else {
            throw StoreError(message: "no store at \(source)")
        }
        if let clash = clash(of: destination, with: source) {
            throw StoreError(message: "refusing to back up onto \(clash); choose another path")
        }
        let temporary = destination + ".partial-\(getpid())"
        try? FileManager.default.removeItem(atPath: temporary)
        // Created here, owner-only and exclusively: the copy holds every raw body, and SQLite
        // would otherwise create it with the umask's mode.
        let created = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard created >= 0 else {
            throw StoreError(message: "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        close(created)
        do {
            var readOnly = Configuration()
            readOnly.readonly = true
            readOnly.busyMode = .timeout(10)
            let live = try DatabaseQueue(path: source, configuration: readOnly)
            let copy = try DatabaseQueue(path: temporary)
            try live.backup(to: copy)
            let (integrity, orders, notifications) = try copy.read { db in
                (
                    try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "no answer",
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM orders") ?? 0,
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications") ?? 0
                )
            }
            try copy.writeWithoutTransaction { db in
                // A self-contained single file: no -wal or -shm to carry around.
                try db.execute(sql: "PRAGMA journal_mode = DELETE")
            }
            try copy.close()
            try live.close()
            guard integrity == "ok" else {
                try? FileManager.default.removeItem(atPath: temporary)
                throw StoreError(message: "the copy failed its integrity check: \(integrity)")
            }
            try fsync(path: temporary)
            // rename(2) replaces an existing copy atomically: the old one stays whole until the
            // new one is complete (Foundation's replaceItemAt removed it first on Linux).
            guard rename(temporary, destination) == 0 else {
                throw StoreError(message: "cannot move the copy to \(destination): \(String(cString: strerror(errno)))")
            }
            // The rename is durable only once the directory holding it is synced.
            let directory = (destination as NSString).deletingLastPathComponent
            try fsync(path: directory.isEmpty ? "." : directory)
            let size = ((try? FileManager.default.attributesOfItem(atPath: destination))?[.size] as? Int64) ?? 0
            return Summary(path: destination, orders: orders, notifications: notifications, bytes: size)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw StoreError(error, doing: "back up \(source) to \(destination)")
        }
    }

    /// What `destination` would overwrite of the live store, if anything: the store itself
    /// (by any path to the same file) or one of its WAL, shared-memory, journal or lock files.
    /// A copy renamed over the lock file would leave the running daemon holding a lock on a
    /// file no longer there, and a second daemon could then lock the new one.
    static func clash(of destination: String, with source: String) -> String? {
        for suffix in ["", "-wal", "-shm", "-journal", StoreLock.suffix] {
            let storeFile = source + suffix
            if sameFile(destination, storeFile) || canonical(destination) == canonical(storeFile) {
                return suffix.isEmpty ? "the store itself (\(source))" : "the store's \(storeFile)"
            }
        }
        return nil
    }

    private static func sameFile(_ a: String, _ b: String) -> Bool {
        var first = stat()
        var second = stat()
        guard stat(a, &first) == 0, stat(b, &second) == 0 else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    /// The path with its directory resolved (symbolic links, `..`), for files that may not exist yet.
    private static func canonical(_ path: String) -> String {
        let url = URL(fileURLWithPath: path)
        return url.deletingLastPathComponent().resolvingSymlinksInPath().appendingPathComponent(url.lastPathComponent).path
    }

    private static func fsync(path: String) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw StoreError(message: "cannot open \(path) to sync it") }
        defer { close(fd) }
        guard Foundation.fsync(fd) == 0 else { throw StoreError(message: "cannot sync \(path) to disk") }
    }
}
