import Dispatch
import GRDB
import IPNCore

/// Copies the WAL into the database file on a connection and thread of its own, so that the
/// writer keeps committing while the copy and the database file's fsync run.
///
/// A checkpoint on another connection cannot end a WAL cycle by itself: SQLite starts the log
/// over only when a write transaction begins with every frame already copied back, and the
/// writer keeps adding frames while this runs. So it works in passes with the writer: the
/// writer starts a pass when the WAL passes its threshold; once the pass is `finished`, the
/// writer copies the few frames committed meanwhile itself, after its next batch, and its next
/// transaction restarts the log.
final class BackgroundCheckpointer: Sendable {
    enum Phase: Sendable {
        case idle, running, finished
    }

    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "ipnd.store.checkpointer", qos: .userInitiated)
    private let phase = Locked(Phase.idle)
    private let observer: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)?

    /// Opens the second connection; nil when it cannot be opened (the writer then copies the
    /// whole WAL itself, as it would without this).
    init?(path: String, observer: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)?) {
        var configuration = Configuration()
        configuration.label = "ipnd.checkpointer"
        configuration.busyMode = .timeout(5)
        // A checkpoint syncs the database file only on a connection that syncs at all.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        guard let connection = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
        self.connection = connection
        self.observer = observer
    }

    var current: Phase { phase.withLock { $0 } }

    /// Starts a pass over the WAL as it is now.
    func start() {
        phase.withLock { $0 = .running }
        queue.async { [self] in
            Self.checkpoint(on: connection, observer: observer)
            phase.withLock { $0 = .finished }
        }
    }

    /// One PASSIVE checkpoint on `connection`, timed and reported to `observer`.
    static func checkpoint(
        on connection: some DatabaseWriter,
        observer: (@Sendable (_ seconds: Double, _ error: StoreError?) -> Void)?
    ) {
        let started = DispatchTime.now().uptimeNanoseconds
        var failure: StoreError?
        do {
            try connection.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
        } catch {
            failure = StoreError(error, doing: "checkpoint the WAL")
        }
        observer?(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9, failure)
    }

    /// The writer has taken over from a finished pass (or the WAL started over).
    func reset() {
        phase.withLock { if $0 == .finished { $0 = .idle } }
    }
}
