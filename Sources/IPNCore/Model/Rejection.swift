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

/// Why a request was rejected: a stable reason code stored with the request and a detail
/// for people (logs, the ops API). Neither ever contains a secret.
public struct Rejection: Error, Equatable, Sendable, CustomStringConvertible {
    /// The most UTF-8 bytes a detail keeps: it is stored and logged with every rejected request,
    /// so no input may make it grow with the input.
    public static let maxDetailBytes = 512

    public let reason: RejectReason
    public let detail: String
    /// The request header the rejection is about, when it is about one (missing, repeated).
    public let header: String?

    /// A rejection; `detail` is cut to `maxDetailBytes` (callers quote input with Character-based
    /// `prefix`, which bounds nothing: one Character may carry any number of combining marks).
    public init(_ reason: RejectReason, _ detail: String, header: String? = nil) {
        self.reason = reason
        self.detail = detail.truncated(toUTF8Bytes: Self.maxDetailBytes)
        self.header = header
    }

    public var description: String { "\(reason.rawValue): \(detail)" }
}

/// Reason codes of rejected requests.
public enum RejectReason: String, Sendable, CaseIterable, Codable {
    /// The signature, hash or token did not verify.
    case badSignature = "bad_signature"
    /// HTTP Basic credentials missing or wrong (Juspay).
    case badCredentials = "bad_credentials"
    case unknownAccount = "unknown_account"
    case missingHeader = "missing_header"
    /// A header that must appear once appeared more than once.
    case repeatedHeader = "repeated_header"
    case malformedHeader = "malformed_header"
    case malformedBody = "malformed_body"
    /// The connection ended (or the request deadline passed) before the whole body arrived;
    /// what did arrive is kept.
    case incompleteBody = "incomplete_body"
    case unsupportedContentType = "unsupported_content_type"
    /// A required field is absent or empty.
    case missingField = "missing_field"
    /// An amount is not exact decimal text the currency allows.
    case badAmount = "bad_amount"
    case unknownCurrency = "unknown_currency"
    /// The merchant code or client id in the request is not the account's.
    case merchantMismatch = "merchant_mismatch"
    case ipNotAllowed = "ip_not_allowed"
    /// An identifier ipnd keeps (order reference, provider id, status word) is longer than
    /// `NotificationLimits` allow.
    case fieldTooLong = "field_too_long"

    /// The HTTP status the rejection is answered with (product.md section 3).
    public var httpStatus: Int {
        switch self {
        case .badCredentials: 401
        case .ipNotAllowed: 403
        case .unknownAccount: 404
        default: 400
        }
    }
}

extension AmountError {
    /// The rejection of a notification carrying this amount.
    public var rejection: Rejection {
        switch self {
        case .unknownCurrency: Rejection(.unknownCurrency, description)
        default: Rejection(.badAmount, description)
        }
    }
}
