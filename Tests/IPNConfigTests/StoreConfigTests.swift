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

import Foundation
import IPNConfig
import IPNCore
import Testing

/// A `store.postgres` section with `extra` lines added to it.
func postgresYAML(_ extra: String = "", host: String = "db.internal") -> String {
    var yaml = "store:\n  postgres:\n    host: \"\(host)\"\n    database: ipnd\n    user: ipnd\n"
    for line in extra.split(separator: "\n") { yaml += "    \(line)\n" }
    return yaml + minimalProviders
}

@Suite("Config: store.postgres")
struct PostgresConfigTests {
    @Test("product.md's sample loads; SQLite stays the default when postgres is absent")
    func sample() throws {
        let dir = try ConfigDirectory()
        try dir.write("db-ca.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", mode: 0o644)
        let config = try dir.load("""
            store:
              postgres:
                host: db.internal          # or a unix socket directory such as /run/postgresql
                port: 5433
                database: ipnd
                user: ipnd_app
                password: "pg-s3cret-pw"
                tls: require               # require | prefer | disable (disable: unix socket or loopback only)
                ca_file: db-ca.pem
                pool_size: 32
            """ + "\n" + minimalProviders)
        let postgres = try #require(config.store.postgres)
        #expect(postgres.host == "db.internal")
        #expect(postgres.port == 5433)
        #expect(postgres.database == "ipnd")
        #expect(postgres.user == "ipnd_app")
        #expect(postgres.password == "pg-s3cret-pw")
        #expect(postgres.tls == .require)
        #expect(postgres.caFile == dir.url.appendingPathComponent("db-ca.pem").path)
        #expect(postgres.poolSize == 32)
        #expect(!postgres.isUnixSocket)
        #expect(config.store.backend == .postgres(postgres))

        let sqlite = try dir.load(minimalProviders)
        #expect(sqlite.store.postgres == nil)
        #expect(sqlite.store.backend == .sqlite(path: "/var/lib/ipnd/ipnd.sqlite"))
    }

    @Test("defaults: port 5432, tls require, pool_size 16, no password (peer authentication)")
    func defaults() throws {
        let postgres = try #require(try ConfigDirectory().load(postgresYAML(host: "/run/postgresql/")).store.postgres)
        #expect(postgres.host == "/run/postgresql")
        #expect(postgres.isUnixSocket)
        #expect(postgres.port == 5432)
        #expect(postgres.tls == .require)
        #expect(postgres.poolSize == 16)
        #expect(postgres.password == nil)
        #expect(postgres.caFile == nil)
    }

    @Test("exactly one of store.path and store.postgres")
    func exactlyOne() throws {
        let error = try ConfigDirectory().error("store:\n  path: x.sqlite\n  postgres:\n    host: db\n    database: d\n    user: u\n" + minimalProviders)
        #expect(error?.key == "store.postgres")
        #expect(error?.message.contains("store.path") == true)
        #expect(error?.message.contains("keep one") == true)
    }

    @Test("tls disable is only for a unix socket directory or a loopback address", arguments: [
        ("/run/postgresql", true), ("127.0.0.1", true), ("127.3.2.1", true), ("::1", true), ("localhost", true), ("LOCALHOST.", true),
        ("db.internal", false), ("10.0.0.5", false), ("::2", false), ("0.0.0.0", false), ("localhost.example", false),
    ])
    func tlsDisable(host: String, allowed: Bool) throws {
        let error = try ConfigDirectory().error(postgresYAML("tls: disable", host: host))
        if allowed {
            #expect(error == nil, "\(String(describing: error))")
        } else {
            #expect(error?.key == "store.postgres.tls", "\(String(describing: error))")
            #expect(error?.message.contains("loopback") == true)
        }
    }

    @Test("malformed values name their key", arguments: [
        ("tls: always", "store.postgres.tls"), ("tls: REQUIRE", "store.postgres.tls"), ("tls: [require]", "store.postgres.tls"),
        ("port: 0", "store.postgres.port"), ("port: 65536", "store.postgres.port"), ("pool_size: 0", "store.postgres.pool_size"),
        ("pool_size: 257", "store.postgres.pool_size"), ("colour: red", "store.postgres.colour"),
        ("ca_file: nowhere.pem", "store.postgres.ca_file"), ("password: [a, b]", "store.postgres.password"),
        ("password: \"\"", "store.postgres.password"),
    ])
    func malformed(yaml: String, key: String) throws {
        #expect(try ConfigDirectory().error(postgresYAML(yaml))?.key == key)
    }

    @Test("host, database and user are required and checked", arguments: [
        ("store:\n  postgres:\n    database: d\n    user: u\n", "store.postgres.host"),
        ("store:\n  postgres:\n    host: db\n    user: u\n", "store.postgres.database"),
        ("store:\n  postgres:\n    host: db\n    database: d\n", "store.postgres.user"),
        ("store:\n  postgres:\n", "store.postgres"),
        ("store:\n  postgres: db.internal\n", "store.postgres"),
        ("store:\n  postgres:\n    host: run/postgresql\n    database: d\n    user: u\n", "store.postgres.host"),
        ("store:\n  postgres:\n    host: db_internal\n    database: d\n    user: u\n", "store.postgres.host"),
        ("store:\n  postgres:\n    host: 999.1.1.1\n    database: d\n    user: u\n", "store.postgres.host"),
        ("store:\n  postgres:\n    host: db\n    database: \(String(repeating: "d", count: 64))\n    user: u\n", "store.postgres.database"),
        ("store:\n  postgres:\n    host: db\n    database: d\n    user: \"a\\tb\"\n", "store.postgres.user"),
    ])
    func required(yaml: String, key: String) throws {
        #expect(try ConfigDirectory().error(yaml + minimalProviders)?.key == key)
    }

    @Test("host forms: names, IPv4, IPv6 with or without brackets, socket directories")
    func hosts() throws {
        let dir = try ConfigDirectory()
        for (host, expected) in [("db-1.internal", "db-1.internal"), ("10.0.0.5", "10.0.0.5"), ("::1", "::1"), ("[fd00::5]", "fd00::5"),
                                 ("/srv/pg/../postgresql/", "/srv/postgresql")] {
            #expect(try dir.load(postgresYAML(host: host)).store.postgres?.host == expected, "\(host)")
        }
    }

    @Test("ca_file only with TLS, and only a PEM file")
    func caFile() throws {
        let dir = try ConfigDirectory()
        try dir.write("ca.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", mode: 0o644)
        try dir.write("key.pem", "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n")
        let disabled = dir.error(postgresYAML("tls: disable\nca_file: ca.pem", host: "127.0.0.1"))
        #expect(disabled?.key == "store.postgres.ca_file")
        #expect(dir.error(postgresYAML("ca_file: key.pem"))?.message.contains("no PEM certificate") == true)
        #expect(try dir.load(postgresYAML("tls: prefer\nca_file: ca.pem")).store.postgres?.caFile == dir.url.appendingPathComponent("ca.pem").path)
    }

    @Test("password_file: relative to CREDENTIALS_DIRECTORY, refused when world-readable, read even without secrets")
    func passwordFile() throws {
        let dir = try ConfigDirectory()
        try dir.write("creds/pg", "pg-s3cret-pw\n")
        let environment = ["CREDENTIALS_DIRECTORY": dir.url.appendingPathComponent("creds").path]
        let yaml = postgresYAML("password_file: pg")
        #expect(try dir.load(yaml, environment: environment).store.postgres?.password == "pg-s3cret-pw")
        // Commands that only open the store need the password too.
        let path = try dir.write("skip.yaml", yaml)
        #expect(try ConfigLoader.load(path: path, environment: environment, secrets: .skip).store.postgres?.password == "pg-s3cret-pw")

        #expect(dir.error(yaml)?.key == "store.postgres.password_file")
        try dir.write("creds/pg", "pg-s3cret-pw\n", mode: 0o644)
        let exposed = dir.error(yaml, environment: environment)
        #expect(exposed?.key == "store.postgres.password_file")
        #expect(exposed?.message.contains("world-readable") == true)
        try dir.write("creds/empty", "\n")
        #expect(dir.error(postgresYAML("password_file: empty"), environment: environment)?.key == "store.postgres.password_file")
        let both = dir.error(postgresYAML("password: x\npassword_file: pg"), environment: environment)
        #expect(both?.key == "store.postgres.password")
    }

    @Test("an inline password in a world-readable config stops startup, pointing at password_file")
    func inlinePasswordPermissions() throws {
        let dir = try ConfigDirectory()
        try dir.write("unlimint", "x\n")
        let yaml = "store:\n  postgres:\n    host: db\n    database: d\n    user: u\n    password: pg-s3cret-pw\n"
            + "providers:\n  unlimint:\n    - callback_secret_file: unlimint\n"
        let error = dir.error(yaml, mode: 0o644)
        #expect(error?.key == "store.postgres.password")
        #expect(error?.message.contains("password_file") == true)
        #expect(error?.description.contains("pg-s3cret-pw") == false)
        #expect(dir.error(yaml, mode: 0o600) == nil)
    }

    @Test("the password never shows: description, summary, dump and errors")
    func passwordRedacted() throws {
        let dir = try ConfigDirectory()
        let config = try dir.load(postgresYAML("password: pg-s3cret-pw\nport: 6432\ntls: prefer"))
        let postgres = try #require(config.store.postgres)
        #expect(postgres.description == "postgres ipnd@db.internal:6432/ipnd tls=prefer pool_size=16 password=<redacted>")
        #expect(config.store.summary == "postgres ipnd@db.internal:6432/ipnd tls=prefer pool_size=16 password=<redacted> (max_batch 256)")
        var dumped = ""
        dump(config.store, to: &dumped)
        for text in [postgres.description, String(reflecting: postgres), "\(config.store)", String(reflecting: config.store.backend), dumped] {
            #expect(!text.contains("pg-s3cret-pw"), "\(text)")
        }
        #expect(dumped.contains("db.internal"))
        // An error found after the password was read does not carry it either.
        let error = dir.error(postgresYAML("password: pg-s3cret-pw\ntls: disable"))
        #expect(error?.key == "store.postgres.tls")
        #expect(error?.description.contains("pg-s3cret-pw") == false)
        let none = try dir.load(postgresYAML(host: "/run/postgresql")).store.postgres
        #expect(none?.description == "postgres ipnd@/run/postgresql:5432/ipnd tls=require pool_size=16 password=none")
        let v6 = try dir.load(postgresYAML(host: "fd00::5")).store.postgres
        #expect(v6?.description.hasPrefix("postgres ipnd@[fd00::5]:5432/ipnd ") == true)
    }
}

@Suite("Config: retention, rejected-request budget, console cookie")
struct StorageBoundsConfigTests {
    @Test("defaults: 30 and 90 days, 600 rejected requests a minute, no Secure cookie")
    func defaults() throws {
        let config = try ConfigDirectory().load(minimalProviders)
        #expect(config.store.retention == RetentionSettings())
        #expect(config.store.retention.rejectedDays == 30)
        #expect(config.store.retention.eventsDays == 90)
        #expect(config.store.retention.summary == "rejected_days 30, events_days 90")
        #expect(config.server.rejectedStorePerMinute == 600)
        #expect(config.ops.consoleSecureCookie == false)
    }

    @Test("values are read, range ends included")
    func values() throws {
        let dir = try ConfigDirectory()
        let config = try dir.load("""
            server:
              rejected_store_per_minute: 0
            store:
              retention:
                rejected_days: 1
                events_days: 36500
            ops:
              console_secure_cookie: true
            """ + "\n" + minimalProviders)
        #expect(config.server.rejectedStorePerMinute == 0)
        #expect(config.store.retention.rejectedDays == 1)
        #expect(config.store.retention.eventsDays == 36500)
        #expect(config.ops.consoleSecureCookie)
        let other = try dir.load("server:\n  rejected_store_per_minute: 1000000\nops:\n  console_secure_cookie: false\nstore:\n  retention:\n"
            + minimalProviders)
        #expect(other.server.rejectedStorePerMinute == 1_000_000)
        #expect(!other.ops.consoleSecureCookie)
        #expect(other.store.retention == RetentionSettings())
    }

    @Test("out-of-range and malformed values name their key", arguments: [
        ("server:\n  rejected_store_per_minute: -1\n", "server.rejected_store_per_minute"),
        ("server:\n  rejected_store_per_minute: 1000001\n", "server.rejected_store_per_minute"),
        ("store:\n  retention:\n    rejected_days: 0\n", "store.retention.rejected_days"),
        ("store:\n  retention:\n    events_days: 36501\n", "store.retention.events_days"),
        ("store:\n  retention:\n    events_days: 90d\n", "store.retention.events_days"),
        ("store:\n  retention:\n    notifications_days: 9\n", "store.retention.notifications_days"),
        ("store:\n  retention: 30\n", "store.retention"),
        ("ops:\n  console_secure_cookie: yes\n", "ops.console_secure_cookie"),
        ("ops:\n  console_secure_cookie: True\n", "ops.console_secure_cookie"),
        ("ops:\n  console_secure_cookie: 1\n", "ops.console_secure_cookie"),
        ("ops:\n  console_secure_cookie:\n", "ops.console_secure_cookie"),
    ])
    func malformed(yaml: String, key: String) throws {
        let error = try ConfigDirectory().error(yaml + minimalProviders)
        #expect(error?.key == key, "\(String(describing: error))")
    }
}
