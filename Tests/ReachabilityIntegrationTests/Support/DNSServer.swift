import Foundation
import Reachability

@_spi(Testing) @testable import ReachabilityCore

/// A real DNS server for a test: dnsmasq inside the test's named namespace,
/// listening on 127.0.0.1:53 there, answering from a hosts file it re-reads on
/// SIGHUP, and NXDOMAIN for anything else under `.rtest`. The namespace's
/// `/etc/netns/NAME/resolv.conf` points the system resolver at it.
final class DNSServer: @unchecked Sendable {
    // @unchecked: set once in init; reload is called from one test.
    private let process: Child
    private let hostsFile: String

    init(in namespace: TestNamespace, hosts: [String: String]) throws {
        hostsFile = NSTemporaryDirectory() + "rtest-hosts-\(getpid())-\(UUID().uuidString)"
        try Self.write(hosts, to: hostsFile)
        try namespace.writeEtc("resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:2\n")
        process = try namespace.spawn([
            "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
            "--user=root", "--listen-address=127.0.0.1", "--bind-interfaces", "--port=53",
            "--addn-hosts=\(hostsFile)", "--local=/rtest/", "--local-ttl=0", "--pid-file=",
        ])
        // Ready when it answers: the system resolver, inside the namespace, sees it.
        let deadline = Date().addingTimeInterval(10)
        while (try? namespace.netnsExec(["getent", "hosts", hosts.keys.first ?? "probe.rtest"])) == nil {
            guard Date() < deadline, process.isRunning else {
                throw CommandFailed(command: "dnsmasq", status: -1, stderr: "dnsmasq did not start answering")
            }
            usleep(20_000)
        }
    }

    /// Replaces the answers; dnsmasq re-reads the hosts file on SIGHUP.
    func reload(_ hosts: [String: String]) throws {
        try Self.write(hosts, to: hostsFile)
        process.signal(SIGHUP)
    }

    deinit {
        process.terminate()
        try? FileManager.default.removeItem(atPath: hostsFile)
    }

    private static func write(_ hosts: [String: String], to path: String) throws {
        let text = hosts.map { "\($0.value) \($0.key)" }.sorted().joined(separator: "\n") + "\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}

/// A "DNS server" that reads every query and never answers: the resolver waits
/// for its full timeout. It says when a query arrives (``nextQuery(timeout:)``),
/// so a test knows the resolver is waiting.
final class SilentDNSServer: @unchecked Sendable {
    // @unchecked: set once in init; `nextQuery` is called by one test.
    private let process: Child

    init(in namespace: TestNamespace) throws {
        try namespace.writeEtc("resolv.conf", "nameserver 127.0.0.1\noptions timeout:5 attempts:3\n")
        let script = """
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(('127.0.0.1', 53))
            print('ready', flush=True)
            while True:
                s.recvfrom(4096)
                print('query', flush=True)
            """
        process = try namespace.spawn(["python3", "-c", script], captureOutput: true)
        guard process.nextLine(timeout: 30) == "ready" else {
            process.terminate()
            throw CommandFailed(command: "silent DNS server", status: -1, stderr: "did not start")
        }
    }

    /// Whether a query arrives within `timeout` seconds.
    func nextQuery(timeout: Double) -> Bool { process.nextLine(timeout: timeout) == "query" }

    deinit {
        process.terminate()
    }
}

/// A real DNS server whose answers a test scripts while it runs
/// (`Support/dns_server.py`): answers that rotate per query (round-robin names,
/// CDNs), names it never answers (a stalled upstream), late answers, and a count
/// of the queries for each name. It listens on 127.0.0.1:53 inside `namespace`.
final class ScriptedDNSServer: @unchecked Sendable {
    // @unchecked: the child's pipes are used under `lock`, one command at a time.
    private let process: Child
    private let lock = LockedValue(0)

    /// Starts the server in `namespace`; with `resolvOptions`, also points the
    /// namespace's `/etc/netns/NAME/resolv.conf` at it (a named namespace only).
    init(in namespace: TestNamespace, resolvOptions: String? = "timeout:1 attempts:2") throws {
        if let resolvOptions {
            try namespace.writeEtc("resolv.conf", "nameserver 127.0.0.1\noptions \(resolvOptions)\n")
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("dns_server.py")
        process = try namespace.spawn(["python3", script.path], captureOutput: true)
        guard let line = process.nextLine(timeout: 10), line.contains("ready") else {
            process.terminate()
            throw CommandFailed(command: "dns_server.py", status: -1, stderr: "did not start")
        }
    }

    deinit {
        process.terminate()
    }

    /// Each A query for `name` gets the next of `answers` in turn (AAAA queries
    /// the IPv6 addresses of the set the last A query got); after `delay` seconds.
    func set(_ name: String, answers: [[String]], delay: Double = 0) throws {
        try command(["cmd": "set", "name": name, "answers": answers, "delay": delay])
    }

    /// `name` is never answered.
    func stall(_ name: String) throws {
        try command(["cmd": "set", "name": name, "stall": true])
    }

    /// `name` gets NXDOMAIN again.
    func remove(_ name: String) throws {
        try command(["cmd": "remove", "name": name])
    }

    /// Queries (A and AAAA) received for `name` so far.
    func queries(_ name: String) throws -> Int {
        let reply = try command(["cmd": "stats"])
        return (reply["queries"] as? [String: Int])?[name.lowercased()] ?? 0
    }

    /// Queries received for every name so far.
    func totalQueries() throws -> Int {
        try command(["cmd": "stats"])["total"] as? Int ?? 0
    }

    @discardableResult
    private func command(_ message: [String: Any]) throws -> [String: Any] {
        let data = try JSONSerialization.data(withJSONObject: message)
        return try lock.withLock { _ in
            process.write(String(decoding: data, as: UTF8.self) + "\n")
            guard let line = process.nextLine(timeout: 10),
                let reply = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            else { throw CommandFailed(command: "dns_server.py \(message)", status: -1, stderr: "no reply") }
            return reply
        }
    }
}
