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

/// The header fields of a stored request read back from the text `StoredHeaders.json` wrote:
/// what `notifications reverify` verifies a rejected request with.
struct StoredHeaderList: Sendable {
    /// The kept fields in received order, without those stored redacted (their values are gone).
    var fields: [(name: String, value: String)]
    /// The names, lowercase, of the fields stored redacted (credentials).
    var redacted: Set<String>
    /// Whether fields were left out past `StoredHeaders.maxBytes`.
    var truncated: Bool

    /// Reads `[[name, value], ...]`; nil when the text is not such a list.
    init?(json: String) {
        guard case .array(let entries, _)? = try? JSONParser.parse(Array(json.utf8)) else { return nil }
        var fields: [(name: String, value: String)] = []
        var redacted: Set<String> = []
        var truncated = false
        for entry in entries {
            guard case .array(let pair, _) = entry, pair.count == 2, let name = pair[0].string, let value = pair[1].string else {
                return nil
            }
            let lowercased = name.lowercased()
            if lowercased == "ipnd-truncated" {
                truncated = true
            } else if StoredHeaders.isCredential(lowercased) {
                redacted.insert(lowercased)
            } else {
                fields.append((name, value))
            }
        }
        self.fields = fields
        self.redacted = redacted
        self.truncated = truncated
    }
}
