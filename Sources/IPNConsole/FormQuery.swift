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

import HummingbirdCore
import IPNCore

/// A console page's query string read as a browser writes it. A GET form submits its fields
/// as `application/x-www-form-urlencoded`: a space as `+`, other reserved bytes as `%XX`.
/// Hummingbird's `queryParameters` decodes the escapes but leaves `+` a plus, so a search for
/// `A B` looked for `A+B`; every console page reads its query through this type instead.
///
/// A value whose escapes are broken or do not decode to UTF-8 (typed into the address bar by
/// hand; a form never sends one) is kept as it was written. A name given twice: the first
/// value counts, as the forms never repeat one.
struct FormQuery: Sendable {
    private let fields: [(name: String, value: String)]

    init(_ uri: URI) {
        self.init(uri.query ?? "")
    }

    /// - Parameter query: the query as it arrived, after the `?`, still encoded.
    init(_ query: String) {
        fields = query.utf8.split(separator: UInt8(ascii: "&")).map { pair in
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            let name = equals.map { pair[pair.startIndex..<$0] } ?? pair[...]
            let value = equals.map { pair[pair.index(after: $0)...] } ?? pair[pair.endIndex...]
            return (Self.decode(name), Self.decode(value))
        }
    }

    /// The value of `name`, decoded; nil when the query has no such field.
    subscript(name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    private static func decode(_ raw: Substring.UTF8View.SubSequence) -> String {
        let bytes = Array(raw)
        return (try? FormBody.decodeComponent(bytes)) ?? String(decoding: bytes, as: UTF8.self)
    }
}
