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
import IPNConfig
import IPNCore
import IPNStore

/// `notifications reverify` (product.md section 11): verifies stored `rejected` requests again
/// with today's config (a secret fixed, an account added, `allow_ips` widened) and, with
/// `apply`, records each one that now verifies through the normal write path as a new
/// notification whose `reverified_from` is the rejected one: dedup, the state machine, events
/// and deliveries apply as if it had just arrived, and one the provider has re-sent since ends
/// `duplicate`. Without `apply` nothing is written: each verdict is what the store's planner
/// decides now (`Store.plan`).
///
/// A request already reverified is not recorded again (it is reported `already_reverified`,
/// naming the notification recorded from it); should two runs race, the dedup key still lets
/// only one apply.
///
/// ```swift
/// var run = Reverification(config: config, store: store, apply: false)
/// var selection: RejectedSelection? = RejectedSelection(provider: "unlimint", limit: 200)
/// while let page = selection {
///     let (results, next) = try await run.next(page)
///     print(results.map(\.json.text))
///     selection = next
/// }
/// ```
public struct Reverification: Sendable {
    public let apply: Bool
    private let config: IPNDConfig
    private let store: any Store
    private let now: @Sendable () -> Date
    /// In a dry run, the dedup keys planned so far, each with the rejected request it came from
    /// and what it would do: a later request with the same key would be recorded `duplicate`.
    private var planned: [PlannedKey: (id: Int64, outcome: RecordOutcome)] = [:]

    private struct PlannedKey: Hashable {
        let provider: String
        let account: String
        let dedupKey: String
    }

    public init(config: IPNDConfig, store: any Store, apply: Bool, now: @escaping @Sendable () -> Date = { Date() }) {
        self.config = config
        self.store = store
        self.apply = apply
        self.now = now
    }

    /// Reverifies the page `selection` reads (ascending by id); returns each request's result
    /// and the selection of the next page, nil after the last.
    public mutating func next(_ selection: RejectedSelection) async throws(StoreError)
        -> (results: [ReverifyResult], next: RejectedSelection?)
    {
        let requests = try await store.rejectedRequests(selection)
        var results: [ReverifyResult] = []
        results.reserveCapacity(requests.count)
        for request in requests {
            results.append(ReverifyResult(request: request, outcome: try await reverify(request)))
        }
        var next = selection
        next.afterID = requests.last?.id ?? selection.afterID
        return (results, requests.count < selection.limit ? nil : next)
    }

    private mutating func reverify(_ request: RejectedRequest) async throws(StoreError) -> ReverifyResult.Outcome {
        if let copy = request.reverifiedAs.first { return .alreadyReverified(copy) }
        let receivedAt = Timestamp.format(epochMilliseconds: Int64(now().timeIntervalSince1970 * 1000))
        switch Self.check(request, config: config, receivedAt: receivedAt) {
        case .stillRejected(let rejection):
            return .stillRejected(rejection)
        case .cannotReverify(let reason, let detail):
            return .cannotReverify(reason: reason, detail: detail)
        case .verified(let received, let notification):
            let entry = InboxEntry.verified(received, notification)
            if apply { return .verified(try await store.record(entry), recorded: true) }
            let key = PlannedKey(provider: received.provider, account: received.account, dedupKey: notification.dedupKey)
            if let earlier = planned[key] {
                return .verified(RecordOutcome(
                    notificationID: 0, verdict: .duplicate, orderState: earlier.outcome.orderState,
                    orderRef: earlier.outcome.orderRef ?? notification.orderRef,
                    explanation: "same dedup key as rejected notification \(earlier.id), reverified before it"), recorded: false)
            }
            let outcome = try await store.plan(entry)
            planned[key] = (request.id, outcome)
            return .verified(outcome, recorded: false)
        }
    }

    /// What verifying a stored request with `config` says, before the store is asked.
    enum Check {
        /// It verifies: the request to record (arriving at `receivedAt`) and what it says.
        case verified(ReceivedRequest, VerifiedNotification)
        case stillRejected(Rejection)
        /// Verifying it needs what ipnd did not keep.
        case cannotReverify(reason: String, detail: String)
    }

    static func check(_ request: RejectedRequest, config: IPNDConfig, receivedAt: String) -> Check {
        if request.reason == RejectReason.incompleteBody.rawValue {
            return .stillRejected(Rejection(.incompleteBody, "the body did not arrive whole: what arrived cannot verify"))
        }
        guard let account = config.account(provider: request.provider, name: request.account) else {
            return .stillRejected(Rejection(
                .unknownAccount, "no account \"\(request.account)\" for \(request.provider) in \(config.path)"))
        }
        if let allowed = account.allowIPs {
            guard let client = request.clientIP.flatMap(IPAddress.init), allowed.containsAddress(client) else {
                return .stillRejected(Rejection(.ipNotAllowed, "client \(request.clientIP ?? "unknown") is not in today's allow_ips"))
            }
        }
        guard let headers = StoredHeaderList(json: request.headers) else {
            return .cannotReverify(reason: "headers_unreadable", detail: "the stored header list cannot be read")
        }
        let raw = RawRequest(method: "POST", target: request.target, headers: headers.fields, body: request.body,
                             clientIP: request.clientIP)
        do {
            let notification = try account.provider.verifyRequest(raw)
            let received = ReceivedRequest(
                provider: request.provider, account: request.account, receivedAt: receivedAt, clientIP: request.clientIP,
                target: request.target, headers: request.headers, body: request.body, reverifiedFrom: request.id)
            return .verified(received, notification)
        } catch {
            if let header = error.header?.lowercased(), headers.redacted.contains(header) {
                return .cannotReverify(
                    reason: "header_redacted",
                    detail: "its \(header) header was stored redacted (ipnd keeps no credentials); only the provider's re-send can verify")
            }
            if headers.truncated, error.reason == .missingHeader {
                return .cannotReverify(
                    reason: "headers_not_kept",
                    detail: "\(error.detail); some of its headers were not kept (past \(StoredHeaders.maxBytes) bytes)")
            }
            return .stillRejected(error)
        }
    }
}

/// What reverifying one stored rejected request came to (or would come to, in a dry run).
public struct ReverifyResult: Sendable {
    public enum Outcome: Sendable {
        /// It verifies now: the verdict recording gave (`recorded`) or would give (a dry run).
        case verified(RecordOutcome, recorded: Bool)
        /// It still fails verification or a check, for this reason.
        case stillRejected(Rejection)
        /// Verifying it needs what ipnd did not keep (a credential header, stored redacted).
        case cannotReverify(reason: String, detail: String)
        /// An earlier `--apply` recorded it already, as this notification.
        case alreadyReverified(ReverifiedCopy)
    }

    /// The rejected notification's id.
    public let id: Int64
    public let provider: String
    public let account: String
    public let receivedAt: String
    public let clientIP: String?
    /// Why it was rejected when it arrived.
    public let rejectedReason: String?
    public let outcome: Outcome

    init(request: RejectedRequest, outcome: Outcome) {
        id = request.id
        provider = request.provider
        account = request.account
        receivedAt = request.receivedAt
        clientIP = request.clientIP
        rejectedReason = request.reason
        self.outcome = outcome
    }

    /// The verdict it gets now: a notification verdict (`applied`, `duplicate`, `stale`, ...),
    /// `still_rejected`, `cannot_reverify` or `already_reverified`.
    public var verdict: String {
        switch outcome {
        case .verified(let outcome, _): outcome.verdict.rawValue
        case .stillRejected: "still_rejected"
        case .cannotReverify: "cannot_reverify"
        case .alreadyReverified: "already_reverified"
        }
    }

    /// The reason code beside the verdict: the rejection's now, why it cannot be reverified, or
    /// the flag a verified one raised.
    public var reason: String? {
        switch outcome {
        case .verified(let outcome, _): outcome.flag?.rawValue
        case .stillRejected(let rejection): rejection.reason.rawValue
        case .cannotReverify(let reason, _): reason
        case .alreadyReverified: nil
        }
    }

    public var detail: String? {
        switch outcome {
        case .verified(let outcome, _): outcome.explanation
        case .stillRejected(let rejection): rejection.detail
        case .cannotReverify(_, let detail): detail
        case .alreadyReverified(let copy): "recorded as notification \(copy.notificationID) (\(copy.verdict.rawValue)) by an earlier reverify"
        }
    }

    /// The notification recorded from it: by this run, or by an earlier one.
    public var notificationID: Int64? {
        switch outcome {
        case .verified(let outcome, true): outcome.notificationID
        case .alreadyReverified(let copy): copy.notificationID
        default: nil
        }
    }

    /// Whether this run recorded it.
    public var recorded: Bool {
        if case .verified(_, true) = outcome { return true }
        return false
    }

    public var orderRef: String? {
        if case .verified(let outcome, _) = outcome { return outcome.orderRef }
        return nil
    }

    public var orderState: OrderState? {
        if case .verified(let outcome, _) = outcome { return outcome.orderState }
        return nil
    }

    /// `id` (the rejected notification), `provider`, `account`, `received_at`, `client_ip`,
    /// `rejected_reason`, `verdict`, `reason`, `detail`, `order_ref`, `order_state`,
    /// `notification_id` (the notification recorded from it, null in a dry run).
    public var json: JSONOut {
        .object([
            ("id", .int(id)),
            ("provider", .string(provider)),
            ("account", .string(account)),
            ("received_at", .string(receivedAt)),
            ("client_ip", .optional(clientIP)),
            ("rejected_reason", .optional(rejectedReason)),
            ("verdict", .string(verdict)),
            ("reason", .optional(reason)),
            ("detail", .optional(detail)),
            ("order_ref", .optional(orderRef)),
            ("order_state", .optional(orderState?.rawValue)),
            ("notification_id", .optional(notificationID)),
        ])
    }
}

extension [ReverifyResult] {
    /// How many got each verdict, most first (ties by name): `20 applied, 1 cannot_reverify`.
    public var verdictCounts: [(verdict: String, count: Int)] {
        Dictionary(grouping: self, by: \.verdict).map { ($0.key, $0.value.count) }
            .sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }
    }
}
