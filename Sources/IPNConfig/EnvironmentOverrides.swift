/// `IPND_` environment variables override scalar keys: `IPND_SERVER_PORT=9000` sets
/// `server.port`; list keys take comma-separated values. A variable that looks like an
/// override but names no key is an error, so a typo cannot silently do nothing.
enum EnvironmentOverrides {
    struct Key {
        let section: String
        let name: String
        let isList: Bool

        var path: String { "\(section).\(name)" }
        var variable: String { "IPND_\(section.uppercased())_\(name.uppercased())" }
    }

    static let keys: [Key] = [
        Key(section: "server", name: "host", isList: false),
        Key(section: "server", name: "port", isList: false),
        Key(section: "server", name: "max_body_bytes", isList: false),
        Key(section: "server", name: "request_timeout_seconds", isList: false),
        Key(section: "server", name: "idle_timeout_seconds", isList: false),
        Key(section: "server", name: "trusted_proxies", isList: true),
        Key(section: "store", name: "path", isList: false),
        Key(section: "store", name: "max_batch", isList: false),
        Key(section: "ops", name: "host", isList: false),
        Key(section: "ops", name: "port", isList: false),
        Key(section: "ops", name: "tokens_sha256", isList: true),
    ]

    private static let overridablePrefixes = ["IPND_SERVER_", "IPND_STORE_", "IPND_OPS_", "IPND_PROVIDERS_"]

    /// The variable in `environment` that set `key` (or an item of it), if one did.
    static func variable(overriding key: String, in environment: [String: String]) -> String? {
        keys.first { ($0.path == key || key.hasPrefix($0.path + "[")) && environment[$0.variable] != nil }?.variable
    }

    static func apply(_ environment: [String: String], to root: inout ConfigNode) throws(ConfigError) {
        guard case .mapping = root else { return }  // the validator reports a non-mapping root
        for (variable, value) in environment.sorted(by: { $0.key < $1.key })
        where overridablePrefixes.contains(where: { variable.hasPrefix($0) }) {
            guard let key = keys.first(where: { $0.variable == variable }) else {
                if variable.hasPrefix("IPND_PROVIDERS_") {
                    throw ConfigError(key: variable, "provider settings cannot come from the environment; use NAME_file secrets (LoadCredential=)")
                }
                throw ConfigError(key: variable, "names no config key; overridable: \(keys.map(\.variable).joined(separator: ", "))")
            }
            var section = root[key.section] ?? .mapping([], line: nil)
            if case .null = section { section = .mapping([], line: nil) }
            guard case .mapping = section else {
                throw ConfigError(key: key.section, "must be a mapping, found \(section.kindName)")
            }
            let node: ConfigNode = key.isList
                ? .sequence(value.split(separator: ",").map { ConfigNode.scalar($0.trimmingCharacters(in: " "), line: nil) }, line: nil)
                : .scalar(value, line: nil)
            section.set(key.name, to: node)
            root.set(key.section, to: section)
        }
    }
}

extension Substring {
    func trimmingCharacters(in set: Character) -> String {
        var result = self
        while result.first == set { result.removeFirst() }
        while result.last == set { result.removeLast() }
        return String(result)
    }
}
