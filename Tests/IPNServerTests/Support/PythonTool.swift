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
import IPNTestSupport

/// One of the repository's Python test tools (tools/NAME.py) as a child process, started and
/// waited for until its first line, `listening PORT`, says where it serves.
enum PythonTool {
    struct StartError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// Starts `tools/<script>` with `arguments`; returns the process and the port it listens on.
    /// `missing` says what to install when it exits before listening.
    static func start(_ script: String, _ arguments: [String], missing: String) throws -> (process: ChildProcess, port: Int) {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", repositoryRoot.appendingPathComponent("tools/\(script)").path] + arguments
        let out = Pipe()
        process.standardOutput = out
        // Its errors reach ours through ChildProcess's copy (nil), not our own descriptor.
        try process.run()
        var line: [UInt8] = []
        let reader = out.fileHandleForReading
        while true {
            let byte = reader.readData(ofLength: 1)
            guard let first = byte.first else { throw StartError(message: "\(script) exited before listening (is \(missing) installed?)") }
            if first == UInt8(ascii: "\n") { break }
            line.append(first)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("listening "), let port = Int(text.dropFirst("listening ".count)) else {
            throw StartError(message: "unexpected first line from \(script): \(text)")
        }
        return (process, port)
    }
}
