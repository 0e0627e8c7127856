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
import IPNConfig
import IPNCore
import NIOCore
import NIOHTTP1
import NIOSSL

/// Sends one signed event to one target: `POST url` with the event JSON, `Content-Type:
/// application/json`, `User-Agent`, and the Standard Webhooks headers (`webhook-id`,
/// `webhook-timestamp`, `webhook-signature` with one signature per secret). Redirects are not
/// followed; https is verified against the system's CAs or the target's `ca_file`.
public final class WebhookSender: Sendable {
    /// What came back.
    public struct Answer: Sendable, Equatable {
        /// The HTTP status; nil when no answer came (timeout, connection or TLS error).
        public var status: Int?
        public var retryAfter: String?
        /// Why no answer came, or the body's first bytes of an answer that is not 2xx.
        public var error: String?
        /// The answer's body, at most `bodyLimit` bytes of it (for `deliveries ping`).
        public var body: [UInt8]
        public var seconds: Double

        public var result: DeliveryAttemptResult {
            status.map { .response(status: $0, retryAfter: retryAfter) } ?? .noResponse
        }
    }

    /// The most of an answer's body that is read.
    static let bodyLimit = 4096

    private let clients: [String: HTTPClient]
    private let userAgent: String

    /// One HTTP client per trust configuration and timeout the targets need (the system's CAs,
    /// each `ca_file`; each `timeout_seconds`, which is also the client's read timeout).
    /// - Parameter eventLoopGroup: the threads the clients run on; NIO's shared ones when nil.
    public init(targets: [DeliveryTarget], userAgent: String, eventLoopGroup: (any EventLoopGroup)? = nil) throws {
        var clients: [String: HTTPClient] = [:]
        for target in targets {
            let key = Self.clientKey(target)
            guard clients[key] == nil else { continue }
            var tls = TLSConfiguration.makeClientConfiguration()
            if let caFile = target.caFile {
                tls.trustRoots = .file(caFile)
            }
            var configuration = HTTPClient.Configuration(
                tlsConfiguration: tls, redirectConfiguration: .disallow,
                timeout: .init(connect: .seconds(10), read: .seconds(Int64(target.timeoutSeconds))), decompression: .disabled)
            configuration.connectionPool = .init(idleTimeout: .seconds(50), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
            configuration.httpVersion = .http1Only
            clients[key] = HTTPClient(
                eventLoopGroupProvider: eventLoopGroup.map { .shared($0) } ?? .singleton, configuration: configuration)
        }
        self.clients = clients
        self.userAgent = userAgent
    }

    private static func clientKey(_ target: DeliveryTarget) -> String {
        "\(target.timeoutSeconds) \(target.caFile ?? "")"
    }

    /// Sends `body` as event `id` to `target`, signed now. Cancelling the task abandons the
    /// request (the caller retries it later).
    public func send(_ body: [UInt8], id: String, to target: DeliveryTarget, now: Date = Date()) async throws(CancellationError) -> Answer {
        let started = ContinuousClock.now
        @Sendable func elapsed() -> Double {
            let (seconds, attoseconds) = (ContinuousClock.now - started).components
            return Double(seconds) + Double(attoseconds) / 1e18
        }
        guard let client = clients[Self.clientKey(target)] else {
            return Answer(status: nil, error: "no HTTP client for this target (reload?)", body: [], seconds: 0)
        }
        var request = HTTPClientRequest(url: target.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: userAgent)
        let timestamp = Int64(now.timeIntervalSince1970)
        for (name, value) in WebhookSignature.headers(id: id, timestamp: timestamp, body: body, secrets: target.secrets) {
            request.headers.add(name: name, value: value)
        }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            // The answer's head must come within the target's timeout; its body may then take
            // no pause longer than that (the client's read timeout): a 2xx head delivers.
            let response = try await client.execute(request, timeout: .seconds(Int64(target.timeoutSeconds)))
            var answer = Answer(status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
                                error: nil, body: [], seconds: 0)
            var received: [UInt8] = []
            do {
                for try await part in response.body {
                    if received.count < Self.bodyLimit { received += part.readableBytesView.prefix(Self.bodyLimit - received.count) }
                }
            } catch {
                if Task.isCancelled { throw CancellationError() }
                if !(200...299).contains(Int(response.status.code)) { answer.error = "answer body: \(Self.describe(error))" }
            }
            answer.body = received
            if !(200...299).contains(Int(response.status.code)), answer.error == nil {
                answer.error = "HTTP \(response.status.code)"
            }
            answer.seconds = elapsed()
            return answer
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            if Task.isCancelled { throw CancellationError() }
            if let error = error as? HTTPClientError, error == .deadlineExceeded {
                return Answer(status: nil, error: "no answer within \(target.timeoutSeconds) s (timeout)", body: [], seconds: elapsed())
            }
            return Answer(status: nil, error: Self.describe(error), body: [], seconds: elapsed())
        }
    }

    /// Closes the HTTP clients' connections.
    public func shutdown() async {
        for client in clients.values { try? await client.shutdown() }
    }

    /// A short reason for a failed request, without the request's contents.
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return "connect timeout"
            case .readTimeout, .deadlineExceeded: return "timeout"
            case .remoteConnectionClosed: return "connection closed by the target"
            case .cancelled: return "cancelled"
            default: return "\(error)"
            }
        }
        if let error = error as? NIOSSLError { return "TLS: \(error)" }
        if let error = error as? BoringSSLError { return "TLS: \(error)" }
        return "\(error)".prefix(300).description
    }
}
