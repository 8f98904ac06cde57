import Glibc
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// The parser must never crash, whatever the bytes. Each corpus is parsed in a
/// child process (an exit test), so that a crash fails one test, names the input
/// that caused it, and leaves the rest of the run intact.
@Suite struct ParserRobustnessTests {
    @Test(arguments: FuzzCorpus.all)
    func neverCrashes(_ corpus: FuzzCorpus) async throws {
        let passed = await #expect(processExitsWith: .success) { [corpus] in try Self.parseAll(corpus) } != nil
        guard !passed else { return }
        // Run it again, observing stderr this time, to name the input that failed.
        let failure = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [corpus] in
            try Self.parseAll(corpus)
        }
        guard let failure else { return }
        let log = String(decoding: failure.standardErrorContent, as: UTF8.self).split(separator: "\n")
        if let violation = log.last(where: { $0.hasPrefix("violation") }) {
            Issue.record("\(corpus): \(violation)")
        }
        guard let last = log.last(where: { $0.hasPrefix("input ") }), let index = Int(last.dropFirst(6)) else {
            return
        }
        let input = try corpus.inputs()[index]
        let hex = input.prefix(64).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
        Issue.record(
            """
            \(corpus): input \(index) (\(input.count) bytes) ended the child with \(failure.exitStatus); \
            first bytes: \(hex)
            """)
    }

    /// Runs in the child: parses every input, announcing each on stderr first so
    /// that the parent can tell which one crashed.
    static func parseAll(_ corpus: FuzzCorpus) throws {
        for (index, input) in try corpus.inputs().enumerated() {
            log("input \(index)")
            let result = NetlinkParser.parse(input)
            if let problem = corpus.violation(result, input: input) {
                log("violation at input \(index): \(problem)")
                exit(2)
            }
        }
    }

    /// One line on stderr, unbuffered.
    static func log(_ line: String) {
        var line = line + "\n"
        line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
