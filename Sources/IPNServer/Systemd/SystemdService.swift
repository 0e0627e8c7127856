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

import IPNStore
import Logging
import ServiceLifecycle

/// Talks to systemd while the daemon runs: `WATCHDOG=1` at half of `$WATCHDOG_USEC`, sent only
/// after the store accepted a durable write; `STATUS=` lines with counts; `STOPPING=1` as soon
/// as a graceful shutdown starts. (`READY=1` is sent by the daemon once both listeners are bound.)
struct SystemdService: Service {
    let notifier: SystemdNotifier
    let watchdogInterval: Duration?
    let store: any Store
    let tally: NotificationTally
    let logger: Logger
    /// Returns true once the listeners are bound and READY=1 was sent; false when they never
    /// will be (one could not bind) or the wait was cancelled.
    let ready: @Sendable () async -> Bool

    func run() async throws {
        guard notifier.isEnabled else {
            try? await gracefulShutdown()
            return
        }
        do {
            try await cancelWhenGracefulShutdown { try await pingLoop() }
        } catch {
            // Cancelled by the graceful shutdown: the pings stop.
        }
        // The service group stops services in reverse order and this one is last in its list, so
        // systemd hears STOPPING=1 before the listeners stop; a full queue gets retries, and the
        // shutdown waits for them rather than exiting with the message unsent.
        await send("STOPPING=1\nSTATUS=stopping: finishing in-flight requests; \(tally.summary)", within: .seconds(2))
    }

    private func send(_ state: String, within limit: Duration) async {
        if await !notifier.deliver(state, within: limit) {
            logger.warning("systemd notification not delivered", metadata: ["notification": "\(state.prefix { $0 != "\n" })"])
        }
    }

    private func pingLoop() async throws {
        // Cancellable: a listener that cannot bind ends the run, and this service must end with it.
        guard await ready() else { return }
        let period = watchdogInterval.map { $0 / 2 } ?? .seconds(15)
        let sendLimit = min(period / 2, .seconds(1))
        while !Task.isCancelled {
            if watchdogInterval != nil {
                if await storeAnswers(within: period) {
                    await send("WATCHDOG=1\nSTATUS=serving; \(tally.summary)", within: sendLimit)
                } else {
                    logger.error("store did not accept a write in time; withholding the watchdog ping")
                    await send("STATUS=store not answering; \(tally.summary)", within: sendLimit)
                }
            } else {
                await send("STATUS=serving; \(tally.summary)", within: sendLimit)
            }
            try await Task.sleep(for: period)
        }
    }

    /// Whether a heartbeat write commits within `limit`.
    private func storeAnswers(within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                do {
                    try await store.heartbeat()
                    return true
                } catch {
                    return false
                }
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
