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

import Foundation
import IPNCore
import Yams

/// Loads and validates the YAML config: unknown keys, missing secrets, malformed values and
/// secrets in world-readable files stop startup with a message naming the key.
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
        do {
            return try Validator(resolver: resolver, file: file, secrets: secrets).config(from: root)
        } catch {
            // A bad value from the environment is fixed there, not in the file: say so.
            guard let key = error.key, let variable = EnvironmentOverrides.variable(overriding: key, in: environment) else {
                throw error
            }
            throw ConfigError(key: key, "\(error.message) (the value comes from \(variable))")
        }
    }
}

/// The config file's text and the facts the permission check needs.
struct ConfigFile {
    let absolutePath: String
    let text: String
    let mode: UInt16

    static func read(_ path: String) throws(ConfigError) -> ConfigFile {
        let absolute = PathResolver.absolute(path, relativeTo: FileManager.default.currentDirectoryPath)
        let bytes: [UInt8]
        switch FileAccess.contents(of: absolute) {
        case .success(let contents): bytes = contents
        case .failure(let reason): throw ConfigError(key: nil, "cannot read config file \(absolute): \(reason)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
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
    /// The most bytes a config, secret or key file may hold: far more than any real one has, and
    /// a bound on what a wrong path (a log, a device) can make ipnd read.
    static let maxFileBytes = 1 << 20

    /// Why a file could not be read, for messages.
    struct Unreadable: Error, CustomStringConvertible {
        let description: String
    }

    /// The whole contents of the regular file at `path`, at most `maxFileBytes`.
    ///
    /// Not Foundation's `Data(contentsOf:)` or `FileManager.contents(atPath:)`: those leak a
    /// 4 KiB buffer on every empty file (found by the config fuzzer), and would read a device such
    /// as `/dev/zero` until memory runs out or wait forever on a FIFO.
    static func contents(of path: String) -> Result<[UInt8], Unreadable> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return .failure(Unreadable(description: String(cString: strerror(errno)))) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(Unreadable(description: String(cString: strerror(errno)))) }
        guard info.st_mode & S_IFMT == S_IFREG else { return .failure(Unreadable(description: "not a regular file")) }
        let tooLarge = Unreadable(description: "larger than \(maxFileBytes) bytes")
        guard info.st_size <= maxFileBytes else { return .failure(tooLarge) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(Unreadable(description: String(cString: strerror(errno))))
            }
            if count == 0 { return .success(bytes) }
            bytes.append(contentsOf: chunk[..<count])
            guard bytes.count <= maxFileBytes else { return .failure(tooLarge) }
        }
    }

    static func mode(of path: String) -> UInt16? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt16(info.st_mode & 0o7777)
    }

    /// Whether a file is world-readable: its permissions let users other than its owner and
    /// group read it. Group-readable (0640, `root:ipnd`) is the usual way to hand a file to a
    /// service and stays allowed.
    static func readableByOthers(mode: UInt16) -> Bool { mode & 0o004 != 0 }

    static func octal(_ mode: UInt16) -> String {
        let text = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - text.count)) + text
    }
}
