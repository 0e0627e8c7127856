/// The store backends the behaviour tests run against. PostgreSQL is the throwaway server
/// `make test` starts; without it (a plain `swift test`), SQLite only.
public enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public static var allCases: [Backend] {
        PostgresTestServer.fromEnvironment() == nil ? [.sqlite] : [.sqlite, .postgres]
    }

    public var description: String { rawValue }
}
