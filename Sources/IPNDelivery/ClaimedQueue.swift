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
import IPNStore

/// The deliveries a target's worker has leased and not yet started, in claim order, and the
/// senders waiting for one. Closing it hands back what was never started.
final class ClaimedQueue: Sendable {
    private struct State {
        var items: [DeliveryAttempt] = []
        var head = 0
        var waiting: [CheckedContinuation<DeliveryAttempt?, Never>] = []
        var closed = false

        var count: Int { items.count - head }
    }

    private let state = Locked(State())

    /// Deliveries waiting for a sender.
    var count: Int { state.withLock { $0.count } }

    /// Adds claimed deliveries, handing them to waiting senders first. Returns false, taking
    /// none, once closed.
    func push(_ deliveries: [DeliveryAttempt]) -> Bool {
        var handed: [(CheckedContinuation<DeliveryAttempt?, Never>, DeliveryAttempt)] = []
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            var rest = deliveries[...]
            while let delivery = rest.first, !state.waiting.isEmpty {
                handed.append((state.waiting.removeFirst(), delivery))
                rest = rest.dropFirst()
            }
            state.items.append(contentsOf: rest)
            return true
        }
        for (sender, delivery) in handed { sender.resume(returning: delivery) }
        return accepted
    }

    /// The next delivery to send, waiting for one; nil once the queue is closed.
    func next() async -> DeliveryAttempt? {
        await withCheckedContinuation { (continuation: CheckedContinuation<DeliveryAttempt?, Never>) in
            let ready = state.withLock { state -> DeliveryAttempt?? in
                if state.count > 0 {
                    let delivery = state.items[state.head]
                    state.head += 1
                    if state.head > 64, state.head * 2 > state.items.count {
                        state.items.removeFirst(state.head)
                        state.head = 0
                    }
                    return .some(delivery)
                }
                if state.closed { return .some(nil) }
                state.waiting.append(continuation)
                return .none
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Takes every delivery waiting, leaving the queue open (the target was paused).
    func takeAll() -> [DeliveryAttempt] {
        state.withLock { state in Self.removeItems(&state) }
    }

    /// Stops the queue: waiting senders get nil; returns the deliveries never started.
    func close() -> [DeliveryAttempt] {
        let (left, waiting) = state.withLock { state -> ([DeliveryAttempt], [CheckedContinuation<DeliveryAttempt?, Never>]) in
            state.closed = true
            defer { state.waiting = [] }
            return (Self.removeItems(&state), state.waiting)
        }
        for sender in waiting { sender.resume(returning: nil) }
        return left
    }

    /// Empties the queue; returns what it held, in order.
    private static func removeItems(_ state: inout State) -> [DeliveryAttempt] {
        defer {
            state.items = []
            state.head = 0
        }
        return Array(state.items[state.head...])
    }
}
