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

/// Juspay's order status API (inquiries.md section 4): `GET /orders/<order_ref>` with the
/// merchant's API key as Basic credentials, answered with the order as the webhooks'
/// `content.order` carries it. Its authenticity rests on TLS to the configured host.
public struct JuspayInquiry: StatusInquiry {
    /// The API version asked for (the `version` header).
    public static let apiVersion = "2023-06-30"

    public let baseURL: String
    /// `inquiry.api_key`: the Basic username, with an empty password. A credential.
    let apiKey: String
    /// `inquiry.merchant_id`: the `x-merchantid` header.
    let merchantID: String

    /// The account's inquiry, from its resolved `inquiry` section.
    init(settings: InquirySettings) throws(AccountConfigError) {
        let apiKey = try settings.requiredString("api_key")
        // Basic credentials split at the first colon (RFC 7617): Juspay would read a shorter key.
        guard !apiKey.contains(":"), InquiryText.isHeaderSafe(apiKey) else {
            throw settings.error("api_key", "must not contain \":\" or control characters (it is sent as HTTP Basic credentials)")
        }
        let merchantID = try settings.requiredString("merchant_id")
        guard InquiryText.isHeaderSafe(merchantID) else {
            throw settings.error("merchant_id", "must not contain control characters (it is sent as the x-merchantid header)")
        }
        self.init(apiKey: apiKey, merchantID: merchantID, url: settings.url ?? Juspay.defaultInquiryURL)
    }

    public init(apiKey: String, merchantID: String, url: String = Juspay.defaultInquiryURL) {
        self.apiKey = apiKey
        self.merchantID = merchantID
        baseURL = url
    }

    public var summary: [(key: String, value: String)] {
        [("url", baseURL), ("api_key", "configured, redacted"), ("merchant_id", merchantID)]
    }

    // MARK: Request

    /// `GET {url}/orders/<order_ref as a path segment>`.
    public func request(for order: InquiryOrder, context: InquiryContext) -> InquiryRequest {
        InquiryRequest(
            method: "GET",
            url: InquiryURL.joining(baseURL, "/orders/" + InquiryURL.pathSegment(order.orderRef)),
            headers: [
                InquiryHeader("Authorization", "Basic " + Base64.encode(Array((apiKey + ":").utf8))),
                InquiryHeader("x-merchantid", merchantID),
                InquiryHeader("version", Self.apiVersion),
            ]
        )
    }

    // MARK: Answer

    public func read(_ answer: InquiryAnswer, to request: InquiryRequest, order: InquiryOrder) -> InquiryReading {
        if answer.status == 401 { return .unauthorized("Juspay answered HTTP 401: api_key or merchant_id refused") }
        let parsed = answer.jsonObject()
        if answer.status == 400 || answer.status == 404, case .success(let body) = parsed,
            body.string("status") == "NOT_FOUND" || body["status_id"]?.scalarText == "40"
        {
            return .notFound(providerStatus: body.string("status") ?? "40")
        }
        guard answer.status == 200 else {
            return .error(InquiryText.errorStatus(answer, fields: ["status", "error_code", "error_message"]), providerStatus: nil)
        }
        let body: JSONObject
        switch parsed {
        case .success(let object): body = object
        case .failure(let error): return .error("the answer is not a JSON object: \(error)", providerStatus: nil)
        }
        guard let orderID = Self.text(body, "order_id") else { return .error("the answer has no order_id", providerStatus: nil) }
        guard orderID == order.orderRef else { return .error("answer names another order", providerStatus: nil) }
        guard let status = Self.text(body, "status") else { return .error("the answer has no status", providerStatus: nil) }
        do {
            let amount = try body.majorUnitAmount("amount", path: "order")
            let id = Self.text(body, "id")
            let txnID = Self.text(body, "txn_id")
            var detail: [String: String] = [:]
            if txnID != nil, let id { detail["id"] = id }
            let fact = VerifiedNotification(
                kind: .payment,
                orderRef: orderID,
                providerTxnID: txnID ?? id,
                // Webhooks dedup on their event id, which an answer lacks.
                dedupKey: "INQUIRY|\(orderID)|\(status)",
                providerStatus: status,
                effect: try Juspay.statusEffect(status, order: body, amount: amount),
                amount: amount,
                detail: detail
            )
            return .checked([fact], providerStatus: status)
        } catch {
            return .unreadable(error, providerStatus: status)
        }
    }

    private static func text(_ object: JSONObject, _ field: String) -> String? {
        guard let text = object[field]?.scalarText, !text.isEmpty else { return nil }
        return text
    }
}
