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

import HTTPTypes
import IPNCore

/// The header fields kept with every stored request, as a JSON array of `[name, value]` pairs
/// (order and repeats preserved): all of them, with credentials reduced to their scheme,
/// capped so a 100 KB header cannot bloat the store.
enum StoredHeaders {
    static let maxBytes = 8192

    static func json(_ fields: HTTPFields) -> String {
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(1024)
        var kept = 0
        for field in fields {
            // Written in place; an entry that would pass the cap is taken back out.
            let mark = out.count
            if kept > 0 { out.append(UInt8(ascii: ",")) }
            let entryStart = out.count
            let name = field.name.canonicalName
            out.append(UInt8(ascii: "["))
            JSONText.appendQuoted(name, to: &out)
            out.append(UInt8(ascii: ","))
            if isCredential(name) {
                JSONText.appendQuoted(redacted(field.value), to: &out)
            } else {
                JSONText.appendQuoted(field.value.utf8.count <= 1024 ? field.value : String(field.value.prefix(1024)), to: &out)
            }
            out.append(UInt8(ascii: "]"))
            guard mark + (out.count - entryStart) + 2 <= maxBytes else {
                out.removeSubrange(mark...)
                if kept > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: Array(#"["ipnd-truncated","\#(fields.count - kept) more header(s) not kept"]"#.utf8))
                break
            }
            kept += 1
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Header fields whose values are credentials (names as HTTPTypes gives them: lowercase).
    /// They are stored redacted: `StoredHeaderList` leaves them out when reading them back.
    static func isCredential(_ name: String) -> Bool {
        name == "authorization" || name == "proxy-authorization" || name == "cookie"
    }

    /// `Basic [redacted]`: the scheme of `scheme credentials` stays (it says how the client
    /// authenticated); anything else, cookies included, is redacted whole.
    static func redacted(_ value: String) -> String {
        // As `split(separator: " ", maxSplits: 1)` reads it: leading spaces skipped, the scheme up
        // to the next space, and something after that space.
        value.withUTF8Bytes { bytes in
            var start = 0
            while start < bytes.count, bytes[start] == UInt8(ascii: " ") { start += 1 }
            guard let space = bytes[start...].firstIndex(of: UInt8(ascii: " ")), space + 1 < bytes.count else {
                return "[redacted]"
            }
            let scheme = bytes[start..<space]
            let isSchemeByte = { (byte: UInt8) in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
            }
            guard scheme.count <= 32, scheme.allSatisfy(isSchemeByte) else { return "[redacted]" }
            return String(decoding: scheme, as: UTF8.self) + " [redacted]"
        }
    }
}
