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

/// One `deliveries:` entry (product.md section 8): where matching events are POSTed, signed
/// with Standard Webhooks headers.
public struct DeliveryTarget: Sendable, Equatable {
    /// The event types a target may ask for.
    public static let eventTypes = ["order.state_changed", "order.flagged"]

    /// `[a-z0-9_-]{1,64}`, unique: metrics, the CLI and the API name the target by it.
    public var name: String
    /// The URL as configured.
    public var url: String
    /// `http` or `https`, lowercase.
    public var scheme: String
    /// The host, without brackets for an IPv6 address.
    public var host: String
    /// The port, explicit or the scheme's (80, 443).
    public var port: Int
    /// The request target: the path (`/` when the URL has none) and any `?query`.
    public var pathAndQuery: String
    /// The signing secrets, each signing every request (rotation); empty when the config was
    /// loaded with `.skip` secrets.
    public var secrets: [WebhookSecret]
    /// The event types delivered; nil for every type.
    public var types: Set<String>?
    /// The providers whose events are delivered; nil for every provider.
    public var providers: Set<String>?
    /// The accounts whose events are delivered; nil for every account.
    public var accounts: Set<String>?
    /// How long one attempt may take, request and answer.
    public var timeoutSeconds = 15
    /// Concurrent requests to this target at most.
    public var maxInFlight = 16
    /// Absolute path of a PEM file of CAs that verify the target's certificate (https only); nil
    /// for the system's trusted CAs.
    public var caFile: String?

    public init(name: String, url: String, scheme: String, host: String, port: Int, pathAndQuery: String, secrets: [WebhookSecret]) {
        self.name = name
        self.url = url
        self.scheme = scheme
        self.host = host
        self.port = port
        self.pathAndQuery = pathAndQuery
        self.secrets = secrets
    }

    /// Whether requests go over TLS.
    public var usesTLS: Bool { scheme == "https" }

    /// Whether an event of `type` about an order of `provider`/`account` is delivered here.
    public func matches(type: String, provider: String, account: String) -> Bool {
        (types?.contains(type) ?? true) && (providers?.contains(provider) ?? true) && (accounts?.contains(account) ?? true)
    }

    /// One line for `check-config`; no secret in it, only how many there are.
    public var summary: String {
        func filter(_ values: Set<String>?) -> String { values.map { $0.sorted().joined(separator: ", ") } ?? "all" }
        return "\(name) -> \(url); \(secrets.count) secret(s), redacted; types: \(filter(types)); providers: \(filter(providers)); "
            + "accounts: \(filter(accounts)); timeout_seconds \(timeoutSeconds); max_in_flight \(maxInFlight); "
            + "ca_file: \(caFile ?? (usesTLS ? "system CAs" : "none"))"
    }
}
