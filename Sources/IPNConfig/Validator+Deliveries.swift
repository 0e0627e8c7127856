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

/// `deliveries:` (product.md section 8): the merchant's applications events are pushed to.
extension Validator {
    private static let deliveryKeys = [
        "name", "url", "secret", "secret_file", "types", "providers", "accounts", "timeout_seconds", "max_in_flight", "ca_file",
    ]

    func deliveryTargets(_ node: ConfigNode?, accountNames: [AccountName], inlineSecrets: inout [String]) throws(ConfigError) -> [DeliveryTarget] {
        guard let node else { return [] }
        if case .null = node { return [] }
        guard case .sequence(let items, _) = node else {
            throw ConfigError(key: "deliveries", "must be a list of targets (- name: ...  url: ...  secret: whsec_...), found \(node.kindName)")
        }
        var targets: [DeliveryTarget] = []
        for (index, item) in items.enumerated() {
            let keyPath = "deliveries[\(index)]"
            let target = try deliveryTarget(item, keyPath: keyPath, accountNames: accountNames, inlineSecrets: &inlineSecrets)
            if let first = targets.firstIndex(where: { $0.name == target.name }) {
                throw ConfigError(key: "\(keyPath).name", "\"\(target.name)\" is already the name of deliveries[\(first)]; names must be unique")
            }
            targets.append(target)
        }
        return targets
    }

    private func deliveryTarget(
        _ node: ConfigNode, keyPath: String, accountNames: [AccountName], inlineSecrets: inout [String]
    ) throws(ConfigError) -> DeliveryTarget {
        let pairs = try mapping(node, key: keyPath)
        try checkKeys(pairs, allowed: Self.deliveryKeys, in: keyPath)
        guard let nameNode = node["name"] else { throw ConfigError(key: "\(keyPath).name", "is required") }
        let name = try targetName(nameNode, key: "\(keyPath).name")
        guard let urlNode = node["url"] else { throw ConfigError(key: "\(keyPath).url", "is required") }
        let url = try DeliveryURL(try nonEmptyString(urlNode, key: "\(keyPath).url"), key: "\(keyPath).url")
        let secrets = try webhookSecrets(node, keyPath: keyPath, inlineSecrets: &inlineSecrets)

        var target = DeliveryTarget(
            name: name, url: url.text, scheme: url.scheme, host: url.host, port: url.port, pathAndQuery: url.pathAndQuery, secrets: secrets)
        if let types = node["types"] {
            let key = "\(keyPath).types"
            let values = try stringList(types, key: key)
            for (index, value) in values.enumerated() where !DeliveryTarget.eventTypes.contains(value) {
                throw ConfigError(key: values.count > 1 ? "\(key)[\(index)]" : key,
                                  "\"\(value.prefix(64))\" is not an event type; types are \(DeliveryTarget.eventTypes.joined(separator: ", "))")
            }
            target.types = Set(values)
        }
        let configuredProviders = accountNames.map(\.provider)
        if let providers = node["providers"] {
            let key = "\(keyPath).providers"
            let values = try stringList(providers, key: key)
            for (index, value) in values.enumerated() where !configuredProviders.contains(value) {
                let known = ProviderRegistry.provider(named: value) != nil
                throw ConfigError(key: values.count > 1 ? "\(key)[\(index)]" : key, known
                    ? "\(value) has no account under providers, so this filter would match nothing"
                    : "\"\(value.prefix(64))\" is not a provider; known providers: \(ProviderRegistry.names)")
            }
            target.providers = Set(values)
        }
        if let accounts = node["accounts"] {
            let key = "\(keyPath).accounts"
            let values = try stringList(accounts, key: key)
            let candidates = accountNames.filter { target.providers?.contains($0.provider) ?? true }.map(\.account)
            for (index, value) in values.enumerated() where !candidates.contains(value) {
                let scope = target.providers.map { " of \($0.sorted().joined(separator: ", "))" } ?? ""
                throw ConfigError(key: values.count > 1 ? "\(key)[\(index)]" : key,
                                  "no configured account\(scope) is named \"\(value.prefix(64))\", so this filter would match nothing")
            }
            target.accounts = Set(values)
        }
        if let timeout = node["timeout_seconds"] {
            target.timeoutSeconds = try integer(timeout, key: "\(keyPath).timeout_seconds", in: 1...300, what: "seconds")
        }
        if let limit = node["max_in_flight"] {
            target.maxInFlight = try integer(limit, key: "\(keyPath).max_in_flight", in: 1...256, what: "a request count")
        }
        if let file = node["ca_file"] {
            guard url.scheme == "https" else {
                throw ConfigError(key: "\(keyPath).ca_file", "only applies to an https url; \(keyPath).url is http")
            }
            target.caFile = try caFile(file, key: "\(keyPath).ca_file")
        }
        return target
    }

    /// `[a-z0-9_-]{1,64}`.
    private func targetName(_ node: ConfigNode, key: String) throws(ConfigError) -> String {
        let name = try nonEmptyString(node, key: key)
        let allowed = name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        guard allowed, name.utf8.count <= 64 else {
            throw ConfigError(key: key, "must be 1-64 lowercase letters, digits, '_' or '-' (metrics, the CLI and the API name the target by it)")
        }
        return name
    }

    /// `secret` (inline, one or a list) or `secret_file` (one path or a list), each a `whsec_`
    /// secret. Files are read only when `secrets` is `.resolve`; with `.skip` the target keeps
    /// no secrets (inline ones are still checked).
    private func webhookSecrets(_ node: ConfigNode, keyPath: String, inlineSecrets: inout [String]) throws(ConfigError) -> [WebhookSecret] {
        let key = "\(keyPath).secret"
        let texts: [(key: String, text: String, source: String?)]
        switch (node["secret"], node["secret_file"]) {
        case (.some, .some):
            throw ConfigError(key: key, "is set both inline and as secret_file; keep one")
        case (nil, nil):
            throw ConfigError(key: key, "is required (inline or as secret_file): a Standard Webhooks secret, whsec_ + base64")
        case (let inline?, nil):
            let values = try stringList(inline, key: key)
            inlineSecrets.append(key)
            texts = values.enumerated().map { index, value in (values.count > 1 ? "\(key)[\(index)]" : key, value, nil) }
        case (nil, let files?):
            let paths = try stringList(files, key: "\(key)_file")
            guard secrets == .resolve else { return [] }
            var read: [(key: String, text: String, source: String?)] = []
            for (index, path) in paths.enumerated() {
                let fileKey = paths.count > 1 ? "\(key)_file[\(index)]" : "\(key)_file"
                let absolute = resolver.credential(path)
                read.append((fileKey, try secretFile(absolute, key: fileKey, isSecret: true), absolute))
            }
            texts = read
        }
        var parsed: [WebhookSecret] = []
        for (entryKey, text, source) in texts {
            guard !text.isEmpty else { throw ConfigError(key: entryKey, source.map { "\($0) is empty" } ?? "is empty") }
            do {
                parsed.append(try WebhookSecret(parsing: text))
            } catch {
                throw ConfigError(key: entryKey, source.map { "the secret in \($0) \(error)" } ?? "\(error)")
            }
        }
        return secrets == .resolve ? parsed : []
    }
}

/// A delivery target's (or a status inquiry's) URL, taken apart: http or https, a host, no
/// user information (the signature authenticates ipnd), no fragment (never sent).
struct DeliveryURL {
    let text: String
    let scheme: String
    let host: String
    let port: Int
    let pathAndQuery: String

    /// The messages never repeat the URL: user information in it may be a password.
    /// `userInfoRefusal` is the message refusing user information, which says what
    /// authenticates ipnd instead.
    init(
        _ text: String, key: String,
        userInfoRefusal: String = "must not carry a user name or password (user:password@): the Standard Webhooks signature authenticates ipnd"
    ) throws(ConfigError) {
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || $0.value > 0x7E }) else {
            throw ConfigError(key: key, "must be a URL without spaces, control or non-ASCII characters (percent-encode them)")
        }
        guard let components = URLComponents(string: text), let rawScheme = components.scheme else {
            throw ConfigError(key: key, "is not an absolute URL (https://HOST/PATH)")
        }
        let scheme = rawScheme.lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw ConfigError(key: key, "must be an http or https URL")
        }
        guard components.percentEncodedUser == nil, components.percentEncodedPassword == nil else {
            throw ConfigError(key: key, userInfoRefusal)
        }
        guard components.percentEncodedFragment == nil else {
            throw ConfigError(key: key, "must not have a #fragment: it is never sent")
        }
        var host = components.percentEncodedHost ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else {
            throw ConfigError(key: key, "has no host (write it as https://HOST/PATH)")
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw ConfigError(key: key, "has a port outside 1-65535")
        }
        self.text = text
        self.scheme = scheme
        self.host = host
        port = components.port ?? (scheme == "https" ? 443 : 80)
        let path = components.percentEncodedPath
        pathAndQuery = (path.isEmpty ? "/" : path) + (components.percentEncodedQuery.map { "?\($0)" } ?? "")
    }
}
