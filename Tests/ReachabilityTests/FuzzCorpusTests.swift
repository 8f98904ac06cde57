import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// The fuzz target's committed corpus (captured kernel datagrams, Fuzz/capture.py)
/// through the parser, an interface table and flags evaluation.
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
            // Into a table, and each route answer into an evaluation (the fuzz
            // target's whole pipeline replays this corpus in CI's fuzz run).
            var table = InterfaceTable()
            for message in parsed.messages {
                table.apply(message.message) { InterfaceClassifier.classify($0, sysfs: NoInterfaceFacts()) }
                if case .route(let route, deleted: false) = message.message {
                    let destination = route.destination ?? IPAddress.internetProbeV4
                    _ = FlagsEvaluator.evaluate(.route(route), destination: destination, in: table)
                }
            }
        }
        #expect(messages > files.count)
        let links = try #require(files.first { $0.hasPrefix("captured-dump-links") })
        let dump = try #require(FileManager.default.contents(atPath: "\(Self.corpus)/\(links)"))
        var table = InterfaceTable()
        for message in NetlinkParser.parse([UInt8](dump)).messages {
            _ = table.apply(message.message) { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: nil)) }
        }
        #expect(table.interfaces.contains { $0.name == "lo" })
    }
}
