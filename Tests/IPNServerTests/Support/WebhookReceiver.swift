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
import IPNTestSupport
import IPNCore
import Testing

/// tools/webhook_receiver.py as a child process: a merchant's receiver that verifies every
/// request with the Standard Webhooks reference library and logs what it got and answered.
final class WebhookReceiver: @unchecked Sendable {
    /// One request the receiver got.
    struct Request: Sendable {
        let time: Double
        let id: String
        let seq: Int
        let type: String
        let order: String
        let verified: [Bool]
        let answer: String
        let signatures: Int
        let userAgent: String?
        let contentType: String?
        let timestamp: String?
        let body: String?
    }

    let port: Int
    let secrets: [String]
    let logPath: String
    let controlPath: String
    private let process: ChildProcess

    /// A fresh `whsec_` secret of 32 random bytes.
    static func newSecret() -> String {
        "whsec_" + Base64.encode((0..<32).map { _ in UInt8.random(in: 0...255) })
    }

    /// A TCP port nothing listens on right now (for a receiver started later).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Bool in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw ReceiverError(message: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Starts the receiver; `port` 0 picks a free one.
    init(secrets: [String], mode: String = "ok", port: Int = 0, arguments: [String] = [], logPath: String? = nil,
         keepBodies: Bool = false) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-receiver-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.logPath = logPath ?? directory.appendingPathComponent("requests.jsonl").path
        controlPath = directory.appendingPathComponent("mode").path
        self.secrets = secrets
        (self.process, self.port) = try PythonTool.start(
            "webhook_receiver.py",
            ["--port", String(port), "--mode", mode, "--log", self.logPath, "--control", controlPath]
                + secrets.flatMap { ["--secret", $0] } + arguments + (keepBodies ? ["--keep-bodies"] : []),
            missing: "standardwebhooks")
    }

    var url: String { "http://127.0.0.1:\(port)/hooks/ipnd" }

    /// Switches the receiver's behaviour while it runs.
    func setMode(_ mode: String) throws {
        try Data(mode.utf8).write(to: URL(fileURLWithPath: controlPath))
    }

    /// Stops the receiver (SIGKILL: children of the test process inherit its blocked SIGTERM).
    /// Polls `isRunning`, which Foundation's monitor thread updates: `waitUntilExit` spins the
    /// calling thread's run loop, and hung when called from a deinit while the test process exited.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        while process.isRunning { usleep(10_000) }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// What it got so far.
    func requests() throws -> [Request] {
        guard let data = FileManager.default.contents(atPath: logPath) else { return [] }
        return try String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
            let object = try parseJSONObject(String(line))
            return Request(
                time: (object["t"] as? NSNumber)?.doubleValue ?? 0, id: object.string("id") ?? "", seq: object.int("seq") ?? -1,
                type: object.string("type") ?? "", order: object.string("order") ?? "",
                verified: (object["verified"] as? [Bool]) ?? [], answer: object.string("answer") ?? "",
                signatures: object.int("signatures") ?? 0, userAgent: object.string("user_agent"),
                contentType: object.string("content_type"), timestamp: object.string("timestamp"), body: object.string("body"))
        }
    }

    /// The seqs answered 2xx so far.
    func deliveredSeqs() throws -> Set<Int> {
        Set(try requests().filter { $0.answer == "200" }.map(\.seq))
    }

    /// Waits until `condition` holds for what was received, at most `timeout` seconds.
    @discardableResult
    func wait(timeout: Double, until condition: ([Request]) -> Bool) async throws -> [Request] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let requests = try requests()
            if condition(requests) { return requests }
            if Date() > deadline { return requests }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    struct ReceiverError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}

/// A `deliveries:` config section with one target.
func deliveriesYAML(name: String = "app", url: String, secrets: [String], extra: String = "") -> String {
    """
    deliveries:
      - name: \(name)
        url: \(url)
        secret: [\(secrets.joined(separator: ", "))]
        timeout_seconds: 2
    \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
    """
}
