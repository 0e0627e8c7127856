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
import IPNCore
import Logging
import ServiceLifecycle

/// How many rejected requests each client may have stored per window
/// (`server.rejected_store_per_minute`, product.md section 11): unauthenticated traffic cannot
/// fill the disk. Beyond the budget a rejected request is answered as it would be, but not
/// stored; at the end of each window every client that went past it is reported once, with
/// how many of its requests were not stored.
///
/// Windows are fixed (one minute, aligned to the clock), the same for every client: a client's
/// count starts again at each window, and the table of clients is emptied with it, so its memory
/// is bounded by the clients of one window. A client is an IPv4 address, or an IPv6 /64 (one
/// subscriber's network: counted per address, an IPv6 flood would have a fresh budget for every
/// request). Past `maxClients` clients in one window, the others share one budget: a flood from
/// many addresses cannot grow the table, nor store more than that shared budget beyond it.
///
/// ```swift
/// let budget = RejectedStoreBudget(perWindow: 600)
/// let admission = budget.admit(clientIP, at: nowMilliseconds)
/// RejectedStoreBudget.log(admission.ended, logger: logger)
/// if admission.store { /* record the rejected request */ }
/// ```
final class RejectedStoreBudget: Sendable {
    /// The window's length in milliseconds (a minute, but for tests).
    let windowMilliseconds: Int64
    /// How many clients one window tracks each with its own budget.
    let maxClients: Int
    private let state: Locked<State>

    /// A client as the budget counts it.
    enum Client: Hashable, Sendable, CustomStringConvertible {
        case ipv4(UInt32)
        /// The first 64 bits of an IPv6 address.
        case ipv6Network(UInt64)
        /// The peer's address was not known.
        case unknown
        /// Clients past `maxClients` in one window, sharing one budget.
        case others

        init(_ address: IPAddress?) {
            guard let address else {
                self = .unknown
                return
            }
            let bytes = address.bytes
            if bytes.count == 4 {
                self = .ipv4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
            } else {
                self = .ipv6Network(bytes.prefix(8).reduce(0) { $0 << 8 | UInt64($1) })
            }
        }

        var description: String {
            switch self {
            case .ipv4(let value):
                return IPAddress(bytes: (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) })?.description ?? "?"
            case .ipv6Network(let value):
                let bytes = (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) } + Array(repeating: 0, count: 8)
                return (IPAddress(bytes: bytes)?.description ?? "?") + "/64"
            case .unknown: return "unknown"
            case .others: return "others"
            }
        }
    }

    /// One client's window that ended with requests not stored: what the log line says.
    struct Report: Sendable, Equatable {
        let client: Client
        /// Rejected requests of the window that were stored, and those that were not.
        let stored: Int
        let notStored: Int
        /// When the window began, in milliseconds since 1970.
        let windowStart: Int64
    }

    /// Whether a rejected request may be stored, and the reports of a window that its arrival
    /// ended (to log).
    struct Admission: Sendable, Equatable {
        let store: Bool
        let ended: [Report]
    }

    private struct Tally {
        var stored = 0
        var notStored = 0
    }

    private struct State {
        var perWindow: Int
        /// The current window's start; nil before the first request.
        var windowStart: Int64?
        var clients: [Client: Tally] = [:]
    }

    /// - Parameters:
    ///   - perWindow: rejected requests stored per client and window; 0 stores none.
    ///   - window: a minute, but for tests.
    init(perWindow: Int, window: Duration = .seconds(60), maxClients: Int = 10_000) {
        let (seconds, attoseconds) = window.components
        windowMilliseconds = max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        self.maxClients = max(1, maxClients)
        state = Locked(State(perWindow: max(0, perWindow)))
    }

    /// The budget per client and window from now on (a reloaded config).
    func setPerWindow(_ perWindow: Int) {
        state.withLock { $0.perWindow = max(0, perWindow) }
    }

    /// Counts a rejected request of `address` arriving at `now` (milliseconds since 1970) and
    /// says whether it may be stored; ends the previous window first when its time is over.
    func admit(_ address: IPAddress?, at now: Int64) -> Admission {
        let client = Client(address)
        return state.withLock { state in
            let ended = Self.roll(&state, to: windowStart(now))
            var key = client
            if state.clients[key] == nil, state.clients.count >= maxClients { key = .others }
            var tally = state.clients[key] ?? Tally()
            let store = tally.stored < state.perWindow
            if store { tally.stored += 1 } else { tally.notStored += 1 }
            state.clients[key] = tally
            return Admission(store: store, ended: ended)
        }
    }

    /// Ends the current window when its time is over at `now`: the reports of its clients that
    /// went past the budget (none when the window is still running).
    func close(at now: Int64) -> [Report] {
        state.withLock { state in Self.roll(&state, to: windowStart(now)) }
    }

    /// Ends the current window now, whether or not its time is over (shutdown): the reports of
    /// its clients that went past the budget so far. Their counts start again.
    func flush() -> [Report] {
        state.withLock { state in
            guard let current = state.windowStart else { return [] }
            let reports = Self.reports(state.clients, windowStart: current)
            state.clients = [:]
            return reports
        }
    }

    /// Rejected requests stored per client and window.
    var perWindow: Int { state.withLock { $0.perWindow } }

    /// How many clients the current window tracks.
    var trackedClients: Int { state.withLock { $0.clients.count } }

    /// The start of the window `now` falls in.
    func windowStart(_ now: Int64) -> Int64 {
        now - ((now % windowMilliseconds) + windowMilliseconds) % windowMilliseconds
    }

    /// When the window `now` falls in ends.
    func windowEnd(_ now: Int64) -> Int64 { windowStart(now) + windowMilliseconds }

    private static func roll(_ state: inout State, to start: Int64) -> [Report] {
        guard let current = state.windowStart else {
            state.windowStart = start
            return []
        }
        guard start != current else { return [] }
        let reports = reports(state.clients, windowStart: current)
        state.clients = [:]
        state.windowStart = start
        return reports
    }

    /// The clients that went past the budget, most requests not stored first.
    private static func reports(_ clients: [Client: Tally], windowStart: Int64) -> [Report] {
        clients.compactMap { client, tally in
            tally.notStored > 0 ? Report(client: client, stored: tally.stored, notStored: tally.notStored, windowStart: windowStart) : nil
        }.sorted { $0.notStored > $1.notStored }
    }

    /// One warning per client that went past its budget in a window that ended.
    static func log(_ reports: [Report], budget: Int, logger: Logger) {
        for report in reports {
            logger.warning("rejected requests not stored: client past its budget", metadata: [
                "client_ip": .string(report.client.description),
                "not_stored": .string(String(report.notStored)),
                "stored": .string(String(report.stored)),
                "budget_per_minute": .string(String(budget)),
                "window_start": .string(Timestamp.format(epochMilliseconds: report.windowStart)),
            ])
        }
    }

    /// The budget's own clock: milliseconds since 1970.
    static func milliseconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970 * 1000) }
}

/// Logs the budget's reports when a window ends with no rejected request arriving to end it: a
/// flood that stopped is still reported within a second of its window's end, and at shutdown,
/// what the current window counted so far.
struct RejectedStoreBudgetReporter: Service {
    let budget: RejectedStoreBudget
    let logger: Logger
    let now: @Sendable () -> Date

    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            let millis = RejectedStoreBudget.milliseconds(now())
            RejectedStoreBudget.log(budget.close(at: millis), budget: budget.perWindow, logger: logger)
            // Just past the window's end, and at least once a second (an injected clock may jump).
            let wait = min(1000, max(10, budget.windowEnd(millis) - millis + 5))
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(wait)) }
        }
        RejectedStoreBudget.log(budget.flush(), budget: budget.perWindow, logger: logger)
    }
}
