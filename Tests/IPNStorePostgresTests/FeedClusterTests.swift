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

/// The feed of two `ipnd serve` nodes on one PostgreSQL database (issue 44): writers of both
/// nodes commit without waiting for each other, and the node holding the sequencer lock numbers
/// their events after commit. Driven from outside by tools/cluster_test.py, in a database of its
/// own on the server `make test` runs, with three long-polling readers and a delivery target.
@Suite("The feed of two nodes: numbered after commit", .serialized, .enabled(if: PostgresTestServer.fromEnvironment() != nil))
struct FeedClusterTests {
    private func cluster(_ arguments: [String], timeout: Double = 600) async throws -> [String: String] {
        try await clusterTest(arguments, timeout: timeout)
    }

    @Test("two nodes under load, three long-polling readers and a push target: each reader sees strictly increasing seqs and, at the end, every committed event once; each order's events delivered in seq order, each once", .heavy(.double))
    func readersAndDeliveries() async throws {
        let counts = try await cluster(["--load", "--readers", "3", "--deliveries", "--min-orders", "150"])
        #expect(counts["feed_readers"] == "3")
        #expect(counts["feed_seen"] == counts["events"] && Int(counts["events"] ?? "") ?? 0 > 0)
        #expect(counts["acked_not_stored"] == "0" && counts["wrong_orders"] == "0")
        #expect(counts["undelivered_events"] == "0" && counts["delivered_twice"] == "0" && counts["orders_out_of_order"] == "0")
    }

    @Test("kill -9 of a node, then of the node numbering the feed, under load: nothing acknowledged lost, nothing numbered twice, the feed goes on", .heavy(.double))
    func killsUnderLoad() async throws {
        let counts = try await cluster(["--kills", "3", "--kill-sequencer", "3", "--readers", "3", "--deliveries", "--gap", "0.3", "0.8"])
        #expect(counts["kills"] == "3" && counts["sequencer_kills"] == "3")
        #expect(counts["acked_not_stored"] == "0" && counts["wrong_orders"] == "0")
        #expect(counts["feed_seen"] == counts["events"])
        #expect(counts["undelivered_events"] == "0" && counts["orders_out_of_order"] == "0")
    }

    @Test("a transaction held open 30 s on the same database does not stop the feed", .heavy(.double))
    func longTransaction() async throws {
        let counts = try await cluster(["--long-transaction", "30", "--readers", "3", "--min-orders", "100"])
        #expect(Int(counts["seqs_during_long_transaction"] ?? "") ?? 0 > 0)
        #expect(counts["feed_seen"] == counts["events"])
        #expect(counts["acked_not_stored"] == "0")
    }
}
