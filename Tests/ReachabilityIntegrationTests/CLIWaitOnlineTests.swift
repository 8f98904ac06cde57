import Foundation
import Reachability
import Testing

@testable import ReachabilityCommands
@_spi(Testing) @testable import ReachabilityCore

/// A datagram socket standing in for systemd's NOTIFY_SOCKET: a python3 child
/// bound to it prints each datagram it receives as one JSON string line.
final class NotifySocket: @unchecked Sendable {
    // @unchecked: set once in init; read by one test.
    private let process: Child
    /// What NOTIFY_SOCKET is set to: a path, or "@name" for an abstract socket.
    let address: String

    /// An abstract socket belongs to a network namespace: give the one the command
    /// runs in (`ns`), as a unit's service and systemd share one.
    init(abstract: Bool = false, in ns: TestNamespace? = nil) throws {
        let name = "rtest-notify-\(getpid())-\(UUID().uuidString.prefix(8))"
        address = abstract ? "@\(name)" : NSTemporaryDirectory() + name
        let script = """
            import json, socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            address = sys.argv[1]
            s.bind("\\0" + address[1:] if address.startswith("@") else address)
            print("ready", flush=True)
            while True:
                print(json.dumps(s.recv(65536).decode()), flush=True)
            """
        let command = ["python3", "-c", script, address]
        process = try ns.map { try $0.spawn(command, captureOutput: true) } ?? Child(command, captureOutput: true)
        guard process.nextLine(timeout: 30) == "ready" else {
            process.terminate()
            throw CommandFailed(command: "notify socket", status: -1, stderr: "did not start")
        }
    }

    /// The datagrams received so far (waits up to `timeout` for the first).
    func messages(timeout: Double = 2) -> [String] {
        var messages: [String] = []
        var wait = timeout
        while let line = process.nextLine(timeout: wait) {
            if let data = line.data(using: .utf8), let text = try? JSONDecoder().decode(String.self, from: data) {
                messages.append(text)
            }
            wait = 0.3
        }
        return messages
    }

    deinit {
        process.terminate()
        if !address.hasPrefix("@") { try? FileManager.default.removeItem(atPath: address) }
    }
}

/// `reachability wait` as a wait-online gate: interfaces in a
/// state, --any, --ignore, -4/-6, --dns against a real DNS server, sd_notify to a
/// real datagram socket, and the shipped systemd unit checked by systemd-analyze.
@Suite("reachability wait as a wait-online gate", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLIWaitOnlineTests {
    /// Runs `wait ARGS` in `ns` and returns the exit status and the seconds it took.
    static func wait(_ ns: TestNamespace, _ arguments: [String]) throws -> (
        status: Int32, seconds: Double, stderr: String
    ) {
        let started = Date()
        let output = try ns.cli(["wait"] + arguments)
        return (output.status, Date().timeIntervalSince(started), output.stderr)
    }

    /// Starts `wait ARGS` in `ns` (after `prefix`, e.g. `env NOTIFY_SOCKET=…`), waits
    /// until `ready` says it is waiting (default: its netlink reader thread runs),
    /// checks that it has not ended, makes `change`, and returns how it ended.
    static func waitAcross(
        _ ns: TestNamespace, _ arguments: [String], prefix: [String] = [],
        ready: ((Child) -> Bool)? = nil, change: () throws -> Void
    ) throws -> Termination {
        let child = try ns.spawn(prefix + [CLI.path, "wait"] + arguments)
        try eventuallyBlocking("wait is waiting") { ready?(child) ?? child.hasThread(named: "reachability-nl") }
        #expect(child.isRunning, "it was still waiting before the change")
        try change()
        return child.termination()
    }

    @Test("-i IF:carrier, IF:degraded, IF (routable): each waits for its state; -6 counts only IPv6")
    func interfaceStates() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ip("link add veth0 type veth peer name veth1")
        try ns.ip("link set veth0 up")  // Up, but no carrier while veth1 is down.

        let noCarrier = try Self.wait(ns, ["-i", "veth0:carrier", "--timeout", "1"])
        #expect(noCarrier.status == 1)
        #expect(
            noCarrier.stderr == "reachability: timed out after 1 s waiting for veth0:carrier: veth0 has no carrier\n",
            "says what was still missing: \(noCarrier.stderr)")
        let carrier = try Self.waitAcross(ns, ["-i", "veth0:carrier", "--timeout", "20"]) {
            try ns.ip("link set veth1 up")
        }
        #expect(carrier == .exited(0))

        // Carrier, no address: not degraded yet.
        let noAddress = try Self.wait(ns, ["--interface", "veth0:degraded", "--timeout", "1"])
        #expect(noAddress.status == 1)
        #expect(noAddress.stderr.hasSuffix(": veth0 is carrier (degraded wanted)\n"), "\(noAddress.stderr)")
        let degraded = try Self.waitAcross(ns, ["-i", "veth0:degraded", "--timeout", "20"]) {
            try ns.ip("addr add 192.0.2.1/24 dev veth0")
        }
        #expect(degraded == .exited(0))

        // An address, no default route: not routable (the default state).
        let noRoute = try Self.wait(ns, ["-i", "veth0", "--timeout", "1"])
        #expect(noRoute.status == 1)
        #expect(noRoute.stderr.hasSuffix(": veth0 is degraded (routable wanted)\n"), "\(noRoute.stderr)")
        #expect(try Self.wait(ns, ["-i", "veth0:routable", "--timeout", "1"]).status == 1)
        let routable = try Self.waitAcross(ns, ["-i", "veth0", "--timeout", "20"]) {
            try ns.ip("route add default via 192.0.2.2 dev veth0")
        }
        #expect(routable == .exited(0))
        #expect(try Self.wait(ns, ["-i", "veth0:routable", "-4", "--timeout", "1"]).status == 0)
        // No IPv6 at all: with -6 it is not even degraded.
        #expect(try Self.wait(ns, ["-i", "veth0:degraded", "-6", "--timeout", "1"]).status == 1)
        #expect(try Self.wait(ns, ["-i", "veth0:carrier", "-6", "--timeout", "1"]).status == 0)

        // Losing the carrier loses every state: wait waits again.
        try ns.ip("link set veth1 down")
        #expect(try Self.wait(ns, ["-i", "veth0:carrier", "--timeout", "1"]).status == 1)
        // An interface that doesn't exist: a warning at once (it may come later), the
        // wait goes on until the timeout, then exit 1 saying it never came.
        let absent = try Self.wait(ns, ["-i", "veth9:carrier", "--timeout", "1"])
        #expect(absent.status == 1)
        #expect(
            absent.stderr == "reachability: warning: there is no interface \"veth9\" (yet)\n"
                + "reachability: timed out after 1 s waiting for veth9:carrier: veth9 does not exist\n",
            "\(absent.stderr)")
    }

    @Test("IPv6: a tentative address is not usable; degraded once DAD is done")
    func ipv6Tentative() throws {
        let ns = try TestNamespace()
        try ns.ip("link add veth0 type veth peer name veth1")
        // Before the link comes up: DAD of 3 probes (about 3 s), and no link-local address.
        try ns.run(["sysctl", "-qw", "net.ipv6.conf.veth0.dad_transmits=3", "net.ipv6.conf.veth0.addr_gen_mode=1"])
        try ns.ip("link set veth1 up")
        try ns.ip("link set veth0 up")
        try ns.ip("-6 addr add 2001:db8::1/64 dev veth0")
        let details = try #require(
            try NetworkInterfaces.list(environment: ns.environment).first { $0.interface.name == "veth0" })
        #expect(details.addresses.map(\.description) == ["2001:db8::1/64 tentative"])
        let result = try Self.wait(ns, ["-i", "veth0:degraded", "-6", "--timeout", "30"])
        #expect(result.status == 0)
        #expect(result.seconds >= 1.5, "it waited for duplicate address detection (about 3 s)")
    }

    @Test("Several -i: all of them by default, any one with --any; --any needs -i")
    func allOrAny() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()  // veth0 routable.
        try ns.ip("link add veth2 type veth peer name veth3")
        try ns.ip("link set veth2 up")  // No carrier: veth3 is down.

        #expect(try Self.wait(ns, ["-i", "veth0", "-i", "veth2:carrier", "--timeout", "1"]).status == 1)
        #expect(try Self.wait(ns, ["-i", "veth0", "-i", "veth2:carrier", "--any", "--timeout", "5"]).status == 0)
        #expect(try Self.wait(ns, ["-i", "veth2:carrier", "-i", "veth9", "--any", "--timeout", "1"]).status == 1)
        try ns.ip("link set veth3 up")
        #expect(try Self.wait(ns, ["-i", "veth0", "-i", "veth2:carrier", "--timeout", "5"]).status == 0)
        #expect(try ns.cli(["wait", "--any", "--timeout", "1"]).status == 2)
    }

    @Test("--ignore: another interface must be routable; a link with no carrier is never waited for")
    func ignore() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        // A link with no carrier and nothing on it: the Internet wait doesn't wait for it.
        try ns.ip("link add veth4 type veth peer name veth5")
        try ns.ip("link set veth4 up")
        let plain = try Self.wait(ns, ["--timeout", "20"])
        #expect(plain.status == 0)
        #expect(plain.seconds < 15)

        #expect(try Self.wait(ns, ["--ignore", "veth0", "--timeout", "1"]).status == 1)
        try ns.addVeth("veth2", peer: "veth3", address: "198.51.100.1/24")
        let other = try Self.waitAcross(ns, ["--ignore", "veth0", "--timeout", "20"]) {
            try ns.ip("route add default via 198.51.100.2 dev veth2 metric 200")
        }
        #expect(other == .exited(0))
        #expect(try Self.wait(ns, ["--ignore", "veth0", "--ignore", "veth2", "--timeout", "1"]).status == 1)
    }

    @Test("Bad options: exit 2 naming what is wrong")
    func badOptions() throws {
        let ns = try TestNamespace()
        let cases: [([String], String)] = [
            (["-i", "veth0:bogus"], "bogus"),
            (["-i", "veth0:"], "state"),
            (["-i", ":carrier"], "interface"),
            (["-i", "veth0", "--ignore", "veth1"], "ignore"),
            (["-i", "veth0", "192.0.2.1"], "interface"),
            (["--ignore", "a/b"], "ignore"),
            (["-4", "-6"], "ipv6"),
            (["--connectivity", "-i", "veth0"], "connectivity"),
        ]
        for (arguments, says) in cases {
            let output = try ns.cli(["wait", "--timeout", "1"] + arguments)
            #expect(output.status == 2, "\(arguments)")
            #expect(output.stderr.lowercased().contains(says), "\(arguments): \(output.stderr)")
            #expect(output.stdout.isEmpty)
        }
    }

    @Test("Under systemd: STATUS= while waiting, READY=1 once online; no READY=1 at the timeout")
    func sdNotify() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.ip("link set veth1 down")
        for abstract in [false, true] {
            let socket = try NotifySocket(abstract: abstract, in: abstract ? ns : nil)
            let timedOut = try Command.run([
                "nsenter", "--net=\(ns.path)", "--", "env", "NOTIFY_SOCKET=\(socket.address)", CLI.path, "wait",
                "--timeout", "1",
            ])
            #expect(timedOut.status == 1)
            #expect(
                timedOut.stderr == "reachability: timed out after 1 s waiting for a route to the Internet\n",
                "not silent: \(timedOut.stderr)")
            let failed = socket.messages()
            #expect(failed.first == "STATUS=Waiting for a route to the Internet", "\(failed)")
            #expect(failed.last == "STATUS=Timed out after 1 s waiting for a route to the Internet", "\(failed)")
            #expect(!failed.contains { $0.contains("READY=1") })

            let ended = try Self.waitAcross(
                ns, ["-i", "veth0", "--timeout", "20"], prefix: ["env", "NOTIFY_SOCKET=\(socket.address)"]
            ) {
                try ns.ip("link set veth1 up")
            }
            #expect(ended == .exited(0))
            let online = socket.messages()
            #expect(online.first == "STATUS=Waiting for veth0", "\(online)")
            #expect(online.last == "READY=1\nSTATUS=Online: veth0", "\(online)")
            try ns.ip("link set veth1 down")
        }
    }

    @Test("NOTIFY_SOCKET naming no datagram socket (a stream socket, a file, nothing, relative, too long): ignored")
    func notifySocketThatIsNone() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.ip("link set veth1 down")
        let stream = NSTemporaryDirectory() + "rtest-notify-stream-\(getpid())-\(UUID().uuidString.prefix(8))"
        let listener = try Child(
            [
                "python3", "-c",
                "import socket, sys, time\ns = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                    + "s.bind(sys.argv[1]); s.listen(); print('ready', flush=True); time.sleep(120)",
                stream,
            ], captureOutput: true)
        defer {
            listener.terminate()
            unlink(stream)
        }
        #expect(listener.nextLine(timeout: 30) == "ready")
        let values = [
            stream, "/etc/passwd", "/nonexistent/notify", "relative/notify", "@" + String(repeating: "x", count: 200),
            "/" + String(repeating: "a", count: 300), "vsock:2:9999",
        ]
        for value in values {
            let output = try Command.run([
                "nsenter", "--net=\(ns.path)", "--", "env", "NOTIFY_SOCKET=\(value)", CLI.path, "wait", "--timeout",
                "1",
            ])
            #expect(output.status == 1, "\(value.prefix(40)): \(output.stderr)")
            #expect(
                output.stderr == "reachability: timed out after 1 s waiting for a route to the Internet\n",
                "\(value.prefix(40)): \(output.stderr)")
        }
    }

    @Test("A NOTIFY_SOCKET that never reads (its queue full) can't hold up wait: it still exits at its timeout")
    func notifySocketNeverRead() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.ip("link set veth1 down")
        let path = NSTemporaryDirectory() + "rtest-notify-full-\(getpid())-\(UUID().uuidString.prefix(8))"
        // Binds, fills its own queue from a second socket until the kernel refuses
        // more, then never reads.
        let receiver = try Child(
            [
                "python3", "-c",
                """
                import socket, sys, time
                r = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                r.bind(sys.argv[1])
                w = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                w.setblocking(False)
                try:
                    while True:
                        w.sendto(b"STATUS=filler", sys.argv[1])
                except BlockingIOError:
                    pass
                print("full", flush=True)
                time.sleep(3600)
                """, path,
            ], captureOutput: true)
        defer {
            receiver.terminate()
            unlink(path)
        }
        #expect(receiver.nextLine(timeout: 30) == "full")
        // `timeout`: a send that blocks for good is killed (137), not waited for.
        let result = try Command.run([
            "timeout", "-s", "KILL", "30", "nsenter", "--net=\(ns.path)", "--", "env", "NOTIFY_SOCKET=\(path)",
            CLI.path, "wait", "--timeout", "1",
        ])
        #expect(result.status == 1, "\(result)")
    }

    @Test("--dns: no nameserver, a silent one, a refused port: exit 1; a server that answers: exit 0")
    func dns() throws {
        let ns = try TestNamespace(named: "rtest-waitdns")
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let socket = try NotifySocket()
        func wait(_ timeout: String) throws -> Int32 {
            try Command.run([
                "env", "NOTIFY_SOCKET=\(socket.address)", CLI.path, "wait", "--dns", "--namespace", ns.path,
                "--timeout", timeout,
            ]).status
        }

        try ns.writeEtc("resolv.conf", "# nothing\n")
        #expect(try wait("1") == 1)
        #expect(socket.messages().contains { $0.contains("no nameserver in /etc/netns/") })

        // A nameserver with nothing listening: refused at once, asked again until the timeout.
        try ns.writeEtc("resolv.conf", "nameserver 127.0.0.1\n")
        #expect(try wait("1") == 1)
        #expect(socket.messages().contains { $0.contains("127.0.0.1: Connection refused") })

        let server = try ScriptedDNSServer(in: ns)
        // The root zone's NS query gets NXDOMAIN from this server: an answer.
        let started = Date()
        #expect(try wait("20") == 0)
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(try server.queries("") >= 1, "the check asked the server")

        try server.stall("")
        #expect(try wait("2") == 1)
        #expect(socket.messages().contains { $0.contains("no reply within") })
        // Answers again once the wait has asked in vain: it asks again and ends with exit 0.
        let asked = try server.queries("")
        let ended = try Self.waitAcross(
            ns, ["--dns", "--namespace", ns.path, "--timeout", "20"],
            prefix: ["env", "NOTIFY_SOCKET=\(socket.address)"],
            ready: { _ in ((try? server.queries("")) ?? 0) > asked }
        ) {
            try server.remove("")
        }
        #expect(ended == .exited(0))

        // --dns with interfaces: both must hold.
        #expect(
            try Command.run([CLI.path, "wait", "--dns", "-i", "veth0", "--namespace", ns.path, "--timeout", "5"])
                .status == 0)
    }

    @Test("The shipped systemd unit passes systemd-analyze verify and orders itself before network-online.target")
    func systemdUnit() throws {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Packaging/systemd/reachability-wait-online.service")
        let unit = try String(contentsOf: source, encoding: .utf8)
        let lines = unit.split(separator: "\n").map(String.init)
        #expect(lines.contains("Before=network-online.target shutdown.target"))
        #expect(lines.contains("WantedBy=network-online.target"))
        #expect(lines.contains("Type=oneshot") && lines.contains("RemainAfterExit=yes"))
        let exec = try #require(lines.first { $0.hasPrefix("ExecStart=") })
        #expect(exec == "ExecStart=/usr/local/bin/reachability wait --timeout 120")

        // verify checks that ExecStart's binary exists: point it at the one under test.
        let directory = NSTemporaryDirectory() + "rtest-unit-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let copy = directory + "/reachability-wait-online.service"
        try unit.replacingOccurrences(of: "/usr/local/bin/reachability", with: CLI.path)
            .write(toFile: copy, atomically: true, encoding: .utf8)
        let verified = try Command.run(["systemd-analyze", "verify", copy])
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.stderr.isEmpty, "no warnings: \(verified.stderr)")

        // And the ExecStart line's arguments are ones the CLI accepts (a check, at once).
        let arguments = exec.dropFirst("ExecStart=/usr/local/bin/reachability ".count).split(separator: " ")
            .map(String.init)
        let help = try Command.run([CLI.path] + arguments.prefix(1) + ["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--timeout"))

        // A broken unit is caught: the check can fail.
        try "[Service]\nType=bogus\nExecStart=\(CLI.path) wait\n".write(toFile: copy, atomically: true, encoding: .utf8)
        #expect(!(try Command.run(["systemd-analyze", "verify", copy]).stderr.isEmpty))
    }

    @Test("InterfaceCondition: parsing and the states of interface snapshots")
    func conditions() throws {
        #expect(try InterfaceCondition(parsing: "eth0") == InterfaceCondition(name: "eth0", state: .routable))
        #expect(try InterfaceCondition(parsing: "wlan0:carrier").state == .carrier)
        #expect(try InterfaceCondition(parsing: "br-lan:degraded").state == .degraded)
        #expect(throws: (any Error).self) { try InterfaceCondition(parsing: "eth0:up") }
        #expect(throws: (any Error).self) { try InterfaceCondition(parsing: "0123456789abcdef") }

        let eth0 = NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet)
        func details(
            up: Bool = true, carrier: Bool = true, addresses: [(String, Int, Bool)] = [],
            routes: [IPAddress.Family] = []
        ) throws -> InterfaceDetails {
            InterfaceDetails(
                interface: eth0, operState: carrier ? "up" : "down", isUp: up, hasCarrier: carrier,
                addresses: try addresses.map {
                    InterfaceDetails.Address(
                        address: try IPAddress($0.0), prefixLength: $0.1, isTentative: $0.2, isDADFailed: false)
                },
                defaultRouteFamilies: routes)
        }
        #expect(InterfaceCondition.state(of: try details(up: false), family: nil) == nil)
        #expect(InterfaceCondition.state(of: try details(carrier: false), family: nil) == nil)
        #expect(InterfaceCondition.state(of: try details(), family: nil) == .carrier)
        #expect(
            InterfaceCondition.state(of: try details(addresses: [("fe80::1", 64, false)]), family: nil) == .degraded)
        #expect(
            InterfaceCondition.state(of: try details(addresses: [("2001:db8::1", 64, true)]), family: nil) == .carrier)
        let v4 = try details(addresses: [("192.0.2.1", 24, false)], routes: [.ipv4])
        #expect(InterfaceCondition.state(of: v4, family: nil) == .routable)
        #expect(InterfaceCondition.state(of: v4, family: .ipv4) == .routable)
        #expect(InterfaceCondition.state(of: v4, family: .ipv6) == .carrier)
        // A default route of a family it has only a link-local address of: not routable.
        let linkLocalOnly = try details(addresses: [("fe80::1", 64, false)], routes: [.ipv6])
        #expect(InterfaceCondition.state(of: linkLocalOnly, family: nil) == .degraded)

        let rule = InterfaceRule(
            conditions: [InterfaceCondition(name: "eth0", state: .routable)], any: false, ignored: [], family: nil)
        #expect(rule.holds(for: [v4]))
        #expect(!rule.holds(for: [linkLocalOnly]))
        #expect(!rule.holds(for: []))
        let ignoring = InterfaceRule(conditions: [], any: false, ignored: ["eth0"], family: nil)
        #expect(!ignoring.holds(for: [v4]))
        #expect(InterfaceRule(conditions: [], any: false, ignored: ["eth1"], family: nil).holds(for: [v4]))
    }
}
