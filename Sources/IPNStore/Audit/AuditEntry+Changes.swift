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

/// What the store adds to an audit record's detail once the change it records is known, in
/// the change's own transaction: the same for every backend.
extension AuditEntry {
    /// An expectation registered: the order's state after it, and the flag it raised.
    public func expecting(_ outcome: ExpectationOutcome) -> AuditEntry {
        var entry = self
        entry.detail.add("order_state", outcome.state.rawValue)
        if outcome.mismatch != nil { entry.detail.add("flagged", OrderFlag.amountMismatch.rawValue) }
        return entry
    }

    /// A count of what the change touched (`retried`, `due`).
    public func counting(_ key: String, _ count: Int) -> AuditEntry {
        var entry = self
        entry.detail.add(key, count)
        return entry
    }

    /// A notification recorded (`notifications reverify --apply`): its id, verdict and order state.
    public func recording(_ outcome: RecordOutcome) -> AuditEntry {
        var entry = self
        entry.detail.add("notification_id", outcome.notificationID)
        entry.detail.add("verdict", outcome.verdict.rawValue)
        if let state = outcome.orderState { entry.detail.add("order_state", state.rawValue) }
        return entry
    }

    /// An inquiry made now (`order.reconcile`): its id and outcome.
    public func asking(_ inquiry: InquiryRecord) -> AuditEntry {
        var entry = self
        entry.detail.add("inquiry_id", inquiry.id)
        entry.detail.add("inquiry_outcome", inquiry.outcome.rawValue)
        if inquiry.outcome.isAnswer == false { entry.outcome = .error }
        return entry
    }
}

extension AuditEntry {
    /// The same action refused before anything was written, and why.
    public func refused(_ reason: String) -> AuditEntry {
        var entry = self
        entry.outcome = .refused
        entry.detail.add("reason", reason)
        return entry
    }
}

/// How audit records name what was done to: `unlimint/default/67897`, `notification:42`,
/// `delivery:7,8` (runs of three or more consecutive ids as `5-9`), `target:orders-app`.
public enum AuditTarget {
    public static func order(provider: String, account: String, orderRef: String) -> String {
        "\(provider)/\(account)/\(orderRef)"
    }

    public static func notifications(_ ids: [Int64]) -> String? { list("notification", ids) }
    public static func deliveries(_ ids: [Int64]) -> String? { list("delivery", ids) }

    public static func deliveryTarget(_ name: String) -> String { "target:\(name)" }

    /// `kind:` and the ids ascending, runs of three or more written `first-last`; nil for none.
    static func list(_ kind: String, _ ids: [Int64]) -> String? {
        let sorted = Array(Set(ids)).sorted()
        guard !sorted.isEmpty else { return nil }
        var parts: [String] = []
        var index = 0
        while index < sorted.count {
            var end = index
            while end + 1 < sorted.count, sorted[end + 1] == sorted[end] + 1 { end += 1 }
            if end - index >= 2 {
                parts.append("\(sorted[index])-\(sorted[end])")
            } else {
                for position in index...end { parts.append(String(sorted[position])) }
            }
            index = end + 1
        }
        return kind + ":" + parts.joined(separator: ",")
    }
}

extension DeliveryRetrySelection {
    /// What a retry of this selection is done to: `delivery:7,8`, or `target:NAME` with its
    /// state (and since) in the name.
    public var auditTarget: String? {
        switch self {
        case .ids(let ids): AuditTarget.deliveries(ids)
        case .target(let name, let state, let since):
            AuditTarget.deliveryTarget(name) + " state:\(state.rawValue)" + (since.map { " since:\($0)" } ?? "")
        }
    }
}
