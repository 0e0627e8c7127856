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

    public init(provider: String, account: String) {
        self.provider = provider
        self.account = account
    }
}

/// Whether loading reads secrets and builds the providers.
public enum SecretHandling: Sendable {
    /// Read every secret (files included), check who may read them, build each provider:
    /// what `serve`, `check-config` and `simulate` need.
    case resolve
    /// Check that every required secret is configured, but read no secret file and build no
    /// provider: enough for commands that only open the store (`orders`, `notifications`,
    /// `backup`), which ops staff run outside the service's credentials.
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

    public init() {}
}

public struct StoreSettings: Sendable, Equatable {
    /// Absolute path of the SQLite file.
    public var path = "/var/lib/ipnd/ipnd.sqlite"
    /// The most notifications one commit carries (1: one transaction per notification).
    public var maxBatch = 256

    public init() {}
}

/// The ops listener (never exposed publicly).
public struct OpsSettings: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 8081
    /// SHA-256 digests of the accepted bearer tokens.
    public var tokenDigests: [[UInt8]] = []

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
