import HTTPTypes
import IPNCore

/// The header fields kept with every stored request, as JSON object text: all of them, with
/// credentials reduced to their scheme, capped so a 100 KB header cannot bloat the store.
enum StoredHeaders {
    static let maxBytes = 8192
    private static let credentialHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    static func json(_ fields: HTTPFields) -> String {
        var entries: [String] = []
        var size = 2
        for field in fields {
            let name = field.name.canonicalName
            var value = field.value
            if credentialHeaders.contains(name) {
                value = (value.split(separator: " ", maxSplits: 1).first.map(String.init) ?? "") + " [redacted]"
            }
            let entry = "[\"\(JSONText.escape(name))\",\"\(JSONText.escape(String(value.prefix(1024))))\"]"
            guard size + entry.utf8.count + 1 <= maxBytes else {
                entries.append("[\"ipnd-truncated\",\"\(fields.count - entries.count) more header(s) not kept\"]")
                break
            }
            size += entry.utf8.count + 1
            entries.append(entry)
        }
        return "[" + entries.joined(separator: ",") + "]"
    }
}
