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

import NIOCore
import NIOHTTP1
import NIOPosix

/// One HTTP/1.1 request over a new plain-text connection, for `ipnd simulate`.
///
/// NIO's HTTP/1 codec writes and parses the wire format; this type only sends the request's
/// head, body and end and collects the answer. It is deliberately small: `simulate` talks to
/// ipnd's own listener, and a general client (TLS, pooling, redirects, retries) would add
/// several megabytes of code to a daemon that never uses it. Through a TLS proxy, `--print`
/// gives a curl command instead.
struct PlainHTTPClient {
    struct Answer {
        let status: HTTPResponseStatus
        let body: String
    }

    enum Failure: Error, CustomStringConvertible {
        case timedOut(seconds: Int64)
        case closedBeforeAnswer
        case answerTooLarge(limit: Int)

        var description: String {
            switch self {
            case .timedOut(let seconds): "no answer within \(seconds) s"
            case .closedBeforeAnswer: "the connection closed before a complete answer"
            case .answerTooLarge(let limit): "the answer is larger than \(limit) bytes"
            }
        }
    }

    var connectTimeout: TimeAmount = .seconds(5)
    var answerTimeoutSeconds: Int64 = 30
    var answerLimit = 1024 * 1024

    /// POSTs `body` to `http://host:port` + `target` with `headers` (Host, Content-Length and
    /// Connection are set here) and returns the status and body of the answer.
    func post(
        host: String, port: Int, target: String, headers: [(name: String, value: String)], body: [UInt8]
    ) async throws -> Answer {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(connectTimeout)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                        wrappingChannelSynchronously: channel)
                }
            }
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: target)
        head.headers.add(name: "Host", value: Self.hostHeader(host: host, port: port))
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        head.headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        head.headers.replaceOrAdd(name: "Connection", value: "close")
        let requestHead = head
        let limit = answerLimit
        let timeout = answerTimeoutSeconds

        return try await withThrowingTaskGroup(of: Answer?.self) { group in
            group.addTask {
                try await channel.executeThenClose { inbound, outbound in
                    try await outbound.write(.head(requestHead))
                    try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
                    try await outbound.write(.end(nil))
                    var status: HTTPResponseStatus?
                    var collected = ByteBuffer()
                    for try await part in inbound {
                        switch part {
                        case .head(let responseHead):
                            status = responseHead.status
                        case .body(var chunk):
                            guard collected.readableBytes + chunk.readableBytes <= limit else {
                                throw Failure.answerTooLarge(limit: limit)
                            }
                            collected.writeBuffer(&chunk)
                        case .end:
                            guard let status else { throw Failure.closedBeforeAnswer }
                            return Answer(status: status, body: String(buffer: collected))
                        }
                    }
                    throw Failure.closedBeforeAnswer
                }
            }
            // The timer finishes with nil; whichever child finishes first decides.
            group.addTask {
                try await Task.sleep(for: .seconds(timeout))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let answer = first else {
                // Closing ends the exchange, which may be waiting for bytes that never come.
                channel.channel.close(promise: nil)
                throw Failure.timedOut(seconds: timeout)
            }
            return answer
        }
    }

    /// `host` or `host:port` (IPv6 literals in brackets), as RFC 9110's Host field wants it.
    static func hostHeader(host: String, port: Int) -> String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == 80 ? name : "\(name):\(port)"
    }
}
