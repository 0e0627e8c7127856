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

/// iPay88's `enquiry.asp` re-query (inquiries.md section 1): a form post of the merchant code,
/// the reference and the amount, answered with one line of plain text. Its authenticity rests
/// on TLS to the configured host.
public struct IPay88Inquiry: StatusInquiry {
    public let baseURL: String
    /// The account's `merchant_code`: the re-query needs no credential of its own.
    let merchantCode: String

    /// The account's inquiry, from its resolved `inquiry` section.
    public init(settings: InquirySettings, merchantCode: String) {
        self.init(merchantCode: merchantCode, url: settings.url ?? IPay88.defaultInquiryURL)
    }

    public init(merchantCode: String, url: String = IPay88.defaultInquiryURL) {
        self.merchantCode = merchantCode
        baseURL = url
    }

    public var summary: [(key: String, value: String)] {
        [("url", baseURL), ("merchant_code", merchantCode + " (the account's)")]
    }

    // MARK: Request

    /// `POST` of `MerchantCode=..&RefNo=..&Amount=..`, the amount as `askedAmount` writes it.
    public func request(for order: InquiryOrder, context: InquiryContext) throws(InquiryRefusal) -> InquiryRequest {
        let asked = try Self.askedAmount(order)
        return InquiryRequest(
            method: "POST",
            url: baseURL,
            headers: [InquiryHeader("Content-Type", "application/x-www-form-urlencoded")],
            body: FormBody.encode([("MerchantCode", merchantCode), ("RefNo", order.orderRef), ("Amount", asked.text)])
        )
    }

    /// The amount iPay88 is asked with: the order's expected amount, else its recorded one,
    /// with two decimals, `.` as the separator and no thousands separator (`1278.99`).
    static func askedAmount(_ order: InquiryOrder) throws(InquiryRefusal) -> (text: String, money: Money) {
        guard let money = order.expected ?? order.amount else {
            throw InquiryRefusal("iPay88 is asked with the amount; register an expectation")
        }
        guard let text = twoDecimals(money) else {
            throw InquiryRefusal("iPay88 is asked with two decimals, and \(money) cannot be written with two")
        }
        return (text, money)
    }

    /// `money` in major units with exactly two decimals; nil when that would drop a digit
    /// (a currency of three or four decimals, with a non-zero last one).
    static func twoDecimals(_ money: Money) -> String? {
        guard money.minor >= 0, let exponent = try? Currency.exponent(of: money.currency) else { return nil }
        var hundredths = money.minor
        if exponent <= 2 {
            for _ in exponent..<2 {
                let (product, overflow) = hundredths.multipliedReportingOverflow(by: 10)
                guard !overflow else { return nil }
                hundredths = product
            }
        } else {
            for _ in 2..<exponent {
                guard hundredths % 10 == 0 else { return nil }
                hundredths /= 10
            }
        }
        let cents = hundredths % 100
        return "\(hundredths / 100)." + (cents < 10 ? "0" : "") + "\(cents)"
    }

    // MARK: Answer

    /// The replies that mean "iPay88 knows the order and it has not settled yet" (reported by
    /// integrators, with either apostrophe).
    static let notSettledReplies: Set<String> = [
        "Payment Pending", "Haven't Paid (0)", "Haven't Paid (1)", "Haven\u{2019}t Paid (0)", "Haven\u{2019}t Paid (1)",
    ]

    public func read(_ answer: InquiryAnswer, to request: InquiryRequest, order: InquiryOrder) -> InquiryReading {
        if answer.status == 401 { return .unauthorized("iPay88 answered HTTP 401") }
        guard answer.status == 200 else { return .error(InquiryText.status(answer.status), providerStatus: nil) }
        let body = Self.trimmed(answer.body)
        guard let reply = String(validating: body, as: UTF8.self) else {
            return .error(InquiryText.unexpectedReply(body), providerStatus: nil)
        }
        switch reply {
        case "00":
            return fact(order, status: "1", reply: reply)
        case "Payment fail", "M88Admin":
            return fact(order, status: "0", reply: reply)
        case "Incorrect amount":
            return fact(order, status: nil, reply: reply)
        case "Record not found":
            return .notFound(providerStatus: reply)
        case _ where Self.notSettledReplies.contains(reply):
            return .notSettled(providerStatus: reply)
        case "Invalid parameters":
            return .misconfigured("iPay88 answered Invalid parameters: the request is wrong, usually the merchant code", providerStatus: reply)
        default:
            return .error(InquiryText.unexpectedReply(body), providerStatus: nil)
        }
    }

    /// The fact a reply means: a payment result with `status` (`1` paid, `0` failed) as the
    /// Backend Post of the same result carries it without a `TransId`, or, for `status` nil,
    /// iPay88 holding the reference with another amount.
    private func fact(_ order: InquiryOrder, status: String?, reply: String) -> InquiryReading {
        let asked: (text: String, money: Money)
        do {
            asked = try Self.askedAmount(order)
        } catch {
            // request(for:) refused this order, so no answer to it can be read.
            return .error("the answer is to a request this order cannot make: \(error.message)", providerStatus: reply)
        }
        let digits = String(asked.text.filter { $0 != "." })
        let fact = VerifiedNotification(
            kind: .payment,
            orderRef: order.orderRef,
            providerTxnID: nil,
            dedupKey: IPay88.referenceDedupKey(refNo: order.orderRef, status: status ?? "amount_differs", amountDigits: digits),
            providerStatus: status ?? reply,
            effect: status.map(IPay88.effect(ofStatus:)) ?? .amountDiffers,
            amount: asked.money,
            detail: ["requery_reply": reply]
        )
        return .checked([fact], providerStatus: fact.providerStatus)
    }

    /// `bytes` without leading and trailing ASCII whitespace.
    static func trimmed(_ bytes: [UInt8]) -> [UInt8] {
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0B || byte == 0x0C }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return [] }
        return Array(bytes[first...last])
    }
}
