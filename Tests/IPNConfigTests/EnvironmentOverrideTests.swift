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

import IPNConfig
import Testing

@Suite("Config: IPND_ overrides of the new keys")
struct EnvironmentOverrideTests {
    @Test("two-level keys: IPND_STORE_POSTGRES_* build store.postgres, IPND_STORE_RETENTION_* set retention")
    func nested() throws {
        let dir = try ConfigDirectory()
        try dir.write("pg", "pg-s3cret-pw\n")
        let config = try dir.load(minimalProviders, environment: [
            "IPND_STORE_POSTGRES_HOST": "db.internal", "IPND_STORE_POSTGRES_PORT": "6432", "IPND_STORE_POSTGRES_DATABASE": "ipnd",
            "IPND_STORE_POSTGRES_USER": "app", "IPND_STORE_POSTGRES_TLS": "prefer", "IPND_STORE_POSTGRES_POOL_SIZE": "4",
            "IPND_STORE_POSTGRES_PASSWORD_FILE": "pg",
            "IPND_STORE_RETENTION_REJECTED_DAYS": "7", "IPND_STORE_RETENTION_EVENTS_DAYS": "365",
            "IPND_SERVER_REJECTED_STORE_PER_MINUTE": "60", "IPND_OPS_CONSOLE_SECURE_COOKIE": "true",
        ])
        let postgres = try #require(config.store.postgres)
        #expect(postgres.host == "db.internal")
        #expect(postgres.port == 6432)
        #expect(postgres.database == "ipnd")
        #expect(postgres.user == "app")
        #expect(postgres.tls == .prefer)
        #expect(postgres.poolSize == 4)
        #expect(postgres.password == "pg-s3cret-pw")
        #expect(config.store.retention.rejectedDays == 7)
        #expect(config.store.retention.eventsDays == 365)
        #expect(config.server.rejectedStorePerMinute == 60)
        #expect(config.ops.consoleSecureCookie)
    }

    @Test("an override replaces one key of a section the file has, keeping its others")
    func mergesIntoFile() throws {
        let config = try ConfigDirectory().load(postgresYAML("pool_size: 8\npassword: from-file"), environment: ["IPND_STORE_POSTGRES_HOST": "db2.internal"])
        #expect(config.store.postgres?.host == "db2.internal")
        #expect(config.store.postgres?.poolSize == 8)
        #expect(config.store.postgres?.password == "from-file")
    }

    @Test("a bad value is blamed on its variable")
    func blame() throws {
        let dir = try ConfigDirectory()
        for (variable, value, key) in [
            ("IPND_STORE_RETENTION_EVENTS_DAYS", "0", "store.retention.events_days"),
            ("IPND_OPS_CONSOLE_SECURE_COOKIE", "yes", "ops.console_secure_cookie"),
            ("IPND_SERVER_REJECTED_STORE_PER_MINUTE", "lots", "server.rejected_store_per_minute"),
            ("IPND_STORE_POSTGRES_TLS", "disable", "store.postgres.tls"),
        ] {
            let error = dir.error(postgresYAML(), environment: [variable: value])
            #expect(error?.key == key, "\(variable): \(String(describing: error))")
            #expect(error?.message.hasSuffix("(the value comes from \(variable))") == true, "\(String(describing: error))")
        }
    }

    @Test("the database password and delivery targets cannot come from the environment")
    func refused() throws {
        let dir = try ConfigDirectory()
        let password = dir.error(postgresYAML(), environment: ["IPND_STORE_POSTGRES_PASSWORD": "pg-s3cret-pw"])
        #expect(password?.key == "IPND_STORE_POSTGRES_PASSWORD")
        #expect(password?.message.contains("password_file") == true)
        #expect(password?.description.contains("pg-s3cret-pw") == false)
        let delivery = dir.error(minimalProviders, environment: ["IPND_DELIVERIES_URL": "http://x/"])
        #expect(delivery?.key == "IPND_DELIVERIES_URL")
        #expect(delivery?.message.contains("deliveries") == true)
        #expect(dir.error(minimalProviders, environment: ["IPND_STORE_POSTGRES_HOSTNAME": "db"])?.key == "IPND_STORE_POSTGRES_HOSTNAME")
        #expect(dir.error(minimalProviders, environment: ["IPND_STORE_RETENTION": "30"])?.key == "IPND_STORE_RETENTION")
    }

    @Test("store.path from the environment with store.postgres in the file is the both-stores error")
    func bothStores() throws {
        let error = try ConfigDirectory().error(postgresYAML(), environment: ["IPND_STORE_PATH": "x.sqlite"])
        #expect(error?.key == "store.postgres")
    }

    @Test("a section that is not a mapping cannot take a nested override")
    func notAMapping() throws {
        let dir = try ConfigDirectory()
        let store = dir.error("store: 3\n" + minimalProviders, environment: ["IPND_STORE_POSTGRES_HOST": "db"])
        #expect(store?.key == "store")
        let postgres = dir.error("store:\n  postgres: [x]\n" + minimalProviders, environment: ["IPND_STORE_POSTGRES_HOST": "db"])
        #expect(postgres?.key == "store.postgres")
        #expect(postgres?.message.contains("mapping") == true)
        // An empty section is filled in.
        let empty = try dir.load("store:\n  retention:\n" + minimalProviders, environment: ["IPND_STORE_RETENTION_EVENTS_DAYS": "9"])
        #expect(empty.store.retention.eventsDays == 9)
    }
}
