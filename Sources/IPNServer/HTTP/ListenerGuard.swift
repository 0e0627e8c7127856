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

import CoreMetrics
import Foundation
import Logging
import NIOCore

/// First in a listening channel's pipeline: keeps the listener within its `ConnectionLimit`, and
/// says when it does not accept. A listener at its limit stops reading from its socket (autoRead
/// off) until one of its connections closes; new connections, `/healthz` among them, wait in the
/// kernel's listen queue meanwhile. Each time it stops is counted in
/// `ipnd_accept_paused_total{listener}`, and logged at most once a minute naming the limit.
///
/// `accept(2)` may still fail when descriptors or kernel memory run out for other reasons. NIO
/// logs nothing of it and does not back off either: its `AcceptBackoffHandler` delays the next
/// read it is asked for, but after a batch in which no accept succeeded the socket stays
/// registered for reading, and the event loop calls `accept(2)` again at once (540,000 failures
/// in 2.5 s under `ulimit -n 64`, one core busy). This handler stops reading for a second after
/// such a failure, counts it in `ipnd_accept_failures_total{listener}` and logs it at most once
/// a minute. Either way it logs once that the listener accepts again.
final class ListenerGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = any Channel

    /// How long a listener stops accepting after a failed accept: NIO's own backoff.
    static let failurePause: TimeAmount = .seconds(1)
    /// How often a listener at its limit looks whether a connection has closed.
    static let limitPause: TimeAmount = .milliseconds(100)

    /// What a listener's guard reports to.
    struct Reporting: Sendable {
        /// The config section of the listener (`server`, `ops`), its metric label.
        var listener: String
        /// `host:port` the listener is bound to.
        var address: String
        var logger: Logger
        var counters: ServerMetrics.AcceptCounters
    }

    private let limit: ConnectionLimit
    private let reporting: Reporting
    private var limitLog = ListenerPauseLog()
    private var failureLog = ListenerPauseLog()
    /// The check that ends a pause, while one is under way.
    private var resume: Scheduled<Void>?

    init(limit: ConnectionLimit, reporting: Reporting) {
        self.limit = limit
        self.reporting = reporting
    }

    /// Puts a guard at the head of `channel`'s pipeline (a listener's, from `onServerRunning`).
    static func install(on channel: any Channel, limit: ConnectionLimit, reporting: Reporting) async {
        do {
            try await channel.eventLoop.submit {
                try channel.pipeline.syncOperations.addHandler(ListenerGuard(limit: limit, reporting: reporting), position: .first)
            }.get()
        } catch {
            // Only a listener already closing refuses a handler: it accepts nothing more anyway.
            reporting.logger.debug("listener guard not installed", metadata: ["listener": "\(reporting.listener)", "error": "\(error)"])
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let connection = unwrapInboundIn(data)
        limit.opened()
        connection.closeFuture.whenComplete { [limit] _ in limit.closed() }
        // The rest of a batch of accepts may arrive after a pause began: that is no recovery.
        if resume == nil {
            let waited = (limitLog.accepted(), failureLog.accepted())
            if waited.0 != nil || waited.1 != nil {
                reporting.logger.notice("accepting connections again", metadata: metadata([
                    "limit_pauses": waited.0.map { "\($0)" }, "accept_failures": waited.1.map { "\($0)" },
                ]))
            }
        }
        if limit.isReached, resume == nil {
            reporting.counters.pauses.increment()
            if let count = limitLog.paused(at: ContinuousClock.now) {
                reporting.logger.error(
                    "not accepting connections: \(limit.openConnections) open, this listener's limit (\(limitDescription)); new connections wait in the listen queue",
                    metadata: metadata(["pauses": "\(count)"]))
            }
            pause(context: context, for: Self.limitPause)
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? IOError, let problem = AcceptProblem(errno: error.errnoCode) {
            reporting.counters.failures.increment()
            if let count = failureLog.paused(at: ContinuousClock.now) {
                reporting.logger.error("accept failed: \(problem.description); new connections wait in the listen queue",
                                       metadata: metadata(["failures": "\(count)"]))
            }
            pause(context: context, for: Self.failurePause)
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        resume?.cancel()
        resume = nil
        context.fireChannelInactive()
    }

    /// `RLIMIT_NOFILE 256 less what the store, the logs and the other listener keep`.
    private var limitDescription: String {
        let descriptors = limit.descriptorLimit.map { "RLIMIT_NOFILE \($0)" } ?? "RLIMIT_NOFILE"
        return "\(descriptors) less the descriptors kept for the store, the logs and the other listener"
    }

    private func metadata(_ extra: [String: String?]) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["listener": "\(reporting.listener)", "address": "\(reporting.address)"]
        for case let (key, value?) in extra { metadata[key] = "\(value)" }
        return metadata
    }

    /// Takes the listening socket out of the event loop's reads (autoRead off, which unregisters
    /// it) for `delay`, then puts it back, which accepts again, unless the listener is still at
    /// its limit.
    private func pause(context: ChannelHandlerContext, for delay: TimeAmount) {
        guard resume == nil, let options = context.channel.syncOptions else { return }
        do {
            try options.setOption(ChannelOptions.autoRead, value: false)
        } catch {
            return  // the listener is closing
        }
        resume = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            resume = nil
            if limit.isReached {
                pause(context: context, for: Self.limitPause)
            } else {
                try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
            }
        }
    }
}

/// An `accept(2)` failure that leaves the listener unable to take connections until a resource
/// frees up (NIO keeps the listener open for these and retries).
enum AcceptProblem: Equatable {
    /// EMFILE: the process's descriptor limit.
    case processDescriptors(limit: UInt64?)
    /// ENFILE: the system's (`fs.file-max`).
    case systemDescriptors
    /// ENOBUFS, ENOMEM.
    case kernelMemory

    init?(errno code: Int32) {
        switch code {
        case EMFILE: self = .processDescriptors(limit: ConnectionLimit.descriptorLimit())
        case ENFILE: self = .systemDescriptors
        case ENOBUFS, ENOMEM: self = .kernelMemory
        default: return nil
        }
    }

    var description: String {
        switch self {
        case .processDescriptors(let limit?): "too many open files (RLIMIT_NOFILE \(limit))"
        case .processDescriptors(nil): "too many open files (RLIMIT_NOFILE)"
        case .systemDescriptors: "too many open files in the system (fs.file-max)"
        case .kernelMemory: "out of kernel memory for sockets"
        }
    }

}

/// When a listener that stopped accepting is logged: the first time at once, then at most one
/// line a minute, each counting the times since the previous line; and one line when it accepts
/// again after a logged stop (so flapping at a limit logs no more than the stops do).
struct ListenerPauseLog {
    static let interval: Duration = .seconds(60)

    private var lastLine: ContinuousClock.Instant?
    /// Stops since the previous line.
    private var unlogged = 0
    /// Stops since the listener last accepted, and whether a line reported any of them.
    private var sinceAccepted = 0
    private var reported = false

    /// Records a stop at `now`; returns the count for the line to log, or nil for none yet.
    mutating func paused(at now: ContinuousClock.Instant) -> Int? {
        unlogged += 1
        sinceAccepted += 1
        if let lastLine, now - lastLine < Self.interval { return nil }
        lastLine = now
        reported = true
        defer { unlogged = 0 }
        return unlogged
    }

    /// Records an accepted connection; returns the stops since the listener last accepted when a
    /// line reported them (it has recovered), else nil.
    mutating func accepted() -> Int? {
        defer {
            sinceAccepted = 0
            reported = false
        }
        return reported ? sinceAccepted : nil
    }
}
