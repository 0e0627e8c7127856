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
import IPNServer
import IPNStore
import Logging

/// `ipnd`: one binary, subcommands (product.md section 1).
public struct IPNDCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "ipnd",
        abstract: "Receives, verifies and records payment providers' notifications.",
        version: BuildInfo.version,
        subcommands: [
            Serve.self, CheckConfig.self, Orders.self, Notifications.self, Inquiries.self, Events.self, Deliveries.self, Simulate.self,
            Backup.self, StoreCommand.self,
        ]
    )

    public init() {}

    /// Parses the command line and runs the chosen subcommand, exiting with its status.
    public static func runMain(arguments: [String]? = nil) async {
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

/// Exit codes of product.md section 1.
public enum ExitStatus {
    public static let notFound = ExitCode(1)
    public static let configError = ExitCode(2)
    public static let storeUnavailable = ExitCode(3)
    /// `orders reconcile`: the provider could not be asked or gave no usable answer.
    public static let providerUnusable = ExitCode(5)
}

/// `--config PATH`, shared by every subcommand.
struct ConfigOptions: ParsableArguments {
    @Option(name: .long, help: "The YAML config (default: $IPND_CONFIG or /etc/ipnd/ipnd.yaml).")
    var config: String?

    var path: String {
        config ?? ConfigLoader.defaultPath(environment: ProcessInfo.processInfo.environment)
    }

    /// Loads the config, or prints the error naming the key and exits 2. Commands that only
    /// open the store pass `.skip`: they run outside the service's credentials.
    func load(secrets: SecretHandling = .resolve) throws -> IPNDConfig {
        do {
            return try ConfigLoader.load(path: path, secrets: secrets)
        } catch {
            Console.error(error.description)
            throw ExitStatus.configError
        }
    }
}

/// Writing to the terminal.
enum Console {
    /// Under systemd, an error that stops a command (a config error in `check-config` or
    /// `serve`, before the daemon's log starts) is filed at error priority, as the daemon's own
    /// error lines are: `journalctl -p warning` then shows why the unit did not start.
    static func error(_ message: String) {
        standardError(message, level: .error)
    }

    /// A warning that does not stop the command, on stderr (at warning priority under systemd).
    static func warning(_ message: String) {
        standardError(message, level: .warning)
    }

    private static func standardError(_ message: String, level: Logger.Level) {
        guard standardErrorIsJournal else {
            write(message + "\n", to: STDERR_FILENO)
            return
        }
        let priority = LogfmtLogHandler.syslogPriority(level)
        write(message.split(separator: "\n", omittingEmptySubsequences: false).map { priority + $0 }.joined(separator: "\n") + "\n",
              to: STDERR_FILENO)
    }

    private static let standardErrorIsJournal = LogfmtLogHandler.standardErrorIsJournal()

    static func print(_ text: String) {
        write(text + "\n", to: STDOUT_FILENO)
    }

    /// Plain write(2): Foundation's `FileHandle.write` traps on a closed pipe, which NIO (used
    /// by `simulate`) turns from a signal into an error. A reader that went away
    /// (`ipnd simulate ... | head -1`) ends the command as SIGPIPE would have.
    private static func write(_ text: String, to descriptor: Int32) {
        if DescriptorOutput.writeAll(Array(text.utf8), to: descriptor) == EPIPE {
            signal(SIGPIPE, SIG_DFL)
            raise(SIGPIPE)
        }
    }

    /// A command's whole output, written at once; nothing at all when it is empty.
    static func output(_ text: String) {
        guard !text.isEmpty else { return }
        print(text)
    }
}

/// The daemon's process-wide logger: logfmt lines on stderr, written in batches, level from
/// `$IPND_LOG_LEVEL` (default info). Flush `output` before the process exits.
enum DaemonLogging {
    /// Bootstraps logging, or prints why `$IPND_LOG_LEVEL` is not a level and exits 2: a typo
    /// must not silently leave the daemon at another level than asked.
    static func bootstrap() throws -> (logger: Logger, output: LogOutput) {
        let level = try configuredLevel()
        let output = LogOutput.batchedStandardError()
        // Under systemd, each line carries its priority: `journalctl -p warning` finds warnings.
        let syslogPrefix = LogfmtLogHandler.standardErrorIsJournal()
        LoggingSystem.bootstrap { label in
            LogfmtLogHandler(label: label, level: level, output: output, syslogPrefix: syslogPrefix)
        }
        return (Logger(label: "ipnd"), output)
    }

    /// The level `$IPND_LOG_LEVEL` names (info when unset), or a message and exit 2;
    /// `check-config` asks too, since the unit runs it before `serve` with the same environment.
    static func configuredLevel() throws -> Logger.Level {
        guard let text = ProcessInfo.processInfo.environment["IPND_LOG_LEVEL"] else { return .info }
        guard let level = Logger.Level(rawValue: text) else {
            let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            Console.error("IPND_LOG_LEVEL: \"\(text.prefix(32))\" is not a log level (\(levels))")
            throw ExitStatus.configError
        }
        return level
    }
}
