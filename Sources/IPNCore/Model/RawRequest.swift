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
        let values = headerValues(name)
        guard values.count <= 1 else { throw Rejection(.repeatedHeader, "header \(name) appears \(values.count) times") }
        return values.first
    }

    /// The single value of a header the provider always sends.
    public func requiredHeader(_ name: String) throws(Rejection) -> String {
        guard let value = try singleHeader(name) else { throw Rejection(.missingHeader, "header \(name) is missing") }
        return value
    }

    /// The media type of the body (`Content-Type` without parameters, lowercased).
    public var mediaType: String? {
        guard let value = headers.first(where: { $0.name.caseInsensitiveEquals("content-type") })?.value else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            if byte == UInt8(ascii: ";") { break }
            bytes.append((UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte)
        }
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        while let last = bytes.last, isBlank(last) { bytes.removeLast() }
        let start = bytes.firstIndex { !isBlank($0) } ?? bytes.endIndex
        return String(decoding: bytes[start...], as: UTF8.self)
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
        let bytes = Array(utf8)
        guard bytes.count >= 4 else { return false }
        let needle = Array("json".utf8)
        return (0...(bytes.count - 4)).contains { start in bytes[start..<(start + 4)].elementsEqual(needle) }
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
        guard utf8.count == other.utf8.count else { return false }
        return zip(utf8, other.utf8).allSatisfy { Self.lowerASCII($0) == Self.lowerASCII($1) }
    }

    private static func lowerASCII(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }

    func trimmingCharacters(in set: String) -> String {
        String(self[...].trimmingCharacters(in: set))
    }
}
