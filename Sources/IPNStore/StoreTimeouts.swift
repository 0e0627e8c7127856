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

/// How long a store's writes wait for the database before they fail, and a provider is answered
/// 503 so that it retries. The defaults are production's; a test store on a busy machine is
/// given longer ones, so that the tests see ipnd's behaviour rather than their machine's load.
public struct StoreTimeouts: Sendable, Equatable {
    /// A write waiting for a lock another process holds (SQLite's busy timeout), or, on
    /// PostgreSQL, a write outside the notification batches (a delivery's outcome, an inquiry
    /// record, a claim), waiting for a connection and locks included.
    public var write: Duration
    /// PostgreSQL: a batch of notifications up to its COMMIT, waiting for a connection included:
    /// a database that is down or unreachable must not hold providers' requests until their own
    /// timeouts.
    public var batch: Duration
    /// PostgreSQL: a batch in all once its COMMIT is sent. The database answered every statement
    /// before it, and a slow flush of its WAL (seconds, on a busy disk) is not an outage; past
    /// this the outcome is unknown and the batch's notifications are answered 503.
    public var commit: Duration

    public init(write: Duration = .seconds(5), batch: Duration = .seconds(5), commit: Duration = .seconds(15)) {
        self.write = write
        self.batch = batch
        self.commit = commit
    }

    /// The daemon's.
    public static let production = StoreTimeouts()

    /// `write` in seconds, as SQLite's busy timeout takes it.
    public var writeSeconds: Double {
        let (seconds, attoseconds) = write.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
