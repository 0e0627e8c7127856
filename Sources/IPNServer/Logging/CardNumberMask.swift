/// Masks anything in a log value that looks like a full card number (13 to 19 digits,
/// optionally grouped by spaces or dashes, passing the Luhn check) to its first six and last
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
            // Take a run of digits with single separators between them.
            var end = index
            var digits: [UInt8] = []
            var last = index
            while end < scalars.count {
                if isDigit(scalars[end]) {
                    digits.append(UInt8(scalars[end].value - 48))
                    last = end
                    end += 1
                } else if (scalars[end] == " " || scalars[end] == "-"), end + 1 < scalars.count, isDigit(scalars[end + 1]) {
                    end += 1
                } else {
                    break
                }
            }
            if (13...19).contains(digits.count), luhn(digits) {
                let text = digits.map { String($0) }.joined()
                out.append(contentsOf: (text.prefix(6) + String(repeating: "*", count: digits.count - 10) + text.suffix(4)).unicodeScalars)
            } else {
                out.append(contentsOf: scalars[index...last])
            }
            index = last + 1
        }
        return String(out)
    }

    /// Whether `value` has a run of 13 or more ASCII digits (single spaces or dashes allowed
    /// between them), checked without allocating: most log values do not.
    private static func mightHoldCardNumber(_ value: String) -> Bool {
        value.withUTF8Bytes { bytes in
            var digits = 0
            var previousWasSeparator = false
            for byte in bytes {
                if byte >= 48 && byte <= 57 {
                    digits += 1
                    if digits >= 13 { return true }
                    previousWasSeparator = false
                } else if (byte == 32 || byte == 45), digits > 0, !previousWasSeparator {
                    previousWasSeparator = true
                } else {
                    digits = 0
                    previousWasSeparator = false
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
