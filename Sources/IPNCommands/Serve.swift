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
import IPNServer
import IPNStore
import Logging

/// `ipnd serve`: the daemon (the systemd unit's ExecStart).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the daemon.")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        // The store holds payment data: files ipnd creates are its own, whatever umask it
        // was started with (the unit also sets UMask=0077).
        umask(0o077)
        let (logger, logOutput) = try DaemonLogging.bootstrap()
        // The last lines (`stopped`, or why not) are out before the process exits.
        defer { logOutput.flush() }
        let config = try options.load()
        let daemon: Daemon
        do {
            daemon = try await Daemon.open(config: config, logger: logger)
        } catch {
            logger.critical("store unavailable", metadata: ["store": "\(storeLocation(config))", "error": "\(error)"])
            throw ExitStatus.storeUnavailable
        }
        do {
            try await daemon.run()
        } catch let error as ListenerError {
            // The config names an address this machine cannot listen on (or another process
            // holds it): a config error, as product.md's exit codes have it.
            logger.critical("cannot listen", metadata: ["error": "\(error)"])
            throw ExitStatus.configError
        } catch {
            logger.critical("stopped on error", metadata: ["error": "\(error)"])
            throw ExitCode.failure
        }
    }
}
