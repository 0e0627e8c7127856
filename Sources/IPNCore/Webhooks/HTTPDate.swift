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

/// HTTP-date (RFC 9110 section 5.6.7), as `Retry-After` carries it. All three forms that a
/// recipient must accept are read:
/// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
/// - the obsolete RFC 850 form: `Sunday, 06-Nov-94 08:49:37 GMT`
/// - ANSI C's asctime() form: `Sun Nov  6 08:49:37 1994`
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The time `text` names, in unix milliseconds, or nil when it is not an HTTP-date.
    ///
    /// `now` (unix milliseconds) places the RFC 850 form's two-digit year: a year that would be
    /// more than 50 years after `now` is the most recent past year with those last two digits.
    public static func parse(_ text: String, now: Int64) -> Int64? {
        let words = text.split(separator: " ")
        guard let dayName = words.first, dayName.utf8.count >= 3 else { return nil }
        let year: Int, month: Int, day: Int, time: Substring
        switch words.count {
        case 6:  // IMF-fixdate
            guard dayName.hasSuffix(","), isDayName(dayName.dropLast()), words[5] == "GMT",
                let d = number(words[1], digits: 2), let m = monthNumber(words[2]), let y = number(words[3], digits: 4)
            else { return nil }
            (year, month, day, time) = (y, m, d, words[4])
        case 4:  // rfc850-date
            let date = words[1].split(separator: "-", omittingEmptySubsequences: false)
            guard dayName.hasSuffix(","), isDayName(dayName.dropLast()), words[3] == "GMT", date.count == 3,
                let d = number(date[0], digits: 2), let m = monthNumber(date[1]), let yy = number(date[2], digits: 2)
            else { return nil }
            (year, month, day, time) = (fullYear(twoDigits: yy, now: now), m, d, words[2])
        case 5:  // asctime-date: the day is one digit after two spaces, or two digits
            guard isDayName(dayName), let m = monthNumber(words[1]),
                let d = number(words[2], digits: 1) ?? number(words[2], digits: 2), let y = number(words[4], digits: 4)
            else { return nil }
            (year, month, day, time) = (y, m, d, words[3])
        default:
            return nil
        }
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, let hour = number(clock[0], digits: 2), let minute = number(clock[1], digits: 2),
            let second = number(clock[2], digits: 2)
        else { return nil }
        // Timestamp checks the ranges (month lengths, leap years, hours) and does the arithmetic.
        return Timestamp.parse("\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2))Z")
    }

    private static func isDayName(_ word: Substring) -> Bool {
        let names = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
        let full = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
        let lower = word.lowercased()
        return names.contains(lower) || full.contains(lower)
    }

    private static func monthNumber(_ word: Substring) -> Int? {
        months.firstIndex(of: word.lowercased()).map { $0 + 1 }
    }

    private static func number(_ word: Substring, digits: Int) -> Int? {
        guard word.utf8.count == digits else { return nil }
        var value = 0
        for byte in word.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private static func fullYear(twoDigits: Int, now: Int64) -> Int {
        let currentYear = Int(Timestamp.format(epochMilliseconds: now).prefix(4)) ?? 2000
        var year = currentYear - currentYear % 100 + twoDigits
        if year > currentYear + 50 { year -= 100 }
        return year
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
