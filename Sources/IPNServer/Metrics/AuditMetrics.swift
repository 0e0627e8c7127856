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

import CoreMetrics
import IPNCore
import IPNStore

/// The audit trail's and the access check's counters: `ipnd_audit_records_total{action,outcome}`,
/// `ipnd_audit_dropped_total`, `ipnd_ops_forbidden_total{role}` and
/// `ipnd_ops_untrusted_identity_headers_total`.
final class AuditMetrics: Sendable {
    private let factory: any MetricsFactory
    private let records = Locked<[String: Counter]>([:])
    private let droppedCounter: Counter
    private let forbiddenByRole: [String: Counter]
    private let untrusted: Counter

    init(factory: any MetricsFactory) {
        self.factory = factory
        droppedCounter = Counter(label: "ipnd_audit_dropped_total", factory: factory)
        forbiddenByRole = Dictionary(uniqueKeysWithValues: (OpsRole.allCases.map(\.rawValue) + ["none"]).map { role in
            (role, Counter(label: "ipnd_ops_forbidden_total", dimensions: [("role", role)], factory: factory))
        })
        untrusted = Counter(label: "ipnd_ops_untrusted_identity_headers_total", factory: factory)
    }

    /// An audit record committed by this process.
    func recorded(_ record: AuditRecord) {
        let key = record.action + " " + record.outcome
        let counter = records.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(
                label: "ipnd_audit_records_total", dimensions: [("action", record.action), ("outcome", record.outcome)], factory: factory)
            counters[key] = counter
            return counter
        }
        counter.increment()
    }

    /// An API 401 not recorded: its address was past its 60 records a minute.
    func dropped() { droppedCounter.increment() }

    /// A request refused 403, by the role of who asked (`none`: a proxy's person with no role).
    func forbidden(role: String) { forbiddenByRole[role]?.increment() }

    /// Identity headers that came from an address not in `ops.proxy_auth.trusted_proxies`.
    func untrustedIdentityHeaders() { untrusted.increment() }
}
