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

/// The state of an order, as product.md section 5 names and ranks them.
public enum OrderState: String, Sendable, CaseIterable, Codable {
    case expected
    case pending
    case authorized
    case failed
    case canceled
    case expired
    case paid
    case partiallyRefunded = "partially_refunded"
    case refunded
    case chargedBack = "charged_back"

    /// Transitions only go up in rank, except the named reversals.
    public var rank: Int {
        switch self {
        case .expected: 0
        case .pending: 10
        case .authorized: 20
        case .failed, .canceled, .expired: 30
        case .paid: 40
        case .partiallyRefunded: 50
        case .refunded: 60
        case .chargedBack: 70
        }
    }

    /// Failed, canceled and expired: the states a late authorization may leave.
    public var isUnsuccessfulEnd: Bool { rank == 30 }
}

/// What ipnd concluded about one received request (product.md section 6).
public enum Verdict: String, Sendable, CaseIterable, Codable {
    case applied
    case recorded
    case stale
    case duplicate
    case mismatch
    case unknownStatus = "unknown_status"
    case unlinked
    case rejected

    /// Whether the provider gets its success acknowledgement for this verdict.
    public var isAcknowledged: Bool { self != .rejected }
}
