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

/// ISO 4217 currency codes and their minor-unit exponents.
public enum Currency {
    /// The number of decimals of `code`'s minor unit, or an error for a code that is not an
    /// active (or recently withdrawn) ISO 4217 currency.
    public static func exponent(of code: String) throws(AmountError) -> Int {
        guard let exponent = exponents[code] else { throw .unknownCurrency(code) }
        return exponent
    }

    public static func isKnown(_ code: String) -> Bool { exponents[code] != nil }

    private static let zero = "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF"
    private static let three = "BHD IQD JOD KWD LYD OMR TND"
    private static let four = "CLF UYW"
    private static let two = """
        AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN BWP \
        BYN BZD CAD CDF CHE CHF CHW CNY COP COU CRC CUC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR \
        FJD FKP GBP GEL GHS GIP GMD GTQ GYD HKD HNL HRK HTG HUF IDR ILS INR IRR JMD KES KGS KHR \
        KPW KYD KZT LAK LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR \
        MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK \
        SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD USN \
        UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG ZWL
        """

    private static let exponents: [String: Int] = {
        var table: [String: Int] = [:]
        for (codes, exponent) in [(zero, 0), (two, 2), (three, 3), (four, 4)] {
            for code in codes.split(separator: " ") { table[String(code)] = exponent }
        }
        return table
    }()
}
