import Foundation
import GRDB

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
        let temporary = destination + ".partial-\(getpid())"
        try? FileManager.default.removeItem(atPath: temporary)
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
            if FileManager.default.fileExists(atPath: destination) {
                _ = try FileManager.default.replaceItemAt(URL(fileURLWithPath: destination), withItemAt: URL(fileURLWithPath: temporary))
            } else {
                try FileManager.default.moveItem(atPath: temporary, toPath: destination)
            }
            let size = ((try? FileManager.default.attributesOfItem(atPath: destination))?[.size] as? Int64) ?? 0
            return Summary(path: destination, orders: orders, notifications: notifications, bytes: size)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw StoreError(error, doing: "back up \(source) to \(destination)")
        }
    }

    private static func fsync(path: String) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw StoreError(message: "cannot open \(path) to sync it") }
        defer { close(fd) }
        guard Foundation.fsync(fd) == 0 else { throw StoreError(message: "cannot sync \(path) to disk") }
    }
}
