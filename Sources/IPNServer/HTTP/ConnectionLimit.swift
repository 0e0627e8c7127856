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

import CoreMetrics
import Foundation
import IPNCore

/// How many connections one listener holds at once. Each connection holds a file descriptor,
/// and the process has `RLIMIT_NOFILE` of them (the unit's `LimitNOFILE=`): the listeners share
/// what is left once a reserve is kept for everything else that needs one (the store's files and
/// sockets, the event loops, the log, the delivery clients). The ops listener has a small share
/// of its own, so `/metrics` and the console answer while providers' connections fill the rest.
/// A listener at its limit stops accepting (`ListenerGuard`); new connections wait in the listen
/// queue until some close.
///
/// Running out of descriptors altogether is not survivable: Dispatch, which runs Swift's tasks on
/// Linux, checks its worker threads once a second by opening `/proc/<tid>/stat`, and traps
/// (SIGILL) when that open fails while work is queued. A daemon made to hold more connections
/// than its descriptor limit died that way within seconds, in the test of this very case.
final class ConnectionLimit: Sendable {
    /// The most connections the listener holds; nil when the descriptor limit is unlimited.
    let limit: Int?
    /// The soft `RLIMIT_NOFILE` it is derived from.
    let descriptorLimit: UInt64?
    private let open = Locked(0)
    private let connections: Gauge

    init(limit: Int?, descriptorLimit: UInt64?, listener: String, factory: any MetricsFactory) {
        self.limit = limit
        self.descriptorLimit = descriptorLimit
        connections = Gauge(label: "ipnd_connections", dimensions: [("listener", listener)], factory: factory)
        connections.record(0)
        if let limit {
            Gauge(label: "ipnd_connections_limit", dimensions: [("listener", listener)], factory: factory).record(Double(limit))
        }
    }

    /// The limits of the provider-facing (`server`) and `ops` listeners for `descriptors`
    /// (nil: unlimited). A sixteenth of the descriptors, and at least 64, are kept for the rest of
    /// the process (at most half of a small limit, which then wants raising); of the others the
    /// ops listener takes a quarter, at most 64.
    static func limits(descriptors: UInt64?) -> (server: Int?, ops: Int?) {
        guard let descriptors else { return (nil, nil) }
        let total = Int(clamping: descriptors)
        let connections = max(total - max(64, total / 16), total / 2)
        let ops = max(1, min(64, connections / 4))
        return (max(1, connections - ops), ops)
    }

    /// The soft `RLIMIT_NOFILE`, what `LimitNOFILE=` sets; nil when unlimited (RLIM_INFINITY) or unreadable.
    static func descriptorLimit() -> UInt64? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return UInt64(limit.rlim_cur)
    }

    /// Whether the listener is at its limit.
    var isReached: Bool {
        guard let limit else { return false }
        return openConnections >= limit
    }

    var openConnections: Int { open.withLock { $0 } }

    /// Counts an accepted connection.
    func opened() {
        let count = open.withLock { count -> Int in
            count += 1
            return count
        }
        connections.record(Double(count))
    }

    /// Counts a closed connection.
    func closed() {
        let count = open.withLock { count -> Int in
            count -= 1
            return count
        }
        connections.record(Double(count))
    }
}
