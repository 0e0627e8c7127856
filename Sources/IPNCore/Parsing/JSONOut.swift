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

/// A JSON value written by ipnd for people and scripts: members keep their order and absent
/// values are written as `null`, never omitted.
public enum JSONOut: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case string(String)
    case array([JSONOut])
    case object([(key: String, value: JSONOut)])
    /// JSON text ipnd itself wrote earlier (stored header lists), embedded as is.
    case verbatim(String)

    public static func == (lhs: JSONOut, rhs: JSONOut) -> Bool { lhs.text == rhs.text }

    /// `.string` or `.null`.
    public static func optional(_ text: String?) -> JSONOut { text.map(JSONOut.string) ?? .null }

    /// `.int` or `.null`.
    public static func optional(_ value: Int64?) -> JSONOut { value.map(JSONOut.int) ?? .null }

    /// Compact JSON text on one line.
    public var text: String {
        // Into bytes, each string escaped in place: every event writes its order object, and
        // concatenating `String`s member by member cost several times the bytes' own copying.
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The member named `key` of an object.
    public subscript(key: String) -> JSONOut? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The members of an object whose values are scalars (strings, numbers, booleans, null):
    /// the csv columns of a record.
    public var scalarMembers: [(key: String, value: JSONOut)] {
        guard case .object(let members) = self else { return [] }
        return members.filter { member in
            switch member.value {
            case .null, .bool, .int, .string: true
            case .array, .object, .verbatim: false
            }
        }
    }

    /// A scalar's plain text (a string unquoted, null empty); nil for containers.
    public var scalarText: String? {
        switch self {
        case .null: ""
        case .bool(let value): value ? "true" : "false"
        case .int(let value): String(value)
        case .string(let value): value
        case .array, .object, .verbatim: nil
        }
    }

    private func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value): out.append(contentsOf: String(value).utf8)
        case .string(let value): JSONText.appendQuoted(value, to: &out)
        case .verbatim(let text): out.append(contentsOf: text.utf8)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONText.appendQuoted(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}
