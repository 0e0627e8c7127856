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

import Glibc
import NIOCore
import NIOPosix

/// The threads push delivery runs on: the HTTP clients' event loops, each also the executor of
/// the delivery tasks that use it, so that a request and the task waiting for it share a thread.
/// They run at a lower scheduling priority (`nice`) than the rest of ipnd: when the machine is
/// busy, providers' notifications are answered first and the deliveries wait, in the store, for
/// the CPU to come free; when it is not, the deliveries take all they need. Reconciliation's
/// inquiries run on threads of their own of this kind.
public final class DeliveryThreads: Sendable {
    /// The nice value of the delivery threads (0: the daemon's own priority; 19: the lowest).
    public static let niceness: Int32 = 10

    public let group: MultiThreadedEventLoopGroup
    /// One executor per thread.
    let executors: [LoopExecutor]

    public init(count: Int = System.coreCount, niceness: Int32 = DeliveryThreads.niceness) {
        group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, count))
        executors = group.makeIterator().map { LoopExecutor($0) }
        for loop in group.makeIterator() {
            loop.execute {
                // Per thread on Linux: PRIO_PROCESS with `who` 0 names the calling thread.
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
            }
        }
    }

    /// The executor of the `index`th task of a set spread across the threads.
    public func executor(_ index: Int) -> any TaskExecutor {
        loopExecutor(index)
    }

    func loopExecutor(_ index: Int) -> LoopExecutor {
        executors[index % executors.count]
    }

    public func shutdown() async {
        try? await group.shutdownGracefully()
    }
}

/// Runs tasks on one event loop's thread.
final class LoopExecutor: TaskExecutor, Sendable {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
