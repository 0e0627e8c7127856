import IPNStore

// Placeholders so the package builds: issue 33's store methods are implemented for SQLite
// (IPNStoreSQLite/RecoveryQueries.swift, SQLiteStore) and are to be ported here. Each answers
// with an error saying so; the behaviour suites (RecoveryStoreTests, RetentionStoreTests) run
// against PostgreSQL under `make test` and fail until they are.
extension PostgresStore {
    private static func notYet(_ what: String) -> StoreError {
        StoreError(message: "\(what) is not implemented for PostgreSQL yet")
    }

    public func rejectedRequests(_ selection: RejectedSelection) async throws(StoreError) -> [RejectedRequest] {
        throw Self.notYet("reading stored rejected requests (notifications reverify)")
    }

    public func plan(_ entry: InboxEntry) async throws(StoreError) -> RecordOutcome {
        throw Self.notYet("planning a notification without writing it (notifications reverify)")
    }

    public func pruneRejected(receivedBefore: String, limit: Int) async throws(StoreError) -> Int {
        throw Self.notYet("retention of rejected notifications")
    }

    public func pruneEvents(occurredBefore: String, afterSeq: Int64, limit: Int) async throws(StoreError) -> EventPruning {
        throw Self.notYet("retention of events")
    }
}
