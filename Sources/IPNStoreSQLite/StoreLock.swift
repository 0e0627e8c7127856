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
import IPNStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One `ipnd serve` per store: a lock on `<store>.lock`, held while the daemon runs.
///
/// SQLite would let two daemons write one file, and each would be correct on its own, but a
/// second daemon started during an upgrade migrates the schema under the first, which keeps
/// writing rows the way the old version did; the migrations never revisit them. The lock is a
/// POSIX record lock on a file of its own (never on the store, whose locks are SQLite's), so
/// the kernel drops it when the process ends, however it ends, and names its holder.
public final class StoreLock: Sendable {
    /// The lock file.
    public let path: String
    private let descriptor: Int32

    /// What the lock file's name adds to the store's.
    public static let suffix = ".lock"

    /// Takes the lock, creating the file; throws naming the process that holds it.
    public init(storePath: String) throws(StoreError) {
        path = storePath + Self.suffix
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(message: "cannot open the store's lock file \(path): \(String(cString: strerror(errno)))")
        }
        Self.giveToStoreOwner(descriptor, storePath: storePath)
        var lock = Self.wholeFile(F_WRLCK)
        guard fcntl(descriptor, F_SETLK, &lock) == 0 else {
            let reason = errno
            var holder = Self.wholeFile(F_WRLCK)
            let known = fcntl(descriptor, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK
            close(descriptor)
            guard reason == EAGAIN || reason == EACCES else {
                throw StoreError(message: "cannot lock \(path): \(String(cString: strerror(reason)))")
            }
            throw StoreError(message: "another ipnd serve \(known ? "(pid \(holder.l_pid)) " : "")is using this store "
                + "(it holds \(path)); one daemon per store: stop it first")
        }
        self.descriptor = descriptor
    }

    /// Gives the lock up (the daemon stopped and closed the store); at the latest when this
    /// object goes.
    public func release() {
        released.withLock { released in
            guard !released else { return }
            released = true
            close(descriptor)
        }
    }

    private let released = Locked(false)

    deinit {
        release()
    }

    /// A `serve` started by root (by hand, during an upgrade) would otherwise leave a lock file
    /// only root can open, and the service's own user could not start again. As SQLite does with
    /// its own files, the lock file goes to the owner of the store, or of its directory while
    /// there is no store yet. Nothing changes for anyone but root.
    private static func giveToStoreOwner(_ descriptor: Int32, storePath: String) {
        guard geteuid() == 0 else { return }
        let directory = (storePath as NSString).deletingLastPathComponent
        var owner = stat()
        guard stat(storePath, &owner) == 0 || stat(directory.isEmpty ? "." : directory, &owner) == 0 else { return }
        _ = fchown(descriptor, owner.st_uid, owner.st_gid)
    }

    private static func wholeFile(_ type: Int32) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 0
        return lock
    }
}
