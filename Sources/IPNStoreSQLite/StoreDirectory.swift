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

import IPNStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The directory a SQLite store lives in, which `ipnd serve` makes when it is missing, as
/// daemons make their data directory: owner-only (0700), owned by the user ipnd runs as.
public enum StoreDirectory {
    /// The mode every directory made for the store gets: it will hold payment data.
    public static let mode: mode_t = 0o700

    /// Makes the directory of `storePath`, and any missing directory above it, each 0700.
    ///
    /// - Returns: the directories made, outermost first; empty when the directory was there.
    /// - Throws: naming the directory that could not be made and why (a parent that is not a
    ///   directory, or that this user may not write).
    public static func create(for storePath: String) throws(StoreError) -> [String] {
        var missing: [String] = []
        var directory = parent(of: storePath)
        while !directory.isEmpty, directory != "/", isAbsent(directory) {
            missing.append(directory)
            directory = parent(of: directory)
        }
        if missing.isEmpty, !directory.isEmpty, let status = status(directory), status.st_mode & S_IFMT != S_IFDIR {
            throw StoreError(message: "cannot use \(directory), the directory of store.path \(storePath): \(String(cString: strerror(ENOTDIR)))")
        }
        var made: [String] = []
        for directory in missing.reversed() {
            if mkdir(directory, mode) == 0 {
                made.append(directory)
                continue
            }
            let reason = errno
            // Made meanwhile by someone else (another ipnd serve, the operator): it is there.
            if reason == EEXIST, isDirectory(directory) { continue }
            throw StoreError(
                message: "cannot create \(directory), the directory of store.path \(storePath): \(String(cString: strerror(reason)))")
        }
        return made
    }

    /// `path` without its last component; empty for a name in the working directory.
    private static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    /// Whether nothing can be at `path` as it stands: no such name (`ENOENT`), or a file where a
    /// directory above it should be (`ENOTDIR`, which `mkdir` then reports). Any other failure
    /// (a directory this user may not search) is left for opening the store to report.
    private static func isAbsent(_ path: String) -> Bool {
        var status = stat()
        guard stat(path, &status) != 0 else { return false }
        return errno == ENOENT || errno == ENOTDIR
    }

    private static func status(_ path: String) -> stat? {
        var status = stat()
        return stat(path, &status) == 0 ? status : nil
    }

    private static func isDirectory(_ path: String) -> Bool {
        status(path).map { $0.st_mode & S_IFMT == S_IFDIR } ?? false
    }
}
