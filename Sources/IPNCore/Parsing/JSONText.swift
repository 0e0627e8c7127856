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

/// Writing JSON text by hand where the exact bytes matter (signed simulated bodies, stored
/// headers).
public enum JSONText {
    /// Escapes `text` for use inside a JSON string literal.
    public static func escape(_ text: String) -> String {
        // Most values (header values, ids) need no escaping: return them as they are.
        if !text.withUTF8Bytes({ $0.contains(where: needsEscape) }) { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 8)
        appendEscaped(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `text` as a quoted JSON string.
    public static func appendQuoted(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        appendEscaped(text, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// Appends the contents of a JSON string literal for `text` (without the quotes).
    public static func appendEscaped(_ text: String, to out: inout [UInt8]) {
        // Runs for every stored header and detail value: the common case is one bulk copy.
        text.withUTF8Bytes { bytes in
            guard bytes.contains(where: needsEscape) else {
                out.append(contentsOf: bytes)
                return
            }
            for byte in bytes {
                guard needsEscape(byte) else {
                    out.append(byte)
                    continue
                }
                out.append(0x5C)
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
                case UInt8(ascii: "\n"): out.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): out.append(UInt8(ascii: "r"))
                case UInt8(ascii: "\t"): out.append(UInt8(ascii: "t"))
                default:
                    out.append(UInt8(ascii: "u"))
                    out.append(0x30)
                    out.append(0x30)
                    out.append(hexDigit(byte >> 4))
                    out.append(hexDigit(byte & 0x0f))
                }
            }
        }
    }

    private static func needsEscape(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x22 || byte == 0x5C }

    private static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? 0x30 + value : 0x57 + value }

    /// A flat JSON object of strings, keys sorted (stable stored text).
    public static func object(_ fields: [String: String]) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, key) in fields.keys.sorted().enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            appendQuoted(key, to: &out)
            out.append(UInt8(ascii: ":"))
            appendQuoted(fields[key] ?? "", to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
