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

import Foundation
import IPNCore

/// A provider account's `inquiry:` (product.md section 12): where its status API is and the
/// credentials it is asked with. Its secrets are single values, inline or `NAME_file`.
extension Validator {
    /// The account's `inquiry` section resolved (secret files read when `secrets` is
    /// `.resolve`); nil when the account has none. `inquiry:` with nothing under it asks with
    /// the provider's defaults.
    func inquirySettings(
        _ type: any NotificationProvider.Type, _ node: ConfigNode?, keyPath: String, inlineSecrets: inout [String]
    ) throws(ConfigError) -> InquirySettings? {
        guard let node else { return nil }
        let section = "\(keyPath).inquiry"
        var settings = InquirySettings(keyPath: section)
        let pairs = try optionalMapping(node, key: section) ?? []
        var allowed = ["url"]
        for key in type.inquiryKeys {
            allowed.append(key.name)
            if key.kind == .secret { allowed.append(key.name + "_file") }
        }
        try checkKeys(pairs, allowed: allowed, in: section)
        if let url = node["url"] { settings.url = try inquiryURL(url, key: "\(section).url") }
        for key in type.inquiryKeys {
            let keyName = "\(section).\(key.name)"
            switch key.kind {
            case .secret:
                if let value = try inquirySecret(node, name: key.name, keyName: keyName, inlineSecrets: &inlineSecrets) {
                    settings.strings[key.name] = value
                }
            case .string, .keyMaterial, .fileContents:
                if let value = node[key.name] { settings.strings[key.name] = try nonEmptyString(value, key: keyName) }
            }
            if key.required, settings.strings[key.name] == nil {
                throw ConfigError(key: keyName, "is required" + (key.kind == .secret ? " (inline or as \(key.name)_file)" : ""))
            }
        }
        return settings
    }

    /// One inquiry secret, inline or from `NAME_file`; a list is refused (inquiry credentials
    /// are not rotated by listing two: the provider takes one). With `.skip` the file is not
    /// read and the value is a placeholder.
    private func inquirySecret(
        _ node: ConfigNode, name: String, keyName: String, inlineSecrets: inout [String]
    ) throws(ConfigError) -> String? {
        switch (node[name], node[name + "_file"]) {
        case (.some, .some):
            throw ConfigError(key: keyName, "is set both inline and as \(name)_file; keep one")
        case (nil, nil):
            return nil
        case (let inline?, nil):
            let value = try singleSecretValue(inline, key: keyName)
            inlineSecrets.append(keyName)
            return value
        case (nil, let file?):
            let fileKey = keyName + "_file"
            let path = try singleSecretValue(file, key: fileKey)
            guard secrets == .resolve else { return "<not read>" }
            let absolute = resolver.credential(path)
            let value = try secretFile(absolute, key: fileKey, isSecret: true)
            guard !value.isEmpty else { throw ConfigError(key: fileKey, "\(absolute) is empty") }
            return value
        }
    }

    /// A single non-empty value; a list names the key and says why.
    private func singleSecretValue(_ node: ConfigNode, key: String) throws(ConfigError) -> String {
        if case .sequence = node {
            throw ConfigError(key: key, "must be a single value, not a list: an inquiry credential is one the provider issued, and is not rotated by listing two")
        }
        return try nonEmptyString(node, key: key)
    }

    /// `inquiry.url`: an absolute `https` URL, or `http` to a loopback host (tests,
    /// development). Answers are believed on TLS to this host (Antom's on its signature), so a
    /// plain `http` URL across a network would let anyone on the way record payments.
    func inquiryURL(_ node: ConfigNode, key: String) throws(ConfigError) -> String {
        let url = try DeliveryURL(
            try nonEmptyString(node, key: key), key: key,
            userInfoRefusal: "must not carry a user name or password (user:password@): the inquiry's credentials are its own keys")
        guard url.scheme == "https" || Self.isLoopback(url.host) else {
            throw ConfigError(key: key, "must be an https URL (http only to a loopback host: 127.0.0.0/8, ::1, localhost): answers are believed on TLS to this host")
        }
        guard !url.text.contains("?") else {
            throw ConfigError(key: key, "must not have a ?query: ipnd builds the API's path and query itself")
        }
        // The scheme lowercase, as the HTTP client and the inquiry records should see it.
        return url.scheme + url.text.dropFirst(url.scheme.utf8.count)
    }
}
