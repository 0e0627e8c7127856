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

/// RFC 3339 UTC timestamps with milliseconds, fixed width (`2026-11-21T04:01:02.123Z`), so
/// stored times sort and compare as text.
public enum Timestamp {
    /// Formats milliseconds since the Unix epoch.
    public static func format(epochMilliseconds: Int64) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        append(epochMilliseconds: epochMilliseconds, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the formatted time to `out` (no intermediate strings: log lines and stored
    /// rows format one per notification).
    public static func append(epochMilliseconds: Int64, to out: inout [UInt8]) {
        let millis = Int(epochMilliseconds %% 1000)
        let seconds = epochMilliseconds.floorDiv(1000)
        let days = Int(seconds.floorDiv(86_400))
        let secondOfDay = Int(seconds %% 86_400)
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = max(0, value)
            while divisor > 0 {
                out.append(UInt8(48 + rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(year, 4)
        out.append(UInt8(ascii: "-"))
        digits(month, 2)
        out.append(UInt8(ascii: "-"))
        digits(day, 2)
        out.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, 2)
        out.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2)
        out.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        out.append(UInt8(ascii: "."))
        digits(millis, 3)
        out.append(UInt8(ascii: "Z"))
    }

    /// Parses RFC 3339 / ISO 8601 text (`2026-11-21`, `2026-11-21T10:00:00Z`,
    /// `2026-11-21T10:00:00.5+08:00`) into milliseconds since the epoch. A date alone means
    /// its midnight UTC. Returns nil for anything else.
    public static func parse(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ width: Int) -> Int? {
            guard index + width <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<(index + width)] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            index += width
            return value
        }
        func expect(_ char: Character) -> Bool {
            guard index < bytes.count, bytes[index] == char.asciiValue else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        var millis: Int64 = Int64(daysSinceEpoch(year: year, month: month, day: day)) * 86_400_000
        guard index < bytes.count else { return millis }
        guard expect("T") || expect("t") || expect(" "), let hour = number(2), expect(":"), let minute = number(2),
            expect(":"), let second = number(2), hour < 24, minute < 60, second < 61
        else { return nil }
        millis += Int64(hour * 3600 + minute * 60 + min(second, 59)) * 1000
        if expect(".") {
            var digits = 0
            var fraction = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                if digits < 3 { fraction = fraction * 10 + Int(bytes[index] - UInt8(ascii: "0")) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { fraction *= 10 }
            millis += Int64(fraction)
        }
        if expect("Z") || expect("z") {
            return index == bytes.count ? millis : nil
        }
        let sign: Int64
        if expect("+") { sign = 1 } else if expect("-") { sign = -1 } else { return nil }
        guard let offsetHours = number(2), expect(":"), let offsetMinutes = number(2), index == bytes.count,
            offsetHours < 24, offsetMinutes < 60
        else { return nil }
        return millis - sign * Int64(offsetHours * 3600 + offsetMinutes * 60) * 1000
    }

    private static func isLeap(_ year: Int) -> Bool { (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilDate(daysSinceEpoch days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

infix operator %% : MultiplicationPrecedence

extension Int64 {
    /// Floor modulo: never negative for a positive divisor.
    fileprivate static func %% (lhs: Int64, rhs: Int64) -> Int64 {
        let remainder = lhs % rhs
        return remainder < 0 ? remainder + rhs : remainder
    }

    fileprivate func floorDiv(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
