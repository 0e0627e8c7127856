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

/// iPay88 Backend Post (providers.md section 2): a form body whose `Signature` hashes
/// MerchantKey + MerchantCode + PaymentId + RefNo + AmountDigits + Currency + Status with
/// SHA-1 (base64), SHA-256 (hex) or HMAC-SHA512 (hex) by the merchant's gateway version.
public struct IPay88: NotificationProvider {
    public static let name = "ipay88"
    public static let defaultInquiryURL = "https://payment.ipay88.com.kh/epayment/enquiry.asp"
    public static let accountKeys = [
        AccountKey("merchant_code", .string, required: true),
        AccountKey("merchant_key", .secret, required: true),
        AccountKey("signature", .string, required: false),
    ]
    /// The re-query needs nothing beyond the account's `merchant_code`.
    public static let inquiryKeys: [AccountKey] = []
    public static let simulationDefaults = SimulationDefaults(paidStatus: "1", currency: "USD")
    /// The `Status` values `IPay88Post.notification()` maps (at the end of this file): 1 paid,
    /// 0 failed, 6 pending.
    public static let knownStatuses = ["1", "0", "6"]
    public static let acknowledgement = ProviderAnswer.text(200, "RECEIVEOK")

    /// How the signature string is hashed.
    public enum Algorithm: String, Sendable, CaseIterable {
        /// Base64 of SHA-1: 28 characters.
        case sha1
        /// Lowercase hex SHA-256: 64 characters.
        case sha256
        /// Lowercase hex HMAC-SHA512 keyed with the merchant key: 128 characters.
        case hmacSHA512 = "hmac-sha512"

        /// The algorithm a signature's shape says it was made with (the `auto` setting).
        public static func byShape(of signature: String) -> Algorithm? {
            if Hex.isHex(signature, count: 64) { return .sha256 }
            if Hex.isHex(signature, count: 128) { return .hmacSHA512 }
            if signature.utf8.count == 28, signature.utf8.last == UInt8(ascii: "="), Base64.decode(signature)?.count == 20 {
                return .sha1
            }
            return nil
        }

        var shape: String {
            switch self {
            case .sha1: "28 base64 characters"
            case .sha256: "64 hex characters"
            case .hmacSHA512: "128 hex characters"
            }
        }
    }

    /// Which signature string a notification was signed over.
    public enum SignatureForm: String, Sendable, CaseIterable {
        /// The field list and iPay88's SDK code: with PaymentId.
        case canonical
        /// The Cambodia SDK README's worked example: PaymentId left out.
        case withoutPaymentID = "without_payment_id"
    }

    /// The posted fields the signature covers, as posted.
    public struct SignedFields: Sendable, Equatable {
        public var merchantCode: String
        public var paymentID: String
        public var refNo: String
        /// The posted Amount text (`1,278.99`).
        public var amount: String
        public var currency: String
        public var status: String

        public init(merchantCode: String, paymentID: String, refNo: String, amount: String, currency: String, status: String) {
            self.merchantCode = merchantCode
            self.paymentID = paymentID
            self.refNo = refNo
            self.amount = amount
            self.currency = currency
            self.status = status
        }

        /// The Amount with every `.` and `,` removed, as signed.
        public var amountDigits: String {
            String(amount.unicodeScalars.filter { $0 != "." && $0 != "," })
        }
    }

    let merchantCode: String
    /// Merchant keys; any one verifies (rotation).
    let merchantKeys: [String]
    /// The configured algorithm; nil for `auto` (chosen by the signature's shape).
    let algorithm: Algorithm?
    /// The re-query (`enquiry.asp`); nil when the account has no `inquiry` section.
    public let inquiry: (any StatusInquiry)?

    public init(settings: AccountSettings) throws(AccountConfigError) {
        let code = try settings.requiredString("merchant_code")
        let keys = try settings.requiredValues("merchant_key")
        if keys.contains("") { throw settings.error("merchant_key", "must not be empty") }
        let setting = settings.string("signature") ?? "auto"
        let algorithm: Algorithm?
        if setting == "auto" {
            algorithm = nil
        } else if let fixed = Algorithm(rawValue: setting) {
            algorithm = fixed
        } else {
            throw settings.error("signature", "must be sha1, sha256, hmac-sha512 or auto, not \"\(setting.prefix(32))\"")
        }
        let inquiry = settings.inquiry.map { IPay88Inquiry(settings: $0, merchantCode: code) }
        self.init(merchantCode: code, merchantKeys: keys, algorithm: algorithm, inquiry: inquiry)
    }

    /// An account; `algorithm` nil means `auto`.
    public init(merchantCode: String, merchantKeys: [String], algorithm: Algorithm? = nil, inquiry: IPay88Inquiry? = nil) {
        self.merchantCode = merchantCode
        self.merchantKeys = merchantKeys
        self.algorithm = algorithm
        self.inquiry = inquiry
    }

    public var summary: [(key: String, value: String)] {
        [
            ("merchant_code", merchantCode),
            ("merchant_key", "\(merchantKeys.count) secret(s), redacted"),
            ("signature", algorithm?.rawValue ?? "auto"),
        ]
    }

    // MARK: Signing

    /// The exact string iPay88 hashes, in `form`.
    public static func signingString(_ fields: SignedFields, merchantKey: String, form: SignatureForm = .canonical) -> String {
        merchantKey + fields.merchantCode + (form == .canonical ? fields.paymentID : "") + fields.refNo
            + fields.amountDigits + fields.currency + fields.status
    }

    /// The `Signature` value for `fields` under `merchantKey` (the signer).
    public static func signature(
        _ fields: SignedFields,
        merchantKey: String,
        algorithm: Algorithm,
        form: SignatureForm = .canonical
    ) -> String {
        let message = Array(signingString(fields, merchantKey: merchantKey, form: form).utf8)
        let digest = digest(message, key: merchantKey, algorithm: algorithm)
        return algorithm == .sha1 ? Base64.encode(digest) : Hex.encode(digest)
    }

    static func digest(_ message: [UInt8], key: String, algorithm: Algorithm) -> [UInt8] {
        switch algorithm {
        case .sha1: Crypto.digest(.sha1, message)
        case .sha256: Crypto.digest(.sha256, message)
        case .hmacSHA512: Crypto.hmac(.sha512, key: Array(key.utf8), data: message)
        }
    }

    /// Whether `received` is the signature of `message`: base64 compared exactly (only its
    /// canonical text is accepted), hex ignoring case; both in constant time.
    static func matches(_ received: String, message: [UInt8], key: String, algorithm: Algorithm) -> Bool {
        let expected = digest(message, key: key, algorithm: algorithm)
        if algorithm == .sha1 {
            return Crypto.constantTimeEquals(Array(received.utf8), Array(Base64.encode(expected).utf8))
        }
        return Crypto.hexDigestMatches(received, expected: expected)
    }

    // MARK: Mapping (callbacks and re-queries)

    /// What a payment `Status` (as posted, or as a re-query answer means it) does to its order:
    /// `1` paid, `0` failed, `6` pending (providers.md section 2).
    /// `knownStatuses` lists these words: keep the two together.
    public static func effect(ofStatus status: String) -> NotificationEffect {
        switch status {
        case "1": .transition(.paid)
        case "0": .transition(.failed)
        case "6": .transition(.pending)
        default: .unknownStatus
        }
    }

    /// The dedup key of a payment result known by its reference rather than a `TransId`:
    /// `RefNo|Status|AmountDigits`, as a Backend Post with an empty `TransId` and a re-query
    /// answer both have it, so the one that comes second is a duplicate.
    public static func referenceDedupKey(refNo: String, status: String, amountDigits: String) -> String {
        "\(refNo)|\(status)|\(amountDigits)"
    }

    // MARK: Verification

    public static func answer(for rejection: Rejection) -> ProviderAnswer {
        .text(rejection.reason.httpStatus, rejection.reason.isAuthenticationFailure ? "invalid signature" : "malformed request")
    }

    public func verify(_ request: RawRequest) throws(Rejection) -> VerifiedNotification {
        if let type = request.mediaType, type != "application/x-www-form-urlencoded" {
            throw Rejection(.unsupportedContentType, "Content-Type \(type.prefix(64)) is not a form")
        }
        let form: FormBody
        do {
            // Fields ipnd does not read (a card holder's name, a remark) may come in another
            // charset than UTF-8; they are kept in the raw body and do not cost the payment.
            form = try FormBody.parse(request.body, caseInsensitiveNames: true, undecodableValues: .keep)
        } catch {
            throw Rejection(.malformedBody, error.description)
        }
        let posted = try IPay88Post(form)
        guard posted.signed.merchantCode == merchantCode else {
            throw Rejection(
                .merchantMismatch,
                "MerchantCode \(posted.signed.merchantCode.prefix(32)) is not this account's \(merchantCode)"
            )
        }
        let algorithm = try algorithm(for: posted.signature)
        let (form: signatureForm, key: keyIndex) = try match(posted, algorithm: algorithm)
        var notification = try posted.notification()
        notification.detail["signature_form"] = signatureForm.rawValue
        if self.algorithm == nil { notification.detail["signature"] = algorithm.rawValue }
        if merchantKeys.count > 1 { notification.detail["secret"] = "\(keyIndex + 1) of \(merchantKeys.count)" }
        return notification
    }

    /// The configured algorithm, or under `auto` the one the signature's shape names.
    private func algorithm(for signature: String) throws(Rejection) -> Algorithm {
        if let algorithm {
            guard Algorithm.byShape(of: signature) == algorithm else {
                throw Rejection(.badSignature, "Signature is not \(algorithm.shape), as \(algorithm.rawValue) signatures are")
            }
            return algorithm
        }
        guard let algorithm = Algorithm.byShape(of: signature) else {
            throw Rejection(.badSignature, "Signature is neither 28 base64 characters (sha1), 64 hex (sha256) nor 128 hex (hmac-sha512)")
        }
        return algorithm
    }

    /// The signature form and merchant key that verify: the canonical form under every key
    /// first, then the README form without PaymentId.
    private func match(_ posted: IPay88Post, algorithm: Algorithm) throws(Rejection) -> (form: SignatureForm, key: Int) {
        for form in SignatureForm.allCases {
            for (index, key) in merchantKeys.enumerated() {
                let message = Array(Self.signingString(posted.signed, merchantKey: key, form: form).utf8)
                if Self.matches(posted.signature, message: message, key: key, algorithm: algorithm) {
                    return (form, index)
                }
            }
        }
        throw Rejection(.badSignature, "Signature does not match the posted fields under any merchant_key (\(algorithm.rawValue))")
    }

    // MARK: Simulation

    /// A form post signed with the first merchant key (SHA-256 under `auto`).
    public func simulatedRequest(_ spec: SimulationSpec) throws(SimulationError) -> RawRequest {
        guard let key = merchantKeys.first else { throw SimulationError("no merchant_key configured") }
        let fields = SignedFields(
            merchantCode: merchantCode,
            paymentID: "2",
            refNo: spec.orderRef,
            amount: spec.amount.decimal,
            currency: spec.amount.currency,
            status: spec.status
        )
        let body = FormBody.encode([
            ("MerchantCode", fields.merchantCode),
            ("PaymentId", fields.paymentID),
            ("RefNo", fields.refNo),
            ("Amount", fields.amount),
            ("Currency", fields.currency),
            ("Remark", "ipnd simulate"),
            ("TransId", spec.uniqueID),
            ("AuthCode", ""),
            ("Status", fields.status),
            ("ErrDesc", ""),
            ("Signature", Self.signature(fields, merchantKey: key, algorithm: algorithm ?? .sha256)),
        ])
        return RawRequest(target: spec.path, headers: [("Content-Type", "application/x-www-form-urlencoded")], body: body)
    }
}

/// The fields of an iPay88 Backend Post that ipnd reads, names matched case-insensitively.
struct IPay88Post {
    let signed: IPay88.SignedFields
    let signature: String
    let transID: String

    init(_ form: FormBody) throws(Rejection) {
        func optional(_ name: String) throws(Rejection) -> String? {
            do {
                return try form.value(name)
            } catch {
                throw Rejection(.malformedBody, error.description)
            }
        }
        func required(_ name: String) throws(Rejection) -> String {
            guard let value = try optional(name), !value.isEmpty else { throw Rejection(.missingField, "\(name) is missing or empty") }
            return value
        }
        guard let signature = try optional("Signature"), !signature.isEmpty else {
            throw Rejection(.badSignature, "Signature is missing: the post is not signed")
        }
        signed = IPay88.SignedFields(
            merchantCode: try required("MerchantCode"),
            paymentID: try optional("PaymentId") ?? "",
            refNo: try required("RefNo"),
            amount: try required("Amount"),
            currency: try required("Currency"),
            status: try required("Status")
        )
        self.signature = signature
        transID = try optional("TransId") ?? ""
    }

    /// What the verified post means for its order.
    func notification() throws(Rejection) -> VerifiedNotification {
        let amount: Money
        do {
            amount = try Money.parseMajor(signed.amount, currency: signed.currency, thousandsSeparators: true)
        } catch {
            throw error.rejection
        }
        // The signature covers the Amount's digits only: they must be the amount in minor
        // units, or "1.00", "10.0" and "100" would all verify as one another.
        guard Int64(signed.amountDigits) == amount.minor else {
            let exponent = (try? Currency.exponent(of: signed.currency)) ?? 2
            throw Rejection(
                .badAmount,
                "Amount \"\(signed.amount.prefix(40))\" must have exactly \(exponent) decimals for \(signed.currency): "
                    + "its digits are what the signature covers"
            )
        }
        return VerifiedNotification(
            kind: .payment,
            orderRef: signed.refNo,
            providerTxnID: transID.isEmpty ? nil : transID,
            dedupKey: transID.isEmpty
                ? IPay88.referenceDedupKey(refNo: signed.refNo, status: signed.status, amountDigits: signed.amountDigits)
                : "\(transID)|\(signed.status)",
            providerStatus: signed.status,
            effect: IPay88.effect(ofStatus: signed.status),
            amount: amount
        )
    }
}
