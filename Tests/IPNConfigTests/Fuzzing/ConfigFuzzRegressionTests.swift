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
import Testing

/// The config fuzz target's kept inputs replayed as a test (see `Fuzz/regressions/config`).
@Suite("Config fuzz seeds and regressions replayed (issue 7)")
struct ConfigFuzzRegressionTests {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    @Test("every kept config input loads or fails with a config error, never showing a secret")
    func replay() throws {
        var count = 0
        for kind in ["seeds", "regressions"] {
            let folder = Self.directory.appendingPathComponent(kind).appendingPathComponent("config")
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() {
                let data = try #require(FileManager.default.contents(atPath: folder.appendingPathComponent(name).path))
                ConfigFuzzHarness.run([UInt8](data))
                count += 1
            }
        }
        #expect(count >= 4)
    }

    @Test("the harness's checks cover the store password and delivery targets")
    func newSections() throws {
        // The sandbox's secret file as the database password: loads, so the summaries are checked.
        let postgres = """
            store:
              postgres: {host: /run/postgresql, database: d, user: u, password_file: secret}
            providers:
              unlimint: [{callback_secret_file: secret}]
            deliveries:
              - {name: a, url: "https://h/x", secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, types: order.flagged}
            """
        let path = try ConfigDirectoryForHarness.write(postgres)
        let config = try ConfigLoader.load(path: path, environment: ["CREDENTIALS_DIRECTORY": ConfigFuzzHarness.sandbox])
        #expect(config.store.postgres?.password == ConfigFuzzHarness.fileSecret)
        #expect(config.deliveries.count == 1)
        ConfigFuzzHarness.run(Array(postgres.utf8))
        // The secret file as a webhook secret: an error, which must not quote it.
        ConfigFuzzHarness.run(Array("providers:\n  unlimint: [{callback_secret: x}]\ndeliveries:\n  - {name: a, url: \"http://h/\", secret_file: secret}\n".utf8))
    }
}

/// Writes a config beside the harness's sandbox files.
private enum ConfigDirectoryForHarness {
    static func write(_ yaml: String) throws -> String {
        let path = ConfigFuzzHarness.sandbox + "/direct-\(UUID().uuidString.prefix(8)).yaml"
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }
}
