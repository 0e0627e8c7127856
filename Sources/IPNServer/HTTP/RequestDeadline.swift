import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// Hummingbird's HTTP/1 channel with a request deadline in front of the HTTP decoder: from the
/// first byte of a request until ipnd starts answering it, at most `requestTimeout` may pass,
/// or the client gets 408 and the connection is closed. Slow headers, slow bodies and endless
/// bodies are all cut off, and since NIO holds no thread per connection, other clients are
/// served meanwhile.
struct DeadlineHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = HTTP1Channel.Value

    let base: HTTP1Channel
    let requestTimeout: TimeAmount
    let onTimeout: @Sendable () -> Void

    var responder: Responder { base.responder }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(
                RequestDeadlineHandler(timeout: requestTimeout, logger: logger, onTimeout: onTimeout))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1 with an idle timeout and a whole-request deadline.
    static func http1(idleTimeout: TimeAmount, requestTimeout: TimeAmount, onTimeout: @escaping @Sendable () -> Void) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            DeadlineHTTP1Channel(
                base: HTTP1Channel(responder: responder, configuration: .init(idleTimeout: idleTimeout)),
                requestTimeout: requestTimeout,
                onTimeout: onTimeout
            )
        }
    }
}

/// Sits next to the socket. A request starts with its first inbound byte while no request is
/// in progress and ends when ipnd writes the answer; if `timeout` passes in between, ipnd has
/// not started an answer, so it answers `408 Request Timeout` with `Connection: close` and
/// closes the connection. A provider endpoint still reading the body then sees it end early
/// and keeps what arrived.
///
/// One timer per connection, not one per request: scheduling and cancelling a task for every
/// request showed in about 2 % of the profile's samples under load. The timer is armed for the
/// deadline of the request in progress; when it fires for a request that has since been
/// answered, it re-arms for the current request's deadline, or stays off while the connection
/// is idle.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    /// Written straight to the socket: the HTTP encoder has nothing in flight when it is sent.
    static let timeoutAnswer = "HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain\r\nContent-Length: 16\r\n"
        + "Connection: close\r\n\r\nrequest timeout\n"

    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let timeout: TimeAmount
    private let logger: Logger
    private let onTimeout: @Sendable () -> Void
    /// When the request in progress received its first byte; nil between requests.
    private var requestStarted: NIODeadline?
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount, logger: Logger, onTimeout: @escaping @Sendable () -> Void) {
        self.timeout = timeout
        self.logger = logger
        self.onTimeout = onTimeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if requestStarted == nil {
            let now = NIODeadline.now()
            requestStarted = now
            if timer == nil { arm(context: context, at: now + timeout) }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        requestStarted = nil
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    private func disarm() {
        requestStarted = nil
        timer?.cancel()
        timer = nil
    }

    private func arm(context: ChannelHandlerContext, at deadline: NIODeadline) {
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.timerFired(context: context)
        }
    }

    private func timerFired(context: ChannelHandlerContext) {
        timer = nil
        guard let started = requestStarted else { return }
        let due = started + timeout
        guard due <= .now() else {
            arm(context: context, at: due)
            return
        }
        logger.notice("request not received in time, connection closed", metadata: [
            "peer": "\(context.channel.remoteAddress?.description ?? "unknown")",
        ])
        onTimeout()
        let answer = context.channel.allocator.buffer(string: Self.timeoutAnswer)
        context.writeAndFlush(NIOAny(IOData.byteBuffer(answer))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
