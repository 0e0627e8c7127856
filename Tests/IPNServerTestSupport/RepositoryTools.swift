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

/// The repository, found from this file.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Runs the repository's `tools/NAME` with python3, on a thread of its own (a daemon under
/// test may be in this process and need the cooperative pool to answer).
func runPythonTool(_ name: String, _ arguments: [String], timeout: Double) async throws -> CommandResult {
    try await runProcess(
        URL(fileURLWithPath: "/usr/bin/env"),
        ["python3", repositoryRoot.appendingPathComponent("tools/\(name)").path] + arguments,
        timeout: timeout
    )
}
