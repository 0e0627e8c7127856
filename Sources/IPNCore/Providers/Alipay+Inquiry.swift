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

/// Antom's inquiryPayment (inquiries.md section 2): a JSON `POST` signed with the merchant's
/// private key, answered with a body Antom signs with its own, which is verified with the
/// account's Antom `public_key` before anything in it is read.
public struct AlipayInquiry: StatusInquiry {
    /// The API path, and the one a `SANDBOX_` client id is served on (as the official SDKs
    /// rewrite it).
    public static let path = "/ams/api/v1/payments/inquiryPayment"
    public static let sandboxPath = "/ams/sandbox/api/v1/payments/inquiryPayment"
    /// The `resultCode` (with `resultStatus` `F`) that says Antom does not know the payment:
    /// outcome `not_found`. **Assumption** (inquiries.md section 2): the code Alipay's inquiry
    /// APIs of the same family use; Antom's own table was not found. Change it here.
    public static let unknownOrderResultCode = "ORDER_NOT_EXIST"

    public let baseURL: String
    /// The account's `client_id`: sent, signed, and required of the answer.
    let clientID: String
    /// The account's Antom public keys, any of which verifies an answer.
    let publicKeys: [RSAPublicKey]
    /// `inquiry.merchant_private_key`: signs requests. A credential.
    let merchantKey: RSAPrivateKey
    /// `inquiry.key_version`: which of the merchant's keys Antom checks the signature with.
    let keyVersion: String

    /// The account's inquiry, from its resolved `inquiry` section and the account's own
    /// `client_id` and `public_key`.
    init(settings: InquirySettings, clientID: String, publicKeys: [RSAPublicKey]) throws(AccountConfigError) {
        let keyText = try settings.requiredString("merchant_private_key")
        let key: RSAPrivateKey
        do {
            key = try RSAPrivateKey(derOrPEM: keyText)
        } catch {
            throw settings.error(
                "merchant_private_key", "\(error.description); expected the merchant's RSA private key, PKCS#8 or PKCS#1, PEM or base64 DER")
        }
        let keyVersion = settings.string("key_version") ?? "1"
        guard Self.isKeyVersion(keyVersion) else {
            throw settings.error("key_version", "must be a positive integer (the version of the merchant key registered with Antom)")
        }
        self.init(clientID: clientID, publicKeys: publicKeys, merchantKey: key, keyVersion: keyVersion, url: settings.url ?? Alipay.defaultInquiryURL)
    }

    public init(
        clientID: String, publicKeys: [RSAPublicKey], merchantKey: RSAPrivateKey, keyVersion: String = "1",
        url: String = Alipay.defaultInquiryURL
    ) {
        self.clientID = clientID
        self.publicKeys = publicKeys
        self.merchantKey = merchantKey
        self.keyVersion = keyVersion
        baseURL = url
    }

    /// 1 to 9 digits without a leading zero: it is written into the `signature` header.
    static func isKeyVersion(_ text: String) -> Bool {
        (1...9).contains(text.utf8.count) && text.utf8.first != UInt8(ascii: "0")
            && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The API path for this account's client id.
    public var apiPath: String { clientID.hasPrefix("SANDBOX_") ? Self.sandboxPath : Self.path }

    public var summary: [(key: String, value: String)] {
        [
            ("url", InquiryURL.joining(baseURL, apiPath)),
            ("merchant_private_key", "configured, redacted (RSA \(merchantKey.bits))"),
            ("key_version", keyVersion),
        ]
    }

    // MARK: Request

    /// `POST` of `{"paymentRequestId":"<order_ref>"}` with `client-id`, `request-time` (now,
    /// epoch milliseconds) and the merchant's signature over
    /// `"POST " + path + "\n" + client_id + "." + request_time + "." + body`.
    public func request(for order: InquiryOrder, context: InquiryContext) -> InquiryRequest {
        var body = Array(#"{"paymentRequestId":"#.utf8)
        JSONText.appendQuoted(order.orderRef, to: &body)
        body.append(UInt8(ascii: "}"))
        var request = InquiryRequest(method: "POST", url: InquiryURL.joining(baseURL, apiPath), headers: [], body: body)
        let requestTime = String(context.nowMillis)
        let signature = Alipay.signatureHeader(
            path: request.pathAndQuery, clientID: clientID, requestTime: requestTime, body: body, key: merchantKey, keyVersion: keyVersion)
        request.headers = [
            InquiryHeader("Content-Type", "application/json; charset=UTF-8"),
            InquiryHeader("client-id", clientID),
            InquiryHeader("request-time", requestTime),
            InquiryHeader("signature", signature),
        ]
        return request
    }

    // MARK: Answer

    public func read(_ answer: InquiryAnswer, to request: InquiryRequest, order: InquiryOrder) -> InquiryReading {
        if answer.status == 401 { return .unauthorized("Antom answered HTTP 401") }
        // Antom answers every call it took, failed ones included, with 200: anything else is a
        // gateway or proxy on the way, whose body ipnd does not read.
        guard answer.status == 200 else { return .error(InquiryText.status(answer.status), providerStatus: nil) }
        if let problem = verificationProblem(answer, path: request.pathAndQuery) { return .badSignature(problem) }
        let body: JSONObject
        switch answer.jsonObject() {
        case .success(let object): body = object
        case .failure(let error): return .error("the answer is not a JSON object: \(error)", providerStatus: nil)
        }
        guard let result = body.object("result"), let resultStatus = result.string("resultStatus"), !resultStatus.isEmpty else {
            return .error("the answer has no result.resultStatus", providerStatus: nil)
        }
        let resultCode = result.string("resultCode") ?? ""
        switch resultStatus {
        case "S":
            return payment(body, order: order)
        case "F" where resultCode == Self.unknownOrderResultCode:
            return .notFound(providerStatus: resultCode)
        case "F", "U":
            return .error(
                "Antom answered resultStatus \(resultStatus) with resultCode \(InquiryText.quoted(resultCode))",
                providerStatus: resultCode.isEmpty ? resultStatus : String(resultCode.prefix(64)))
        default:
            return .error("the answer's result.resultStatus \(InquiryText.quoted(resultStatus)) is not S, F or U", providerStatus: nil)
        }
    }

    /// Why the answer is not Antom's signed answer to this account, or nil when it is: its
    /// `client-id` must be the account's, and its `signature` must verify under one of the
    /// account's public keys over `"POST " + path + "\n" + client-id + "." + response-time + "." + body`.
    func verificationProblem(_ answer: InquiryAnswer, path: String) -> String? {
        let names = ["client-id", "response-time", "signature"]
        let values = names.map { answer.singleHeader($0) }
        if let missing = zip(names, values).first(where: { $0.1 == nil }) {
            return "the answer's \(missing.0) header is missing or repeated"
        }
        let (sentClientID, responseTime, signatureValue) = (values[0] ?? "", values[1] ?? "", values[2] ?? "")
        guard sentClientID == clientID else {
            return "the answer's client-id \(InquiryText.quoted(sentClientID)) is not this account's client_id"
        }
        let header: Alipay.SignatureHeader
        do {
            header = try Alipay.SignatureHeader(parsing: signatureValue)
        } catch {
            return "the answer's \(error.detail)"
        }
        let content = Alipay.signedContent(path: path, clientID: sentClientID, requestTime: responseTime, body: answer.body)
        guard publicKeys.contains(where: { $0.verifySHA256(signature: header.signature, message: content) }) else {
            return "the answer's signature does not verify under any public_key"
        }
        return nil
    }

    /// The fact of a call that worked: `paymentStatus` as the payment's state, compared
    /// without regard to case; SUCCESS and FAIL with the PAYMENT_RESULT notification's dedup
    /// key, the states no notification reports with `INQUIRY|paymentId|paymentStatus`.
    private func payment(_ body: JSONObject, order: InquiryOrder) -> InquiryReading {
        guard let status = body.string("paymentStatus"), !status.isEmpty else {
            return .error("the answer has no paymentStatus", providerStatus: nil)
        }
        do {
            let (orderRef, paymentID) = try Alipay.paymentIdentity(body)
            // The signature covers the body, not the question: an answer about another order
            // (replayed, or misrouted) must not be recorded as this one's.
            guard orderRef == order.orderRef else { return .error("answer names another order", providerStatus: status) }
            let effect: NotificationEffect
            var dedupKey = "INQUIRY|\(paymentID)|\(status)"
            switch status.uppercased() {
            case "SUCCESS":
                effect = .transition(.paid)
                dedupKey = Alipay.paymentResultDedupKey(notifyType: "PAYMENT_RESULT", paymentID: paymentID, resultStatus: "S")
            case "FAIL":
                effect = .transition(.failed)
                dedupKey = Alipay.paymentResultDedupKey(notifyType: "PAYMENT_RESULT", paymentID: paymentID, resultStatus: "F")
            case "CANCELLED":
                effect = .transition(.canceled)
            case "PROCESSING", "PENDING":
                effect = .transition(.pending)
            default:
                effect = .unknownStatus
            }
            let fact = try Alipay.paymentResult(
                body, orderRef: orderRef, paymentID: paymentID, status: status, effect: effect, dedupKey: dedupKey)
            return .checked([fact], providerStatus: status)
        } catch {
            return .unreadable(error, providerStatus: status)
        }
    }
}
