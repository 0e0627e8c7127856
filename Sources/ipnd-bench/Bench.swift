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
import Foundation
import IPNConfig
import IPNCore
import IPNStore
import IPNStoreSQLite

/// `ipnd-bench generate`: writes unique, correctly signed notifications for every configured
/// provider, each as a complete raw HTTP/1.1 request, for `scripts/bench.sh` to replay with wrk.
/// File format: for each request, its byte length in decimal, a newline, then the bytes.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ipnd-bench",
        abstract: "Load-benchmark tools: pre-generate signed notifications, time the stages.",
        subcommands: [BenchGenerate.self, BenchStages.self, BenchReceive.self, BenchProvider.self, BenchDueOrders.self],
        defaultSubcommand: BenchGenerate.self
    )
}

struct BenchGenerate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Pre-generate signed notifications for the load benchmark."
    )

    @Option(help: "The config whose accounts sign the notifications.")
    var config: String

    @Option(help: "How many notifications to write (spread evenly across providers).")
    var count = 200_000

    @Option(help: "Output file.")
    var output: String

    @Option(help: "A prefix making order references unique across runs.")
    var prefix = "B"

    func run() async throws {
        let loaded = try ConfigLoader.load(path: config)
        let accounts = ProviderRegistry.all.compactMap { type in loaded.account(provider: type.name, name: "default") }
        guard !accounts.isEmpty else { throw ValidationError("no default accounts in \(config)") }
        let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let started = Date()
        let chunks = try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var out: [UInt8] = []
                    out.reserveCapacity(count / workers * 700)
                    var index = worker
                    while index < count {
                        let account = accounts[index % accounts.count]
                        let request = try account.provider.simulatedRequest(Self.spec(for: type(of: account.provider), index: index, prefix: prefix))
                        let raw = Self.rawHTTP(request)
                        out.append(contentsOf: Array("\(raw.count)\n".utf8))
                        out.append(contentsOf: raw)
                        index += workers
                    }
                    return (worker, out)
                }
            }
            var chunks: [(Int, [UInt8])] = []
            for try await chunk in group { chunks.append(chunk) }
            return chunks.sorted { $0.0 < $1.0 }.map(\.1)
        }
        // Interleave per worker in file order is not needed: the replay splits by record index.
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        for chunk in chunks { try handle.write(contentsOf: chunk) }
        try handle.close()
        let seconds = Date().timeIntervalSince(started)
        print("generated \(count) signed notifications (\(accounts.map(\.providerName).joined(separator: ", "))) in \(String(format: "%.1f", seconds)) s -> \(output)")
    }

    static func spec(for provider: any NotificationProvider.Type, index: Int, prefix: String) -> SimulationSpec {
        let defaults = provider.simulationDefaults
        let amount = Money(minor: 1000 + Int64(index % 5000), currency: defaults.currency)
        return SimulationSpec(
            orderRef: "\(prefix)-\(provider.name)-\(index)", status: defaults.paidStatus, amount: amount, path: "/ipn/\(provider.name)",
            uniqueID: "\(prefix)\(index)", time: "2026-11-21T04:01:02Z")
    }

    /// The request as bytes on the wire.
    static func rawHTTP(_ request: RawRequest) -> [UInt8] {
        var head = "POST \(request.target) HTTP/1.1\r\nHost: ipnd\r\n"
        for (name, value) in request.headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(request.body.count)\r\n\r\n"
        return Array(head.utf8) + request.body
    }
}

/// `ipnd-bench stages`: single-threaded cost of each stage of the hot path, in-process, so
/// the figures do not depend on HTTP or on what else the machine runs.
struct BenchStages: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stages",
        abstract: "Time verification per provider and the store's write path per notification."
    )

    @Option(help: "The config whose accounts sign and verify.")
    var config: String

    @Option(help: "Notifications per stage.")
    var count = 20_000

    @Option(help: "Only this provider's verification (and the store writes of its notifications).")
    var provider: String?

    @Flag(help: "Skip the store write stages.")
    var verifyOnly = false

    @Option(parsing: .upToNextOption, help: "The max_batch values to time the store with.")
    var batches: [Int] = [1, 64]

    func run() async throws {
        let loaded = try ConfigLoader.load(path: config)
        print("stage                               per notification")
        var verified: [(ReceivedRequest, VerifiedNotification)] = []
        for type in ProviderRegistry.all where provider == nil || provider == type.name {
            guard let account = loaded.account(provider: type.name, name: "default") else { continue }
            let requests = try (0..<count).map { index in
                try account.provider.simulatedRequest(BenchGenerate.spec(for: type, index: index, prefix: "S"))
            }
            let started = ContinuousClock.now
            for request in requests {
                let notification = try account.provider.verify(request)
                if verified.count < count * 2 {
                    verified.append((ReceivedRequest(
                        provider: type.name, account: "default", receivedAt: "2026-11-21T00:00:00.000Z", clientIP: "127.0.0.1",
                        target: request.target, headers: "[]", body: request.body), notification))
                }
            }
            report("verify \(type.name)", ContinuousClock.now - started, requests.count)
        }
        for maxBatch in batches where !verifyOnly {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-stages-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let inbox = try SQLiteStore(path: directory.appendingPathComponent("s.sqlite").path, maxBatch: maxBatch)
            let sample = Array(verified.prefix(count))
            let started = ContinuousClock.now
            // 64 writers at a time, as 64 connections would be.
            try await withThrowingTaskGroup(of: Void.self) { group in
                var next = 0
                for _ in 0..<64 where next < sample.count {
                    let item = sample[next]
                    next += 1
                    group.addTask { _ = try await inbox.record(.verified(item.0, item.1)) }
                }
                while try await group.next() != nil, next < sample.count {
                    let item = sample[next]
                    next += 1
                    group.addTask { _ = try await inbox.record(.verified(item.0, item.1)) }
                }
                try await group.waitForAll()
            }
            report("store write, max_batch \(maxBatch)", ContinuousClock.now - started, sample.count)
            try await inbox.close()
        }
    }

    private func report(_ stage: String, _ duration: Duration, _ count: Int) {
        let (seconds, attoseconds) = duration.components
        let micros = (Double(seconds) * 1e6 + Double(attoseconds) / 1e12) / Double(max(1, count))
        print(stage.padding(toLength: 36, withPad: " ", startingAt: 0) + String(format: "%8.1f us  (%.0f/s on one core)", micros, 1e6 / micros))
    }
}
