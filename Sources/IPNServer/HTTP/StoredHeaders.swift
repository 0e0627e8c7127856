import HTTPTypes
import IPNCore

/// The header fields kept with every stored request, as a JSON array of `[name, value]` pairs
/// (order and repeats preserved): all of them, with credentials reduced to their scheme,
/// capped so a 100 KB header cannot bloat the store.
enum StoredHeaders {
    static let maxBytes = 8192
    private static let credentialHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    static func json(_ fields: HTTPFields) -> String {
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(1024)
        var entry: [UInt8] = []
        var kept = 0
        for field in fields {
            let name = field.name.canonicalName
            entry.removeAll(keepingCapacity: true)
            entry.append(UInt8(ascii: "["))
            JSONText.appendQuoted(name, to: &entry)
            entry.append(UInt8(ascii: ","))
            if credentialHeaders.contains(name) {
                JSONText.appendQuoted(redacted(field.value), to: &entry)
            } else {
                JSONText.appendQuoted(field.value.utf8.count <= 1024 ? field.value : String(field.value.prefix(1024)), to: &entry)
            }
            entry.append(UInt8(ascii: "]"))
            guard out.count + entry.count + 2 <= maxBytes else {
                if kept > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: Array(#"["ipnd-truncated","\#(fields.count - kept) more header(s) not kept"]"#.utf8))
                break
            }
            if kept > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: entry)
            kept += 1
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// `Basic [redacted]`: the scheme of `scheme credentials` stays (it says how the client
    /// authenticated); anything else, cookies included, is redacted whole.
    static func redacted(_ value: String) -> String {
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, let scheme = parts.first, scheme.count <= 32,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
        else { return "[redacted]" }
        return scheme + " [redacted]"
    }
}
