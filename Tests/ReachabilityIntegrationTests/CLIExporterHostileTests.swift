import Foundation
import ReachabilityMetrics
import Testing

@testable import ReachabilityCommands
@_spi(Testing) @testable import ReachabilityCore

/// `reachability exporter` against hostile HTTP clients and at its descriptor limit
///: one that pipelines and never reads, ones that trickle a
/// request head, 300 that try to hold every connection, 150 idle ones while
/// descriptors run out, malformed requests; and its scrape passes `promtool check
/// metrics`. The clients are small Python programs run inside the test's namespace.
@Suite(
    "reachability exporter under hostile clients", .enabled(if: IntegrationGate.heavyEnabled), .ownThreads, .serialized)
struct CLIExporterHostileTests {
    // MARK: Defect 1: memory

    /// Four connections that pipeline `GET /metrics` (8 KB each, with a padding
    /// header) as fast as the kernel takes them and never read a byte. The server must
    /// stop reading them (their sends block), keep its peak RSS bounded, serve others
    /// meanwhile, and close them (the answer deadline) although they never read.
    static let neverReads = #"""
        import select, socket, sys, time
        port, count, cap = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
        request = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 8000 + b"\r\n\r\n"
        chunk = request * 8
        socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(count)]
        for s in socks:
            s.setblocking(False)
        sent = [0] * count
        took = [time.monotonic()] * count  # when each last took bytes
        while True:
            if max(sent) >= cap:
                print("unbounded: one connection took", max(sent), "bytes", flush=True)
                sys.exit(0)
            now = time.monotonic()
            # The server stopped reading: no socket took a byte for 2 s.
            if all(now - t >= 2 for t in took):
                break
            _, writable, _ = select.select([], socks, [], 0.5)
            for s in writable:
                i = socks.index(s)
                try:
                    sent[i] += s.send(chunk)
                    took[i] = time.monotonic()
                except BlockingIOError:
                    pass
        print("blocked after", max(sent), "bytes", flush=True)
        # Still never reading: the server must close them (a reset, as its end holds unread bytes).
        deadline = time.monotonic() + 40
        left = set(socks)
        while left and time.monotonic() < deadline:
            _, writable, failed = select.select([], list(left), list(left), 0.5)
            for s in set(writable) | set(failed):
                try:
                    s.send(b"x")
                except BlockingIOError:
                    pass
                except OSError:
                    left.discard(s)
        print("closed", count - len(left), "of", count, flush=True)
        """#

    @Test(
        "a client that pipelines and never reads: reads stop, peak RSS stays bounded, others are served, it is closed")
    func neverReadingClients() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let exporter = try RunningExporter(ns)
        for _ in 0..<5 { #expect(try exporter.request("/metrics").status == 200) }
        let before = try Self.status(exporter.process.pid, "VmHWM")
        // 64 MiB per connection is more than the kernel buffers both ends can hold.
        let client = try ns.spawn(
            ["/usr/bin/python3", "-c", Self.neverReads, Self.port(exporter), "4", String(64 << 20)],
            captureOutput: true)
        defer { client.terminate() }
        let stopped = client.nextLine(timeout: 120) ?? "no answer"
        #expect(stopped.hasPrefix("blocked after"), "\(stopped)")
        // Served while they wait; what the server holds for them is bounded.
        #expect(try exporter.request("/healthz") == (200, "ok"))
        let peak = try Self.status(exporter.process.pid, "VmHWM")
        #expect(peak - before < 32 << 10, "peak RSS \(before) kB before, \(peak) kB under the flood")
        print("never-reading clients: peak RSS \(before) kB before, \(peak) kB after; \(stopped)")
        #expect(client.nextLine(timeout: 60) == "closed 4 of 4")
        #expect(exporter.process.isRunning)
    }

    // MARK: Defect 2: slow request heads

    /// Two connections that trickle a request head a byte a second: one from its
    /// start, one after a first request was answered (keep-alive). Both must be closed
    /// while they still send: bytes arriving don't extend the deadline.
    static let trickles = #"""
        import select, socket, sys, time
        port = int(sys.argv[1])
        fresh = socket.create_connection(("127.0.0.1", port), timeout=10)
        fresh.sendall(b"GET /metrics HTTP/1.1\r\n")
        kept = socket.create_connection(("127.0.0.1", port), timeout=10)
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        reply = b""
        while not reply.endswith(b"ok\n"):
            data = kept.recv(4096)
            if not data:
                print("no reply on the keep-alive connection", flush=True)
                sys.exit(0)
            reply += data
        kept.sendall(b"GET /metrics HTTP/1.1\r\n")
        socks = {"fresh": fresh, "keep-alive": kept}
        sent = {name: 0 for name in socks}
        closed = {}
        start = time.monotonic()
        while len(closed) < len(socks) and time.monotonic() - start < 25:
            for name, s in socks.items():
                if name not in closed:
                    try:
                        s.send(b"X")
                        sent[name] += 1
                    except OSError:
                        closed[name] = sent[name]
            # The pace: a byte a second, unless the server closes first.
            readable, _, _ = select.select([s for n, s in socks.items() if n not in closed], [], [], 1)
            for s in readable:
                name = next(n for n, x in socks.items() if x is s)
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    closed[name] = sent[name]
        for name in socks:
            print(name, ("closed after %d bytes" % closed[name]) if name in closed else "still open", flush=True)
        """#

    @Test("a request head trickled a byte a second is cut off at the deadline, fresh or on keep-alive")
    func requestHeadDeadline() throws {
        let ns = try TestNamespace()
        let exporter = try RunningExporter(ns)
        let client = try ns.spawn(
            ["/usr/bin/python3", "-c", Self.trickles, Self.port(exporter)], captureOutput: true)
        defer { client.terminate() }
        for name in ["fresh", "keep-alive"] {
            let line = client.nextLine(timeout: 60) ?? "no answer"
            #expect(line.hasPrefix(name + " closed after"), "\(line)")
            // It kept sending while the deadline ran.
            let bytes = Int(line.split(separator: " ").dropLast().last ?? "") ?? 0
            #expect(bytes >= 2, "\(line)")
        }
        #expect(try exporter.request("/healthz") == (200, "ok"))
    }

    /// `count` connections that each send a request line and then a header byte every
    /// 2 s, never finishing the head; a connection the server closes is opened again
    /// at the next tick. Prints `ready` once all are open, then `tick N …` each 2 s.
    static let slowloris = #"""
        import select, socket, sys, time
        port, count, ticks = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
        def connect():
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.setblocking(False)
                s.send(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                return s
            except OSError:
                return None
        def alive(s):
            try:
                readable, _, _ = select.select([s], [], [], 0)
                if readable and not s.recv(4096):
                    return False
                s.send(b"X")
                return True
            except BlockingIOError:
                return True
            except OSError:
                return False
        socks = [connect() for _ in range(count)]
        print("ready", sum(s is not None for s in socks), flush=True)
        reopened = 0
        for tick in range(ticks):
            time.sleep(2)  # the attack's pace
            for i, s in enumerate(socks):
                if s is not None and alive(s):
                    continue
                if s is not None:
                    s.close()
                socks[i] = connect()
                reopened += 1
            print("tick", tick, "open", sum(s is not None for s in socks), "reopened", reopened, flush=True)
        """#

    @Test("300 connections trickling request heads: every real scrape is served throughout")
    func slowloris() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let exporter = try RunningExporter(ns)
        let ticks = 8
        let attack = try ns.spawn(
            ["/usr/bin/python3", "-c", Self.slowloris, Self.port(exporter), "300", String(ticks)],
            captureOutput: true)
        defer { attack.terminate() }
        let ready = attack.nextLine(timeout: 60) ?? "no answer"
        #expect(ready.hasPrefix("ready"), "\(ready)")
        var served = 0
        var scrapes = 0
        var last = ready
        // A scrape as the attack starts and one at every tick of it (16 s: past the deadline,
        // so attackers are cut off and come back while scrapes go on).
        repeat {
            scrapes += 1
            if try Self.scrape(exporter, "/metrics").contains("reachability_reachable{") { served += 1 }
            guard let line = attack.nextLine(timeout: 60) else { break }
            last = line
        } while scrapes <= ticks
        #expect(served == scrapes && scrapes == ticks + 1, "\(served) of \(scrapes) scrapes served; \(last)")
        print("slowloris: \(served) of \(scrapes) scrapes served during 300 trickling connections; \(last)")
        #expect(exporter.process.isRunning)
    }

    // MARK: Defect 3: descriptors

    /// `count` connections opened and held without a byte, until stdin closes.
    static let idleHolders = #"""
        import socket, sys
        port, count = int(sys.argv[1]), int(sys.argv[2])
        socks = []
        for _ in range(count):
            try:
                socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                pass
        print("held", len(socks), flush=True)
        sys.stdin.read()
        """#

    @Test("descriptor limit 100 from the start, 150 idle connections: /healthz answers, no busy accept loop")
    func descriptorLimitAtStart() throws {
        let ns = try TestNamespace()
        let exporter = try RunningExporter(ns, wrapper: ["prlimit", "--nofile=100:100", "--"])
        try Self.requireExporter(exporter)
        try Self.healthzAnswersWhileHeld(exporter, idle: 150)
    }

    @Test("descriptors run out while it runs (limit lowered under it): it backs off, sheds idle connections, answers")
    func descriptorsRunOutAtRuntime() throws {
        let ns = try TestNamespace()
        let exporter = try RunningExporter(ns)
        try Self.requireExporter(exporter)
        #expect(try exporter.request("/healthz") == (200, "ok"))
        // Room for about 24 more descriptors: it started with a high limit and sized its
        // connection table for that, so accept(2) meets EMFILE.
        let pid = exporter.process.pid
        let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
        try Command.check(["prlimit", "--pid", String(pid), "--nofile=\(open + 24):\(open + 24)"])
        try Self.healthzAnswersWhileHeld(exporter, idle: 150)
    }

    @Test("not one descriptor free: accept backs off instead of spinning, and serves again once descriptors return")
    func noDescriptorFree() throws {
        let ns = try TestNamespace()
        let exporter = try RunningExporter(ns)
        try Self.requireExporter(exporter)
        #expect(try exporter.request("/healthz") == (200, "ok"))
        let pid = String(exporter.process.pid)
        let limits = try Command.check(["prlimit", "--pid", pid, "--nofile", "--output", "SOFT,HARD", "--noheadings"])
            .split(whereSeparator: \.isWhitespace).map(String.init)
        try #require(limits.count == 2, "\(limits)")
        // The soft limit at its lowest free descriptor number, so no new one fits (the hard
        // limit stays: it can't be raised back without CAP_SYS_RESOURCE). accept(2) fails
        // with EMFILE, the connection stays pending, and the listener readable.
        let open = Set(try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap { Int($0) })
        let lowestFree = (0...).first { !open.contains($0) } ?? 0
        try Command.check(["prlimit", "--pid", pid, "--nofile=\(lowestFree):\(limits[1])"])
        let waiting = try ns.spawn(
            ["curl", "-sS", "--max-time", "30", exporter.base + "/healthz"], captureOutput: true)
        // Its connection keeps the listener readable: measure while it waits.
        let cpu = try Self.cpuShare(exporter.process.pid) {}
        try Command.check(["prlimit", "--pid", pid, "--nofile=\(limits[0]):\(limits[1])"])
        let (answer, errors) = waiting.readAll()
        #expect(waiting.wait() == 0, "\(errors)")
        #expect(answer == "ok\n")
        #expect(cpu < 0.3, "the exporter used \(Int(cpu * 100)) % of a core")
        print("no descriptor free: exporter CPU \(String(format: "%.1f", cpu * 100)) %, then /healthz \(answer)")
        #expect(try exporter.request("/healthz") == (200, "ok"))
    }

    /// Holds `idle` idle connections, then: /healthz answers (three times) and the
    /// exporter's CPU time over at least 3 s stays under 30 % of a core.
    static func healthzAnswersWhileHeld(_ exporter: RunningExporter, idle: Int) throws {
        let holders = try exporter.ns.spawn(
            ["/usr/bin/python3", "-c", Self.idleHolders, Self.port(exporter), String(idle)], captureOutput: true)
        defer {
            holders.closeInput()
            holders.terminate()
        }
        #expect(holders.nextLine(timeout: 60) == "held \(idle)")
        var answers: [String] = []
        let cpu = try Self.cpuShare(exporter.process.pid) {
            for _ in 0..<3 { answers.append(try Self.scrape(exporter, "/healthz")) }
        }
        #expect(answers == ["ok", "ok", "ok"], "\(answers)")
        #expect(cpu < 0.3, "the exporter used \(Int(cpu * 100)) % of a core")
        print("\(idle) idle connections: /healthz \(answers), exporter CPU \(String(format: "%.1f", cpu * 100)) %")
        #expect(exporter.process.isRunning)
    }

    // MARK: Defect 4: 400

    /// Malformed requests: each must get a 400 and then end of stream within 5 s (the
    /// request deadline is 10 s, the old idle timeout 30 s).
    static let malformed = #"""
        import socket, sys
        port = int(sys.argv[1])
        payloads = [
            ("garbage", b"\x00\xff garbage\r\n\r\n"),
            ("bad-header", b"GET /metrics HTTP/1.1\r\nNo colon here\r\n\r\n"),
            ("oversized-head", b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n"),
        ]
        for name, payload in payloads:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(payload)
            s.settimeout(5)
            reply = b""
            try:
                while True:
                    data = s.recv(65536)
                    if not data:
                        break
                    reply += data
                end = "closed"
            except socket.timeout:
                end = "open"
            except OSError:
                end = "reset"
            print(name, reply.split(b"\r\n", 1)[0].decode("latin-1").replace(" ", "_"), end, flush=True)
            s.close()
        """#

    @Test("a malformed or oversized request gets 400 and the connection closes right after it")
    func badRequestCloses() throws {
        let ns = try TestNamespace()
        let exporter = try RunningExporter(ns)
        let output = try ns.run(["/usr/bin/python3", "-c", Self.malformed, Self.port(exporter)])
        let lines = output.split(separator: "\n").map(String.init)
        #expect(
            lines == [
                "garbage HTTP/1.1_400_Bad_Request closed", "bad-header HTTP/1.1_400_Bad_Request closed",
                "oversized-head HTTP/1.1_400_Bad_Request closed",
            ], "\(output)")
        #expect(try exporter.request("/healthz") == (200, "ok"))
    }

    // MARK: Defect 5: promtool

    @Test("a scrape with every family (probe histogram included) passes `promtool check metrics` without a word")
    func promtoolAcceptsTheScrape() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .respond(status: 204)])
        let url = server.url("/generate_204").absoluteString
        try await offPool {
            let exporter = try RunningExporter(ns, ["--connectivity", "--url", url])
            let probes = "reachability_connectivity_probe_duration_seconds_count{endpoint=\"\(url)\"}"
            try eventuallyBlocking("a check's probe recorded, an output interface") {
                guard let text = try? exporter.request("/metrics").body else { return false }
                return (RunningExporter.value(text, probes) ?? 0) >= 1 && text.contains("reachability_interface_info{")
            }
            let text = try exporter.request("/metrics").body + "\n"
            let lint = try Command.run(["promtool", "check", "metrics"], input: text)
            #expect(lint.status == 0 && lint.stdout.isEmpty && lint.stderr.isEmpty, "\(lint.stdout)\(lint.stderr)")
            // Every family the README lists is there, each with HELP right before TYPE.
            let lines = text.split(separator: "\n").map(String.init)
            for family in ReachabilityMetrics.helpTexts.keys.sorted() {
                let type = try #require(lines.firstIndex { $0.hasPrefix("# TYPE \(family) ") }, "\(family)")
                #expect(type > 0 && lines[type - 1].hasPrefix("# HELP \(family) "), "\(family)")
            }
            #expect(lines.filter { $0.hasPrefix("# TYPE ") }.count == ReachabilityMetrics.helpTexts.count)
        }
    }

    // MARK: Helpers

    static func port(_ exporter: RunningExporter) -> String {
        String(exporter.base.split(separator: ":").last ?? "")
    }

    /// One request with curl (10 s at most): the body, or what went wrong.
    static func scrape(_ exporter: RunningExporter, _ path: String) throws -> String {
        let output = try Command.run(
            ["nsenter", "--net=\(exporter.ns.path)", "--", "curl", "-sS", "--max-time", "10", exporter.base + path])
        return output.status == 0
            ? output.stdout.trimmingCharacters(in: .newlines) : "curl exited \(output.status): \(output.stderr)"
    }

    /// A `/proc/PID/status` figure in kB (`VmHWM`: peak RSS).
    static func status(_ pid: pid_t, _ field: String) throws -> Int {
        let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(field + ":") })
        return try #require(Int(line.split(separator: " ").dropFirst().first ?? ""))
    }

    /// The share of a core the process used (utime + stime, `/proc/PID/stat`) while
    /// `body` ran, over a window of at least 3 s (a measurement, not a wait for an event).
    static func cpuShare(_ pid: pid_t, while body: () throws -> Void) throws -> Double {
        func ticks() throws -> Int {
            let text = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            // After the command name in parentheses: state is field 3, utime 14, stime 15.
            let close = try #require(text.lastIndex(of: ")"))
            let fields = text[text.index(after: close)...].split(separator: " ")
            return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
        }
        let start = (ticks: try ticks(), time: Date())
        try body()
        let left = 3 - Date().timeIntervalSince(start.time)
        if left > 0 { usleep(UInt32(left * 1_000_000)) }
        let used = Double(try ticks() - start.ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
        return used / Date().timeIntervalSince(start.time)
    }

    /// The figures are the exporter's: its pid is not a wrapper's.
    static func requireExporter(_ exporter: RunningExporter) throws {
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(exporter.process.pid)/exe")
        #expect(exe.hasSuffix("/reachability-full") || exe.hasSuffix("/reachability"), "\(exe)")
    }
}

/// The `# HELP` lines `reachability exporter` adds to swift-prometheus's text: pure logic.
@Suite("ReachabilityMetrics help lines")
struct ReachabilityMetricsHelpTests {
    @Test("a HELP line before each TYPE line that has none; one already there is kept; unknown families get one too")
    func addsHelp() {
        let help = ReachabilityMetrics.helpTexts["reachability_reachable"] ?? ""
        #expect(!help.isEmpty)
        let input = """
            # TYPE reachability_reachable gauge
            reachability_reachable{target="internet"} 1.0
            # HELP reachability_flags Given.
            # TYPE reachability_flags gauge
            reachability_flags{target="internet"} 2.0
            # TYPE someone_elses_total counter
            someone_elses_total 3

            """
        let output = String(decoding: ReachabilityMetrics.addingHelp(to: Array(input.utf8)), as: UTF8.self)
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(
            Array(lines.prefix(6)) == [
                "# HELP reachability_reachable \(help)", "# TYPE reachability_reachable gauge",
                "reachability_reachable{target=\"internet\"} 1.0", "# HELP reachability_flags Given.",
                "# TYPE reachability_flags gauge", "reachability_flags{target=\"internet\"} 2.0",
            ])
        #expect(
            lines[6].hasPrefix("# HELP someone_elses_total ") && lines[6].count > "# HELP someone_elses_total ".count)
        #expect(Array(lines.suffix(3)) == ["# TYPE someone_elses_total counter", "someone_elses_total 3", ""])
        // Help texts are one line each, escaped as the format wants.
        for (name, text) in ReachabilityMetrics.helpTexts {
            #expect(name.hasPrefix("reachability_") && !text.isEmpty && !text.contains("\n"), "\(name)")
        }
    }
}
