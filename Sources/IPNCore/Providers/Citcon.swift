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

/// Citcon IPN in both generations (providers.md section 1): the UPI API (`status` +
/// `transaction_type`, SHA-256 with `&secret=`) and the legacy CHOP API (`notify_status`, MD5
/// with `&token=`), each as a JSON or a form body. The signature covers the body's `fields`
/// and every field it names, sorted by byte order; `sign` carries the lowercase hex digest.
public struct Citcon: NotificationProvider {
    public static let name = "citcon"
    public static let defaultInquiryURL = "https://api.citconpay.com/v1"
    public static let accountKeys = [
        AccountKey("api_secret", .secret, required: false),
        AccountKey("api_token", .secret, required: false),
    ]
    /// The UPI server private key the transaction inquiry's token is taken with (inquiries.md
    /// section 5).
    public static let inquiryKeys = [AccountKey("private_key", .secret, required: true)]
    public static let simulationDefaults = SimulationDefaults(paidStatus: "success", currency: "USD")
    public static var knownStatuses: [String] { CitconMapping.chargeStatuses }
    public static let acknowledgement = ProviderAnswer.text(200, "ok")

    /// The two notification generations and how each is signed.
    public enum Generation: String, Sendable, CaseIterable {
        /// The UPI API: `status` + `transaction_type`; SHA-256 over the string ending `&secret=<api_secret>`.
        case upi
        /// The legacy CHOP API: `notify_status`; MD5 over the string ending `&token=<api_token>`.
        case chop

        var algorithm: DigestAlgorithm { self == .upi ? .sha256 : .md5 }
        /// The name of the pair appended to the signing string.
        var secretLabel: String { self == .upi ? "secret" : "token" }
        /// The account key holding this generation's secrets.
        var configKey: String { self == .upi ? "api_secret" : "api_token" }
    }

    /// UPI secrets (SHA-256); any one verifies (rotation).
    let apiSecrets: [String]
    /// CHOP tokens (MD5); any one verifies (rotation).
    let apiTokens: [String]
    /// The transaction inquiry; nil when the account has no `inquiry` section.
    public let inquiry: (any StatusInquiry)?

    public init(settings: AccountSettings) throws(AccountConfigError) {
        let secrets = settings.values("api_secret")
        let tokens = settings.values("api_token")
        guard !secrets.isEmpty || !tokens.isEmpty else {
            throw settings.error("api_secret", "api_secret or api_token is required")
        }
        if secrets.contains("") { throw settings.error("api_secret", "must not be empty") }
        if tokens.contains("") { throw settings.error("api_token", "must not be empty") }
        let inquiry = try settings.inquiry.map { section throws(AccountConfigError) in try CitconInquiry(settings: section) }
        self.init(apiSecrets: secrets, apiTokens: tokens, inquiry: inquiry)
    }

    public init(apiSecrets: [String] = [], apiTokens: [String] = [], inquiry: CitconInquiry? = nil) {
        self.apiSecrets = apiSecrets
        self.apiTokens = apiTokens
        self.inquiry = inquiry
    }

    public var summary: [(key: String, value: String)] {
        [
            ("api_secret", apiSecrets.isEmpty ? "not set (UPI notifications are rejected)" : "\(apiSecrets.count) secret(s), redacted"),
            ("api_token", apiTokens.isEmpty ? "not set (CHOP notifications are rejected)" : "\(apiTokens.count) secret(s), redacted"),
        ]
    }

    // MARK: Signing

    /// The names the signature covers: `fields` plus every name listed in its comma-separated
    /// value, never `sign`, each once, sorted by byte order.
    public static func signedKeys(fields: String) -> [String] {
        var keys = ["fields"]
        fields.withUTF8Bytes { bytes in
            for name in bytes.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: true) {
                keys.append(String(decoding: name, as: UTF8.self))
            }
        }
        // Sorted, then each once: no hashing, and n log n however many names a body lists.
        keys.sort(by: utf8Precedes)
        var unique: [String] = []
        unique.reserveCapacity(keys.count)
        for key in keys where key != "sign" && unique.last != key { unique.append(key) }
        return unique
    }

    /// The exact string Citcon hashes for a body whose top-level fields have the signing texts
    /// `values` (JSON strings decoded, other JSON values as source text, form values
    /// percent-decoded; a missing or null field is empty), ending `&secret=` or `&token=`.
    public static func signingString(_ values: [String: String], generation: Generation, secret: String) -> String {
        unsecretedString(values) + "&\(generation.secretLabel)=\(secret)"
    }

    /// The `sign` value for `values` under `secret` (the signer; lowercase hex).
    public static func signature(_ values: [String: String], generation: Generation, secret: String) -> String {
        Hex.encode(Crypto.digest(generation.algorithm, Array(signingString(values, generation: generation, secret: secret).utf8)))
    }

    /// The signing string up to, not including, the appended secret.
    static func unsecretedString(_ values: [String: String]) -> String {
        String(decoding: unsecretedBytes(values, keys: signedKeys(fields: values["fields"] ?? "")), as: UTF8.self)
    }

    /// `unsecretedString` as the bytes that are hashed, for the already computed `signedKeys`,
    /// built without intermediate strings.
    static func unsecretedBytes(_ values: [String: String], keys: [String]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        for key in keys {
            if !out.isEmpty { out.append(UInt8(ascii: "&")) }
            out.append(contentsOf: key.utf8)
            out.append(UInt8(ascii: "="))
            if let value = values[key] { out.append(contentsOf: value.utf8) }
        }
        return out
    }

    // MARK: Verification

    public static func answer(for rejection: Rejection) -> ProviderAnswer {
        .text(rejection.reason.httpStatus, rejection.reason.isAuthenticationFailure ? "invalid signature" : "malformed request")
    }

    public func verify(_ request: RawRequest) throws(Rejection) -> VerifiedNotification {
        let body = try CitconBody.parse(request)
        let generation: Generation = body.values["notify_status"] != nil ? .chop : .upi
        guard let sign = body.values["sign"], !sign.isEmpty else {
            throw Rejection(.badSignature, "sign is missing: the notification is not signed")
        }
        let secrets = generation == .upi ? apiSecrets : apiTokens
        guard !secrets.isEmpty else {
            throw Rejection(
                .badSignature,
                "a \(generation.rawValue.uppercased()) notification, but this account has no \(generation.configKey) to verify it"
            )
        }
        let keys = Self.signedKeys(fields: body.values["fields"] ?? "")
        let unsecreted = Self.unsecretedBytes(body.values, keys: keys)
        let matched = secrets.firstIndex { secret in
            let suffix = Array("&\(generation.secretLabel)=\(secret)".utf8)
            return Crypto.hexDigestMatches(sign, expected: Crypto.digest(generation.algorithm, unsecreted, suffix))
        }
        guard let matched else {
            throw Rejection(.badSignature, "sign does not match the signed fields under any \(generation.configKey)")
        }
        let signed = CitconSignedFields(body: body, signedKeys: keys)
        var notification = switch generation {
        case .upi: try CitconMapping.upi(signed)
        case .chop: try CitconMapping.chop(signed)
        }
        notification.detail["generation"] = generation.rawValue
        if secrets.count > 1 { notification.detail["secret"] = "\(matched + 1) of \(secrets.count)" }
        return notification
    }

    // MARK: Simulation

    /// A UPI JSON charge signed with the first `api_secret`; a CHOP JSON notification signed
    /// with the first `api_token` when the account has no `api_secret`.
    public func simulatedRequest(_ spec: SimulationSpec) throws(SimulationError) -> RawRequest {
        let members: [(key: String, value: String, isNumber: Bool)]
        let generation: Generation
        let secret: String
        if let apiSecret = apiSecrets.first {
            (generation, secret) = (.upi, apiSecret)
            members = [
                ("id", spec.uniqueID, false),
                ("transaction_type", "charge", false),
                ("reference", spec.orderRef, false),
                ("amount", String(spec.amount.minor), true),
                ("currency", spec.amount.currency, false),
                ("status", spec.status, false),
                ("time_created", spec.time, false),
                ("time_completed", spec.time, false),
                ("payment_method", "simulated", false),
                ("fields", "id,transaction_type,reference,amount,currency,status,time_created,time_completed,payment_method", false),
            ]
        } else if let apiToken = apiTokens.first {
            (generation, secret) = (.chop, apiToken)
            members = [
                ("id", spec.uniqueID, false),
                ("amount", String(spec.amount.minor), true),
                ("currency", spec.amount.currency, false),
                ("notify_status", spec.status, false),
                ("reference", spec.orderRef, false),
                ("time", spec.time, false),
                ("notify_id", "sim-\(spec.uniqueID)", false),
                ("fields", "id,amount,currency,notify_status,reference,time,notify_id", false),
            ]
        } else {
            throw SimulationError("no api_secret or api_token configured")
        }
        let values = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
        let sign = Self.signature(values, generation: generation, secret: secret)
        let rendered = (members + [("sign", sign, false)]).map { member in
            "\"\(member.key)\":" + (member.isNumber ? member.value : "\"\(JSONText.escape(member.value))\"")
        }
        return RawRequest(
            target: spec.path,
            headers: [("Content-Type", "application/json")],
            body: Array(("{" + rendered.joined(separator: ",") + "}").utf8)
        )
    }
}

/// A Citcon body reduced to its top-level fields' signing texts, whatever its format.
struct CitconBody {
    /// Each top-level field's text as Citcon signs it; null is empty.
    let values: [String: String]

    /// Parses the body as JSON when `Content-Type` says so, as a form when it is
    /// `application/x-www-form-urlencoded`, and by its first byte when there is no `Content-Type`.
    static func parse(_ request: RawRequest) throws(Rejection) -> CitconBody {
        let isJSON: Bool
        switch request.mediaType {
        case let type? where type.isJSONMediaType:
            isJSON = true
        case "application/x-www-form-urlencoded"?:
            isJSON = false
        case nil:
            let first = request.body.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
            isJSON = first == UInt8(ascii: "{")
        case let type?:
            throw Rejection(.unsupportedContentType, "Content-Type \(type.prefix(64)) is neither JSON nor a form")
        }
        if isJSON {
            do {
                let object = try JSONParser.parseObject(request.body)
                return CitconBody(values: Dictionary(object.members.map { ($0.key, $0.value.signingText) }) { first, _ in first })
            } catch {
                throw Rejection(.malformedBody, error.description)
            }
        }
        do {
            let form = try FormBody.parse(request.body)
            return CitconBody(values: Dictionary(form.fields.map { ($0.name, $0.value) }) { first, _ in first })
        } catch {
            throw Rejection(.malformedBody, error.description)
        }
    }
}

/// The fields of a verified body that its signature covers: the only ones ipnd acts on, so a
/// field added to a genuinely signed body cannot change what it means.
struct CitconSignedFields {
    private let values: [String: String]

    /// Fields already known to be authentic as a whole: a transaction inquiry's answer, whose
    /// authenticity rests on TLS to Citcon.
    init(values: [String: String]) {
        self.values = values
    }

    init(body: CitconBody, signedKeys: [String]) {
        var values: [String: String] = [:]
        values.reserveCapacity(signedKeys.count)
        for key in signedKeys {
            if let value = body.values[key] { values[key] = value }
        }
        self.values = values
    }

    /// The field's text; nil when it is absent, null, empty or not signed.
    subscript(name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    func required(_ name: String) throws(Rejection) -> String {
        guard let value = self[name] else { throw Rejection(.missingField, "\(name) is missing, empty or not among the signed fields") }
        return value
    }

    /// A minor-unit amount (`100` or `"100"`) in the notification's currency; nil when absent.
    func money(_ name: String) throws(Rejection) -> Money? {
        guard let text = self[name] else { return nil }
        guard let currency = self["currency"] else { throw Rejection(.missingField, "currency is missing beside \(name)") }
        do {
            return try Money.parseMinor(text, currency: currency)
        } catch {
            throw error.rejection
        }
    }
}

/// What a verified Citcon notification means for its order (providers.md section 1).
enum CitconMapping {
    static func upi(_ fields: CitconSignedFields) throws(Rejection) -> VerifiedNotification {
        let id = try fields.required("id")
        let reference = try fields.required("reference")
        let type = try fields.required("transaction_type")
        let status = try fields.required("status")
        let amount = try fields.money("amount")
        let kind: NotificationKind
        let effect: NotificationEffect
        switch type {
        case "charge":
            (kind, effect) = (.payment, chargeEffect(status))
        case "refund":
            (kind, effect) = (.refund, try refundEffect(status, id: id, amount: amount, fields: fields))
        case "chargeback":
            (kind, effect) = (.chargeback, chargebackEffect(status))
        case "vault":
            (kind, effect) = (.event, .record)
        default:
            (kind, effect) = (.event, .unknownStatus)
        }
        return VerifiedNotification(
            kind: kind,
            orderRef: reference,
            providerTxnID: id,
            dedupKey: "\(id)|\(type)|\(status)",
            providerStatus: status,
            effect: effect,
            amount: amount,
            detail: kind == .event ? ["transaction_type": type] : [:]
        )
    }

    static func chop(_ fields: CitconSignedFields) throws(Rejection) -> VerifiedNotification {
        let id = try fields.required("id")
        let reference = try fields.required("reference")
        let status = try fields.required("notify_status")
        let amount = try fields.money("amount")
        // CHOP knows one success word, as providers.md writes it; any other value is a failure.
        let effect: NotificationEffect = status == "success" ? .transition(.paid) : .transition(.failed)
        return VerifiedNotification(
            kind: .payment,
            orderRef: reference,
            providerTxnID: id,
            dedupKey: fields["notify_id"] ?? "\(id)|\(status)",
            providerStatus: status,
            effect: effect,
            amount: amount
        )
    }

    /// The charge statuses `chargeEffect` maps: what `ipnd simulate citcon --status` sends (a
    /// UPI charge; an account with only a CHOP token gets `notify_status`, where `success` pays
    /// and any other word fails the order).
    static let chargeStatuses = [
        "success", "succeeded", "captured", "authorized", "initiated", "pending", "fail", "failed", "cancelled", "canceled", "expired",
    ]

    static func chargeEffect(_ status: String) -> NotificationEffect {
        switch status {
        case "success", "succeeded", "captured": .transition(.paid)
        case "authorized": .transition(.authorized)
        case "initiated", "pending": .transition(.pending)
        case "fail", "failed": .transition(.failed)
        case "cancelled", "canceled": .transition(.canceled)
        case "expired": .transition(.expired)
        default: .unknownStatus
        }
    }

    /// A successful refund counts by `amount_refunded` (the cumulative total) when present,
    /// else by its own amount under its id; refunds under way or failed change nothing.
    static func refundEffect(
        _ status: String,
        id: String,
        amount: Money?,
        fields: CitconSignedFields
    ) throws(Rejection) -> NotificationEffect {
        switch status {
        case "success", "succeeded":
            let cumulative = try fields.money("amount_refunded")
            return .refund(RefundInfo(refundID: id, amount: amount, cumulativeRefundedMinor: cumulative?.minor))
        case "initiated", "pending", "fail", "failed", "cancelled", "canceled", "expired":
            return .record
        default:
            return .unknownStatus
        }
    }

    /// Chargeback stages: `Lost` and `Won` (as providers.md writes them, like every other status
    /// word, matched exactly) decide; every other stage is only recorded.
    static func chargebackEffect(_ stage: String) -> NotificationEffect {
        switch stage {
        case "Lost": .transition(.chargedBack)
        case "Won": .chargebackReversal
        default: .record
        }
    }
}
