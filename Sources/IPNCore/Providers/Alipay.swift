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

/// Alipay global (Antom) notifyPayment / notifyCapture / notifyRefund: RSASSA-PKCS1-v1_5
/// SHA-256 over `POST <path>\n<client-id>.<request-time>.<body>`, in the `signature` header
/// (providers.md section 3).
public struct Alipay: NotificationProvider {
    public static let name = "alipay"
    public static let defaultInquiryURL = "https://open-sea-global.alipay.com"
    public static let accountKeys = [
        AccountKey("client_id", .string, required: true),
        AccountKey("public_key", .keyMaterial, required: true),
        AccountKey("notify_path", .string, required: false),
        AccountKey("simulate_private_key_file", .fileContents, required: false),
    ]
    /// inquiryPayment is signed with the merchant's own private key (inquiries.md section 2).
    public static let inquiryKeys = [
        AccountKey("merchant_private_key", .secret, required: true),
        AccountKey("key_version", .string, required: false),
    ]
    public static let simulationDefaults = SimulationDefaults(paidStatus: "S", currency: "USD")
    public static let acknowledgement = ProviderAnswer(
        status: 200,
        contentType: "application/json",
        body: #"{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#
    )

    /// The account's Antom client id: notifications naming another one are refused.
    let clientID: String
    /// Antom public keys, in any order: any one verifies (rotation).
    let publicKeys: [RSAPublicKey]
    /// Replaces the request target in the signed content when a proxy rewrites paths.
    let notifyPath: String?
    /// Signs simulated notifications; never used to verify.
    let simulationKey: RSAPrivateKey?
    /// inquiryPayment; nil when the account has no `inquiry` section.
    public let inquiry: (any StatusInquiry)?

    public init(settings: AccountSettings) throws(AccountConfigError) {
        clientID = try settings.requiredString("client_id")
        let keyTexts = try settings.requiredValues("public_key")
        var keys: [RSAPublicKey] = []
        for (index, text) in keyTexts.enumerated() {
            do {
                keys.append(try RSAPublicKey(derOrPEM: text))
            } catch {
                let which = keyTexts.count > 1 ? "entry \(index + 1) " : ""
                throw settings.error("public_key", "\(which)\(error.description)")
            }
        }
        publicKeys = keys
        notifyPath = settings.string("notify_path")
        if let notifyPath, !notifyPath.hasPrefix("/") {
            throw settings.error("notify_path", "must start with / (the path Antom posts to, plus its query if any)")
        }
        if let pem = settings.string("simulate_private_key_file") {
            let key: RSAPrivateKey
            do {
                key = try RSAPrivateKey(pem: pem)
            } catch {
                throw settings.error("simulate_private_key_file", "\(error.description); expected a PEM RSA private key")
            }
            let probe = [Array("ipnd key pair check".utf8)]
            let signature = key.signSHA256(probe)
            guard keys.contains(where: { $0.verifySHA256(signature: signature, message: probe) }) else {
                throw settings.error("simulate_private_key_file", "does not pair with any public_key, so simulated notifications would not verify")
            }
            simulationKey = key
        } else {
            simulationKey = nil
        }
        if let section = settings.inquiry {
            inquiry = try AlipayInquiry(settings: section, clientID: clientID, publicKeys: keys)
        } else {
            inquiry = nil
        }
    }

    /// An account from already parsed keys (tests).
    public init(
        clientID: String, publicKeys: [RSAPublicKey], notifyPath: String? = nil, simulationKey: RSAPrivateKey? = nil,
        inquiry: AlipayInquiry? = nil
    ) {
        self.clientID = clientID
        self.publicKeys = publicKeys
        self.notifyPath = notifyPath
        self.simulationKey = simulationKey
        self.inquiry = inquiry
    }

    public var summary: [(key: String, value: String)] {
        var lines: [(key: String, value: String)] = [
            ("client_id", clientID),
            ("public_key", "\(publicKeys.count) key(s): " + publicKeys.map { "RSA \($0.bits)" }.joined(separator: ", ")),
        ]
        if let notifyPath { lines.append(("notify_path", notifyPath)) }
        lines.append(("simulate_private_key_file", simulationKey == nil ? "not configured" : "configured, redacted"))
        return lines
    }

    // MARK: Signing

    /// The bytes Antom signs, as parts: `"POST " + path + "\n" + clientID + "." + requestTime + "." + body`.
    public static func signedContent(path: String, clientID: String, requestTime: String, body: [UInt8]) -> [[UInt8]] {
        [
            Array("POST ".utf8), Array(path.utf8), [UInt8(ascii: "\n")],
            Array(clientID.utf8), [UInt8(ascii: ".")], Array(requestTime.utf8), [UInt8(ascii: ".")],
            body,
        ]
    }

    /// The `signature` header value for a message of `body` posted to `path` (the signer of
    /// simulated notifications and of inquiryPayment requests):
    /// `algorithm=RSA256,keyVersion=<keyVersion>,signature=<url-encoded base64>`.
    public static func signatureHeader(
        path: String,
        clientID: String,
        requestTime: String,
        body: [UInt8],
        key: RSAPrivateKey,
        keyVersion: String = "1"
    ) -> String {
        let signature = key.signSHA256(signedContent(path: path, clientID: clientID, requestTime: requestTime, body: body))
        return "algorithm=RSA256,keyVersion=\(keyVersion),signature=" + SignatureHeader.percentEncode(Base64.encode(signature))
    }

    // MARK: Verifying

    public static func answer(for rejection: Rejection) -> ProviderAnswer {
        let (code, message) =
            rejection.reason.isAuthenticationFailure
            ? ("INVALID_SIGNATURE", "invalid signature") : ("PARAM_ILLEGAL", "malformed request")
        return ProviderAnswer(
            status: rejection.reason.httpStatus,
            contentType: "application/json",
            body: #"{"result":{"resultCode":"\#(code)","resultStatus":"F","resultMessage":"\#(message)"}}"#
        )
    }

    public func verify(_ request: RawRequest) throws(Rejection) -> VerifiedNotification {
        let sentClientID = try request.requiredHeader("client-id")
        let requestTime = try request.requiredHeader("request-time")
        let header = try SignatureHeader(parsing: request.requiredHeader("signature"))
        let path = notifyPath ?? request.target
        let content = Self.signedContent(
            path: path,
            clientID: sentClientID,
            requestTime: requestTime,
            body: request.body
        )
        let matched = publicKeys.firstIndex { $0.verifySHA256(signature: header.signature, message: content) }
        guard let matched else {
            throw Rejection(
                .badSignature,
                "signature does not verify under any public_key for path \(path.prefix(128)) "
                    + "(set notify_path if a proxy rewrites the path Antom posts to)"
            )
        }
        guard sentClientID == clientID else {
            throw Rejection(.merchantMismatch, "client-id \(sentClientID.prefix(64)) is not this account's client_id")
        }
        let body = try request.jsonObjectBody()
        var notification = try Self.notification(from: body)
        if publicKeys.count > 1 { notification.detail["public_key"] = "\(matched + 1) of \(publicKeys.count)" }
        if let keyVersion = header.keyVersion { notification.detail["key_version"] = String(keyVersion.prefix(16)) }
        return notification
    }

    static func notification(from body: JSONObject) throws(Rejection) -> VerifiedNotification {
        guard let notifyType = body.string("notifyType"), !notifyType.isEmpty else {
            throw Rejection(.missingField, "notifyType is missing")
        }
        var notification: VerifiedNotification
        switch notifyType {
        case "PAYMENT_RESULT", "PAYMENT_PENDING":
            notification = try payment(body, notifyType: notifyType)
        case "CAPTURE_RESULT":
            notification = try capture(body)
        case "REFUND_RESULT":
            notification = try refund(body)
        default:
            notification = unknownType(body, notifyType: notifyType)
        }
        notification.detail["notify_type"] = notifyType
        return notification
    }

    /// What `ipnd simulate alipay --status` takes: Antom's `resultStatus` words that `payment`
    /// maps for a PAYMENT_RESULT (`S` paid, `F` failed), and `PENDING`, simulate's own word for a
    /// PAYMENT_PENDING notification (sent with resultStatus `U`), which is pending whatever its
    /// resultStatus says.
    public static let knownStatuses = ["S", "F", "PENDING"]

    static func payment(_ body: JSONObject, notifyType: String) throws(Rejection) -> VerifiedNotification {
        let (orderRef, paymentID) = try paymentIdentity(body)
        let status = try resultStatus(body)
        let effect: NotificationEffect
        if notifyType == "PAYMENT_PENDING" {
            effect = .transition(.pending)  // whatever resultStatus says
        } else {
            switch status {
            case "S": effect = .transition(.paid)
            case "F": effect = .transition(.failed)
            default: effect = .unknownStatus
            }
        }
        return try paymentResult(
            body, orderRef: orderRef, paymentID: paymentID, status: status, effect: effect,
            dedupKey: paymentResultDedupKey(notifyType: notifyType, paymentID: paymentID, resultStatus: status))
    }

    /// The order (`paymentRequestId`) and the Antom payment (`paymentId`) a payment result
    /// names, as notifyPayment and inquiryPayment both carry them.
    static func paymentIdentity(_ body: JSONObject) throws(Rejection) -> (orderRef: String, paymentID: String) {
        (try requiredText(body, "paymentRequestId"), try requiredText(body, "paymentId"))
    }

    /// The dedup key of a payment result: `notifyType|paymentId|resultStatus`. An inquiry's
    /// SUCCESS and FAIL use the PAYMENT_RESULT notification's key, so that notification is a
    /// duplicate of the fact the inquiry recorded, and the other way round.
    public static func paymentResultDedupKey(notifyType: String, paymentID: String, resultStatus: String) -> String {
        "\(notifyType)|\(paymentID)|\(resultStatus)"
    }

    /// A payment result of `body`: its amount is `paymentAmount`, and it registers its
    /// `paymentId`, so captures and refunds naming only that id find the order.
    static func paymentResult(
        _ body: JSONObject, orderRef: String, paymentID: String, status: String, effect: NotificationEffect, dedupKey: String
    ) throws(Rejection) -> VerifiedNotification {
        VerifiedNotification(
            kind: .payment,
            orderRef: orderRef,
            providerTxnID: paymentID,
            dedupKey: dedupKey,
            providerStatus: status,
            effect: effect,
            amount: try amount(of: body, field: "paymentAmount"),
            link: .registers(paymentID)
        )
    }

    static func capture(_ body: JSONObject) throws(Rejection) -> VerifiedNotification {
        let paymentID = try requiredText(body, "paymentId")
        let captureID = try requiredText(body, "captureId")
        let status = try resultStatus(body)
        let effect: NotificationEffect
        switch status {
        case "S": effect = .transition(.paid)
        case "F": effect = .record  // a failed capture leaves the authorization as it is
        default: effect = .unknownStatus
        }
        return VerifiedNotification(
            kind: .capture,
            orderRef: nil,
            providerTxnID: captureID,
            dedupKey: "CAPTURE_RESULT|\(captureID)|\(status)",
            providerStatus: status,
            effect: effect,
            amount: try amount(of: body, field: "captureAmount"),
            link: .requires(paymentID)
        )
    }

    static func refund(_ body: JSONObject) throws(Rejection) -> VerifiedNotification {
        let paymentID = try requiredText(body, "paymentId")
        let refundID = try requiredText(body, "refundId")
        let status = try requiredText(body, "refundStatus")
        let amount = try amount(of: body, field: "refundAmount")
        let effect: NotificationEffect
        switch status {
        case "SUCCESS", "S": effect = .refund(RefundInfo(refundID: refundID, amount: amount))
        case "FAIL", "F": effect = .record  // a failed refund leaves the payment as it is
        default: effect = .unknownStatus
        }
        return VerifiedNotification(
            kind: .refund,
            orderRef: nil,
            providerTxnID: refundID,
            dedupKey: "REFUND_RESULT|\(refundID)|\(status)",
            providerStatus: status,
            effect: effect,
            amount: amount,
            link: .requires(paymentID)
        )
    }

    /// A notifyType ipnd has no mapping for: kept with whatever order reference or payment id
    /// it carries, acknowledged; it moves no order. Its notifyType is the status word it lacks.
    static func unknownType(_ body: JSONObject, notifyType: String) -> VerifiedNotification {
        let orderRef = nonEmptyText(body, "paymentRequestId")
        let paymentID = nonEmptyText(body, "paymentId")
        let status = body.object("result")?["resultStatus"]?.scalarText ?? ""
        return VerifiedNotification(
            kind: .event,
            orderRef: orderRef,
            providerTxnID: paymentID,
            dedupKey: "\(notifyType)|\(paymentID ?? "")|\(status)",
            providerStatus: notifyType,
            effect: .unknownStatus,
            link: paymentID.map { orderRef == nil ? .requires($0) : .registers($0) }
        )
    }

    private static func nonEmptyText(_ body: JSONObject, _ field: String) -> String? {
        guard let text = body[field]?.scalarText, !text.isEmpty else { return nil }
        return text
    }

    private static func requiredText(_ body: JSONObject, _ field: String) throws(Rejection) -> String {
        guard let text = nonEmptyText(body, field) else { throw Rejection(.missingField, "\(field) is missing") }
        return text
    }

    private static func resultStatus(_ body: JSONObject) throws(Rejection) -> String {
        guard let status = body.object("result")?.string("resultStatus"), !status.isEmpty else {
            throw Rejection(.missingField, "result.resultStatus is missing")
        }
        return status
    }

    /// An amount object `{"currency": "SGD", "value": "4200"}`; value in minor units.
    static func amount(of body: JSONObject, field: String) throws(Rejection) -> Money? {
        guard let value = body[field], value != .null else { return nil }
        guard let object = value.object else { throw Rejection(.badAmount, "\(field) is not an object") }
        guard let text = object["value"]?.scalarText else { throw Rejection(.badAmount, "\(field).value is missing or not a string") }
        guard let currency = object.string("currency"), !currency.isEmpty else {
            throw Rejection(.missingField, "\(field).currency is missing")
        }
        do {
            return try Money.parseMinor(text, currency: currency)
        } catch {
            throw error.rejection
        }
    }

    // MARK: Simulation

    public func simulatedRequest(_ spec: SimulationSpec) throws(SimulationError) -> RawRequest {
        guard let simulationKey else {
            throw SimulationError("no simulate_private_key_file configured for this alipay account")
        }
        let notifyType = spec.status == "PENDING" ? "PAYMENT_PENDING" : "PAYMENT_RESULT"
        let (status, code, message): (String, String, String) =
            switch spec.status {
            case "S": ("S", "SUCCESS", "success")
            case "F": ("F", "PROCESS_FAIL", "payment failed")
            case "PENDING": ("U", "PAYMENT_IN_PROCESS", "payment in process")
            default: (spec.status, "UNKNOWN_EXCEPTION", "simulated status")
            }
        let body = Array((
            #"{"notifyType":"\#(notifyType)","result":{"resultCode":"\#(code)","resultStatus":"\#(JSONText.escape(status))","#
            + #""resultMessage":"\#(message)"},"paymentRequestId":"\#(JSONText.escape(spec.orderRef))","#
            + #""paymentId":"\#(JSONText.escape(spec.uniqueID))","#
            + #""paymentAmount":{"currency":"\#(spec.amount.currency)","value":"\#(spec.amount.minor)"},"#
            + #""paymentCreateTime":"\#(spec.time)","paymentTime":"\#(spec.time)"}"#
        ).utf8)
        let signature = Self.signatureHeader(
            path: notifyPath ?? spec.path,
            clientID: clientID,
            requestTime: spec.time,
            body: body,
            key: simulationKey
        )
        return RawRequest(
            target: spec.path,
            headers: [
                ("Content-Type", "application/json; charset=UTF-8"),
                ("client-id", clientID),
                ("request-time", spec.time),
                ("signature", signature),
            ],
            body: body
        )
    }
}

extension Alipay {
    /// The `signature` header: `algorithm=RSA256,keyVersion=1,signature=<url-encoded base64>`,
    /// pairs separated by commas that may carry spaces after them.
    struct SignatureHeader {
        /// The decoded signature bytes.
        let signature: [UInt8]
        let keyVersion: String?

        init(parsing value: String) throws(Rejection) {
            // Over UTF-8 bytes: splitting a String walks grapheme clusters, which cost as much
            // as the RSA check itself on every Alipay request.
            var fields: [String: ArraySlice<UInt8>] = [:]
            let bytes = Array(value.utf8)
            for var pair in bytes.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                while pair.first == UInt8(ascii: " ") { pair = pair.dropFirst() }
                guard let equals = pair.firstIndex(of: UInt8(ascii: "=")), equals != pair.startIndex else {
                    throw Rejection(.malformedHeader, "signature header pair \"\(Self.text(pair.prefix(32)))\" is not name=value")
                }
                let name = Self.text(pair[..<equals])
                guard fields[name] == nil else { throw Rejection(.malformedHeader, "signature header repeats \(name.prefix(32))") }
                fields[name] = pair[(equals + 1)...]
            }
            if let algorithm = fields["algorithm"], !algorithm.elementsEqual("RSA256".utf8) {
                throw Rejection(.malformedHeader, "signature header algorithm \(Self.text(algorithm.prefix(32))) is not RSA256")
            }
            guard let encoded = fields["signature"], !encoded.isEmpty else {
                throw Rejection(.malformedHeader, "signature header has no signature= value")
            }
            guard let base64 = Self.percentDecode(encoded), let signature = Base64.decode(base64) else {
                throw Rejection(.malformedHeader, "signature= value is not url-encoded base64")
            }
            self.signature = signature
            keyVersion = fields["keyVersion"].map(Self.text)
        }

        private static func text(_ bytes: ArraySlice<UInt8>) -> String {
            String(decoding: bytes, as: UTF8.self)
        }

        /// Decodes `%XX` escapes of either hex case; `+` stays `+`. Nil for a broken escape
        /// or a result that is not ASCII.
        static func percentDecode(_ bytes: ArraySlice<UInt8>) -> String? {
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count)
            var index = bytes.startIndex
            while index < bytes.endIndex {
                if bytes[index] == UInt8(ascii: "%") {
                    guard index + 2 < bytes.endIndex, let high = Hex.value(bytes[index + 1]), let low = Hex.value(bytes[index + 2])
                    else { return nil }
                    out.append(high << 4 | low)
                    index += 3
                } else {
                    out.append(bytes[index])
                    index += 1
                }
            }
            guard out.allSatisfy({ $0 < 0x80 }) else { return nil }
            return String(decoding: out, as: UTF8.self)
        }

        /// Escapes what base64 text needs escaped in the header: `+`, `/` and `=`, uppercase hex.
        static func percentEncode(_ base64: String) -> String {
            var out = ""
            for character in base64 {
                switch character {
                case "+": out += "%2B"
                case "/": out += "%2F"
                case "=": out += "%3D"
                default: out.append(character)
                }
            }
            return out
        }
    }
}
