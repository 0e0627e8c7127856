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
@testable import IPNServer
import Logging
import Testing

@Suite("log lines (logfmt)")
struct LogfmtLogHandlerTests {
    @Test("fields are sorted by key; the event's metadata overrides the provider's and the logger's")
    func precedenceAndOrder() throws {
        let output = LogOutput.capture()
        var logger = Logger(label: "test") { LogfmtLogHandler(label: $0, output: output) }
        logger[metadataKey: "component"] = "writer"
        logger[metadataKey: "provider"] = "from-logger"
        logger[metadataKey: "zone"] = "from-logger"
        logger.info("hello world", metadata: ["provider": "unlimint", "a": "1", "note": "two words"])
        let line = try #require(output.captured.first)
        #expect(line.hasPrefix("ts="))
        let afterTimestamp = line.drop { $0 != " " }
        #expect(afterTimestamp == #" level=info msg="hello world" a=1 component=writer note="two words" provider=unlimint zone=from-logger"# + "\n")
    }

    @Test("a value with a no-break or other non-ASCII space is quoted, so it stays one field")
    func nonASCIIQuoted() throws {
        let output = LogOutput.capture()
        let logger = Logger(label: "test") { LogfmtLogHandler(label: $0, output: output) }
        logger.info("event", metadata: ["order_ref": "A\u{00A0}B", "name": "café"])
        let line = try #require(output.captured.first)
        #expect(line.contains("order_ref=\"A\u{00A0}B\""), "\(line)")
        #expect(line.contains("name=\"café\""), "\(line)")
    }

    @Test("with the syslog prefix, each line starts with its level's priority; JOURNAL_STREAM must name stderr itself")
    func syslogPrefix() throws {
        let output = LogOutput.capture()
        let logger = Logger(label: "test") { LogfmtLogHandler(label: $0, level: .trace, output: output, syslogPrefix: true) }
        logger.info("one")
        logger.warning("two")
        logger.critical("three")
        logger.debug("four")
        #expect(output.captured.map { String($0.prefix(6)) } == ["<6>ts=", "<4>ts=", "<2>ts=", "<7>ts="])
        var status = stat()
        try #require(fstat(STDERR_FILENO, &status) == 0)
        #expect(LogfmtLogHandler.standardErrorIsJournal(["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino)"]))
        #expect(!LogfmtLogHandler.standardErrorIsJournal(["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino + 1)"]))
        #expect(!LogfmtLogHandler.standardErrorIsJournal(["JOURNAL_STREAM": "garbage"]))
        #expect(!LogfmtLogHandler.standardErrorIsJournal([:]))
    }

    @Test("bidirectional overrides, zero-width characters and C1 controls are escaped; other text beyond ASCII is kept")
    func invisibleEscaped() throws {
        let output = LogOutput.capture()
        let logger = Logger(label: "test") { LogfmtLogHandler(label: $0, output: output) }
        logger.info("event", metadata: [
            "detail": "MerchantCode \u{202E}KH00001\u{200B} is not KH00001",
            "other": "a\u{2066}b\u{85}c\u{FEFF}d\u{2028}e é 日本\n",
        ])
        let line = try #require(output.captured.first)
        #expect(line.contains(#"detail="MerchantCode \u{202e}KH00001\u{200b} is not KH00001""#), "\(line)")
        #expect(line.contains(#"other="a\u{2066}b\u{85}c\u{feff}d\u{2028}e é 日本\n""#), "\(line)")
    }

    @Test("card numbers are masked in any logged value, also written next to other digits; other numbers are left alone",
          arguments: [
              ("4111111111111111", "411111******1111"),
              ("card 4111 1111 1111 1111 exp", "card 411111******1111 exp"),
              ("4111111111111111 2027", "411111******1111 2027"),
              ("4111-1111-1111-1111-123", "411111******1111-123"),
              ("12 4111 1111 1111 1111", "12 411111******1111"),
              ("ref=5500000000000004,x", "ref=550000******0004,x"),
              ("2000470534782760808453", "2000470534782760808453"),  // a 22-digit id, not a card
              ("4111111111111112", "4111111111111112"),  // fails Luhn
              ("order 123-456 2026-11-21", "order 123-456 2026-11-21"),
              ("41111111111111112027", "411111******11112027"),  // a card number and an expiry, run together
              ("ref 20274111111111111111", "ref 2027411111******1111"),
              ("4111.1111.1111.1111", "411111******1111"),
              ("amount 1234.56 at 10.0.0.1", "amount 1234.56 at 10.0.0.1"),
              ("4111\u{00A0}1111\u{00A0}1111\u{00A0}1111", "411111******1111"),  // no-break spaces
              ("4111\u{202F}1111\u{2007}1111\u{2013}1111", "411111******1111"),  // narrow, figure space, en dash
              ("4111  1111 1111 1111", "411111******1111"),
              ("4111_1111_1111_1111", "411111******1111"),
              ("4111/1111/1111/1111", "411111******1111"),
              ("at 2026-11-21 10:00:00.123456", "at 2026-11-21 10:00:00.123456"),
          ])
    func cardNumbers(value: String, logged: String) throws {
        let output = LogOutput.capture()
        let logger = Logger(label: "test") { LogfmtLogHandler(label: $0, output: output) }
        logger.info("event", metadata: ["value": .string(value)])
        let line = try #require(output.captured.first)
        #expect(line.contains(logged), "\(line)")
    }
}

@Suite("log lines written in batches (the daemon's stderr)")
struct BatchedLogOutputTests {
    /// A pipe standing in for stderr; its read end does not block.
    final class LogPipe: Sendable {
        let readEnd: Int32
        let writeEnd: Int32

        init() throws {
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
            (readEnd, writeEnd) = (ends[0], ends[1])
            _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        }

        deinit {
            close(readEnd)
            close(writeEnd)
        }

        /// What has been written and not read yet.
        func available() -> String {
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = Glibc.read(readEnd, &buffer, buffer.count)
                guard count > 0 else { break }
                bytes += buffer[0..<count]
            }
            return String(decoding: bytes, as: UTF8.self)
        }

        /// Reads until `done` says the text so far is complete, or `timeout` passes.
        func read(until done: (String) -> Bool, timeout: Double = 10) -> String {
            var text = ""
            let deadline = Date().addingTimeInterval(timeout)
            while !done(text), Date() < deadline {
                let more = available()
                if more.isEmpty { usleep(1000) } else { text += more }
            }
            return text
        }
    }

    static func messages(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("msg=") }.map { String($0.dropFirst(4)) }
        }
    }

    @Test("info lines wait for the flusher; a warning writes them and itself before log returns, in order")
    func warningWritesAtOnce() throws {
        let pipe = try LogPipe()
        let output = LogOutput.batched(descriptor: pipe.writeEnd, linger: .seconds(10))
        let logger = Logger(label: "test") { LogfmtLogHandler(label: $0, output: output) }
        logger.info("first")
        logger.notice("second")
        #expect(pipe.available().isEmpty, "written before the linger")
        logger.warning("third")
        #expect(Self.messages(pipe.available()) == ["first", "second", "third"])
        logger.info("fourth")
        output.flush()
        #expect(Self.messages(pipe.available()) == ["fourth"])
    }

    @Test("a line logged alone is written within the linger, without a flush")
    func lingerEnds() throws {
        let pipe = try LogPipe()
        let output = LogOutput.batched(descriptor: pipe.writeEnd, linger: .milliseconds(1))
        let logger = Logger(label: "test") { LogfmtLogHandler(label: $0, output: output) }
        for round in 1...3 {
            logger.info("round-\(round)")
            let text = pipe.read(until: { $0.hasSuffix("\n") })
            #expect(Self.messages(text) == ["round-\(round)"])
        }
    }

    @Test("lines from many threads arrive whole, each once, and in each thread's order")
    func concurrentLines() async throws {
        let pipe = try LogPipe()
        let output = LogOutput.batched(descriptor: pipe.writeEnd, linger: .milliseconds(1))
        let (threads, perThread) = (8, 2000)
        // The reader drains the pipe meanwhile: a full pipe would block the writes. It polls
        // without yielding, so it runs on a thread of its own: on the cooperative pool (two
        // threads on a 2-core machine) it could wait behind the very writers that wait for it.
        let reader = Task {
            await onDedicatedThread { pipe.read(until: { $0.utf8.count(where: { $0 == UInt8(ascii: "\n") }) == threads * perThread }, timeout: 60) }
        }
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    let logger = Logger(label: "test") { LogfmtLogHandler(label: $0, output: output) }
                    for index in 0..<perThread { logger.info("t\(thread)-\(index)", metadata: ["padding": "\(String(repeating: "x", count: index % 300))"]) }
                }
            }
        }
        let text = await reader.value
        let messages = Self.messages(text)
        #expect(messages.count == threads * perThread)
        for thread in 0..<threads {
            let mine = messages.filter { $0.hasPrefix("t\(thread)-") }
            #expect(mine == (0..<perThread).map { "t\(thread)-\($0)" })
        }
        #expect(text.split(separator: "\n").allSatisfy { $0.hasPrefix("ts=") && $0.contains(" padding=") })
    }

    @Test("an appender that finds the limit reached writes what is waiting itself")
    func limitWritesAtOnce() throws {
        let pipe = try LogPipe()
        let writer = BatchedDescriptorWriter(descriptor: pipe.writeEnd, linger: .seconds(10), limit: 1000)
        let line = Array(String(repeating: "a", count: 399).utf8) + [UInt8(ascii: "\n")]
        writer.append(line)
        writer.append(line)
        #expect(pipe.available().isEmpty)
        writer.append(line)
        #expect(pipe.available().utf8.count == 1200)
        writer.stop()
    }

    @Test("after stop, lines are written at once")
    func stopped() throws {
        let pipe = try LogPipe()
        let writer = BatchedDescriptorWriter(descriptor: pipe.writeEnd, linger: .seconds(10))
        writer.append(Array("before\n".utf8))
        writer.stop()
        #expect(pipe.available() == "before\n")
        writer.append(Array("after\n".utf8))
        #expect(pipe.available() == "after\n")
    }
}
