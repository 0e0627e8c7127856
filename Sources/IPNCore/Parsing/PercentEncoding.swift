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

/// Percent-encoding of text for URLs and form bodies: each UTF-8 byte a set keeps is written
/// as it is, every other as `%XX` with uppercase hex.
enum PercentEncoding {
    /// RFC 3986's unreserved characters: letters, digits, `-`, `.`, `_`, `~`.
    static func isUnreserved(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "~")
    }

    /// What `application/x-www-form-urlencoded` writes as it is (the HTML form serializer):
    /// letters, digits, `-`, `.`, `_`, `*`.
    static func isFormSafe(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "*")
    }

    /// Appends `text` to `out`, keeping the bytes `keep` accepts; a space is `+` when
    /// `spaceAsPlus` (forms), else `%20`.
    static func append(_ text: String, to out: inout [UInt8], keeping keep: (UInt8) -> Bool, spaceAsPlus: Bool = false) {
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            if keep(byte) {
                out.append(byte)
            } else if spaceAsPlus, byte == UInt8(ascii: " ") {
                out.append(UInt8(ascii: "+"))
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0f)])
            }
        }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
