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

import Hummingbird
import HummingbirdCore
import IPNCore
import Logging
import NIOCore
import NIOHTTPTypes

/// Hummingbird's HTTP/1 channel with ipnd's two connection timers (`ConnectionTimerHandler`):
/// a request must arrive in full within `requestTimeout` of its first byte (a connection's
/// first request, of the connection's opening), and a keep-alive connection with no request
/// arriving and no answer owed is closed after `idleTimeout`. The time a
/// request then waits for its commit counts against neither: the store answers it, with its
/// acknowledgement or with 503.
struct DeadlineHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = HTTP1Channel.Value

    let responder: Responder
    let idleTimeout: TimeAmount
    let requestTimeout: TimeAmount
    let onTimeout: @Sendable () -> Void

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let timers = ConnectionTimerHandler(
            idleTimeout: idleTimeout, requestTimeout: requestTimeout, logger: logger, onTimeout: onTimeout)
        do {
            // In front of the HTTP decoder, to see a request's first byte before any part of it
            // can be decoded.
            try channel.pipeline.syncOperations.addHandler(timers)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        let boundTimers = NIOLoopBound(timers, eventLoop: channel.eventLoop)
        let http1 = HTTP1Channel(
            responder: responder,
            configuration: .init(additionalChannelHandlers: [RequestBoundaryHandler(timers: boundTimers.value)]))
        return http1.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // `RequestBoundaryHandler` does the job of Hummingbird's connection state handler
            // (closing on quiesce, by the timers' count of requests) and feeds that count; two
            // handlers casting every part would cost each request twice. Hummingbird's idle timer
            // is not wanted either: it only sees decoded parts, so it took a request whose head
            // had not arrived in full for an idle connection and closed it.
            let pipeline = channel.pipeline.syncOperations
            if let state = try? pipeline.handler(type: HTTPConnectionStateHandler.self) {
                pipeline.removeHandler(state, promise: nil)
            }
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await HTTP1Channel(responder: responder).handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1 with an idle timeout and a deadline for each request's arrival.
    static func http1(idleTimeout: TimeAmount, requestTimeout: TimeAmount, onTimeout: @escaping @Sendable () -> Void) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            DeadlineHTTP1Channel(
                responder: responder, idleTimeout: idleTimeout, requestTimeout: requestTimeout, onTimeout: onTimeout)
        }
    }
}

/// Sits next to the socket and keeps a connection's two deadlines.
///
/// - A request is *arriving* from its first inbound byte until the HTTP decoder has its end
///   (`requestReceived`). If `requestTimeout` passes first, the client gets `408 Request
///   Timeout` with `Connection: close` and the connection is closed; a provider endpoint still
///   reading the body sees it end early and keeps what arrived.
/// - A new connection's first request must arrive within `requestTimeout` of the connection's
///   opening: one that sends nothing in that time is closed without an answer. Otherwise
///   thousands of silent connections could each hold a descriptor and its buffers for the idle
///   timeout, which is for keep-alive connections between requests.
/// - A connection is *idle* while no request is arriving and every request received has been
///   answered (`answerSent`). After `idleTimeout` of that it is closed, as Hummingbird does.
/// - Between a request's end and its answer neither applies: the answer waits for the store,
///   whose busy timeout ends in 503.
///
/// One timer per connection, re-armed only when it fires: scheduling and cancelling a task for
/// every request showed in about 2 % of the profile's samples under load. It is never set
/// further ahead than the shorter of the two timeouts, so a deadline that starts later can
/// never be due before it fires.
///
/// An answer that ends its connection while the request's body is still coming (413, or a
/// refusal before the body was read) sends `LingeringClose`: the rest of the input is then
/// discarded unread, at the socket, until the client stops sending or for `lingerTime`, and the
/// output is shut once the answer is out. Closing at once would reset the connection while the
/// client is still sending, and the client would lose the answer.
final class ConnectionTimerHandler: ChannelDuplexHandler, RemovableChannelHandler {
    /// How long, and how many bytes of, a closing connection's input are discarded at most:
    /// enough for a client that sent an oversized body in one go to finish and read its answer,
    /// not enough for one that keeps sending to make ipnd read on.
    static let lingerTime: TimeAmount = .seconds(2)
    static let lingerBytes = 1 << 20

    /// Written straight to the socket: it is sent only when no answer is in flight.
    static let timeoutAnswer = "HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain\r\nContent-Length: 16\r\n"
        + "Connection: close\r\n\r\nrequest timeout\n"

    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let idleTimeout: TimeAmount
    private let requestTimeout: TimeAmount
    private let logger: Logger
    private let onTimeout: @Sendable () -> Void
    /// The first byte of the request arriving now; nil when none is.
    private var arrivingSince: NIODeadline?
    /// Since when the connection has been idle (for a new one, since its opening); nil while a
    /// request arrives or is answered.
    private var idleSince: NIODeadline?
    private var requestsReceived = 0
    private var answersSent = 0
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    /// Set by `LingeringClose`: input is discarded until then, and the connection closed.
    private var discardingUntil: NIODeadline?
    private var discardedBytes = 0

    init(idleTimeout: TimeAmount, requestTimeout: TimeAmount, logger: Logger, onTimeout: @escaping @Sendable () -> Void) {
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.logger = logger
        self.onTimeout = onTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start() }
    }

    func channelActive(context: ChannelHandlerContext) {
        start()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if discardingUntil != nil {
            // The answer is out, or on its way: the rest of the body is dropped unread.
            discardedBytes += unwrapInboundIn(data).readableBytes
            if discardedBytes > Self.lingerBytes { context.close(promise: nil) }
            return
        }
        if arrivingSince == nil {
            // A connection's first request counts from the connection's opening.
            arrivingSince = requestsReceived == 0 ? idleSince ?? .now() : .now()
            idleSince = nil
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard discardingUntil != nil else {
            context.fireChannelReadComplete()
            return
        }
        // Nothing after this handler reads any more, so it asks for the next bytes itself.
        context.read()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is LingeringClose else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        promise?.succeed(())
        guard discardingUntil == nil else { return }
        // The answer's last part may have passed already: the writer's tasks and this event
        // reach the event loop in either order.
        let answerIsOut = answersSent >= requestsReceived + (arrivingSince == nil ? 0 : 1)
        let until = NIODeadline.now() + Self.lingerTime
        discardingUntil = until
        arrivingSince = nil
        stop()
        arm(context: context, at: until)
        context.read()
        if answerIsOut { shutOutput(context: context) }
    }

    /// Ends the answer side of the connection after what was written, while input is discarded.
    private func shutOutput(context: ChannelHandlerContext) {
        // After the part being written now has passed this handler.
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.assumeIsolated().execute {
            let context = loopBound.value
            context.flush()
            context.close(mode: .output, promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        self.context = nil
    }

    /// The HTTP decoder has the end of a request: it has arrived in time.
    func requestReceived() {
        arrivingSince = nil
        requestsReceived += 1
        becomeIdleIfAnswered()
    }

    /// An answer's last part is on its way out.
    func answerSent() {
        answersSent += 1
        becomeIdleIfAnswered()
        // A client reading to the end of the connection sees it end with the answer.
        if discardingUntil != nil, let context { shutOutput(context: context) }
    }

    /// No request is arriving, and every request received has been answered.
    var isIdle: Bool { arrivingSince == nil && answersSent >= requestsReceived }

    private func becomeIdleIfAnswered() {
        if isIdle, idleSince == nil { idleSince = .now() }
    }

    private func start() {
        guard timer == nil, let context else { return }
        if arrivingSince == nil, idleSince == nil, requestsReceived == 0 { idleSince = .now() }
        arm(context: context, at: .now() + min(idleTimeout, requestTimeout))
    }

    private func stop() {
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
        let now = NIODeadline.now()
        if let until = discardingUntil {
            if until <= now {
                context.close(promise: nil)
            } else {
                arm(context: context, at: until)
            }
            return
        }
        var next = now + min(idleTimeout, requestTimeout)
        if let started = arrivingSince {
            let due = started + requestTimeout
            if due <= now {
                if answersSent > requestsReceived {
                    // This request was answered early (a refusal before its body was read):
                    // the client has its answer, so the rest that never came ends the connection.
                    context.close(promise: nil)
                    return
                }
                if answersSent == requestsReceived {
                    answerTimeout(context: context)
                    return
                }
                // An earlier request's answer is still being made: the 408 goes out after it.
                next = now + .milliseconds(50)
            } else {
                next = min(next, due)
            }
        } else if let since = idleSince {
            // A new connection that has not begun a request has the request deadline: the idle
            // timeout is for keep-alive connections between requests.
            let isNew = requestsReceived == 0
            let due = since + (isNew ? requestTimeout : idleTimeout)
            if due <= now {
                // No request was begun, so none is answered.
                if isNew {
                    logger.debug("connection sent nothing in time, closed", metadata: [
                        "peer": "\(context.channel.remoteAddress?.description ?? "unknown")",
                    ])
                }
                context.close(promise: nil)
                return
            }
            next = min(next, due)
        }
        arm(context: context, at: next)
    }

    private func answerTimeout(context: ChannelHandlerContext) {
        logger.notice("request not received in time, connection closed", metadata: [
            "peer": .string(context.channel.remoteAddress.flatMap(IPAddress.init(socketAddress:))?.description ?? "unknown"),
            "status": "408",
        ])
        onTimeout()
        let answer = context.channel.allocator.buffer(string: Self.timeoutAnswer)
        context.writeAndFlush(NIOAny(IOData.byteBuffer(answer))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}

/// Asks `ConnectionTimerHandler` to close the connection once the answer being written is out,
/// discarding what the client still sends until then (`Channel.triggerUserOutboundEvent`).
struct LingeringClose: Sendable {}

/// After the HTTP codec, in place of Hummingbird's `HTTPConnectionStateHandler`: tells
/// `ConnectionTimerHandler` where requests end and answers finish, and on graceful shutdown
/// closes the connection at once when it is idle, else once its answers are out.
final class RequestBoundaryHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timers: ConnectionTimerHandler
    private var closeWhenIdle = false

    init(timers: ConnectionTimerHandler) {
        self.timers = timers
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) { timers.requestReceived() }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        timers.answerSent()
        if closeWhenIdle, timers.isIdle {
            context.writeAndFlush(data, promise: promise)
            context.close(promise: nil)
        } else {
            context.write(data, promise: promise)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        if timers.isIdle {
            context.close(promise: nil)
        } else {
            closeWhenIdle = true
        }
    }
}
