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

import Foundation
import IPNCore
import Testing

private let merchantCode = "M00003"
private let merchantKey = "apple"
private let inquiry = IPay88Inquiry(merchantCode: merchantCode)
private let myr = Money(minor: 127_899, currency: "MYR")
private let order = InquiryFixture.order("A00000001", expected: myr)

private func read(_ text: String, status: Int = 200, order: InquiryOrder = order) throws -> InquiryReading {
    try inquiry.reading(text, status: status, order: order)
}

@Suite("iPay88 re-query (inquiries.md section 1)")
struct IPay88InquiryTests {
    // MARK: Request

    @Test("the request, to the byte: POST of MerchantCode, RefNo and the expected amount with two decimals")
    func requestBytes() throws {
        let request = try inquiry.request(for: order, context: InquiryFixture.context())
        #expect(request.method == "POST")
        #expect(request.url == "https://payment.ipay88.com.kh/epayment/enquiry.asp")
        #expect(request.headerLines == ["Content-Type: application/x-www-form-urlencoded"])
        #expect(request.bodyText == "MerchantCode=M00003&RefNo=A00000001&Amount=1278.99")
    }

    @Test("values are form-encoded, and the configured url is used as it is")
    func encodingAndURL() throws {
        let section = InquirySettings(keyPath: "providers.ipay88[0].inquiry", url: "https://payment.ipay88.com.my/epayment/enquiry.asp")
        let configured = IPay88Inquiry(settings: section, merchantCode: "M 1&")
        let request = try configured.request(for: InquiryFixture.order("A&B=C D/é", expected: myr), context: InquiryFixture.context())
        #expect(request.url == "https://payment.ipay88.com.my/epayment/enquiry.asp")
        #expect(request.bodyText == "MerchantCode=M+1%26&RefNo=A%26B%3DC+D%2F%C3%A9&Amount=1278.99")
    }

    @Test("the amount: the expectation first, else the recorded amount; neither is cannot_ask")
    func amountRule() throws {
        let recorded = Money(minor: 500, currency: "MYR")
        let both = try inquiry.request(for: InquiryFixture.order("R1", amount: recorded, expected: myr), context: InquiryFixture.context())
        #expect(both.bodyText.hasSuffix("&Amount=1278.99"))
        let onlyRecorded = try inquiry.request(for: InquiryFixture.order("R1", amount: recorded), context: InquiryFixture.context())
        #expect(onlyRecorded.bodyText.hasSuffix("&Amount=5.00"))
        #expect(refusal { () throws(InquiryRefusal) in try inquiry.request(for: InquiryFixture.order("R1"), context: InquiryFixture.context()) }
            == "iPay88 is asked with the amount; register an expectation")
    }

    @Test("two decimals whatever the currency's exponent, never a dropped digit", arguments: [
        (Money(minor: 1, currency: "MYR"), "0.01"),
        (Money(minor: 100, currency: "KHR"), "1.00"),
        (Money(minor: 0, currency: "USD"), "0.00"),
        (Money(minor: 274_116, currency: "MYR"), "2741.16"),
        (Money(minor: 100, currency: "JPY"), "100.00"),
        (Money(minor: 1230, currency: "KWD"), "1.23"),
    ])
    func twoDecimals(money: Money, text: String) throws {
        let request = try inquiry.request(for: InquiryFixture.order("R1", expected: money), context: InquiryFixture.context())
        #expect(request.bodyText == "MerchantCode=M00003&RefNo=R1&Amount=\(text)")
    }

    @Test("an amount two decimals cannot carry is not asked about")
    func threeDecimals() {
        let message = refusal { () throws(InquiryRefusal) in
            try inquiry.request(for: InquiryFixture.order("R1", expected: Money(minor: 1234, currency: "KWD")), context: InquiryFixture.context())
        }
        #expect(message == "iPay88 is asked with two decimals, and 1.234 KWD cannot be written with two")
    }

    // MARK: Answers

    @Test("00: a paid fact with the amount asked, status word 1, dedup RefNo|1|AmountDigits")
    func paid() throws {
        let fact = try read("00").onlyFact()
        #expect(fact == VerifiedNotification(
            kind: .payment, orderRef: "A00000001", providerTxnID: nil, dedupKey: "A00000001|1|127899", providerStatus: "1",
            effect: .transition(.paid), amount: myr, detail: ["requery_reply": "00"]))
        #expect(try read("00").providerStatus == "1")
    }

    @Test("whitespace around the reply is trimmed (it is often served as text/html with a line break)")
    func trimmed() throws {
        #expect(try read("\r\n 00\t\n").onlyFact().effect == .transition(.paid))
        #expect(try read("\n Record not found \r\n").outcome == "not_found")
    }

    @Test("the recorded amount and its currency when no expectation is registered")
    func paidWithRecordedAmount() throws {
        let order = InquiryFixture.order("R7", amount: Money(minor: 100, currency: "KHR"))
        let fact = try read("00", order: order).onlyFact()
        #expect(fact.amount == Money(minor: 100, currency: "KHR"))
        #expect(fact.dedupKey == "R7|1|100")
    }

    @Test("Payment fail and M88Admin: a failed fact, status word 0, dedup RefNo|0|AmountDigits", arguments: ["Payment fail", "M88Admin"])
    func failed(reply: String) throws {
        let fact = try read(reply).onlyFact()
        #expect(fact.effect == .transition(.failed))
        #expect(fact.providerStatus == "0")
        #expect(fact.dedupKey == "A00000001|0|127899")
        #expect(fact.amount == myr)
        #expect(fact.detail["requery_reply"] == reply)
    }

    @Test("Incorrect amount: no state, the amount_differs effect, dedup RefNo|amount_differs|AmountDigits")
    func incorrectAmount() throws {
        let fact = try read("Incorrect amount").onlyFact()
        #expect(fact.effect == .amountDiffers)
        #expect(fact.dedupKey == "A00000001|amount_differs|127899")
        #expect(fact.providerStatus == "Incorrect amount")
        #expect(fact.amount == myr)
        #expect(fact.orderRef == "A00000001")
    }

    @Test("Record not found: not_found, no fact")
    func notFound() throws {
        #expect(try read("Record not found") == .notFound(providerStatus: "Record not found"))
    }

    @Test("not settled yet, with either apostrophe: no_news", arguments: [
        "Payment Pending", "Haven't Paid (0)", "Haven't Paid (1)", "Haven\u{2019}t Paid (0)", "Haven\u{2019}t Paid (1)",
    ])
    func notSettled(reply: String) throws {
        #expect(try read(reply) == .notSettled(providerStatus: reply))
    }

    @Test("Invalid parameters: an error saying the request is wrong")
    func invalidParameters() throws {
        let reading = try read("Invalid parameters")
        #expect(reading.outcome == "error")
        guard case .misconfigured = reading else {
            Issue.record("Invalid parameters is the account's settings, logged at error: \(reading)")
            return
        }
        #expect(reading.message?.contains("usually the merchant code") == true)
        #expect(reading.providerStatus == "Invalid parameters")
    }

    @Test("anything else is an unexpected reply quoting its first 64 bytes, escaped")
    func unexpected() throws {
        let html = "<html><body>Payment successful, thank you for shopping with us today</body></html>"
        let reading = try read(html)
        #expect(reading.message == "unexpected reply \"<html><body>Payment successful, thank you for shopping with us t\"…")
        #expect(try read("00 ").outcome == "facts")  // trimmed, so still exact
        #expect(try read("000").outcome == "error")
        #expect(try read("payment fail").outcome == "error")  // exact, as iPay88 writes it
        let request = try inquiry.request(for: order, context: InquiryFixture.context())
        let binary = inquiry.read(InquiryAnswer(status: 200, body: [0x30, 0x30, 0xFF, 0x1B, 0x22]), to: request, order: order)
        #expect(binary.message == #"unexpected reply "00\xff\x1b\"""#)
        #expect(try read("").message == #"unexpected reply """#)
    }

    @Test("an error status is an error, a 401 unauthorized; neither body is read")
    func statuses() throws {
        #expect(try read("00", status: 500) == .error("HTTP 500", providerStatus: nil))
        #expect(try read("00", status: 302) == .error("HTTP 302", providerStatus: nil))
        #expect(try read("00", status: 401).outcome == "unauthorized")
    }

    @Test("a reference no notification could carry is an error, not a fact")
    func limits() throws {
        let long = InquiryFixture.order(String(repeating: "R", count: 300), expected: myr)
        #expect(try read("00", order: long).message == "the answer's order reference is 300 bytes, more than 256")
        let control = InquiryFixture.order("R\u{7}1", expected: myr)
        #expect(try read("00", order: control).message == "the answer's order reference contains a control character")
    }

    // MARK: The later Backend Post

    @Test("the re-query's fact has the key of the TransId-less Backend Post of the same result", arguments: [("1", "00"), ("0", "Payment fail")])
    func sameKeyAsCallback(status: String, reply: String) throws {
        let fields = IPay88.SignedFields(
            merchantCode: merchantCode, paymentID: "2", refNo: "A00000001", amount: "1,278.99", currency: "MYR", status: status)
        let body = FormBody.encode([
            ("MerchantCode", merchantCode), ("PaymentId", "2"), ("RefNo", fields.refNo), ("Amount", fields.amount),
            ("Currency", "MYR"), ("TransId", ""), ("Status", status),
            ("Signature", IPay88.signature(fields, merchantKey: merchantKey, algorithm: .sha256)),
        ])
        let callback = try IPay88(merchantCode: merchantCode, merchantKeys: [merchantKey]).verify(
            RawRequest(target: "/ipn/ipay88", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: body))
        let fact = try read(reply).onlyFact()
        #expect(fact.dedupKey == callback.dedupKey)
        #expect(fact.effect == callback.effect)
        #expect(fact.amount == callback.amount)
        #expect(fact.orderRef == callback.orderRef)
        #expect(fact.providerStatus == callback.providerStatus)
        #expect(fact.kind == callback.kind)
    }

    // MARK: Config

    @Test("the account builds its inquiry from an inquiry section, and has none without one")
    func built() throws {
        var settings = AccountSettings(
            provider: "ipay88", account: "default", keyPath: "providers.ipay88[0]", lists: ["merchant_key": [merchantKey]],
            strings: ["merchant_code": merchantCode])
        #expect(try IPay88(settings: settings).inquiry == nil)
        #expect(IPay88.inquiryKeys.isEmpty)
        settings.inquiry = InquirySettings(keyPath: "providers.ipay88[0].inquiry")
        let built = try #require(try IPay88(settings: settings).inquiry)
        #expect(built.baseURL == IPay88.defaultInquiryURL)
        #expect(built.summary.map { "\($0.key)=\($0.value)" } == [
            "url=https://payment.ipay88.com.kh/epayment/enquiry.asp", "merchant_code=M00003 (the account's)",
        ])
        #expect(built.tokenRequest() == nil)
        let request = try built.request(for: order, context: InquiryFixture.context())
        #expect(request.bodyText == "MerchantCode=M00003&RefNo=A00000001&Amount=1278.99")
    }
}
