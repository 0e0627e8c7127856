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

/// A Standard Webhooks signing secret: `whsec_` followed by the base64 of a 24 to 64 byte key
/// (the Standard Webhooks specification, "Signature scheme", symmetric).
///
/// Its `description` never shows the key, so a secret interpolated into a log line or an error
/// by mistake stays secret.
public struct WebhookSecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The prefix that marks a Standard Webhooks symmetric secret.
    public static let prefix = "whsec_"
    /// The shortest key the specification allows (192 bits).
    public static let minimumKeyBytes = 24
    /// The longest key the specification allows (512 bits).
    public static let maximumKeyBytes = 64

    /// The HMAC-SHA256 key: the base64-decoded part after `whsec_`.
    public let key: [UInt8]

    /// Parses `whsec_<base64>`. The base64 may leave out its trailing `=` padding, as some
    /// generators print it; anything else outside the standard alphabet is refused.
    public init(parsing text: String) throws(WebhookSecretError) {
        guard text.hasPrefix(Self.prefix) else { throw .missingPrefix }
        var encoded = String(text.dropFirst(Self.prefix.count))
        guard !encoded.isEmpty else { throw .empty }
        if encoded.utf8.count % 4 != 0, !encoded.hasSuffix("=") {
            encoded += String(repeating: "=", count: 4 - encoded.utf8.count % 4)
        }
        guard let key = Base64.decode(encoded) else { throw .notBase64 }
        guard (Self.minimumKeyBytes...Self.maximumKeyBytes).contains(key.count) else {
            throw .wrongKeyLength(key.count)
        }
        self.key = key
    }

    public var description: String { "whsec_<redacted, \(key.count) bytes>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["key": "<redacted>"]) }
}

/// Why a text is not a Standard Webhooks secret. The messages never repeat the text.
public enum WebhookSecretError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text does not start with `whsec_`.
    case missingPrefix
    /// Nothing follows `whsec_`.
    case empty
    /// What follows `whsec_` is not standard base64.
    case notBase64
    /// The decoded key has this many bytes, outside 24...64.
    case wrongKeyLength(Int)

    public var description: String {
        switch self {
        case .missingPrefix:
            "is not a Standard Webhooks secret: it must start with whsec_ followed by the base64 of the key"
        case .empty:
            "has nothing after whsec_: the base64 of a 24 to 64 byte key must follow"
        case .notBase64:
            "is not a Standard Webhooks secret: the part after whsec_ is not valid base64"
        case .wrongKeyLength(let count):
            "decodes to a \(count)-byte key; a Standard Webhooks key is \(WebhookSecret.minimumKeyBytes) to \(WebhookSecret.maximumKeyBytes) bytes (e.g. whsec_ + base64 of 32 random bytes)"
        }
    }
}
