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
@testable import IPNServerTestSupport
import IPNTestSupport
import Testing

/// Several `ipnd serve` processes on one PostgreSQL database (issue 31), driven from outside by
/// tools/cluster_test.py, in a database of its own on the server `make test` runs. The restart
/// test runs alone among the heavy tests (every test using PostgreSQL is one): restarting the
/// server drops every connection to it.
@Suite("Two nodes on one PostgreSQL database", .serialized, .enabled(if: PostgresTestServer.fromEnvironment() != nil))
struct ClusterTests {
    private func cluster(_ arguments: [String], timeout: Double = 400) async throws -> [String: String] {
        try await clusterTest(arguments, timeout: timeout)
    }

    @Test("ten concurrent deliveries of one notification split across both nodes: one applied; shuffled lifecycles end as on one node; the feed under two-node load has every seq once, ascending; each event delivered once", .heavy(.double))
    func twoNodes() async throws {
        let counts = try await cluster(["--dedup", "10", "--lifecycles", "40", "--load", "--deliveries"])
        #expect(counts["dedup_applied"] == "10")
        #expect(counts["dedup_duplicates"] == "90")
        #expect(counts["wrong_orders"] == "0")
        #expect(counts["acked_not_stored"] == "0")
        #expect(counts["delivered_twice"] == "0")
        #expect(counts["undelivered_events"] == "0")
        #expect(counts["feed_seen"] == counts["events"])
    }

    @Test("kill -9 of one node under two-node load, ten times: nothing acknowledged lost, nothing applied twice, every event delivered", .heavy(.double))
    func killOneNode() async throws {
        let counts = try await cluster(["--kills", "10", "--deliveries", "--gap", "0.2", "0.6"])
        #expect(counts["kills"] == "10")
        #expect(counts["acked_not_stored"] == "0")
        #expect(counts["wrong_orders"] == "0")
        #expect(counts["undelivered_events"] == "0")
        #expect(counts["feed_seen"] == counts["events"])
    }

    @Test("PostgreSQL restarted under load (pg_ctl restart -m immediate): 503 while it is down, applied again after, nothing acknowledged lost",
          .heavy(.whole))
    func databaseRestart() async throws {
        // Down 7 s each time, longer than a batch may wait for the database (5 s).
        let counts = try await cluster(["--pg-restarts", "2", "--pg-down", "7", "--deliveries", "--gap", "0.5", "1.0"])
        #expect(counts["pg_restarts"] == "2")
        #expect(Int(counts["answers_503"] ?? "") ?? 0 > 0, "no request met the restart: \(counts)")
        #expect(counts["acked_not_stored"] == "0")
        #expect(counts["wrong_orders"] == "0")
        #expect(counts["undelivered_events"] == "0")
    }
}
