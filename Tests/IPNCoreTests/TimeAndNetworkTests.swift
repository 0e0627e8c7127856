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
import Testing

@Suite("RFC 3339 timestamps")
struct TimestampTests {
    @Test("formats fixed width UTC with milliseconds")
    func formats() {
        #expect(Timestamp.format(epochMilliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.format(epochMilliseconds: 1_795_752_062_123) == "2026-11-27T04:01:02.123Z")
        #expect(Timestamp.format(epochMilliseconds: 951_782_400_000) == "2000-02-29T00:00:00.000Z")
        #expect(Timestamp.format(epochMilliseconds: -1) == "1969-12-31T23:59:59.999Z")
    }

    @Test("parses dates, times, fractions and offsets")
    func parses() {
        #expect(Timestamp.parse("1970-01-01") == 0)
        #expect(Timestamp.parse("2026-11-27T04:01:02.123Z") == 1_795_752_062_123)
        #expect(Timestamp.parse("2026-11-27T12:01:02.123+08:00") == 1_795_752_062_123)
        #expect(Timestamp.parse("2026-11-27T04:01:02Z") == 1_795_752_062_000)
        #expect(Timestamp.parse("2026-11-27T04:01:02.5Z") == 1_795_752_062_500)
        for bad in ["", "2026-13-01", "2026-02-30", "2026-11-25T25:00:00Z", "2026-11-25T04:01:02", "yesterday", "2026-11-25Tx"] {
            #expect(Timestamp.parse(bad) == nil, "\(bad)")
        }
    }

    @Test("format then parse round-trips")
    func roundTrip() {
        var rng = SplitMix64(seed: 3)
        for _ in 0..<1000 {
            let millis = Int64(rng.next() % 4_000_000_000_000)
            #expect(Timestamp.parse(Timestamp.format(epochMilliseconds: millis)) == millis)
        }
    }
}

@Suite("IP networks")
struct IPNetworkTests {
    @Test("CIDR membership for IPv4 and IPv6")
    func membership() throws {
        let v4 = try #require(IPNetwork("10.1.0.0/16"))
        #expect(v4.contains(try #require(IPAddress("10.1.255.3"))))
        #expect(!v4.contains(try #require(IPAddress("10.2.0.1"))))
        let host = try #require(IPNetwork("203.0.113.7"))
        #expect(host.contains(try #require(IPAddress("203.0.113.7"))))
        #expect(!host.contains(try #require(IPAddress("203.0.113.8"))))
        let v6 = try #require(IPNetwork("2001:db8::/32"))
        #expect(v6.contains(try #require(IPAddress("2001:db8:1::5"))))
        #expect(!v6.contains(try #require(IPAddress("2001:db9::1"))))
        #expect(!v6.contains(try #require(IPAddress("10.1.0.1"))))
        #expect(try #require(IPNetwork("0.0.0.0/0")).contains(try #require(IPAddress("8.8.8.8"))))
        #expect(try #require(IPNetwork("10.0.0.0/9")).contains(try #require(IPAddress("10.127.0.1"))))
        #expect(!(try #require(IPNetwork("10.0.0.0/9")).contains(try #require(IPAddress("10.128.0.1")))))
    }

    @Test("addresses are written in their standard text form", arguments: [
        ("203.0.113.7", "203.0.113.7"), ("0.0.0.0", "0.0.0.0"), ("255.255.255.255", "255.255.255.255"),
        ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"), ("::1", "::1"), ("::", "::"),
        ("fe80::1:2:3:4", "fe80::1:2:3:4"), ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
    ])
    func description(text: String, expected: String) throws {
        #expect(try #require(IPAddress(text)).description == expected)
        #expect(try #require(IPNetwork(text + "/\(text.contains(":") ? 64 : 24)")).description.hasPrefix(expected + "/"))
    }

    @Test("IPv4-mapped IPv6 addresses are their IPv4 address")
    func mapped() throws {
        let address = try #require(IPAddress("::ffff:192.0.2.1"))
        #expect(address.isIPv4)
        #expect(address.description == "192.0.2.1")
    }

    @Test("junk is refused", arguments: ["", "10.0.0.0/33", "10.0.0/8", "::1/129", "host.example", "10.0.0.0/-1", "1.2.3.4/ 8"])
    func junk(text: String) {
        #expect(IPNetwork(text) == nil)
    }
}
