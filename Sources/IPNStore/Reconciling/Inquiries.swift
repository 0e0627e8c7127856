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

/// Why an inquiry was made.
public enum InquiryTrigger: String, Sendable, CaseIterable, Codable {
    /// The reconciler: the order's schedule said it was due.
    case schedule
    /// `ipnd orders reconcile`.
    case cli
    /// `POST /api/v1/orders/{provider}/{order_ref}/inquiries`.
    case api
    /// The console's "Ask the provider now".
    case console
}

/// What an inquiry came to (product.md section 12).
public enum InquiryOutcome: String, Sendable, CaseIterable, Codable {
    /// The answer carried a fact not stored before: it was recorded as a notification.
    case recorded
    /// The fact is already stored, or the order has not settled yet: nothing else written.
    case noNews = "no_news"
    /// The provider does not know the order.
    case notFound = "not_found"
    /// No usable answer (timeout, connection, TLS, HTTP error status, unauthorized, a body that
    /// does not parse, an unexpected reply).
    case error
    /// A signed answer (Antom) failed verification: nothing in it was recorded.
    case badSignature = "bad_signature"
    /// ipnd lacks what the provider needs to be asked.
    case cannotAsk = "cannot_ask"

    /// Whether the provider gave an answer ipnd could use (`orders reconcile` exits 0).
    public var isAnswer: Bool {
        switch self {
        case .recorded, .noNews, .notFound: true
        case .error, .badSignature, .cannotAsk: false
        }
    }
}

/// One inquiry as the store keeps it.
public struct InquiryRecord: Sendable, Equatable {
    public var id: Int64
    public var provider: String
    public var account: String
    public var orderRef: String
    /// When it was asked (`Timestamp` text).
    public var askedAt: String
    public var trigger: InquiryTrigger
    public var outcome: InquiryOutcome
    /// The answer's HTTP status; nil when none came (or none was asked).
    public var httpStatus: Int?
    /// The provider's status word for the order, when the answer named one.
    public var providerStatus: String?
    /// The notification the answer was recorded as (`recorded`): the last one when it told several.
    public var notificationID: Int64?
    /// That notification's verdict.
    public var verdict: Verdict?
    /// What went wrong, for `error`, `bad_signature` and `cannot_ask`.
    public var error: String?
    public var durationMs: Int64
    /// The URL asked (never a credential).
    public var url: String

    public init(
        id: Int64, provider: String, account: String, orderRef: String, askedAt: String, trigger: InquiryTrigger,
        outcome: InquiryOutcome, httpStatus: Int?, providerStatus: String?, notificationID: Int64?, verdict: Verdict?,
        error: String?, durationMs: Int64, url: String
    ) {
        self.id = id
        self.provider = provider
        self.account = account
        self.orderRef = orderRef
        self.askedAt = askedAt
        self.trigger = trigger
        self.outcome = outcome
        self.httpStatus = httpStatus
        self.providerStatus = providerStatus
        self.notificationID = notificationID
        self.verdict = verdict
        self.error = error
        self.durationMs = durationMs
        self.url = url
    }
}

/// Which inquiries to list, newest first.
public struct InquiryFilter: Sendable, Equatable {
    public var provider: String?
    public var account: String?
    public var orderRef: String?
    public var outcome: InquiryOutcome?
    /// Inquiries asked at or after this `Timestamp` text.
    public var since: String?
    public var limit: Int
    /// Only inquiries older than this id (the cursor of the previous page).
    public var beforeID: Int64?

    public init(provider: String? = nil, account: String? = nil, orderRef: String? = nil, outcome: InquiryOutcome? = nil,
                since: String? = nil, limit: Int = 100, beforeID: Int64? = nil) {
        self.provider = provider
        self.account = account
        self.orderRef = orderRef
        self.outcome = outcome
        self.since = since
        self.limit = limit
        self.beforeID = beforeID
    }
}

/// An order the schedule says is due, leased to the reconciler that claimed it.
public struct DueOrder: Sendable, Equatable {
    public var orderID: Int64
    public var scope: Scope
    public var orderRef: String
    public var providerTxnID: String?
    public var state: OrderState
    public var amount: Money?
    public var expected: Money?
    public var createdAt: String
    /// The schedule's position when claimed.
    public var schedule: InquiryScheduleState
    /// The due time the claim set: the lease's end. The inquiry's schedule update applies only
    /// while the order still holds it (no change, no other node took over).
    public var lease: String

    public init(orderID: Int64, scope: Scope, orderRef: String, providerTxnID: String?, state: OrderState, amount: Money?,
                expected: Money?, createdAt: String, schedule: InquiryScheduleState, lease: String) {
        self.orderID = orderID
        self.scope = scope
        self.orderRef = orderRef
        self.providerTxnID = providerTxnID
        self.state = state
        self.amount = amount
        self.expected = expected
        self.createdAt = createdAt
        self.schedule = schedule
        self.lease = lease
    }
}

/// A scheduled inquiry's hold on its order, and what comes next if it changes nothing.
public struct InquiryClaim: Sendable, Equatable {
    public var orderID: Int64
    /// `DueOrder.lease`.
    public var lease: String
    public var next: InquirySchedule.Next

    public init(orderID: Int64, lease: String, next: InquirySchedule.Next) {
        self.orderID = orderID
        self.lease = lease
        self.next = next
    }
}

/// An answer's bytes, kept as the raw request of the notifications it is recorded as.
public struct InquiryAnswerBytes: Sendable, Equatable {
    /// The answer's header fields as a JSON object text.
    public var headers: String
    public var body: [UInt8]

    public init(headers: String, body: [UInt8]) {
        self.headers = headers
        self.body = body
    }
}

/// What an inquiry's answer says, as the store records it.
public enum InquiryResult: Sendable, Equatable {
    /// Facts to record through the one write path, oldest first.
    case facts([VerifiedNotification], answer: InquiryAnswerBytes)
    /// The provider knows the order; it has not settled yet.
    case notSettled
    case notFound
    case error(String)
    case badSignature(String)
    case cannotAsk(String)
}

/// An inquiry made, for the store to record in one transaction: its facts through the one
/// write path, its record, and the order's next step.
public struct CompletedInquiry: Sendable, Equatable {
    public var scope: Scope
    public var orderRef: String
    public var askedAt: String
    public var trigger: InquiryTrigger
    public var url: String
    public var durationMs: Int64
    public var httpStatus: Int?
    public var providerStatus: String?
    public var result: InquiryResult
    /// For a scheduled inquiry: its hold on the order and the step that follows.
    public var claim: InquiryClaim?

    public init(scope: Scope, orderRef: String, askedAt: String, trigger: InquiryTrigger, url: String, durationMs: Int64,
                httpStatus: Int?, providerStatus: String?, result: InquiryResult, claim: InquiryClaim? = nil) {
        self.scope = scope
        self.orderRef = orderRef
        self.askedAt = askedAt
        self.trigger = trigger
        self.url = url
        self.durationMs = durationMs
        self.httpStatus = httpStatus
        self.providerStatus = providerStatus
        self.result = result
        self.claim = claim
    }
}

/// How much reconciliation has to do, for the console's overview and the gauges.
public struct InquiryBacklog: Sendable, Equatable {
    /// Orders of the given accounts whose inquiry is due now or overdue.
    public var awaiting: Int
    /// The due time of the longest waiting of them.
    public var oldestDueAt: String?
    /// Orders flagged `unsettled` (any account).
    public var unsettled: Int

    public init(awaiting: Int, oldestDueAt: String?, unsettled: Int) {
        self.awaiting = awaiting
        self.oldestDueAt = oldestDueAt
        self.unsettled = unsettled
    }
}

/// The store's side of reconciliation, beside `Store`.
public protocol InquiryStore: Sendable {
    /// The schedule orders are given when they change (the config's `reconcile`, reloadable).
    func setInquirySchedule(_ schedule: InquirySchedule)
    /// Takes up to `limit` orders of `scope` whose inquiry is due at `now`, earliest first,
    /// moving their due time to `leaseUntil`: another reconciler (node) takes them only once that
    /// has passed without the inquiry being recorded.
    func claimDueOrders(scope: Scope, limit: Int, now: String, leaseUntil: String) async throws(StoreError) -> [DueOrder]
    /// Records `inquiry` in one transaction: its facts through the one write path (a fact already
    /// stored, or one saying the order has not settled that moves nothing, is not written), its
    /// inquiry record, and, for a scheduled one still holding its claim, the order's next step,
    /// or the `unsettled` flag when it was the last.
    func recordInquiry(_ inquiry: CompletedInquiry) async throws(StoreError) -> InquiryRecord
    /// Gives back claims whose inquiries were not made (a shutdown, a hold, a lease too short to
    /// ask within): due again at `now`.
    func releaseInquiryClaims(_ claims: [InquiryClaim], now: String) async throws(StoreError)
    /// Gives up on a claimed order whose `give_up_after` has passed, without asking: flags it
    /// `unsettled` (with an `order.flagged` event) and stops its schedule, in one transaction,
    /// if the claim still holds it. Returns whether it did.
    func giveUpInquiries(_ claim: InquiryClaim, scope: Scope, orderRef: String) async throws(StoreError) -> Bool
}

/// Asking a provider about one order now, outside the schedule: `ipnd orders reconcile`, the
/// ops API and the console. The reconciler answers it.
public protocol InquiryAsking: Sendable {
    /// Asks about the order now, records the answer as the schedule would, and returns the record.
    func ask(provider: String, account: String, orderRef: String, trigger: InquiryTrigger) async throws(InquiryAskError) -> InquiryRecord
    /// The accounts asked (those with an `inquiry` section).
    var scopes: [Scope] { get }
}

/// Why an inquiry could not be made at all (no record is written).
public enum InquiryAskError: Error, Sendable, CustomStringConvertible {
    /// ipnd does not know the order (register it with `orders expect` first).
    case unknownOrder
    /// The account has no `inquiry` section.
    case noInquiry
    /// The store could not be read or written.
    case store(StoreError)

    public var description: String {
        switch self {
        case .unknownOrder: "ipnd does not know this order (register it with `ipnd orders expect` first)"
        case .noInquiry: "the account has no inquiry section in the config: it is never asked"
        case .store(let error): "\(error)"
        }
    }
}

/// The decisions an inquiry's recording makes, once, for every backend.
public enum InquiryPlanning {
    /// Whether a fact's plan is written. A fact already stored (a duplicate) is no news; so is
    /// one saying the order has not settled yet (pending, authorized) that moves nothing, which
    /// every step would otherwise store again under a new key.
    public static func writes(_ plan: WritePlan, fact: VerifiedNotification) -> Bool {
        switch plan.outcome.verdict {
        case .duplicate:
            return false
        case .stale:
            if case .transition(let target) = fact.effect, !target.isSettled { return false }
            return true
        default:
            return true
        }
    }

    /// What is done to the order's schedule once the inquiry's facts are written.
    public enum ScheduleAction: Sendable, Equatable {
        /// Nothing: the order changed (its schedule started again) or is not scheduled, or the
        /// claim is no longer held (another change or node came first).
        case none
        /// The next step.
        case next(dueAt: String, step: Int)
        /// The last step came to nothing: flag the order `unsettled`, stop asking.
        case giveUp
    }

    /// The schedule action for `inquiry`, given the order as its facts left it, whether they
    /// changed it, and the schedule in force. An inquiry that changes nothing moves the order to
    /// its next step (product.md section 12): a scheduled one as its claim says, if it still
    /// holds the order; one asked by hand from the order's own step, if it is scheduled.
    public static func scheduleAction(
        _ inquiry: CompletedInquiry, order: StoredOrder?, changed: Bool, schedule: InquirySchedule
    ) -> ScheduleAction {
        guard !changed, let order, !order.state.isSettled else { return .none }
        let next: InquirySchedule.Next
        if let claim = inquiry.claim {
            guard holds(claim, order: order) else { return .none }
            next = claim.next
        } else {
            guard order.inquiry.dueAt != nil, let askedAt = Timestamp.parse(inquiry.askedAt),
                  let changedAt = order.inquiry.changedAtMillis(createdAt: order.createdAt)
            else { return .none }
            next = schedule.next(afterStep: order.inquiry.step, changedAt: changedAt, askedAt: askedAt)
        }
        switch next {
        case .ask(let at, let step): return .next(dueAt: Timestamp.format(epochMilliseconds: at), step: step)
        case .giveUp: return .giveUp
        }
    }

    /// Whether `claim` still holds `order`: nothing changed its schedule since it was claimed
    /// (a change, another node once the lease ran out) and it has not settled.
    public static func holds(_ claim: InquiryClaim, order: StoredOrder?) -> Bool {
        guard let order else { return false }
        return order.id == claim.orderID && order.inquiry.dueAt == claim.lease && !order.state.isSettled
    }

    /// The record's outcome, error and resulting notification, from the result and what was written.
    public static func conclusion(_ result: InquiryResult, written: [RecordOutcome]) -> (
        outcome: InquiryOutcome, error: String?, notificationID: Int64?, verdict: Verdict?
    ) {
        switch result {
        case .facts:
            guard let last = written.last else { return (.noNews, nil, nil, nil) }
            return (.recorded, nil, last.notificationID, last.verdict)
        case .notSettled: return (.noNews, nil, nil, nil)
        case .notFound: return (.notFound, nil, nil, nil)
        case .error(let message): return (.error, message, nil, nil)
        case .badSignature(let message): return (.badSignature, message, nil, nil)
        case .cannotAsk(let message): return (.cannotAsk, message, nil, nil)
        }
    }
}
