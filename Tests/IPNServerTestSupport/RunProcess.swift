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

/// How a child process ended, and what it wrote.
struct CommandResult {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Runs `executable` with `arguments` (and `environment`, else this process's) on a thread of its
/// own, killing it past `timeout` seconds.
func runProcess(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
                timeout: Double = 20) async throws -> CommandResult {
    try await onDedicatedThread {
        Result { try blockingRun(executable, arguments, environment: environment, timeout: timeout) }
    }.get()
}

private func blockingRun(_ executable: URL, _ arguments: [String], environment: [String: String]?,
                         timeout: Double) throws -> CommandResult {
    let process = ChildProcess()
    // Its own process group: on a timeout, whatever it started goes with it.
    process.startsProcessGroup = true
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Drain both pipes while the process runs: output larger than a pipe buffer would
    // otherwise block it until the deadline.
    let stdout = PipeReader(out)
    let stderr = PipeReader(err)
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning, Date() < deadline { usleep(20_000) }
    if process.isRunning {
        // SIGTERM, then SIGKILL: a process that ignores SIGTERM (the hang this helper exists to
        // catch) must fail its test, not hang the run.
        process.terminate()
        let killAt = Date().addingTimeInterval(5)
        while process.isRunning, Date() < killAt { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        // The daemons and receivers a tool started, orphaned now.
        kill(-process.processIdentifier, SIGKILL)
    }
    process.waitUntilExit()
    return CommandResult(status: process.terminationStatus, stdout: stdout.text(), stderr: stderr.text())
}

/// Runs blocking `work` on a new thread and returns its result.
func onDedicatedThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.start()
    }
}
