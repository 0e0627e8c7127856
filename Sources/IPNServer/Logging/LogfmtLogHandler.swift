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
import Logging

/// Writes one `key=value` line per event to stderr (journald keeps it as is):
/// `ts=... level=info msg=notification provider=unlimint verdict=applied latency_ms=1.20`.
public struct LogfmtLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let output: LogOutput
    private let syslogPrefix: Bool

    /// - Parameter syslogPrefix: start each line with its syslog priority (`<4>` for a
    ///   warning), which journald reads as the entry's priority and removes.
    public init(label: String, level: Logger.Level = .info, output: LogOutput = .standardError, syslogPrefix: Bool = false) {
        self.label = label
        self.logLevel = level
        self.output = output
        self.syslogPrefix = syslogPrefix
    }

    /// Whether stderr is the journal's stream, as systemd says in `$JOURNAL_STREAM`
    /// (`device:inode` of the stream it connected to stderr).
    public static func standardErrorIsJournal(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        var status = stat()
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]),
              fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    /// The syslog priority journald files a line of `level` under.
    public static func syslogPriority(_ level: Logger.Level) -> String {
        switch level {
        case .trace, .debug: "<7>"
        case .info: "<6>"
        case .notice: "<5>"
        case .warning: "<4>"
        case .error: "<3>"
        case .critical: "<2>"
        }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let fields = Self.fields(handler: metadata, provided: metadataProvider?.get(), event: event.metadata)
        var line: [UInt8] = []
        line.reserveCapacity(256)
        if syslogPrefix { Self.append(Self.syslogPriority(event.level), to: &line) }
        Self.append("ts=", to: &line)
        Timestamp.append(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000), to: &line)
        Self.append(" level=", to: &line)
        Self.append(event.level.rawValue, to: &line)
        Self.append(" msg=", to: &line)
        Self.appendQuoted(event.message.description, to: &line)
        for (key, value) in fields {
            line.append(UInt8(ascii: " "))
            Self.append(key, to: &line)
            line.append(UInt8(ascii: "="))
            Self.appendQuoted(Self.text(value), to: &line)
        }
        if let error = event.error {
            Self.append(" error=", to: &line)
            Self.appendQuoted("\(error)", to: &line)
        }
        line.append(UInt8(ascii: "\n"))
        output.write(line, level: event.level)
    }

    /// Appends the UTF-8 bytes of `text` in one copy.
    private static func append(_ text: String, to line: inout [UInt8]) {
        text.withUTF8Bytes { line.append(contentsOf: $0) }
    }

    /// The event's metadata over the provider's over the handler's, sorted by key. Built as
    /// an array: merging dictionaries hashed every key of every line twice.
    static func fields(
        handler: Logger.Metadata, provided: Logger.Metadata?, event: Logger.Metadata?
    ) -> [(key: String, value: Logger.Metadata.Value)] {
        var fields: [(key: String, value: Logger.Metadata.Value)] = []
        fields.reserveCapacity(handler.count + (provided?.count ?? 0) + (event?.count ?? 0))
        if let event {
            for (key, value) in event { fields.append((key, value)) }
        }
        if let provided {
            for (key, value) in provided where event?[key] == nil { fields.append((key, value)) }
        }
        for (key, value) in handler where event?[key] == nil && provided?[key] == nil {
            fields.append((key, value))
        }
        fields.sort { $0.key < $1.key }
        return fields
    }

    private static func text(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let string): string
        case .stringConvertible(let value): value.description
        case .array(let values): values.map(text).joined(separator: ",")
        case .dictionary(let values): values.keys.sorted().map { "\($0):\(values[$0].map(text) ?? "")" }.joined(separator: ",")
        }
    }

    /// Quotes a value when it is empty or holds spaces, quotes, `=` or control characters.
    static func quote(_ raw: String) -> String {
        var out: [UInt8] = []
        appendQuoted(raw, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `raw`, card numbers masked, quoted when it is empty or holds spaces, quotes,
    /// `=`, backslashes, control characters or anything beyond ASCII.
    static func appendQuoted(_ raw: String, to out: inout [UInt8]) {
        CardNumberMask.mask(raw).withUTF8Bytes { value in
            let needsQuotes = value.isEmpty || value.contains { byte in
                // Non-ASCII too: a no-break or other Unicode space would split the value for a reader.
                byte <= 0x20 || byte == 0x22 || byte == 0x3D || byte == 0x5C || byte >= 0x7F
            }
            guard needsQuotes else {
                out.append(contentsOf: value)
                return
            }
            out.append(UInt8(ascii: "\""))
            if value.contains(where: { $0 >= 0x80 }) {
                appendEscaped(scalarsOf: value, to: &out)
            } else {
                for byte in value { appendEscaped(ascii: byte, to: &out) }
            }
            out.append(UInt8(ascii: "\""))
        }
    }

    private static func appendEscaped(ascii byte: UInt8, to out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
        case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
        case UInt8(ascii: "\n"): out.append(contentsOf: #"\n"#.utf8)
        case UInt8(ascii: "\r"): out.append(contentsOf: #"\r"#.utf8)
        case UInt8(ascii: "\t"): out.append(contentsOf: #"\t"#.utf8)
        case 0x00..<0x20, 0x7F: out.append(contentsOf: VisibleText.escape(Unicode.Scalar(byte)).utf8)
        default: out.append(byte)
        }
    }

    /// Beyond ASCII, characters that are invisible or that change how the text around them is
    /// shown are escaped: C1 controls, bidirectional overrides and isolates (which could make
    /// a value read as another in a terminal), zero-width characters, line and paragraph
    /// separators. Unauthenticated requests put such text into rejection details.
    private static func appendEscaped(scalarsOf value: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        for scalar in String(decoding: value, as: UTF8.self).unicodeScalars {
            if scalar.isASCII {
                appendEscaped(ascii: UInt8(scalar.value), to: &out)
                continue
            }
            out.append(contentsOf: (VisibleText.isHidden(scalar) ? VisibleText.escape(scalar) : String(scalar)).utf8)
        }
    }
}

/// Where log lines go: stderr, directly or in batches, or a buffer in tests.
public final class LogOutput: Sendable {
    private enum Destination: Sendable {
        case descriptor(Int32)
        case batched(BatchedDescriptorWriter)
        case capture(Locked<[String]>)
    }

    private let destination: Destination

    private init(_ destination: Destination) {
        self.destination = destination
    }

    /// One `write(2)` per line.
    public static let standardError = LogOutput(.descriptor(STDERR_FILENO))

    /// stderr for the daemon: lines are written by a thread of their own, in batches of what
    /// was logged within `linger`, which saves a system call per notification under load.
    /// Warnings and worse are written before `log` returns, with every line before them. Call
    /// `flush()` before the process exits.
    public static func batchedStandardError(linger: Duration = .milliseconds(1)) -> LogOutput {
        batched(descriptor: STDERR_FILENO, linger: linger)
    }

    static func batched(descriptor: Int32, linger: Duration, limit: Int = 1 << 20) -> LogOutput {
        LogOutput(.batched(BatchedDescriptorWriter(descriptor: descriptor, linger: linger, limit: limit)))
    }

    /// An output that keeps lines in memory (tests).
    public static func capture() -> LogOutput { LogOutput(.capture(Locked([]))) }

    public var captured: [String] {
        guard case .capture(let lines) = destination else { return [] }
        return lines.withLock { $0 }
    }

    /// Writes every line logged so far.
    public func flush() {
        if case .batched(let writer) = destination { writer.flush() }
    }

    func write(_ line: [UInt8], level: Logger.Level) {
        switch destination {
        case .descriptor(let descriptor):
            DescriptorOutput.writeAll(line, to: descriptor)
        case .batched(let writer):
            writer.append(line, flushNow: level >= .warning)
        case .capture(let lines):
            lines.withLock { $0.append(String(decoding: line, as: UTF8.self)) }
        }
    }
}
