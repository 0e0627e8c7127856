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

/// Slows failed sign-ins per client address: after a failure, that address's next attempt is
/// not checked before a wait that doubles with each failure (0.25 s, 0.5 s, ... at most 8 s),
/// and the failed answer itself waits as long. Fifteen minutes without a failure, or a
/// successful sign-in, forget the address. Tokens are long random strings; this keeps guessing
/// them from a script slow and loud, without locking a colleague out.
final class SignInThrottle: Sendable {
    static let firstDelayMilliseconds: Int64 = 250
    static let maxDelayMilliseconds: Int64 = 8000
    static let forgetAfterMilliseconds: Int64 = 15 * 60 * 1000
    /// Addresses remembered at most; the oldest are forgotten first.
    static let maxAddresses = 10_000

    private struct Record {
        var failures: Int
        var lastFailure: Int64
        /// No attempt from the address is checked before this time.
        var blockedUntil: Int64
    }

    private let records = Locked<[String: Record]>([:])

    /// How long an attempt from `address` arriving at `now` must wait before it is checked.
    func wait(for address: String, now: Int64) -> Duration {
        let until = records.withLock { records -> Int64 in
            guard let record = records[address], now - record.lastFailure < Self.forgetAfterMilliseconds else { return now }
            return record.blockedUntil
        }
        return .milliseconds(max(0, until - now))
    }

    /// Records a failed attempt; returns how many failures the address has now and how many
    /// milliseconds its answer (and its next attempt) waits.
    func failed(_ address: String, now: Int64) -> (failures: Int, delayMilliseconds: Int64) {
        records.withLock { records in
            var record = records[address].flatMap { now - $0.lastFailure < Self.forgetAfterMilliseconds ? $0 : nil }
                ?? Record(failures: 0, lastFailure: now, blockedUntil: now)
            record.failures += 1
            record.lastFailure = now
            let delay = Self.delay(failures: record.failures)
            record.blockedUntil = max(record.blockedUntil, now) + delay
            if records[address] == nil, records.count >= Self.maxAddresses {
                records = records.filter { now - $0.value.lastFailure < Self.forgetAfterMilliseconds }
                if records.count >= Self.maxAddresses, let oldest = records.min(by: { $0.value.lastFailure < $1.value.lastFailure }) {
                    records[oldest.key] = nil
                }
            }
            records[address] = record
            return (record.failures, delay)
        }
    }

    /// A successful sign-in: the address starts afresh.
    func succeeded(_ address: String) {
        records.withLock { $0[address] = nil }
    }

    /// The wait after the `failures`th failure in a row, in milliseconds.
    static func delay(failures: Int) -> Int64 {
        let doublings = min(max(0, failures - 1), 10)
        return min(firstDelayMilliseconds << Int64(doublings), maxDelayMilliseconds)
    }
}
