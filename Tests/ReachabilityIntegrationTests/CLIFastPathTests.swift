import ArgumentParser
import Foundation
import TestSupport
import Testing

@testable import ReachabilityCommands
@testable import ReachabilityFullCLI

/// The small `reachability` parses the command lines it runs itself
/// (`Invocation.parse`) and hands every other one to `reachability-full`. Where it
/// accepts, it must mean what swift-argument-parser's parse of the full command means.
@Suite("The small reachability's parser against the full command's")
struct CLIParserEquivalenceTests {
    /// The full command's reading of `arguments`, as the small one's value; nil when
    /// it refuses them, asks for help, or reads an option the small one leaves alone.
    static func full(_ arguments: [String]) -> Invocation? {
        guard let command = try? ReachabilityCommand.parseAsRoot(arguments) else { return nil }
        switch command {
        case let status as Status: return .status(status.options)
        case let watch as Watch: return watch.connectivity ? nil : .watch(watch.options)
        case let wait as Wait: return wait.connectivity ? nil : .wait(wait.options)
        case let interfaces as Interfaces: return .interfaces(interfaces.options)
        default: return nil
        }
    }

    /// Command lines users type, which the small command must run itself.
    static let common: [[String]] = [
        [], ["status"], ["example.com"], ["--json"], ["status", "--json", "192.0.2.1"],
        ["status", "--timeout", "2", "example.com"], ["status", "--timeout=0.5", "--namespace", "blue"],
        ["watch"], ["watch", "--json"], ["watch", "@internet", "192.0.2.1", "example.com"], ["watch", "--path"],
        ["status", "@internet"], ["@internet", "--json"], ["wait", "@internet", "-4"], ["watch", "internet"],
        ["watch", "--json", "--path", "--namespace=/proc/1/ns/net", "example.com"],
        ["wait"], ["wait", "--timeout", "30", "example.com"], ["wait", "-i", "eth0"], ["wait", "-i", "eth0:carrier"],
        ["wait", "--interface", "wlan0:degraded", "-i", "eth0", "--any"], ["wait", "--ignore", "docker0", "-4"],
        ["wait", "-6", "--dns", "--timeout=0"], ["wait", "--ipv4", "--dns"], ["interfaces"], ["interfaces", "--json"],
        ["interfaces", "--namespace", "red"],
    ]

    @Test("Every common command line runs in the small command, with the full command's meaning")
    func common() throws {
        for arguments in Self.common {
            let small = Invocation.parse(arguments)
            #expect(small != nil, "the small command hands \(arguments) to the full one")
            #expect(small == Self.full(arguments), "\(arguments)")
        }
    }

    @Test("Command lines the small command leaves to the full one")
    func deferred() {
        let lines: [[String]] = [
            ["check"], ["exporter"], ["help"], ["--help"], ["watch", "--help"], ["-h"], ["--version"],
            ["watch", "--connectivity"], ["wait", "--connectivity"], ["watch", "--url", "http://x/"],
            ["--generate-completion-script", "bash"], ["status", "--timeout", "-1"], ["status", "--timeout", "x"],
            ["wait", "-4", "-6"], ["wait", "-46"], ["wait", "-ieth0"], ["wait", "-i", "eth0:up"], ["status", "a", "b"],
            ["watch", "--json", "--json"], ["status", "--", "-x"], ["interfaces", "lo"], ["status", "--namespace", ""],
            ["watch", "status"], ["wait", "--any"], ["status", "--bogus"], ["status", "--json=yes"],
        ]
        for arguments in lines {
            #expect(Invocation.parse(arguments) == nil, "\(arguments) should go to the full command")
        }
    }

    @Test("5,000 random command lines: wherever the small command accepts, the full one agrees")
    func randomCorpus() {
        let words = [
            "status", "watch", "wait", "interfaces", "check", "exporter", "help", "--json", "--path", "--timeout",
            "--timeout=3", "5", "0", "-1", "nan", "1e3", "--namespace", "--namespace=ns", "ns", "-i", "--interface",
            "eth0", "eth0:carrier", "lo:routable", "x:bogus", "--any", "--ignore", "wlan0", "-4", "-6", "--ipv4",
            "--ipv6", "--dns", "--connectivity", "example.com", "192.0.2.1", "internet", "@internet", "--", "-46",
            "-ieth0", "",
            "--help", "-h", "--version", "--bogus", "--json=1", "-",
        ]
        var generator = SeededGenerator(seed: 26)
        var accepted = 0
        for _ in 0..<5_000 {
            let count = Int(generator.next() % 6)
            let arguments = (0..<count).map { _ in words[Int(generator.next() % UInt64(words.count))] }
            guard let small = Invocation.parse(arguments) else { continue }
            accepted += 1
            let full = Self.full(arguments)
            #expect(small == full, "\(arguments): small \(small), full \(String(describing: full))")
        }
        // Not a vacuous comparison: a good share of the corpus runs in the small command.
        #expect(accepted > 250, "only \(accepted) accepted")
    }
}

/// Which executable runs a command line: the small `reachability` itself, or
/// `reachability-full` in its place (the same process, by execv).
@Suite(
    "The reachability command runs status, watch, wait, interfaces itself", .enabled(if: IntegrationGate.enabled),
    .ownThreads)
struct CLIFastPathTests {
    /// The file the process `pid` runs, by name.
    static func executableName(_ pid: pid_t) -> String? {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")).map {
            URL(fileURLWithPath: $0).lastPathComponent
        }
    }

    /// Mangled module names: Foundation, FoundationEssentials, NIOCore, NIOSSL,
    /// ArgumentParser, Prometheus.
    static let heavyModules = [
        "10Foundation", "20FoundationEssentials", "7NIOCore", "6NIOSSL", "14ArgumentParser", "10Prometheus",
    ]

    @Test("watch runs in the small executable, which holds no Foundation, SwiftNIO, TLS or argument parser")
    func watchIsSmall() async throws {
        try await offPool {
            let ns = try TestNamespace()
            try ns.ipv4WithDefaultRoute()
            let child = try ns.spawnCLI(["watch", "--json"])
            defer { child.terminate() }
            let first = child.nextLine(timeout: 30)
            #expect(first?.contains("\"reachable\": true") == true, "first line: \(first ?? "none")")
            #expect(Self.executableName(child.pid) == "reachability")
            // Statically or dynamically linked, a Swift module's code and type metadata
            // carry its mangled name: none of these may be in the small executable (the
            // full one holds them all).
            for path in [CLI.path, CLI.path + "-full"] {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
                let found = Self.heavyModules.filter { bytes.range(of: Data($0.utf8)) != nil }
                if path == CLI.path {
                    #expect(found.isEmpty, "the small executable holds \(found)")
                } else {
                    #expect(found.count == Self.heavyModules.count, "reachability-full holds only \(found)")
                }
            }
        }
    }

    @Test("watch --connectivity becomes reachability-full: the same process, the same arguments")
    func connectivityIsFull() async throws {
        try await offPool {
            let ns = try TestNamespace()
            try ns.ipv4WithDefaultRoute()
            // An endpoint nothing answers on: the first line is the verdict's, later.
            let child = try ns.spawnCLI(["watch", "--json", "--path", "--connectivity", "--url", "http://192.0.2.9/"])
            defer { child.terminate() }
            let first = child.nextLine(timeout: 30)
            #expect(first?.contains("\"path\"") == true, "first line: \(first ?? "none")")
            #expect(Self.executableName(child.pid) == "reachability-full")
            let arguments = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(child.pid)/cmdline"))) ?? Data()
            let words = arguments.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            #expect(
                Array(words.dropFirst()) == [
                    "watch", "--json", "--path", "--connectivity", "--url", "http://192.0.2.9/",
                ])
        }
    }

    @Test("Without reachability-full beside it, a command that needs it says so and exits 2")
    func fullMissing() throws {
        // Beside the build's own executables, so the copy can be a hard link: a
        // written copy can fail to exec with ETXTBSY while a child that another test
        // forks meanwhile still holds the writing descriptor (close-on-exec only
        // closes it at that child's exec). A link is never open for writing.
        let original = URL(fileURLWithPath: CLI.path).resolvingSymlinksInPath()
        let builds = original.deletingLastPathComponent()
        let folder = builds.appendingPathComponent("small-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appendingPathComponent("reachability").path
        try #require(link(original.path, copy) == 0, "link: \(String(cString: strerror(errno)))")
        let checked = try Command.run([copy, "check"])
        #expect(checked.status == 2)
        #expect(
            checked.stderr.contains("reachability-full") && checked.stderr.contains(folder.path), "\(checked.stderr)")
        // What it runs itself still works there.
        let listed = try Command.run([copy, "interfaces", "--json"])
        #expect(listed.status == 0 && listed.stdout.hasPrefix("["), "\(listed)")
    }
}
