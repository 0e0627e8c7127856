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

/// Citcon UPI's transaction inquiry (inquiries.md section 5): a server token taken with the
/// UPI private key, then `GET /transactions/<id>` by Citcon's own transaction id, answered
/// with the transaction as a UPI IPN carries it. Its authenticity rests on TLS to the
/// configured host.
public struct CitconInquiry: StatusInquiry {
    /// A token is renewed when less than this remains before its `expiry`.
    public static let renewalMarginMillis: Int64 = 60_000

    public let baseURL: String
    /// `inquiry.private_key`: the UPI server private key the token is taken with. A credential.
    let privateKey: String

    /// The account's inquiry, from its resolved `inquiry` section.
    init(settings: InquirySettings) throws(AccountConfigError) {
        let privateKey = try settings.requiredString("private_key")
        guard InquiryText.isHeaderSafe(privateKey), !privateKey.contains(" ") else {
            throw settings.error("private_key", "must not contain spaces or control characters (it is sent as a bearer token)")
        }
        self.init(privateKey: privateKey, url: settings.url ?? Citcon.defaultInquiryURL)
    }

    public init(privateKey: String, url: String = Citcon.defaultInquiryURL) {
        self.privateKey = privateKey
        baseURL = url
    }

    public var summary: [(key: String, value: String)] {
        [("url", baseURL), ("private_key", "configured, redacted")]
    }

    // MARK: Token

    /// `POST {url}/access-tokens` of `{"token_type":"server"}` with the private key as bearer.
    public func tokenRequest() -> InquiryRequest? {
        InquiryRequest(
            method: "POST",
            url: InquiryURL.joining(baseURL, "/access-tokens"),
            headers: [InquiryHeader("Content-Type", "application/json"), InquiryHeader("Authorization", "Bearer " + privateKey)],
            body: Array(#"{"token_type":"server"}"#.utf8)
        )
    }

    /// `{"status":"success","data":{"access_token","token_type","expiry" (epoch ms),...}}`:
    /// sent as `Bearer <access_token>`, renewed 60 s before `expiry`.
    public func readToken(_ answer: InquiryAnswer, nowMillis: Int64) throws(InquiryTokenError) -> AccessToken {
        if answer.status == 401 || answer.status == 403 {
            throw InquiryTokenError(
                "Citcon refused private_key: \(InquiryText.errorStatus(answer, fields: ["code", "message"], in: "data"))", unauthorized: true)
        }
        guard answer.status == 200 else {
            throw InquiryTokenError("the token request answered \(InquiryText.errorStatus(answer, fields: ["code", "message"], in: "data"))")
        }
        guard case .success(let body) = answer.jsonObject() else { throw InquiryTokenError("the token answer is not a JSON object") }
        guard body.string("status") == "success", let data = body.object("data") else {
            throw InquiryTokenError("the token answer is not a success: \(InquiryText.errorStatus(answer, fields: ["code", "message"], in: "data"))")
        }
        guard let token = data.string("access_token"), InquiryText.isHeaderSafe(token), !token.contains(" ") else {
            throw InquiryTokenError("the token answer has no usable data.access_token")
        }
        guard let text = data["expiry"]?.scalarText, let expiry = Int64(text), expiry > 0 else {
            throw InquiryTokenError("the token answer's data.expiry is not a time in epoch milliseconds")
        }
        return AccessToken(authorization: "Bearer " + token, renewAtMillis: expiry - Self.renewalMarginMillis)
    }

    // MARK: Request

    /// An order known only from an expectation has no Citcon transaction id yet: it cannot be
    /// asked, and no token is taken for it.
    public func refusal(for order: InquiryOrder) -> InquiryRefusal? {
        guard let transactionID = order.providerTxnID, !transactionID.isEmpty else {
            return InquiryRefusal("Citcon is asked by its transaction id")
        }
        return nil
    }

    /// `GET {url}/transactions/<provider_txn_id>` with the account's token. Citcon is asked by
    /// its own transaction id, which ipnd learns from the order's first notification.
    public func request(for order: InquiryOrder, context: InquiryContext) throws(InquiryRefusal) -> InquiryRequest {
        if let refusal = refusal(for: order) { throw refusal }
        guard let transactionID = order.providerTxnID else { throw InquiryRefusal("Citcon is asked by its transaction id") }
        guard let token = context.token else { throw InquiryRefusal("Citcon is asked with a token, and none was taken") }
        return InquiryRequest(
            method: "GET",
            url: InquiryURL.joining(baseURL, "/transactions/" + InquiryURL.pathSegment(transactionID)),
            headers: [InquiryHeader("Authorization", token.authorization)]
        )
    }

    // MARK: Answer

    public func read(_ answer: InquiryAnswer, to request: InquiryRequest, order: InquiryOrder) -> InquiryReading {
        if answer.status == 401 { return .unauthorized("Citcon answered HTTP 401: the token was refused") }
        let parsed = answer.jsonObject()
        if case .success(let body) = parsed, body.string("status") == "fail" {
            let data = body.object("data")
            let code = data?["code"]?.scalarText ?? ""
            let message = data?["message"]?.scalarText ?? ""
            return .error(
                "Citcon answered fail (\(InquiryText.status(answer.status))): code \(InquiryText.quoted(code)), message \(InquiryText.quoted(message))",
                providerStatus: code.isEmpty ? "fail" : String(code.prefix(64)))
        }
        guard answer.status == 200 else { return .error(InquiryText.status(answer.status), providerStatus: nil) }
        let body: JSONObject
        switch parsed {
        case .success(let object): body = object
        case .failure(let error): return .error("the answer is not a JSON object: \(error)", providerStatus: nil)
        }
        guard body.string("status") == "success", let data = body.object("data") else {
            return .error("the answer is neither a success with data nor a fail", providerStatus: nil)
        }
        guard let reference = data["reference"]?.scalarText, !reference.isEmpty else {
            return .error("the answer has no data.reference", providerStatus: nil)
        }
        guard reference == order.orderRef else { return .error("answer names another order", providerStatus: nil) }
        // The transaction as a UPI IPN carries it: its `object` is the IPN's transaction_type.
        var values = Dictionary(data.members.map { ($0.key, $0.value.signingText) }) { first, _ in first }
        values["transaction_type"] = data["object"]?.scalarText.flatMap { $0.isEmpty ? nil : $0 } ?? "charge"
        do {
            let fact = try CitconMapping.upi(CitconSignedFields(values: values))
            return .checked([fact], providerStatus: fact.providerStatus)
        } catch {
            return .unreadable(error, providerStatus: data.string("status"))
        }
    }
}
