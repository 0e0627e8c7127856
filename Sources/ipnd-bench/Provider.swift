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
import IPNCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// `ipnd-bench provider`: iPay88's re-query as a fast stand-in for `make bench`'s reconciliation
/// pass: answers every POST `Record not found` after `--delay-ms`, as a provider's status API
/// that takes its time, and counts them (`GET /count`). The test suite's provider double
/// (tools/provider_double.py) checks the protocol; this one only has to cost its host little.
struct BenchProvider: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provider", abstract: "Answer iPay88 re-queries after a delay and count them (GET /count).")

    @Option(help: "The port to listen on, on 127.0.0.1.")
    var port: Int

    @Option(help: "How long each answer takes, in milliseconds.")
    var delayMs = 200

    func run() async throws {
        let delay = TimeAmount.milliseconds(Int64(delayMs))
        try await ReceiverHandler.serve(port: port) { context, head in
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: delay) {
                ReceiverHandler.answer(loopBound.value, version: head.version, .ok, "Record not found", contentType: "text/html")
            }
        }
    }
}
