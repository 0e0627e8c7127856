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

/// Unlimint's payment list by merchant order (inquiries.md section 3): a bearer token taken
/// with the API terminal's code and password, then `GET /api/payments` for the order within a
/// window of under 7 days. Each payment listed is read as its `payment_data` callback would be.
public struct UnlimintInquiry: StatusInquiry {
    /// A token is renewed when less than this remains of its life (as Unlimint's SDK does).
    public static let renewalMarginMillis: Int64 = 10_000
    /// Unlimint searches at most 7 days: the window is this long.
    static let windowMillis: Int64 = 7 * 86_400_000 - 60_000

    public let baseURL: String
    /// `inquiry.terminal_code`: the API terminal (not the callback secret's).
    let terminalCode: String
    /// `inquiry.terminal_password`. A credential.
    let terminalPassword: String

    /// The account's inquiry, from its resolved `inquiry` section.
    init(settings: InquirySettings) throws(AccountConfigError) {
        self.init(
            terminalCode: try settings.requiredString("terminal_code"),
            terminalPassword: try settings.requiredString("terminal_password"),
            url: settings.url ?? Unlimint.defaultInquiryURL)
    }

    public init(terminalCode: String, terminalPassword: String, url: String = Unlimint.defaultInquiryURL) {
        self.terminalCode = terminalCode
        self.terminalPassword = terminalPassword
        baseURL = url
    }

    public var summary: [(key: String, value: String)] {
        [("url", baseURL), ("terminal_code", terminalCode), ("terminal_password", "configured, redacted")]
    }

    // MARK: Token

    /// `POST {url}/api/auth/token` with the terminal's code and password.
    public func tokenRequest() -> InquiryRequest? {
        InquiryRequest(
            method: "POST",
            url: InquiryURL.joining(baseURL, "/api/auth/token"),
            headers: [InquiryHeader("Content-Type", "application/x-www-form-urlencoded")],
            body: FormBody.encode([("grant_type", "password"), ("terminal_code", terminalCode), ("password", terminalPassword)])
        )
    }

    /// `{access_token, token_type, expires_in (seconds), ...}`: sent as `<token_type>
    /// <access_token>`, renewed 10 s before it expires.
    public func readToken(_ answer: InquiryAnswer, nowMillis: Int64) throws(InquiryTokenError) -> AccessToken {
        if answer.status == 401 || answer.status == 403 {
            throw InquiryTokenError(
                "Unlimint refused terminal_code and terminal_password: \(InquiryText.errorStatus(answer, fields: ["name", "message"]))",
                unauthorized: true)
        }
        guard answer.status == 200 else {
            throw InquiryTokenError("the token request answered \(InquiryText.errorStatus(answer, fields: ["name", "message"]))")
        }
        guard case .success(let body) = answer.jsonObject() else { throw InquiryTokenError("the token answer is not a JSON object") }
        guard let token = body.string("access_token"), InquiryText.isHeaderSafe(token) else {
            throw InquiryTokenError("the token answer has no usable access_token")
        }
        guard let type = body.string("token_type"), InquiryText.isHeaderSafe(type), !type.contains(" ") else {
            throw InquiryTokenError("the token answer has no usable token_type")
        }
        guard let text = body["expires_in"]?.scalarText, let seconds = Int64(text), (1...31_536_000).contains(seconds) else {
            throw InquiryTokenError("the token answer's expires_in is not a number of seconds")
        }
        return AccessToken(authorization: "\(type) \(token)", renewAtMillis: nowMillis + seconds * 1000 - Self.renewalMarginMillis)
    }

    // MARK: Request

    /// `GET {url}/api/payments?request_id=..&merchant_order_id=..&start_time=..&end_time=..&max_count=100`
    /// with the account's token.
    public func request(for order: InquiryOrder, context: InquiryContext) throws(InquiryRefusal) -> InquiryRequest {
        guard let token = context.token else { throw InquiryRefusal("Unlimint is asked with a token, and none was taken") }
        let window = Self.window(createdAtMillis: order.createdAtMillis, nowMillis: context.nowMillis)
        let query = InquiryURL.query([
            ("request_id", context.requestID),
            ("merchant_order_id", order.orderRef),
            ("start_time", InquiryText.utcSeconds(epochMilliseconds: window.start)),
            ("end_time", InquiryText.utcSeconds(epochMilliseconds: window.end)),
            ("max_count", "100"),
        ])
        return InquiryRequest(
            method: "GET",
            url: InquiryURL.joining(baseURL, "/api/payments") + "?" + query,
            headers: [InquiryHeader("Authorization", token.authorization)]
        )
    }

    /// The search window, under 7 days: from an hour before ipnd first stored the order to
    /// the earlier of a minute from now and 7 days less a minute after that start. (Without a
    /// start Unlimint searches only the last 24 hours.)
    static func window(createdAtMillis: Int64, nowMillis: Int64) -> (start: Int64, end: Int64) {
        let start = createdAtMillis - 3_600_000
        return (start, min(nowMillis + 60_000, start + windowMillis))
    }

    // MARK: Answer

    public func read(_ answer: InquiryAnswer, to request: InquiryRequest, order: InquiryOrder) -> InquiryReading {
        if answer.status == 401 { return .unauthorized("Unlimint answered HTTP 401: the token was refused") }
        guard answer.status == 200 else {
            return .error(InquiryText.errorStatus(answer, fields: ["name", "message"]), providerStatus: nil)
        }
        let body: JSONObject
        switch answer.jsonObject() {
        case .success(let object): body = object
        case .failure(let error): return .error("the answer is not a JSON object: \(error)", providerStatus: nil)
        }
        guard case .array(let items, _)? = body["data"] else { return .error("the answer has no data list", providerStatus: nil) }
        var payments: [(created: Int64?, fact: VerifiedNotification)] = []
        for (index, item) in items.enumerated() {
            guard let object = item.object else { return .error("data[\(index)] is not an object", providerStatus: nil) }
            // Only this order's payments: a search by merchant order id should list no other.
            guard object.object("merchant_order")?["id"]?.scalarText == order.orderRef else { continue }
            do {
                let fact = try Unlimint.notification(from: object)
                let created = object.object("payment_data")?.string("created").flatMap(Timestamp.parse)
                payments.append((created, fact))
            } catch {
                return .error("data[\(index)] cannot be read: \(error.detail)", providerStatus: nil)
            }
        }
        // **Assumption** (inquiries.md section 3): an order Unlimint does not know answers 200
        // with an empty `data`; this line is the one place that says so.
        guard !payments.isEmpty else { return .notFound(providerStatus: nil) }
        if payments.count > 1 {
            // Recorded oldest first, so that the newest state is the one that stays.
            guard payments.allSatisfy({ $0.created != nil }) else {
                return .error("several payments are listed, and not every payment_data.created is a time to order them by", providerStatus: nil)
            }
            payments = payments.enumerated().sorted { ($0.element.created ?? 0, $0.offset) < ($1.element.created ?? 0, $1.offset) }.map(\.element)
        }
        let facts = payments.map(\.fact)
        return .checked(facts, providerStatus: facts[facts.count - 1].providerStatus)
    }
}
