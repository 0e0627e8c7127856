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

/// One payment provider's notification protocol, for one configured account.
///
/// A provider is one type in one file under `Providers/`: it declares the config keys an
/// account takes, verifies raw requests into `VerifiedNotification`s, says exactly which
/// bytes acknowledge or reject, and can build a correctly signed notification (its signer,
/// the inverse of `verify`). Registering it in `ProviderRegistry.all` wires route and config.
public protocol NotificationProvider: Sendable {
    /// The route and config section name: `POST /ipn/{name}`, `providers.{name}`.
    static var name: String { get }
    /// The keys an account entry takes besides `account` and `allow_ips`.
    static var accountKeys: [AccountKey] { get }
    /// The exact answer to every authentic notification, duplicates included.
    static var acknowledgement: ProviderAnswer { get }

    /// Builds the account from settings the config loader resolved (secrets read from files).
    init(settings: AccountSettings) throws(AccountConfigError)

    /// Verifies `request` over its raw bytes and reduces it to what ipnd acts on.
    func verify(_ request: RawRequest) throws(Rejection) -> VerifiedNotification

    /// The answer to a request rejected for `rejection`.
    static func answer(for rejection: Rejection) -> ProviderAnswer

    /// A correctly signed notification built from this account's secrets (`ipnd simulate`).
    func simulatedRequest(_ spec: SimulationSpec) throws(SimulationError) -> RawRequest
    /// What `ipnd simulate` and the benchmark use when not told otherwise.
    static var simulationDefaults: SimulationDefaults { get }
    /// The status words `ipnd simulate --status` takes that this provider's mapping knows: each
    /// moves, refunds or records the order, none is stored `unknown_status`. Listed in the
    /// provider's file beside the mapping it lists; `simulate` warns about any other word, and
    /// the tests send every listed one through the simulator and the mapping.
    static var knownStatuses: [String] { get }

    /// What `check-config` shows about the account, with secrets redacted.
    var summary: [(key: String, value: String)] { get }

    /// The keys the account's `inquiry` section takes besides `url` (product.md section 12).
    /// Secrets there are single values (`NAME_file` allowed).
    static var inquiryKeys: [AccountKey] { get }
    /// Where the status API is when `inquiry.url` is not set (inquiries.md).
    static var defaultInquiryURL: String { get }
    /// The account's status inquiry; nil when its config has no `inquiry` section.
    var inquiry: (any StatusInquiry)? { get }
}

/// A provider's own status word for a paid notification and its usual currency.
public struct SimulationDefaults: Sendable {
    public let paidStatus: String
    public let currency: String

    public init(paidStatus: String, currency: String) {
        self.paidStatus = paidStatus
        self.currency = currency
    }
}

extension NotificationProvider {
    /// What ipnd runs on every request: `verify`, framed by the rules every provider's
    /// notifications keep. `Content-Type` may appear at most once (two could make one body mean
    /// two things), and a verified notification's identifiers stay within `NotificationLimits`.
    public func verifyRequest(_ request: RawRequest) throws(Rejection) -> VerifiedNotification {
        _ = try request.singleHeader("Content-Type")
        let notification = try verify(request)
        try NotificationLimits.check(notification)
        return notification
    }
}

/// Bounds on what a notification may make ipnd store and index. Providers' own limits are far
/// lower (order references of 20 to 64 characters); an authentic notification beyond these is
/// refused as `field_too_long` rather than kept as an order nobody can look up, and one whose
/// identifiers hold control characters as `malformed_body`.
public enum NotificationLimits {
    /// Order reference, provider transaction id, status word, payment link and refund id.
    public static let maxIdentifierBytes = 256
    public static let maxDedupKeyBytes = 1024
    /// Each value of `detail`.
    public static let maxDetailValueBytes = 256

    public static func check(_ notification: VerifiedNotification) throws(Rejection) {
        var refundID: String?
        if case .refund(let info) = notification.effect { refundID = info.refundID }
        let identifiers: [(name: String, value: String?, maxBytes: Int)] = [
            ("order reference", notification.orderRef, maxIdentifierBytes),
            ("provider transaction id", notification.providerTxnID, maxIdentifierBytes),
            ("status", notification.providerStatus, maxIdentifierBytes),
            ("payment id", notification.link?.key, maxIdentifierBytes),
            ("refund id", refundID, maxIdentifierBytes),
            // The key may hold identifiers checked nowhere else (Juspay's event id, CHOP's
            // notify_id): two keys differing only after a NUL would be shown as the same key.
            ("dedup key", notification.dedupKey, maxDedupKeyBytes),
        ]
        for case let (name, value?, maxBytes) in identifiers {
            switch identifierProblem(value, maxBytes: maxBytes) {
            case .tooLong(let bytes)?:
                throw Rejection(.fieldTooLong, "\(name) is \(bytes) bytes, more than \(maxBytes)")
            case .controlCharacter?:
                throw Rejection(.malformedBody, "\(name) contains a control character")
            case nil:
                break
            }
        }
        for (key, value) in notification.detail where value.utf8.count > maxDetailValueBytes {
            throw Rejection(.fieldTooLong, "\(key) is \(value.utf8.count) bytes, more than \(maxDetailValueBytes)")
        }
    }

    /// What keeps `value` from being an identifier ipnd stores, indexes and shows: an order
    /// reference an operator registers an expectation for is held to the same rules.
    public static func identifierProblem(_ value: String, maxBytes: Int = maxIdentifierBytes) -> IdentifierProblem? {
        if value.utf8.count > maxBytes { return .tooLong(bytes: value.utf8.count) }
        // A NUL or line break in an order reference (JSON "\u0000", form "%00") would be
        // stored, but cut short or split wherever the reference is shown or logged, and an
        // escape sequence would reach the operator's terminal.
        if containsControlCharacter(value) { return .controlCharacter }
        return nil
    }

    public enum IdentifierProblem: Equatable, Sendable {
        case tooLong(bytes: Int)
        case controlCharacter
    }

    /// C0, DEL and C1 controls, and the Unicode line and paragraph separators. Read as UTF-8
    /// bytes (every notification's identifiers pass here): C1 is C2 80-9F, U+2028/9 E2 80 A8/9.
    private static func containsControlCharacter(_ value: String) -> Bool {
        var previous: UInt8 = 0
        var beforePrevious: UInt8 = 0
        for byte in value.utf8 {
            if byte < 0x20 || byte == 0x7F { return true }
            if previous == 0xC2, byte >= 0x80, byte <= 0x9F { return true }
            if beforePrevious == 0xE2, previous == 0x80, byte == 0xA8 || byte == 0xA9 { return true }
            beforePrevious = previous
            previous = byte
        }
        return false
    }
}

/// The exact HTTP answer a provider expects.
public struct ProviderAnswer: Sendable, Equatable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]
    public var headers: [(name: String, value: String)]

    public init(status: Int, contentType: String, body: String, headers: [(name: String, value: String)] = []) {
        self.status = status
        self.contentType = contentType
        self.body = Array(body.utf8)
        self.headers = headers
    }

    public static func == (lhs: ProviderAnswer, rhs: ProviderAnswer) -> Bool {
        lhs.status == rhs.status && lhs.contentType == rhs.contentType && lhs.body == rhs.body
            && lhs.headers.elementsEqual(rhs.headers) { $0 == $1 }
    }

    /// A plain-text answer.
    public static func text(_ status: Int, _ body: String) -> ProviderAnswer {
        ProviderAnswer(status: status, contentType: "text/plain", body: body)
    }
}

extension RejectReason {
    /// Reasons that mean "this request's authentication is wrong" rather than "its body is bad".
    public var isAuthenticationFailure: Bool {
        switch self {
        case .badSignature, .badCredentials, .missingHeader, .repeatedHeader, .malformedHeader, .merchantMismatch:
            true
        default:
            false
        }
    }
}

/// What `ipnd simulate` asks a provider to build.
public struct SimulationSpec: Sendable {
    public var orderRef: String
    /// The provider's own status word (`COMPLETED`, `1`, `S`, `CHARGED`, ...).
    public var status: String
    public var amount: Money
    /// The path the request will be posted to (Alipay signs it).
    public var path: String
    /// A unique token for provider ids in the simulated body.
    public var uniqueID: String
    /// RFC 3339 time to put in the body.
    public var time: String

    public init(orderRef: String, status: String, amount: Money, path: String, uniqueID: String, time: String) {
        self.orderRef = orderRef
        self.status = status
        self.amount = amount
        self.path = path
        self.uniqueID = uniqueID
        self.time = time
    }
}

/// Why a notification could not be simulated.
public struct SimulationError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
