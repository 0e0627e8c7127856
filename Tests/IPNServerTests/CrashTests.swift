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
import Testing

/// The short form of the crash test (`make crash-test` runs the long one): `tools/crash_test.py`
/// drives the built `ipnd serve` with concurrent signed notifications from the independent
/// Python client, kills it with SIGKILL at random moments, restarts it and re-sends what was not
/// acknowledged, then checks the SQLite file itself. Events are delivered meanwhile to a receiver
/// that verifies their signatures: every event must arrive, each order's in seq order.
@Suite("kill -9 under load (issue 7)")
struct CrashTests {
    @Test("every acknowledged notification is stored once, every order in the state its notifications imply, integrity ok; every event delivered")
    func killUnderLoad() async throws {
        let result = try await runPythonTool(
            "crash_test.py", ["--binary", ipndBinary.path, "--kills", "4", "--min-orders", "60", "--gap", "0.05", "0.6", "--deliveries"], timeout: 400)
        let summary = result.stdout.split(separator: "\n").first { $0.hasPrefix("crash-test: kills=") } ?? ""
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("crash-test: PASS"))
        let counts = Dictionary(summary.dropFirst("crash-test: ".count).split(separator: " ").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1)
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        }, uniquingKeysWith: { first, _ in first })
        #expect(counts["kills"] == "4", "\(summary)")
        #expect(counts["acked_not_stored"] == "0")
        #expect(counts["wrong_orders"] == "0")
        #expect(counts["integrity"] == "ok")
        #expect(Int(counts["orders"] ?? "") ?? 0 >= 60)
        #expect(counts["undelivered_events"] == "0", "\(summary)")
        #expect(Int(counts["events"] ?? "") ?? 0 > 0 && counts["events"] == counts["delivered_events"], "\(summary)")
        print(summary)
    }
}
