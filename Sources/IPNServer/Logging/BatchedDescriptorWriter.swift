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

/// Bytes for one file descriptor, written by a thread of its own in batches: one `write(2)` for
/// all the lines logged within `linger` of each other, where the daemon under load would
/// otherwise make one per notification.
///
/// Order is kept: bytes leave in the order they were appended, whoever writes them. Nothing
/// waits longer than `linger` plus one write, `flush()` writes everything appended so far before
/// it returns, and an appender that finds `limit` bytes waiting writes them itself, so a reader
/// that stops reading (a stalled journald) slows the daemon down as a direct write would, rather
/// than growing its memory.
final class BatchedDescriptorWriter: @unchecked Sendable {
    private let descriptor: Int32
    private let linger: useconds_t
    private let limit: Int
    // Guards `pending` and `stopped`; the flusher waits on it while nothing is pending.
    private let condition = NSCondition()
    private var pending: [UInt8] = []
    private var stopped = false
    // Held while taking `pending` and writing it, so two flushes cannot reorder their bytes.
    private let writing = NSLock()
    private static let keptCapacity = 64 * 1024

    /// - Parameters:
    ///   - linger: how long the flusher collects lines after the first one before writing.
    ///   - limit: bytes waiting at which an appender writes them itself.
    init(descriptor: Int32, linger: Duration = .milliseconds(1), limit: Int = 1 << 20) {
        self.descriptor = descriptor
        let (seconds, attoseconds) = linger.components
        self.linger = useconds_t(clamping: seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
        self.limit = limit
        let flusher = Thread { [self] in runFlusher() }
        flusher.name = "ipnd-log"
        flusher.start()
    }

    /// Queues `bytes`; with `flushNow`, writes them and everything before them before returning.
    func append(_ bytes: [UInt8], flushNow: Bool = false) {
        condition.lock()
        let wasEmpty = pending.isEmpty
        pending.append(contentsOf: bytes)
        let writeNow = flushNow || stopped || pending.count >= limit
        if wasEmpty { condition.signal() }
        condition.unlock()
        if writeNow { flush() }
    }

    /// Writes everything appended so far.
    func flush() {
        writing.lock()
        defer { writing.unlock() }
        condition.lock()
        let bytes = pending
        // Room for a usual batch, without keeping a burst's megabyte for good.
        pending = []
        pending.reserveCapacity(min(bytes.count, Self.keptCapacity))
        condition.unlock()
        if !bytes.isEmpty { DescriptorOutput.writeAll(bytes, to: descriptor) }
    }

    /// Writes what is pending and ends the flusher thread; later appends are written at once.
    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
        flush()
    }

    private func runFlusher() {
        while true {
            condition.lock()
            while pending.isEmpty, !stopped { condition.wait() }
            let done = stopped
            condition.unlock()
            if done { return }
            usleep(linger)
            flush()
        }
    }
}
