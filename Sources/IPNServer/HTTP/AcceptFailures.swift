import CoreMetrics
import Foundation
import Logging
import NIOCore

/// Says why a listener stopped taking connections, and keeps it from spinning meanwhile. When
/// the process is out of file descriptors (more connections than `LimitNOFILE=`), `accept(2)`
/// fails, and new connections, `/healthz` among them, wait in the kernel's listen queue until
/// descriptors free up. Nothing was logged. Nor did NIO back off: its `AcceptBackoffHandler`
/// delays the next read it is asked for, but after a batch in which no accept succeeded the
/// listening socket stays registered for reading, and the event loop called `accept(2)` again
/// at once: 540,000 failures in 2.5 s under `ulimit -n 64`, one core busy.
///
/// This handler, first in the listening channel's pipeline, stops reading from the socket for
/// `pause` after a failure, then tries again; counts each failure
/// (`ipnd_accept_failures_total{listener}`); logs it at most once a minute naming the limit; and
/// logs once that the listener accepts again.
final class AcceptFailureHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = any Channel

    /// How long the listener stops accepting after a failure: NIO's own backoff.
    static let pause: TimeAmount = .seconds(1)

    private let listener: String
    private let address: String
    private let logger: Logger
    private let failures: Counter
    private var log = AcceptFailureLog()
    /// The read that ends the pause, while one is under way.
    private var resume: Scheduled<Void>?

    /// - Parameters:
    ///   - listener: the config section of the listener (`server`, `ops`), its metric label.
    ///   - address: `host:port` as configured, for the log line.
    init(listener: String, address: String, logger: Logger, failures: Counter) {
        self.listener = listener
        self.address = address
        self.logger = logger
        self.failures = failures
    }

    /// Puts a handler at the head of `channel`'s pipeline (a listener's, from `onServerRunning`).
    static func install(on channel: any Channel, listener: String, address: String, logger: Logger, failures: Counter) async {
        do {
            try await channel.eventLoop.submit {
                try channel.pipeline.syncOperations.addHandler(
                    AcceptFailureHandler(listener: listener, address: address, logger: logger, failures: failures), position: .first)
            }.get()
        } catch {
            // Only a listener already closing refuses a handler: it accepts nothing more anyway.
            logger.debug("accept failure reporting not installed", metadata: ["listener": "\(listener)", "error": "\(error)"])
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let failures = log.accepted() {
            logger.notice("accepting connections again", metadata: [
                "listener": "\(listener)", "address": "\(address)", "failures": "\(failures)",
            ])
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? IOError, let problem = AcceptProblem(errno: error.errnoCode) {
            failures.increment()
            if let count = log.failed(at: ContinuousClock.now) {
                logger.error("accept failed: \(problem.description); new connections wait in the listen queue", metadata: [
                    "listener": "\(listener)", "address": "\(address)", "failures": "\(count)",
                ])
            }
            pauseAccepting(context: context)
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        resume?.cancel()
        resume = nil
        context.fireChannelInactive()
    }

    /// Takes the listening socket out of the event loop's reads for `pause` (autoRead off, which
    /// unregisters it), then puts it back, which retries the accept.
    private func pauseAccepting(context: ChannelHandlerContext) {
        guard resume == nil, let options = context.channel.syncOptions else { return }
        do {
            try options.setOption(ChannelOptions.autoRead, value: false)
        } catch {
            return  // the listener is closing
        }
        resume = context.eventLoop.assumeIsolated().scheduleTask(in: Self.pause) { [self] in
            resume = nil
            try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
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
        case EMFILE: self = .processDescriptors(limit: Self.descriptorLimit())
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

    /// The soft `RLIMIT_NOFILE`, what `LimitNOFILE=` sets; nil when unlimited (RLIM_INFINITY) or unreadable.
    static func descriptorLimit() -> UInt64? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return UInt64(limit.rlim_cur)
    }
}

/// When an accept failure is logged: the first at once, then at most one line a minute, each
/// counting the failures since the previous line; and one line when accepting works again after
/// a logged failure (so flapping at the limit logs no more than the failures do).
struct AcceptFailureLog {
    static let interval: Duration = .seconds(60)

    private var lastLine: ContinuousClock.Instant?
    /// Failures since the previous line.
    private var unlogged = 0
    /// Failures since accepting last worked, and whether a line reported any of them.
    private var sinceAccepted = 0
    private var reported = false

    /// Records a failure at `now`; returns the count for the line to log, or nil for none yet.
    mutating func failed(at now: ContinuousClock.Instant) -> Int? {
        unlogged += 1
        sinceAccepted += 1
        if let lastLine, now - lastLine < Self.interval { return nil }
        lastLine = now
        reported = true
        defer { unlogged = 0 }
        return unlogged
    }

    /// Records an accepted connection; returns the failures since accepting last worked when a
    /// line reported them (the listener has recovered), else nil.
    mutating func accepted() -> Int? {
        defer {
            sinceAccepted = 0
            reported = false
        }
        return reported ? sinceAccepted : nil
    }
}
