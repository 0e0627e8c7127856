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
    @discardableResult
    static func require(_ config: IPNDConfig, provider: String, account: String) throws -> ProviderAccount {
        if let found = config.account(provider: provider, name: account) { return found }
        let configured = config.accounts.filter { $0.providerName == provider }.map(\.name)
        Console.error(
            "config error: no account \"\(account)\" for provider \(provider) in \(config.path) "
                + (configured.isEmpty ? "(the config has no \(provider) accounts)" : "(configured: \(configured.joined(separator: ", ")))"))
        throw ExitStatus.configError
    }
}
