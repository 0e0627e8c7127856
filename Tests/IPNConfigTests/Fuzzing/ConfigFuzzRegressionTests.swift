import Foundation
import Testing

/// The config fuzz target's kept inputs replayed as a test (see `Fuzz/regressions/config`).
@Suite("Config fuzz seeds and regressions replayed (issue 7)")
struct ConfigFuzzRegressionTests {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    @Test("every kept config input loads or fails with a config error, never showing a secret")
    func replay() throws {
        var count = 0
        for kind in ["seeds", "regressions"] {
            let folder = Self.directory.appendingPathComponent(kind).appendingPathComponent("config")
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() {
                let data = try #require(FileManager.default.contents(atPath: folder.appendingPathComponent(name).path))
                ConfigFuzzHarness.run([UInt8](data))
                count += 1
            }
        }
        #expect(count >= 4)
    }
}
