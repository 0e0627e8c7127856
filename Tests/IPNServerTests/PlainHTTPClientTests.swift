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

@testable import IPNCommands
import NIOCore
import NIOPosix
import Testing

/// A listener that accepts connections and then either stays silent or hangs up at once:
/// the two ways a wrong `--url` can fail after connecting.
private func listener(hangUp: Bool) async throws -> any Channel {
    try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .childChannelInitializer { channel in
            hangUp ? channel.close() : channel.eventLoop.makeSucceededVoidFuture()
        }
        .bind(host: "127.0.0.1", port: 0)
        .get()
}

@Suite("simulate's HTTP client (issue 4)")
struct PlainHTTPClientTests {
    @Test("a listener that never answers fails with a timeout instead of hanging")
    func silentListener() async throws {
        let server = try await listener(hangUp: false)
        let port = try #require(server.localAddress?.port)
        var client = PlainHTTPClient()
        client.answerTimeoutSeconds = 1
        let failure = await #expect(throws: PlainHTTPClient.Failure.self) {
            _ = try await client.post(host: "127.0.0.1", port: port, target: "/ipn/unlimint", headers: [], body: Array("{}".utf8))
        }
        #expect(failure?.description == "no answer within 1 s")
        try await server.close()
    }

    @Test("a listener that hangs up before answering is a failure, not a hang")
    func hangUp() async throws {
        let server = try await listener(hangUp: true)
        let port = try #require(server.localAddress?.port)
        await #expect(throws: (any Error).self) {
            _ = try await PlainHTTPClient().post(host: "127.0.0.1", port: port, target: "/", headers: [], body: [])
        }
        try await server.close()
    }

    @Test("the Host field carries the port unless it is 80, IPv6 literals in brackets")
    func hostField() {
        #expect(PlainHTTPClient.hostHeader(host: "127.0.0.1", port: 8080) == "127.0.0.1:8080")
        #expect(PlainHTTPClient.hostHeader(host: "ipnd.internal", port: 80) == "ipnd.internal")
        #expect(PlainHTTPClient.hostHeader(host: "::1", port: 8080) == "[::1]:8080")
    }
}
