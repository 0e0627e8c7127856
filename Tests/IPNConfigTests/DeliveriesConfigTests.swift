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
import IPNConfig
import IPNCore
import Testing

/// A valid Standard Webhooks secret (the specification's example) and a second one.
let exampleSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
let otherSecret = "whsec_" + Base64.encode(Array("another-32-byte-key-for-rotation".utf8))

/// Two providers, three accounts: what the delivery filters are checked against.
let deliveryProviders = """
    providers:
      unlimint:
        - account: default
          callback_secret: pzQf529Wa0AV
        - account: shop2
          callback_secret: other
      juspay:
        - account: default
          username: u
          password: p
    """

/// A config with `target` (indented as a list item's body) as the only delivery target.
func deliveryYAML(_ target: String) -> String {
    deliveryProviders + "\ndeliveries:\n  - " + target.split(separator: "\n", omittingEmptySubsequences: false)
        .joined(separator: "\n    ") + "\n"
}

@Suite("Config: deliveries")
struct DeliveriesConfigTests {
    @Test("a full target loads; timeouts and concurrency default to 15 s and 16")
    func fullTarget() throws {
        let dir = try ConfigDirectory()
        try dir.write("ca/internal.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", mode: 0o644)
        let config = try dir.load(deliveryProviders + """

            deliveries:
              - name: orders-app
                url: https://orders.internal:8443/hooks/ipnd?src=ipnd
                secret: [\(exampleSecret), \(otherSecret)]
                types: [order.state_changed]
                providers: [unlimint, juspay]
                accounts: [default]
                timeout_seconds: 30
                max_in_flight: 8
                ca_file: ca/internal.pem
              - name: audit_2
                url: http://127.0.0.1:9000
                secret: \(exampleSecret)
            """)
        #expect(config.deliveries.map(\.name) == ["orders-app", "audit_2"])
        let app = config.deliveries[0]
        #expect(app.url == "https://orders.internal:8443/hooks/ipnd?src=ipnd")
        #expect((app.scheme, app.host, app.port, app.pathAndQuery) == ("https", "orders.internal", 8443, "/hooks/ipnd?src=ipnd"))
        #expect(app.usesTLS)
        #expect(app.secrets.map(\.key) == [try WebhookSecret(parsing: exampleSecret).key, try WebhookSecret(parsing: otherSecret).key])
        #expect(app.types == ["order.state_changed"])
        #expect(app.providers == ["unlimint", "juspay"])
        #expect(app.accounts == ["default"])
        #expect(app.timeoutSeconds == 30)
        #expect(app.maxInFlight == 8)
        #expect(app.caFile == dir.url.appendingPathComponent("ca/internal.pem").path)
        let audit = config.deliveries[1]
        #expect((audit.scheme, audit.host, audit.port, audit.pathAndQuery) == ("http", "127.0.0.1", 9000, "/"))
        #expect(audit.types == nil && audit.providers == nil && audit.accounts == nil && audit.caFile == nil)
        #expect(audit.timeoutSeconds == 15)
        #expect(audit.maxInFlight == 16)
        #expect(audit.secrets.count == 1)
    }

    @Test("no deliveries section, an empty one or [] means no targets")
    func none() throws {
        let dir = try ConfigDirectory()
        for tail in ["", "\ndeliveries:\n", "\ndeliveries: []\n"] {
            #expect(try dir.load(deliveryProviders + tail).deliveries.isEmpty, "\(tail)")
        }
        let error = dir.error(deliveryProviders + "\ndeliveries:\n  name: x\n")
        #expect(error?.key == "deliveries")
        #expect(error?.message.contains("list of targets") == true)
    }

    @Test("matches: every filter left out matches everything; each one given must match")
    func matching() throws {
        let config = try ConfigDirectory().load(deliveryProviders + """

            deliveries:
              - name: all
                url: http://127.0.0.1:9000/
                secret: \(exampleSecret)
              - name: filtered
                url: http://127.0.0.1:9000/
                secret: \(exampleSecret)
                types: order.flagged
                providers: unlimint
                accounts: [shop2]
            """)
        let all = config.deliveries[0]
        let filtered = config.deliveries[1]
        #expect(all.matches(type: "order.state_changed", provider: "juspay", account: "default"))
        #expect(all.matches(type: "order.flagged", provider: "unlimint", account: "shop2"))
        #expect(filtered.matches(type: "order.flagged", provider: "unlimint", account: "shop2"))
        #expect(!filtered.matches(type: "order.state_changed", provider: "unlimint", account: "shop2"))
        #expect(!filtered.matches(type: "order.flagged", provider: "juspay", account: "shop2"))
        #expect(!filtered.matches(type: "order.flagged", provider: "unlimint", account: "default"))
    }

    @Test("names are [a-z0-9_-]{1,64} and unique", arguments: [
        "Orders", "orders app", "orders.app", "\"\"", "ünïcode", String(repeating: "a", count: 65), "[a, b]",
    ])
    func badNames(name: String) throws {
        let error = try ConfigDirectory().error(deliveryYAML("name: \(name)\nurl: http://127.0.0.1/\nsecret: \(exampleSecret)"))
        #expect(error?.key == "deliveries[0].name", "\(String(describing: error))")
    }

    @Test("a duplicate or missing name is refused, naming the entry")
    func duplicateName() throws {
        let dir = try ConfigDirectory()
        let duplicate = dir.error(deliveryProviders + """

            deliveries:
              - name: app
                url: http://127.0.0.1/a
                secret: \(exampleSecret)
              - name: app
                url: http://127.0.0.1/b
                secret: \(exampleSecret)
            """)
        #expect(duplicate?.key == "deliveries[1].name")
        #expect(duplicate?.message.contains("unique") == true)
        #expect(dir.error(deliveryYAML("url: http://127.0.0.1/\nsecret: \(exampleSecret)"))?.key == "deliveries[0].name")
        #expect(dir.error(deliveryYAML("name: a\nsecret: \(exampleSecret)"))?.key == "deliveries[0].url")
        #expect(try dir.load(deliveryYAML("name: \(String(repeating: "a", count: 64))\nurl: http://h/\nsecret: \(exampleSecret)"))
            .deliveries.count == 1)
    }

    @Test("URLs: http or https, any host form, default ports and path", arguments: [
        ("https://orders.internal", "https", "orders.internal", 443, "/"),
        ("HTTP://Orders.Internal:8080/a/b", "http", "Orders.Internal", 8080, "/a/b"),
        ("https://[::1]:8443/hooks?x=1&y=%20", "https", "::1", 8443, "/hooks?x=1&y=%20"),
        ("http://10.0.0.7/ipnd", "http", "10.0.0.7", 80, "/ipnd"),
        ("http://orders_app:9000/in", "http", "orders_app", 9000, "/in"),
    ])
    func goodURLs(url: String, scheme: String, host: String, port: Int, path: String) throws {
        let config = try ConfigDirectory().load(deliveryYAML("name: a\nurl: \"\(url)\"\nsecret: \(exampleSecret)"))
        let target = try #require(config.deliveries.first)
        #expect(target.url == url)
        #expect((target.scheme, target.host, target.port, target.pathAndQuery) == (scheme, host, port, path))
    }

    @Test("URLs without http(s), without a host, with credentials or a fragment are refused, never quoted", arguments: [
        "ftp://orders.internal/x", "orders.internal/hooks", "/hooks", "https://ops:s3cretpw@orders.internal/",
        "https://s3cretpw@orders.internal/", "https://orders.internal/#s3cretpw", "https:///hooks", "http://orders.internal:0/",
        "http://orders.internal:70000/", "https://orders.internal/a s3cretpw", "https://orders.internal/é", "mailto:s3cretpw@x",
    ])
    func badURLs(url: String) throws {
        let error = try ConfigDirectory().error(deliveryYAML("name: a\nurl: \"\(url)\"\nsecret: \(exampleSecret)"))
        #expect(error?.key == "deliveries[0].url", "\(url): \(String(describing: error))")
        #expect(error?.description.contains("s3cretpw") == false)
        #expect(error?.description.contains(url) == false)
    }

    @Test("types, providers and accounts must name what exists; a single value is a one-item list")
    func filters() throws {
        let dir = try ConfigDirectory()
        let base = "name: a\nurl: http://127.0.0.1/\nsecret: \(exampleSecret)\n"
        let cases: [(String, String, String)] = [
            ("types: [order.state_changed, order.paid]", "deliveries[0].types[1]", "not an event type"),
            ("types: order.paid", "deliveries[0].types", "not an event type"),
            ("types: []", "deliveries[0].types", "empty list"),
            ("providers: [paypal]", "deliveries[0].providers", "not a provider"),
            ("providers: [unlimint, alipay]", "deliveries[0].providers[1]", "no account under providers"),
            ("accounts: [default, shop3]", "deliveries[0].accounts[1]", "match nothing"),
            ("providers: [juspay]\naccounts: [shop2]", "deliveries[0].accounts", "of juspay"),
            ("accounts: {x: 1}", "deliveries[0].accounts", "found a mapping"),
        ]
        for (yaml, key, words) in cases {
            let error = dir.error(deliveryYAML(base + yaml))
            #expect(error?.key == key, "\(yaml): \(String(describing: error))")
            #expect(error?.message.contains(words) == true, "\(yaml): \(String(describing: error))")
        }
        let single = try dir.load(deliveryYAML(base + "types: order.flagged\nproviders: juspay\naccounts: default"))
        #expect(single.deliveries.first?.types == ["order.flagged"])
        #expect(single.deliveries.first?.providers == ["juspay"])
        #expect(single.deliveries.first?.accounts == ["default"])
    }

    @Test("timeout_seconds is 1-300, max_in_flight 1-256", arguments: [
        ("timeout_seconds: 0", "deliveries[0].timeout_seconds"), ("timeout_seconds: 301", "deliveries[0].timeout_seconds"),
        ("timeout_seconds: 1.5", "deliveries[0].timeout_seconds"), ("max_in_flight: 0", "deliveries[0].max_in_flight"),
        ("max_in_flight: 257", "deliveries[0].max_in_flight"), ("max_in_flight: many", "deliveries[0].max_in_flight"),
        ("colour: red", "deliveries[0].colour"),
    ])
    func ranges(yaml: String, key: String) throws {
        let error = try ConfigDirectory().error(deliveryYAML("name: a\nurl: http://127.0.0.1/\nsecret: \(exampleSecret)\n" + yaml))
        #expect(error?.key == key, "\(String(describing: error))")
    }

    @Test("range ends are accepted")
    func rangeEnds() throws {
        let dir = try ConfigDirectory()
        for (timeout, inFlight) in [(1, 1), (300, 256)] {
            let config = try dir.load(deliveryYAML(
                "name: a\nurl: http://127.0.0.1/\nsecret: \(exampleSecret)\ntimeout_seconds: \(timeout)\nmax_in_flight: \(inFlight)"))
            #expect(config.deliveries.first?.timeoutSeconds == timeout)
            #expect(config.deliveries.first?.maxInFlight == inFlight)
        }
    }

    @Test("ca_file: https only, a readable PEM file, relative to the config directory")
    func caFile() throws {
        let dir = try ConfigDirectory()
        try dir.write("not-pem.txt", "hello\n", mode: 0o644)
        try dir.write("ca.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", mode: 0o644)
        let https = "name: a\nurl: https://orders.internal/\nsecret: \(exampleSecret)\n"
        let http = dir.error(deliveryYAML("name: a\nurl: http://orders.internal/\nsecret: \(exampleSecret)\nca_file: ca.pem"))
        #expect(http?.key == "deliveries[0].ca_file")
        #expect(http?.message.contains("https") == true)
        let missing = dir.error(deliveryYAML(https + "ca_file: nowhere.pem"))
        #expect(missing?.key == "deliveries[0].ca_file")
        #expect(missing?.message.contains("No such file") == true, "\(String(describing: missing))")
        #expect(dir.error(deliveryYAML(https + "ca_file: not-pem.txt"))?.message.contains("no PEM certificate") == true)
        let config = try dir.load(deliveryYAML(https + "ca_file: ca.pem"))
        #expect(config.deliveries.first?.caFile == dir.url.appendingPathComponent("ca.pem").path)
    }
}

@Suite("Config: delivery secrets")
struct DeliverySecretsConfigTests {
    let head = "name: a\nurl: https://orders.internal/\n"

    @Test("a secret is required, inline or from a file, not both")
    func requiredOnce() throws {
        let dir = try ConfigDirectory()
        try dir.write("hook-secret", exampleSecret + "\n")
        let missing = dir.error(deliveryYAML(head))
        #expect(missing?.key == "deliveries[0].secret")
        #expect(missing?.message.contains("required") == true)
        let both = dir.error(deliveryYAML(head + "secret: \(exampleSecret)\nsecret_file: hook-secret"))
        #expect(both?.key == "deliveries[0].secret")
        #expect(both?.message.contains("both") == true)
    }

    @Test("secret files: relative to CREDENTIALS_DIRECTORY, a list rotates, trailing newline dropped")
    func files() throws {
        let dir = try ConfigDirectory()
        try dir.write("creds/hook-new", otherSecret + "\n")
        try dir.write("creds/hook-old", exampleSecret + "\r\n")
        let config = try dir.load(deliveryYAML(head + "secret_file: [hook-new, hook-old]"),
                                  environment: ["CREDENTIALS_DIRECTORY": dir.url.appendingPathComponent("creds").path])
        #expect(config.deliveries.first?.secrets == [try WebhookSecret(parsing: otherSecret), try WebhookSecret(parsing: exampleSecret)])
        // Without CREDENTIALS_DIRECTORY, relative to the config's directory: not there.
        #expect(dir.error(deliveryYAML(head + "secret_file: [hook-new, hook-old]"))?.key == "deliveries[0].secret_file[0]")
    }

    @Test("malformed secrets name their key and never show the secret", arguments: [
        ("secret: not-a-whsec-s3cret", "deliveries[0].secret", "whsec_"),
        ("secret: [\(exampleSecret), \"whsec_s3cret!!\"]", "deliveries[0].secret[1]", "base64"),
        ("secret: whsec_czNjcmV0czNjcmV0", "deliveries[0].secret", "12-byte key"),
        ("secret: \"\"", "deliveries[0].secret", "empty"),
    ])
    func malformedInline(yaml: String, key: String, words: String) throws {
        let error = try ConfigDirectory().error(deliveryYAML(head + yaml))
        #expect(error?.key == key, "\(String(describing: error))")
        #expect(error?.message.contains(words) == true, "\(String(describing: error))")
        #expect(error?.description.contains("s3cret") == false, "\(String(describing: error))")
        #expect(error?.description.contains("czNjcmV0") == false, "\(String(describing: error))")
    }

    @Test("a malformed or empty secret file is refused, naming the file key, not its contents")
    func malformedFile() throws {
        let dir = try ConfigDirectory()
        try dir.write("bad", "whsec_czNjcmV0czNjcmV0\n")
        try dir.write("empty", "\n")
        let bad = dir.error(deliveryYAML(head + "secret_file: bad"))
        #expect(bad?.key == "deliveries[0].secret_file")
        #expect(bad?.message.contains("12-byte key") == true, "\(String(describing: bad))")
        #expect(bad?.description.contains("czNjcmV0") == false)
        #expect(dir.error(deliveryYAML(head + "secret_file: empty"))?.message.hasSuffix("is empty") == true)
    }

    @Test("inline secrets in a world-readable config and world-readable secret files stop startup")
    func permissions() throws {
        let dir = try ConfigDirectory()
        // The providers' own inline secrets would be reported first: keep them in files.
        try dir.write("unlimint", "x\n")
        let providers = "providers:\n  unlimint:\n    - callback_secret_file: unlimint\n"
        let inline = providers + "deliveries:\n  - name: a\n    url: https://h/\n    secret: \(exampleSecret)\n"
        let exposed = dir.error(inline, mode: 0o644)
        #expect(exposed?.key == "deliveries[0].secret")
        #expect(exposed?.message.contains("secret_file") == true)
        #expect(exposed?.description.contains("MfKQ9r8G") == false)
        #expect(dir.error(inline, mode: 0o640) == nil)
        try dir.write("hook", exampleSecret + "\n", mode: 0o644)
        let fromFile = providers + "deliveries:\n  - name: a\n    url: https://h/\n    secret_file: hook\n"
        #expect(dir.error(fromFile, mode: 0o644)?.key == "deliveries[0].secret_file")
        try dir.write("hook", exampleSecret + "\n", mode: 0o440)
        #expect(dir.error(fromFile, mode: 0o644) == nil)
    }

    @Test("loading without secrets keeps each target, without its secrets, and reads no secret file")
    func skip() throws {
        let dir = try ConfigDirectory()
        let path = try dir.write("ipnd.yaml", deliveryYAML(head + "secret_file: [not-there, nor-this]"), mode: 0o644)
        let config = try ConfigLoader.load(path: path, environment: [:], secrets: .skip)
        #expect(config.deliveries.map(\.name) == ["a"])
        #expect(config.deliveries.first?.secrets.isEmpty == true)
        let inline = try dir.write("inline.yaml", deliveryYAML(head + "secret: \(exampleSecret)"))
        #expect(try ConfigLoader.load(path: inline, environment: [:], secrets: .skip).deliveries.first?.secrets.isEmpty == true)
        // Still validated as strictly.
        let bad = try dir.write("bad.yaml", deliveryYAML(head + "secret: nope"))
        #expect(throws: ConfigError.self) { try ConfigLoader.load(path: bad, environment: [:], secrets: .skip) }
    }

    @Test("the summary line shows the target, how many secrets, its filters, never a secret")
    func summary() throws {
        let config = try ConfigDirectory().load(deliveryYAML(head + """
            secret: [\(exampleSecret), \(otherSecret)]
            types: [order.state_changed]
            providers: [juspay, unlimint]
            max_in_flight: 8
            """))
        let line = try #require(config.deliveries.first).summary
        #expect(line == "a -> https://orders.internal/; 2 secret(s), redacted; types: order.state_changed; providers: juspay, unlimint; "
            + "accounts: all; timeout_seconds 15; max_in_flight 8; ca_file: system CAs")
        let described = "\(config.deliveries)"
        for secret in [exampleSecret, otherSecret] {
            #expect(!line.contains(secret.dropFirst(6).prefix(12)))
            #expect(!described.contains(secret.dropFirst(6).prefix(12)))
        }
    }

    @Test("the dev config's commented-out target, uncommented, is valid")
    func devExample() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: repository.appendingPathComponent("config/ipnd.dev.yaml"), encoding: .utf8)
        #expect(try ConfigDirectory().load(text.replacingOccurrences(of: "\n  path: ../var/ipnd.sqlite", with: "\n  path: x.sqlite")
            .replacingOccurrences(of: "simulate_private_key_file: dev-keys/alipay-test.pem", with: "")).deliveries.isEmpty)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex(of: "# deliveries:"))
        for index in start..<lines.count where lines[index].hasPrefix("# ") { lines[index] = String(lines[index].dropFirst(2)) }
        let uncommented = lines.joined(separator: "\n").replacingOccurrences(of: "simulate_private_key_file: dev-keys/alipay-test.pem", with: "")
        let config = try ConfigDirectory().load(uncommented)
        let target = try #require(config.deliveries.first)
        #expect(target.name == "local-app")
        #expect(target.secrets.count == 1)
        #expect(target.types == Set(DeliveryTarget.eventTypes))
    }
}
