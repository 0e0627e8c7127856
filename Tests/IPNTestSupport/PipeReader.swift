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

/// Reads a pipe to its end on a thread of its own, so that a child's large output cannot fill
/// the pipe and stall it.
public final class PipeReader: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var data = Data()  // guarded by `lock`

    public init(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                lock.withLock { data.append(chunk) }
            }
            done.signal()
        }
    }

    /// What came through the pipe, once it ended, or after `seconds` if a process the child
    /// started outlives it holding the pipe's other end: the caller then goes on with what was
    /// written rather than wait for that process to exit (blocking: call it on a thread of its
    /// own, not on the cooperative pool).
    public func text(waitingAtMost seconds: Double = 10) -> String {
        _ = done.wait(timeout: .now() + seconds)
        return lock.withLock { String(decoding: data, as: UTF8.self) }
    }
}
