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

/// The time of day ipnd reads for everything it stamps or schedules: when a notification was
/// received and an order last changed, when an order is next asked about and when ipnd gives up
/// on it, how long a provider's `Retry-After` holds an account, when a status-API token is
/// renewed, when a delivery is retried and when it fails for good, when rows are old enough for
/// retention, when a console session ends and when the sign-in throttle forgets an address.
///
/// One value is made at start-up and handed to every part that needs it. In production it is
/// `.system`; tests make an `.adjustable()` one and move it forward with `advance(by:)`, then
/// wait for the outcome, instead of sleeping until a schedule comes due.
///
/// Durations of real work (HTTP timeouts, latencies, poll intervals, lock waits) are not on this
/// clock: they are measured with `ContinuousClock`, since moving the time of day forward does not
/// make a provider answer sooner.
public struct WallClock: Sendable {
    /// The adjustment of an `.adjustable()` clock; nil for the system clock.
    private let adjustment: Adjustment?

    private init(adjustment: Adjustment?) {
        self.adjustment = adjustment
    }

    /// The system's clock (`gettimeofday`).
    public static let system = WallClock(adjustment: nil)

    /// A clock that reads the system clock plus an offset, zero at first, which `advance(by:)`
    /// grows; sleepers on it wake when it is moved. For tests and drills.
    public static func adjustable() -> WallClock {
        WallClock(adjustment: Adjustment())
    }

    /// Whether this clock can be moved (`advance(by:)`).
    public var isAdjustable: Bool { adjustment != nil }

    /// Milliseconds since the Unix epoch.
    public func millis() -> Int64 {
        let system = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        guard let adjustment else { return system }
        return system + adjustment.offset
    }

    /// Now, as stored text (`Timestamp`), `offset` milliseconds ahead (behind when negative).
    public func text(offset: Int64 = 0) -> String {
        Timestamp.format(epochMilliseconds: millis() + offset)
    }

    /// Now, as a `Date`.
    public func date() -> Date {
        Date(timeIntervalSince1970: Double(millis()) / 1000)
    }

    /// Moves an adjustable clock forward by `duration` and wakes everything sleeping on it (which
    /// then sleeps on for whatever is left). Does nothing to the system clock.
    public func advance(by duration: Duration) {
        adjustment?.advance(millis: Self.millis(of: duration))
    }

    /// Waits until this clock reads `deadline` (Unix ms) or later. Throws `CancellationError`
    /// when the task is cancelled first.
    public func sleep(untilMillis deadline: Int64) async throws(CancellationError) {
        while true {
            if Task.isCancelled { throw CancellationError() }
            let remaining = deadline - millis()
            if remaining <= 0 { return }
            guard let adjustment else {
                do {
                    try await Task.sleep(for: .milliseconds(remaining))
                } catch {
                    throw CancellationError()
                }
                continue
            }
            // Whichever comes first: the time passing, or the clock being moved.
            let generation = adjustment.generation
            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await Task.sleep(for: .milliseconds(remaining)) }
                group.addTask { await adjustment.moved(since: generation) }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// Waits `duration` of this clock's time (see `sleep(untilMillis:)`).
    public func sleep(for duration: Duration) async throws(CancellationError) {
        try await sleep(untilMillis: millis() + Self.millis(of: duration))
    }

    /// `duration` in whole milliseconds.
    public static func millis(of duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// The offset of an adjustable clock and the tasks waiting for it to move.
    private final class Adjustment: Sendable {
        private struct State {
            var offset: Int64 = 0
            var generation = 0
            var nextWaiter = 0
            var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
            /// Waiters numbered but not registered yet, and those of them already cancelled.
            var unregistered: Set<Int> = []
            var cancelled: Set<Int> = []
        }

        private let state = Locked(State())

        var offset: Int64 { state.withLock { $0.offset } }
        var generation: Int { state.withLock { $0.generation } }

        func advance(millis: Int64) {
            let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.offset += max(0, millis)
                state.generation += 1
                defer { state.waiters = [:] }
                return Array(state.waiters.values)
            }
            for waiter in woken { waiter.resume() }
        }

        /// Returns once the clock has moved since `generation`, or the task is cancelled.
        func moved(since generation: Int) async {
            let id = state.withLock { state -> Int in
                state.nextWaiter += 1
                state.unregistered.insert(state.nextWaiter)
                return state.nextWaiter
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { state -> Bool in
                        state.unregistered.remove(id)
                        if state.cancelled.remove(id) != nil || state.generation != generation { return true }
                        state.waiters[id] = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                    if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                    // Not registered yet: it resumes itself when it is. Otherwise it has been
                    // woken already.
                    if state.unregistered.contains(id) { state.cancelled.insert(id) }
                    return nil
                }
                waiter?.resume()
            }
        }
    }
}
