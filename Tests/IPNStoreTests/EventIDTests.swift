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
@testable import IPNStore
import Testing

@Suite("Event ids: UUIDs of version 7, increasing within a process")
struct EventIDTests {
    @Test("lowercase 8-4-4-4-12 hex, version 7, RFC 9562 variant, the time in the first 48 bits")
    func shape() throws {
        let millis: Int64 = 1_795_000_000_123
        let id = EventID.next(nowMillis: millis)
        #expect(id.utf8.count == 36)
        #expect(id.range(of: #"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"#, options: .regularExpression) != nil)
        #expect(UUID(uuidString: id) != nil)
        let hex = id.replacingOccurrences(of: "-", with: "")
        #expect(Int64(hex.prefix(12), radix: 16) ?? 0 >= millis)
        #expect(EventID.format(high: 0x0123_4567_89AB_7DEF, low: 0xFEDC_BA98_7654_3210) == "01234567-89ab-7def-fedc-ba9876543210")
    }

    @Test("ids increase: many in one millisecond, across milliseconds, and while the clock goes back")
    func increasing() {
        var previous = EventID.next(nowMillis: 1_795_000_000_000)
        var seen: Set<String> = [previous]
        // 10,000 in one millisecond: more than its 12-bit counter holds, so later ones borrow the next.
        let times = Array(repeating: Int64(1_795_000_000_001), count: 10_000)
            + (0..<1_000).map { 1_795_000_000_002 + Int64($0 / 3) }
            + [1_794_999_000_000, 1_795_000_000_001]
        for millis in times {
            let id = EventID.next(nowMillis: millis)
            #expect(id > previous)
            seen.insert(id)
            previous = id
        }
        #expect(seen.count == times.count + 1)
    }
}
