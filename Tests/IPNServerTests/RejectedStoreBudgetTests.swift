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
@testable import IPNServer
import Testing

@Suite("The rejected-request budget per client and minute (issue 33)")
struct RejectedStoreBudgetTests {
    private let minute: Int64 = 60_000
    /// 10:00:00 on some day, a window's start.
    private let t0: Int64 = 1_795_000_000_000 - 1_795_000_000_000 % 60_000

    private func address(_ text: String) -> IPAddress { IPAddress(text)! }

    @Test("each client stores its budget per window and no more; the next window starts again")
    func perClientPerWindow() {
        let budget = RejectedStoreBudget(perWindow: 3)
        let attacker = address("203.0.113.9")
        let other = address("198.51.100.7")
        let stored = (0..<10).map { budget.admit(attacker, at: t0 + Int64($0) * 1000).store }
        #expect(stored == [true, true, true, false, false, false, false, false, false, false])
        // Another address has a budget of its own.
        #expect(budget.admit(other, at: t0 + 30_000).store)
        // The next minute: three more, and the ended window is reported once.
        let next = budget.admit(attacker, at: t0 + minute + 5)
        #expect(next.store)
        #expect(next.ended == [RejectedStoreBudget.Report(client: .ipv4(0xCB00_7109), stored: 3, notStored: 7, windowStart: t0)])
        #expect(budget.admit(attacker, at: t0 + minute + 6).ended.isEmpty)
        #expect(budget.close(at: t0 + minute + 59_999).isEmpty)
    }

    @Test("a window with nothing dropped reports nothing; close ends a window nobody's request ended")
    func reports() {
        let budget = RejectedStoreBudget(perWindow: 2)
        _ = budget.admit(address("192.0.2.1"), at: t0)
        _ = budget.admit(address("192.0.2.2"), at: t0 + 1)
        _ = budget.admit(address("192.0.2.2"), at: t0 + 2)
        _ = budget.admit(address("192.0.2.2"), at: t0 + 3)
        #expect(budget.close(at: t0 + minute - 1).isEmpty)
        let reports = budget.close(at: t0 + minute)
        #expect(reports.map(\.client.description) == ["192.0.2.2"])
        #expect(reports.map(\.notStored) == [1] && reports.map(\.stored) == [2])
        #expect(budget.trackedClients == 0)
        #expect(budget.close(at: t0 + 5 * minute).isEmpty)
    }

    @Test("a flush (shutdown) reports the window so far and starts its counts again")
    func flush() {
        let budget = RejectedStoreBudget(perWindow: 1)
        #expect(budget.flush().isEmpty)
        _ = budget.admit(address("192.0.2.1"), at: t0)
        _ = budget.admit(address("192.0.2.1"), at: t0 + 1)
        #expect(budget.flush() == [RejectedStoreBudget.Report(client: .ipv4(0xC000_0201), stored: 1, notStored: 1, windowStart: t0)])
        #expect(budget.admit(address("192.0.2.1"), at: t0 + 2).store)
        #expect(budget.close(at: t0 + minute).isEmpty)
    }

    @Test("0 stores none")
    func zero() {
        let budget = RejectedStoreBudget(perWindow: 0)
        #expect((0..<5).allSatisfy { !budget.admit(address("192.0.2.1"), at: t0 + Int64($0)).store })
        #expect(budget.close(at: t0 + minute).map(\.notStored) == [5])
    }

    @Test("IPv6 clients are counted per /64: a flood cannot take a fresh budget from each address of its network")
    func ipv6Network() {
        let budget = RejectedStoreBudget(perWindow: 2)
        let stored = (1...5).map { budget.admit(address("2001:db8:1:2::\($0)"), at: t0).store }
        #expect(stored == [true, true, false, false, false])
        #expect(budget.admit(address("2001:db8:1:3::1"), at: t0).store)
        let reports = budget.close(at: t0 + minute)
        #expect(reports.map(\.client.description) == ["2001:db8:1:2::/64"])
    }

    @Test("the table is capped: past the cap, new clients share one budget, and memory stays bounded")
    func capped() {
        let budget = RejectedStoreBudget(perWindow: 2, maxClients: 100)
        var stored = 0
        for index in 0..<10_000 {
            let client = address("10.\(index / 65_536).\(index / 256 % 256).\(index % 256)")
            if budget.admit(client, at: t0 + Int64(index % 1000)).store { stored += 1 }
        }
        // 100 tracked clients (one request each), and the other 9,900 sharing a budget of 2.
        #expect(budget.trackedClients == 101)
        #expect(stored == 100 + 2)
        let reports = budget.close(at: t0 + minute)
        #expect(reports.first?.client == .others && reports.first?.notStored == 10_000 - 100 - 2)
        #expect(budget.trackedClients == 0)
    }

    @Test("an unknown peer is one client; a changed budget applies at once")
    func unknownAndChanged() {
        let budget = RejectedStoreBudget(perWindow: 1)
        #expect(budget.admit(nil, at: t0).store)
        #expect(!budget.admit(nil, at: t0).store)
        budget.setPerWindow(3)
        #expect(budget.admit(nil, at: t0).store)
        #expect(budget.perWindow == 3)
        #expect(budget.close(at: t0 + minute).map(\.client.description) == ["unknown"])
    }

    @Test("windows are aligned to the clock and as long as asked")
    func windows() {
        let budget = RejectedStoreBudget(perWindow: 1, window: .seconds(2))
        #expect(budget.windowMilliseconds == 2000)
        #expect(budget.windowStart(t0 + 3500) == t0 + 2000)
        #expect(budget.windowEnd(t0 + 3500) == t0 + 4000)
        #expect(budget.admit(nil, at: t0).store)
        #expect(!budget.admit(nil, at: t0 + 1999).store)
        #expect(budget.admit(nil, at: t0 + 2000).store)
    }
}
