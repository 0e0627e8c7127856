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

import HTTPTypes
import IPNCore
@testable import IPNServer
import NIOCore
import Testing

@Suite("What is kept of each request's headers, and small formatting helpers")
struct StoredHeadersTests {
    private func parse(_ json: String) throws -> [JSONValue] {
        guard case .array(let items, _) = try JSONParser.parse(Array(json.utf8)) else {
            Issue.record("not a JSON array: \(json)")
            return []
        }
        return items
    }

    private func pair(_ value: JSONValue) -> (String, String)? {
        guard case .array(let parts, _) = value, parts.count == 2, let name = parts[0].string, let text = parts[1].string else {
            return nil
        }
        return (name, text)
    }

    @Test("credentials keep only their scheme; order, repeats and awkward characters survive as valid JSON")
    func redactsAndEscapes() throws {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .authorization, value: "Basic dXNlcjpzM2NyZXQ="))
        fields.append(HTTPField(name: .cookie, value: "session=abc"))
        fields.append(HTTPField(name: HTTPField.Name("X-Quote")!, value: #"say "hi" \ there"#))
        fields.append(HTTPField(name: HTTPField.Name("X-Forwarded-For")!, value: "10.0.0.1"))
        fields.append(HTTPField(name: HTTPField.Name("X-Forwarded-For")!, value: "10.0.0.2"))
        let json = StoredHeaders.json(fields)
        #expect(!json.contains("dXNlcjpzM2NyZXQ="))
        #expect(!json.contains("session=abc"))
        let pairs = try parse(json).compactMap(pair)
        #expect(pairs.map(\.0) == ["authorization", "cookie", "x-quote", "x-forwarded-for", "x-forwarded-for"])
        #expect(pairs.map(\.1) == ["Basic [redacted]", "[redacted]", #"say "hi" \ there"#, "10.0.0.1", "10.0.0.2"])
    }

    @Test("only a real auth scheme is kept", arguments: [
        ("Basic dXNlcjpwYXNz", "Basic [redacted]"), ("Bearer abc.def", "Bearer [redacted]"), ("session=abc", "[redacted]"),
        ("a=b; c=d", "[redacted]"), ("tokenwithoutscheme", "[redacted]"), ("", "[redacted]"),
        ("  Basic  abc", "Basic [redacted]"), ("Basic ", "[redacted]"), ("Basic   ", "Basic [redacted]"), ("   ", "[redacted]"),
        ("Bäsic abc", "[redacted]"), (String(repeating: "x", count: 33) + " abc", "[redacted]"),
    ])
    func schemes(value: String, kept: String) {
        #expect(StoredHeaders.redacted(value) == kept)
    }

    @Test("100 KB of headers are capped near 8 KB, say how many were dropped, and stay valid JSON")
    func caps() throws {
        var fields = HTTPFields()
        for index in 0..<100 {
            fields.append(HTTPField(name: HTTPField.Name("X-Filler-\(index)")!, value: String(repeating: "v", count: 1000)))
        }
        let json = StoredHeaders.json(fields)
        #expect(json.utf8.count <= StoredHeaders.maxBytes + 100)
        let pairs = try parse(json).compactMap(pair)
        let marker = try #require(pairs.last)
        #expect(marker.0 == "ipnd-truncated")
        #expect(marker.1 == "\(100 - (pairs.count - 1)) more header(s) not kept")
        #expect(pairs.count > 5)
    }

    @Test("milliseconds for logs")
    func milliseconds() {
        #expect(Duration.milliseconds(3).milliseconds == "3.00")
        #expect(Duration.microseconds(1234).milliseconds == "1.23")
        #expect(Duration.microseconds(50).milliseconds == "0.05")
        #expect(Duration.seconds(2).milliseconds == "2000.00")
    }

    @Test("peer addresses from socket addresses, IPv4-mapped IPv6 included")
    func peerAddresses() throws {
        let v4 = try SocketAddress(ipAddress: "192.0.2.7", port: 1)
        #expect(IPAddress(socketAddress: v4)?.description == "192.0.2.7")
        let v6 = try SocketAddress(ipAddress: "2001:db8::1", port: 1)
        #expect(IPAddress(socketAddress: v6)?.description == "2001:db8::1")
        let mapped = try SocketAddress(ipAddress: "::ffff:10.1.2.3", port: 1)
        #expect(IPAddress(socketAddress: mapped) == IPAddress("10.1.2.3"))
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
    }
}

@Suite("Header lookups by scan")
struct ScannedHeaderTests {
    @Test("give what HTTPFields' subscripts give: none, one, repeats in order, cookies joined with ;")
    func sameAsSubscripts() throws {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .contentType, value: "application/json"))
        fields.append(HTTPField(name: .xForwardedFor, value: "203.0.113.7"))
        fields.append(HTTPField(name: try #require(HTTPField.Name("x-forwarded-for")), value: "10.0.0.1, 10.0.0.2"))
        fields.append(HTTPField(name: .cookie, value: "a=1"))
        fields.append(HTTPField(name: .cookie, value: "b=2"))
        fields.append(HTTPField(name: .contentLength, value: "42"))
        for name: HTTPField.Name in [.contentType, .xForwardedFor, .cookie, .contentLength, .authorization] {
            #expect(fields.scannedValues(name) == fields[values: name])
            #expect(fields.scanned(name) == fields[name])
        }
        #expect(fields.scannedValues(.xForwardedFor) == ["203.0.113.7", "10.0.0.1, 10.0.0.2"])
        #expect(fields.scanned(.authorization) == nil)
    }
}
