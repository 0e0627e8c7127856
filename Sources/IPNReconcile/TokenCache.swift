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
import IPNStore

/// The bearer tokens of the accounts whose providers ask with one (Unlimint, Citcon): one per
/// account, kept in memory until its renewal time, fetched once however many inquiries wait for
/// it, and dropped when the provider answers 401 so that the next use fetches a new one.
public actor TokenCache {
    private var tokens: [Scope: AccessToken] = [:]
    private var fetching: [Scope: Task<Result<AccessToken, TokenFailure>, Never>] = [:]
    private let client: InquiryClient

    /// Why no token could be had.
    public struct TokenFailure: Error, Sendable, Equatable {
        public let message: String
        /// The provider's HTTP status, when it answered.
        public let httpStatus: Int?
        /// The provider refused the account's credential.
        public let unauthorized: Bool
        /// The provider asked to be left alone until then (Unix ms): a 429 or 503 with `Retry-After`.
        public var retryAfterMillis: Int64? = nil
    }

    public init(client: InquiryClient) {
        self.client = client
    }

    /// The account's token, fetched with `inquiry.tokenRequest()` when there is none or it is due
    /// for renewal at `nowMillis`.
    public func token(
        for scope: Scope, inquiry: any StatusInquiry, nowMillis: Int64, timeout: Duration
    ) async -> Result<AccessToken, TokenFailure> {
        if let token = tokens[scope], nowMillis < token.renewAtMillis { return .success(token) }
        if let running = fetching[scope] { return await running.value }
        guard let request = inquiry.tokenRequest() else {
            return .failure(TokenFailure(message: "this provider asks without a token", httpStatus: nil, unauthorized: false))
        }
        let client = client
        let task = Task { () -> Result<AccessToken, TokenFailure> in
            let answer: InquiryAnswer
            do {
                answer = try await client.send(request, timeout: timeout)
            } catch let failure as InquiryClient.Failure {
                return .failure(TokenFailure(message: "token: \(failure.message)", httpStatus: nil, unauthorized: false))
            } catch {
                return .failure(TokenFailure(message: "token: cancelled", httpStatus: nil, unauthorized: false))
            }
            do throws(InquiryTokenError) {
                return .success(try inquiry.readToken(answer, nowMillis: WallClock.millis()))
            } catch {
                return .failure(TokenFailure(
                    message: "token: \(error.message)", httpStatus: answer.status, unauthorized: error.unauthorized,
                    retryAfterMillis: Inquirer.retryAfter(answer, now: WallClock.millis())))
            }
        }
        fetching[scope] = task
        let result = await task.value
        fetching[scope] = nil
        if case .success(let token) = result { tokens[scope] = token }
        return result
    }

    /// Forgets the account's token (the provider refused it), unless a newer one replaced it.
    public func invalidate(_ scope: Scope, token: AccessToken) {
        if tokens[scope] == token { tokens[scope] = nil }
    }

    /// Forgets every token (a reload changed the credentials).
    public func clear() {
        tokens = [:]
    }
}
