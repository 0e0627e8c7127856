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
import Hummingbird
import IPNConfig
import IPNConsole
import IPNCore
import IPNDelivery
import IPNReconcile
import IPNStore
import IPNStorePostgres
import IPNStoreSQLite
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// `ipnd serve`: the store, the provider-facing listener and the ops listener, run until a
/// graceful shutdown, after which in-flight writes are committed and the store is closed.
public final class Daemon: Sendable {
    /// The config in force: the one the daemon started with, as reloads (SIGHUP, `reload()`)
    /// have changed it since.
    public var config: IPNDConfig { live.current }
    let live: LiveConfig
    public let store: any Store
    /// For a SQLite store: held from before the store is opened until the process ends.
    private let storeLock: StoreLock?

    /// The store when it is SQLite (tests reach its file through it).
    public var sqliteStore: SQLiteStore? { store as? SQLiteStore }
    let logger: Logger
    let metrics: ServerMetrics
    let metricsRegistry: MetricsRegistry
    let tally = NotificationTally()
    let notifier: SystemdNotifier
    /// The accepted ops tokens, shared by the ops API and the console's sign-in (a reload
    /// replaces them here).
    public let opsCredentials: OpsCredentials
    let state = Locked(RunState())

    /// The ports the listeners are bound to (differs from the config when it says 0).
    public struct ListeningPorts: Sendable, Equatable {
        public var provider: Int
        public var ops: Int
    }

    struct RunState {
        var providerPort: Int?
        var opsPort: Int?
        /// Callers of `listeningPorts()` waiting for both listeners, by a number of their own.
        var waiters: [Int: CheckedContinuation<ListeningPorts?, Never>] = [:]
        var nextWaiter = 0
        /// `run` has returned: listeners that are not bound by now never will be.
        var ended = false
        var group: ServiceGroup?
        var shutdownRequested = false
        /// What a reload changes besides the config itself; set while `run` runs.
        var reloadables: Reloadables?
    }

    /// The parts of a running daemon that hold settings of their own, which a reload updates.
    struct Reloadables {
        var deliveries: DeliveryService
        var deliveryMetrics: DeliveryMetrics
        var reconciler: Reconciler
        var budget: RejectedStoreBudget
        var retention: RetentionService
    }

    /// The environment the config's `IPND_` overrides came from; a reload reads them again.
    let configEnvironment: [String: String]

    /// Reloads run one at a time (a SIGHUP during a reload waits for it).
    let reloading = AsyncMutex()

    /// Scales the delivery retry schedule's waits (tests; `IPND_DELIVERY_RETRY_SCALE`).
    private let deliveryRetryScale: Double
    private let housekeeping: Housekeeping

    /// The clock and periods of the daemon's housekeeping: store retention and the
    /// rejected-request budget's windows. The defaults are production's; tests shorten the
    /// periods and move the clock.
    public struct Housekeeping: Sendable {
        /// The time of day retention cutoffs and budget windows are taken from.
        public var now: @Sendable () -> Date
        /// Between retention passes.
        public var retentionInterval: Duration
        /// The rejected-request budget's window (`server.rejected_store_per_minute` per window).
        public var budgetWindow: Duration

        public init(now: @escaping @Sendable () -> Date = { Date() }, retentionInterval: Duration = .seconds(300),
                    budgetWindow: Duration = .seconds(60)) {
            self.now = now
            self.retentionInterval = retentionInterval
            self.budgetWindow = budgetWindow
        }
    }

    /// Opens (creating and migrating) the config's store; the listeners start with `run`.
    /// - Parameter configEnvironment: the environment `config` was loaded with (its `IPND_`
    ///   overrides), which a reload loads the file with again.
    public static func open(
        config: IPNDConfig,
        logger: Logger,
        notifier: SystemdNotifier = SystemdNotifier(),
        deliveryRetryScale: Double = DeliveryService.environmentRetryScale(),
        housekeeping: Housekeeping = Housekeeping(),
        configEnvironment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(StoreError) -> Daemon {
        let metricsRegistry = MetricsRegistry()
        let metrics = metricsRegistry.server
        var storeLock: StoreLock?
        if case .sqlite(let path) = config.store.backend {
            // Before the store is opened: a second daemon must not migrate it under the first.
            storeLock = try StoreLock(storePath: path)
        }
        let store = try await StoreFactory.open(
            config, purpose: .daemon, logger: logger,
            commitObserver: { size, seconds, failed in
                metrics.commit(batchSize: size, seconds: seconds, failed: failed)
            },
            checkpointObserver: { [logger] seconds, error in
                metrics.checkpoint(seconds: seconds, failed: error != nil)
                if let error {
                    logger.warning("WAL checkpoint failed; the commits stay in the WAL and the copy is retried",
                                   metadata: ["error": "\(error)"])
                }
            })
        return Daemon(
            config: config, store: store, storeLock: storeLock, logger: logger, notifier: notifier, metricsRegistry: metricsRegistry,
            deliveryRetryScale: deliveryRetryScale, housekeeping: housekeeping, configEnvironment: configEnvironment)
    }

    private init(
        config: IPNDConfig, store: any Store, storeLock: StoreLock?, logger: Logger, notifier: SystemdNotifier,
        metricsRegistry: MetricsRegistry, deliveryRetryScale: Double, housekeeping: Housekeeping,
        configEnvironment: [String: String]
    ) {
        self.configEnvironment = configEnvironment
        live = LiveConfig(config)
        self.store = store
        self.storeLock = storeLock
        self.deliveryRetryScale = deliveryRetryScale
        self.housekeeping = housekeeping
        self.logger = logger
        self.notifier = notifier
        self.metricsRegistry = metricsRegistry
        metrics = metricsRegistry.server
        opsCredentials = OpsCredentials(digests: config.ops.tokenDigests)
    }

    /// Serves until one of `signals` arrives or `shutdown()` is called, then drains in-flight
    /// requests, commits what they started and closes the store.
    public func run(gracefulShutdownSignals signals: [UnixSignal] = [.sigterm, .sigint]) async throws {
        do {
            try await store.registerDeliveryTargets(config.deliveries.map(\.name))
            if let sqlite = sqliteStore {
                // One daemon per file (the store lock): leases a previous process left are its own.
                // (On PostgreSQL another node's leases run out by themselves: DeliveryService.leaseLength.)
                try await sqlite.releaseAbandonedLeases()
            }
        } catch {
            _ = try? await store.close()
            throw error
        }
        let deliveryMetrics = DeliveryMetrics(factory: metricsRegistry.factory)
        for target in config.deliveries { deliveryMetrics.register(target: target.name) }
        let deliveries = try DeliveryService(
            store: store, targets: config.deliveries, logger: logger, metrics: deliveryMetrics, userAgent: "ipnd/\(BuildInfo.version)",
            retryScale: deliveryRetryScale)
        let reconciler = Reconciler(
            store: store, settings: config.reconcilerSettings, accounts: config.inquiryAccounts, logger: logger,
            metrics: ReconcileMetrics(factory: metricsRegistry.factory), userAgent: "ipnd/\(BuildInfo.version)")
        let health = HealthEndpoints(store: store, logger: logger)
        let budget = RejectedStoreBudget(perWindow: config.server.rejectedStorePerMinute, window: housekeeping.budgetWindow)
        let endpoint = ProviderEndpoint(
            live: live, store: store, logger: logger, metrics: metrics, tally: tally, budget: budget, now: housekeeping.now)
        let retention = RetentionService(
            store: store, retention: config.store.retention, logger: logger,
            schedule: RetentionService.Schedule(interval: housekeeping.retentionInterval), now: housekeeping.now)
        let metrics = metrics
        let connectionLimits = Self.connectionLimits(factory: metricsRegistry.factory)
        let providerApp = Application(
            router: Routes.providerRouter(endpoint: endpoint, health: health),
            server: .http1(
                idleTimeout: .seconds(Int64(config.server.idleTimeoutSeconds)),
                requestTimeout: .seconds(Int64(config.server.requestTimeoutSeconds)),
                onTimeout: { metrics.requestTimedOut() }
            ),
            configuration: .init(address: .hostname(config.server.host, port: config.server.port)),
            onServerRunning: { [self] channel in
                await guardListener(channel, "server", limit: connectionLimits.server, host: config.server.host, port: config.server.port)
                listening(provider: channel.localAddress?.port)
            },
            logger: logger
        )
        if config.ops.tokenDigests.isEmpty {
            logger.warning("ops.tokens_sha256 is empty: the ops API answers 401 to every request", metadata: [
                "ops_listener": "\(config.ops.host):\(config.ops.port)",
            ])
        }
        let console = try OpsConsole(
            store: store, asking: reconciler, config: live, credentials: opsCredentials, logger: logger, visibleText: VisibleText.escaping)
        let opsRouter = Routes.opsRouter(
            api: OpsAPI(config: live, store: store, asking: reconciler, logger: logger), health: health,
            metrics: MetricsEndpoint(registry: metricsRegistry, store: store, inquiryScopes: { reconciler.scopes }), console: console,
            credentials: opsCredentials, logger: logger)
        let opsApp = Application(
            router: opsRouter,
            server: .http1(
                idleTimeout: .seconds(Int64(config.server.idleTimeoutSeconds)),
                requestTimeout: .seconds(Int64(config.server.requestTimeoutSeconds)),
                onTimeout: {}
            ),
            configuration: .init(address: .hostname(config.ops.host, port: config.ops.port)),
            onServerRunning: { [self] channel in
                await guardListener(channel, "ops", limit: connectionLimits.ops, host: config.ops.host, port: config.ops.port)
                listening(ops: channel.localAddress?.port)
            },
            logger: logger
        )
        state.withLock {
            $0.reloadables = Reloadables(
                deliveries: deliveries, deliveryMetrics: deliveryMetrics, reconciler: reconciler, budget: budget, retention: retention)
        }
        let systemd = SystemdService(
            notifier: notifier, watchdogInterval: SystemdNotifier.watchdogInterval(), store: store, tally: tally, logger: logger,
            ready: { [self] in await listeningPorts() != nil })
        // Shut down in reverse order: systemd hears STOPPING=1 first, then the listeners stop
        // accepting and finish their in-flight requests.
        var groupConfiguration = ServiceGroupConfiguration(
            services: [
                // Stopped last: after the listeners, while the store is still open.
                .init(service: deliveries),
                .init(service: reconciler),
                .init(service: retention),
                .init(service: RejectedStoreBudgetReporter(budget: budget, logger: logger, now: housekeeping.now)),
                // The ops listener stops after the provider-facing one, which stops right after
                // systemd hears STOPPING=1.
                .init(service: Listener(
                    application: opsApp, section: "ops", host: config.ops.host, port: config.ops.port,
                    isBound: { [self] in state.withLock { $0.opsPort != nil } })),
                .init(service: Listener(
                    application: providerApp, section: "server", host: config.server.host, port: config.server.port,
                    isBound: { [self] in state.withLock { $0.providerPort != nil } })),
                .init(service: systemd),
                .init(service: Reloader { [self] in _ = await reload() }),
            ],
            logger: logger
        )
        groupConfiguration.gracefulShutdownSignals = signals
        // A request in flight may take the request deadline to arrive, then wait for its commit:
        // at most two of the store's 5 s busy timeouts (its batch's and the one before it).
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(config.server.requestTimeoutSeconds + 15)
        let group = ServiceGroup(configuration: groupConfiguration)
        let alreadyStopping = state.withLock { state -> Bool in
            state.group = group
            return state.shutdownRequested
        }
        if alreadyStopping { await group.triggerGracefulShutdown() }
        defer {
            // A listener that could not bind ends the run: nobody may wait for it any longer
            // (the systemd service waits for both before its first ping).
            let waiters = state.withLock { state in
                state.group = nil
                state.reloadables = nil
                state.ended = true
                defer { state.waiters = [:] }
                return state.waiters
            }
            for waiter in waiters.values { waiter.resume(returning: nil) }
        }
        do {
            try await group.run()
        } catch {
            _ = try? await store.close()
            storeLock?.release()
            throw error
        }
        if let checkpointFailure = try await store.close() {
            // Not a failed stop: every acknowledged notification is committed in the WAL.
            logger.warning("store closed without its final checkpoint; what was committed stays in the WAL, read at the next start",
                           metadata: ["store": "\(store.location)", "error": "\(checkpointFailure)"])
        }
        storeLock?.release()
        logger.info("stopped", metadata: ["store": "\(store.location)"])
    }

    /// Starts a graceful shutdown, as SIGTERM does.
    public func shutdown() async {
        let group = state.withLock { state -> ServiceGroup? in
            state.shutdownRequested = true
            return state.group
        }
        await group?.triggerGracefulShutdown()
    }

    /// Returns once both listeners are bound; nil when `run` ended before they were (a listener
    /// could not bind) or the caller's task was cancelled.
    public func listeningPorts() async -> ListeningPorts? {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer = state.withLock { state -> ListeningPorts?? in
                    if let provider = state.providerPort, let ops = state.opsPort {
                        return .some(ListeningPorts(provider: provider, ops: ops))
                    }
                    if state.ended || Task.isCancelled { return .some(nil) }
                    state.waiters[id] = continuation
                    return .none
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }

    /// Each listener's `ConnectionLimit`, from the process's descriptor limit as it is now.
    private static func connectionLimits(factory: any MetricsFactory) -> (server: ConnectionLimit, ops: ConnectionLimit) {
        let descriptors = ConnectionLimit.descriptorLimit()
        let limits = ConnectionLimit.limits(descriptors: descriptors)
        return (
            ConnectionLimit(limit: limits.server, descriptorLimit: descriptors, listener: "server", factory: factory),
            ConnectionLimit(limit: limits.ops, descriptorLimit: descriptors, listener: "ops", factory: factory)
        )
    }

    /// Keeps the listener within its connection limit and reports when it does not accept
    /// (`ListenerGuard`), from before it is reported bound.
    private func guardListener(_ channel: any Channel, _ listener: String, limit: ConnectionLimit, host: String, port: Int) async {
        let reporting = ListenerGuard.Reporting(
            listener: listener, address: "\(host):\(channel.localAddress?.port ?? port)", logger: logger,
            counters: metrics.acceptCounters(listener: listener))
        await ListenerGuard.install(on: channel, limit: limit, reporting: reporting)
    }

    private func listening(provider: Int? = nil, ops: Int? = nil) {
        let (ports, waiters) = state.withLock { state -> (ListeningPorts?, [Int: CheckedContinuation<ListeningPorts?, Never>]) in
            if let provider { state.providerPort = provider }
            if let ops { state.opsPort = ops }
            guard let provider = state.providerPort, let ops = state.opsPort else { return (nil, [:]) }
            let waiters = state.waiters
            state.waiters = [:]
            return (ListeningPorts(provider: provider, ops: ops), waiters)
        }
        guard let ports else { return }
        let ready = "READY=1\nSTATUS=serving on \(config.server.host):\(ports.provider), ops on \(config.ops.host):\(ports.ops)"
        if !notifier.notify(ready), notifier.isEnabled {
            Task { [notifier, logger] in
                if await !notifier.deliver(ready, within: .seconds(5)) {
                    logger.warning("systemd notification not delivered", metadata: ["notification": "READY=1"])
                }
            }
        }
        logger.info("listening", metadata: [
            "provider_listener": "\(config.server.host):\(ports.provider)",
            "ops_listener": "\(config.ops.host):\(ports.ops)",
            "store": "\(store.location)",
            "accounts": "\(config.accounts.count)",
        ])
        for waiter in waiters.values { waiter.resume(returning: ports) }
    }
}
