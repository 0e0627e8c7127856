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
import IPNCore
@testable import IPNServerTestSupport
import IPNTestSupport
import Testing

@Suite("store copy carries the audit trail (issue 43)", .heavy)
struct AuditCopyTests {
    @Test("the trail is copied whole, hashes included, and verifies on the copy")
    func copy() async throws {
        let source = try await TestDaemon.start(opsTokens: [], opsYAML: OpsUsersFixture.yaml())
        try await source.deliver("unlimint", order: "CP-1", status: "COMPLETED")
        _ = try await source.api("/api/v1/orders/unlimint/CP-1?include=raw", token: OpsUsersFixture.token(.operator))
        try await source.stop()
        let sourceHashes = try source.column("SELECT hash FROM audit_records ORDER BY id")
        #expect(sourceHashes.count >= 3)

        // An empty store of another config to copy into.
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        let yaml = try String(contentsOfFile: source.configPath, encoding: .utf8)
            .replacingOccurrences(of: source.config.store.path, with: target.appendingPathComponent("copy.sqlite").path)
        let targetConfig = target.appendingPathComponent("ipnd.yaml").path
        try TestDaemon.writeConfig(yaml, to: targetConfig)
        let copied = try await ipnd(["store", "copy", "--to", targetConfig, "--config", source.configPath])
        #expect(copied.status == 0, "\(copied.stdout) \(copied.stderr)")
        let verify = try await ipnd(["audit", "verify", "--config", targetConfig])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        #expect(verify.stdout.contains("intact: \(sourceHashes.count) records"), "\(verify.stdout)")
        let list = try await ipnd(["audit", "list", "--limit", "1000", "--format", "json", "--config", targetConfig])
        #expect(try parseJSONLines(list.stdout).compactMap { $0.string("hash") }.reversed() == sourceHashes.compactMap { $0 })
    }
}
