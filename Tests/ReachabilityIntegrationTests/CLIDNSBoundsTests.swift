import Foundation
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// `wait --dns` against a hostile resolv.conf: the wait ends
/// by `--timeout` however many `nameserver` lines there are, asks at most the first
/// three distinct servers (glibc's MAXNS), and says on stderr which it asked.
@Suite(
    "wait --dns: bounded by --timeout, at most 3 distinct nameservers", .enabled(if: IntegrationGate.enabled),
    .ownThreads)
struct CLIDNSBoundsTests {
    /// Ten nameservers that read every query and never answer, on 127.0.1.1 …
    /// 127.0.1.10 port 53 inside a namespace; they count the queries each got.
    final class SilentNameservers: @unchecked Sendable {
        // @unchecked: the child's pipes are used by one test, one command at a time.
        private let process: Child
        static let addresses = (1...10).map { "127.0.1.\($0)" }

        init(in namespace: TestNamespace) throws {
            let script = """
                import json, select, socket, sys
                sockets = {}
                for address in \(Self.addresses):
                    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    s.bind((address, 53))
                    s.setblocking(False)
                    sockets[s] = address
                counts = {address: 0 for address in sockets.values()}
                def drain():
                    for s, address in sockets.items():
                        while True:
                            try:
                                s.recvfrom(4096)
                            except BlockingIOError:
                                break
                            counts[address] += 1
                print('ready', flush=True)
                while True:
                    readable, _, _ = select.select(list(sockets) + [sys.stdin], [], [])
                    drain()
                    if sys.stdin in readable:
                        if not sys.stdin.readline():
                            break
                        print(json.dumps(counts), flush=True)
                """
            process = try namespace.spawn(["python3", "-c", script], captureOutput: true)
            guard process.nextLine(timeout: 30) == "ready" else {
                process.terminate()
                throw CommandFailed(command: "silent nameservers", status: -1, stderr: "did not start")
            }
        }

        /// The queries each address has received. Every query sent before this call
        /// is counted: the server drains its sockets before it replies.
        func queries() throws -> [String: Int] {
            process.write("stats\n")
            let line = try #require(process.nextLine(timeout: 10), "the silent nameservers replied")
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Int])
        }

        deinit { process.terminate() }
    }

    struct Run {
        var termination: Termination
        var stderr: String
        var seconds: Double
    }

    /// `reachability wait --dns --namespace NS --timeout TIMEOUT`; killed after
    /// `limit` seconds (a hang is a failed test, not a stuck suite).
    static func wait(_ ns: TestNamespace, timeout: String, limit: Double = 30) throws -> Run {
        let started = Date()
        let child = try Child(
            [CLI.path, "wait", "--dns", "--namespace", ns.path, "--timeout", timeout], captureOutput: true)
        child.closeInput()
        let watchdog = DispatchWorkItem { [child] in if child.isRunning { child.signal(SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + limit, execute: watchdog)
        defer { watchdog.cancel() }
        let (_, stderr) = child.readAll()
        let termination = child.termination(limit: limit)
        return Run(termination: termination, stderr: stderr, seconds: Date().timeIntervalSince(started))
    }

    static func namespace() throws -> TestNamespace {
        let ns = try TestNamespace(named: "rtest-dnsbound")
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        return ns
    }

    @Test(
        "10 silent nameservers, repeats, a bad line and an answering 4th: asks the first 3 distinct, ends by the timeout"
    )
    func tenSilentServers() throws {
        let ns = try Self.namespace()
        let silent = try SilentNameservers(in: ns)
        // Answers the root query (NXDOMAIN): were it asked, the wait would succeed.
        let answering = try ScriptedDNSServer(in: ns, resolvOptions: nil)
        let lines =
            [
                "127.0.1.1", "127.0.1.1", "not-an-address", "127.0.1.2", "127.0.1.1", "127.0.1.3", "127.0.0.1",
            ] + SilentNameservers.addresses.dropFirst(3)
        try ns.writeEtc("resolv.conf", lines.map { "nameserver \($0)\n" }.joined())

        let run = try Self.wait(ns, timeout: "1")
        #expect(run.termination == .exited(1), "\(run.stderr)")
        // Generous: the old code took 1 s per line, one after another (10 s here).
        #expect(run.seconds < 5, "ended by the 1 s timeout, not after \(run.seconds) s")
        for asked in ["127.0.1.1", "127.0.1.2", "127.0.1.3"] {
            #expect(run.stderr.contains("\(asked): no reply within"), "stderr names \(asked): \(run.stderr)")
        }
        for address in ["127.0.0.1"] + SilentNameservers.addresses.dropFirst(3) {
            #expect(!run.stderr.contains("\(address):"), "\(address) is not named: \(run.stderr)")
        }
        #expect(run.stderr.contains("11 other nameserver lines not asked"), "\(run.stderr)")

        // On the wire: the first three distinct servers were asked, no other.
        let queries = try silent.queries()
        for address in SilentNameservers.addresses.prefix(3) {
            #expect(queries[address, default: 0] >= 1, "\(address)")
        }
        for address in SilentNameservers.addresses.dropFirst(3) { #expect(queries[address] == 0, "\(address)") }
        #expect(try answering.queries("") == 0, "the 4th distinct server is never asked, as the C library does")
    }

    @Test("5,000 identical nameserver lines: one server asked, the wait ends by the timeout")
    func fiveThousandIdenticalLines() throws {
        let ns = try Self.namespace()
        let silent = try SilentNameservers(in: ns)
        try ns.writeEtc("resolv.conf", String(repeating: "nameserver 127.0.1.1\n", count: 5000))

        let run = try Self.wait(ns, timeout: "1")
        #expect(run.termination == .exited(1), "\(run.stderr)")
        #expect(run.seconds < 5, "ended by the 1 s timeout, not after \(run.seconds) s")
        #expect(run.stderr.contains("127.0.1.1: no reply within"), "\(run.stderr)")
        #expect(run.stderr.contains("4999 other nameserver lines not asked"), "\(run.stderr)")
        let queries = try silent.queries()
        #expect(queries["127.0.1.1", default: 0] >= 1)
        #expect(queries.filter { $0.key != "127.0.1.1" }.values.allSatisfy { $0 == 0 })
    }

    @Test("Two silent servers, then one that answers: asked together, the answer ends the wait within the timeout")
    func answerBehindSilentServers() throws {
        let ns = try Self.namespace()
        let silent = try SilentNameservers(in: ns)
        let answering = try ScriptedDNSServer(in: ns, resolvOptions: nil)
        try ns.writeEtc("resolv.conf", "nameserver 127.0.1.1\nnameserver 127.0.1.2\nnameserver 127.0.0.1\n")

        let run = try Self.wait(ns, timeout: "1")
        #expect(run.termination == .exited(0), "\(run.stderr)")
        #expect(run.stderr.isEmpty, "\(run.stderr)")
        #expect(try answering.queries("") >= 1)
        let queries = try silent.queries()
        #expect(queries["127.0.1.1", default: 0] >= 1 && queries["127.0.1.2", default: 0] >= 1, "\(queries)")
    }

    @Test("resolv.conf is read up to 1 MiB: a nameserver line past that is not seen; no nameserver, exit 1")
    func sizeBound() throws {
        let ns = try Self.namespace()
        let answering = try ScriptedDNSServer(in: ns, resolvOptions: nil)
        let comment = "# " + String(repeating: "x", count: 1021) + "\n"  // 1 KiB
        try ns.writeEtc("resolv.conf", String(repeating: comment, count: 1024) + "nameserver 127.0.0.1\n")

        let run = try Self.wait(ns, timeout: "1")
        #expect(run.termination == .exited(1), "\(run.stderr)")
        #expect(run.stderr.contains("no nameserver in /etc/netns/"), "\(run.stderr)")
        #expect(try answering.queries("") == 0)
    }
}
