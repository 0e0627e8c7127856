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
import NIOCore
import NIOHTTP1
import Testing

/// The console over plain HTTP, as a browser without scripts would use it: cookies kept from
/// `Set-Cookie`, redirects not followed (the tests look at them).
final class ConsoleClient: @unchecked Sendable {
    /// No redirects followed; never shut down (it lives as long as the test process).
    private static let http = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))

    let port: Int
    private(set) var cookies: [String: String] = [:]

    init(_ daemon: TestDaemon) {
        port = daemon.ports.ops
    }

    struct Answer {
        let status: Int
        let headers: HTTPHeaders
        let text: String
        var location: String? { headers["Location"].first }
        var setCookies: [String] { headers["Set-Cookie"] }

        /// The value of the first `name="csrf"` field of the page.
        var csrf: String? {
            guard let range = text.range(of: #"name="csrf" value=""#) else { return nil }
            return String(text[range.upperBound...].prefix { $0 != "\"" })
        }
    }

    func get(_ path: String) async throws -> Answer {
        try await send(.GET, path, body: nil)
    }

    /// POSTs `fields` as a form.
    func post(_ path: String, _ fields: [(String, String)]) async throws -> Answer {
        let body = fields.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        return try await send(.POST, path, body: body, contentType: "application/x-www-form-urlencoded")
    }

    /// Signs in with `token` through the form, as a person would.
    @discardableResult
    func signIn(_ token: String) async throws -> Answer {
        let form = try await get("/sign-in")
        return try await post("/sign-in", [("csrf", form.csrf ?? ""), ("next", "/"), ("token", token)])
    }

    func send(_ method: HTTPMethod, _ path: String, body: String?, contentType: String? = nil,
              headers extra: [(String, String)] = []) async throws -> Answer {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        if !cookies.isEmpty {
            request.headers.add(name: "Cookie", value: cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; "))
        }
        if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
        for (name, value) in extra { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await Self.http.execute(request, timeout: .seconds(30))
        let buffer = try await response.body.collect(upTo: 16 * 1024 * 1024)
        let answer = Answer(status: Int(response.status.code), headers: response.headers, text: String(buffer: buffer))
        for line in answer.setCookies {
            let pair = line.split(separator: ";", maxSplits: 1)[0].split(separator: "=", maxSplits: 1)
            guard pair.count == 2 || pair.count == 1 else { continue }
            let name = String(pair[0])
            let value = pair.count == 2 ? String(pair[1]) : ""
            if value.isEmpty || line.contains("Max-Age=0") { cookies[name] = nil } else { cookies[name] = value }
        }
        return answer
    }

    /// Sets (or, with nil, drops) a cookie by hand: a replayed or forged one.
    func setCookie(_ name: String, _ value: String?) {
        cookies[name] = value
    }

    static func encode(_ text: String) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
