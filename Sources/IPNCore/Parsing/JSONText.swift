/// Writing JSON text by hand where the exact bytes matter (signed simulated bodies).
public enum JSONText {
    /// Escapes `text` for use inside a JSON string literal.
    public static func escape(_ text: String) -> String {
        // Most values (header values, ids) need no escaping: return them as they are.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

extension JSONText {
    /// A flat JSON object of strings, keys sorted (stable stored text).
    public static func object(_ fields: [String: String]) -> String {
        "{" + fields.sorted { $0.key < $1.key }.map { "\"\(escape($0.key))\":\"\(escape($0.value))\"" }
            .joined(separator: ",") + "}"
    }
}
