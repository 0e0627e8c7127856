// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

// The executables link with lld and pack their relative relocations (DT_RELR, glibc 2.36+):
// the pointer fix-ups the loader applies at every start come from a table of a few KB instead
// of 24-byte RELA entries (750 KB for ipnd, several MB once `make release` links the Swift
// runtime in), all of which used to be read into memory.
let executableLinkerSettings: [LinkerSetting] = [
    .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"], .when(platforms: [.linux])),
]

let package = Package(
    name: "ipnd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ipnd", targets: ["ipnd"]),
        .executable(name: "ipnd-bench", targets: ["ipnd-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        // Push delivery; the tests' clients and receivers.
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // The ops console's templates.
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
    ],
    targets: [
        // The system OpenSSL 3 (libssl-dev), reached through pkg-config.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // The system SQLite's process-wide settings (sqlite3_config is variadic: a C shim).
        .systemLibrary(
            name: "CSQLiteSetup",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // Pure logic, no I/O: crypto wrapper, money, state machine, parsers, providers.
        .target(
            name: "IPNCore",
            dependencies: ["COpenSSL"],
            swiftSettings: swiftSettings
        ),
        // The store boundary, no database: records, the store protocols, and the one pure
        // decision of what a notification writes, which every backend calls.
        .target(
            name: "IPNStore",
            dependencies: ["IPNCore"],
            swiftSettings: swiftSettings
        ),
        // The SQLite backend (GRDB): schema, migrations, the group-commit writer, queries.
        .target(
            name: "IPNStoreSQLite",
            dependencies: [
                "IPNCore", "IPNStore", "CSQLiteSetup",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // YAML config model, validation, secret resolution, env overrides.
        .target(
            name: "IPNConfig",
            dependencies: [
                "IPNCore",
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings
        ),
        // The PostgreSQL backend (postgres-nio): several nodes on one database.
        .target(
            name: "IPNStorePostgres",
            dependencies: [
                "IPNCore", "IPNStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Push delivery of order events to the merchant's application (AsyncHTTPClient).
        .target(
            name: "IPNDelivery",
            dependencies: [
                "IPNCore", "IPNStore", "IPNConfig",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // Reconciliation: asks providers' status APIs about orders that went quiet (AsyncHTTPClient).
        .target(
            name: "IPNReconcile",
            dependencies: [
                "IPNCore", "IPNStore", "IPNDelivery",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The ops console: server-rendered pages on the ops listener, reading through the store
        // protocols; its templates are Swift string literals, so they ship inside the binary.
        .target(
            name: "IPNConsole",
            dependencies: [
                "IPNCore", "IPNStore", "IPNConfig",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // HTTP listeners, middleware, sd_notify, lifecycle, metrics.
        .target(
            name: "IPNServer",
            dependencies: [
                "IPNCore", "IPNStore", "IPNStoreSQLite", "IPNStorePostgres", "IPNConfig", "IPNDelivery", "IPNConsole", "IPNReconcile",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The subcommands, as a library so tests can drive them in-process.
        .target(
            name: "IPNCommands",
            dependencies: [
                "IPNCore", "IPNStore", "IPNStoreSQLite", "IPNConfig", "IPNDelivery", "IPNServer", "IPNReconcile",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "ipnd",
            dependencies: ["IPNCommands"],
            swiftSettings: swiftSettings,
            linkerSettings: executableLinkerSettings
        ),
        // Pre-generates signed notifications for `make bench` (not shipped).
        .executableTarget(
            name: "ipnd-bench",
            dependencies: [
                "IPNCore", "IPNConfig", "IPNStore", "IPNStoreSQLite", "IPNConsole",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings,
            linkerSettings: executableLinkerSettings
        ),
        .testTarget(
            name: "IPNCoreTests",
            dependencies: ["IPNCore", "IPNTestSupport"],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IPNStoreSQLiteTests",
            dependencies: [
                "IPNStore", "IPNStoreSQLite", "IPNCore", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        // What the tests share: the throwaway PostgreSQL server make test starts.
        .target(
            name: "IPNTestSupport",
            dependencies: ["IPNStore"],
            path: "Tests/IPNTestSupport",
            swiftSettings: swiftSettings
        ),
        // What the store's tests share: a fresh, empty store of either backend with a reader
        // beside it (`StoreUnderTest`), a fresh PostgreSQL database, notifications to record.
        .target(
            name: "IPNStoreTestSupport",
            dependencies: [
                "IPNStore", "IPNStoreSQLite", "IPNStorePostgres", "IPNCore", "IPNTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/IPNStoreTestSupport",
            swiftSettings: swiftSettings
        ),
        // The store's behaviour, one suite run against every backend.
        .testTarget(
            name: "IPNStoreTests",
            dependencies: [
                "IPNStore", "IPNStorePostgres", "IPNCore", "IPNTestSupport", "IPNStoreTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IPNConfigTests",
            dependencies: ["IPNConfig", "IPNCore"],
            swiftSettings: swiftSettings
        ),
        // What the end-to-end tests share: a daemon under test (in this process or a child
        // process), the provider doubles and the webhook receiver, clients for the ops API, the
        // console and raw HTTP, running `ipnd` and the Python tools, and the fixtures.
        .target(
            name: "IPNServerTestSupport",
            dependencies: [
                "IPNServer", "IPNStore", "IPNConfig", "IPNCore", "IPNTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/IPNServerTestSupport",
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        // The daemon over real HTTP: the provider endpoints, the ops API, metrics and logs, reload,
        // the store's failures and bounds, upgrades, the installed service.
        .testTarget(
            name: "IPNServerTests",
            dependencies: [
                "IPNServer", "IPNStore", "IPNStoreSQLite", "IPNConfig", "IPNCore", "IPNTestSupport", "IPNServerTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Reconciliation end to end: a daemon asking the provider doubles' status APIs.
        .testTarget(
            name: "IPNReconcileTests",
            dependencies: [
                "IPNServerTestSupport", "IPNCore", "IPNTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        // Push delivery: to webhook receivers from a daemon, and its threads directly.
        .testTarget(
            name: "IPNDeliveryTests",
            dependencies: ["IPNDelivery", "IPNServerTestSupport", "IPNCore", "IPNTestSupport"],
            swiftSettings: swiftSettings
        ),
        // The ops console: its pages over HTTP from a daemon, in a real browser, and its
        // templates and sessions directly.
        .testTarget(
            name: "IPNConsoleTests",
            dependencies: [
                "IPNConsole", "IPNServer", "IPNServerTestSupport", "IPNStore", "IPNConfig", "IPNCore", "IPNTestSupport",
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        // The subcommands as a user runs them: the built `ipnd` against real stores and daemons.
        .testTarget(
            name: "IPNCommandsTests",
            dependencies: [
                "IPNCommands", "IPNServerTestSupport", "IPNCore", "IPNTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        // What only the PostgreSQL store has: its statistics and schema upgrades, several
        // nodes on one database, and the throwaway server the tests run it on.
        .testTarget(
            name: "IPNStorePostgresTests",
            dependencies: [
                "IPNStorePostgres", "IPNStore", "IPNCore", "IPNTestSupport", "IPNStoreTestSupport", "IPNServerTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
    ]
)
