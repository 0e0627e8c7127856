import Foundation
import GRDB
import IPNCore
import IPNStore

/// Registers an expectation from outside the daemon (`ipnd orders expect`): one short
/// IMMEDIATE transaction on the store file, with the same logic as `Inbox.setExpectation`.
/// SQLite's write lock serialises it with the daemon's writer (waiting up to `busyTimeout`),
/// and it commits with `synchronous=FULL` like every other write. A store migrated by a newer
/// ipnd is refused, as `serve` refuses it.
public enum ExpectationWriter {
    public static func set(
        storePath: String,
        provider: String,
        account: String,
        orderRef: String,
        amount: Money,
        busyTimeout: TimeInterval = 10
    ) throws(StoreError) -> ExpectationOutcome {
        guard FileManager.default.fileExists(atPath: storePath) else {
            throw StoreError(message: "no store at \(storePath) (has ipnd serve run with this config?)")
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        do {
            let queue = try DatabaseQueue(path: storePath, configuration: configuration)
            defer { try? queue.close() }
            return try queue.writeWithoutTransaction { db in
                var outcome = ExpectationOutcome(state: .expected, mismatch: nil)
                try db.inTransaction(.immediate) {
                    guard try db.tableExists("orders") else {
                        throw StoreError(message: "\(storePath) is not an ipnd store (no orders table)")
                    }
                    // As `serve` does: this version's rows may lack what a newer schema expects.
                    try Schema.refuseNewerSchema(db)
                    let now = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
                    let tx = WriteContext(db: db, now: now, statements: WriteStatements(db))
                    outcome = try Recorder.setExpectation(
                        amount, scope: Scope(provider: provider, account: account), orderRef: orderRef, in: tx)
                    return .commit
                }
                return outcome
            }
        } catch {
            throw StoreError(error, doing: "register the expectation in \(storePath)")
        }
    }
}
