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

/// The built `ipnd serve` binary as a child process, started the way the systemd unit starts it.
final class DaemonProcess: Sendable {
    let process: ChildProcess
    private let stderrLines = Locked<[String]>([])
    private let ports = Locked<(provider: Int, ops: Int)?>(nil)
    private let stderrClosed = Locked(false)

    /// Starts `ipnd serve --config configPath`, optionally through `launcher` (e.g. setpriv).
    /// With `journalStream`, `$JOURNAL_STREAM` names the stderr pipe, as systemd names the
    /// journal's stream.
    init(configPath: String, environment: [String: String] = [:], launcher: [String] = [], journalStream: Bool = false) throws {
        let process = ChildProcess()
        if launcher.isEmpty {
            process.executableURL = ipndBinary
            process.arguments = ["serve", "--config", configPath]
        } else {
            process.executableURL = URL(fileURLWithPath: launcher[0])
            process.arguments = Array(launcher.dropFirst()) + [ipndBinary.path, "serve", "--config", configPath]
        }
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "IPND_CONFIG")
        for (key, value) in environment { env[key] = value }
        let errorPipe = Pipe()
        var status = stat()
        if journalStream, fstat(errorPipe.fileHandleForWriting.fileDescriptor, &status) == 0 {
            env["JOURNAL_STREAM"] = "\(status.st_dev):\(status.st_ino)"
        } else {
            env.removeValue(forKey: "JOURNAL_STREAM")
        }
        process.environment = env
        process.standardError = errorPipe
        process.standardOutput = FileHandle.nullDevice
        self.process = process
        let lines = stderrLines
        let ports = self.ports
        try process.run()
        // A reader thread of its own rather than `readabilityHandler`, whose dispatch source in
        // swift-corelibs-foundation keeps the Process and its pipes alive for good (LeakSanitizer
        // reported every DaemonProcess under make test-sanitizers).
        let reader = errorPipe.fileHandleForReading
        let closed = stderrClosed
        Thread {
            // ipnd writes its log in batches: a read may end inside a line, kept for the next.
            var partial: [UInt8] = []
            while true {
                let data = reader.availableData
                guard !data.isEmpty else { break }
                partial.append(contentsOf: data)
                guard let lastNewline = partial.lastIndex(of: UInt8(ascii: "\n")) else { continue }
                let complete = partial[...lastNewline].split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
                partial.removeSubrange(...lastNewline)
                lines.withLock { $0.append(contentsOf: complete) }
                for line in complete where line.contains("msg=listening") {
                    ports.withLock { $0 = DaemonProcess.parsePorts(line) }
                }
            }
            if !partial.isEmpty { lines.withLock { $0.append(String(decoding: partial, as: UTF8.self)) } }
            try? reader.close()
            closed.withLock { $0 = true }
        }.start()
    }

    /// A test that fails half-way must not leave its daemon running.
    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    var logLines: [String] { stderrLines.withLock { $0 } }

    /// Every line the daemon wrote, once it has exited and its stderr is read to the end
    /// (nil if that takes longer than `timeout`).
    func allLogLines(timeout: Double = 10) async -> [String]? {
        await onDedicatedThread {
            let deadline = Date().addingTimeInterval(timeout)
            while !self.stderrClosed.withLock({ $0 }) {
                guard Date() < deadline else { return nil }
                usleep(10_000)
            }
            return self.logLines
        }
    }

    /// Waits until the daemon logs that it listens; returns its ports.
    func waitUntilListening(timeout: Double = 20) async throws -> (provider: Int, ops: Int) {
        let result = await onDedicatedThread { () -> Result<(provider: Int, ops: Int), DaemonProcessError> in
            Result { try self.blockingWaitUntilListening(timeout: timeout) }.mapError { $0 as! DaemonProcessError }
        }
        return try result.get()
    }

    private func blockingWaitUntilListening(timeout: Double) throws -> (provider: Int, ops: Int) {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let ports = ports.withLock({ $0 }) { return ports }
            if !process.isRunning { break }
            usleep(20_000)
        }
        throw DaemonProcessError.notListening(logLines.joined(separator: "\n"))
    }

    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits for exit on a thread of its own (never blocking the cooperative pool); returns the
    /// status, or nil if it did not exit in time (it is then killed).
    func waitForExit(timeout: Double) async -> Int32? {
        await onDedicatedThread { self.blockingWaitForExit(timeout: timeout) }
    }

    private func blockingWaitForExit(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        // Returns at once, and lets swift-corelibs-foundation release the Process: one only
        // ever polled with isRunning stays in a reference cycle (LeakSanitizer).
        process.waitUntilExit()
        return process.terminationStatus
    }

    private static func parsePorts(_ line: String) -> (provider: Int, ops: Int)? {
        func port(after key: String) -> Int? {
            guard let range = line.range(of: key + "=") else { return nil }
            let value = line[range.upperBound...].prefix { $0 != " " }
            return value.split(separator: ":").last.flatMap { Int($0) }
        }
        guard let provider = port(after: "provider_listener"), let ops = port(after: "ops_listener") else { return nil }
        return (provider, ops)
    }
}

enum DaemonProcessError: Error {
    case notListening(String)
}

/// A datagram socket standing in for systemd's notify socket.
final class NotifySocket: Sendable {
    let name: String
    private let fd: Int32

    /// Binds `@name` in the abstract namespace, or a filesystem path when `abstract` is false.
    init(abstract: Bool = true) throws {
        let unique = "ipnd-notify-\(UUID().uuidString.prefix(8))"
        name = abstract ? "@" + unique : FileManager.default.temporaryDirectory.appendingPathComponent(unique).path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard result == 0 else { throw DaemonProcessError.notListening("bind notify socket: \(errno)") }
        if !abstract { chmod(name, 0o777) }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Messages received within `seconds`, each with its arrival time, read on a thread of its own.
    func receive(for seconds: Double, until stop: @escaping @Sendable (String) -> Bool = { _ in false }) async -> [(at: Date, message: String)] {
        await onDedicatedThread { self.blockingReceive(for: seconds, until: stop) }
    }

    private func blockingReceive(for seconds: Double, until stop: (String) -> Bool) -> [(at: Date, message: String)] {
        var messages: [(Date, String)] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { continue }
            let message = String(decoding: buffer[0..<count], as: UTF8.self)
            messages.append((Date(), message))
            if stop(message) { break }
        }
        return messages
    }
}
