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

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, with the part of Foundation's `Process` API the
/// tests use: executable, arguments, environment, standard streams (a `Pipe` or a
/// `FileHandle`), `run()`, `isRunning`, `waitUntilExit()`, `terminationStatus`, `terminate()`.
///
/// Why not `Process`: swift-corelibs-foundation's `Process.run()` (Swift 6.3.1) reads past a
/// buffer while it lists `/proc/self/fd` and crashes the whole test process now and then
/// (SIGSEGV in `memcpy`, swiftlang/swift-corelibs-foundation#5472): two CI runs died of it.
///
/// As `Process` does, the child gets every signal at its default disposition and an empty
/// signal mask, no descriptor of ours but its standard streams, and, for a `Pipe`, the parent
/// closes its copy of the child's end (so a reader sees the end of the pipe when the child exits).
public final class ChildProcess: @unchecked Sendable {
    public var executableURL: URL?
    public var arguments: [String]?
    /// nil: this process's environment.
    public var environment: [String: String]?
    /// A `Pipe` or a `FileHandle`; nil: inherited for standard input; for output and errors, a
    /// pipe of the child's own whose bytes a thread of this process copies to its own stdout or
    /// stderr. The copy keeps a child that outlives this process (a crashed test leaves its
    /// daemons running) from holding `swift test`'s pipe open: the run then ends with the crash
    /// rather than waiting for the orphans until its time limit.
    public var standardInput: Any?
    public var standardOutput: Any?
    public var standardError: Any?
    /// Starts the child as the leader of a process group of its own (`kill(-pid, ...)` then
    /// reaches whatever it starts).
    public var startsProcessGroup = false

    private let lock = NSLock()
    private var pid: pid_t = 0
    /// The raw `waitpid` status once the child has been reaped.
    private var status: Int32?

    public init() {}

    /// The child's pid (0 before `run()`).
    public var processIdentifier: Int32 { lock.withLock { pid } }

    /// Why `run()` could not start the child.
    public struct LaunchError: Error, CustomStringConvertible {
        public let path: String
        public let code: Int32
        public var description: String { "could not start \(path): \(String(cString: strerror(code)))" }
    }

    public func run() throws {
        guard let path = executableURL?.path else { throw LaunchError(path: "(no executable)", code: ENOENT) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentCopiesToClose: [ObjectIdentifier: FileHandle] = [:]
        var forwards: [(read: Int32, write: Int32, target: Int32)] = []
        defer { for forward in forwards { close(forward.write) } }
        for (target, stream) in [(Int32(0), standardInput), (1, standardOutput), (2, standardError)] {
            switch stream {
            case nil where target != 0:
                var ends: [Int32] = [0, 0]
                // Not inherited by other children: each spawn closes every descriptor from 3 up.
                guard pipe(&ends) == 0 else { break }
                forwards.append((read: ends[0], write: ends[1], target: target))
                posix_spawn_file_actions_adddup2(&actions, ends[1], target)
            case let pipe as Pipe:
                let childEnd = target == 0 ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                posix_spawn_file_actions_adddup2(&actions, childEnd.fileDescriptor, target)
                parentCopiesToClose[ObjectIdentifier(childEnd)] = childEnd
            case let handle as FileHandle:
                posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target)
            default:
                break
            }
        }
        Self.closeDescriptors(from: 3, in: &actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
        if startsProcessGroup {
            flags |= POSIX_SPAWN_SETPGROUP
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + (arguments ?? [])).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = environment ?? ProcessInfo.processInfo.environment
        let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }

        var child: pid_t = 0
        let result = posix_spawn(&child, path, &actions, &attributes, argv, envp)
        guard result == 0 else {
            for forward in forwards { close(forward.read) }
            throw LaunchError(path: path, code: result)
        }
        lock.withLock { pid = child }
        for handle in parentCopiesToClose.values { try? handle.close() }
        for forward in forwards { Self.copy(from: forward.read, to: forward.target) }
    }

    /// Copies what arrives on `source` to `target` on a thread of its own until the writers
    /// close it, then closes `source`.
    private static func copy(from source: Int32, to target: Int32) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                var written = 0
                while written < count {
                    let result = buffer.withUnsafeBytes { write(target, $0.baseAddress! + written, count - written) }
                    if result < 0, errno == EINTR { continue }
                    guard result > 0 else { break }
                    written += result
                }
            }
            close(source)
        }
        thread.start()
    }

    /// Whether the child has not exited yet (reaps it when it has).
    public var isRunning: Bool {
        lock.withLock {
            guard pid > 0 else { return false }
            if status != nil { return false }
            var raw: Int32 = 0
            let reaped = waitpid(pid, &raw, WNOHANG)
            if reaped == pid {
                status = raw
                return false
            }
            // -1 (ECHILD): someone else reaped it; count it as ended, status unknown.
            if reaped < 0, errno != EINTR {
                status = -1
                return false
            }
            return true
        }
    }

    /// Blocks until the child has exited.
    public func waitUntilExit() {
        while isRunning { usleep(2_000) }
    }

    /// The exit status, or the number of the signal that ended it (as `Process` gives it); -1
    /// when unknown.
    public var terminationStatus: Int32 {
        guard let raw = lock.withLock({ status }), raw >= 0 else { return -1 }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as functions.
        return raw & 0x7f == 0 ? (raw >> 8) & 0xff : raw & 0x7f
    }

    /// Whether a signal ended the child.
    public var endedBySignal: Bool {
        guard let raw = lock.withLock({ status }), raw >= 0 else { return false }
        return raw & 0x7f != 0
    }

    /// SIGTERM.
    public func terminate() {
        signal(SIGTERM)
    }

    /// Sends `signal` to the child while it runs.
    public func signal(_ signal: Int32) {
        let target = processIdentifier
        guard target > 0, isRunning else { return }
        kill(target, signal)
    }

    /// Adds a close of every descriptor from `lowest` up: glibc's
    /// `posix_spawn_file_actions_addclosefrom_np` (2.34 and later, looked up at run time: Swift
    /// does not import it), else one close per descriptor open now.
    private static func closeDescriptors(from lowest: Int32, in actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
            if closeFrom(&actions, lowest) == 0 { return }
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in open.compactMap(Int32.init) where descriptor >= lowest {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
    }
}
