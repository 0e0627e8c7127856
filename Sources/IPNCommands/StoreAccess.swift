import GRDB
import IPNConfig
import IPNStore

/// The query commands' read-only access to the store: exit 3 when it cannot be read.
enum StoreAccess {
    static func read<T>(_ config: IPNDConfig, _ body: (Database) throws -> T) throws -> T {
        do {
            let store = try ReadOnlyStore(path: config.store.path)
            return try store.read(body)
        } catch {
            Console.error("store unavailable: \(error)")
            throw ExitStatus.storeUnavailable
        }
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
