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
}
