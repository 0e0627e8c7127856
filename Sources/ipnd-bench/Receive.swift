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

import ArgumentParser
import Foundation
import IPNCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// `ipnd-bench receive`: the merchant's application at its fastest, for `make bench`'s delivery
/// passes: answers every POST 204 and counts it (signatures are not checked here: the test
/// suite checks them with the Standard Webhooks library). `GET /count` answers how many POSTs
/// it has answered and how many distinct webhook-ids were among them.
struct BenchReceive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive", abstract: "Answer every delivery 204 and count them (GET /count).")

    @Option(help: "The port to listen on, on 127.0.0.1.")
    var port: Int

    func run() async throws {
        try await ReceiverHandler.serve(port: port) { context, head in
            ReceiverHandler.answer(context, version: head.version, .noContent, "")
        }
    }
}

/// What the receiver has answered.
final class Tally: Sendable {
    private let state = Locked((posts: 0, ids: Set<String>()))

    func count(_ id: String?) {
        state.withLock { state in
            state.posts += 1
            if let id { state.ids.insert(id) }
        }
    }

    var text: String { state.withLock { "\($0.posts) \($0.ids.count)\n" } }
}

/// The bench's local HTTP servers (`receive`, `provider`): counts every POST (and its
/// webhook-id, when it has one) in a `Tally`, answers `GET /count` from it, and leaves the
/// answer to a POST to `respond`.
final class ReceiverHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    /// Answers a POST, once counted.
    typealias Respond = @Sendable (ChannelHandlerContext, HTTPRequestHead) -> Void

    private let tally: Tally
    private let respond: Respond
    private var head: HTTPRequestHead?

    init(tally: Tally, respond: @escaping Respond) {
        self.tally = tally
        self.respond = respond
    }

    /// Serves on 127.0.0.1:`port` from one event loop until the process ends, after printing
    /// `listening PORT`.
    static func serve(port: Int, respond: @escaping Respond) async throws {
        let tally = Tally()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 512)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(ReceiverHandler(tally: tally, respond: respond))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        print("listening \(port)")
        fflush(nil)
        try await channel.closeFuture.get()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            if head.method == .GET {
                Self.answer(context, version: head.version, .ok, tally.text)
            } else {
                tally.count(head.headers.first(name: "webhook-id"))
                respond(context, head)
            }
        }
    }

    /// Writes a whole answer: head, body (when there is one), end.
    static func answer(
        _ context: ChannelHandlerContext, version: HTTPVersion, _ status: HTTPResponseStatus, _ text: String, contentType: String? = nil
    ) {
        var body = ByteBuffer()
        body.writeString(text)
        var headers = HTTPHeaders()
        if let contentType { headers.add(name: "Content-Type", value: contentType) }
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: version, status: status, headers: headers))), promise: nil)
        if body.readableBytes > 0 { context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(body))), promise: nil) }
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
    }
}
