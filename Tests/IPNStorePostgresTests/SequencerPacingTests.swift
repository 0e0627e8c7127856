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

@testable import IPNStorePostgres
import Testing

/// How often the sequencing node looks for other nodes' rows while the feed is quiet.
@Suite("PostgreSQL: the sequencer's looks on a quiet feed")
struct SequencerPacingTests {
    @Test("each look that finds nothing doubles the wait from 10 ms, up to 100 ms")
    func backsOff() {
        var wait = EventSequencer.idlePoll
        var waits: [Duration] = []
        for _ in 0..<6 {
            waits.append(wait)
            wait = EventSequencer.nextIdleWait(after: wait)
        }
        #expect(waits == [10, 20, 40, 80, 100, 100].map { .milliseconds($0) })
    }

    @Test("the longest wait leaves another node's event well within the feed's one second")
    func withinTheFeedsSecond() {
        #expect(EventSequencer.idlePollLongest <= .milliseconds(100))
        #expect(EventSequencer.nextIdleWait(after: .seconds(5)) == EventSequencer.idlePollLongest)
    }
}
