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

import Dispatch
import GRDB
import IPNCore
import IPNStore

/// Copies the WAL into the database file on a connection and thread of its own, so that the
/// writer keeps committing while the copy and the database file's fsync run.
///
/// A checkpoint on another connection cannot end a WAL cycle by itself: SQLite starts the log
/// over only when a write transaction begins with every frame already copied back, and the
/// writer keeps adding frames while this runs. So it works in passes for the writer, which
/// starts them, reads where the last one got to, and copies the last few frames itself.
final class BackgroundCheckpointer: Sendable {
    /// The last finished pass, as the writer reads it between batches.
    struct Pass: Sendable {
        /// WAL frames already in the database file.
        var copied: Int32 = 0
        /// Whether the pass copied anything: one that could not (a reader still needs the
        /// frames) is not repeated until the WAL has grown by a pass's worth.
        var progressed = true
        /// The WAL's length when the pass started.
        var startedAt: Int32 = 0
    }

    private struct State {
        var running = false
        var pass = Pass()
    }

    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "ipnd.store.checkpointer", qos: .userInitiated)
    private let state = Locked(State())
    private let observer: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)?

    /// Opens the second connection; nil when it cannot be opened (the writer then copies the
    /// whole WAL itself, as it would without this).
    init?(path: String, observer: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)?) {
        var configuration = Configuration()
        configuration.label = "ipnd.checkpointer"
        configuration.busyMode = .timeout(5)
        // A checkpoint syncs the database file only on a connection that syncs at all.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        guard let connection = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
        self.connection = connection
        self.observer = observer
    }

    /// The last finished pass; nil while one is running.
    var lastPass: Pass? {
        state.withLock { $0.running ? nil : $0.pass }
    }

    var isRunning: Bool { state.withLock { $0.running } }

    /// Starts a pass over the WAL, `frames` long now.
    func start(walFrames frames: Int32) {
        state.withLock {
            $0.running = true
            $0.pass.startedAt = frames
        }
        queue.async { [self] in
            let result = Self.checkpoint(on: connection, observer: observer)
            state.withLock { state in
                if let copied = result {
                    state.pass.progressed = copied > state.pass.copied
                    state.pass.copied = copied
                }
                state.running = false
            }
        }
    }

    /// The writer copied up to `copied` frames itself.
    func writerCopied(_ copied: Int32) {
        state.withLock { $0.pass.copied = max($0.pass.copied, copied) }
    }

    /// The WAL started over: nothing of it is copied yet.
    func logRestarted() {
        state.withLock { $0.pass = Pass() }
    }

    /// One PASSIVE checkpoint on `connection`, timed and reported to `observer`; returns how
    /// many of the WAL's frames are in the database file, nil when it failed or could not start.
    ///
    /// SQLite answers a passive checkpoint SQLITE_BUSY when another connection holds the
    /// checkpoint lock, or, for an instant, when a commit is rewriting the WAL index's header as
    /// the checkpoint reads it (about one pass in a few hundred under load). A passive pass waits
    /// for no one by design: that pass copies nothing, the next one copies what it would have, and
    /// it is not reported as a failure (an operator alerting on failures would be paged for it).
    @discardableResult
    static func checkpoint(
        on connection: some DatabaseWriter,
        observer: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)?
    ) -> Int32? {
        let started = DispatchTime.now().uptimeNanoseconds
        var failure: StoreError?
        var copied: Int32?
        do {
            copied = Int32(clamping: try connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }.checkpointedFrameCount)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
            // Busy: this pass copies nothing (above).
        } catch {
            failure = StoreError(error, doing: "checkpoint the WAL")
        }
        observer?(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9, failure)
        return copied
    }
}
