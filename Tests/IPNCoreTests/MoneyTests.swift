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

@Suite("Amounts: exact decimal text to integer minor units")
struct MoneyTests {
    @Test("issue examples", arguments: [
        ("6.03", "USD", Int64(603)),
        ("30.00", "USD", 3000),
        ("100", "JPY", 100),
        ("30", "USD", 3000),
        ("0.5", "USD", 50),
        ("0", "USD", 0),
        ("1.234", "KWD", 1234),
        ("4200", "SGD", 420000),
        ("0.0001", "CLF", 1),
    ])
    func converts(text: String, currency: String, minor: Int64) throws {
        #expect(try Money.parseMajor(text, currency: currency) == Money(minor: minor, currency: currency))
    }

    @Test("more decimals than the currency allows is refused, never rounded", arguments: [
        ("6.035", "USD"), ("100.0", "JPY"), ("1.2345", "KWD"), ("6.030", "USD"),
    ])
    func tooManyDecimals(text: String, currency: String) {
        #expect(throws: AmountError.self) { try Money.parseMajor(text, currency: currency) }
        do {
            _ = try Money.parseMajor(text, currency: currency)
        } catch {
            guard case .tooManyDecimals = error else {
                Issue.record("expected tooManyDecimals, got \(error)")
                return
            }
        }
    }

    @Test("anything but plain decimal text is refused", arguments: [
        "", "-1", "+1", "1e2", "6.03e2", "1e400", "0x10", ".5", "5.", "1..2", " 1", "1 ", "01", "1,000", "NaN", "Infinity",
        "١٢", "6.0.3",
    ])
    func malformed(text: String) {
        #expect(throws: AmountError.self) { try Money.parseMajor(text, currency: "USD") }
    }

    @Test("thousands separators only where allowed and well placed")
    func thousands() throws {
        #expect(try Money.parseMajor("1,278.99", currency: "MYR", thousandsSeparators: true).minor == 127_899)
        #expect(try Money.parseMajor("2,741.16", currency: "MYR", thousandsSeparators: true).minor == 274_116)
        #expect(try Money.parseMajor("1,234,567.00", currency: "MYR", thousandsSeparators: true).minor == 123_456_700)
        for bad in ["1,27.99", "12,78.99", ",278.99", "1,278,", "1,,278.00", "0,278.00", "1278,99"] {
            #expect(throws: AmountError.self, "\(bad)") { try Money.parseMajor(bad, currency: "MYR", thousandsSeparators: true) }
        }
        #expect(throws: AmountError.self) { try Money.parseMajor("1,278.99", currency: "MYR") }
    }

    @Test("overflow is refused")
    func overflow() throws {
        #expect(throws: AmountError.self) { try Money.parseMajor("92233720368547758.08", currency: "USD") }
        #expect(try Money.parseMajor("92233720368547758.07", currency: "USD").minor == Int64.max)
        #expect(throws: AmountError.self) { try Money.parseMinor("9223372036854775808", currency: "USD") }
    }

    @Test("unknown currencies are refused")
    func unknownCurrency() {
        for code in ["usd", "XXX1", "ABC", "", "US"] {
            #expect(throws: AmountError.unknownCurrency(code)) { try Money.parseMajor("1.00", currency: code) }
        }
    }

    @Test("minor-unit text")
    func minorText() throws {
        #expect(try Money.parseMinor("4200", currency: "SGD").minor == 4200)
        #expect(try Money.parseMinor("0", currency: "SGD").minor == 0)
        for bad in ["", "-5", "4200.0", "042", "4e3", " 1"] {
            #expect(throws: AmountError.self, "\(bad)") { try Money.parseMinor(bad, currency: "SGD") }
        }
    }

    @Test("formatting back to decimal text")
    func formatting() {
        #expect(Money(minor: 603, currency: "USD").decimal == "6.03")
        #expect(Money(minor: 5, currency: "USD").decimal == "0.05")
        #expect(Money(minor: 100, currency: "JPY").decimal == "100")
        #expect(Money(minor: 1234, currency: "KWD").decimal == "1.234")
        #expect(Money(minor: 0, currency: "EUR").decimal == "0.00")
    }

    @Test("parse then format round-trips for random amounts")
    func roundTrip() throws {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<2000 {
            let currency = ["USD", "JPY", "KWD", "CLF", "MYR"][Int(rng.next() % 5)]
            let minor = Int64(rng.next() % 10_000_000_000)
            let money = Money(minor: minor, currency: currency)
            #expect(try Money.parseMajor(money.decimal, currency: currency) == money)
        }
    }
}
