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

/// A JSON value that remembers the exact source text of numbers, booleans and containers.
///
/// Signatures are computed over source text (`"amount":30.00` must stay `30.00`), and
/// amounts must be converted from their exact decimal text, so numbers are never turned
/// into floating point here.
///
/// Not `indirect`: objects and arrays already hold their children in array storage, and an
/// indirect enum would box every string and number of every request in its own allocation.
public enum JSONValue: Sendable, Equatable {
    case object(JSONObject)
    case array([JSONValue], source: JSONSource)
    case string(String)
    /// A number, as its exact source text (`6.03`, `30.00`, `1e400`).
    case number(String)
    case bool(Bool)
    case null

    public var object: JSONObject? {
        if case .object(let object) = self { return object }
        return nil
    }

    public var string: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The value's text as providers sign it: a string's decoded contents; a number's,
    /// boolean's, object's or array's exact source text; empty for null.
    public var signingText: String {
        switch self {
        case .string(let string): string
        case .number(let text): text
        case .bool(let value): value ? "true" : "false"
        case .object(let object): object.source
        case .array(_, let source): source.text
        case .null: ""
        }
    }

    /// A scalar's text for fields that may come as a string or as a number (`"600"` or `600`).
    public var scalarText: String? {
        switch self {
        case .string(let string): string
        case .number(let text): text
        default: nil
        }
    }
}

/// The exact source bytes of a container, sharing the parsed document's storage: made into
/// a String only when someone asks (Citcon signs objects by their source text; most never do).
public struct JSONSource: Sendable, Equatable {
    let bytes: ArraySlice<UInt8>

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public static func == (lhs: JSONSource, rhs: JSONSource) -> Bool { lhs.bytes.elementsEqual(rhs.bytes) }
}

/// A JSON object: members in source order (keys are unique) and its exact source text.
public struct JSONObject: Sendable, Equatable {
    public let members: [(key: String, value: JSONValue)]
    let sourceBytes: JSONSource

    /// The object's exact source text.
    public var source: String { sourceBytes.text }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool { lhs.sourceBytes == rhs.sourceBytes }

    public subscript(key: String) -> JSONValue? {
        for member in members where member.key == key { return member.value }
        return nil
    }

    public func object(_ key: String) -> JSONObject? { self[key]?.object }
    public func string(_ key: String) -> String? { self[key]?.string }
}

/// Why a JSON document was refused.
public struct JSONError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public let offset: Int
    public var description: String { "\(message) at byte \(offset)" }
}

/// A strict RFC 8259 parser over raw bytes.
///
/// Beyond the RFC it refuses what makes a signed document ambiguous or dangerous: duplicate
/// keys, nesting deeper than `maxDepth`, invalid UTF-8 and lone surrogate escapes.
public struct JSONParser {
    public static let defaultMaxDepth = 64

    private let bytes: [UInt8]
    private var position = 0
    private let maxDepth: Int

    private init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// Parses a complete document; only whitespace may follow the value.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.position == bytes.count else { throw parser.error("unexpected data after the JSON value") }
        return value
    }

    /// Parses a document whose top level must be an object.
    public static func parseObject(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONError) -> JSONObject {
        guard case .object(let object) = try parse(bytes, maxDepth: maxDepth) else {
            throw JSONError(message: "the JSON body is not an object", offset: 0)
        }
        return object
    }

    private func error(_ message: String) -> JSONError {
        JSONError(message: message, offset: position)
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private func source(from start: Int) -> String {
        // Every byte range handed here was validated as UTF-8 while parsing.
        String(decoding: bytes[start..<position], as: UTF8.self)
    }

    private func sourceBytes(from start: Int) -> JSONSource {
        JSONSource(bytes: bytes[start..<position])
    }

    private mutating func parseValue(depth: Int) throws(JSONError) -> JSONValue {
        guard position < bytes.count else { throw error("unexpected end of JSON") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONError) {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw error("unexpected end of JSON") }
        let matches = literal.withUTF8Buffer { expected in
            expected.indices.allSatisfy { bytes[position + $0] == expected[$0] }
        }
        guard matches else { throw error("invalid literal") }
        position += count
    }

    private mutating func parseObject(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= maxDepth else { throw error("JSON nested deeper than \(maxDepth) levels") }
        let start = position
        position += 1
        var members: [(key: String, value: JSONValue)] = []
        members.reserveCapacity(16)
        var keys = Set<String>()  // only for large objects; small ones are scanned
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(JSONObject(members: members, sourceBytes: sourceBytes(from: start)))
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw error("expected a string key")
            }
            let key = try parseString()
            if try isDuplicate(key, in: members, keys: &keys) { throw error("duplicate key \"\(key.prefix(64))\"") }
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error("expected ':'") }
            position += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append((key, value))
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of JSON") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "}") else { throw error("expected ',' or '}'") }
            position += 1
            return .object(JSONObject(members: members, sourceBytes: sourceBytes(from: start)))
        }
    }

    /// Whether `key` is already a member. Small objects (all real notifications) are scanned;
    /// from 16 members on a set keeps hostile documents from costing quadratic time.
    private func isDuplicate(_ key: String, in members: [(key: String, value: JSONValue)], keys: inout Set<String>) throws(JSONError)
        -> Bool
    {
        if members.count < 16 { return members.contains { $0.key == key } }
        if keys.isEmpty { keys = Set(members.map(\.key)) }
        return !keys.insert(key).inserted
    }

    private mutating func parseArray(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= maxDepth else { throw error("JSON nested deeper than \(maxDepth) levels") }
        let start = position
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(elements, source: sourceBytes(from: start))
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of JSON") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "]") else { throw error("expected ',' or ']'") }
            position += 1
            return .array(elements, source: sourceBytes(from: start))
        }
    }

    private mutating func parseNumber() throws(JSONError) -> String {
        let start = position
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count, isDigit(bytes[position]) else { throw error("invalid number") }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < bytes.count, isDigit(bytes[position]) { throw error("number with a leading zero") }
        } else {
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else { throw error("invalid fraction") }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard position < bytes.count, isDigit(bytes[position]) else { throw error("invalid exponent") }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        return source(from: start)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func parseString() throws(JSONError) -> String {
        position += 1  // opening quote
        // Fast path: plain ASCII without escapes, the usual case, needs no copy and no validation.
        var scan = position
        while scan < bytes.count {
            let byte = bytes[scan]
            if byte == UInt8(ascii: "\"") {
                let string = String(decoding: bytes[position..<scan], as: UTF8.self)
                position = scan + 1
                return string
            }
            if byte == UInt8(ascii: "\\") || byte >= 0x80 || byte < 0x20 { break }
            scan += 1
        }
        var out = [UInt8]()
        var runStart = position
        while true {
            guard position < bytes.count else { throw error("unterminated string") }
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                out.append(contentsOf: bytes[runStart..<position])
                position += 1
                guard let string = String(validating: out, as: UTF8.self) else {
                    throw error("string is not valid UTF-8")
                }
                return string
            case UInt8(ascii: "\\"):
                out.append(contentsOf: bytes[runStart..<position])
                position += 1
                try parseEscape(into: &out)
                runStart = position
            case 0x00..<0x20:
                throw error("control character in string")
            default:
                position += 1
            }
        }
    }

    private mutating func parseEscape(into out: inout [UInt8]) throws(JSONError) {
        guard position < bytes.count else { throw error("unterminated escape") }
        let byte = bytes[position]
        position += 1
        switch byte {
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "/"): out.append(0x2F)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                    bytes[position + 1] == UInt8(ascii: "u")
                else { throw error("lone surrogate escape") }
                position += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw error("lone surrogate escape") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw error("lone surrogate escape")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid unicode escape") }
            out.append(contentsOf: UTF8.encode(unicode).map { Array($0) } ?? [])
        default:
            throw error("invalid escape")
        }
    }

    private mutating func parseHex4() throws(JSONError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("unterminated unicode escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Hex.value(bytes[position]) else { throw error("invalid unicode escape") }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }
}
