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

import IPNCore

/// The configuration in force in a running daemon, replaced as a whole by a reload (SIGHUP).
/// Readers take the current value once per request; a request in flight finishes with the
/// config it started with.
public final class LiveConfig: Sendable {
    private let state: Locked<IPNDConfig>

    public init(_ config: IPNDConfig) {
        state = Locked(config)
    }

    public var current: IPNDConfig { state.withLock { $0 } }

    public func replace(_ config: IPNDConfig) {
        state.withLock { $0 = config }
    }
}

/// What a reload can apply at once, and what only a restart changes: the listeners (their
/// addresses and timeouts) and the store.
public enum ReloadScope {
    /// The keys whose new values wait for a restart, in config order.
    public static func needsRestart(from old: IPNDConfig, to new: IPNDConfig) -> [String] {
        var keys: [String] = []
        if old.server.host != new.server.host { keys.append("server.host") }
        if old.server.port != new.server.port { keys.append("server.port") }
        if old.server.requestTimeoutSeconds != new.server.requestTimeoutSeconds { keys.append("server.request_timeout_seconds") }
        if old.server.idleTimeoutSeconds != new.server.idleTimeoutSeconds { keys.append("server.idle_timeout_seconds") }
        if old.store.path != new.store.path { keys.append("store.path") }
        if old.store.postgres != new.store.postgres { keys.append("store.postgres") }
        if old.store.maxBatch != new.store.maxBatch { keys.append("store.max_batch") }
        if old.ops.host != new.ops.host { keys.append("ops.host") }
        if old.ops.port != new.ops.port { keys.append("ops.port") }
        if old.ops.consoleSecureCookie != new.ops.consoleSecureCookie { keys.append("ops.console_secure_cookie") }
        return keys
    }

    /// The config a reload puts in force: `new`, except the listeners and the store, which
    /// keep `old`'s values until a restart.
    public static func inForce(from old: IPNDConfig, to new: IPNDConfig) -> IPNDConfig {
        var config = new
        config.server.host = old.server.host
        config.server.port = old.server.port
        config.server.requestTimeoutSeconds = old.server.requestTimeoutSeconds
        config.server.idleTimeoutSeconds = old.server.idleTimeoutSeconds
        config.store.path = old.store.path
        config.store.postgres = old.store.postgres
        config.store.maxBatch = old.store.maxBatch
        config.ops.host = old.ops.host
        config.ops.port = old.ops.port
        config.ops.consoleSecureCookie = old.ops.consoleSecureCookie
        return config
    }
}
