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

/// Masks anything in a log value that looks like a full card number (13 to 19 digits,
/// optionally in groups joined by one or two separators: any space, dash, dot, slash or
/// underscore; passing the Luhn check) to its first six and last
/// four digits, so no log line ever carries a full PAN, whatever a provider or merchant put
/// in a field that ends up logged.
enum CardNumberMask {
    static func mask(_ value: String) -> String {
        guard mightHoldCardNumber(value) else { return value }
        let scalars = Array(value.unicodeScalars)
        var out = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            guard isDigit(scalars[index]) else {
                out.append(scalars[index])
                index += 1
                continue
            }
            // A run of digit groups joined by one or two separators.
            var groups: [Range<Int>] = []
            var end = index
            while end < scalars.count, isDigit(scalars[end]) {
                let groupStart = end
                while end < scalars.count, isDigit(scalars[end]) { end += 1 }
                groups.append(groupStart..<end)
                var next = end
                while next < scalars.count, next - end < 2, isSeparator(scalars[next]) { next += 1 }
                guard next > end, next < scalars.count, isDigit(scalars[next]) else { break }
                end = next
            }
            appendMasked(groups, of: scalars, to: &out)
            index = groups.last?.upperBound ?? end
        }
        return String(out)
    }

    /// Writes the run `groups`, masking each longest stretch of whole groups that holds a card
    /// number: 13 to 19 digits passing the Luhn check. A number written next to others
    /// (`4111 1111 1111 1111 2027`, `4111-1111-1111-1111-123`) is found this way; a run of
    /// digits without separators longer than 19 is left alone (transaction ids are).
    private static func appendMasked(_ groups: [Range<Int>], of scalars: [Unicode.Scalar], to out: inout String.UnicodeScalarView) {
        let groupDigits = groups.map { group in scalars[group].map { UInt8($0.value - 48) } }
        var first = 0
        while first < groups.count {
            var found: (last: Int, digits: [UInt8])?
            var digits: [UInt8] = []
            for last in first..<groups.count {
                digits += groupDigits[last]
                if digits.count > 19 { break }
                if digits.count >= 13, luhn(digits) { found = (last, digits) }
            }
            if first > 0 { out.append(contentsOf: scalars[groups[first - 1].upperBound..<groups[first].lowerBound]) }  // separators
            if let found {
                out.append(contentsOf: masked(found.digits).unicodeScalars)
                first = found.last + 1
                continue
            }
            let group = groups[first]
            if let window = cardAtEdge(of: groupDigits[first]) {
                out.append(contentsOf: scalars[group.lowerBound..<(group.lowerBound + window.lowerBound)])
                out.append(contentsOf: masked(Array(groupDigits[first][window])).unicodeScalars)
                out.append(contentsOf: scalars[(group.lowerBound + window.upperBound)..<group.upperBound])
            } else {
                out.append(contentsOf: scalars[group])
            }
            first += 1
        }
    }

    private static func masked(_ digits: [UInt8]) -> String {
        let text = digits.map { String($0) }.joined()
        return text.prefix(6) + String(repeating: "*", count: text.count - 10) + text.suffix(4)
    }

    /// A card number run together with a few more digits (`41111111111111112027`, a PAN and an
    /// expiry): the longest 13-19-digit stretch at the start or the end of a 20-25-digit group
    /// that begins like a card network's number (3 to 6) and passes the Luhn check. Longer
    /// groups, and stretches in the middle, are left alone: transaction ids are such digits.
    private static func cardAtEdge(of digits: [UInt8]) -> Range<Int>? {
        guard (20...25).contains(digits.count) else { return nil }
        for length in (13...19).reversed() {
            for window in [0..<length, (digits.count - length)..<digits.count]
            where (3...6).contains(digits[window.lowerBound]) && luhn(Array(digits[window])) {
                return window
            }
        }
        return nil
    }

    /// Spaces of any kind (no-break, figure, narrow), dashes of any kind, `.`, `/` and `_`;
    /// not `:` or `,`, which join the digits of times and amounts.
    private static func isSeparator(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == "." || scalar == "/" || scalar == "_" { return true }
        let properties = scalar.properties
        return properties.isWhitespace || properties.generalCategory == .dashPunctuation
    }

    /// Whether `value` may have a run of 13 or more ASCII digits with separators between them,
    /// checked without allocating: most log values do not.
    private static func mightHoldCardNumber(_ value: String) -> Bool {
        value.withUTF8Bytes { bytes in
            // Permissive: up to 6 bytes (two separators of up to three bytes each) between
            // digits keep a run going; letters and longer gaps end it.
            var digits = 0
            var gap = 0
            for byte in bytes {
                if byte >= 48 && byte <= 57 {
                    digits += 1
                    if digits >= 13 { return true }
                    gap = 0
                } else if digits > 0, gap < 6, !(byte >= 65 && byte <= 90), !(byte >= 97 && byte <= 122) {
                    gap += 1
                } else {
                    digits = 0
                    gap = 0
                }
            }
            return false
        }
    }

    private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { scalar.value >= 48 && scalar.value <= 57 }

    private static func luhn(_ digits: [UInt8]) -> Bool {
        var sum = 0
        for (offset, digit) in digits.reversed().enumerated() {
            var value = Int(digit)
            if offset % 2 == 1 {
                value *= 2
                if value > 9 { value -= 9 }
            }
            sum += value
        }
        return sum % 10 == 0
    }
}
