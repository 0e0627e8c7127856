import IPNServer
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
