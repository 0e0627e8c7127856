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

import IPNCore
import Synchronization

/// Counts since start, for systemd `STATUS=` lines.
final class NotificationTally: Sendable {
    private let total = Atomic<Int>(0)
    private let applied = Atomic<Int>(0)
    private let duplicates = Atomic<Int>(0)
    private let rejected = Atomic<Int>(0)
    private let storeFailures = Atomic<Int>(0)

    func count(_ verdict: Verdict) {
        total.add(1, ordering: .relaxed)
        switch verdict {
        case .applied: applied.add(1, ordering: .relaxed)
        case .duplicate: duplicates.add(1, ordering: .relaxed)
        case .rejected: rejected.add(1, ordering: .relaxed)
        default: break
        }
    }

    func countStoreFailure() { storeFailures.add(1, ordering: .relaxed) }

    var summary: String {
        "\(total.load(ordering: .relaxed)) notifications since start: \(applied.load(ordering: .relaxed)) applied, "
            + "\(duplicates.load(ordering: .relaxed)) duplicate, \(rejected.load(ordering: .relaxed)) rejected, "
            + "\(storeFailures.load(ordering: .relaxed)) refused with 503"
    }
}
