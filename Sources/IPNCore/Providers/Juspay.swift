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

/// Juspay webhooks (Express Checkout / Payment Page): HTTP Basic credentials set in the
/// Juspay dashboard, no body signature (providers.md section 5).
public struct Juspay: NotificationProvider {
    public static let name = "juspay"
    public static let defaultInquiryURL = "https://api.juspay.in"
    public static let accountKeys = [
        AccountKey("username", .secret, required: true),
        AccountKey("password", .secret, required: true),
    ]
    /// The API key and merchant id the order status API is asked with (inquiries.md section 4),
    /// not the webhook's Basic username and password.
    public static let inquiryKeys = [
        AccountKey("api_key", .secret, required: true),
        AccountKey("merchant_id", .string, required: true),
    ]
    public static let simulationDefaults = SimulationDefaults(paidStatus: "CHARGED", currency: "INR")
    public static let acknowledgement = ProviderAnswer.text(200, "OK")

    /// Webhook usernames and passwords: any listed username with any listed password verifies.
    let usernames: [[UInt8]]
    let passwords: [[UInt8]]
    /// The order status API; nil when the account has no `inquiry` section.
    public let inquiry: (any StatusInquiry)?

    public init(settings: AccountSettings) throws(AccountConfigError) {
        let usernames = try settings.requiredValues("username")
        // Basic credentials split at the first colon (RFC 7617): such a username never matches.
        if usernames.contains(where: { $0.contains(":") }) {
            throw settings.error("username", "must not contain \":\" (HTTP Basic credentials split at the first colon)")
        }
        self.usernames = usernames.map { Array($0.utf8) }
        passwords = try settings.requiredValues("password").map { Array($0.utf8) }
        if let section = settings.inquiry {
            inquiry = try JuspayInquiry(settings: section)
        } else {
            inquiry = nil
        }
    }

    public init(usernames: [String], passwords: [String], inquiry: JuspayInquiry? = nil) {
        self.usernames = usernames.map { Array($0.utf8) }
        self.passwords = passwords.map { Array($0.utf8) }
        self.inquiry = inquiry
    }

    public var summary: [(key: String, value: String)] {
        [
            ("username", "\(usernames.count) username(s), redacted"),
            ("password", "\(passwords.count) password(s), redacted"),
        ]
    }

    /// The `Authorization` header value Juspay sends for `username` and `password` (the signer).
    public static func authorization(username: String, password: String) -> String {
        "Basic " + Base64.encode(Array("\(username):\(password)".utf8))
    }

    public static func answer(for rejection: Rejection) -> ProviderAnswer {
        // providers.md: a missing or wrong Authorization answers 401 with the challenge.
        if rejection.reason == .badCredentials || rejection.header?.caseInsensitiveEquals("Authorization") == true {
            var answer = ProviderAnswer.text(401, "invalid credentials")
            answer.headers = [("WWW-Authenticate", #"Basic realm="ipnd""#)]
            return answer
        }
        return .text(rejection.reason.httpStatus, rejection.reason.isAuthenticationFailure ? "invalid credentials" : "malformed request")
    }

    public func verify(_ request: RawRequest) throws(Rejection) -> VerifiedNotification {
        try authenticate(request)
        let body = try request.jsonObjectBody()
        return try Self.notification(from: body)
    }

    /// Checks `Authorization: Basic base64(user:pass)`: stored as `missing_header` or
    /// `repeated_header` when the header is not there once, as every provider's, else
    /// `bad_credentials`; all of them are answered 401.
    func authenticate(_ request: RawRequest) throws(Rejection) {
        let header = try request.requiredHeader("Authorization")
        let credentials = try BasicCredentials(parsing: header)
        // Every pair is compared, so the time taken does not say which part matched.
        var userMatches = false
        for username in usernames where Crypto.constantTimeEquals(credentials.username, username) { userMatches = true }
        var passwordMatches = false
        for password in passwords where Crypto.constantTimeEquals(credentials.password, password) { passwordMatches = true }
        guard userMatches && passwordMatches else {
            throw Rejection(.badCredentials, "Authorization credentials are not this account's username and password")
        }
    }

    static func notification(from body: JSONObject) throws(Rejection) -> VerifiedNotification {
        guard let eventID = body["id"]?.scalarText, !eventID.isEmpty else { throw Rejection(.missingField, "id is missing") }
        guard let eventName = body.string("event_name"), !eventName.isEmpty else {
            throw Rejection(.missingField, "event_name is missing")
        }
        guard let content = body.object("content") else { throw Rejection(.missingField, "content is missing") }
        var notification: VerifiedNotification
        if let order = content.object("order") {
            notification = try orderNotification(order, eventID: eventID, eventName: eventName)
        } else if let mandate = content.object("mandate") {
            notification = recorded(mandate, kind: .mandate, idField: "mandate_id", eventID: eventID, eventName: eventName)
        } else if let other = content.object("notification") {
            notification = recorded(other, kind: .event, idField: "id", eventID: eventID, eventName: eventName)
        } else {
            throw Rejection(.missingField, "content has no order, mandate or notification object")
        }
        notification.detail["event_name"] = eventName
        return notification
    }

    static func orderNotification(_ order: JSONObject, eventID: String, eventName: String) throws(Rejection) -> VerifiedNotification {
        guard let orderRef = text(order, "order_id") else { throw Rejection(.missingField, "content.order.order_id is missing") }
        let status = text(order, "status")
        let amount = try order.majorUnitAmount("amount", path: "content.order")
        let kind: NotificationKind
        let effect: NotificationEffect
        switch eventName {
        case "ORDER_REFUNDED":
            // Refunded, or partially refunded when amount_refunded < amount; an authentic event
            // without amount_refunded says the order is refunded (rejecting it would only make
            // Juspay resend it for a day).
            let refunded = try order.majorUnitAmount("amount_refunded", path: "content.order")
            kind = .refund
            effect = .refund(
                RefundInfo(
                    cumulativeRefundedMinor: refunded?.minor,
                    fullyRefunded: refunded.map { refunded in amount.map { refunded.minor >= $0.minor } } ?? true,
                    orderAmount: amount
                )
            )
        case "CHARGEBACK_RECEIVED", "CHARGEBACK_RESOLVED_IN_CUSTOMER_FAVOUR":
            (kind, effect) = (.chargeback, .transition(.chargedBack))
        case "CHARGEBACK_RESOLVED_IN_MERCHANT_FAVOUR":
            (kind, effect) = (.chargeback, .chargebackReversal)
        case _ where Self.isIntermediateStage(eventName):
            // Failed refunds and chargeback stages short of a resolution carry the order's
            // (unchanged) status; they are recorded, never applied as that status.
            (kind, effect) = (eventName.hasPrefix("CHARGEBACK") ? .chargeback : .refund, .record)
        default:
            guard let status else { throw Rejection(.missingField, "content.order.status is missing") }
            kind = .payment
            effect = try statusEffect(status, order: order, amount: amount)
        }
        var detail: [String: String] = [:]
        let orderID = text(order, "id")
        let txnID = text(order, "txn_id")
        if orderID != nil, let txnID { detail["txn_id"] = txnID }
        return VerifiedNotification(
            kind: kind,
            orderRef: orderRef,
            providerTxnID: orderID ?? txnID,
            dedupKey: eventID,
            providerStatus: kind == .payment ? status ?? eventName : eventName,
            effect: effect,
            amount: amount,
            detail: detail
        )
    }

    /// Refund events other than a success (`ORDER_REFUND_FAILED`, `AUTO_REFUND_FAILED`,
    /// `REFUND_MANUAL_REVIEW_NEEDED`, ...) and chargeback events other than the received and
    /// resolved ones.
    static func isIntermediateStage(_ eventName: String) -> Bool {
        if eventName.hasPrefix("CHARGEBACK") { return true }
        guard eventName.contains("REFUND") else { return false }
        return eventName.contains("FAIL") || eventName.contains("REVIEW") || eventName.contains("PENDING")
            || eventName.contains("INITIATED")
    }

    /// The order statuses `statusEffect` maps: what `ipnd simulate juspay --status` sends (with
    /// an event name that fits, `simulatedEventName`).
    public static let knownStatuses = [
        "CHARGED", "AUTHORIZED", "NEW", "STARTED", "PENDING_VBV", "AUTHORIZING", "VBV_SUCCESSFUL", "CAPTURE_INITIATED",
        "VOID_INITIATED", "AUTHENTICATION_FAILED", "AUTHORIZATION_FAILED", "JUSPAY_DECLINED", "CAPTURE_FAILED", "VOIDED",
        "AUTO_REFUNDED",
    ]

    static func statusEffect(_ status: String, order: JSONObject, amount: Money?) throws(Rejection) -> NotificationEffect {
        switch status {
        case "CHARGED":
            return .transition(.paid)
        case "AUTHORIZED":
            return .transition(.authorized)
        case "NEW", "STARTED", "PENDING_VBV", "AUTHORIZING", "VBV_SUCCESSFUL", "CAPTURE_INITIATED", "VOID_INITIATED":
            return .transition(.pending)
        case "AUTHENTICATION_FAILED", "AUTHORIZATION_FAILED", "JUSPAY_DECLINED", "CAPTURE_FAILED":
            return .transition(.failed)
        case "VOIDED":
            return .transition(.canceled)
        case "AUTO_REFUNDED":
            let refunded = try order.majorUnitAmount("amount_refunded", path: "content.order") ?? amount
            return .refund(RefundInfo(cumulativeRefundedMinor: refunded?.minor, fullyRefunded: true, orderAmount: amount))
        default:
            return .unknownStatus
        }
    }

    /// Mandate and notification events: recorded against the order they name, if any.
    static func recorded(
        _ object: JSONObject,
        kind: NotificationKind,
        idField: String,
        eventID: String,
        eventName: String
    ) -> VerifiedNotification {
        VerifiedNotification(
            kind: kind,
            orderRef: text(object, "order_id"),
            providerTxnID: text(object, idField) ?? text(object, "id"),
            dedupKey: eventID,
            providerStatus: eventName,
            effect: .record
        )
    }

    private static func text(_ object: JSONObject, _ field: String) -> String? {
        guard let text = object[field]?.scalarText, !text.isEmpty else { return nil }
        return text
    }


    public func simulatedRequest(_ spec: SimulationSpec) throws(SimulationError) -> RawRequest {
        guard let username = usernames.first, let password = passwords.first else {
            throw SimulationError("no username and password configured")
        }
        let order = JSONText.escape(spec.orderRef)
        let unique = JSONText.escape(spec.uniqueID)
        let body = Array((
            #"{"id":"evt_\#(unique)","date_created":"\#(spec.time)","event_name":"\#(Self.simulatedEventName(spec.status))","#
            + #""content":{"order":{"id":"ord_\#(unique)","order_id":"\#(order)","status":"\#(JSONText.escape(spec.status))","#
            + #""amount":\#(spec.amount.decimal),"currency":"\#(spec.amount.currency)","amount_refunded":0,"#
            + #""txn_id":"\#(order)-1","date_created":"\#(spec.time)"}}}"#
        ).utf8)
        let credentials = Base64.encode(username + [UInt8(ascii: ":")] + password)
        return RawRequest(
            target: spec.path,
            headers: [
                ("Content-Type", "application/json"),
                ("Authorization", "Basic " + credentials),
            ],
            body: body
        )
    }

    /// An event name that fits the order status; the status decides the effect.
    static func simulatedEventName(_ status: String) -> String {
        switch status {
        case "AUTHORIZED": "ORDER_AUTHORIZED"
        case "AUTHENTICATION_FAILED", "AUTHORIZATION_FAILED", "JUSPAY_DECLINED", "CAPTURE_FAILED": "ORDER_FAILED"
        default: "ORDER_SUCCEEDED"
        }
    }
}

extension Juspay {
    /// `Basic base64(user:pass)`, split on the first colon; the parts stay bytes.
    struct BasicCredentials {
        let username: [UInt8]
        let password: [UInt8]

        init(parsing header: String) throws(Rejection) {
            let trimmed = header.trimmingCharacters(in: " \t")
            let parts = trimmed.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, String(parts[0]).caseInsensitiveEquals("Basic") else {
                throw Rejection(.badCredentials, "Authorization is not Basic credentials")
            }
            let token = parts[1].drop { $0 == " " }
            guard let decoded = Base64.decode(String(token)) else {
                throw Rejection(.badCredentials, "Authorization Basic credentials are not base64")
            }
            guard let colon = decoded.firstIndex(of: UInt8(ascii: ":")) else {
                throw Rejection(.badCredentials, "Authorization Basic credentials have no ':' between username and password")
            }
            username = Array(decoded[..<colon])
            password = Array(decoded[(colon + 1)...])
        }
    }
}
