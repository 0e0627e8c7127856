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

import ArgumentParser
import IPNStore
import IPNServer
import IPNStoreSQLite

/// `ipnd backup PATH`: a consistent online copy of the store while the daemon runs.
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a consistent copy of the store (SQLite online backup) while the daemon runs."
    )

    @OptionGroup var options: ConfigOptions

    @Argument(help: "Where to write the copy (replaced atomically if it exists).")
    var path: String

    func run() async throws {
        let config = try options.load(secrets: .skip)
        if case .postgres(let settings) = config.store.backend {
            Console.error("ipnd backup copies a SQLite store; this config's store is PostgreSQL (\(StoreFactory.location(settings))): "
                          + "back it up with pg_dump, e.g. pg_dump --format=custom --file=ipnd.dump \(settings.database)")
            throw ExitStatus.configError
        }
        do {
            let summary = try StoreBackup.run(source: config.store.path, destination: path)
            Console.print("backup written to \(summary.path): \(summary.orders) orders, \(summary.notifications) notifications, \(summary.bytes) bytes, integrity ok")
        } catch {
            Console.error("backup failed: \(error)")
            throw ExitStatus.storeUnavailable
        }
    }
}
