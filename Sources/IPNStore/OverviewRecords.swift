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

/// How many notifications one hour brought with one provider, account, verdict and reason: the
/// counts the console's overview and charts add up, read without touching the notifications.
///
/// A backend keeps them in the transaction that stores the notification (one increment per
/// notification, keyed by the hour of `received_at`), and moves one from `unlinked` to the
/// verdict a waiting notification ends with when its payment arrives. They count notifications
/// as received: retention removing old rejected rows does not take them back.
public struct HourlyNotificationCount: Sendable, Equatable {
    /// The hour's first millisecond, `Timestamp` text (`2026-11-26T10:00:00.000Z`).
    public var hour: String
    public var provider: String
    public var account: String
    public var verdict: Verdict
    /// The notification's `reason` (a rejection's reason code, the flag a mismatch raised); nil
    /// when it has none.
    public var reason: String?
    public var count: Int

    public init(hour: String, provider: String, account: String, verdict: Verdict, reason: String?, count: Int) {
        self.hour = hour
        self.provider = provider
        self.account = account
        self.verdict = verdict
        self.reason = reason
        self.count = count
    }

    /// The hour `receivedAt` (`Timestamp` text) falls in, as `hour` is written.
    public static func hour(of receivedAt: String) -> String {
        String(receivedAt.prefix(13)) + ":00:00.000Z"
    }
}

/// Orders carrying one flag: how many, and the newest of them.
public struct FlaggedOrders: Sendable, Equatable {
    public var total: Int
    /// Newest first, at most the limit asked for.
    public var newest: [OrderRecord]

    public init(total: Int, newest: [OrderRecord]) {
        self.total = total
        self.newest = newest
    }
}

/// Orders whose reference starts with some text, in order of reference (then id), a page at a
/// time: what the console's search box finds, whatever the provider or account.
public struct OrderSearch: Sendable, Equatable {
    /// Compared byte for byte (case-sensitive); must not be empty.
    public var referencePrefix: String
    /// Only orders after this one, in (reference, id) order: the last row of the previous page.
    public var after: Position?
    public var limit: Int

    /// A place in the search's order.
    public struct Position: Sendable, Equatable {
        public var orderRef: String
        public var id: Int64

        public init(orderRef: String, id: Int64) {
            self.orderRef = orderRef
            self.id = id
        }
    }

    public init(referencePrefix: String, after: Position? = nil, limit: Int = 50) {
        self.referencePrefix = referencePrefix
        self.after = after
        self.limit = limit
    }
}
