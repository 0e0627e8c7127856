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

/// An amount in integer minor units of an ISO 4217 currency. Never floating point.
public struct Money: Sendable, Hashable, Codable, CustomStringConvertible {
    public let minor: Int64
    public let currency: String

    public init(minor: Int64, currency: String) {
        self.minor = minor
        self.currency = currency
    }

    /// The amount as a decimal string in major units (`603` USD -> `6.03`).
    public var decimal: String { Money.decimalText(minor: minor, currency: currency) }

    public var description: String { "\(decimal) \(currency)" }

    /// Converts exact major-unit decimal text to minor units using the currency's ISO 4217
    /// exponent: `6.03` USD -> 603, `100` JPY -> 100. More decimals than the currency has,
    /// signs, exponents, or anything but digits and one point are refused, never rounded.
    /// With `thousandsSeparators`, commas between groups of three digits are allowed
    /// (`1,278.99`).
    public static func parseMajor(
        _ text: String,
        currency: String,
        thousandsSeparators: Bool = false
    ) throws(AmountError) -> Money {
        let exponent = try Currency.exponent(of: currency)
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw .malformed(text) }
        let point = bytes.firstIndex(of: UInt8(ascii: "."))
        let integerPart = bytes[..<(point ?? bytes.endIndex)]
        let fractionPart = point.map { bytes[($0 + 1)...] } ?? []
        if point != nil, fractionPart.isEmpty { throw .malformed(text) }
        let integerDigits = try digits(of: integerPart, text: text, thousandsSeparators: thousandsSeparators)
        guard fractionPart.allSatisfy(isDigit) else { throw .malformed(text) }
        guard fractionPart.count <= exponent else {
            throw .tooManyDecimals(text, currency: currency, allowed: exponent)
        }
        var minor: Int64 = 0
        let padded = integerDigits + Array(fractionPart) + Array(repeating: UInt8(ascii: "0"), count: exponent - fractionPart.count)
        for digit in padded {
            let (shifted, overflow1) = minor.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { throw .outOfRange(text) }
            minor = sum
        }
        return Money(minor: minor, currency: currency)
    }

    /// Parses minor-unit integer text (`"4200"`, `100`): digits only.
    public static func parseMinor(_ text: String, currency: String) throws(AmountError) -> Money {
        _ = try Currency.exponent(of: currency)
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.allSatisfy(isDigit) else { throw .malformed(text) }
        guard bytes.count == 1 || bytes[0] != UInt8(ascii: "0") else { throw .malformed(text) }
        guard let minor = Int64(text) else { throw .outOfRange(text) }
        return Money(minor: minor, currency: currency)
    }

    /// The digits of the integer part, validating optional thousands separators.
    private static func digits(
        of part: ArraySlice<UInt8>,
        text: String,
        thousandsSeparators: Bool
    ) throws(AmountError) -> [UInt8] {
        guard !part.isEmpty else { throw .malformed(text) }
        if !part.contains(UInt8(ascii: ",")) {
            guard part.allSatisfy(isDigit) else { throw .malformed(text) }
            guard part.count == 1 || part.first != UInt8(ascii: "0") else { throw .malformed(text) }
            return Array(part)
        }
        guard thousandsSeparators else { throw .malformed(text) }
        let groups = part.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
        guard let first = groups.first, (1...3).contains(first.count), first.first != UInt8(ascii: "0") else {
            throw .malformed(text)
        }
        for group in groups {
            guard group.allSatisfy(isDigit) else { throw .malformed(text) }
        }
        guard groups.dropFirst().allSatisfy({ $0.count == 3 }) else { throw .malformed(text) }
        return groups.flatMap { Array($0) }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// Formats minor units as major-unit decimal text with the currency's exponent.
    public static func decimalText(minor: Int64, currency: String) -> String {
        let exponent = (try? Currency.exponent(of: currency)) ?? 2
        let negative = minor < 0
        let magnitude = String(minor.magnitude)
        guard exponent > 0 else { return (negative ? "-" : "") + magnitude }
        let padded = String(repeating: "0", count: max(0, exponent + 1 - magnitude.count)) + magnitude
        let split = padded.index(padded.endIndex, offsetBy: -exponent)
        return (negative ? "-" : "") + padded[..<split] + "." + padded[split...]
    }
}

/// Why an amount could not be converted.
public enum AmountError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    case tooManyDecimals(String, currency: String, allowed: Int)
    case outOfRange(String)
    case unknownCurrency(String)

    public var description: String {
        switch self {
        case .malformed(let text): "amount \"\(text.prefix(40))\" is not a plain decimal number"
        case .tooManyDecimals(let text, let currency, let allowed):
            "amount \"\(text.prefix(40))\" has more than \(allowed) decimals, the most \(currency) allows"
        case .outOfRange(let text): "amount \"\(text.prefix(40))\" is too large"
        case .unknownCurrency(let code): "currency \"\(code.prefix(16))\" is not an ISO 4217 code"
        }
    }
}
