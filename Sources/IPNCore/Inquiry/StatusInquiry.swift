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

/// Asking a provider's status API what became of an order (product.md section 12,
/// inquiries.md). Like `verify(_:)` for callbacks, every piece here is pure: a provider builds
/// the bytes of the request and reads the bytes of the answer into the same
/// `VerifiedNotification`s its callbacks produce; the reconciler does the I/O.

/// One header field of a request ipnd sends or of an answer it reads.
public struct InquiryHeader: Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    public var description: String { "\(name): \(value)" }
}

extension Array where Element == InquiryHeader {
    /// The first field named `name`, compared without regard to case.
    public func first(named name: String) -> String? {
        first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// A request ipnd sends to a provider's status API, to the byte.
public struct InquiryRequest: Sendable, Equatable {
    /// `GET` or `POST`.
    public var method: String
    /// The absolute URL: scheme, host, port, path and query. Never holds a credential, so it
    /// is what inquiry records, logs and stored notifications show as the request's target.
    public var url: String
    /// The header fields, in order (the client adds `Host`, `Content-Length` and `User-Agent`).
    public var headers: [InquiryHeader]
    public var body: [UInt8]

    public init(method: String, url: String, headers: [InquiryHeader], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// The path and query of `url` (`/ams/api/v1/payments/inquiryPayment`): what the request
    /// line carries, and what Antom signs.
    public var pathAndQuery: String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return "/" }
        return String(rest[slash...])
    }
}

/// What a provider's status API answered: at most the reconciler's body limit (1 MiB) of it.
public struct InquiryAnswer: Sendable, Equatable {
    public var status: Int
    public var headers: [InquiryHeader]
    public var body: [UInt8]

    public init(status: Int, headers: [InquiryHeader] = [], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: Int, headers: [InquiryHeader] = [], text: String) {
        self.init(status: status, headers: headers, body: Array(text.utf8))
    }
}

/// What ipnd knows of an order when it asks about it.
public struct InquiryOrder: Sendable, Equatable {
    public var orderRef: String
    /// The provider's transaction id, once a notification told it (Citcon is asked by it).
    public var providerTxnID: String?
    public var state: OrderState
    /// The amount a notification recorded.
    public var amount: Money?
    /// The amount registered with `orders expect`.
    public var expected: Money?
    /// When ipnd first stored the order, in Unix milliseconds (Unlimint's search window).
    public var createdAtMillis: Int64

    public init(
        orderRef: String, providerTxnID: String? = nil, state: OrderState, amount: Money? = nil, expected: Money? = nil,
        createdAtMillis: Int64
    ) {
        self.orderRef = orderRef
        self.providerTxnID = providerTxnID
        self.state = state
        self.amount = amount
        self.expected = expected
        self.createdAtMillis = createdAtMillis
    }
}

/// The moment and the fresh values one inquiry uses, given rather than drawn inside the
/// provider so that a request can be built twice to the same bytes (tests).
public struct InquiryContext: Sendable, Equatable {
    /// Now, in Unix milliseconds (Antom's `request-time`, Unlimint's window).
    public var nowMillis: Int64
    /// A fresh UUID text (Unlimint's `request_id`).
    public var requestID: String
    /// The account's current token, for providers that need one (Unlimint, Citcon).
    public var token: AccessToken?

    public init(nowMillis: Int64, requestID: String, token: AccessToken? = nil) {
        self.nowMillis = nowMillis
        self.requestID = requestID
        self.token = token
    }
}

/// A bearer token a provider issued, as the reconciler caches it per account.
public struct AccessToken: Sendable, Equatable {
    /// The whole `Authorization` header value (`Bearer eyJ...`). A credential: never logged.
    public var authorization: String
    /// From this moment (Unix milliseconds) the token is renewed before use: its expiry less
    /// the provider's margin (Unlimint 10 s, Citcon 60 s).
    public var renewAtMillis: Int64

    public init(authorization: String, renewAtMillis: Int64) {
        self.authorization = authorization
        self.renewAtMillis = renewAtMillis
    }
}

/// What an answer says, read by the provider's rules (inquiries.md).
public enum InquiryReading: Sendable, Equatable {
    /// Facts to record through the one write path, oldest first; `providerStatus` is the
    /// status word the inquiry record shows (the newest fact's).
    case facts([VerifiedNotification], providerStatus: String)
    /// The provider knows the order, and it has not settled yet: outcome `no_news`.
    case notSettled(providerStatus: String)
    /// The provider does not know the order: outcome `not_found`.
    case notFound(providerStatus: String?)
    /// No usable answer (an error status, a body that does not parse, an unexpected reply):
    /// outcome `error`. The message says which, never with a credential in it.
    case error(String, providerStatus: String?)
    /// The provider refused the request itself as malformed, which only the account's settings
    /// can cause (iPay88's `Invalid parameters`): outcome `error`, logged at error since asking
    /// again changes nothing until the settings do.
    case misconfigured(String, providerStatus: String?)
    /// A signed answer (Antom) whose signature is missing or wrong: outcome `bad_signature`,
    /// nothing in it read.
    case badSignature(String)
    /// The provider refused the credential or token (401): outcome `error` ("unauthorized"),
    /// after the reconciler renewed a token once where the provider has one.
    case unauthorized(String)
}

/// ipnd lacks what the provider needs to be asked about this order (outcome `cannot_ask`).
public struct InquiryRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A token request that gave no usable token.
public struct InquiryTokenError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    /// The provider refused the account's credential (401 or 403).
    public let unauthorized: Bool
    public init(_ message: String, unauthorized: Bool = false) {
        self.message = message
        self.unauthorized = unauthorized
    }
    public var description: String { message }
}

/// One provider account's status inquiry, built from the account's `inquiry` settings.
public protocol StatusInquiry: Sendable {
    /// The account's `inquiry.url`, or the provider's default.
    var baseURL: String { get }
    /// The token request, for providers that ask with a token (Unlimint, Citcon); nil otherwise.
    func tokenRequest() -> InquiryRequest?
    /// Reads the token answer (`tokenRequest`'s); `nowMillis` dates its expiry.
    func readToken(_ answer: InquiryAnswer, nowMillis: Int64) throws(InquiryTokenError) -> AccessToken
    /// What keeps `order` from being asked at all (outcome `cannot_ask`), checked before any
    /// token is taken; nil when it can be asked.
    func refusal(for order: InquiryOrder) -> InquiryRefusal?
    /// The request asking about `order`.
    func request(for order: InquiryOrder, context: InquiryContext) throws(InquiryRefusal) -> InquiryRequest
    /// Reads the answer to `request` about `order`. Verifies a signed answer before anything in
    /// it is read.
    func read(_ answer: InquiryAnswer, to request: InquiryRequest, order: InquiryOrder) -> InquiryReading
    /// What `check-config` shows of the inquiry settings, with secrets redacted.
    var summary: [(key: String, value: String)] { get }
}

extension StatusInquiry {
    public func refusal(for order: InquiryOrder) -> InquiryRefusal? { nil }
    public func tokenRequest() -> InquiryRequest? { nil }
    public func readToken(_ answer: InquiryAnswer, nowMillis: Int64) throws(InquiryTokenError) -> AccessToken {
        throw InquiryTokenError("this provider asks without a token")
    }
}

/// An account's `inquiry` section, as the config loader resolved it (secret files read).
public struct InquirySettings: Sendable {
    /// Where the section sits in the config: `providers.alipay[0].inquiry`.
    public let keyPath: String
    /// `inquiry.url`, when set (checked: https, or http to a loopback host).
    public var url: String?
    /// The provider's `inquiryKeys`, by name; secrets resolved from `_file`.
    public var strings: [String: String]

    public init(keyPath: String, url: String? = nil, strings: [String: String] = [:]) {
        self.keyPath = keyPath
        self.url = url
        self.strings = strings
    }

    public func string(_ key: String) -> String? { strings[key] }

    public func requiredString(_ key: String) throws(AccountConfigError) -> String {
        guard let value = strings[key], !value.isEmpty else { throw error(key, "is required") }
        return value
    }

    /// An error about `key` of this section, naming its full path.
    public func error(_ key: String, _ message: String) -> AccountConfigError {
        AccountConfigError(key: "\(keyPath).\(key)", message: message)
    }
}

extension NotificationProvider {
    /// A provider that cannot be asked takes no inquiry keys.
    public static var inquiryKeys: [AccountKey] { [] }
    /// An account with no `inquiry` section is never asked.
    public var inquiry: (any StatusInquiry)? { nil }
}
