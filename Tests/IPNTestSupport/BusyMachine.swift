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

import IPNStore

extension StoreTimeouts {
    /// How long a test store's writes wait for the database: long enough for a machine busy with
    /// the whole suite (on two cores, a PostgreSQL batch has been seen to wait over 5 s for its
    /// turn), so that a test sees ipnd's behaviour rather than the machine's load. The tests of
    /// the timeouts themselves pass `.production`, or shorter.
    public static let busyMachine = StoreTimeouts(write: .seconds(30), batch: .seconds(30), commit: .seconds(60))
}
