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
import IPNTestSupport
import Testing

/// A real daemon whose five providers' accounts each have an `inquiry` section pointing at one
/// provider double, with the credentials the double expects.
struct ReconcileHarness {
    let double: ProviderDouble
    let daemon: TestDaemon

    /// The providers, in the order the tests walk them.
    static let providers = ["ipay88", "alipay", "unlimint", "juspay", "citcon"]

    /// The `reconcile:` section: a schedule of seconds for the tests.
    static func reconcileYAML(schedule: String = "[1s, 1h]", giveUpAfter: String = "2h", maxInFlight: Int = 8,
                              perMinute: Int = 6000, timeout: Int = 2) -> String {
        """
        reconcile:
          schedule: \(schedule)
          give_up_after: \(giveUpAfter)
          max_in_flight: \(maxInFlight)
          per_account_per_minute: \(perMinute)
          timeout_seconds: \(timeout)
        """
    }

    /// The providers with their notification secrets (as `TestDaemon`'s) and an `inquiry` each.
    /// The Antom merchant key is written to `directory` with mode 600, as a secret file must be.
    static func providersYAML(double: ProviderDouble, directory: URL, juspayAPIKey: String = ProviderDouble.juspayAPIKey) throws -> String {
        let keyPath = directory.appendingPathComponent("antom-merchant-key.pem").path
        try Data(Fixture.bytes("antom-merchant-test-private-key.pem")).write(to: URL(fileURLWithPath: keyPath))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
        let antomPublicKey = String(decoding: Fixture.bytes("alipay-test-public-key.b64"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return """
            providers:
              citcon:
                - account: default
                  api_secret: \(TestDaemon.citconSecret)
                  api_token: \(TestDaemon.citconToken)
                  inquiry:
                    url: \(double.inquiryURL("citcon"))
                    private_key: \(ProviderDouble.citconPrivateKey)
              ipay88:
                - account: default
                  merchant_code: \(TestDaemon.ipay88Code)
                  merchant_key: \(TestDaemon.ipay88Key)
                  signature: auto
                  inquiry:
                    url: \(double.inquiryURL("ipay88"))
              alipay:
                - account: default
                  client_id: \(TestDaemon.alipayClientID)
                  public_key: "\(antomPublicKey)"
                  simulate_private_key_file: \(TestDaemon.alipayPrivateKeyPath)
                  inquiry:
                    url: \(double.inquiryURL("alipay"))
                    merchant_private_key_file: \(keyPath)
              unlimint:
                - account: default
                  callback_secret: \(TestDaemon.unlimintSecret)
                  inquiry:
                    url: \(double.inquiryURL("unlimint"))
                    terminal_code: \(ProviderDouble.unlimintTerminal)
                    terminal_password: \(ProviderDouble.unlimintPassword)
                - account: shop2
                  callback_secret: shop2-secret
              juspay:
                - account: default
                  username: \(TestDaemon.juspayUsername)
                  password: "\(TestDaemon.juspayPassword)"
                  inquiry:
                    url: \(double.inquiryURL("juspay"))
                    api_key: \(juspayAPIKey)
                    merchant_id: \(ProviderDouble.juspayMerchant)
            """
    }

    static func start(
        backend: Backend = .sqlite, reconcile: String = reconcileYAML(), double: ProviderDouble? = nil,
        postgresDatabase: (server: PostgresTestServer, database: String)? = nil, tokenTTLSeconds: Int = 300,
        extraYAML: String = "", storeDirectory: URL? = nil
    ) async throws -> ReconcileHarness {
        let double = try double ?? ProviderDouble(tokenTTLSeconds: tokenTTLSeconds)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-reconcile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let daemon = try await TestDaemon.start(
            backend: backend, providersYAML: try providersYAML(double: double, directory: directory),
            storeDirectory: storeDirectory, extraYAML: reconcile + "\n" + extraYAML, postgresDatabase: postgresDatabase)
        return ReconcileHarness(double: double, daemon: daemon)
    }

    func stop() async throws {
        try await daemon.stop()
        double.stop()
    }

    /// The usual currency of each provider's orders in these tests.
    static func currency(_ provider: String) -> String {
        switch provider {
        case "ipay88": "MYR"
        case "juspay": "INR"
        default: "USD"
        }
    }

    /// Registers the expectation through the ops API, as `orders expect` does.
    func expect(_ provider: String, _ order: String, amount: String = "12.34", currency: String? = nil) async throws {
        let body = #"{"account":"default","amount":"\#(amount)","currency":"\#(currency ?? Self.currency(provider))"}"#
        let answer = try await daemon.send(.PUT, ops: "/api/v1/orders/\(provider)/\(order)/expectation", body: body)
        #expect(answer.status == 200, "\(answer.text)")
    }

    /// Asks now through the ops API; returns the status and the body as an object.
    func askNow(_ provider: String, _ order: String, account: String = "default") async throws -> (status: Int, object: JSONDict) {
        let answer = try await daemon.send(.POST, ops: "/api/v1/orders/\(provider)/\(order)/inquiries?account=\(account)", body: "")
        return (answer.status, (try? parseJSONObject(answer.text)) ?? [:])
    }

    /// The order as the ops API shows it.
    func order(_ provider: String, _ order: String) async throws -> JSONDict {
        try await daemon.apiObject("/api/v1/orders/\(provider)/\(order)")
    }

    /// Waits until the order is in `state`, at most `timeout` seconds; returns its last state.
    @discardableResult
    func waitForState(_ provider: String, _ ref: String, _ state: String, timeout: Double = 15) async throws -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let now = try daemon.column(
                "SELECT state FROM orders WHERE provider = ? AND account = 'default' AND order_ref = ?", [provider, ref]).first ?? nil
            if now == state || Date() > deadline { return now }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// The inquiry records of an order, oldest first, from the store.
    func inquiryOutcomes(_ provider: String, _ ref: String) throws -> [String] {
        try daemon.column("SELECT outcome FROM inquiries WHERE provider = ? AND order_ref = ? ORDER BY id", [provider, ref]).compactMap { $0 }
    }
}
