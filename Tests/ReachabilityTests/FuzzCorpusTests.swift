import Foundation
import Testing

@_spi(Fuzzing) @testable import Reachability

/// The fuzz target's committed corpus (captured kernel datagrams, Fuzz/capture.py)
/// through the same path as the fuzzer: parser → interface table → flags and path.
@Suite("Fuzz corpus replay")
struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/corpus").path

    @Test("Every corpus input parses completely and evaluates; link dumps fill the table")
    func replay() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.corpus).sorted()
        #expect(files.count >= 100)
        var messages = 0
        for file in files {
            let bytes = try #require(FileManager.default.contents(atPath: "\(Self.corpus)/\(file)"))
            let parsed = NetlinkParser.parse([UInt8](bytes))
            // Real kernel output: nothing in it is malformed.
            #expect(parsed.malformed == nil, "\(file): \(String(describing: parsed.malformed))")
            messages += parsed.messages.count
            _ = FuzzHooks.run([UInt8](bytes))
        }
        #expect(messages > files.count)
        let links = try #require(files.first { $0.hasPrefix("captured-dump-links") })
        let dump = try #require(FileManager.default.contents(atPath: "\(Self.corpus)/\(links)"))
        var table = InterfaceTable()
        for message in NetlinkParser.parse([UInt8](dump)).messages {
            _ = table.apply(message.message) { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: nil)) }
        }
        #expect(table.interfaces.values.contains { $0.name == "lo" })
    }
}
