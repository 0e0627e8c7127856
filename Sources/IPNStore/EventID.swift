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
import IPNCore

/// Order event ids: UUIDs of version 7 (RFC 9562), lowercase, unique across stores as
/// product.md section 8 asks, and increasing within a process.
///
/// The store keeps events' ids in a unique index. A random (version 4) id lands on a random
/// leaf of that index, so a batch of N events rewrote N of its pages; ids that increase land
/// on its last page, as `seq` does on the table's. The first 48 bits are the time in
/// milliseconds; the next 12 (after the version) count events within that millisecond from a
/// random start (RFC 9562 section 6.2, method 1), so ids of one process never go backwards
/// while its clock does not; the last 62 (after the variant) are random.
public enum EventID {
    private struct State {
        var millis: Int64 = 0
        var counter: UInt64 = 0
        /// Seeded from the system's generator once: one system call per process, not per event.
        var random = SplitMix64(seed: .random(in: .min ... .max))

        mutating func nextRandom() -> UInt64 { random.next() }
    }

    private static let state = Locked(State())

    /// A new id, for an event written at `nowMillis` (milliseconds since 1970).
    public static func next(nowMillis: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) -> String {
        let (millis, counter, random) = state.withLock { state -> (Int64, UInt64, UInt64) in
            if nowMillis > state.millis {
                state.millis = nowMillis
                // A random start below half the counter's range leaves room to count up.
                state.counter = state.nextRandom() & 0x7FF
            } else if state.counter < 0xFFF {
                state.counter += 1
            } else {
                // 4,096 ids in one millisecond (or a clock gone back): borrow the next one.
                state.millis += 1
                state.counter = state.nextRandom() & 0x7FF
            }
            return (state.millis, state.counter, state.nextRandom())
        }
        let high = UInt64(truncatingIfNeeded: millis) << 16 | 0x7000 | counter
        let low = 0x8000_0000_0000_0000 | random >> 2
        return format(high: high, low: low)
    }

    /// The 128 bits `high` then `low` as 8-4-4-4-12 lowercase hex digits.
    static func format(high: UInt64, low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            var position = 0
            func put(_ value: UInt64, digits: Int) {
                for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
                    let digit = UInt8(truncatingIfNeeded: value >> UInt64(shift)) & 0x0F
                    buffer[position] = digit < 10 ? 0x30 + digit : 0x57 + digit
                    position += 1
                }
            }
            func dash() {
                buffer[position] = UInt8(ascii: "-")
                position += 1
            }
            put(high >> 32, digits: 8)
            dash()
            put(high >> 16, digits: 4)
            dash()
            put(high, digits: 4)
            dash()
            put(low >> 48, digits: 4)
            dash()
            put(low, digits: 12)
            return position
        }
    }
}
