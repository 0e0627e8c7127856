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
@testable import IPNServerTestSupport
import IPNTestSupport
import Testing

/// `ipnd serve` makes the SQLite store's directory when it is missing, and refuses to start,
/// naming the directory and the reason, when it cannot (issue 46). Each test runs the built
/// binary, as the unit does.
@Suite("serve makes the store's directory", .heavy)
struct StoreDirectoryTests {
    /// A config in a directory of its own, storing at `storePath`, readable by `owner` when given.
    private static func config(storePath: String, in root: URL, owner: UInt32? = nil) throws -> String {
        let path = root.appendingPathComponent("ipnd.yaml").path
        let yaml = """
            server:
              host: 127.0.0.1
              port: 0
            store:
              path: \(storePath)
            ops:
              host: 127.0.0.1
              port: 0
            providers:
              unlimint:
                - account: default
                  callback_secret: \(TestDaemon.unlimintSecret)
            """
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        if let owner { chown(path, owner, owner) }
        return path
    }

    private static func temporaryRoot() throws -> URL {
        // No digits in the name: the daemon's log masks digit runs that look like a card number,
        // and a UUID's digits can make one across its hyphens, which would hide the path the
        // tests look for in the log.
        let letters = Array("ghijklmnop")
        let unique = String(UUID().uuidString.map { $0.wholeNumberValue.map { letters[$0] } ?? $0 })
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-storedir-\(unique)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        chmod(root.path, 0o755)
        return root
    }

    @Test("a missing directory (and a missing parent) is made 0700, owned by the running user, and the log says so")
    func created() async throws {
        let root = try Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let parent = root.appendingPathComponent("var").path
        let directory = parent + "/ipnd"
        let daemon = try DaemonProcess(configPath: try Self.config(storePath: directory + "/ipnd.sqlite", in: root))
        _ = try await daemon.waitUntilListening()

        for made in [parent, directory] {
            var status = stat()
            try #require(stat(made, &status) == 0, "\(made) was not made")
            #expect(status.st_mode & S_IFMT == S_IFDIR)
            #expect(status.st_mode & 0o7777 == 0o700, "\(made) has mode \(String(status.st_mode & 0o7777, radix: 8))")
            #expect(status.st_uid == geteuid())
            #expect(daemon.logLines.contains { $0.contains("msg=\"created the store's directory\"") && $0.contains("path=\(made)") },
                    "\(daemon.logLines.prefix(5))")
        }
        #expect(FileManager.default.fileExists(atPath: directory + "/ipnd.sqlite"))

        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: 30) == 0, "\(daemon.logLines.suffix(5))")
        // Started again, the directory is there: nothing to make, nothing said.
        let again = try DaemonProcess(configPath: root.appendingPathComponent("ipnd.yaml").path)
        _ = try await again.waitUntilListening()
        #expect(!again.logLines.contains { $0.contains("created the store's directory") }, "\(again.logLines.prefix(5))")
        again.signal(SIGTERM)
        #expect(await again.waitForExit(timeout: 30) == 0, "\(again.logLines.suffix(5))")
    }

    @Test("under a file, or in one: startup stops (exit 3) naming the directory and the reason")
    func parentIsAFile() async throws {
        let root = try Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let file = root.appendingPathComponent("not-a-directory").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        // A directory to make under the file, and the file itself named as the directory.
        for (storePath, said) in [
            (file + "/ipnd/ipnd.sqlite", "cannot create \(file)/ipnd, the directory of store.path"),
            (file + "/ipnd.sqlite", "cannot use \(file), the directory of store.path"),
        ] {
            let daemon = try DaemonProcess(configPath: try Self.config(storePath: storePath, in: root))
            #expect(await daemon.waitForExit(timeout: 60) == 3, "\(daemon.logLines.suffix(5))")
            let lines = try #require(await daemon.allLogLines(), "the daemon's stderr did not close")
            #expect(lines.contains { $0.contains(said) && $0.contains("Not a directory") }, "\(lines)")
            #expect(!lines.contains { $0.contains("msg=listening") })
        }
    }

    @Test("under a parent this user may not write: startup stops (exit 3) naming the directory and the reason")
    func parentNotWritable() async throws {
        let root = try Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let readOnly = root.appendingPathComponent("read-only")
        try FileManager.default.createDirectory(at: readOnly, withIntermediateDirectories: false)
        let directory = readOnly.appendingPathComponent("ipnd").path
        // root may write anywhere: the daemon runs as another user then, as the unit runs it.
        let uid: UInt32? = geteuid() == 0 ? 61_998 : nil
        if geteuid() == 0 {
            try #require(setprivAvailable, "running as root needs setpriv to drop to another user")
        }
        chmod(readOnly.path, 0o555)
        defer { chmod(readOnly.path, 0o755) }
        let launcher = uid.map { uid in
            ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
        } ?? []
        let daemon = try DaemonProcess(
            configPath: try Self.config(storePath: directory + "/ipnd.sqlite", in: root, owner: uid), launcher: launcher)
        #expect(await daemon.waitForExit(timeout: 60) == 3, "\(daemon.logLines.suffix(5))")
        let lines = try #require(await daemon.allLogLines(), "the daemon's stderr did not close")
        #expect(lines.contains { $0.contains("cannot create \(directory), the directory of store.path") && $0.contains("Permission denied") },
                "\(lines)")
        #expect(!FileManager.default.fileExists(atPath: directory))
    }
}
