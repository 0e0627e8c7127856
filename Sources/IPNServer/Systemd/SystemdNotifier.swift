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

    /// Sends `state` (`READY=1`, `WATCHDOG=1`, `STOPPING=1`, `STATUS=...`; newline-separated).
    ///
    /// Never blocks: when the receiver's queue is full (systemd busy, or a reader that stopped
    /// reading), the message is dropped and `false` returned. A blocking send would hold one of
    /// the few threads that also serve requests, and could hold a graceful shutdown forever.
    @discardableResult
    public func notify(_ state: String) -> Bool {
        guard let socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }

        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }  // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity || (pathBytes.first == 0 && pathBytes.count <= capacity) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + pathBytes.count + (pathBytes.first == 0 ? 0 : 1))
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), socketAddress, length) }
            }
        }
        return sent == message.count
    }

    /// The watchdog interval systemd asks for (`$WATCHDOG_USEC`), if it is meant for this process.
    public static func watchdogInterval(environment: [String: String] = ProcessInfo.processInfo.environment) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], pid != String(getpid()) { return nil }
        return .microseconds(Int64(usec))
    }
}
