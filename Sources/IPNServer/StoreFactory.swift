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

import IPNConfig
import IPNCore
import IPNDelivery
import IPNStore
import IPNStorePostgres
import IPNStoreSQLite
import Logging
import NIOSSL
import PostgresNIO

/// Opens the store the config names: the SQLite file (`store.path`) or the PostgreSQL
/// database (`store.postgres`), for the daemon, for a command that writes beside it, or for
/// reading.
public enum StoreFactory {
    /// What a command needs the store for.
    public enum Purpose: Sendable {
        /// `ipnd serve`: creates and migrates the store.
        case daemon
        /// A command writing a few rows beside a running daemon: the store must be at this
        /// version's schema.
        case command
    }

    /// Opens the store for `purpose`, with the config's delivery routes.
    /// - Parameters:
    ///   - clock: the time of day the store stamps rows with.
    ///   - timeouts: how long writes wait for the database; nil for the purpose's defaults
    ///     (production's for the daemon; a command's SQLite write waits 10 s for the daemon's lock).
    public static func open(
        _ config: IPNDConfig, purpose: Purpose, logger: Logger, clock: WallClock = .system, timeouts: StoreTimeouts? = nil,
        commitObserver: (@Sendable (_ batchSize: Int, _ seconds: Double, _ failed: Bool) -> Void)? = nil,
        checkpointObserver: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)? = nil
    ) async throws(StoreError) -> any Store {
        let store: any Store
        switch config.store.backend {
        case .sqlite(let path):
            let timeouts = timeouts ?? (purpose == .daemon ? .production : StoreTimeouts(write: .seconds(10)))
            store = try SQLiteStore(
                path: path, maxBatch: purpose == .daemon ? config.store.maxBatch : 16, busyTimeout: timeouts.writeSeconds,
                role: purpose == .daemon ? .daemon : .command, commitObserver: commitObserver, checkpointObserver: checkpointObserver,
                clock: clock)
        case .postgres(let settings):
            store = try await PostgresStore.open(
                configuration: try postgresConfiguration(settings), location: location(settings),
                poolSize: purpose == .daemon ? settings.poolSize : 4, maxBatch: config.store.maxBatch,
                migrate: purpose == .daemon, sequencing: purpose == .daemon, logger: logger, clock: clock,
                timeouts: timeouts ?? .production)
        }
        store.setDeliveryRoutes(config.deliveries.map(DeliveryRoute.init))
        store.setInquirySchedule(config.reconcilerSettings.schedule)
        return store
    }

    /// Opens the store for the query commands: the SQLite file read-only (safe while the daemon
    /// runs), or the PostgreSQL database.
    public static func openForReading(_ config: IPNDConfig, logger: Logger) async throws(StoreError) -> any StoreReading {
        switch config.store.backend {
        case .sqlite(let path):
            return try SQLiteReadOnlyStore(path: path)
        case .postgres:
            return try await open(config, purpose: .command, logger: logger)
        }
    }

    /// Closes a store opened for reading (the SQLite file needs nothing).
    public static func close(_ store: any StoreReading) async {
        if let store = store as? any Store { _ = try? await store.close() }
    }

    /// How logs name a PostgreSQL store: `postgres://user@host:port/database`, never the password.
    public static func location(_ settings: PostgresSettings) -> String {
        "postgres://\(settings.user)@\(settings.host.contains(":") ? "[\(settings.host)]" : settings.host):\(settings.port)/\(settings.database)"
    }

    /// The postgres-nio configuration of `store.postgres`: a unix socket directory or a host;
    /// TLS required (verified against `ca_file` or the system's CAs), preferred or off.
    static func postgresConfiguration(_ settings: PostgresSettings) throws(StoreError) -> PostgresClient.Configuration {
        if settings.isUnixSocket {
            return PostgresClient.Configuration(
                unixSocketPath: "\(settings.host)/.s.PGSQL.\(settings.port)", username: settings.user, password: settings.password,
                database: settings.database)
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = settings.caFile { tls.trustRoots = .file(caFile) }
        let mode: PostgresClient.Configuration.TLS = switch settings.tls {
        case .require: .require(tls)
        case .prefer: .prefer(tls)
        case .disable: .disable
        }
        return PostgresClient.Configuration(
            host: settings.host, port: settings.port, username: settings.user, password: settings.password, database: settings.database,
            tls: mode)
    }
}
