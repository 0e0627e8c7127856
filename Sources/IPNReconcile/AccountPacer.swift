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

import IPNStore

/// How fast each account is asked: at most `perMinute` inquiries a minute, spread evenly
/// (one every 60/`perMinute` seconds, never a burst), and nothing while the provider asked to
/// be left alone (`Retry-After`).
struct AccountPacer {
    var perMinute: Int {
        didSet { perMinute = max(1, perMinute) }
    }
    /// The earliest start of each account's next inquiry, in Unix microseconds.
    private var nextStart: [Scope: Int64] = [:]
    /// Until when (Unix ms) each held account waits.
    private var holds: [Scope: Int64] = [:]

    init(perMinute: Int) {
        self.perMinute = max(1, perMinute)
    }

    private var intervalMicros: Int64 { max(1, 60_000_000 / Int64(perMinute)) }

    /// How many inquiries of `scope` may start between `now` and `now + horizon` (ms).
    func available(_ scope: Scope, now: Int64, horizon: Int64) -> Int {
        if let until = holds[scope], until > now { return 0 }
        let start = max(now * 1000, nextStart[scope] ?? 0)
        let end = (now + horizon) * 1000
        guard start < end else { return 0 }
        return Int((end - start) / intervalMicros) + 1
    }

    /// Takes the next slot of `scope`: when (Unix ms) its inquiry may start.
    mutating func reserve(_ scope: Scope, now: Int64) -> Int64 {
        let start = max(now * 1000, nextStart[scope] ?? 0)
        nextStart[scope] = start + intervalMicros
        return start / 1000
    }

    /// Holds `scope` until `until` (Unix ms).
    mutating func hold(_ scope: Scope, until: Int64) {
        holds[scope] = max(holds[scope] ?? 0, until)
    }

    /// Until when `scope` is held, if it is at `now`.
    func heldUntil(_ scope: Scope, now: Int64) -> Int64? {
        guard let until = holds[scope], until > now else { return nil }
        return until
    }
}
