import IPNCore

/// A JSON value written by ipnd for people and scripts: members keep their order and absent
/// values are written as `null`, never omitted.
public indirect enum JSONOut: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case string(String)
    case array([JSONOut])
    case object([(key: String, value: JSONOut)])
    /// JSON text ipnd itself wrote earlier (stored header lists), embedded as is.
    case verbatim(String)

    public static func == (lhs: JSONOut, rhs: JSONOut) -> Bool { lhs.text == rhs.text }

    /// `.string` or `.null`.
    public static func optional(_ text: String?) -> JSONOut { text.map(JSONOut.string) ?? .null }

    /// `.int` or `.null`.
    public static func optional(_ value: Int64?) -> JSONOut { value.map(JSONOut.int) ?? .null }

    /// Compact JSON text on one line.
    public var text: String {
        var out = ""
        write(into: &out)
        return out
    }

    /// The member named `key` of an object.
    public subscript(key: String) -> JSONOut? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The members of an object whose values are scalars (strings, numbers, booleans, null):
    /// the csv columns of a record.
    public var scalarMembers: [(key: String, value: JSONOut)] {
        guard case .object(let members) = self else { return [] }
        return members.filter { member in
            switch member.value {
            case .null, .bool, .int, .string: true
            case .array, .object, .verbatim: false
            }
        }
    }

    /// A scalar's plain text (a string unquoted, null empty); nil for containers.
    public var scalarText: String? {
        switch self {
        case .null: ""
        case .bool(let value): value ? "true" : "false"
        case .int(let value): String(value)
        case .string(let value): value
        case .array, .object, .verbatim: nil
        }
    }

    private func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .string(let value): out += "\"" + JSONText.escape(value) + "\""
        case .verbatim(let text): out += text
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                out += "\"" + JSONText.escape(member.key) + "\":"
                member.value.write(into: &out)
            }
            out += "}"
        }
    }
}
