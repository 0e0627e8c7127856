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

/// The filter values ops staff type (CLI flags, API query parameters), checked the same way
/// for both.
public enum QueryParameters {
    /// The largest page the ops API returns; the CLI has no such cap.
    public static let maxAPILimit = 1000
    public static let defaultLimit = 100

    /// A provider name ipnd knows.
    public static func provider(_ text: String) throws(QueryParameterError) -> String {
        guard ProviderRegistry.provider(named: text) != nil else {
            throw QueryParameterError("provider \"\(text.prefix(64))\" is not one of \(providerNames)")
        }
        return text
    }

    public static func state(_ text: String) throws(QueryParameterError) -> OrderState {
        guard let state = OrderState(rawValue: text) else {
            throw QueryParameterError(
                "state \"\(text.prefix(64))\" is not one of \(OrderState.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return state
    }

    public static func verdict(_ text: String) throws(QueryParameterError) -> Verdict {
        guard let verdict = Verdict(rawValue: text) else {
            throw QueryParameterError(
                "verdict \"\(text.prefix(64))\" is not one of \(Verdict.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return verdict
    }

    /// A rejection reason code (`bad_signature`, `ip_not_allowed`, ...).
    public static func rejectReason(_ text: String) throws(QueryParameterError) -> String {
        guard RejectReason(rawValue: text) != nil else {
            throw QueryParameterError(
                "reason \"\(text.prefix(64))\" is not one of \(RejectReason.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return text
    }

    /// An ISO 8601 / RFC 3339 time or date, as the stored timestamp text it compares with.
    public static func since(_ text: String) throws(QueryParameterError) -> String {
        guard let millis = Timestamp.parse(text) else {
            throw QueryParameterError(
                "since \"\(text.prefix(64))\" is not an ISO 8601 time (2026-11-21, 2026-11-21T10:00:00Z, 2026-11-21T18:00:00+08:00)")
        }
        return Timestamp.format(epochMilliseconds: millis)
    }

    public static func eventType(_ text: String) throws(QueryParameterError) -> EventType {
        guard let type = EventType(rawValue: text) else {
            throw QueryParameterError(
                "type \"\(text.prefix(64))\" is not one of \(EventType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return type
    }

    public static func inquiryOutcome(_ text: String) throws(QueryParameterError) -> InquiryOutcome {
        guard let outcome = InquiryOutcome(rawValue: text) else {
            throw QueryParameterError(
                "outcome \"\(text.prefix(64))\" is not one of \(InquiryOutcome.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return outcome
    }

    public static func deliveryState(_ text: String) throws(QueryParameterError) -> DeliveryState {
        guard let state = DeliveryState(rawValue: text) else {
            throw QueryParameterError(
                "state \"\(text.prefix(64))\" is not one of \(DeliveryState.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return state
    }

    /// An event seq to read after: a whole number, 0 or more.
    public static func seq(_ text: String, name: String = "after") throws(QueryParameterError) -> Int64 {
        guard let seq = Int64(text), seq >= 0 else {
            throw QueryParameterError("\(name) \"\(text.prefix(64))\" is not a whole number, 0 or more (an event seq)")
        }
        return seq
    }

    /// The most seconds a long poll waits.
    public static let maxWaitSeconds = 60

    /// How long a long poll may wait: 0 to 60 seconds, fractions allowed.
    public static func wait(_ text: String) throws(QueryParameterError) -> Duration {
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= Double(maxWaitSeconds) else {
            throw QueryParameterError("wait \"\(text.prefix(64))\" is not a number of seconds from 0 to \(maxWaitSeconds)")
        }
        return .milliseconds(Int64(seconds * 1000))
    }

    /// A delivery target's name as the config allows it: [a-z0-9_-]{1,64}.
    public static func targetName(_ text: String) throws(QueryParameterError) -> String {
        guard (1...64).contains(text.utf8.count),
              text.utf8.allSatisfy({ (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") })
        else {
            throw QueryParameterError("target \"\(text.prefix(64))\" is not a delivery target name ([a-z0-9_-], 1 to 64 characters)")
        }
        return text
    }

    /// A positive count, at most `max`.
    public static func limit(_ text: String, max: Int = Int.max) throws(QueryParameterError) -> Int {
        guard let limit = Int(text), limit >= 1, limit <= max else {
            throw QueryParameterError("limit \"\(text.prefix(64))\" is not a whole number from 1 to \(max)")
        }
        return limit
    }

    /// An order reference an expectation can be registered for: one a notification could carry
    /// (`NotificationLimits`), so the order can be paid, looked up and shown as typed.
    public static func orderReference(_ text: String) throws(QueryParameterError) -> String {
        guard !text.isEmpty, NotificationLimits.identifierProblem(text) == nil else {
            throw QueryParameterError(
                "the order reference must be 1 to \(NotificationLimits.maxIdentifierBytes) bytes, with no control characters")
        }
        return text
    }

    private static var providerNames: String {
        ProviderRegistry.all.map { $0.name }.joined(separator: ", ")
    }
}

/// A filter value that cannot be used; the message says what would be accepted.
public struct QueryParameterError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The opaque position in a list the ops API hands back as `next_cursor`: keyset pagination
/// by id, newest first, so rows inserted while a client pages never shift its pages.
public enum ListCursor {
    public enum List: String, Sendable {
        case orders = "o"
        case notifications = "n"
        case deliveries = "d"
        case inquiries = "i"
    }

    /// The cursor of the page after the row with `lastID`.
    public static func encode(_ list: List, lastID: Int64) -> String {
        Base64URL.encode(Array("\(list.rawValue):\(lastID)".utf8))
    }

    /// The first `size` of `rows` (read with a limit of `size + 1`, newest first) and, when
    /// more followed, the cursor of the page after them.
    static func page<Row>(_ rows: [Row], size: Int, list: List, id: (Row) -> Int64) -> (rows: [Row], next: String?) {
        let page = Array(rows.prefix(size))
        let next = rows.count > size ? page.last.map { encode(list, lastID: id($0)) } : nil
        return (page, next)
    }

    /// The id the next page starts below.
    public static func decode(_ text: String, list: List) throws(QueryParameterError) -> Int64 {
        guard let bytes = Base64URL.decode(text),
            let plain = String(validating: bytes, as: UTF8.self),
            plain.hasPrefix(list.rawValue + ":"),
            let id = Int64(plain.dropFirst(2)), id > 0
        else {
            throw QueryParameterError("cursor is not a next_cursor this list returned")
        }
        return id
    }
}

/// base64url without padding (RFC 4648 section 5): safe in a query string as is.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Base64.encode(bytes).replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.count <= 64 else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        return Base64.decode(standard)
    }
}
