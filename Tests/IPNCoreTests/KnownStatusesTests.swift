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
import Testing

/// Every provider's `knownStatuses`, the words `ipnd simulate` offers when it is given one the
/// provider never sends: each listed word, simulated and verified, has an effect of its mapping.
@Suite("Each provider's known status words")
struct KnownStatusesTests {
    /// One account of every registered provider, able to sign a simulated notification.
    static func account(_ name: String) throws -> (any NotificationProvider)? {
        switch name {
        case Citcon.name: Citcon(apiSecrets: ["citcon-secret"])
        case IPay88.name: IPay88(merchantCode: "M00001", merchantKeys: ["ipay88-key"])
        case Alipay.name:
            Alipay(clientID: "CLIENT-1", publicKeys: [try RSAPublicKey(derOrPEM: Fixture.text("alipay-test-public-key.b64"))],
                   simulationKey: try RSAPrivateKey(pem: Fixture.text("alipay-test-private-key.pem")))
        case Unlimint.name: Unlimint(secrets: ["unlimint-secret"])
        case Juspay.name: Juspay(usernames: ["user"], passwords: ["password"])
        default: nil
        }
    }

    static func effect(_ account: any NotificationProvider, status: String) throws -> NotificationEffect {
        let spec = SimulationSpec(
            orderRef: "KNOWN-1", status: status, amount: Money(minor: 1000, currency: "USD"),
            path: "/ipn/\(type(of: account).name)", uniqueID: "u-\(status)", time: "2026-11-21T10:00:00Z")
        return try account.verifyRequest(account.simulatedRequest(spec)).effect
    }

    @Test("every listed word maps to an effect; a word the provider never sends is unknown_status",
          arguments: ProviderRegistry.all.map { $0.name })
    func listedWordsAreMapped(_ provider: String) throws {
        let account = try #require(try Self.account(provider), "no test account for \(provider): add one above")
        let words = type(of: account).knownStatuses
        #expect(!words.isEmpty)
        #expect(Set(words).count == words.count, "\(words)")
        #expect(words.contains(type(of: account).simulationDefaults.paidStatus))
        for word in words {
            #expect(try Self.effect(account, status: word) != .unknownStatus, "\(provider) \(word)")
        }
        // The words are the provider's exact spelling: another case is another word.
        #expect(try Self.effect(account, status: "NOT_A_STATUS") == .unknownStatus)
        let recased = words.map { $0.uppercased() == $0 ? $0.lowercased() : $0.uppercased() }.filter { !words.contains($0) }
        for word in recased where word.contains(where: \.isLetter) {
            #expect(try Self.effect(account, status: word) == .unknownStatus, "\(provider) \(word)")
        }
    }
}
