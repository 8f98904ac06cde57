import Foundation
import Reachability
import Testing

@testable import ReachabilityCommands
@_spi(Testing) @testable import ReachabilityCore

/// The `reachability` binary under test: `REACHABILITY_CLI` when set (e.g. the
/// release build, `.ci/run` runs the CLI suites against it too), otherwise the
/// one built next to the test bundle in the build folder.
enum CLI {
    static var path: String {
        if let chosen = ProcessInfo.processInfo.environment["REACHABILITY_CLI"], !chosen.isEmpty {
            // Meant to be absolute; a relative path is taken from the current directory.
            return chosen.hasPrefix("/")
                ? chosen : FileManager.default.currentDirectoryPath + "/" + chosen
        }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("reachability").path
    }
}

extension TestNamespace {
    /// Runs the CLI inside the namespace and returns its exit status and output.
    func cli(_ arguments: [String]) throws -> Command.Output {
        try Command.run(["nsenter", "--net=\(path)", "--", CLI.path] + arguments)
    }

    /// Starts the CLI inside the namespace, its stdout readable line by line.
    func spawnCLI(_ arguments: [String]) throws -> Child {
        try spawn([CLI.path] + arguments, captureOutput: true)
    }
}

/// Decodes one JSON object line.
func jsonObject(_ line: String?) throws -> [String: Any] {
    let data = Data((line ?? "").utf8)
    return try #require(
        try JSONSerialization.jsonObject(with: data) as? [String: Any], "not a JSON object: \(line ?? "nil")")
}

@Suite("The reachability CLI against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLIIntegrationTests {
    @Test("status: exit codes and JSON for reachable, unreachable, the Internet, and malformed input")
    func status() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.ip("route add blackhole 203.0.113.0/24")

        let reachable = try ns.cli(["status", "192.0.2.77", "--json"])
        #expect(reachable.status == 0)
        let object = try jsonObject(reachable.stdout)
        #expect(object["target"] as? String == "192.0.2.77")
        #expect(object["status"] as? String == "reachableViaWiFi")
        #expect(object["reachable"] as? Bool == true)
        #expect(object["connectionRequired"] as? Bool == false)
        #expect(object["flags"] as? [String] == ["reachable", "isDirect"])
        #expect(object["rawFlags"] as? Int == 0x20002)
        let interface = try #require(object["interface"] as? [String: Any])
        #expect(interface["name"] as? String == "veth0" && interface["type"] as? String == "wiredEthernet")
        #expect((object["time"] as? String)?.hasSuffix("Z") == true)
        #expect(try jsonObject(reachable.stdout)["path"] is [String: Any])

        let blackholed = try ns.cli(["status", "203.0.113.9", "--json"])
        #expect(blackholed.status == 1)
        #expect(try jsonObject(blackholed.stdout)["status"] as? String == "notReachable")
        #expect(try jsonObject(blackholed.stdout)["interface"] is NSNull)

        let internet = try ns.cli(["status"])
        #expect(internet.status == 0)
        #expect(internet.stdout.contains("status:     reachableViaWiFi"))
        #expect(internet.stdout.contains("veth0 (#"))
        try ns.ip("route del default")
        let offline = try ns.cli(["status", "--json"])
        #expect(offline.status == 1)
        #expect(try jsonObject(offline.stdout)["target"] as? String == "@internet")
        #expect(try jsonObject(offline.stdout)["reachable"] as? Bool == false)

        for bad in ["999.1.1.1", "::g", "bad host"] {
            let result = try ns.cli(["status", bad])
            #expect(result.status == 2, "\(bad): \(result)")
            #expect(result.stderr.contains(bad), "the message names the input: \(result.stderr)")
        }
        #expect(try ns.cli(["status", "--no-such-option"]).status == 2)
    }

    @Test("watch --json: a line per target at start, a line per change, nothing otherwise; SIGINT exits 0")
    func watch() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.addVeth("veth2", peer: "veth3")
        let watch = try ns.spawnCLI(["watch", "--json", "@internet", "192.0.2.77"])
        func next(_ what: String) throws -> [String: Any] {
            let line: String = try #require(watch.nextLine(timeout: 15), "no line for \(what)")
            return try jsonObject(line)
        }
        let start = try [next("start 1"), next("start 2")]
        #expect(Set(start.compactMap { $0["target"] as? String }) == ["@internet", "192.0.2.77"])
        #expect(start.allSatisfy { $0["status"] as? String == "reachableViaWiFi" })

        try ns.ip("link set veth0 down")
        let down = try [next("down 1"), next("down 2")]
        #expect(down.allSatisfy { $0["status"] as? String == "notReachable" })
        try ns.ip("link set veth0 up")
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        // Until both are reachable. On link-up the carrier can come a moment before the
        // operstate settles: a target may pass through the "waking" state (reachable +
        // connectionRequired, DESIGN §2) on its way, but never back to plain unreachable.
        var up: [[String: Any]] = []
        var reachableTargets: Set<String> = []
        while reachableTargets.count < 2 {
            let line = try next("up")
            up.append(line)
            if line["reachable"] as? Bool == true, let target = line["target"] as? String {
                reachableTargets.insert(target)
            }
        }
        for line in up where line["reachable"] as? Bool == false {
            #expect((line["flags"] as? [String])?.contains("connectionRequired") == true, "\(up)")
        }

        // Unrelated changes print nothing: the next line is the marker's.
        try ns.batch((1...20).map { "route add 10.8.\($0).0/24 dev veth2 table 100" })
        try ns.ip("addr add 198.18.0.1/24 dev veth2")
        try ns.ip("route del default")
        let marker = try next("route delete")
        #expect(marker["target"] as? String == "@internet" && marker["status"] as? String == "notReachable")
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        let back = try next("route add")
        #expect(back["target"] as? String == "@internet" && back["reachable"] as? Bool == true)
        #expect(watch.nextLine(timeout: 0.3) == nil, "nothing while nothing changes")

        watch.signal(SIGINT)
        // A watch that ignores the signal is killed after a while: a failure, not a hung suite.
        #expect(watch.termination() == .exited(0))
    }

    @Test("wait: exit 0 when the link comes up 0.5 s after it starts; exit 1 at --timeout 1")
    func wait() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.ip("link set veth1 down")
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { _ = try? ns.ip("link set veth1 up") }
        let started = Date()
        #expect(try ns.cli(["wait", "--timeout", "20"]).status == 0)
        #expect(Date().timeIntervalSince(started) >= 0.4)
        #expect(try ns.cli(["wait", "--timeout", "5", "--interface", "veth0", "--ipv4"]).status == 0)

        try ns.ip("link set veth1 down")
        let timedOut = Date()
        #expect(try ns.cli(["wait", "--timeout", "1"]).status == 1)
        #expect(Date().timeIntervalSince(timedOut) >= 1)
        try ns.ip("link set veth1 up")
        #expect(try ns.cli(["wait", "--timeout", "1", "--interface", "veth9"]).status == 1)
        #expect(try ns.cli(["wait", "--ipv4", "--ipv6"]).status == 2)
    }

    @Test("interfaces --json lists the test veths with their types and states")
    func interfaces() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.ip("link add veth2 type veth peer name veth3")  // veth2 and veth3 left down
        let result = try ns.cli(["interfaces", "--json"])
        #expect(result.status == 0)
        let list = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        let byName = Dictionary(
            uniqueKeysWithValues: list.compactMap { entry in (entry["name"] as? String).map { ($0, entry) } })
        #expect(Set(byName.keys) == ["lo", "veth0", "veth1", "veth2", "veth3"])
        #expect(byName["lo"]?["type"] as? String == "loopback")
        #expect(byName["veth0"]?["type"] as? String == "wiredEthernet")
        #expect(byName["veth0"]?["operState"] as? String == "up")
        #expect(byName["veth0"]?["carrier"] as? Bool == true)
        #expect(byName["veth0"]?["defaultRoute"] as? Bool == true)
        #expect(byName["veth0"]?["addresses"] as? [String] == ["192.0.2.1/24"])
        #expect(byName["veth1"]?["defaultRoute"] as? Bool == false)
        #expect(byName["veth2"]?["operState"] as? String == "down")
        #expect(byName["veth2"]?["up"] as? Bool == false)
        let table = try ns.cli(["interfaces"])
        #expect(table.stdout.contains("IDX  NAME") && table.stdout.contains("5 links listed."))
    }

    @Test("The JSON line escapes any target text and parses back; the time is ISO 8601 UTC with milliseconds")
    func jsonEscaping() throws {
        let hostile = "a\"b\\c\n\r\t\u{1}\u{1F}é😀/"
        let line = Output.json(
            target: hostile, state: ReachabilityState(flags: [.reachable, .isWWAN], interface: nil),
            time: timespec(tv_sec: 1_795_000_000, tv_nsec: 500_000_000))
        let object = try jsonObject(line)
        #expect(object["target"] as? String == hostile)
        #expect(object["time"] as? String == "2026-11-18T11:06:40.500Z")
        #expect(object["flags"] as? [String] == ["reachable", "isWWAN"])
        #expect(object["status"] as? String == "reachableViaWWAN")
        #expect(object["interface"] is NSNull)
        let keys = ["time", "target", "status", "reachable", "connectionRequired", "flags", "rawFlags", "interface"]
        let positions = keys.map { line.range(of: "\"\($0)\":")?.lowerBound }
        #expect(
            positions.allSatisfy { $0 != nil } && positions == positions.sorted { $0! < $1! }, "documented key order")
    }

    @Test("The JSON line, byte for byte: zero-padded milliseconds, an interface, years of five digits kept whole")
    func jsonExactLine() {
        let state = ReachabilityState(
            flags: [.reachable], interface: NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet))
        #expect(
            Output.json(target: "@internet", state: state, time: timespec(tv_sec: 1_795_000_000, tv_nsec: 7_999_999))
                == #"{"time": "2026-11-18T11:06:40.007Z", "target": "@internet", "status": "reachableViaWiFi", "#
                + #""reachable": true, "connectionRequired": false, "flags": ["reachable"], "rawFlags": 2, "#
                + #""interface": {"name": "eth0", "index": 2, "type": "wiredEthernet"}}"#)
        #expect(Output.timestamp(timespec(tv_sec: 0, tv_nsec: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(Output.timestamp(timespec(tv_sec: 253_402_300_799, tv_nsec: 999_999_999)) == "9999-12-31T23:59:59.999Z")
        #expect(Output.timestamp(timespec(tv_sec: 253_402_300_800, tv_nsec: 0)) == "10000-01-01T00:00:00.000Z")
        #expect(Output.quote("plain") == #""plain""#)
        #expect(Output.quote("q\"b\\\u{7}") == #""q\"b\\\u0007""#)
        // DEL, C1's CSI and a bidi override are escaped too: a JSON line in a terminal can't drive it.
        #expect(Output.quote("d\u{7F}c\u{9B}r\u{202E}ü€") == #""d\u007fc\u009br\u202eü€""#)
        #expect(Output.terminalSafe("plain ü\n\tnext") == "plain ü\n\tnext")
        #expect(Output.terminalSafe("e\u{1B}[31mRED\u{9B}\u{2066}") == #"e\x1b[31mRED\xc2\x9b\xe2\x81\xa6"#)
    }

    @Test("The timestamp's calendar arithmetic agrees with gmtime_r, before 1970, on leap days and far out")
    func civilTimeMatchesGmtime() {
        var generator = SystemRandomNumberGenerator()
        let edges: [Int] = [
            0, -1, 59, 86_399, 86_400, -86_400, -86_401, 951_782_400, 951_868_799, 4_107_542_399, 4_107_542_400,
            -2_203_891_200, -2_208_988_801, 253_402_300_799, 253_402_300_800, -62_167_219_200, -62_167_219_201,
        ]
        let random = (0..<20_000).map { _ in Int.random(in: -80_000_000_000...400_000_000_000, using: &generator) }
        for seconds in edges + random {
            var whole = time_t(seconds)
            var parts = tm()
            gmtime_r(&whole, &parts)
            let expected = CivilTime(
                year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday),
                hour: Int(parts.tm_hour), minute: Int(parts.tm_min), second: Int(parts.tm_sec))
            #expect(CivilTime(secondsSinceEpoch: seconds) == expected, "at \(seconds) s")
        }
    }
}
