import IPNStore
import Logging
import ServiceLifecycle

/// Talks to systemd while the daemon runs: `WATCHDOG=1` at half of `$WATCHDOG_USEC`, sent only
/// after the store accepted a durable write; `STATUS=` lines with counts; `STOPPING=1` as soon
/// as a graceful shutdown starts. (`READY=1` is sent by the daemon once both listeners are bound.)
struct SystemdService: Service {
    let notifier: SystemdNotifier
    let watchdogInterval: Duration?
    let inbox: Inbox
    let tally: NotificationTally
    let logger: Logger
    /// Returns once the listeners are bound and READY=1 was sent.
    let ready: @Sendable () async -> Void

    func run() async throws {
        guard notifier.isEnabled else {
            try? await gracefulShutdown()
            return
        }
        await withGracefulShutdownHandler {
            do {
                try await cancelWhenGracefulShutdown { try await pingLoop() }
            } catch {
                // Cancelled by the graceful shutdown: nothing more to say to systemd here.
            }
        } onGracefulShutdown: {
            send("STOPPING=1\nSTATUS=stopping: finishing in-flight requests; \(tally.summary)")
        }
    }

    private func send(_ state: String) {
        if !notifier.notify(state) {
            logger.warning("systemd notification not delivered", metadata: ["notification": "\(state.prefix { $0 != "\n" })"])
        }
    }

    private func pingLoop() async throws {
        await ready()
        let period = watchdogInterval.map { $0 / 2 } ?? .seconds(15)
        while !Task.isCancelled {
            if watchdogInterval != nil {
                if await storeAnswers(within: period) {
                    send("WATCHDOG=1\nSTATUS=serving; \(tally.summary)")
                } else {
                    logger.error("store did not accept a write in time; withholding the watchdog ping")
                    send("STATUS=store not answering; \(tally.summary)")
                }
            } else {
                send("STATUS=serving; \(tally.summary)")
            }
            try await Task.sleep(for: period)
        }
    }

    /// Whether a heartbeat write commits within `limit`.
    private func storeAnswers(within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                do {
                    try await inbox.heartbeat()
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
