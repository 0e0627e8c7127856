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

/// How the tests wait for something the daemon does on its own time: they poll for the outcome
/// a user would see (a row, an answer, a request a receiver got), with a deadline generous
/// enough for a machine busy with the whole suite, and fail naming what they waited for and
/// what they saw last. A test never sleeps to let time pass: where a schedule must come due, it
/// moves the daemon's clock (`WallClock.advance(by:)`) and then waits for the outcome.
public enum Waits {
    /// The deadline of a wait, in seconds: 60, or `IPND_TEST_WAIT_SECONDS`. Reached only when
    /// something is wrong; an ordinary wait ends within a second or two.
    public static let timeout: Double = ProcessInfo.processInfo.environment["IPND_TEST_WAIT_SECONDS"].flatMap(Double.init) ?? 60

    /// Between two looks.
    public static let interval: Duration = .milliseconds(50)
}

/// A wait whose deadline passed: what it waited for and what it last saw.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public let what: String
    public let seconds: Double
    public let lastSeen: String?

    public var description: String {
        "waited \(Int(seconds.rounded())) s for \(what), in vain" + (lastSeen.map { "; last saw: \($0.prefix(2000))" } ?? "")
    }
}

/// Looks at `observe` until `done` holds for what it returns, and returns that; throws
/// `WaitTimedOut` naming `what` and the last value seen once `timeout` seconds have passed.
@discardableResult
public func waitFor<Value>(
    _ what: @autoclosure () -> String, timeout: Double = Waits.timeout,
    observing observe: () async throws -> Value, until done: (Value) throws -> Bool
) async throws -> Value {
    let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
    while true {
        let value = try await observe()
        if try done(value) { return value }
        guard ContinuousClock.now < deadline else {
            throw WaitTimedOut(what: what(), seconds: timeout, lastSeen: String(describing: value))
        }
        try await Task.sleep(for: Waits.interval)
    }
}

/// Waits until `condition` holds; throws `WaitTimedOut` naming `what` once `timeout` seconds
/// have passed.
public func waitUntil(_ what: @autoclosure () -> String, timeout: Double = Waits.timeout, _ condition: () async throws -> Bool) async throws {
    try await waitFor(what(), timeout: timeout, observing: condition, until: { $0 })
}

/// Waits until `value` gives something, and returns it; throws `WaitTimedOut` naming `what`
/// once `timeout` seconds have passed.
public func waitForValue<Value>(_ what: @autoclosure () -> String, timeout: Double = Waits.timeout, _ value: () async throws -> Value?) async throws -> Value {
    let found = try await waitFor(what(), timeout: timeout, observing: value, until: { $0 != nil })
    guard let found else { throw WaitTimedOut(what: what(), seconds: timeout, lastSeen: nil) }
    return found
}
