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
import IPNStore
import Testing

@Suite("An order's JSON as events carry it")
struct StoredOrderTests {
    @Test("jsonText is json's text, byte for byte: every member, null or not, escapes, expected, flags")
    func jsonTextMatchesTheRecord() {
        let texts = ["O-1", "", "q\"uote\\back", "tab\tnew\nline\u{01}", "ünï \u{1F600}", "</script>"]
        let amounts: [Money?] = [nil, Money(minor: 1004, currency: "INR"), Money(minor: -5, currency: "JPY"), Money(minor: Int64.max, currency: "KWD")]
        var checked = 0
        for (index, text) in texts.enumerated() {
            for (amountIndex, amount) in amounts.enumerated() {
                let order = StoredOrder(
                    id: amountIndex == 0 ? nil : Int64(index), scope: Scope(provider: "unlimint", account: text),
                    orderRef: text, state: OrderState.allCases[(index + amountIndex) % OrderState.allCases.count], amount: amount,
                    refundedMinor: Int64(index * amountIndex), expected: amounts[(index + amountIndex + 1) % amounts.count],
                    flags: Array(["amount_mismatch", text, "unsettled"].prefix(amountIndex)), providerTxnID: index % 2 == 0 ? nil : text,
                    createdAt: "2026-11-28T05:52:59.512Z", updatedAt: text)
                #expect(order.jsonText == order.json.text, "\(order)")
                checked += 1
            }
        }
        #expect(checked == texts.count * amounts.count)
    }
}
