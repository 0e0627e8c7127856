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

/// What every provider's inquiry code shares: URLs built from the configured base, the texts
/// of messages about answers, and the rules every reading keeps (inquiries.md).
public enum InquiryURL {
    /// `base` with `path` appended, without a doubled or missing slash between them:
    /// `https://api.citconpay.com/v1` + `/access-tokens`.
    public static func joining(_ base: String, _ path: String) -> String {
        var base = Substring(base)
        while base.hasSuffix("/") { base = base.dropLast() }
        return base + path
    }

    /// `text` percent-encoded for a path segment or a query value: every byte but RFC 3986's
    /// unreserved characters (letters, digits, `-`, `.`, `_`, `~`) as `%XX`, uppercase hex. So
    /// an order reference holding `/`, `?`, `&`, `#` or `%` stays one segment or one value.
    public static func percentEncoded(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        PercentEncoding.append(text, to: &out, keeping: PercentEncoding.isUnreserved)
        return String(decoding: out, as: UTF8.self)
    }

    /// `text` as one path segment: percent-encoded, and `.` and `..` with their dots encoded
    /// too, since clients and servers resolve those segments away (RFC 3986 section 5.2.4)
    /// and `/orders/..` would ask about something else.
    public static func pathSegment(_ text: String) -> String {
        if text == "." || text == ".." { return String(repeating: "%2E", count: text.count) }
        return percentEncoded(text)
    }

    /// A query string of `pairs` in order, each value percent-encoded: `a=1&b=x%2Fy`.
    public static func query(_ pairs: [(name: String, value: String)]) -> String {
        pairs.map { "\($0.name)=\(percentEncoded($0.value))" }.joined(separator: "&")
    }
}

/// Texts about answers, for inquiry records and logs: bounded, escaped, never a credential.
public enum InquiryText {
    /// The most bytes of an answer a message quotes.
    public static let quotedBytes = 64

    /// The first `limit` bytes of `bytes` between quotes: printable ASCII as it is (`"` and `\`
    /// escaped), every other byte as `\xNN`, and `…` when bytes were left out. Nothing an
    /// answer holds can break a log line or reach a terminal as a control sequence.
    public static func quoted(_ bytes: [UInt8], limit: Int = quotedBytes) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [UInt8(ascii: "\"")]
        for byte in bytes.prefix(limit) {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append(UInt8(ascii: "\\"))
                out.append(byte)
            case 0x20..<0x7F:
                out.append(byte)
            default:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "x"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]])
            }
        }
        out.append(UInt8(ascii: "\""))
        return String(decoding: out, as: UTF8.self) + (bytes.count > limit ? "…" : "")
    }

    /// `quoted` for a text the provider put in an answer (an error code or message).
    public static func quoted(_ text: String, limit: Int = quotedBytes) -> String {
        quoted(Array(text.utf8), limit: limit)
    }

    /// "unexpected reply" with the answer's first 64 bytes, escaped.
    public static func unexpectedReply(_ body: [UInt8]) -> String {
        "unexpected reply " + quoted(body)
    }

    /// What an HTTP status says, for `error` readings: `HTTP 502`.
    public static func status(_ status: Int) -> String { "HTTP \(status)" }

    /// An error status with what the provider's JSON error body says in `fields` (the
    /// members of `object` when given, else of the body's top level): `HTTP 400 (name
    /// "VALIDATION_ERROR", message "...")`. A body that is not JSON adds nothing.
    public static func errorStatus(_ answer: InquiryAnswer, fields: [String], in object: String? = nil) -> String {
        guard case .success(let body) = answer.jsonObject() else { return status(answer.status) }
        let source = object.flatMap { body.object($0) } ?? body
        let said = fields.compactMap { field in source[field]?.scalarText.map { "\(field) \(quoted($0))" } }
        return status(answer.status) + (said.isEmpty ? "" : " (" + said.joined(separator: ", ") + ")")
    }

    /// ISO 8601 UTC to the second, `yyyy-MM-ddTHH:mm:ssZ` (Unlimint's times): milliseconds
    /// are dropped, never rounded up.
    public static func utcSeconds(epochMilliseconds: Int64) -> String {
        String(Timestamp.format(epochMilliseconds: epochMilliseconds).prefix(19)) + "Z"
    }

    /// Whether `value` may go into a header field as it is: not empty, and no control
    /// character (a line break would end the field and start another).
    public static func isHeaderSafe(_ value: String) -> Bool {
        !value.isEmpty && !value.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }
}

extension InquiryReading {
    /// Facts that keep the bounds every notification keeps (`NotificationLimits`); an answer
    /// whose identifiers do not is an `error`, as a callback carrying them is rejected.
    public static func checked(_ facts: [VerifiedNotification], providerStatus: String) -> InquiryReading {
        for fact in facts {
            do {
                try NotificationLimits.check(fact)
            } catch {
                return .error("the answer's \(error.detail)", providerStatus: String(providerStatus.prefix(64)))
            }
        }
        return .facts(facts, providerStatus: providerStatus)
    }

    /// The reading of an answer whose facts could not be taken from it (a field missing, an
    /// amount malformed): `error`, saying which.
    static func unreadable(_ rejection: Rejection, providerStatus: String? = nil) -> InquiryReading {
        .error("the answer cannot be read: \(rejection.detail)", providerStatus: providerStatus)
    }
}

extension InquiryAnswer {
    /// The body as one JSON object; nil when it is not one.
    func jsonObject() -> Result<JSONObject, JSONError> {
        do {
            return .success(try JSONParser.parseObject(body))
        } catch {
            return .failure(error)
        }
    }

    /// The single value of header `name`: nil when absent or repeated (a signed answer must
    /// mean one thing).
    func singleHeader(_ name: String) -> String? {
        let values = headers.filter { $0.name.caseInsensitiveEquals(name) }
        return values.count == 1 ? values[0].value : nil
    }
}
