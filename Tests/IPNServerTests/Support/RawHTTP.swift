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

import Foundation

/// HTTP/1.1 over a plain blocking socket, byte for byte as written: for requests no well-behaved
/// client sends (a Content-Length that lies, repeated headers, 100 KB headers). Every exchange
/// runs on a thread of its own, never on the cooperative pool the in-process daemon needs.
enum RawHTTP {
    struct Answer: Sendable, CustomStringConvertible {
        /// nil when the connection closed (or the wait ended) before a status line arrived.
        var status: Int?
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
        /// Bytes that arrived after the first answer (a second answer, when there is one).
        var rest: [UInt8] = []
        var closed = false

        var text: String { String(decoding: body, as: UTF8.self) }
        var description: String { "\(status.map(String.init) ?? "no answer") \(text.prefix(120))\(closed ? " (closed)" : "")" }

        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// A request's bytes: request line, `Host`, the given header lines, a blank line, the body.
    /// `contentLength` nil sends none; the default is the body's true length.
    static func request(
        _ path: String,
        headers: [(String, String)],
        body: [UInt8],
        contentLength: Int? = -1,
        chunked: Bool = false
    ) -> [UInt8] {
        var head = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if chunked {
            head += "Transfer-Encoding: chunked\r\n"
        } else if let contentLength {
            head += "Content-Length: \(contentLength < 0 ? body.count : contentLength)\r\n"
        }
        head += "\r\n"
        guard chunked else { return Array(head.utf8) + body }
        var bytes = Array(head.utf8)
        var offset = 0
        while offset < body.count {
            let chunk = body[offset..<min(offset + 16384, body.count)]
            bytes += Array(String(chunk.count, radix: 16).utf8) + [13, 10] + chunk + [13, 10]
            offset += chunk.count
        }
        return bytes + Array("0\r\n\r\n".utf8)
    }

    /// Sends `bytes` to 127.0.0.1:`port` and reads until one whole answer arrived, the
    /// connection closed, or `timeout` seconds passed. With `expectSecond`, keeps reading for a
    /// second answer into `rest`.
    static func exchange(port: Int, _ bytes: [UInt8], timeout: Double = 10, expectSecond: Bool = false) async -> Answer {
        await onDedicatedThread { blockingExchange(port: port, bytes, timeout: timeout, expectSecond: expectSecond) }
    }

    /// 127.0.0.1:`port` (0: a port the system picks, when binding).
    static func loopbackAddress(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// A blocking TCP socket connected to 127.0.0.1:`port`, or nil; the caller closes it.
    static func connectLoopback(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Runs `script` on one connection to 127.0.0.1:`port`, on a thread of its own, then closes
    /// the connection; no answers when it could not be made.
    static func onConnection(port: Int, _ script: @escaping @Sendable (Int32) -> [Answer]) async -> [Answer] {
        await onDedicatedThread {
            guard let fd = connectLoopback(port: port) else { return [] }
            defer { close(fd) }
            return script(fd)
        }
    }

    /// Sends all of `bytes` on a connected blocking socket (call on a dedicated thread).
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return }
            sent += count
        }
    }

    /// One receive on a socket with a receive timeout: appends what arrived to `received`.
    /// False once the peer has closed the connection (or it failed), true while it is open.
    static func receive(_ fd: Int32, into received: inout [UInt8]) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &buffer, buffer.count, 0)
        if count > 0 {
            received += buffer[..<count]
            return true
        }
        return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    }

    /// Makes each `recv` on a blocking socket wait at most 50 ms, so reads can keep a deadline.
    private static func pollEvery50ms(_ fd: Int32) {
        var pollTimeout = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &pollTimeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Reads one whole answer from a connected blocking socket, or what arrived within
    /// `timeout` seconds (call on a dedicated thread).
    static func readAnswer(_ fd: Int32, timeout: Double) -> Answer {
        pollEvery50ms(fd)
        let deadline = Date().addingTimeInterval(timeout)
        var received: [UInt8] = []
        while Date() < deadline {
            guard receive(fd, into: &received) else {
                var answer = parse(received) ?? Answer(status: nil)
                answer.closed = true
                return answer
            }
            if let answer = parse(received) { return answer }
        }
        return parse(received) ?? Answer(status: nil)
    }

    /// Everything that arrives until the peer closes the connection, or `timeout` seconds
    /// pass; and whether it closed (call on a dedicated thread).
    static func readUntilClosed(_ fd: Int32, timeout: Double) -> (bytes: [UInt8], closed: Bool) {
        pollEvery50ms(fd)
        let deadline = Date().addingTimeInterval(timeout)
        var received: [UInt8] = []
        while Date() < deadline {
            guard receive(fd, into: &received) else { return (received, true) }
        }
        return (received, false)
    }

    private static func blockingExchange(port: Int, _ bytes: [UInt8], timeout: Double, expectSecond: Bool) -> Answer {
        guard let fd = connectLoopback(port: port) else { return Answer(status: nil, closed: true) }
        defer { close(fd) }
        pollEvery50ms(fd)
        var sendTimeout = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
        let deadline = Date().addingTimeInterval(timeout)
        var received: [UInt8] = []
        var sent = 0
        var closed = false
        // Send and read interleaved: the server may answer (and close) before it read everything.
        while Date() < deadline {
            if sent < bytes.count {
                let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, min($0.count, 65536), Int32(MSG_NOSIGNAL)) }
                if count > 0 {
                    sent += count
                } else if count < 0, errno != EAGAIN, errno != EWOULDBLOCK {
                    sent = bytes.count  // the server stopped reading; what it answers still counts
                }
            }
            guard receive(fd, into: &received) else {
                closed = true
                break
            }
            if var answer = parse(received) {
                if expectSecond, parse(answer.rest) == nil { continue }
                answer.closed = closed
                return answer
            }
        }
        var answer = parse(received) ?? Answer(status: nil)
        answer.closed = closed
        return answer
    }

    /// The first whole answer in `bytes` (by Content-Length; without one, up to the close).
    static func parse(_ bytes: [UInt8]) -> Answer? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else { return nil }
        let head = String(decoding: bytes[..<end], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let bodyStart = end + 4
        let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        guard bytes.count >= bodyStart + length else { return nil }
        return Answer(status: status, headers: headers, body: Array(bytes[bodyStart..<(bodyStart + length)]),
                      rest: Array(bytes[(bodyStart + length)...]))
    }
}
