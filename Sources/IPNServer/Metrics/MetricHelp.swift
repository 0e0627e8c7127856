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

/// The `# HELP` text of every metric family ipnd exports: the one place that describes them.
///
/// A new metric gets its HELP line by adding one entry here; its instruments are created as
/// usual (through `MetricsRegistry.factory`, with no help text of their own). `/metrics`
/// prints the text for each family that has at least one series; a family listed here whose
/// instruments do not exist yet (a feature not configured) is not printed at all, rather than
/// printed with HELP and TYPE and no samples. A help text given to swift-prometheus itself is
/// not used: this table is what `/metrics` prints.
enum MetricHelp {
    /// Family name (as in `# TYPE`, with `_total` for counters) to its help text: one line,
    /// saying what is counted or measured, in which unit, and what the labels are.
    static let texts: [String: String] = [
        // Notifications
        "ipnd_notifications_total":
            "Notifications received, each counted once by the verdict it got on arrival, by provider and verdict.",
        "ipnd_notifications_linked_total":
            "Notifications that arrived unlinked and were applied when their payment arrived, by provider and the verdict they ended with.",
        "ipnd_account_notifications_total":
            "Authentic notifications recorded (any verdict but rejected), by provider and configured account; every configured account has a series from the start.",
        "ipnd_rejected_total":
            "Rejected requests, stored or not, by provider, account (empty when the request names no configured account) and rejection reason.",
        "ipnd_rejected_unstored_total":
            "Rejected requests answered but not stored, their client address being past its budget, by provider and rejection reason.",
        // Provider-facing HTTP
        "ipnd_request_duration_seconds":
            "Provider requests from arrival to answer, 503s included, by provider, in seconds.",
        "ipnd_request_timeouts_total": "Provider requests cut off by the request deadline before their answer.",
        "ipnd_requests_too_large_total": "Provider requests refused with 413 for a body past server.max_body_bytes, by provider.",
        "ipnd_store_unavailable_total": "Provider requests answered 503 because the store did not take the notification, by provider.",
        // Store
        "ipnd_store_commit_duration_seconds": "Store write transactions (one batch of notifications each), in seconds, fsync included.",
        "ipnd_store_commit_batch_size": "Notifications written per store transaction.",
        "ipnd_store_commit_failures_total": "Store write transactions that failed.",
        "ipnd_store_checkpoint_duration_seconds": "WAL checkpoints copying the log back into the database file, in seconds.",
        "ipnd_store_checkpoint_failures_total": "WAL checkpoints that failed.",
        "ipnd_orders": "Orders in the store by state, read at each scrape.",
        "ipnd_events_unsequenced":
            "Order events committed but not yet numbered into the feed (PostgreSQL numbers them just after their commit; always 0 on SQLite), read at each scrape.",
        // Deliveries to the merchant's application
        "ipnd_deliveries_total":
            "Event deliveries to the merchant's application by target and outcome: delivered (2xx), retried (tried again later) or failed (no longer retried).",
        "ipnd_delivery_backlog": "Events still to be delivered, by target.",
        "ipnd_delivery_oldest_pending_seconds": "Age of the oldest event still to be delivered, by target, in seconds.",
        "ipnd_delivery_target_paused":
            "Whether the target is paused (it answered 410; `ipnd deliveries resume` resumes it), by target: 1 paused, 0 not.",
        "ipnd_delivery_duration_seconds": "Delivery requests from sending to answer, by target, in seconds.",
        // Reconciliation: asking providers about orders that went quiet
        "ipnd_inquiries_total":
            "Status inquiries made to providers, by provider and outcome: recorded, no_news, not_found, error, bad_signature or cannot_ask.",
        "ipnd_inquiries_unauthorized_total":
            "Status inquiries whose provider refused the account's credential (401, after a fresh token where there is one), by provider and account: check the account's inquiry section.",
        "ipnd_inquiry_duration_seconds": "Status inquiries from the first request (a token's included) to the answer read, by provider, in seconds.",
        "ipnd_orders_awaiting_inquiry": "Orders of the accounts with an inquiry section whose inquiry is due now or overdue, read at each scrape.",
        "ipnd_orders_unsettled": "Orders flagged unsettled: reconciliation gave up on them before they settled, read at each scrape.",
        // Who may do what: the ops listener's access check and the audit trail
        "ipnd_audit_records_total":
            "Audit records this process wrote to the store (it also logs each, msg=audit), by action and outcome (ok, refused, error).",
        "ipnd_audit_dropped_total":
            "Ops API 401s not written to the audit trail: their client address was past its 60 records a minute.",
        "ipnd_ops_forbidden_total":
            "Ops API and console requests refused 403, by the role of who asked (viewer, operator, admin; none: a proxy's person whose groups map to no role).",
        "ipnd_ops_untrusted_identity_headers_total":
            "Ops requests carrying ops.proxy_auth's identity headers from an address not in its trusted_proxies: the headers were ignored.",
        // The daemon
        "ipnd_connections": "Connections open now, by listener (server, ops).",
        "ipnd_connections_limit":
            "The most connections a listener holds at once, by listener: its share of RLIMIT_NOFILE (LimitNOFILE= in the unit) less descriptors kept for the store and logs.",
        "ipnd_accept_paused_total":
            "Times a listener stopped accepting at its connection limit (ipnd_connections_limit), by listener; new connections wait in the listen queue meanwhile.",
        "ipnd_accept_failures_total":
            "Connections a listener failed to accept (out of file descriptors or kernel memory), by listener; it tries again a second later.",
        "ipnd_config_reload_failures_total": "Config reloads (SIGHUP) refused because the new config failed validation; the running one was kept.",
        "ipnd_config_last_reload_successful":
            "Whether the last config reload (SIGHUP) was put in force: 1 (also before any reload), 0 when it was refused and the running config was kept.",
        "ipnd_ready": "Whether the store took a durable write (the heartbeat /readyz writes) at this scrape: 1 ready, 0 not.",
        "ipnd_build_info": "The running ipnd build, by version; always 1.",
    ]

    /// What `/metrics` prints for a family with no entry in `texts`: a HELP line all the same (so
    /// the exposition stays complete), saying what to fix. The tests fail on it.
    static func missing(_ family: String) -> String {
        "\(family): no help text yet (add it to MetricHelp.texts)"
    }

    /// The help text of `family`.
    static func text(for family: String) -> String {
        texts[family] ?? missing(family)
    }
}
