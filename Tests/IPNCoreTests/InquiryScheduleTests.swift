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

@Suite("The inquiry schedule: steps after the last change, then every 24 h, then give up")
struct InquiryScheduleTests {
    static let minute: Int64 = 60_000
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000

    @Test("the standard schedule asks 10m, 30m, 1h, 3h, 6h, 12h, 24h after the change, then daily, and gives up at 7 d")
    func standard() {
        let schedule = InquirySchedule.standard
        let change: Int64 = 1_000_000_000_000
        var moments: [Int64] = []
        var next = schedule.first(changedAt: change)
        var step = 0
        while case .ask(let at, let index) = next {
            #expect(index == step)
            moments.append(at - change)
            next = schedule.next(afterStep: index, changedAt: change, askedAt: at)
            step += 1
            if step > 50 { break }
        }
        #expect(next == .giveUp)
        #expect(moments == [10 * Self.minute, 30 * Self.minute, Self.hour, 3 * Self.hour, 6 * Self.hour, 12 * Self.hour, Self.day,
                            2 * Self.day, 3 * Self.day, 4 * Self.day, 5 * Self.day, 6 * Self.day, 7 * Self.day])
    }

    @Test("steps whose moment passed while ipnd was down are skipped, not asked in a burst")
    func skipsPastSteps() {
        let schedule = InquirySchedule.standard
        let change: Int64 = 0
        // Asked at step 0 five hours late: the next is the 6 h step (3 h has passed too).
        #expect(schedule.next(afterStep: 0, changedAt: change, askedAt: 5 * Self.hour) == .ask(atMillis: 6 * Self.hour, step: 4))
        // Past the give-up moment: that inquiry was the last.
        #expect(schedule.next(afterStep: 3, changedAt: change, askedAt: 8 * Self.day) == .giveUp)
        // A step beyond give-up is asked at the give-up moment, as the last one.
        #expect(schedule.next(afterStep: 11, changedAt: change, askedAt: 6 * Self.day + 1) == .ask(atMillis: 7 * Self.day, step: 12))
    }

    @Test("a give-up before the first step asks once, at the give-up moment")
    func giveUpFirst() {
        let schedule = InquirySchedule(stepsMillis: [Self.hour], giveUpAfterMillis: Self.minute)
        #expect(schedule.first(changedAt: 0) == .ask(atMillis: Self.minute, step: 0))
        #expect(schedule.next(afterStep: 0, changedAt: 0, askedAt: Self.minute) == .giveUp)
    }

    @Test("settled states are the ones never asked about")
    func settled() {
        #expect(OrderState.allCases.filter { !$0.isSettled } == [.expected, .pending, .authorized])
    }
}
