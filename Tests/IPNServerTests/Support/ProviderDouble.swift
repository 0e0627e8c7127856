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
import IPNTestSupport
import NIOCore
import Testing

/// tools/provider_double.py as a child process: one HTTP server speaking the five providers'
/// status APIs as inquiries.md describes, written apart from ipnd's code. It checks ipnd's
/// requests as the provider would (Antom's signature, Basic auth, tokens it issued and expires),
/// records every request with its checks, and answers each order as a test scripts it.
final class ProviderDouble: @unchecked Sendable {
    let port: Int
    let directory: URL
    private let process: ChildProcess

    /// The credentials the double expects; the daemon's `inquiry` sections use the same.
    static let ipay88MerchantCode = "KH00001"
    static let antomClientID = "SANDBOX_5YTEST0000000001"
    static let unlimintTerminal = "T-1001"
    static let unlimintPassword = "terminal-pass-word"
    static let juspayAPIKey = "juspay-api-key-test"
    static let juspayMerchant = "merchant_test"
    static let citconPrivateKey = "citcon-upi-private-key-test"

    /// One request the double received.
    struct Request: @unchecked Sendable {
        let object: JSONDict
        var provider: String { object.string("provider") ?? "" }
        var kind: String { object.string("kind") ?? "" }
        var order: String? { object.string("order") }
        var method: String { object.string("method") ?? "" }
        var path: String { object.string("path") ?? "" }
        var query: [String: String] { (object["query"] as? [String: String]) ?? [:] }
        var headers: [String: String] { (object["headers"] as? [String: String]) ?? [:] }
        var body: String { object.string("body") ?? "" }
        var checks: JSONDict { (object["checks"] as? JSONDict) ?? [:] }
        var answered: Int? { object.int("answered") }
        /// Every check the double made passed (signature, credentials, window).
        var passedChecks: Bool { checks.values.allSatisfy { ($0 as? Bool) ?? true } }
    }

    init(tokenTTLSeconds: Int = 300) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-double-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config: [String: Any] = [
            "ipay88": ["merchant_code": Self.ipay88MerchantCode],
            "alipay": [
                "client_id": Self.antomClientID,
                "merchant_public_key_file": Fixture.path("antom-merchant-test-public-key.b64"),
                "antom_private_key_file": Fixture.path("alipay-test-private-key.pem"),
            ],
            "unlimint": ["terminal_code": Self.unlimintTerminal, "terminal_password": Self.unlimintPassword, "token_ttl_seconds": tokenTTLSeconds],
            "juspay": ["api_key": Self.juspayAPIKey, "merchant_id": Self.juspayMerchant],
            "citcon": ["private_key": Self.citconPrivateKey, "token_ttl_seconds": tokenTTLSeconds],
        ]
        let configPath = directory.appendingPathComponent("double.json")
        try JSONSerialization.data(withJSONObject: config).write(to: configPath)
        (process, port) = try PythonTool.start(
            "provider_double.py", ["--port", "0", "--config", configPath.path], missing: "cryptography")
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// The `inquiry` url of each provider's accounts (the defaults' paths, on the double).
    func inquiryURL(_ provider: String) -> String {
        switch provider {
        case "ipay88": "\(base)/epayment/enquiry.asp"
        case "citcon": "\(base)/v1"
        default: base
        }
    }

    /// Scripts the replies to inquiries about `order` (the last one repeats).
    func script(_ provider: String, order: String, _ replies: [[String: Any]]) async throws {
        try await control("/_double/script", ["provider": provider, "order": order, "replies": replies])
    }

    /// Scripts the replies, each written as a JSON object.
    func script(_ provider: String, order: String, json replies: [String]) async throws {
        let objects = try replies.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) }
        try await control("/_double/script", ["provider": provider, "order": order, "replies": objects])
    }

    /// Makes every token issued so far invalid.
    func expireTokens(_ provider: String? = nil) async throws {
        try await control("/_double/expire-tokens", ["provider": provider ?? NSNull()])
    }

    func reset() async throws {
        try await control("/_double/reset", [:])
    }

    /// What the double received, oldest first.
    func requests(provider: String? = nil, order: String? = nil) async throws -> [Request] {
        var query: [String] = []
        if let provider { query.append("provider=\(provider)") }
        if let order { query.append("order=\(order.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? order)") }
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "\(base)/_double/requests" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))),
            timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 64 << 20)
        let value = try JSONSerialization.jsonObject(with: Data(buffer: body))
        return ((value as? [JSONDict]) ?? []).map(Request.init)
    }

    /// The inquiries (not token requests) about `order`.
    func inquiries(_ provider: String, order: String) async throws -> [Request] {
        try await requests(provider: provider, order: order).filter { $0.kind == "inquiry" }
    }

    /// Requests being answered right now (stalled ones included).
    func inFlight() async throws -> Int {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "\(base)/_double/in-flight"), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return try parseJSONObject(String(buffer: body)).int("count") ?? -1
    }

    /// Waits until `condition` holds for the requests about `order`, at most `timeout` seconds.
    @discardableResult
    func wait(_ provider: String, order: String, timeout: Double, until condition: ([Request]) -> Bool) async throws -> [Request] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let requests = try await inquiries(provider, order: order)
            if condition(requests) || Date() > deadline { return requests }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    private func control(_ path: String, _ object: [String: Any]) async throws {
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object)))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status.code == 200 else {
            throw DoubleError(message: "\(path) answered \(response.status.code): \(String(buffer: body))")
        }
    }

    /// Stops the double (SIGKILL, as WebhookReceiver does).
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        while process.isRunning { usleep(10_000) }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    struct DoubleError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}
