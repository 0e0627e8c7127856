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

    public init(label: String, level: Logger.Level = .info, output: LogOutput = .standardError) {
        self.label = label
        self.logLevel = level
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { $1 } }
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        var line = "ts=\(Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000)))"
        line += " level=\(event.level.rawValue) msg=\(Self.quote(event.message.description))"
        for key in fields.keys.sorted() {
            line += " \(key)=\(Self.quote(fields[key].map(Self.text) ?? ""))"
        }
        if let error = event.error { line += " error=\(Self.quote("\(error)"))" }
        line += "\n"
        output.write(line)
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
        let value = CardNumberMask.mask(raw)
        let needsQuotes = value.isEmpty || value.unicodeScalars.contains {
            $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" || $0.value < 0x20 || $0.value == 0x7F
        }
        guard needsQuotes else { return value }
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Where log lines go: stderr, or a buffer in tests.
public final class LogOutput: Sendable {
    private let capturing: Bool
    private let lines = Locked<[String]>([])

    private init(capturing: Bool) {
        self.capturing = capturing
    }

    public static let standardError = LogOutput(capturing: false)

    /// An output that keeps lines in memory (tests).
    public static func capture() -> LogOutput { LogOutput(capturing: true) }

    public var captured: [String] { lines.withLock { $0 } }

    func write(_ line: String) {
        if capturing {
            lines.withLock { $0.append(line) }
            return
        }
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}
