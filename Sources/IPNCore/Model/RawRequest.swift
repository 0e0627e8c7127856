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

/// A provider-facing request exactly as received: what verification works on.
public struct RawRequest: Sendable {
    public var method: String
    /// The request target as the client sent it: path plus query, if any.
    public var target: String
    /// Header fields in received order; names compare case-insensitively.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The client address ipnd believes (after trusted-proxy handling).
    public var clientIP: String?

    public init(
        method: String = "POST",
        target: String,
        headers: [(name: String, value: String)] = [],
        body: [UInt8],
        clientIP: String? = nil
    ) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.clientIP = clientIP
    }

    /// All values of header `name`, matched case-insensitively.
    public func headerValues(_ name: String) -> [String] {
        headers.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// The single value of header `name`; nil when absent, a rejection when repeated.
    public func singleHeader(_ name: String) throws(Rejection) -> String? {
        // One pass and no arrays: this runs for several headers of every notification.
        var found: String?
        for header in headers where header.name.caseInsensitiveEquals(name) {
            guard found == nil else {
                throw Rejection(.repeatedHeader, "header \(name) appears \(headerValues(name).count) times", header: name)
            }
            found = header.value
        }
        return found
    }

    /// The single value of a header the provider always sends.
    public func requiredHeader(_ name: String) throws(Rejection) -> String {
        guard let value = try singleHeader(name) else { throw Rejection(.missingHeader, "header \(name) is missing", header: name) }
        return value
    }

    /// The media type of the body (`Content-Type` without parameters, lowercased).
    public var mediaType: String? {
        guard let value = headers.first(where: { $0.name.caseInsensitiveEquals("content-type") })?.value else { return nil }
        return value.withUTF8Bytes { bytes in
            var end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
            var start = bytes.startIndex
            let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
            while start < end, isBlank(bytes[start]) { start += 1 }
            while end > start, isBlank(bytes[end - 1]) { end -= 1 }
            let media = UnsafeBufferPointer(rebasing: bytes[start..<end])
            // Usually already bare and lowercase: then the value itself, without a copy.
            if media.count == bytes.count, !media.contains(where: { lowercasedASCII($0) != $0 }) { return value }
            return String(decoding: media.map(lowercasedASCII), as: UTF8.self)
        }
    }

    /// The body as a JSON object, for providers that only send JSON: a `Content-Type` that names
    /// something else is `unsupported_content_type` (none at all is allowed), a body that is not
    /// one JSON object is `malformed_body`.
    public func jsonObjectBody() throws(Rejection) -> JSONObject {
        if let mediaType, !mediaType.isJSONMediaType {
            throw Rejection(.unsupportedContentType, "Content-Type \(mediaType.prefix(64)) is not JSON")
        }
        do {
            return try JSONParser.parseObject(body)
        } catch {
            throw Rejection(.malformedBody, error.description)
        }
    }
}

extension String {
    /// Whether a media type names JSON: it contains `json` (`application/json`, `text/json`,
    /// `application/vnd.x+json`). Byte search, without Foundation.
    public var isJSONMediaType: Bool {
        withUTF8Bytes { bytes in
            guard bytes.count >= 4 else { return false }
            return (0...(bytes.count - 4)).contains { start in
                bytes[start] == UInt8(ascii: "j") && bytes[start + 1] == UInt8(ascii: "s")
                    && bytes[start + 2] == UInt8(ascii: "o") && bytes[start + 3] == UInt8(ascii: "n")
            }
        }
    }
}

extension String {
    /// The longest prefix of at most `maxBytes` UTF-8 bytes that ends on a scalar boundary, with
    /// `…` marking a cut. Unlike `prefix(_:)`, which counts Characters, this bounds the size.
    public func truncated(toUTF8Bytes maxBytes: Int) -> String {
        guard utf8.count > maxBytes else { return self }
        let marker = "…"
        var kept = String.UnicodeScalarView()
        var size = 0
        for scalar in unicodeScalars {
            let length = UTF8.width(scalar)
            guard size + length + marker.utf8.count <= maxBytes else { break }
            kept.append(scalar)
            size += length
        }
        return String(kept) + marker
    }

    /// ASCII case-insensitive comparison (header and form field names).
    public func caseInsensitiveEquals(_ other: String) -> Bool {
        withUTF8Bytes { mine in
            other.withUTF8Bytes { theirs in
                guard mine.count == theirs.count else { return false }
                for index in 0..<mine.count where lowercasedASCII(mine[index]) != lowercasedASCII(theirs[index]) {
                    return false
                }
                return true
            }
        }
    }

    /// Calls `body` with the string's UTF-8 bytes in place. Native strings are stored as
    /// contiguous UTF-8, so this is a pointer, not a copy; iterating `utf8` element by element
    /// costs several times more on the request path.
    @inlinable
    public func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return try copy.withUTF8(body)
    }

    func trimmingCharacters(in set: String) -> String {
        String(self[...].trimmingCharacters(in: set))
    }
}

/// `A`-`Z` to `a`-`z`; every other byte as it is.
@inline(__always)
func lowercasedASCII(_ byte: UInt8) -> UInt8 {
    byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
}

/// Byte order of the UTF-8 encodings (what providers sort signed names by), without walking
/// `utf8` views element by element.
func utf8Precedes(_ lhs: String, _ rhs: String) -> Bool {
    lhs.withUTF8Bytes { left in rhs.withUTF8Bytes { right in left.lexicographicallyPrecedes(right) } }
}
