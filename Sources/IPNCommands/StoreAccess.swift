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
import IPNServer
import IPNStore
import Logging

/// The query commands' access to the store: read-only for SQLite (safe while the daemon runs),
/// exit 3 when it cannot be read.
enum StoreAccess {
    /// Runs `body` against the config's store, read-only; prints why and exits 3 when the
    /// store cannot be opened or read.
    static func read<T>(_ config: IPNDConfig, _ body: (any StoreReading) async throws(StoreError) -> T) async throws -> T {
        let store = try await open(config)
        do {
            let result = try await read(store, body)
            await StoreFactory.close(store)
            return result
        } catch {
            await StoreFactory.close(store)
            throw error
        }
    }

    /// Runs `body` against `store`; prints why and exits 3 when the store cannot be read.
    static func read<T>(_ store: any StoreReading, _ body: (any StoreReading) async throws(StoreError) -> T) async throws -> T {
        do {
            return try await body(store)
        } catch {
            Console.error("store unavailable: \(error)")
            throw ExitStatus.storeUnavailable
        }
    }

    /// Runs `body` against the config's store opened for a command's few writes beside a
    /// running daemon (SQLite's locks serialise them with the daemon's writer); the delivery
    /// routes are the config's, as the daemon's are. Prints why and exits 3 when the store
    /// cannot be opened or written.
    static func write<T>(_ config: IPNDConfig, _ body: (any Store) async throws(StoreError) -> T) async throws -> T {
        do {
            let store = try await StoreFactory.open(config, purpose: .command, logger: quietLogger)
            do {
                let result = try await body(store)
                _ = try await store.close()
                return result
            } catch {
                _ = try? await store.close()
                throw error
            }
        } catch {
            Console.error("store unavailable: \(error)")
            throw ExitStatus.storeUnavailable
        }
    }

    /// The config's store, opened for reading; exit 3 when it cannot be.
    static func open(_ config: IPNDConfig) async throws -> any StoreReading {
        do {
            return try await StoreFactory.openForReading(config, logger: quietLogger)
        } catch {
            Console.error("store unavailable: \(error)")
            throw ExitStatus.storeUnavailable
        }
    }
}

/// Commands print what they have to say; the store's own log lines stay out of their output.
let quietLogger = Logger(label: "ipnd", factory: { _ in SwiftLogNoOpLogHandler() })

/// Where the config's store is, for messages: the SQLite file or the PostgreSQL database.
func storeLocation(_ config: IPNDConfig) -> String {
    switch config.store.backend {
    case .sqlite(let path): path
    case .postgres(let settings): StoreFactory.location(settings)
    }
}

/// Provider accounts named on the command line.
enum Accounts {
    /// The configured account, or a message naming the configured ones and exit 2.
    static func require(_ config: IPNDConfig, provider: String, account: String) throws -> ProviderAccount {
        if let found = config.account(provider: provider, name: account) { return found }
        try requireName(config, provider: provider, account: account)
        Console.error("config error: account \(provider)/\(account) was loaded without its secrets")
        throw ExitStatus.configError
    }

    /// Checks the account is configured (by name: the config may be loaded without secrets),
    /// or prints the configured ones and exits 2.
    static func requireName(_ config: IPNDConfig, provider: String, account: String) throws {
        if config.hasAccount(provider: provider, name: account) { return }
        let configured = config.accountNames.filter { $0.provider == provider }.map(\.account)
        Console.error(
            "config error: no account \"\(account)\" for provider \(provider) in \(config.path) "
                + (configured.isEmpty ? "(the config has no \(provider) accounts)" : "(configured: \(configured.joined(separator: ", ")))"))
        throw ExitStatus.configError
    }
}
