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

/// Which stored `rejected` notifications `notifications reverify` takes (product.md section
/// 11): every condition given must hold. Read ascending by id, a page at a time.
public struct RejectedSelection: Sendable, Equatable {
    /// The most ids one selection may name.
    public static let maxIDs = 10_000

    /// Only these notification ids (empty: any); at most `maxIDs`.
    public var ids: [Int64]
    public var provider: String?
    public var account: String?
    /// Only those rejected for this reason code (`bad_signature`, ...).
    public var reason: String?
    /// Only those received at or after this `Timestamp` text.
    public var since: String?
    /// Only ids greater than this: the previous page's last id (0: from the first).
    public var afterID: Int64
    public var limit: Int

    public init(
        ids: [Int64] = [], provider: String? = nil, account: String? = nil, reason: String? = nil, since: String? = nil,
        afterID: Int64 = 0, limit: Int = 100
    ) {
        self.ids = ids
        self.provider = provider
        self.account = account
        self.reason = reason
        self.since = since
        self.afterID = afterID
        self.limit = limit
    }
}

/// A stored `rejected` notification with its request as ipnd kept it, enough to verify it
/// again: what arrived, from where, and what became of it since.
public struct RejectedRequest: Sendable, Equatable {
    /// The rejected notification's id.
    public var id: Int64
    public var provider: String
    public var account: String
    /// When it arrived (`Timestamp` text).
    public var receivedAt: String
    public var clientIP: String?
    /// The request target (path and query) as received.
    public var target: String
    /// The kept header fields: a JSON array of `[name, value]` pairs, credentials redacted.
    public var headers: String
    /// The body as received (capped at `server.max_body_bytes`).
    public var body: [UInt8]
    /// Why it was rejected, and the detail for people.
    public var reason: String?
    public var reasonDetail: String?
    /// The notifications `notifications reverify --apply` already recorded from it, oldest first.
    public var reverifiedAs: [ReverifiedCopy]

    public init(
        id: Int64, provider: String, account: String, receivedAt: String, clientIP: String?, target: String, headers: String,
        body: [UInt8], reason: String?, reasonDetail: String?, reverifiedAs: [ReverifiedCopy] = []
    ) {
        self.id = id
        self.provider = provider
        self.account = account
        self.receivedAt = receivedAt
        self.clientIP = clientIP
        self.target = target
        self.headers = headers
        self.body = body
        self.reason = reason
        self.reasonDetail = reasonDetail
        self.reverifiedAs = reverifiedAs
    }
}

/// A notification recorded from a rejected one by `notifications reverify --apply`.
public struct ReverifiedCopy: Sendable, Equatable {
    public var notificationID: Int64
    /// The verdict it was recorded with.
    public var verdict: Verdict

    public init(notificationID: Int64, verdict: Verdict) {
        self.notificationID = notificationID
        self.verdict = verdict
    }
}

/// What one batch of event retention removed.
public struct EventPruning: Sendable, Equatable {
    /// Events examined (older than the cutoff, after `afterSeq`): fewer than the batch's limit
    /// means none older is left after them.
    public var examined: Int
    /// The highest seq examined: the next batch's `afterSeq`; nil when none was.
    public var lastExamined: Int64?
    /// Events removed (the rest of those examined are still owed to a delivery target).
    public var events: Int
    /// Their deliveries removed with them (all delivered or failed).
    public var deliveries: Int
    /// `events_pruned_through` after the batch: the highest seq retention ever removed.
    public var prunedThrough: Int64

    public init(examined: Int, lastExamined: Int64?, events: Int, deliveries: Int, prunedThrough: Int64) {
        self.examined = examined
        self.lastExamined = lastExamined
        self.events = events
        self.deliveries = deliveries
        self.prunedThrough = prunedThrough
    }
}
