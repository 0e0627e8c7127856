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

import IPNCore

/// Wakes the feed's long polls and the delivery service when this process commits events.
/// Another node's commits are not signalled: waiters also wake when their timeout passes and
/// look again, so a caller that polls with a short timeout sees those within it.
public final class EventSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Waiters whose time ran out before they were registered.
        var expired: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())

    public init() {}

    /// Increases with every signal: read it before looking, and wait `since` it, so that a
    /// commit between the look and the wait is not missed.
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// Events were committed: wakes every waiter.
    public func signal() {
        let waiters = state.withLock { state -> [UInt64: CheckedContinuation<Void, Never>] in
            state.generation &+= 1
            defer { state.waiters = [:] }
            return state.waiters
        }
        for waiter in waiters.values { waiter.resume() }
    }

    /// Returns once a signal came after `generation`, or `timeout` passed, or the task was
    /// cancelled.
    public func wait(since generation: UInt64, timeout: Duration) async {
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            return state.nextID
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await Task.sleep(for: timeout)
                self.expire(id)
            }
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = self.state.withLock { state -> Bool in
                        if state.generation != generation || state.expired.remove(id) != nil { return true }
                        state.waiters[id] = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            }
            await group.next()
            group.cancelAll()
            // The other child: the sleep ends at once when cancelled; the waiter when expired.
            self.expire(id)
        }
    }

    private func expire(_ id: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
            state.expired.insert(id)
            return nil
        }
        waiter?.resume()
    }
}
