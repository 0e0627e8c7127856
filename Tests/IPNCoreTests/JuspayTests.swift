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
import Testing

@testable import IPNCore

private enum Account {
    static let username = "acme_webhooks"
    static let password = "s3cr3t-Pa55"

    static func settings(usernames: [String] = [Account.username], passwords: [String] = [Account.password]) -> AccountSettings {
        AccountSettings(
            provider: "juspay",
            account: "default",
            keyPath: "providers.juspay[0]",
            lists: ["username": usernames, "password": passwords]
        )
    }

    static func make() throws -> Juspay { try Juspay(settings: settings()) }

    /// The Authorization value built by hand, not by the signer under test.
    static func basic(_ credentials: String) -> String {
        "Basic " + Data(credentials.utf8).base64EncodedString()
    }

    static func request(authorization: String? = basic("\(Account.username):\(Account.password)"), body: [UInt8]) -> RawRequest {
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
        if let authorization { headers.append(("Authorization", authorization)) }
        return RawRequest(target: "/ipn/juspay", headers: headers, body: body)
    }
}

private func rejection(_ account: Juspay, _ request: RawRequest) -> RejectReason? {
    do {
        _ = try account.verify(request)
        return nil
    } catch {
        return error.reason
    }
}

private let vectorBody = Fixture.bytes("juspay-order-succeeded.json")

/// Juspay provider tests; `swift test --filter JuspayTests` runs them all.
@Suite struct JuspayTests {
    @Suite("Juspay vector and credentials")
    struct CredentialTests {
        @Test func vectorMapsToPaid() throws {
            let notification = try Account.make().verify(Account.request(body: vectorBody))
            #expect(notification.kind == .payment)
            #expect(notification.orderRef == "ORD-1001")
            #expect(notification.providerTxnID == "ord_5f2c9a1b7e3d4c6a8b0e1f2a3b4c5d6e")
            #expect(notification.detail["txn_id"] == "acme-ORD-1001-1")
            #expect(notification.detail["event_name"] == "ORDER_SUCCEEDED")
            #expect(notification.providerStatus == "CHARGED")
            #expect(notification.effect == .transition(.paid))
            #expect(notification.amount == Money(minor: 60000, currency: "INR"))
            #expect(notification.dedupKey == "evt_V2_8d1e5a4c2b7f4e9a9c3d2b1a0f9e8d7c")
            #expect(notification.link == nil)
        }

        @Test func signerMatchesRFC7617Example() {
            #expect(Juspay.authorization(username: "Aladdin", password: "open sesame") == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
            #expect(Juspay.authorization(username: Account.username, password: Account.password)
                == Account.basic("\(Account.username):\(Account.password)"))
        }

        @Test func wrongPasswordFails() throws {
            let request = Account.request(authorization: Account.basic("\(Account.username):s3cr3t-Pa56"), body: vectorBody)
            #expect(rejection(try Account.make(), request) == .badCredentials)
        }

        @Test func wrongUsernameFails() throws {
            let request = Account.request(authorization: Account.basic("acme_webhook:\(Account.password)"), body: vectorBody)
            #expect(rejection(try Account.make(), request) == .badCredentials)
        }

        @Test func swappedPartsFail() throws {
            let request = Account.request(authorization: Account.basic("\(Account.password):\(Account.username)"), body: vectorBody)
            #expect(rejection(try Account.make(), request) == .badCredentials)
        }

        @Test func missingHeaderFails() throws {
            #expect(rejection(try Account.make(), Account.request(authorization: nil, body: vectorBody)) == .missingHeader)
        }

        @Test func repeatedHeaderFails() throws {
            var request = Account.request(body: vectorBody)
            request.headers.append(("authorization", Account.basic("\(Account.username):\(Account.password)")))
            #expect(rejection(try Account.make(), request) == .repeatedHeader)
        }

        @Test(arguments: [
            "Bearer " + Data("acme_webhooks:s3cr3t-Pa55".utf8).base64EncodedString(),
            Data("acme_webhooks:s3cr3t-Pa55".utf8).base64EncodedString(),
            "Digest username=\"acme_webhooks\"",
            "Basic",
            "Basic ",
            "",
        ])
        func nonBasicSchemeFails(value: String) throws {
            #expect(rejection(try Account.make(), Account.request(authorization: value, body: vectorBody)) == .badCredentials)
        }

        @Test(arguments: ["Basic !!!notbase64", "Basic YWNtZV93ZWJob29rczpzM2NyM3QtUGE1NQ", "Basic YWJj ZGVm", "Basic YWNtZV93ZWJob29rcw=="])
        func badBase64OrNoColonFails(value: String) throws {
            #expect(rejection(try Account.make(), Account.request(authorization: value, body: vectorBody)) == .badCredentials)
        }

        @Test func schemeIsCaseInsensitiveAndSurroundingSpaceIsIgnored() throws {
            let token = Data("\(Account.username):\(Account.password)".utf8).base64EncodedString()
            for value in ["basic \(token)", "BASIC \(token)", " Basic  \(token) "] {
                #expect(rejection(try Account.make(), Account.request(authorization: value, body: vectorBody)) == nil, "\(value)")
            }
        }

        @Test func passwordContainingColonsWorks() throws {
            let account = try Juspay(settings: Account.settings(passwords: ["a:b::c:"]))
            let good = Account.request(authorization: Account.basic("\(Account.username):a:b::c:"), body: vectorBody)
            #expect(rejection(account, good) == nil)
            let cut = Account.request(authorization: Account.basic("\(Account.username):a:b::c"), body: vectorBody)
            #expect(rejection(account, cut) == .badCredentials)
        }

        @Test func emptyPasswordIsOnlyAcceptedWhenConfigured() throws {
            let request = Account.request(authorization: Account.basic("\(Account.username):"), body: vectorBody)
            #expect(rejection(try Account.make(), request) == .badCredentials)
        }

        @Test func anyListedUsernameWithAnyListedPasswordVerifies() throws {
            let account = try Juspay(settings: Account.settings(usernames: ["old", "new"], passwords: ["p1", "p2"]))
            for (user, password) in [("old", "p1"), ("old", "p2"), ("new", "p1"), ("new", "p2")] {
                let request = Account.request(authorization: Account.basic("\(user):\(password)"), body: vectorBody)
                #expect(rejection(account, request) == nil, "\(user)")
            }
            for (user, password) in [("other", "p1"), ("new", "p3"), ("p1", "new")] {
                let request = Account.request(authorization: Account.basic("\(user):\(password)"), body: vectorBody)
                #expect(rejection(account, request) == .badCredentials, "\(user)")
            }
        }

        @Test func badCredentialsAnswer401WithChallenge() {
            let answer = Juspay.answer(for: Rejection(.badCredentials, "x"))
            #expect(answer.status == 401)
            #expect(answer.headers.count == 1)
            #expect(answer.headers.first?.name == "WWW-Authenticate")
            #expect(answer.headers.first?.value == #"Basic realm="ipnd""#)
            for reason in [RejectReason.missingHeader, .repeatedHeader] {
                let answer = Juspay.answer(for: Rejection(reason, "x", header: "authorization"))
                #expect(answer.status == 401, "\(reason)")
                #expect(answer.headers.first?.value == #"Basic realm="ipnd""#, "\(reason)")
                // Another header's trouble is a malformed request, not a failed authentication.
                #expect(Juspay.answer(for: Rejection(reason, "x", header: "Content-Type")).status == 400, "\(reason)")
            }
            let malformed = Juspay.answer(for: Rejection(.malformedBody, "x"))
            #expect(malformed.status == 400)
            #expect(malformed.headers.isEmpty)
            #expect(String(decoding: malformed.body, as: UTF8.self) == "malformed request")
        }

        @Test func acknowledgementIsPlainOK() {
            #expect(Juspay.acknowledgement.status == 200)
            #expect(Juspay.acknowledgement.contentType == "text/plain")
            #expect(Juspay.acknowledgement.body == Array("OK".utf8))
        }

        @Test func missingSettingsAreConfigErrors() {
            #expect(throws: AccountConfigError(key: "providers.juspay[0].password", message: "is required")) {
                try Juspay(settings: Account.settings(passwords: []))
            }
            #expect(throws: AccountConfigError(key: "providers.juspay[0].username", message: "is required")) {
                try Juspay(settings: Account.settings(usernames: []))
            }
        }

        @Test func summaryRedactsSecrets() throws {
            let text = try Account.make().summary.map { "\($0.key)=\($0.value)" }.joined(separator: "\n")
            #expect(!text.contains(Account.username))
            #expect(!text.contains(Account.password))
        }

        @Test func rejectionDetailsCarryNoSecret() throws {
            let request = Account.request(authorization: Account.basic("\(Account.username):wrong-password"), body: vectorBody)
            let account = try Account.make()
            do {
                _ = try account.verify(request)
                Issue.record("wrong password verified")
            } catch {
                #expect(!error.detail.contains("wrong-password"))
                #expect(!error.detail.contains(Account.username))
            }
        }

        @Test func registered() {
            #expect(ProviderRegistry.provider(named: "juspay").map(ObjectIdentifier.init) == ObjectIdentifier(Juspay.self))
        }
    }

    @Suite("Juspay mapping")
    struct MappingTests {
        static func body(
            event: String = "ORDER_SUCCEEDED",
            status: String = "CHARGED",
            amount: String = "600",
            refunded: String = "0",
            currency: String = "INR"
        ) -> [UInt8] {
            Array((
                #"{"id":"evt_1","date_created":"2026-11-21T10:15:30Z","event_name":"\#(event)","content":{"order":{"#
                + #""id":"ord_1","order_id":"ORD-9","status":"\#(status)","amount":\#(amount),"currency":"\#(currency)","#
                + #""amount_refunded":\#(refunded),"txn_id":"ORD-9-1"}}}"#
            ).utf8)
        }

        static func verify(_ body: [UInt8]) throws -> VerifiedNotification {
            try Account.make().verify(Account.request(body: body))
        }

        static func reason(_ body: [UInt8]) throws -> RejectReason? {
            rejection(try Account.make(), Account.request(body: body))
        }

        @Test(arguments: [
            ("CHARGED", NotificationEffect.transition(.paid)),
            ("AUTHORIZED", .transition(.authorized)),
            ("NEW", .transition(.pending)),
            ("STARTED", .transition(.pending)),
            ("PENDING_VBV", .transition(.pending)),
            ("AUTHORIZING", .transition(.pending)),
            ("VBV_SUCCESSFUL", .transition(.pending)),
            ("CAPTURE_INITIATED", .transition(.pending)),
            ("VOID_INITIATED", .transition(.pending)),
            ("AUTHENTICATION_FAILED", .transition(.failed)),
            ("AUTHORIZATION_FAILED", .transition(.failed)),
            ("JUSPAY_DECLINED", .transition(.failed)),
            ("CAPTURE_FAILED", .transition(.failed)),
            ("VOIDED", .transition(.canceled)),
            ("COD_INITIATED", .unknownStatus),
            ("charged", .unknownStatus),
        ])
        func orderStatus(status: String, effect: NotificationEffect) throws {
            let notification = try Self.verify(Self.body(event: "ORDER_UPDATED", status: status))
            #expect(notification.effect == effect)
            #expect(notification.kind == .payment)
            #expect(notification.providerStatus == status)
            #expect(notification.orderRef == "ORD-9")
            #expect(notification.dedupKey == "evt_1")
        }

        @Test func autoRefundedIsAFullRefund() throws {
            let notification = try Self.verify(Self.body(event: "AUTO_REFUND_SUCCEEDED", status: "AUTO_REFUNDED", refunded: "600"))
            let amount = Money(minor: 60000, currency: "INR")
            #expect(notification.effect == .refund(RefundInfo(cumulativeRefundedMinor: 60000, fullyRefunded: true, orderAmount: amount)))
        }

        @Test func orderRefundedPartially() throws {
            let notification = try Self.verify(Self.body(event: "ORDER_REFUNDED", amount: #""600.00""#, refunded: "150.5"))
            let amount = Money(minor: 60000, currency: "INR")
            #expect(notification.kind == .refund)
            #expect(notification.providerStatus == "ORDER_REFUNDED")
            #expect(notification.effect == .refund(RefundInfo(cumulativeRefundedMinor: 15050, fullyRefunded: false, orderAmount: amount)))
            #expect(notification.orderRef == "ORD-9")
            #expect(notification.dedupKey == "evt_1")
        }

        @Test(arguments: ["600", "600.00", #""600""#])
        func orderRefundedFully(refunded: String) throws {
            let notification = try Self.verify(Self.body(event: "ORDER_REFUNDED", refunded: refunded))
            let amount = Money(minor: 60000, currency: "INR")
            #expect(notification.effect == .refund(RefundInfo(cumulativeRefundedMinor: 60000, fullyRefunded: true, orderAmount: amount)))
        }

        @Test func orderRefundedDecidesEvenWhenStatusIsCharged() throws {
            // The event decides, not the order status it also carries (product.md section 5).
            let notification = try Self.verify(Self.body(event: "ORDER_REFUNDED", status: "CHARGED", refunded: "1"))
            #expect(notification.effect == .refund(RefundInfo(
                cumulativeRefundedMinor: 100, fullyRefunded: false, orderAmount: Money(minor: 60000, currency: "INR")
            )))
        }

        @Test func orderRefundedWithoutRefundedAmountMeansRefunded() throws {
            // Authentic: rejecting it would only make Juspay resend it; the event says refunded.
            let body = #"{"id":"e","event_name":"ORDER_REFUNDED","content":{"order":{"order_id":"O","status":"CHARGED","amount":1,"currency":"INR"}}}"#
            let notification = try Self.verify(Array(body.utf8))
            #expect(notification.kind == .refund)
            #expect(notification.effect == .refund(RefundInfo(
                cumulativeRefundedMinor: nil, fullyRefunded: true, orderAmount: Money(minor: 100, currency: "INR")
            )))
        }

        @Test func chargebackEvents() throws {
            let received = try Self.verify(Self.body(event: "CHARGEBACK_RECEIVED"))
            #expect(received.effect == .transition(.chargedBack))
            #expect(received.kind == .chargeback)
            #expect(received.providerStatus == "CHARGEBACK_RECEIVED")
            let resolved = try Self.verify(Self.body(event: "CHARGEBACK_RESOLVED_IN_MERCHANT_FAVOUR"))
            #expect(resolved.effect == .chargebackReversal)
            #expect(resolved.kind == .chargeback)
            #expect(resolved.orderRef == "ORD-9")
            let lost = try Self.verify(Self.body(event: "CHARGEBACK_RESOLVED_IN_CUSTOMER_FAVOUR"))
            #expect(lost.effect == .transition(.chargedBack))
        }

        @Test(arguments: [
            "ORDER_REFUND_FAILED", "AUTO_REFUND_FAILED", "REFUND_MANUAL_REVIEW_NEEDED",
            "CHARGEBACK_UNDER_REVIEW", "CHARGEBACK_EXPIRED", "CHARGEBACK_CANCELED",
        ])
        func failedRefundsAndChargebackStagesAreRecorded(event: String) throws {
            // They carry the order's unchanged status (CHARGED): applying it would be wrong.
            let notification = try Self.verify(Self.body(event: event, status: "CHARGED"))
            #expect(notification.effect == .record)
            #expect(notification.kind == (event.hasPrefix("CHARGEBACK") ? .chargeback : .refund))
            #expect(notification.providerStatus == event)
            #expect(notification.orderRef == "ORD-9")
        }

        @Test func otherEventsUseTheOrderStatus() throws {
            for (event, status, effect) in [
                ("ORDER_FAILED", "AUTHORIZATION_FAILED", NotificationEffect.transition(.failed)),
                ("TXN_CREATED", "PENDING_VBV", .transition(.pending)),
                ("ORDER_SUCCEEDED", "CHARGED", .transition(.paid)),
                ("AUTO_REFUND_SUCCEEDED", "AUTO_REFUNDED", .refund(RefundInfo(
                    cumulativeRefundedMinor: 0, fullyRefunded: true, orderAmount: Money(minor: 60000, currency: "INR")))),
            ] {
                #expect(try Self.verify(Self.body(event: event, status: status)).effect == effect, "\(event)")
            }
        }

        @Test func mandateAndNotificationEventsAreRecorded() throws {
            let mandate = #"{"id":"evt_m","event_name":"MANDATE_ACTIVATED","content":{"mandate":{"mandate_id":"m_1","mandate_status":"ACTIVE","order_id":"ORD-M"}}}"#
            let recorded = try Self.verify(Array(mandate.utf8))
            #expect(recorded.effect == .record)
            #expect(recorded.kind == .mandate)
            #expect(recorded.orderRef == "ORD-M")
            #expect(recorded.providerTxnID == "m_1")
            #expect(recorded.dedupKey == "evt_m")

            let notice = #"{"id":"evt_n","event_name":"NOTIFICATION_SUCCEEDED","content":{"notification":{"id":"n_1","status":"SUCCESS"}}}"#
            let noticed = try Self.verify(Array(notice.utf8))
            #expect(noticed.effect == .record)
            #expect(noticed.kind == .event)
            #expect(noticed.orderRef == nil)
            #expect(noticed.providerTxnID == "n_1")
            #expect(noticed.dedupKey == "evt_n")
        }

        @Test(arguments: [
            ("600", "INR", Int64(60000)),
            (#""600""#, "INR", 60000),
            ("6.03", "USD", 603),
            (#""1278.99""#, "MYR", 127_899),
            ("100", "JPY", 100),
            (#""0.5""#, "KWD", 500),
        ])
        func amountsAsNumberOrString(amount: String, currency: String, minor: Int64) throws {
            let notification = try Self.verify(Self.body(amount: amount, currency: currency))
            #expect(notification.amount == Money(minor: minor, currency: currency))
        }

        @Test(arguments: ["6.005", #""6.005""#, #""abc""#, "true", #""""#, "-1", "1e2", #""1,000""#, #"{"v":1}"#, "99999999999999999999"])
        func badAmountsAreRejected(amount: String) throws {
            #expect(try Self.reason(Self.body(amount: amount)) == .badAmount)
        }

        @Test func amountWithUnknownCurrencyIsRejected() throws {
            #expect(try Self.reason(Self.body(currency: "RUPEE")) == .unknownCurrency)
        }

        @Test func missingAmountIsNoAmount() throws {
            let body = #"{"id":"e","event_name":"ORDER_SUCCEEDED","content":{"order":{"order_id":"O","status":"CHARGED"}}}"#
            let notification = try Self.verify(Array(body.utf8))
            #expect(notification.amount == nil)
            #expect(notification.effect == .transition(.paid))
        }

        @Test(arguments: [
            #"{"event_name":"ORDER_SUCCEEDED","content":{"order":{"order_id":"O","status":"CHARGED"}}}"#,
            #"{"id":"","event_name":"ORDER_SUCCEEDED","content":{"order":{"order_id":"O","status":"CHARGED"}}}"#,
            #"{"id":"e","content":{"order":{"order_id":"O","status":"CHARGED"}}}"#,
            #"{"id":"e","event_name":"ORDER_SUCCEEDED"}"#,
            #"{"id":"e","event_name":"ORDER_SUCCEEDED","content":{}}"#,
            #"{"id":"e","event_name":"ORDER_SUCCEEDED","content":{"order":{"status":"CHARGED"}}}"#,
            #"{"id":"e","event_name":"ORDER_SUCCEEDED","content":{"order":{"order_id":"O"}}}"#,
            #"{"id":"e","event_name":"ORDER_SUCCEEDED","content":{"order":{"order_id":"O","status":"CHARGED","amount":1}}}"#,
        ])
        func missingFieldsAreRejected(body: String) throws {
            #expect(try Self.reason(Array(body.utf8)) == .missingField)
        }

        @Test func malformedBodiesAreRejected() throws {
            #expect(try Self.reason(Array(#"{"id":"e","#.utf8)) == .malformedBody)
            #expect(try Self.reason(Array("[1]".utf8)) == .malformedBody)
            var request = Account.request(body: vectorBody)
            request.headers[0] = ("Content-Type", "text/plain")
            #expect(rejection(try Account.make(), request) == .unsupportedContentType)
        }

        @Test func credentialsAreCheckedBeforeTheBody() throws {
            let request = Account.request(authorization: Account.basic("x:y"), body: Array("not json".utf8))
            #expect(rejection(try Account.make(), request) == .badCredentials)
        }
    }

    @Suite("Juspay properties and round trips")
    struct PropertyTests {
        @Test func randomCredentialsVerifyAndAnyOneByteChangeFails() throws {
            var rng = SplitMix64(seed: 0x1D5_BA7)
            for iteration in 0..<300 {
                let username = rng.printable(length: 1 + Int(rng.next() % 24)).replacingOccurrences(of: ":", with: "#")
                let password = rng.printable(length: Int(rng.next() % 40))
                let account = Juspay(usernames: [username], passwords: [password])
                let status = ["CHARGED", "AUTHORIZED", "NEW", "VOIDED", "JUSPAY_DECLINED"][Int(rng.next() % 5)]
                let body = MappingTests.body(event: "ORDER_UPDATED", status: status, amount: "\(rng.next() % 1_000_000)")
                let authorization = Juspay.authorization(username: username, password: password)
                let request = Account.request(authorization: authorization, body: body)
                #expect(rejection(account, request) == nil, "iteration \(iteration)")

                let credentials = Array("\(username):\(password)".utf8)
                let (mutated, index) = rng.mutatingOneByte(credentials)
                let mutatedRequest = Account.request(authorization: "Basic " + Data(mutated).base64EncodedString(), body: body)
                #expect(rejection(account, mutatedRequest) == .badCredentials, "iteration \(iteration) byte \(index)")
            }
        }

        @Test(arguments: [
            ("CHARGED", NotificationEffect.transition(.paid)),
            ("AUTHORIZED", .transition(.authorized)),
            ("AUTHORIZATION_FAILED", .transition(.failed)),
            ("PENDING_VBV", .transition(.pending)),
        ])
        func simulatedRequestsVerify(status: String, effect: NotificationEffect) throws {
            let account = try Juspay(settings: Account.settings(usernames: ["u"], passwords: ["p:with:colons"]))
            for amount in [Money(minor: 60000, currency: "INR"), Money(minor: 603, currency: "USD"), Money(minor: 100, currency: "JPY")] {
                let spec = SimulationSpec(
                    orderRef: "SIM-\"7\"",
                    status: status,
                    amount: amount,
                    path: "/ipn/juspay",
                    uniqueID: "u-1",
                    time: "2026-11-21T10:15:30Z"
                )
                let request = try account.simulatedRequest(spec)
                let notification = try account.verify(request)
                #expect(notification.effect == effect)
                #expect(notification.orderRef == "SIM-\"7\"")
                #expect(notification.amount == amount)
                #expect(notification.providerStatus == status)
                let amountField = try #require(JSONParser.parseObject(request.body).object("content")?.object("order")?["amount"])
                #expect(amountField == .number(amount.decimal))
                let stranger = Juspay(usernames: ["u"], passwords: ["p"])
                #expect(rejection(stranger, request) == .badCredentials)
            }
        }
    }
}
