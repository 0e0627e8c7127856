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
import IPNStore

/// The wall clock, in Unix milliseconds and as stored text.
enum WallClock {
    static func millis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
    static func text(_ millis: Int64 = WallClock.millis()) -> String { Timestamp.format(epochMilliseconds: millis) }
}

/// One inquiry asked, before it is recorded.
public struct InquiryAttempt: Sendable, Equatable {
    public var url: String
    public var httpStatus: Int?
    public var providerStatus: String?
    public var result: InquiryResult
    public var durationMs: Int64
    /// The provider asked to be left alone until this moment (Unix ms): a 429 or 503 with
    /// `Retry-After`.
    public var retryAfterMillis: Int64?
    /// The provider refused the account's credential (401), after a fresh token where it has one.
    public var unauthorized: Bool
    /// The account's settings are wrong (a refused credential, a request refused as malformed):
    /// the log says so at error.
    public var misconfigured = false
    /// What the log line adds to the record's `error` (never a credential).
    public var detail: String?
}

/// Asks a provider about one order, end to end but for the store: the token (fetched once,
/// renewed once on a 401), the request the provider's `StatusInquiry` builds, the HTTP call, and
/// the reading of the answer into the facts or outcome to record. The daemon's reconciler and
/// `ipnd orders reconcile` share it.
public struct Inquirer: Sendable {
    let client: InquiryClient
    let tokens: TokenCache

    public init(client: InquiryClient, tokens: TokenCache) {
        self.client = client
        self.tokens = tokens
    }

    /// Asks `inquiry`'s provider about `order` of account `scope`, each HTTP exchange within
    /// `timeout`.
    public func ask(_ inquiry: any StatusInquiry, scope: Scope, order: InquiryOrder, timeout: Duration) async -> InquiryAttempt {
        let started = ContinuousClock.now
        var attempt = await attempt(inquiry, scope: scope, order: order, timeout: timeout, renewedToken: false)
        if attempt.unauthorized, inquiry.tokenRequest() != nil, attempt.renewable {
            // The token may have expired early or been revoked: one new token, one more try.
            attempt = await self.attempt(inquiry, scope: scope, order: order, timeout: timeout, renewedToken: true)
        }
        let elapsed = ContinuousClock.now - started
        var result = attempt.value
        result.durationMs = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        return result
    }

    private struct Try {
        var value: InquiryAttempt
        /// Whether the 401 came to the inquiry with a cached token (worth a new one).
        var renewable: Bool
        var unauthorized: Bool { value.unauthorized }
    }

    private func attempt(
        _ inquiry: any StatusInquiry, scope: Scope, order: InquiryOrder, timeout: Duration, renewedToken: Bool
    ) async -> Try {
        let baseURL = inquiry.baseURL
        if let refusal = inquiry.refusal(for: order) {
            return Try(value: InquiryAttempt(
                url: baseURL, httpStatus: nil, providerStatus: nil, result: .cannotAsk(refusal.message), durationMs: 0,
                retryAfterMillis: nil, unauthorized: false), renewable: false)
        }
        var token: AccessToken?
        if inquiry.tokenRequest() != nil {
            switch await tokens.token(for: scope, inquiry: inquiry, nowMillis: WallClock.millis(), timeout: timeout) {
            case .success(let value):
                token = value
            case .failure(let failure):
                var attempt = InquiryAttempt(
                    url: baseURL, httpStatus: failure.httpStatus, providerStatus: nil,
                    result: .error(failure.unauthorized ? Self.unauthorized : failure.message),
                    durationMs: 0, retryAfterMillis: failure.retryAfterMillis, unauthorized: failure.unauthorized)
                if failure.unauthorized {
                    attempt.misconfigured = true
                    attempt.detail = failure.message
                }
                return Try(value: attempt, renewable: false)
            }
        }
        let now = WallClock.millis()
        let request: InquiryRequest
        do throws(InquiryRefusal) {
            request = try inquiry.request(for: order, context: InquiryContext(nowMillis: now, requestID: UUID().uuidString.lowercased(), token: token))
        } catch {
            return Try(value: InquiryAttempt(
                url: baseURL, httpStatus: nil, providerStatus: nil, result: .cannotAsk(error.message), durationMs: 0,
                retryAfterMillis: nil, unauthorized: false), renewable: false)
        }
        let answer: InquiryAnswer
        do {
            answer = try await client.send(request, timeout: timeout)
        } catch let failure as InquiryClient.Failure {
            return Try(value: InquiryAttempt(
                url: request.url, httpStatus: nil, providerStatus: nil, result: .error(failure.message), durationMs: 0,
                retryAfterMillis: nil, unauthorized: false), renewable: false)
        } catch {
            return Try(value: InquiryAttempt(
                url: request.url, httpStatus: nil, providerStatus: nil, result: .error("cancelled"), durationMs: 0,
                retryAfterMillis: nil, unauthorized: false), renewable: false)
        }
        var attempt = InquiryAttempt(
            url: request.url, httpStatus: answer.status, providerStatus: nil, result: .error("no reading"), durationMs: 0,
            retryAfterMillis: Self.retryAfter(answer, now: WallClock.millis()), unauthorized: false)
        switch inquiry.read(answer, to: request, order: order) {
        case .facts(let facts, let status):
            attempt.providerStatus = status
            attempt.result = .facts(facts, answer: InquiryAnswerBytes(headers: Self.headersJSON(answer.headers), body: answer.body))
        case .notSettled(let status):
            attempt.providerStatus = status
            attempt.result = .notSettled
        case .notFound(let status):
            attempt.providerStatus = status
            attempt.result = .notFound
        case .error(let message, let status):
            attempt.providerStatus = status
            attempt.result = .error(message)
        case .misconfigured(let message, let status):
            attempt.providerStatus = status
            attempt.result = .error(message)
            attempt.misconfigured = true
        case .badSignature(let message):
            attempt.result = .badSignature(message)
        case .unauthorized(let message):
            attempt.result = .error(Self.unauthorized)
            attempt.unauthorized = true
            attempt.misconfigured = true
            attempt.detail = message
            if let token { await tokens.invalidate(scope, token: token) }
            return Try(value: attempt, renewable: !renewedToken && token != nil)
        }
        return Try(value: attempt, renewable: false)
    }

    /// An inquiry record's `error` when the provider refused the account's credential
    /// (product.md section 12, inquiries.md); what it refused is in the log line's `detail`.
    static let unauthorized = "unauthorized"

    /// Until when (Unix ms) a `429` or `503` answer with `Retry-After` asks to be left alone.
    static func retryAfter(_ answer: InquiryAnswer, now: Int64) -> Int64? {
        guard answer.status == 429 || answer.status == 503, let value = answer.headers.first(named: "Retry-After") else { return nil }
        return retryAfter(value, now: now)
    }

    /// `Retry-After` as a moment (Unix ms): seconds or an HTTP-date, at most an hour ahead.
    static func retryAfter(_ value: String, now: Int64) -> Int64? {
        let text = value.trimmingCharacters(in: .whitespaces)
        var at: Int64?
        if let seconds = Int64(text), seconds >= 0 {
            at = now + min(seconds, 3600) * 1000
        } else if let date = HTTPDate.parse(text, now: now) {
            at = min(max(date, now), now + 3_600_000)
        }
        return at
    }

    /// The answer's header fields as a JSON object text (repeated names joined with ", ").
    static func headersJSON(_ headers: [InquiryHeader]) -> String {
        var fields: [String: String] = [:]
        for header in headers {
            let name = header.name.lowercased()
            fields[name] = fields[name].map { "\($0), \(header.value)" } ?? header.value
        }
        return JSONText.object(fields)
    }
}
