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

/// A key a provider account takes in the config.
public struct AccountKey: Sendable {
    public enum Kind: Sendable {
        /// A secret: a string or a list (rotation), or `NAME_file` with one path or a list.
        /// Never shown.
        case secret
        /// Key material that is not secret (a public key): like `secret`, but may be shown.
        case keyMaterial
        /// A plain string.
        case string
        /// A path to a file whose contents the account needs (relative to the config file).
        case fileContents
    }

    public let name: String
    public let kind: Kind
    public let required: Bool

    public init(_ name: String, _ kind: Kind, required: Bool) {
        self.name = name
        self.kind = kind
        self.required = required
    }
}

/// One account entry of a provider, with secrets resolved by the config loader.
public struct AccountSettings: Sendable {
    public let provider: String
    public let account: String
    /// Where the entry sits in the config, for messages: `providers.unlimint[0]`.
    public let keyPath: String
    /// Secret and key-material values, as lists (a single value is a one-element list).
    public var lists: [String: [String]]
    /// Plain string values, and file contents for `fileContents` keys.
    public var strings: [String: String]
    /// The account's `inquiry` section; nil when it has none (it is then never asked).
    public var inquiry: InquirySettings?

    public init(
        provider: String,
        account: String,
        keyPath: String,
        lists: [String: [String]] = [:],
        strings: [String: String] = [:],
        inquiry: InquirySettings? = nil
    ) {
        self.provider = provider
        self.account = account
        self.keyPath = keyPath
        self.lists = lists
        self.strings = strings
        self.inquiry = inquiry
    }

    /// The values of a secret or key-material key; empty when not configured.
    public func values(_ key: String) -> [String] { lists[key] ?? [] }

    /// The values of a required secret or key-material key.
    public func requiredValues(_ key: String) throws(AccountConfigError) -> [String] {
        let values = values(key)
        guard !values.isEmpty else { throw error(key, "is required") }
        return values
    }

    public func string(_ key: String) -> String? { strings[key] }

    public func requiredString(_ key: String) throws(AccountConfigError) -> String {
        guard let value = strings[key], !value.isEmpty else { throw error(key, "is required") }
        return value
    }

    /// An error about `key` of this account, naming its full path.
    public func error(_ key: String, _ message: String) -> AccountConfigError {
        AccountConfigError(key: "\(keyPath).\(key)", message: message)
    }
}

/// A provider account's config is wrong; `key` names the full key path.
public struct AccountConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    public let key: String
    public let message: String

    public init(key: String, message: String) {
        self.key = key
        self.message = message
    }

    public var description: String { "\(key): \(message)" }
}
