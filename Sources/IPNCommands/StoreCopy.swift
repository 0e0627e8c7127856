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
import IPNConfig
import IPNServer
import IPNStore
import IPNStoreSQLite

/// `ipnd store copy --to OTHER_CONFIG`: the whole store into another, empty one.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store", abstract: "Move a store: copy it whole into another.", subcommands: [CopyStore.self])
}

/// Copies every row (orders, notifications, transitions, dedup keys, refunds, links, events,
/// deliveries, delivery targets) from the config's store into the empty store of another
/// config, SQLite to PostgreSQL or back, then checks the counts.
struct CopyStore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Copy the whole store into the empty store of another config (SQLite and PostgreSQL, either way).",
        discussion: """
            Run it with the daemons stopped: rows written meanwhile would be missing from the copy. The destination \
            is created (SQLite) or migrated (PostgreSQL) when needed and must hold no rows. Exits 0 when every \
            table's count matches, 1 when one does not, 3 when a store cannot be opened.
            """)

    @OptionGroup var options: ConfigOptions

    @Option(help: "The config whose store receives the copy.")
    var to: String

    /// Rows per page read and written.
    static let pageSize = 1000

    func run() async throws {
        let source = try options.load(secrets: .skip)
        let destination: IPNDConfig
        do {
            destination = try ConfigLoader.load(path: to, secrets: .skip)
        } catch {
            Console.error(error.description)
            throw ExitStatus.configError
        }
        guard source.store.backend != destination.store.backend else {
            Console.error("the two configs name the same store (\(storeLocation(source)))")
            throw ExitStatus.configError
        }
        // No daemon may write the SQLite file meanwhile: its lock says whether one runs.
        var locks: [StoreLock] = []
        for config in [source, destination] {
            guard case .sqlite(let path) = config.store.backend else { continue }
            do {
                locks.append(try StoreLock(storePath: path))
            } catch {
                Console.error("store unavailable: \(error) (stop the daemon before copying)")
                throw ExitStatus.storeUnavailable
            }
        }
        let from = try await open(source, purpose: .command)
        let into = try await open(destination, purpose: .daemon)
        defer { _ = locks }
        do {
            for table in StoreCopySchema.tables where try await into.copiedRowCount(table) > 0 {
                Console.error("the destination store (\(storeLocation(destination))) is not empty: \(table.name) has rows")
                throw ExitStatus.configError
            }
            var mismatches: [String] = []
            var lines: [String] = []
            for table in StoreCopySchema.tables {
                var after: [CopyValue]?
                var copied = 0
                while true {
                    let rows = try await from.copyRows(table, after: after, limit: Self.pageSize)
                    guard let last = rows.last else { break }
                    try await into.insertCopiedRows(table, rows)
                    copied += rows.count
                    after = table.keyIndices.map { last[$0] }
                }
                let (sourceCount, destinationCount) = (try await from.copiedRowCount(table), try await into.copiedRowCount(table))
                lines.append("\(table.name): \(copied) copied, \(sourceCount) in the source, \(destinationCount) in the copy")
                if sourceCount != destinationCount || copied != sourceCount { mismatches.append(table.name) }
            }
            try await into.finishCopy()
            _ = try await from.close()
            _ = try await into.close()
            Console.output(lines.joined(separator: "\n"))
            guard mismatches.isEmpty else {
                Console.error("counts differ for \(mismatches.joined(separator: ", ")): was a daemon writing to the source?")
                throw ExitStatus.notFound
            }
            Console.output("store copied from \(storeLocation(source)) to \(storeLocation(destination)): every count matches")
        } catch let error as StoreError {
            _ = try? await from.close()
            _ = try? await into.close()
            Console.error("store unavailable: \(error)")
            throw ExitStatus.storeUnavailable
        } catch {
            _ = try? await from.close()
            _ = try? await into.close()
            throw error
        }
    }

    private func open(_ config: IPNDConfig, purpose: StoreFactory.Purpose) async throws -> any Store & StoreCopying {
        do {
            let store = try await StoreFactory.open(config, purpose: purpose, logger: quietLogger)
            guard let copying = store as? any Store & StoreCopying else {
                throw StoreError(message: "this store cannot be copied")
            }
            return copying
        } catch {
            Console.error("store unavailable: \(error)")
            throw ExitStatus.storeUnavailable
        }
    }
}
