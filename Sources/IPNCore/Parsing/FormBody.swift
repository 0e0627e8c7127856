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

/// An `application/x-www-form-urlencoded` body: decoded fields in source order.
public struct FormBody: Sendable, Equatable {
    public let fields: [(name: String, value: String)]
    /// Whether names were matched ignoring ASCII case (iPay88).
    public let caseInsensitiveNames: Bool
    /// Fields whose value was not UTF-8 (parsed with `undecodableValues: .keep`): kept with
    /// U+FFFD in place of the bad bytes, and refused by `value(_:)`.
    public let undecodable: [String]

    public static func == (lhs: FormBody, rhs: FormBody) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value } && lhs.undecodable == rhs.undecodable
    }

    /// What to do with a value that is not UTF-8.
    public enum UndecodableValues: Sendable {
        /// The form is refused.
        case refuse
        /// The field is kept, and only refused when it is read with `value(_:)`: a provider
        /// posting a card holder's name in Latin-1 is still heard for the fields it signed.
        case keep
    }

    /// Parses a form body. `+` is a space; `%XX` takes either hex case. Malformed escapes,
    /// invalid UTF-8 and repeated field names are errors: a signed form must be unambiguous.
    /// With `undecodableValues: .keep`, a value that is not UTF-8 is an error only when read.
    public static func parse(
        _ bytes: [UInt8], caseInsensitiveNames: Bool = false, undecodableValues: UndecodableValues = .refuse
    ) throws(FormError) -> FormBody {
        var fields: [(name: String, value: String)] = []
        var undecodable: [String] = []
        fields.reserveCapacity(16)
        var seen = Set<String>()  // only for large forms; small ones are scanned
        var pairStart = bytes.startIndex
        while pairStart < bytes.endIndex {
            let pairEnd = bytes[pairStart...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.endIndex
            defer { pairStart = pairEnd + 1 }
            guard pairEnd > pairStart else { continue }
            let pair = bytes[pairStart..<pairEnd]
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            let rawName = equals.map { pair[pair.startIndex..<$0] } ?? pair[...]
            let rawValue = equals.map { pair[pair.index(after: $0)...] } ?? []
            let name = try decodeComponent(rawName)
            guard !name.isEmpty else { throw FormError(message: "form field with an empty name") }
            let value: String
            switch (try percentDecode(rawValue), undecodableValues) {
            case (.text(let text), _):
                value = text
            case (.bytes(let bytes), .keep):
                value = String(decoding: bytes, as: UTF8.self)
                undecodable.append(name)
            case (.bytes, .refuse):
                throw FormError(message: "form field \"\(name.prefix(64))\" is not valid UTF-8")
            }
            if isRepeated(name, in: fields, caseInsensitive: caseInsensitiveNames, seen: &seen) {
                throw FormError(message: "form field \"\(name.prefix(64))\" appears more than once")
            }
            fields.append((name, value))
        }
        return FormBody(fields: fields, caseInsensitiveNames: caseInsensitiveNames, undecodable: undecodable)
    }

    /// Whether `name` is already a field. Small forms (all real notifications) are scanned;
    /// from 16 fields on a set keeps hostile bodies from costing quadratic time.
    private static func isRepeated(
        _ name: String, in fields: [(name: String, value: String)], caseInsensitive: Bool, seen: inout Set<String>
    ) -> Bool {
        if fields.count < 16 {
            return fields.contains { caseInsensitive ? $0.name.caseInsensitiveEquals(name) : $0.name == name }
        }
        let identity = { (name: String) in caseInsensitive ? name.lowercased() : name }
        if seen.isEmpty { seen = Set(fields.map { identity($0.name) }) }
        return !seen.insert(identity(name)).inserted
    }

    /// The value of field `name`, matched as this body was parsed (case-insensitively or exactly);
    /// a value kept although it is not UTF-8 is refused.
    public func value(_ name: String) throws(FormError) -> String? {
        let matches = { (field: String) in self.caseInsensitiveNames ? field.caseInsensitiveEquals(name) : field == name }
        guard let field = fields.first(where: { matches($0.name) }) else { return nil }
        if !undecodable.isEmpty, undecodable.contains(where: matches) {
            throw FormError(message: "form field \"\(field.name.prefix(64))\" is not valid UTF-8")
        }
        return field.value
    }

    /// Percent-decodes one component (`+` as space), validating escapes and UTF-8.
    public static func decodeComponent(_ raw: [UInt8]) throws(FormError) -> String {
        try decodeComponent(raw[...])
    }

    /// Percent-decodes one component (`+` as space), validating escapes and UTF-8.
    public static func decodeComponent(_ raw: ArraySlice<UInt8>) throws(FormError) -> String {
        guard case .text(let text) = try percentDecode(raw) else {
            throw FormError(message: "form field is not valid UTF-8")
        }
        return text
    }

    private enum Decoded {
        case text(String)
        /// Not UTF-8.
        case bytes([UInt8])
    }

    private static func percentDecode(_ raw: ArraySlice<UInt8>) throws(FormError) -> Decoded {
        // Most components (ids, amounts, codes) are plain ASCII without escapes: such bytes are
        // valid UTF-8 as they are, so they need no copy and no validation (String(validating:)
        // is not specialised here and cost ~1,000 instructions a component).
        if !raw.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") || $0 >= 0x80 }) {
            return .text(String(decoding: raw, as: UTF8.self))
        }
        var out = [UInt8]()
        out.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index != raw.endIndex {
            let byte = raw[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < raw.endIndex, let high = Hex.value(raw[index + 1]), let low = Hex.value(raw[index + 2]) else {
                    throw FormError(message: "malformed percent-encoding")
                }
                out.append(high << 4 | low)
                index += 3
                continue
            }
            out.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            index += 1
        }
        guard let string = String(validating: out, as: UTF8.self) else { return .bytes(out) }
        return .text(string)
    }

    /// Encodes fields as a form body (the inverse of `parse`, used by signers).
    public static func encode(_ fields: [(String, String)]) -> [UInt8] {
        var out = [UInt8]()
        for (offset, field) in fields.enumerated() {
            if offset > 0 { out.append(UInt8(ascii: "&")) }
            appendEncoded(field.0, to: &out)
            out.append(UInt8(ascii: "="))
            appendEncoded(field.1, to: &out)
        }
        return out
    }

    private static func appendEncoded(_ text: String, to out: inout [UInt8]) {
        PercentEncoding.append(text, to: &out, keeping: PercentEncoding.isFormSafe, spaceAsPlus: true)
    }
}

/// Why a form body was refused.
public struct FormError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
