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
import Logging

/// `sd_notify` written out: datagrams to the Unix socket in `$NOTIFY_SOCKET` (a path, or an
/// abstract-namespace name starting with `@`). Without `$NOTIFY_SOCKET` it does nothing.
public struct SystemdNotifier: Sendable {
    private let socketPath: String?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public var isEnabled: Bool { socketPath != nil }

    /// Sends `state` (`READY=1`, `WATCHDOG=1`, `STOPPING=1`, `STATUS=...`; newline-separated)
    /// once, without blocking: `false` when there is no socket, or when the receiver's queue is
    /// full (systemd busy, or a reader that stopped reading). A blocking send would hold one of
    /// the few threads that also serve requests, and could hold a graceful shutdown forever.
    @discardableResult
    public func notify(_ state: String) -> Bool {
        send(state) == .sent
    }

    /// Sends `state`, trying again every 20 ms while the receiver's queue is full, for at most
    /// `limit`; whether it was sent.
    public func deliver(_ state: String, within limit: Duration) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: limit)
        while true {
            switch send(state) {
            case .sent: return true
            case .failed: return false
            case .queueFull:
                guard clock.now < deadline else { return false }
                do {
                    try await Task.sleep(for: .milliseconds(20))
                } catch {
                    return send(state) == .sent  // cancelled: one last try
                }
            }
        }
    }

    private enum SendResult { case sent, queueFull, failed }

    private func send(_ state: String) -> SendResult {
        guard let socketPath else { return .failed }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failed }
        defer { close(fd) }

        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }  // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity || (pathBytes.first == 0 && pathBytes.count <= capacity) else { return .failed }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + pathBytes.count + (pathBytes.first == 0 ? 0 : 1))
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes {
                    sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), socketAddress, length)
                }
            }
        }
        if sent == message.count { return .sent }
        return sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? .queueFull : .failed
    }

    /// The watchdog interval systemd asks for (`$WATCHDOG_USEC`), if it is meant for this process.
    public static func watchdogInterval(environment: [String: String] = ProcessInfo.processInfo.environment) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], pid != String(getpid()) { return nil }
        return .microseconds(Int64(usec))
    }
}
