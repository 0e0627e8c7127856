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

import AsyncHTTPClient
import Foundation
import IPNCore
import NIOCore
import NIOHTTP1
import NIOSSL

/// Sends inquiry requests to providers' status APIs: one HTTP client (the system's CAs,
/// redirects not followed, at most `bodyLimit` of an answer read), shared by every account.
public final class InquiryClient: Sendable {
    /// The most of an answer that is read (inquiries.md: 1 MiB).
    public static let bodyLimit = 1 << 20

    private let client: HTTPClient
    private let userAgent: String

    /// Why no answer came.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// - Parameter eventLoopGroup: the threads the client runs on; NIO's shared ones when nil.
    public init(userAgent: String, eventLoopGroup: (any EventLoopGroup)? = nil) {
        // Each exchange has its own deadline (`send`); these only bound what it cannot see.
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: TLSConfiguration.makeClientConfiguration(), redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10), read: .seconds(300)), decompression: .disabled)
        // As many connections to one provider as `reconcile.max_in_flight` allows (at most 256).
        configuration.connectionPool = .init(idleTimeout: .seconds(50), concurrentHTTP1ConnectionsPerHostSoftLimit: 256)
        configuration.httpVersion = .http1Only
        client = HTTPClient(eventLoopGroupProvider: eventLoopGroup.map { .shared($0) } ?? .singleton, configuration: configuration)
        self.userAgent = userAgent
    }

    /// Sends `request` and reads its whole answer within `timeout`. Throws `Failure` when no
    /// usable answer came (timeout, connection, TLS, an answer over the body limit),
    /// `CancellationError` when the task was cancelled.
    public func send(_ request: InquiryRequest, timeout: Duration) async throws -> InquiryAnswer {
        try await withThrowingTaskGroup(of: InquiryAnswer.self) { group in
            group.addTask { try await self.exchange(request, timeout: timeout) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw Failure("no answer within \(timeout.components.seconds) s (timeout)")
            }
            defer { group.cancelAll() }
            guard let answer = try await group.next() else { throw CancellationError() }
            return answer
        }
    }

    private func exchange(_ request: InquiryRequest, timeout: Duration) async throws -> InquiryAnswer {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for header in request.headers { outgoing.headers.add(name: header.name, value: header.value) }
        if !outgoing.headers.contains(name: "User-Agent") { outgoing.headers.add(name: "User-Agent", value: userAgent) }
        if request.method != "GET" || !request.body.isEmpty { outgoing.body = .bytes(ByteBuffer(bytes: request.body)) }
        do {
            let response = try await client.execute(outgoing, timeout: .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000))
            var body: [UInt8] = []
            for try await part in response.body {
                guard body.count + part.readableBytes <= Self.bodyLimit else {
                    throw Failure("answer larger than \(Self.bodyLimit / 1024) KiB; not read")
                }
                body += part.readableBytesView
            }
            return InquiryAnswer(
                status: Int(response.status.code), headers: response.headers.map { InquiryHeader($0.name, $0.value) }, body: body)
        } catch let failure as Failure {
            throw failure
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw Failure(Self.describe(error, timeout: timeout))
        }
    }

    /// Closes the client's connections.
    public func shutdown() async {
        try? await client.shutdown()
    }

    /// A short reason for a failed request, never with the request's contents (credentials).
    static func describe(_ error: any Error, timeout: Duration) -> String {
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return "connect timeout"
            case .readTimeout, .deadlineExceeded: return "no answer within \(timeout.components.seconds) s (timeout)"
            case .remoteConnectionClosed: return "connection closed by the provider"
            case .cancelled: return "cancelled"
            default: return "connection: \(error)"
            }
        }
        if let error = error as? NIOSSLError { return "TLS: \(error)" }
        if let error = error as? BoringSSLError { return "TLS: \(error)" }
        return "connection: " + "\(error)".prefix(300)
    }
}
