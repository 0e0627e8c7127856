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

/// The test key pairs IPNCoreTests keeps: the merchant's private key signs Antom inquiries,
/// the "Antom" public key is the account's `public_key`.
private enum TestKeys {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("IPNCoreTests/Fixtures")

    static func text(_ name: String) -> String {
        guard let data = FileManager.default.contents(atPath: fixtures.appendingPathComponent(name).path) else {
            fatalError("missing fixture \(name)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    static var merchantPEM: String { text("antom-merchant-test-private-key.pem") }
    static var antomPublic: String { text("alipay-test-public-key.b64") }
}

/// Secrets the tests configure: none may appear in an error or a summary.
private let secrets = ["trm-pa55-w0rd", "jsp-api-k3y", "ctc-priv-k3y", "cb-s3cret", "usr-s3cret", "pwd-s3cret", "mk-s3cret", "api-s3cret"]

private func expectNoSecret(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
    for secret in secrets { #expect(!text.contains(secret), "\(secret) shown in: \(text)", sourceLocation: sourceLocation) }
    #expect(!text.contains("MIIEvAIBADANBgkqhkiG9w0BAQEFAASC"), "a private key shown in: \(text)", sourceLocation: sourceLocation)
}

/// One account of `provider` with its callback secrets inline and `inquiry` (YAML lines,
/// indented as under the account) appended.
private func account(_ provider: String, inquiry: String?) -> String {
    let keys: String
    switch provider {
    case "ipay88": keys = "merchant_code: M00003\n      merchant_key: mk-s3cret"
    case "alipay": keys = "client_id: SANDBOX_5YTEST0000000001\n      public_key: \(TestKeys.antomPublic)"
    case "unlimint": keys = "callback_secret: cb-s3cret"
    case "juspay": keys = "username: usr-s3cret\n      password: pwd-s3cret"
    default: keys = "api_secret: api-s3cret"
    }
    var yaml = "providers:\n  \(provider):\n    - account: default\n      \(keys)\n"
    if let inquiry { yaml += "      inquiry:" + (inquiry.isEmpty ? "\n" : "\n" + inquiry.split(separator: "\n").map { "        \($0)" }.joined(separator: "\n") + "\n") }
    return yaml
}

@Suite("Config: reconcile and inquiry sections (product.md section 12)")
struct ReconcileConfigTests {
    // MARK: reconcile

    @Test("without a reconcile section: product.md's defaults; accounts without inquiry are never asked")
    func defaults() throws {
        let config = try ConfigDirectory().load(minimalProviders)
        #expect(config.reconcile == ReconcileSettings())
        #expect(config.reconcile.schedule == [600, 1800, 3600, 10_800, 21_600, 43_200, 86_400])
        #expect(config.reconcile.giveUpAfterSeconds == 604_800)
        #expect(config.reconcile.maxInFlight == 4)
        #expect(config.reconcile.perAccountPerMinute == 60)
        #expect(config.reconcile.timeoutSeconds == 10)
        let account = try #require(config.account(provider: "unlimint", name: "default"))
        #expect(account.provider.inquiry == nil)
        #expect(account.inquirySummary == "not configured")
        #expect(config.reconcile.summary == "schedule 10m, 30m, 1h, 3h, 6h, 12h, 1d (then every 1d), give_up_after 7d, max_in_flight 4, "
            + "per_account_per_minute 60, timeout_seconds 10")
        #expect(try ConfigDirectory().load("reconcile:\n" + minimalProviders).reconcile == ReconcileSettings())
    }

    @Test("product.md's sample section loads as written, and every key is read")
    func parsing() throws {
        let dir = try ConfigDirectory()
        let sample = try dir.load("""
            reconcile:
              schedule: [10m, 30m, 1h, 3h, 6h, 12h, 24h]  # waits after the order's last change; then every 24h
              give_up_after: 7d          # after the last change; then flag `unsettled`, stop asking
              max_in_flight: 4           # inquiries on the wire at once, per node
              per_account_per_minute: 60 # at most this many inquiries per provider account
              timeout_seconds: 10
            """ + "\n" + minimalProviders)
        #expect(sample.reconcile == ReconcileSettings())
        let config = try dir.load("""
            reconcile:
              schedule: [90s, 5m, 2h, 2d]
              give_up_after: 3d
              max_in_flight: 256
              per_account_per_minute: 100000
              timeout_seconds: 300
            """ + "\n" + minimalProviders)
        #expect(config.reconcile.schedule == [90, 300, 7200, 172_800])
        #expect(config.reconcile.giveUpAfterSeconds == 259_200)
        #expect(config.reconcile.maxInFlight == 256)
        #expect(config.reconcile.perAccountPerMinute == 100_000)
        #expect(config.reconcile.timeoutSeconds == 300)
        #expect(config.reconcile.summary.hasPrefix("schedule 90s, 5m, 2h, 2d (then every 1d), give_up_after 3d,"))
        let single = try dir.load("reconcile:\n  schedule:\n    - 1m\n  give_up_after: 61s\n" + minimalProviders)
        #expect(single.reconcile.schedule == [60])
    }

    @Test("durations: a positive integer and s, m, h or d", arguments: [
        ("1s", 1), ("59s", 59), ("10m", 600), ("24h", 86_400), ("1d", 86_400), ("3650d", 315_360_000),
    ])
    func durations(text: String, seconds: Int) {
        #expect(ReconcileSettings.Duration.seconds(text) == seconds)
    }

    @Test("not durations", arguments: ["", "0m", "10", "m", "-5m", "+5m", "1.5h", "010m", "10M", "10 m", " 10m", "1w", "3651d", "99999999999d", "１m"])
    func notDurations(text: String) {
        #expect(ReconcileSettings.Duration.seconds(text) == nil)
    }

    @Test("every reconcile error names its key", arguments: [
        ("schedule: 10m", "reconcile.schedule"),
        ("schedule: []", "reconcile.schedule"),
        ("schedule:", "reconcile.schedule"),
        ("schedule: [10m, 5m]", "reconcile.schedule[1]"),
        ("schedule: [10m, 10m]", "reconcile.schedule[1]"),
        ("schedule: [10m, 600s]", "reconcile.schedule[1]"),
        ("schedule: [0m]", "reconcile.schedule[0]"),
        ("schedule: [10]", "reconcile.schedule[0]"),
        ("schedule: [1m, [2m]]", "reconcile.schedule[1]"),
        ("give_up_after: forever", "reconcile.give_up_after"),
        ("give_up_after: 7", "reconcile.give_up_after"),
        ("give_up_after: 10m", "reconcile.give_up_after"),
        ("give_up_after: 5m", "reconcile.give_up_after"),
        ("max_in_flight: 0", "reconcile.max_in_flight"),
        ("max_in_flight: 257", "reconcile.max_in_flight"),
        ("per_account_per_minute: 0", "reconcile.per_account_per_minute"),
        ("per_account_per_minute: 100001", "reconcile.per_account_per_minute"),
        ("timeout_seconds: 0", "reconcile.timeout_seconds"),
        ("timeout_seconds: 301", "reconcile.timeout_seconds"),
        ("timeout_seconds: 10s", "reconcile.timeout_seconds"),
        ("colour: red", "reconcile.colour"),
    ])
    func reconcileErrors(line: String, key: String) throws {
        let error = try ConfigDirectory().error("reconcile:\n  \(line)\n" + minimalProviders)
        #expect(error?.key == key, "\(String(describing: error))")
    }

    @Test("the messages say what is wrong")
    func reconcileMessages() throws {
        let dir = try ConfigDirectory()
        #expect(dir.error("reconcile:\n  schedule: [1h, 30m]\n" + minimalProviders)?.message
            == "30m is not longer than the step before it (1h): the steps are waits after the order's last change, in increasing order")
        #expect(dir.error("reconcile:\n  give_up_after: 10m\n" + minimalProviders)?.message
            == "10m is not longer than the schedule's first step (10m): no order would ever be asked")
        #expect(dir.error("reconcile:\n  give_up_after: soon\n" + minimalProviders)?.message
            == #"must be a duration: a positive integer and s, m, h or d (90s, 10m, 1h, 7d), at most 3650d; got "soon""#)
        #expect(dir.error("reconcile: [1]\n" + minimalProviders)?.key == "reconcile")
    }

    @Test("IPND_RECONCILE_* override the reconcile scalars and the schedule; a bad value is blamed on its variable")
    func environment() throws {
        let dir = try ConfigDirectory()
        let config = try dir.load(minimalProviders, environment: [
            "IPND_RECONCILE_SCHEDULE": "5m, 1h", "IPND_RECONCILE_GIVE_UP_AFTER": "2d", "IPND_RECONCILE_MAX_IN_FLIGHT": "2",
            "IPND_RECONCILE_PER_ACCOUNT_PER_MINUTE": "10", "IPND_RECONCILE_TIMEOUT_SECONDS": "5",
        ])
        #expect(config.reconcile.schedule == [300, 3600])
        #expect(config.reconcile.giveUpAfterSeconds == 172_800)
        #expect(config.reconcile.maxInFlight == 2)
        #expect(config.reconcile.perAccountPerMinute == 10)
        #expect(config.reconcile.timeoutSeconds == 5)
        let bad = dir.error(minimalProviders, environment: ["IPND_RECONCILE_TIMEOUT_SECONDS": "never"])
        #expect(bad?.key == "reconcile.timeout_seconds")
        #expect(bad?.message.hasSuffix("(the value comes from IPND_RECONCILE_TIMEOUT_SECONDS)") == true)
        let badStep = dir.error(minimalProviders, environment: ["IPND_RECONCILE_SCHEDULE": "1h,30m"])
        #expect(badStep?.key == "reconcile.schedule[1]")
        #expect(badStep?.message.hasSuffix("(the value comes from IPND_RECONCILE_SCHEDULE)") == true)
        #expect(dir.error(minimalProviders, environment: ["IPND_RECONCILE_COLOUR": "red"])?.key == "IPND_RECONCILE_COLOUR")
    }

    // MARK: inquiry sections

    @Test("every provider's inquiry section builds its inquiry, with a summary that shows no secret")
    func everyProvider() throws {
        let dir = try ConfigDirectory()
        let cases: [(String, String, String)] = [
            ("ipay88", "url: https://payment.ipay88.com.my/epayment/enquiry.asp",
             "url: https://payment.ipay88.com.my/epayment/enquiry.asp; merchant_code: M00003 (the account's)"),
            ("alipay", "merchant_private_key: |\n" + TestKeys.merchantPEM.split(separator: "\n").map { "  \($0)" }.joined(separator: "\n")
                + "\nkey_version: 2",
             "url: https://open-sea-global.alipay.com/ams/sandbox/api/v1/payments/inquiryPayment; "
                + "merchant_private_key: configured, redacted (RSA 2048); key_version: 2"),
            ("unlimint", "url: https://sandbox.cardpay.com\nterminal_code: \"18833\"\nterminal_password: trm-pa55-w0rd",
             "url: https://sandbox.cardpay.com; terminal_code: 18833; terminal_password: configured, redacted"),
            ("juspay", "api_key: jsp-api-k3y\nmerchant_id: acme",
             "url: https://api.juspay.in; api_key: configured, redacted; merchant_id: acme"),
            ("citcon", "url: https://api.sandbox.citconpay.com/v1\nprivate_key: ctc-priv-k3y",
             "url: https://api.sandbox.citconpay.com/v1; private_key: configured, redacted"),
        ]
        for (provider, inquiry, summary) in cases {
            let config = try dir.load(account(provider, inquiry: inquiry))
            let built = try #require(config.account(provider: provider, name: "default"))
            #expect(built.provider.inquiry != nil, "\(provider)")
            #expect(built.inquirySummary == summary)
            expectNoSecret(built.inquirySummary)
        }
    }

    @Test("an empty inquiry section asks with the provider's defaults, where it needs no credential")
    func emptySection() throws {
        let dir = try ConfigDirectory()
        let config = try dir.load(account("ipay88", inquiry: ""))
        let inquiry = try #require(config.account(provider: "ipay88", name: "default")?.provider.inquiry)
        #expect(inquiry.baseURL == "https://payment.ipay88.com.kh/epayment/enquiry.asp")
        #expect(try dir.load(account("ipay88", inquiry: "{}")).account(provider: "ipay88", name: "default")?.provider.inquiry != nil)
        let juspay = dir.error(account("juspay", inquiry: ""))
        #expect(juspay == ConfigError(key: "providers.juspay[0].inquiry.api_key", "is required (inline or as api_key_file)"))
    }

    @Test("every inquiry error names its full key and shows no secret", arguments: [
        ("juspay", "api_key: jsp-api-k3y", "providers.juspay[0].inquiry.merchant_id"),
        ("juspay", "merchant_id: acme", "providers.juspay[0].inquiry.api_key"),
        ("juspay", "api_key: [jsp-api-k3y, usr-s3cret]\nmerchant_id: acme", "providers.juspay[0].inquiry.api_key"),
        ("juspay", "api_key: jsp-api-k3y\napi_key_file: k\nmerchant_id: acme", "providers.juspay[0].inquiry.api_key"),
        ("juspay", "api_key: \"\"\nmerchant_id: acme", "providers.juspay[0].inquiry.api_key"),
        ("juspay", "api_key: jsp:api-k3y\nmerchant_id: acme", "providers.juspay[0].inquiry.api_key"),
        ("juspay", "api_key_file: [a, b]\nmerchant_id: acme", "providers.juspay[0].inquiry.api_key_file"),
        ("juspay", "username: x\napi_key: jsp-api-k3y\nmerchant_id: acme", "providers.juspay[0].inquiry.username"),
        ("unlimint", "terminal_code: \"1\"\nterminal_password: [trm-pa55-w0rd]", "providers.unlimint[0].inquiry.terminal_password"),
        ("unlimint", "terminal_code_file: c\nterminal_password: trm-pa55-w0rd", "providers.unlimint[0].inquiry.terminal_code_file"),
        ("citcon", "private_key: {a: ctc-priv-k3y}", "providers.citcon[0].inquiry.private_key"),
        ("citcon", "private_key: ctc priv-k3y", "providers.citcon[0].inquiry.private_key"),
        ("citcon", "secret: ctc-priv-k3y", "providers.citcon[0].inquiry.secret"),
        ("ipay88", "merchant_code: M1", "providers.ipay88[0].inquiry.merchant_code"),
        ("alipay", "key_version: 1", "providers.alipay[0].inquiry.merchant_private_key"),
        ("alipay", "merchant_private_key: ctc-priv-k3y", "providers.alipay[0].inquiry.merchant_private_key"),
        ("alipay", "merchant_private_key: MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQCrj0jyCAVjdzYU", "providers.alipay[0].inquiry.merchant_private_key"),
    ])
    func inquiryErrors(provider: String, inquiry: String, key: String) throws {
        let error = try #require(try ConfigDirectory().error(account(provider, inquiry: inquiry)))
        #expect(error.key == key, "\(error)")
        expectNoSecret(error.description)
    }

    @Test("an inquiry section that is not a mapping names it")
    func notAMapping() throws {
        let error = try ConfigDirectory().error("providers:\n  ipay88:\n    - merchant_code: M1\n      merchant_key: mk-s3cret\n      inquiry: yes\n")
        #expect(error?.key == "providers.ipay88[0].inquiry")
    }

    @Test("url: https, or http to a loopback host only; no credentials, query or fragment in it", arguments: [
        ("https://api.juspay.in", true), ("https://api.juspay.in:8443/base/", true), ("http://127.0.0.1:8080", true),
        ("http://127.9.9.9/juspay", true), ("http://[::1]:9000", true), ("http://localhost:9000", true), ("HTTPS://API.JUSPAY.IN", true),
        ("http://api.juspay.in", false), ("http://10.0.0.1", false), ("http://[::2]", false), ("http://localhost.evil.example", false),
        ("ftp://api.juspay.in", false), ("api.juspay.in", false), ("https://", false), ("https://u:jsp-api-k3y@api.juspay.in", false),
        ("https://api.juspay.in/?x=1", false), ("https://api.juspay.in/#x", false), ("https://api juspay.in", false),
    ])
    func url(url: String, accepted: Bool) throws {
        let error = try ConfigDirectory().error(account("juspay", inquiry: "url: \"\(url)\"\napi_key: jsp-api-k3y\nmerchant_id: acme"))
        if accepted {
            #expect(error == nil)
        } else {
            #expect(error?.key == "providers.juspay[0].inquiry.url", "\(String(describing: error))")
            expectNoSecret(error?.description ?? "")
        }
    }

    @Test("the url is kept as written, its scheme lowercased")
    func urlKept() throws {
        let config = try ConfigDirectory().load(account("juspay", inquiry: "url: HTTPS://Sandbox.Juspay.in/x\napi_key: jsp-api-k3y\nmerchant_id: acme"))
        #expect(config.account(provider: "juspay", name: "default")?.provider.inquiry?.baseURL == "https://Sandbox.Juspay.in/x")
    }

    @Test("http to a host that is not loopback says why")
    func plainHTTP() throws {
        let error = try ConfigDirectory().error(account("juspay", inquiry: "url: http://api.juspay.in\napi_key: jsp-api-k3y\nmerchant_id: acme"))
        #expect(error?.message.contains("must be an https URL (http only to a loopback host") == true)
    }

    @Test("_file secrets resolve against $CREDENTIALS_DIRECTORY, lose their line break, and are read")
    func credentialFiles() throws {
        let dir = try ConfigDirectory()
        let credentials = dir.url.appendingPathComponent("credentials").path
        try dir.write("credentials/juspay-api-key", "jsp-api-k3y\n")
        try dir.write("credentials/alipay-merchant-private-key", TestKeys.merchantPEM)
        try dir.write("credentials/unlimint-terminal-password", "trm-pa55-w0rd\r\n")
        try dir.write("credentials/citcon-private-key", "ctc-priv-k3y")
        let yaml = """
            providers:
              juspay:
                - username: usr-s3cret
                  password: pwd-s3cret
                  inquiry:
                    api_key_file: juspay-api-key
                    merchant_id: acme
              alipay:
                - client_id: SANDBOX_5YTEST0000000001
                  public_key: \(TestKeys.antomPublic)
                  inquiry:
                    merchant_private_key_file: alipay-merchant-private-key
              unlimint:
                - callback_secret: cb-s3cret
                  inquiry:
                    terminal_code: "18833"
                    terminal_password_file: unlimint-terminal-password
              citcon:
                - api_secret: api-s3cret
                  inquiry:
                    private_key_file: citcon-private-key
            """
        let config = try dir.load(yaml, environment: ["CREDENTIALS_DIRECTORY": credentials])
        let juspay = try #require(config.account(provider: "juspay", name: "default")?.provider.inquiry)
        let request = try juspay.request(
            for: InquiryOrder(orderRef: "O1", state: .pending, createdAtMillis: 0), context: InquiryContext(nowMillis: 0, requestID: "r"))
        #expect(request.headers.first(named: "Authorization") == "Basic " + Base64.encode(Array("jsp-api-k3y:".utf8)))
        let unlimint = try #require(config.account(provider: "unlimint", name: "default")?.provider.inquiry)
        #expect(unlimint.tokenRequest().map { String(decoding: $0.body, as: UTF8.self) }
            == "grant_type=password&terminal_code=18833&password=trm-pa55-w0rd")
        let citcon = try #require(config.account(provider: "citcon", name: "default")?.provider.inquiry)
        #expect(citcon.tokenRequest()?.headers.first(named: "Authorization") == "Bearer ctc-priv-k3y")
        #expect(config.account(provider: "alipay", name: "default")?.inquirySummary.contains("RSA 2048") == true)
        for account in config.accounts { expectNoSecret(account.inquirySummary) }
        // Without CREDENTIALS_DIRECTORY, relative to the config's directory: not there.
        #expect(dir.error(yaml)?.key == "providers.juspay[0].inquiry.api_key_file")
    }

    @Test("a secret file that is world-readable, missing or empty is refused, naming the _file key")
    func badCredentialFiles() throws {
        let dir = try ConfigDirectory()
        let credentials = dir.url.appendingPathComponent("credentials").path
        let yaml = account("juspay", inquiry: "api_key_file: juspay-api-key\nmerchant_id: acme")
        let environment = ["CREDENTIALS_DIRECTORY": credentials]
        #expect(dir.error(yaml, environment: environment)?.key == "providers.juspay[0].inquiry.api_key_file")
        try dir.write("credentials/juspay-api-key", "jsp-api-k3y", mode: 0o644)
        let exposed = dir.error(yaml, environment: environment)
        #expect(exposed?.key == "providers.juspay[0].inquiry.api_key_file")
        #expect(exposed?.message.contains("world-readable") == true)
        expectNoSecret(exposed?.description ?? "")
        try dir.write("credentials/juspay-api-key", "\n", mode: 0o600)
        #expect(dir.error(yaml, environment: environment)?.key == "providers.juspay[0].inquiry.api_key_file")
        try dir.write("credentials/juspay-api-key", "jsp-api-k3y", mode: 0o640)
        #expect(dir.error(yaml, environment: environment) == nil)
    }

    @Test("an inline inquiry secret counts as an inline secret: a world-readable config holding one is refused")
    func inlineSecretInWorldReadableConfig() throws {
        let dir = try ConfigDirectory()
        try dir.write("credentials/unlimint-callback-secret", "cb-s3cret")
        let yaml = """
            providers:
              unlimint:
                - callback_secret_file: unlimint-callback-secret
                  inquiry:
                    terminal_code: "18833"
                    terminal_password: trm-pa55-w0rd
            """
        let environment = ["CREDENTIALS_DIRECTORY": dir.url.appendingPathComponent("credentials").path]
        let error = dir.error(yaml, mode: 0o644, environment: environment)
        #expect(error?.key == "providers.unlimint[0].inquiry.terminal_password")
        #expect(error?.message.contains("terminal_password_file") == true)
        expectNoSecret(error?.description ?? "")
        #expect(dir.error(yaml, mode: 0o600, environment: environment) == nil)
        // The same section with the secret in a file is fine in a world-readable config.
        try dir.write("credentials/unlimint-terminal-password", "trm-pa55-w0rd")
        let fromFile = yaml.replacingOccurrences(of: "terminal_password: trm-pa55-w0rd", with: "terminal_password_file: unlimint-terminal-password")
        #expect(dir.error(fromFile, mode: 0o644, environment: environment) == nil)
    }

    @Test("loading without secrets reads no inquiry secret file and builds no inquiry, but still checks the keys")
    func skipSecrets() throws {
        let dir = try ConfigDirectory()
        let path = try dir.write("skip.yaml", account("juspay", inquiry: "api_key_file: /nonexistent/juspay-api-key\nmerchant_id: acme"))
        let config = try ConfigLoader.load(path: path, environment: [:], secrets: .skip)
        #expect(config.accounts.isEmpty)
        #expect(config.hasAccount(provider: "juspay", name: "default"))
        let unknown = try dir.write("skip2.yaml", account("juspay", inquiry: "api_key_file: /nonexistent/k\nmerchant_id: acme\ncolour: red"))
        #expect(throws: ConfigError.self) { try ConfigLoader.load(path: unknown, environment: [:], secrets: .skip) }
        let missing = try dir.write("skip3.yaml", account("juspay", inquiry: "merchant_id: acme"))
        do {
            _ = try ConfigLoader.load(path: missing, environment: [:], secrets: .skip)
            Issue.record("a missing api_key was taken")
        } catch {
            #expect(error.key == "providers.juspay[0].inquiry.api_key")
        }
    }

    @Test("the unknown-key message lists what the section takes")
    func unknownKeyMessage() throws {
        let error = try ConfigDirectory().error(account("citcon", inquiry: "privatekey: ctc-priv-k3y"))
        #expect(error == ConfigError(
            key: "providers.citcon[0].inquiry.privatekey", "unknown key; providers.citcon[0].inquiry takes url, private_key, private_key_file"))
        let ipay88 = try ConfigDirectory().error(account("ipay88", inquiry: "merchant_code: M1"))
        #expect(ipay88?.message == "unknown key; providers.ipay88[0].inquiry takes url")
    }
}
