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

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Hummingbird
import NIOCore
import ServiceLifecycle

/// A listener that could not start: its address is taken, not on this machine, or does not
/// resolve. Named by the config keys that give the address, so the fix is plain.
public struct ListenerError: Error, CustomStringConvertible {
    /// The config section whose `host` and `port` give the address: `server` or `ops`.
    public let section: String
    public let host: String
    public let port: Int
    /// Why: the system's words for the socket error, or the resolver's error.
    public let reason: String

    public var description: String {
        "cannot listen on \(host):\(port) (\(section).host, \(section).port): \(reason)"
    }
}

/// Runs one listener's application; an error before it is bound becomes a `ListenerError`.
struct Listener<App: ApplicationProtocol>: Service {
    let application: App
    let section: String
    let host: String
    let port: Int
    let isBound: @Sendable () -> Bool

    func run() async throws {
        do {
            try await application.run()
        } catch {
            guard !isBound() else { throw error }
            let reason: String
            if let error = error as? IOError {
                reason = String(cString: strerror(error.errnoCode))
            } else {
                reason = "\(error)"
            }
            throw ListenerError(section: section, host: host, port: port, reason: reason)
        }
    }
}
