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

/// The validated configuration of one ipnd instance (product.md section 2).
public struct IPNDConfig: Sendable {
    /// The config file this was loaded from.
    public var path: String
    public var server: ServerSettings
    public var store: StoreSettings
    public var ops: OpsSettings
    /// The accounts with their providers built from resolved secrets (empty when loaded
    /// with `.skip` secrets).
    public var accounts: [ProviderAccount]
    /// Every configured account's provider and name, whichever way the config was loaded.
    public var accountNames: [AccountName]
    /// Where events are pushed (product.md section 8), in config order. Loaded with `.skip`
    /// secrets, each target is there with no secrets.
    public var deliveries: [DeliveryTarget] = []
    /// When and how fast provider accounts with an `inquiry` section are asked about orders
    /// that went quiet (product.md section 12).
    public var reconcile = ReconcileSettings()

    /// Whether `provider` has an account called `name` in the config.
    public func hasAccount(provider: String, name: String) -> Bool {
        accountNames.contains { $0.provider == provider && $0.account == name }
    }

    /// The account serving `POST /ipn/{provider}/{account}`.
    public func account(provider: String, name: String) -> ProviderAccount? {
        accounts.first { $0.providerName == provider && $0.name == name }
    }
}

/// A configured account, by name only.
public struct AccountName: Sendable, Equatable {
    public var provider: String
    public var account: String
    /// Whether the account has an `inquiry` section (reconciliation asks about its orders).
    public var asked: Bool

    public init(provider: String, account: String, asked: Bool = false) {
        self.provider = provider
        self.account = account
        self.asked = asked
    }
}

/// Whether loading reads secrets and builds the providers.
public enum SecretHandling: Sendable {
    /// Read every secret (files included), check who may read them, build each provider:
    /// what `serve`, `check-config` and `simulate` need.
    case resolve
    /// Check that every required secret is configured, but read no secret file and build no
    /// provider: enough for commands that only open the store (`orders`, `notifications`,
    /// `backup`), which ops staff run outside the service's credentials. Delivery targets are
    /// kept without their secrets. The one secret still read is the store's own
    /// (`store.postgres.password_file`): opening the store needs it.
    case skip
}

/// The provider-facing listener.
public struct ServerSettings: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// Larger requests get 413 and are not stored.
    public var maxBodyBytes = 65536
    /// The whole request (headers and body) must arrive within this.
    public var requestTimeoutSeconds = 10
    /// Idle keep-alive connections are closed after this.
    public var idleTimeoutSeconds = 60
    /// Peers whose `X-Forwarded-For` is believed for client IPs.
    public var trustedProxies: [IPNetwork] = []
    /// How many rejected requests from one client address are stored (with their body) per
    /// minute; beyond it they are answered the same but not stored. 0 stores none.
    public var rejectedStorePerMinute = 600

    public init() {}
}

public struct StoreSettings: Sendable, Equatable {
    /// Absolute path of the SQLite file. Unused when `postgres` is set.
    public var path = "/var/lib/ipnd/ipnd.sqlite"
    /// The most notifications one commit carries (1: one transaction per notification).
    public var maxBatch = 256
    /// The PostgreSQL database (`store.postgres`), instead of the SQLite file; nil for SQLite.
    public var postgres: PostgresSettings?
    /// How long old rows are kept (`store.retention`).
    public var retention = RetentionSettings()

    public init() {}

    /// Which store the config names: exactly one of `store.path` and `store.postgres`.
    public var backend: StoreBackend {
        if let postgres { return .postgres(postgres) }
        return .sqlite(path: path)
    }

    /// One line for `check-config`, the password redacted.
    public var summary: String {
        switch backend {
        case .sqlite(let path): "sqlite \(path) (max_batch \(maxBatch))"
        case .postgres(let settings): "\(settings) (max_batch \(maxBatch))"
        }
    }
}

/// The store a config names.
public enum StoreBackend: Sendable, Equatable {
    /// The embedded SQLite file at this absolute path.
    case sqlite(path: String)
    /// A PostgreSQL database shared by any number of ipnd nodes.
    case postgres(PostgresSettings)
}

/// `store.retention` (product.md section 11): old rows removed. Authentic notifications, orders
/// and transitions are never removed.
public struct RetentionSettings: Sendable, Equatable {
    /// Rejected notifications are kept this many days.
    public var rejectedDays = 30
    /// Events (with their delivered deliveries) are kept this many days, never while a
    /// delivery target still owes them.
    public var eventsDays = 90

    public init() {}

    /// One line for `check-config`.
    public var summary: String { "rejected_days \(rejectedDays), events_days \(eventsDays)" }
}

/// The ops listener (never exposed publicly).
public struct OpsSettings: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 8081
    /// SHA-256 digests of the accepted bearer tokens.
    public var tokenDigests: [[UInt8]] = []
    /// Whether the ops console's session cookie carries `Secure` (behind a TLS proxy).
    public var consoleSecureCookie = false

    public init() {}
}

/// One configured provider account, its provider built from its resolved secrets.
public struct ProviderAccount: Sendable {
    public var providerName: String
    public var name: String
    /// Where it sits in the config: `providers.unlimint[0]`.
    public var keyPath: String
    /// Client networks allowed to post to this account; nil allows everyone.
    public var allowIPs: [IPNetwork]?
    public var provider: any NotificationProvider

    /// What `check-config` shows of the account's `inquiry` section, secrets redacted, as it
    /// shows the account's own keys: `url: https://...; merchant_private_key: configured,
    /// redacted (RSA 2048); key_version: 1`, or `not configured` (the account is never asked).
    public var inquirySummary: String {
        guard let inquiry = provider.inquiry else { return "not configured" }
        return inquiry.summary.map { "\($0.key): \($0.value)" }.joined(separator: "; ")
    }
}

/// A configuration problem, naming the key it is about. Never contains a secret.
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The offending key path (`server.port`, `providers.unlimint[0].callback_secret`), or
    /// nil for a problem with the file as a whole.
    public let key: String?
    public let message: String

    public init(key: String?, _ message: String) {
        self.key = key
        self.message = message
    }

    public var description: String {
        if let key { return "config error: \(key): \(message)" }
        return "config error: \(message)"
    }
}
