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

/// Standard Webhooks symmetric signatures (`v1`): HMAC-SHA256 of `id.timestamp.body`, keyed
/// with each secret's decoded key, base64-encoded (product.md section 8).
public enum WebhookSignature {
    /// The `webhook-signature` value: `v1,<base64>` for each secret in order, joined by single
    /// spaces (several secrets while one is being rotated). Empty when `secrets` is.
    ///
    /// - Parameters:
    ///   - id: the event id, the same on every attempt (`webhook-id`).
    ///   - timestamp: unix seconds of this attempt (`webhook-timestamp`).
    ///   - body: the exact bytes sent as the request body.
    public static func sign(id: String, timestamp: Int64, body: [UInt8], secrets: [WebhookSecret]) -> String {
        let content = signedContent(id: id, timestamp: timestamp, body: body)
        return secrets.map { secret in
            "v1," + Base64.encode(Crypto.hmac(.sha256, key: secret.key, data: content))
        }.joined(separator: " ")
    }

    /// The three Standard Webhooks headers for one attempt, in this order: `webhook-id`,
    /// `webhook-timestamp`, `webhook-signature`.
    public static func headers(id: String, timestamp: Int64, body: [UInt8], secrets: [WebhookSecret]) -> [(String, String)] {
        [
            ("webhook-id", id),
            ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", sign(id: id, timestamp: timestamp, body: body, secrets: secrets)),
        ]
    }

    /// Whether any `v1` signature in a `webhook-signature` value was made with any of
    /// `secrets` over this id, timestamp and body (compared in constant time). Other versions
    /// and malformed entries are skipped, as the reference libraries do. For tests and
    /// receivers; it checks no timestamp tolerance.
    public static func isValid(signatureHeader: String, id: String, timestamp: Int64, body: [UInt8], secrets: [WebhookSecret]) -> Bool {
        let content = signedContent(id: id, timestamp: timestamp, body: body)
        let expected = secrets.map { Crypto.hmac(.sha256, key: $0.key, data: content) }
        for entry in signatureHeader.split(separator: " ") {
            let parts = entry.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == "v1", let received = Base64.decode(String(parts[1])) else { continue }
            if expected.contains(where: { Crypto.constantTimeEquals($0, received) }) { return true }
        }
        return false
    }

    /// `{id}.{timestamp}.{body}` as bytes.
    static func signedContent(id: String, timestamp: Int64, body: [UInt8]) -> [UInt8] {
        var content = Array(id.utf8)
        content.reserveCapacity(content.count + 22 + body.count)
        content.append(UInt8(ascii: "."))
        content.append(contentsOf: String(timestamp).utf8)
        content.append(UInt8(ascii: "."))
        content.append(contentsOf: body)
        return content
    }
}
