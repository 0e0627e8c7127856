import Foundation
import IPNCore
import Yams

/// Loads and validates the YAML config: unknown keys, missing secrets, malformed values and
/// secrets readable by others stop startup with a message naming the key.
public enum ConfigLoader {
    /// The config path from `--config`, else `$IPND_CONFIG`, else `/etc/ipnd/ipnd.yaml`.
    public static func defaultPath(environment: [String: String]) -> String {
        environment["IPND_CONFIG"].flatMap { $0.isEmpty ? nil : $0 } ?? "/etc/ipnd/ipnd.yaml"
    }

    public static func load(
        path: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        secrets: SecretHandling = .resolve
    ) throws(ConfigError) -> IPNDConfig {
        let file = try ConfigFile.read(path)
        var root = try ConfigNode.parse(yaml: file.text, path: path)
        try EnvironmentOverrides.apply(environment, to: &root)
        let resolver = PathResolver(configPath: file.absolutePath, credentialsDirectory: environment["CREDENTIALS_DIRECTORY"])
        return try Validator(resolver: resolver, file: file, secrets: secrets).config(from: root)
    }
}

/// The config file's text and the facts the permission check needs.
struct ConfigFile {
    let absolutePath: String
    let text: String
    let mode: UInt16

    static func read(_ path: String) throws(ConfigError) -> ConfigFile {
        let absolute = PathResolver.absolute(path, relativeTo: FileManager.default.currentDirectoryPath)
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: absolute))
        } catch {
            throw ConfigError(key: nil, "cannot read config file \(absolute): \(FileAccess.reason(for: absolute))")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError(key: nil, "config file \(absolute) is not UTF-8 text")
        }
        return ConfigFile(absolutePath: absolute, text: text, mode: FileAccess.mode(of: absolute) ?? 0)
    }
}

/// Relative paths: secrets' `_file` against `$CREDENTIALS_DIRECTORY` when set, everything else
/// against the config file's directory.
struct PathResolver {
    let configDirectory: String
    let credentialsDirectory: String?

    init(configPath: String, credentialsDirectory: String?) {
        configDirectory = (configPath as NSString).deletingLastPathComponent
        self.credentialsDirectory = credentialsDirectory.flatMap { $0.isEmpty ? nil : $0 }
    }

    func configRelative(_ path: String) -> String {
        Self.absolute(path, relativeTo: configDirectory)
    }

    func credential(_ path: String) -> String {
        Self.absolute(path, relativeTo: credentialsDirectory ?? configDirectory)
    }

    static func absolute(_ path: String, relativeTo directory: String) -> String {
        let joined = path.hasPrefix("/") ? path : (directory as NSString).appendingPathComponent(path)
        return (joined as NSString).standardizingPath
    }
}

/// File facts for secrets: readable, and by whom.
enum FileAccess {
    static func mode(of path: String) -> UInt16? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt16(info.st_mode & 0o7777)
    }

    /// Whether a file's permissions let its group or others read it.
    static func readableByOthers(mode: UInt16) -> Bool { mode & 0o044 != 0 }

    static func reason(for path: String) -> String {
        var info = stat()
        if stat(path, &info) != 0 { return String(cString: strerror(errno)) }
        if access(path, R_OK) != 0 { return String(cString: strerror(errno)) }
        return "unreadable"
    }

    static func octal(_ mode: UInt16) -> String {
        let text = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - text.count)) + text
    }
}
