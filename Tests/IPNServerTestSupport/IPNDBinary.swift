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

/// The built `ipnd` binary, beside the test bundle in the build folder.
let ipndBinary: URL = {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    if directory.pathExtension == "xctest" { directory.deleteLastPathComponent() }
    return directory.appendingPathComponent("ipnd")
}()

/// Runs `ipnd` with `arguments` and waits for it on a thread of its own (with a deadline,
/// killing it past that).
func ipnd(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 20) async throws -> CommandResult {
    var env = ProcessInfo.processInfo.environment
    env.removeValue(forKey: "IPND_CONFIG")
    for (key, value) in environment { env[key] = value }
    return try await runProcess(ipndBinary, arguments, environment: env, timeout: timeout)
}

/// Writes `yaml` as `ipnd.yaml` (mode `mode`) in a fresh temporary directory; returns its path.
func writeConfig(_ yaml: String, mode: Int = 0o600) throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-cli-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let path = directory.appendingPathComponent("ipnd.yaml").path
    try Data(yaml.utf8).write(to: URL(fileURLWithPath: path))
    try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    return path
}
