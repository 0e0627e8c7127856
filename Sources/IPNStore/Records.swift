import IPNCore

/// An order as ops staff see it.
public struct OrderRecord: Sendable, Equatable {
    public var id: Int64
    public var provider: String
    public var account: String
    public var orderRef: String
    public var providerTxnID: String?
    public var state: OrderState
    /// The amount the order was paid (or authorized) with, when a notification carried one.
    public var amount: Money?
    public var refundedMinor: Int64
    public var expected: Money?
    public var flags: [String]
    public var createdAt: String
    public var updatedAt: String
}

/// One state change of an order.
public struct TransitionRecord: Sendable, Equatable {
    public var from: OrderState?
    public var to: OrderState
    public var at: String
    /// The notification that caused it; nil for a registered expectation.
    public var notificationID: Int64?
}

/// One received request with its verdict.
public struct NotificationRecord: Sendable, Equatable {
    public var id: Int64
    public var provider: String
    public var account: String
    public var orderRef: String?
    public var receivedAt: String
    public var verdict: Verdict
    public var reason: String?
    public var reasonDetail: String?
    public var kind: String?
    public var providerStatus: String?
    public var dedupKey: String?
    public var clientIP: String?
    public var providerTxnID: String?
    public var amount: Money?
    public var detail: String?
    /// The raw body, only when asked for.
    public var body: [UInt8]?
    /// The kept request headers (JSON object text), only when the body is asked for.
    public var headers: String?
}

/// An order with how it got where it is.
public struct OrderDetail: Sendable, Equatable {
    public var order: OrderRecord
    public var transitions: [TransitionRecord]
    public var notifications: [NotificationRecord]
}

/// Which orders to list, newest first.
public struct OrderFilter: Sendable, Equatable {
    public var provider: String?
    public var account: String?
    public var state: OrderState?
    /// Orders created at or after this `Timestamp` text.
    public var since: String?
    public var limit: Int
    /// Only orders older than this id (the cursor of the previous page).
    public var beforeID: Int64?

    public init(provider: String? = nil, account: String? = nil, state: OrderState? = nil, since: String? = nil,
                limit: Int = 100, beforeID: Int64? = nil) {
        self.provider = provider
        self.account = account
        self.state = state
        self.since = since
        self.limit = limit
        self.beforeID = beforeID
    }
}

/// Which notifications to list, newest first.
public struct NotificationFilter: Sendable, Equatable {
    public var provider: String?
    public var account: String?
    public var verdict: Verdict?
    /// Notifications received at or after this `Timestamp` text.
    public var since: String?
    public var limit: Int
    public var beforeID: Int64?

    public init(provider: String? = nil, account: String? = nil, verdict: Verdict? = nil, since: String? = nil,
                limit: Int = 100, beforeID: Int64? = nil) {
        self.provider = provider
        self.account = account
        self.verdict = verdict
        self.since = since
        self.limit = limit
        self.beforeID = beforeID
    }
}
