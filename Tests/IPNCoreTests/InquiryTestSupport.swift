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

import IPNCore
import Testing

/// Fixed moments and values, so every request is built to the same bytes.
enum InquiryFixture {
    /// 2026-11-21T04:01:02.345Z.
    static let nowMillis: Int64 = 1_795_233_662_345
    /// 2026-11-20T10:30:15.999Z: when ipnd first stored the order.
    static let createdAtMillis: Int64 = 1_795_170_615_999
    static let requestID = "7d3c2a10-5b8e-4f61-9a0d-2e4c6b8f1a37"

    static func context(token: AccessToken? = nil, nowMillis: Int64 = nowMillis) -> InquiryContext {
        InquiryContext(nowMillis: nowMillis, requestID: requestID, token: token)
    }

    static func order(
        _ ref: String, txnID: String? = nil, state: OrderState = .pending, amount: Money? = nil, expected: Money? = nil,
        createdAtMillis: Int64 = createdAtMillis
    ) -> InquiryOrder {
        InquiryOrder(orderRef: ref, providerTxnID: txnID, state: state, amount: amount, expected: expected, createdAtMillis: createdAtMillis)
    }

    static func answer(_ status: Int = 200, _ text: String, headers: [InquiryHeader] = []) -> InquiryAnswer {
        InquiryAnswer(status: status, headers: headers, text: text)
    }
}

/// What a reading says, for expectations that read as the table rows of inquiries.md.
extension InquiryReading {
    /// The facts, or none when the reading is anything else.
    var facts: [VerifiedNotification] {
        if case .facts(let facts, _) = self { return facts }
        return []
    }

    /// The one fact of a reading that must carry exactly one.
    func onlyFact(sourceLocation: SourceLocation = #_sourceLocation) throws -> VerifiedNotification {
        let facts = facts
        try #require(facts.count == 1, "expected one fact, got \(self)", sourceLocation: sourceLocation)
        return facts[0]
    }

    /// The outcome an inquiry record would show for this reading (product.md section 12).
    var outcome: String {
        switch self {
        case .facts: "facts"
        case .notSettled: "no_news"
        case .notFound: "not_found"
        case .error, .misconfigured: "error"
        case .badSignature: "bad_signature"
        case .unauthorized: "unauthorized"
        }
    }

    /// The message of an error, bad signature or unauthorized reading.
    var message: String? {
        switch self {
        case .error(let message, _), .misconfigured(let message, _), .badSignature(let message), .unauthorized(let message): message
        default: nil
        }
    }

    var providerStatus: String? {
        switch self {
        case .facts(_, let status), .notSettled(let status): status
        case .notFound(let status), .error(_, let status), .misconfigured(_, let status): status
        case .badSignature, .unauthorized: nil
        }
    }
}

extension InquiryRequest {
    var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The header fields as `name: value` lines, in order.
    var headerLines: [String] { headers.map(\.description) }
}

/// The error `body` threw, or nil when it returned.
func thrown<Value, Failure: Error>(_ body: () throws(Failure) -> Value) -> Failure? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

/// What a refused request says, or nil when it is built.
func refusal(_ build: () throws(InquiryRefusal) -> InquiryRequest) -> String? {
    thrown(build)?.message
}

extension StatusInquiry {
    /// Reads `text`, answered with `status`, to this inquiry's request about `order` under the
    /// fixed context (with `token`, for providers that ask with one).
    func reading(_ text: String, status: Int = 200, order: InquiryOrder, token: AccessToken? = nil) throws -> InquiryReading {
        let request = try request(for: order, context: InquiryFixture.context(token: token))
        return read(InquiryFixture.answer(status, text), to: request, order: order)
    }
}

/// Token answers each refused with its message, not as an unauthorized credential, and with
/// none of `secrets` in any message: `cases` are (HTTP status, body, message).
func expectTokenRefusals(
    _ inquiry: some StatusInquiry, _ cases: [(Int, String, String)], hiding secrets: [String],
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    for (status, body, message) in cases {
        let error = try #require(
            thrown { () throws(InquiryTokenError) in try inquiry.readToken(InquiryFixture.answer(status, body), nowMillis: 0) },
            "\(body)", sourceLocation: sourceLocation)
        #expect(error.message == message, sourceLocation: sourceLocation)
        #expect(!error.unauthorized, sourceLocation: sourceLocation)
        for secret in secrets { #expect(!error.message.contains(secret), sourceLocation: sourceLocation) }
    }
}
