import ArgumentParser
import IPNStore
import IPNStoreSQLite

/// `ipnd backup PATH`: a consistent online copy of the store while the daemon runs.
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a consistent copy of the store (SQLite online backup) while the daemon runs."
    )

    @OptionGroup var options: ConfigOptions

    @Argument(help: "Where to write the copy (replaced atomically if it exists).")
    var path: String

    func run() async throws {
        let config = try options.load(secrets: .skip)
        do {
            let summary = try StoreBackup.run(source: config.store.path, destination: path)
            Console.print("backup written to \(summary.path): \(summary.orders) orders, \(summary.notifications) notifications, \(summary.bytes) bytes, integrity ok")
        } catch {
            Console.error("backup failed: \(error)")
            throw ExitStatus.storeUnavailable
        }
    }
}
