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
@testable import IPNDelivery
import Testing

@Suite("Delivery's threads yield the CPU to the providers' requests (issue 30)")
struct DeliveryThreadsTests {
    @Test("the delivery tasks run on threads at nice 10, below the rest of the daemon")
    func lowerPriority() async throws {
        let threads = DeliveryThreads(count: 2)
        let daemon = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        for index in 0..<2 {
            let (nice, thread) = await Task(executorPreference: threads.executor(index)) {
                (getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0), pthread_self())
            }.value
            // Lowering a thread's priority needs no privilege; a test run already niced past 10 stays there.
            #expect(nice == max(10, daemon), "executor \(index)")
            #expect(pthread_equal(thread, pthread_self()) == 0, "a delivery task runs on a delivery thread")
        }
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == daemon, "the caller's own thread is left alone")
        await threads.shutdown()
    }
}
