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

import Mustache

/// How the console writes text into HTML: every value a template prints goes through
/// `escape`, the only content type its templates use (`ConsoleTemplates` puts the pragma
/// at the top of each).
///
/// Escaping is by Unicode scalar, not by character: Mustache's own HTML escaping looks at
/// whole characters, and `"` followed by a combining mark is one character that is not `"`,
/// so a quote would reach an attribute unescaped.
struct HTMLText: MustacheContentType {
    /// The name templates select this content type by.
    static let contentTypeName = "IPND_HTML"

    /// How text from outside is made visible before it is escaped: hidden and
    /// direction-changing characters written as `\u{...}` (IPNServer passes the CLI's rule).
    let visible: @Sendable (String) -> String

    func escapeText(_ text: String) -> String {
        Self.escape(visible(text))
    }

    /// `text` with `&`, `<`, `>`, `"` and `'` as character references.
    static func escape(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 == 0x22 || $0 == 0x27 }) else {
            return text
        }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            case "'": out.append(contentsOf: "&#39;".unicodeScalars)
            default: out.append(scalar)
            }
        }
        return String(out)
    }
}

/// Percent-encoding for the pieces of the console's own links.
enum URLText {
    /// `text` as one path segment or query value: everything but the unreserved characters
    /// (RFC 3986) as `%XX` of its UTF-8 bytes, `/`, `?`, `&`, `#` and `%` included.
    static func component(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0x0F)]))
            }
        }
        return out
    }

    /// `path` followed by the query of `parameters` whose value is not empty.
    static func link(_ path: String, _ parameters: [(String, String?)]) -> String {
        let query = parameters.compactMap { name, value -> String? in
            guard let value, !value.isEmpty else { return nil }
            return component(name) + "=" + component(value)
        }
        return query.isEmpty ? path : path + "?" + query.joined(separator: "&")
    }

    /// The console page of one order.
    static func order(provider: String, account: String, orderRef: String) -> String {
        "/orders/\(component(provider))/\(component(account))/\(component(orderRef))"
    }

    /// Whether `path` is one of the console's own pages to return to after a form: a local
    /// path (`/...`, not `//host` or `/\host`, which browsers take as another site).
    static func isLocalPath(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/"), bytes.count <= 2048 else { return false }
        if bytes.count > 1, bytes[1] == UInt8(ascii: "/") || bytes[1] == UInt8(ascii: "\\") { return false }
        return bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
