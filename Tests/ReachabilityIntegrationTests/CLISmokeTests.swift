import Foundation
import Testing

/// One long-running command for the signal tests.
enum LongRunning: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case watch = "watch (a reachable target)"
    case wait = "wait (an unreachable target)"
    case status = "status (a hostname whose resolver never answers)"
    case check = "check (a silent HTTP server)"
    case waitConnectivity = "wait --connectivity (a silent HTTP server)"
    case exporter = "exporter --connectivity (serving, a probe in flight to a silent HTTP server)"

    var testDescription: String { rawValue }

    /// What a signal makes it exit with: `watch` and `exporter` 0, the others 128 + the signal.
    func status(for signal: Int32) -> Int32 { self == .watch || self == .exporter ? 0 : 128 + signal }
}

/// A smoke test of every subcommand of the binary users run: `CLI.path`, which
/// `.ci/run` points at the release build too (`REACHABILITY_CLI`). Signals, exit
/// statuses, JSON shapes, failed writes, and the descriptor limit.
@Suite(
    "The reachability CLI as shipped: signals, exit statuses, output failures, descriptors",
    .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLISmokeTests {
    // MARK: Signals

    @Test(
        "SIGINT and SIGTERM end each long-running command with its documented status (watch 0, others 128 + N)",
        arguments: LongRunning.allCases, [SIGINT, SIGTERM])
    func signals(_ command: LongRunning, _ signal: Int32) async throws {
        let ended = try await offPool { () -> Termination in
            // Each case starts the command, waits until it is running (not a fixed
            // sleep: a line, a query, a request, a thread), then sends the signal.
            let child: Child
            var keep: [AnyObject] = []
            defer { withExtendedLifetime(keep) {} }
            switch command {
            case .watch, .wait:
                let ns = try TestNamespace()
                keep.append(ns)
                try ns.disableIPv6()
                try ns.ipv4WithDefaultRoute()
                try ns.ip("route add blackhole 203.0.113.0/24")
                if command == .watch {
                    child = try ns.spawnCLI(["watch", "192.0.2.77"])
                    let first = child.nextLine(timeout: 30)
                    #expect(first?.contains("reachableViaWiFi") == true, "the first line: \(first ?? "none")")
                } else {
                    child = try ns.spawnCLI(["wait", "203.0.113.9", "--timeout", "600"])
                    try eventuallyBlocking("the netlink reader thread runs") {
                        child.hasThread(named: "reachability-nl")
                    }
                }
            case .status:
                let ns = try TestNamespace(named: "rcli-sig")
                let dns = try SilentDNSServer(in: ns)
                keep += [ns, dns]
                child = try Child(
                    [
                        "ip", "netns", "exec", try #require(ns.name), CLI.path, "status", "silent.rtest", "--timeout",
                        "600",
                    ],
                    captureOutput: true)
                #expect(dns.nextQuery(timeout: 30), "the resolver asks")
            case .check, .waitConnectivity, .exporter:
                let ns = try TestNamespace()
                try ns.disableIPv6()
                try ns.ipv4WithDefaultRoute()
                let server = try TestHTTPServer(in: ns, routes: ["/generate_204": .silent])
                keep += [ns, server]
                let url = server.url("/generate_204").absoluteString
                let probes = ["--url", url, "--probe-timeout", "600", "--deadline", "600"]
                let arguments =
                    switch command {
                    case .check: ["check"] + probes
                    case .exporter: ["exporter", "--listen", "127.0.0.1:0", "--connectivity"] + probes
                    default: ["wait", "--connectivity", "--timeout", "600"] + probes
                    }
                child = try ns.spawnCLI(arguments)
                try eventuallyBlocking("the probe reaches the server") { server.count("/generate_204") >= 1 }
            }
            child.signal(signal)
            return child.termination()
        }
        #expect(ended == .exited(command.status(for: signal)), "\(command.rawValue), signal \(signal)")
    }

    // MARK: Exit statuses and JSON

    @Test("Every subcommand: its exit statuses and its JSON shape")
    func exitStatusesAndJSON() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp([
            "/generate_204": .respond(status: 204), "/broken": .respond(status: 500),
        ])
        try await offPool {
            try ns.ip("route add blackhole 203.0.113.0/24")
            let stateKeys = [
                "time", "target", "status", "reachable", "connectionRequired", "flags", "rawFlags", "interface",
            ]
            func keysInOrder(_ line: String, _ keys: [String]) -> Bool {
                let positions = keys.map { line.range(of: "\"\($0)\":")?.lowerBound }
                return positions.allSatisfy { $0 != nil } && positions == positions.sorted { $0! < $1! }
            }

            let status = try ns.cli(["status", "192.0.2.77", "--json"])
            #expect(status.status == 0, "\(status.stderr)")
            let object = try jsonObject(status.stdout)
            #expect(Set(object.keys) == Set(stateKeys + ["path"]))
            #expect(keysInOrder(status.stdout, stateKeys + ["path"]), "\(status.stdout)")
            #expect(try ns.cli(["status", "203.0.113.9"]).status == 1)
            #expect(try ns.cli(["status", "999.1.1.1"]).status == 2)
            #expect(try ns.cli(["--no-such-option"]).status == 2)
            #expect(try ns.cli([]).stdout.contains("status:     reachableViaWiFi"), "status is the default")

            let watch = try ns.spawnCLI(["watch", "--json", "192.0.2.77"])
            let line = try #require(watch.nextLine(timeout: 30), "watch prints the state at once")
            #expect(Set(try jsonObject(line).keys) == Set(stateKeys) && keysInOrder(line, stateKeys), "\(line)")
            watch.signal(SIGTERM)
            #expect(watch.termination() == .exited(0))

            #expect(try ns.cli(["wait", "192.0.2.77", "--timeout", "30"]).status == 0)
            #expect(try ns.cli(["wait", "203.0.113.9", "--timeout", "0.5"]).status == 1)
            #expect(try ns.cli(["wait", "--ipv4", "--ipv6"]).status == 2)

            let online = try ns.cli(["check", "--url", server.url("/generate_204").absoluteString, "--json"])
            #expect(online.status == 0, "\(online.stderr)")
            let verdict = try jsonObject(online.stdout)
            #expect(
                Set(verdict.keys) == [
                    "verdict", "loginURL", "status", "endpoints", "captivePortalAPI", "captivePortalAPISource",
                ])
            let endpoint = try #require((verdict["endpoints"] as? [[String: Any]])?.first)
            #expect(Set(endpoint.keys) == ["url", "ok", "httpStatus", "error", "millis"])
            #expect(try ns.cli(["check", "--url", server.url("/broken").absoluteString]).status == 1)
            #expect(try ns.cli(["check", "--url", "ftp://x.test/"]).status == 2)

            let connected = try ns.cli([
                "wait", "--connectivity", "--url", server.url("/generate_204").absoluteString, "--timeout", "30",
            ])
            #expect(connected.status == 0, "\(connected.stderr)")
            let never = try ns.cli([
                "wait", "--connectivity", "--url", server.url("/broken").absoluteString, "--timeout", "0.5",
            ])
            #expect(never.status == 1)

            let interfaces = try ns.cli(["interfaces", "--json"])
            #expect(interfaces.status == 0)
            let list = try #require(
                try JSONSerialization.jsonObject(with: Data(interfaces.stdout.utf8)) as? [[String: Any]])
            #expect(
                list.allSatisfy {
                    Set($0.keys) == [
                        "index", "name", "type", "operState", "up", "carrier", "defaultRoute",
                        "defaultRouteFamilies", "addresses",
                    ]
                }, "\(interfaces.stdout)")

            let help = try ns.cli(["--help"])
            #expect(help.status == 0 && help.stdout.contains("USAGE: reachability"), "\(help)")
        }
    }

    // MARK: Output failures

    struct WriteFailure: Sendable, CustomTestStringConvertible {
        var name: String
        /// Run by `sh -c`; `"$0"` is the CLI.
        var script: String
        var status: Int32
        /// What stderr says, when it can be written.
        var says: String?
        var testDescription: String { name }
    }

    static let writeFailures: [WriteFailure] = [
        WriteFailure(
            name: "status > /dev/full", script: #""$0" status > /dev/full"#, status: 1,
            says: "reachability: write error: No space left on device"),
        WriteFailure(
            name: "status --json > /dev/full", script: #""$0" status --json > /dev/full"#, status: 1,
            says: "reachability: write error: No space left on device"),
        WriteFailure(
            name: "status, stdout closed (EBADF, not a socket that took fd 1)", script: #""$0" status >&-"#,
            status: 1, says: "reachability: write error: Bad file descriptor"),
        WriteFailure(
            name: "status, stdin and stdout closed", script: #""$0" status <&- >&-"#, status: 1,
            says: "reachability: write error: Bad file descriptor"),
        WriteFailure(
            name: "status > /dev/full 2> /dev/full", script: #""$0" status > /dev/full 2> /dev/full"#, status: 1),
        WriteFailure(name: "status, stdout and stderr closed", script: #""$0" status >&- 2>&-"#, status: 1),
        WriteFailure(
            name: "interfaces > /dev/full", script: #""$0" interfaces > /dev/full"#, status: 1,
            says: "reachability: write error: No space left on device"),
        WriteFailure(
            name: "watch > /dev/full", script: #""$0" watch 192.0.2.77 > /dev/full"#, status: 1,
            says: "reachability: write error: No space left on device"),
        WriteFailure(
            name: "watch, stdout closed", script: #""$0" watch --json >&-"#, status: 1,
            says: "reachability: write error: Bad file descriptor"),
        WriteFailure(name: "usage error 2> /dev/full", script: #""$0" --no-such-option 2> /dev/full"#, status: 2),
        WriteFailure(name: "usage error, stderr closed", script: #""$0" status 999.1.1.1 2>&-"#, status: 2),
        WriteFailure(
            name: "validation error 2> /dev/full", script: #""$0" wait --ipv4 --ipv6 2> /dev/full"#, status: 2),
        WriteFailure(
            name: "--help > /dev/full", script: #""$0" --help > /dev/full"#, status: 1,
            says: "reachability: write error: No space left on device"),
        WriteFailure(
            name: "check --help, stdout closed", script: #""$0" check --help >&-"#, status: 1,
            says: "reachability: write error: Bad file descriptor"),
        WriteFailure(
            name: "--help > /dev/full 2> /dev/full", script: #""$0" --help > /dev/full 2> /dev/full"#, status: 1),
    ]

    @Test(
        "A failed write to stdout or stderr: exit 1 (output) or 2 (usage), a message where one fits, no crash",
        arguments: writeFailures)
    func writeFailure(_ failure: WriteFailure) async throws {
        let ns = try await offPool { () -> TestNamespace in
            let ns = try TestNamespace()
            try ns.disableIPv6()
            try ns.ipv4WithDefaultRoute()
            return ns
        }
        let (ended, stderr) = try await offPool {
            let child = try ns.spawn(["sh", "-c", failure.script, CLI.path], captureOutput: true)
            child.closeInput()
            let (_, stderr) = child.readAll()
            return (child.termination(), stderr)
        }
        #expect(ended == .exited(failure.status), "\(failure.name): \(stderr.prefix(300))")
        #expect(!stderr.contains("Fatal error"), "\(stderr.prefix(300))")
        if let says = failure.says {
            #expect(stderr == says + "\n", "\(failure.name)")
        }
    }

    @Test("check --json > /dev/full exits 1 with a message")
    func checkWriteFailure() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .respond(status: 204)])
        let url = server.url("/generate_204").absoluteString
        let (ended, stderr) = try await offPool {
            let child = try ns.spawn(
                ["sh", "-c", #""$0" check --json --url "$1" > /dev/full"#, CLI.path, url], captureOutput: true)
            let (_, stderr) = child.readAll()
            return (child.termination(), stderr)
        }
        #expect(ended == .exited(1), "\(stderr.prefix(300))")
        #expect(stderr == "reachability: write error: No space left on device\n")
    }

    @Test(
        "A real thread limit (RLIMIT_NPROC, as another user): status, wait and check run or exit 2 naming ulimit -u",
        // One at a time: the limit counts all of nobody's threads, those of another case's run too.
        .serialized, arguments: [1, 3, 5, 7, 8, 9, 10, 12, 16])
    func threadLimit(limit: Int) async throws {
        let ns = try await offPool { () throws -> TestNamespace in
            let ns = try TestNamespace()
            try ns.disableIPv6()
            try ns.ipv4WithDefaultRoute()
            return ns
        }
        // RLIMIT_NPROC binds a user other than root: nobody's threads, counted from 0.
        let asNobody = [
            "timeout", "-s", "KILL", "60", "nsenter", "--net=\(ns.path)", "--", "setpriv", "--reuid=65534",
            "--regid=65534", "--clear-groups", "prlimit", "--nproc=\(limit)", "--", CLI.path,
        ]
        for arguments in [
            ["status"], ["wait", "--timeout", "1"],
            ["check", "--no-proxy", "--url", "http://192.0.2.2:9/", "--probe-timeout", "1", "--deadline", "2"],
        ] {
            let output = try await offPool { try Command.run(asNobody + arguments) }
            // 0 or 1: it ran; 2: it said why; 137: killed for hanging; 132: SIGILL.
            #expect([0, 1, 2].contains(output.status), "\(arguments) at \(limit): \(output.status) \(output.stderr)")
            if output.status == 2 {
                #expect(output.stderr.contains("ulimit -u) is \(limit)"), "\(arguments) at \(limit): \(output.stderr)")
            }
            // No thread to spare: said so. Enough: it runs (nothing answers the check: 1).
            if limit == 1 { #expect(output.status == 2, "\(arguments)") }
            if limit == 16 { #expect(output.status == (arguments[0] == "check" ? 1 : 0), "\(arguments)") }
        }
    }

    @Test("watch into a pipe never read while the link flaps 2,000 times: once read, its last line is the state now")
    func watchStdoutNeverRead() async throws {
        let lines = try await offPool { () -> [String] in
            let ns = try TestNamespace()
            try ns.disableIPv6()
            try ns.ipv4WithDefaultRoute()
            let fifo = NSTemporaryDirectory() + "rtest-unread-\(getpid())-\(UUID().uuidString.prefix(8))"
            try #require(mkfifo(fifo, 0o600) == 0)
            defer { unlink(fifo) }
            // Both ends held here, read from only at the end: watch's writes block
            // once the pipe is full, and its monitor with them.
            let reader = open(fifo, O_RDWR | O_NONBLOCK)
            try #require(reader >= 0)
            defer { close(reader) }
            // The smallest pipe (a page): it fills after a dozen lines.
            try #require(fcntl(reader, 1031 /* F_SETPIPE_SZ */, 4096) == 4096)
            let watch = try ns.spawn(["sh", "-c", #"exec "$0" watch --json >"$1""#, CLI.path, fifo])
            defer { watch.terminate() }
            // Flaps in rounds until the pipe is full (less room than a line): from then
            // on watch is blocked in write(2), however fast its build is.
            let round = fifo + ".round"
            try String(repeating: "link set veth1 down\nlink set veth1 up\n", count: 10)
                .write(toFile: round, atomically: true, encoding: .utf8)
            defer { unlink(round) }
            var queued: Int32 = 0
            for _ in 0..<600 where queued < 3900 {
                try ns.run(["ip", "-batch", round])
                usleep(20_000)
                _ = ioctl(reader, 0x541B /* FIONREAD */, &queued)
            }
            try #require(queued >= 3900, "the pipe filled: \(queued) bytes")
            let batch = fifo + ".batch"
            let flaps = String(repeating: "link set veth1 down\nlink set veth1 up\n", count: 2000)
            try (flaps + "link set veth1 down\n").write(toFile: batch, atomically: true, encoding: .utf8)
            defer { unlink(batch) }
            try ns.run(["ip", "-batch", batch])
            // Read until the last line is the state now and watch has had 2 s without
            // another (a slow build catches up in bursts).
            var text: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            var quietSince = ContinuousClock.now
            let deadline = ContinuousClock.now + .seconds(120)
            func endsDown() -> Bool {
                let lines = text.split(separator: UInt8(ascii: "\n"))
                return lines.last.map { String(decoding: $0, as: UTF8.self).contains("\"notReachable\"") } ?? false
            }
            while ContinuousClock.now - quietSince < .seconds(2) || !endsDown(), ContinuousClock.now < deadline {
                let count = read(reader, &buffer, buffer.count)
                if count > 0 {
                    text += buffer[..<count]
                    quietSince = .now
                } else {
                    usleep(20_000)
                }
            }
            #expect(watch.isRunning, "watch still runs")
            return String(decoding: text, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        let last = try jsonObject(lines.last)
        #expect(
            last["reachable"] as? Bool == false && last["status"] as? String == "notReachable",
            "the last of \(lines.count) lines: \(lines.suffix(3))")
    }

    @Test(
        "watch | head -n 1: the next line ends watch by SIGPIPE as cat, or exit 1 (EPIPE) when SIGPIPE is ignored",
        arguments: [false, true])
    func watchIntoClosedPipe(ignoringSIGPIPE: Bool) async throws {
        let (ended, stderr) = try await offPool { () -> (String?, String) in
            let ns = try TestNamespace()
            try ns.disableIPv6()
            try ns.ipv4WithDefaultRoute()
            let script =
                (ignoringSIGPIPE ? "trap '' PIPE; " : "")
                + #""$0" watch --json @internet | head -n 1; echo "watch ${PIPESTATUS[0]}""#
            let pipeline = try ns.spawn(["bash", "-c", script, CLI.path], captureOutput: true)
            let first = pipeline.nextLine(timeout: 30)
            #expect((try? jsonObject(first))?["status"] as? String == "reachableViaWiFi", "\(first ?? "none")")
            guard first != nil else {
                // No line: watch would never write, head never exit, and readAll wait for good.
                pipeline.signal(SIGKILL)
                return (nil, "")
            }
            // head has exited with its one line; the next change makes watch write.
            try ns.ip("route del default")
            let verdict = pipeline.nextLine(timeout: 30)
            let (_, stderr) = pipeline.readAll()
            #expect(pipeline.termination() == .exited(0))
            return (verdict, stderr)
        }
        if ignoringSIGPIPE {
            #expect(ended == "watch 1")
            #expect(stderr == "reachability: write error: Broken pipe\n")
        } else {
            #expect(ended == "watch 141" || ended == "watch 1", "\(ended ?? "no status: watch still runs")")
        }
    }

    // MARK: Descriptors

    /// Each subcommand, with what makes it work in a namespace with a default route.
    static func everySubcommand(url: String) -> [[String]] {
        [
            ["status", "192.0.2.77"], ["watch", "192.0.2.77"], ["wait", "192.0.2.77", "--timeout", "30"],
            ["check", "--url", url], ["wait", "--connectivity", "--url", url, "--timeout", "30"], ["interfaces"],
        ]
    }

    @Test("A hard descriptor limit of 16: every subcommand exits 2 naming the limit, never dies by a signal")
    func tooFewDescriptors() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .respond(status: 204)])
        for arguments in Self.everySubcommand(url: server.url("/generate_204").absoluteString) {
            let (ended, stdout, stderr) = try await offPool {
                let child = try ns.spawn(["prlimit", "--nofile=16:16", CLI.path] + arguments, captureOutput: true)
                child.closeInput()
                let (stdout, stderr) = child.readAll()
                return (child.termination(), stdout, stderr)
            }
            #expect(ended == .exited(2), "\(arguments): \(stderr.prefix(300))")
            #expect(stdout.isEmpty, "\(arguments)")
            let said = stderr.hasPrefix("reachability: too few file descriptors: limit 16, ")
            #expect(
                said && stderr.hasSuffix(" in use; raise it with ulimit -n\n"), "\(arguments): \(stderr.prefix(300))")
        }
    }

    @Test("A soft descriptor limit of 16 under a hard one of 4096: every subcommand works (the soft limit is raised)")
    func lowSoftLimit() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .respond(status: 204)])
        for arguments in Self.everySubcommand(url: server.url("/generate_204").absoluteString) {
            let (ended, first, stderr) = try await offPool {
                let child = try ns.spawn(["prlimit", "--nofile=16:4096", CLI.path] + arguments, captureOutput: true)
                child.closeInput()
                if arguments[0] == "watch" {
                    let first = child.nextLine(timeout: 30)
                    child.signal(SIGINT)
                    let (_, stderr) = child.readAll()
                    return (child.termination(), first, stderr)
                }
                let (stdout, stderr) = child.readAll()
                return (child.termination(), stdout.split(separator: "\n").first.map(String.init), stderr)
            }
            #expect(ended == .exited(0), "\(arguments): \(stderr.prefix(300))")
            #expect(stderr.isEmpty, "\(arguments): \(stderr.prefix(300))")
            if arguments[0] != "wait" {
                #expect(first != nil, "\(arguments) prints")
            }
        }
    }

    // MARK: The command line

    @Test(
        "Without /proc (a chroot, a mount namespace) the command line is read all the same; a command exits 2 naming /proc"
    )
    func commandLineWithoutProc() throws {
        // A mount namespace of its own, /proc unmounted in it before the exec.
        func run(_ arguments: [String]) throws -> Command.Output {
            try Command.run(
                ["unshare", "-m", "sh", "-c", "umount -l /proc && exec \"$@\"", "sh", CLI.path] + arguments)
        }
        let version = try run(["--version"])
        let withProc = try Command.run([CLI.path, "--version"])
        #expect(version.status == 0 && version.stdout == withProc.stdout, "\(version)")
        let refused = try run(["status", "--timeout", "banana"])
        #expect(refused.status == 2 && refused.stderr.contains("banana"), "\(refused)")
        // libdispatch ends a process that can't read its workers' /proc/TID/stat (SIGILL,
        // now and then): a command says so and exits 2, in the small command and the full.
        for arguments in [["status", "127.0.0.1", "--json"], ["status", "--all-namespaces"]] {
            let status = try run(arguments)
            #expect(status.status == 2 && status.stdout.isEmpty, "\(arguments): \(status)")
            #expect(status.stderr.contains("/proc is not mounted"), "\(arguments): \(status)")
        }
        // The full command, run in the small one's place.
        let help = try run(["check", "--help"])
        #expect(help.status == 0 && help.stdout.contains("reachability check"), "\(help)")
    }

    @Test("The full command gets the small one's arguments byte for byte, bytes that are not UTF-8 too")
    func handOverByteForByte() throws {
        // The small command beside a stand-in full command that prints each argument's bytes.
        // Neither file is ever open for writing in this process: a child another test
        // forks meanwhile would hold that descriptor until its exec, and running the
        // file then fails with ETXTBSY. So the small command is a hard link (beside the
        // build's executables, on their file system) and a child writes the stand-in.
        let original = URL(fileURLWithPath: CLI.path).resolvingSymlinksInPath()
        let folder = original.deletingLastPathComponent().appendingPathComponent("handover-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try #require(link(original.path, folder + "/reachability") == 0, "link: \(String(cString: strerror(errno)))")
        let standIn =
            "#!/bin/sh\nfor argument in \"$0\" \"$@\"; do printf '%s' \"$argument\" | od -An -tx1 | tr -d ' \\n'; echo; done\n"
        _ = try Command.check([
            "sh", "-c", #"printf '%s' "$1" > "$2" && chmod 755 "$2""#, "sh", standIn, folder + "/reachability-full",
        ])
        let output = try Command.run([
            "sh", "-c", #"exec "$0" check "$(printf '\377\376')" --url "$(printf 'http://a/\303')""#,
            folder + "/reachability",
        ])
        #expect(output.status == 0, "\(output)")
        let lines = output.stdout.split(separator: "\n").map(String.init)
        #expect(lines.dropFirst() == ["636865636b", "fffe", "2d2d75726c", "687474703a2f2f612fc3"], "\(lines)")
    }
}
