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

/// Unlimint (Cardpay) API v3 callbacks: lowercase hex SHA-512 of the raw body followed by the
/// callback secret, in the `Signature` header (providers.md section 4).
public struct Unlimint: NotificationProvider {
    public static let name = "unlimint"
    public static let defaultInquiryURL = "https://cardpay.com"
    public static let accountKeys = [AccountKey("callback_secret", .secret, required: true)]
    /// The API terminal the payment list is asked with (inquiries.md section 3).
    public static let inquiryKeys = [
        AccountKey("terminal_code", .string, required: true),
        AccountKey("terminal_password", .secret, required: true),
    ]
    public static let simulationDefaults = SimulationDefaults(paidStatus: "COMPLETED", currency: "USD")
    public static let acknowledgement = ProviderAnswer.text(200, "OK")

    /// Callback secrets, newest first or in any order: any one verifies (rotation).
    let secrets: [[UInt8]]
    /// The payment list by merchant order; nil when the account has no `inquiry` section.
    public let inquiry: (any StatusInquiry)?

    public init(settings: AccountSettings) throws(AccountConfigError) {
        secrets = try settings.requiredValues("callback_secret").map { Array($0.utf8) }
        if let section = settings.inquiry {
            inquiry = try UnlimintInquiry(settings: section)
        } else {
            inquiry = nil
        }
    }

    public init(secrets: [String], inquiry: UnlimintInquiry? = nil) {
        self.secrets = secrets.map { Array($0.utf8) }
        self.inquiry = inquiry
    }

    public var summary: [(key: String, value: String)] {
        [("callback_secret", "\(secrets.count) secret(s), redacted")]
    }

    /// The `Signature` header value for `body` under `secret` (the signer).
    public static func signature(body: [UInt8], secret: String) -> String {
        Hex.encode(Crypto.digest(.sha512, body, Array(secret.utf8)))
    }

    public static func answer(for rejection: Rejection) -> ProviderAnswer {
        .text(rejection.reason.httpStatus, rejection.reason.isAuthenticationFailure ? "invalid signature" : "malformed request")
    }

    public func verify(_ request: RawRequest) throws(Rejection) -> VerifiedNotification {
        let signature = try request.requiredHeader("Signature").trimmingCharacters(in: " \t")
        guard Hex.isHex(signature, count: 128), let received = Hex.decode(signature) else {
            throw Rejection(.malformedHeader, "Signature is not 128 hex characters")
        }
        let matched = secrets.firstIndex { secret in
            Crypto.constantTimeEquals(received, Crypto.digest(.sha512, request.body, secret))
        }
        guard let matched else { throw Rejection(.badSignature, "Signature does not match the body under any callback secret") }
        let body = try request.jsonObjectBody()
        var notification = try Self.notification(from: body)
        if secrets.count > 1 { notification.detail["secret"] = "\(matched + 1) of \(secrets.count)" }
        return notification
    }

    static func notification(from body: JSONObject) throws(Rejection) -> VerifiedNotification {
        guard let orderRef = body.object("merchant_order")?["id"]?.scalarText, !orderRef.isEmpty else {
            throw Rejection(.missingField, "merchant_order.id is missing")
        }
        let kind: NotificationKind
        let data: JSONObject
        if let refund = body.object("refund_data") {
            (kind, data) = (.refund, refund)
        } else if let recurring = body.object("recurring_data") {
            (kind, data) = (.recurring, recurring)
        } else if let payout = body.object("payout_data") {
            (kind, data) = (.payout, payout)
        } else if let payment = body.object("payment_data") {
            (kind, data) = (.payment, payment)
        } else {
            throw Rejection(.missingField, "no refund_data, recurring_data, payout_data or payment_data object")
        }
        guard let id = data["id"]?.scalarText, !id.isEmpty else { throw Rejection(.missingField, "\(kind.rawValue)_data.id is missing") }
        guard let status = data.string("status"), !status.isEmpty else {
            throw Rejection(.missingField, "\(kind.rawValue)_data.status is missing")
        }
        let amount = try data.majorUnitAmount("amount", path: "\(kind.rawValue)_data")
        let effect: NotificationEffect
        switch kind {
        case .refund:
            effect = try refundEffect(status: status, refund: data, payment: body.object("payment_data"), amount: amount, id: id)
        case .payout:
            effect = .record
        default:
            effect = paymentEffect(status: status, amount: amount)
        }
        return VerifiedNotification(
            kind: kind == .recurring ? .payment : kind,
            orderRef: orderRef,
            providerTxnID: id,
            dedupKey: "\(kind.rawValue)|\(id)|\(status)",
            providerStatus: status,
            effect: effect,
            amount: amount,
            detail: kind == .recurring ? ["kind": "recurring"] : [:]
        )
    }

    /// The payment statuses `paymentEffect` maps: what `ipnd simulate unlimint --status` sends.
    public static let knownStatuses = [
        "NEW", "IN_PROGRESS", "WAITING", "UNPAID", "AUTHORIZED", "COMPLETED", "DECLINED", "CANCELLED", "VOIDED", "TERMINATED",
        "REFUNDED", "CHARGED_BACK", "CHARGEBACK_RESOLVED",
    ]

    static func paymentEffect(status: String, amount: Money?) -> NotificationEffect {
        switch status {
        case "NEW", "IN_PROGRESS", "WAITING", "UNPAID": .transition(.pending)
        case "AUTHORIZED": .transition(.authorized)
        case "COMPLETED": .transition(.paid)
        case "DECLINED": .transition(.failed)
        case "CANCELLED", "VOIDED", "TERMINATED": .transition(.canceled)
        case "REFUNDED": .refund(RefundInfo(cumulativeRefundedMinor: amount?.minor, fullyRefunded: true, orderAmount: amount))
        case "CHARGED_BACK": .transition(.chargedBack)
        case "CHARGEBACK_RESOLVED": .chargebackReversal
        default: .unknownStatus
        }
    }

    static func refundEffect(
        status: String,
        refund: JSONObject,
        payment: JSONObject?,
        amount: Money?,
        id: String
    ) throws(Rejection) -> NotificationEffect {
        switch status {
        case "COMPLETED":
            let remaining = try payment.flatMap { payment throws(Rejection) in
                try payment.majorUnitAmount("remaining_amount", currency: amount?.currency, path: "payment_data")
            }
            return .refund(RefundInfo(
                refundID: id, amount: amount, fullyRefunded: remaining.map { $0.minor == 0 }, remainingMinor: remaining?.minor))
        case "NEW", "IN_PROGRESS", "WAITING", "AUTHORIZED", "DECLINED", "CANCELLED", "VOIDED", "TERMINATED":
            return .record  // refunds under way or failed leave the payment as it is
        default:
            return .unknownStatus
        }
    }

    public func simulatedRequest(_ spec: SimulationSpec) throws(SimulationError) -> RawRequest {
        guard let secret = secrets.first else { throw SimulationError("no callback_secret configured") }
        let body = Array((
            #"{"callback_time":"\#(spec.time)","payment_method":"BANKCARD","merchant_order":{"id":"\#(JSONText.escape(spec.orderRef))"},"#
            + #""payment_data":{"id":"\#(JSONText.escape(spec.uniqueID))","status":"\#(JSONText.escape(spec.status))","#
            + #""amount":\#(spec.amount.decimal),"currency":"\#(spec.amount.currency)","created":"\#(spec.time)"}}"#
        ).utf8)
        return RawRequest(
            target: spec.path,
            headers: [
                ("Content-Type", "application/json"),
                ("Signature", Hex.encode(Crypto.digest(.sha512, body, secret))),
            ],
            body: body
        )
    }
}
