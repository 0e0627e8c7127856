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
import IPNStore
@testable import IPNStoreSQLite
import Testing

@Suite("The store's lock file")
struct StoreLockTests {
    /// Run as root (CI is), the store directory is given to another user first, as the service
    /// user's directory is under systemd; run as anyone else there is nothing to hand over.
    @Test("created by root, the lock file belongs to the store's owner (the directory's before the store exists)")
    func rootHandsTheLockFileToTheStoreOwner() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-lock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serviceUser: uid_t = geteuid() == 0 ? 65534 : geteuid()
        let serviceGroup: gid_t = geteuid() == 0 ? 65534 : getegid()
        #expect(chown(directory.path, serviceUser, serviceGroup) == 0)
        let storePath = directory.appendingPathComponent("ipnd.sqlite").path

        do {
            let lock = try StoreLock(storePath: storePath)
            var file = stat()
            #expect(stat(lock.path, &file) == 0)
            #expect(file.st_uid == serviceUser && file.st_gid == serviceGroup)
            #expect(file.st_mode & 0o777 == 0o600)
        }

        // Once a store exists, its owner wins over the directory's.
        let storeOwner: uid_t = geteuid() == 0 ? 65533 : geteuid()
        #expect(FileManager.default.createFile(atPath: storePath, contents: Data()))
        #expect(chown(storePath, storeOwner, serviceGroup) == 0)
        try FileManager.default.removeItem(atPath: storePath + StoreLock.suffix)
        let lock = try StoreLock(storePath: storePath)
        var file = stat()
        #expect(stat(lock.path, &file) == 0)
        #expect(file.st_uid == storeOwner)
    }
}
