import Foundation
import Prometheus
import Reachability
import ReachabilityMetrics
import Testing

@testable import ReachabilityCommands
@_spi(Testing) @testable import ReachabilityCore

/// A running `reachability exporter` inside a test namespace, and HTTP requests to
/// it made with curl from inside the namespace.
final class RunningExporter: @unchecked Sendable {
    // @unchecked: set once in init.
    let process: Child
    let ns: TestNamespace
    /// `http://127.0.0.1:PORT`.
    let base: String

    /// `wrapper` runs before the shell and must exec it (e.g. `prlimit --nofile=100:100 --`),
    /// so that `process.pid` stays the exporter's.
    init(_ ns: TestNamespace, _ arguments: [String] = [], wrapper: [String] = []) throws {
        self.ns = ns
        // stderr into stdout: the "listening on" line is read from there.
        process = try ns.spawn(
            wrapper + ["sh", "-c", "exec \"$0\" \"$@\" 2>&1", CLI.path, "exporter", "--listen", "127.0.0.1:0"]
                + arguments,
            captureOutput: true)
        var url: String?
        while url == nil, let line = process.nextLine(timeout: 60) {
            if let range = line.range(of: "listening on ") { url = String(line[range.upperBound...]) }
        }
        guard let url, url.hasSuffix("/metrics") else {
            process.terminate()
            throw CommandFailed(command: "reachability exporter", status: -1, stderr: "never said where it listens")
        }
        base = String(url.dropLast("/metrics".count))
    }

    deinit { process.terminate() }

    /// GET (or another method) `path`: the status code and the body.
    func request(_ path: String, method: String = "GET") throws -> (status: Int, body: String) {
        let output = try ns.run(["curl", "-sS", "-X", method, "-w", "\n%{http_code}", base + path])
        guard let newline = output.lastIndex(of: "\n"), let status = Int(output[output.index(after: newline)...])
        else { throw CommandFailed(command: "curl \(path)", status: -1, stderr: output) }
        return (status, String(output[..<newline]).trimmingCharacters(in: .newlines))
    }

    /// The value of the series `name{labels}` in a /metrics answer (labels as the
    /// registry writes them: `target="@internet"`), or nil when it is absent.
    static func value(_ metrics: String, _ series: String) -> Double? {
        for line in metrics.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    func metric(_ series: String) throws -> Double? {
        Self.value(try request("/metrics").body, series)
    }
}

/// `reachability exporter`, run as built inside test namespaces:
/// the series follow the kernel's events, a scrape does no netlink work, and a
/// real Prometheus server scrapes it.
@Suite("reachability exporter", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLIExporterTests {
    @Test("/metrics follows a link change; /status, /healthz, 404 and 405 answer as documented")
    func metricsFollowEvents() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let exporter = try RunningExporter(ns)

        let internet = "{target=\"@internet\"}"
        try eventuallyBlocking("reachable 1") { (try? exporter.metric("reachability_reachable" + internet)) == 1 }
        let metrics = try exporter.request("/metrics")
        #expect(metrics.status == 200)
        let text = metrics.body
        #expect(
            RunningExporter.value(text, "reachability_status{target=\"@internet\",status=\"reachableViaWiFi\"}") == 1)
        #expect(RunningExporter.value(text, "reachability_status{target=\"@internet\",status=\"notReachable\"}") == 0)
        #expect(RunningExporter.value(text, "reachability_flags" + internet) == 2)
        #expect(
            RunningExporter.value(
                text, "reachability_interface_info{target=\"@internet\",interface=\"veth0\",type=\"wiredEthernet\"}")
                == 1)
        #expect(RunningExporter.value(text, "reachability_path_satisfied") == 1)
        #expect(RunningExporter.value(text, "reachability_path_status{status=\"satisfied\"}") == 1)
        #expect(RunningExporter.value(text, "reachability_changes_total" + internet) == 0)
        #expect(text.contains("# TYPE reachability_changes_total counter"))
        #expect(text.contains("# TYPE reachability_reachable gauge"))

        // Scrapes are free: 50 of them with nothing changing make no evaluation pass.
        let passes = try #require(try exporter.metric("reachability_monitor_evaluation_passes_total"))
        for _ in 0..<50 { _ = try exporter.request("/metrics") }
        #expect(try exporter.metric("reachability_monitor_evaluation_passes_total") == passes)

        // The link goes: the series move without anyone asking.
        try ns.ip("link set veth1 down")
        try eventuallyBlocking("reachable 0") { (try? exporter.metric("reachability_reachable" + internet)) == 0 }
        let after = try exporter.request("/metrics").body
        #expect(RunningExporter.value(after, "reachability_status{target=\"@internet\",status=\"notReachable\"}") == 1)
        #expect(RunningExporter.value(after, "reachability_changes_total" + internet) == 1)
        // The route still leads out of veth0 (without carrier): the info series stays.
        #expect(
            RunningExporter.value(
                after, "reachability_interface_info{target=\"@internet\",interface=\"veth0\",type=\"wiredEthernet\"}")
                == 1)
        #expect(RunningExporter.value(after, "reachability_path_satisfied") == 0)
        #expect((RunningExporter.value(after, "reachability_monitor_evaluation_passes_total") ?? 0) > passes)
        #expect((RunningExporter.value(after, "reachability_monitor_events_total") ?? 0) > 0)

        let status = try exporter.request("/status")
        #expect(status.status == 200)
        let object = try jsonObject(status.body)
        let target = try #require((object["targets"] as? [[String: Any]])?.first)
        #expect(target["target"] as? String == "@internet")
        #expect(target["reachable"] as? Bool == false)
        #expect((object["path"] as? [String: Any])?["status"] as? String == "unsatisfied")
        #expect(object["connectivity"] is NSNull)

        // No route at all: no output interface, no info series.
        try ns.ip("route del default")
        try eventuallyBlocking("the info series gone") {
            (try? exporter.request("/metrics").body.contains("reachability_interface_info{")) == false
        }
        #expect(try exporter.metric("reachability_changes_total" + internet) == 2)

        #expect(try exporter.request("/healthz") == (200, "ok"))
        #expect(try exporter.request("/nothing").status == 404)
        #expect(try exporter.request("/metrics", method: "POST").status == 405)
        #expect(try exporter.request("/metrics?x=1").status == 200)
    }

    @Test("HTTP as RFC 9112 says: absolute-form targets, Host required and single, names refused on loopback")
    func requestTargetsAndHost() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let exporter = try RunningExporter(ns)
        let port = try #require(exporter.base.split(separator: ":").last.map(String.init))
        // Each request on a connection of its own; the status code of the answer.
        func status(_ request: String) throws -> String {
            let script = """
                import socket, sys
                s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
                s.sendall(sys.argv[2].encode().replace(b"|", b"\\r\\n"))
                s.settimeout(10)
                print(s.recv(4096).split(b"\\r\\n")[0].decode())
                """
            return try ns.run(["python3", "-c", script, port, request]).trimmingCharacters(in: .newlines)
        }
        let host = "Host: 127.0.0.1:\(port)|"
        #expect(try status("GET /healthz HTTP/1.1|\(host)|") == "HTTP/1.1 200 OK")
        #expect(try status("GET http://127.0.0.1:\(port)/healthz HTTP/1.1|\(host)|") == "HTTP/1.1 200 OK")
        #expect(try status("GET HTTP://localhost/healthz?x HTTP/1.1|Host: localhost||") == "HTTP/1.1 200 OK")
        #expect(try status("GET /healthz HTTP/1.0||") == "HTTP/1.0 200 OK", "HTTP/1.0 needs no Host")
        #expect(try status("GET /healthz HTTP/1.1||") == "HTTP/1.1 400 Bad Request")
        #expect(try status("GET /healthz HTTP/1.1|\(host)\(host)|") == "HTTP/1.1 400 Bad Request")
        #expect(try status("GET /healthz HTTP/1.1|Host: a b||") == "HTTP/1.1 400 Bad Request")
        #expect(try status("GET /healthz HTTP/1.1|Host: ::1:80||") == "HTTP/1.1 400 Bad Request")
        // DNS rebinding: a page at attacker.example, its name now 127.0.0.1, reads nothing.
        #expect(
            try status("GET /status HTTP/1.1|Host: attacker.example:\(port)||") == "HTTP/1.1 421 Misdirected Request")
        #expect(
            try status("GET http://attacker.example/status HTTP/1.1|\(host)|") == "HTTP/1.1 421 Misdirected Request")
        #expect(try status("GET /healthz HTTP/1.1|Host: [::1]:\(port)||") == "HTTP/1.1 200 OK")
        #expect(try status("GET /healthz HTTP/1.1|\(host)Expect: 100-continue||") == "HTTP/1.1 200 OK")
        #expect(
            try status("GET /healthz HTTP/1.1|\(host)Expect: something-else||") == "HTTP/1.1 417 Expectation Failed")
    }

    @Test("targets by name: one series set each; a hostile or broken client doesn't stop it serving")
    func targetsAndClients() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.ip("addr add 198.51.100.1/24 dev lo")
        let exporter = try RunningExporter(ns, ["192.0.2.77", "203.0.113.9"])
        try eventuallyBlocking("both targets") {
            (try? exporter.metric("reachability_reachable{target=\"192.0.2.77\"}")) == 1
                && (try? exporter.metric("reachability_reachable{target=\"203.0.113.9\"}")) == 1
        }
        // A client that sends garbage, one that sends half a request and hangs up, and
        // an oversized header: the server answers 400 or drops them, and goes on.
        let host = String(exporter.base.dropFirst("http://".count))
        let port = host.split(separator: ":").last.map(String.init) ?? ""
        let script = """
            import socket, sys
            port = int(sys.argv[1])
            for payload in [b"\\x00\\xff garbage\\r\\n\\r\\n", b"GET /metr", b"GET / HTTP/1.1\\r\\nX: " + b"a" * 200000 + b"\\r\\n\\r\\n"]:
                s = socket.create_connection(("127.0.0.1", port))
                try:
                    s.sendall(payload)
                    s.settimeout(2)
                    s.recv(100)
                except Exception:
                    pass
                s.close()
            print("done")
            """
        #expect(try ns.run(["python3", "-c", script, port]).contains("done"))
        #expect(try exporter.request("/healthz") == (200, "ok"))
        #expect(exporter.process.isRunning)
    }

    @Test("--listen: a malformed address or port exits 2 naming it; a port in use exits 2")
    func badListen() throws {
        let ns = try TestNamespace()
        for bad in [
            "9469", "localhost:9469", "127.0.0.1:99999", "127.0.0.1:", "[::1:9469", "::1:9469", "127.0.0.1:+80",
        ] {
            let output = try ns.cli(["exporter", "--listen", bad])
            #expect(output.status == 2, "\(bad)")
            #expect(output.stderr.contains("--listen"), "\(bad): \(output.stderr)")
        }
        let first = try RunningExporter(ns)
        let port = String(first.base.split(separator: ":").last ?? "")
        let second = try ns.cli(["exporter", "--listen", "127.0.0.1:\(port)"])
        #expect(second.status == 2)
        #expect(second.stderr.contains("cannot listen"), "\(second.stderr)")
        let line = second.stderr.split(separator: "\n").first.map(String.init) ?? ""
        #expect(
            line.hasSuffix("cannot listen on 127.0.0.1:\(port): Address already in use (errno 98)"),
            "one sentence, the system's words, no SwiftNIO call text: \(line)")
    }

    @Test("--connectivity: the verdict gauge, checks by verdict, probe durations per endpoint, and /status")
    func connectivity() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .respond(status: 204)])
        let url = server.url("/generate_204").absoluteString
        try await offPool {
            let exporter = try RunningExporter(ns, ["--connectivity", "--url", url])
            try eventuallyBlocking("online") {
                (try? exporter.metric("reachability_connectivity_verdict{verdict=\"online\"}")) == 1
            }
            let text = try exporter.request("/metrics").body
            #expect(RunningExporter.value(text, "reachability_connectivity_verdict{verdict=\"captivePortal\"}") == 0)
            #expect(
                (RunningExporter.value(text, "reachability_connectivity_checks_total{verdict=\"online\"}") ?? 0) >= 1)
            let probes = RunningExporter.value(
                text, "reachability_connectivity_probe_duration_seconds_count{endpoint=\"\(url)\"}")
            #expect((probes ?? 0) >= 1, "\(text)")
            #expect(text.contains("# TYPE reachability_connectivity_probe_duration_seconds histogram"))
            let status = try jsonObject(try exporter.request("/status").body)
            #expect((status["connectivity"] as? [String: Any])?["verdict"] as? String == "online")

            try ns.ip("link set veth1 down")
            try eventuallyBlocking("notConnected") {
                (try? exporter.metric("reachability_connectivity_verdict{verdict=\"notConnected\"}")) == 1
            }
            #expect(try exporter.metric("reachability_connectivity_verdict{verdict=\"online\"}") == 0)
        }
    }

    @Test("--connectivity counts every check, not only those that changed the verdict")
    func everyCheckCounted() async throws {
        // An endpoint answering 500: noInternet, retried while offline (1 s, 2 s, 4 s…),
        // the same verdict each time. Each check sends one probe, and each is counted.
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .respond(status: 500)])
        let url = server.url("/generate_204").absoluteString
        try await offPool {
            let exporter = try RunningExporter(ns, ["--connectivity", "--url", url])
            let series = "reachability_connectivity_checks_total{verdict=\"noInternet\"}"
            try eventuallyBlocking("three checks counted", timeout: 60) {
                ((try? exporter.metric(series)).flatMap { $0 } ?? 0) >= 3
            }
            let text = try exporter.request("/metrics").body
            let counted = RunningExporter.value(text, series) ?? 0
            let probed = server.requests.filter { $0.path == "/generate_204" }.count
            // Counted once the probe was answered: never more checks than probes.
            #expect(counted <= Double(probed), "\(counted) counted, \(probed) probes")
            let durations = RunningExporter.value(
                text, "reachability_connectivity_probe_duration_seconds_count{endpoint=\"\(url)\"}")
            #expect(durations == counted, "a duration per counted check's probe")
            #expect(RunningExporter.value(text, "reachability_connectivity_verdict{verdict=\"noInternet\"}") == 1)
        }
    }

    @Test("SIGTERM ends it with status 0")
    func sigterm() throws {
        let ns = try TestNamespace()
        let exporter = try RunningExporter(ns)
        exporter.process.signal(SIGTERM)
        #expect(exporter.process.wait() == 0)
    }

    @Test("a real Prometheus server scrapes it: its query API shows the series, and the link change")
    func prometheusScrapes() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let exporter = try RunningExporter(ns)
        let target = String(exporter.base.dropFirst("http://".count))
        let directory = NSTemporaryDirectory() + "rtest-prometheus-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try """
        global:
          scrape_interval: 1s
          scrape_timeout: 1s
        scrape_configs:
          - job_name: reachability
            static_configs:
              - targets: ["\(target)"]
        """.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        // Port 9090 is free: the namespace is the test's own.
        let prometheus = try ns.spawn([
            "prometheus", "--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/data",
            "--web.listen-address=127.0.0.1:9090", "--log.level=warn",
        ])
        defer { prometheus.terminate() }

        /// The value of an instant query's first sample, or nil.
        func query(_ expression: String) -> String? {
            guard
                let output = try? ns.run([
                    "curl", "-sS", "--get", "--data-urlencode", "query=\(expression)",
                    "http://127.0.0.1:9090/api/v1/query",
                ]),
                let object = try? jsonObject(output),
                let result = (object["data"] as? [String: Any])?["result"] as? [[String: Any]],
                let value = result.first?["value"] as? [Any]
            else { return nil }
            return value.last as? String
        }
        try eventuallyBlocking("Prometheus scraped the exporter", timeout: 90) {
            query("up{job=\"reachability\"}") == "1" && query("reachability_reachable{target=\"@internet\"}") == "1"
        }
        #expect(query("reachability_interface_info{interface=\"veth0\"}") == "1")
        #expect(query("reachability_path_satisfied") == "1")

        try ns.ip("link set veth1 down")
        try eventuallyBlocking("Prometheus saw the link go", timeout: 60) {
            query("reachability_reachable{target=\"@internet\"}") == "0"
        }
        #expect(query("reachability_changes_total{target=\"@internet\"}") == "1")
        #expect(query("reachability_status{target=\"@internet\",status=\"notReachable\"}") == "1")
    }
}

/// ReachabilityMetrics' bookkeeping, through a real Prometheus registry: pure logic.
@Suite("ReachabilityMetrics")
struct ReachabilityMetricsTests {
    static func make() -> (ReachabilityMetrics, PrometheusCollectorRegistry) {
        let registry = PrometheusCollectorRegistry()
        return (ReachabilityMetrics(factory: PrometheusMetricsFactory(registry: registry)), registry)
    }

    static func state(_ flags: ReachabilityFlags, _ interface: NetworkInterface?) -> ReachabilityState {
        ReachabilityState(flags: flags, interface: interface)
    }

    @Test("one-hot status, interface info replaced on a change, changes counted after the first")
    func targetSeries() {
        let (metrics, registry) = Self.make()
        let eth0 = NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet)
        let wwan0 = NetworkInterface(name: "wwan0", index: 5, type: .cellular)
        metrics.record(Self.state(.reachable, eth0), target: "internet")
        var text = registry.emitToString()
        #expect(RunningExporter.value(text, "reachability_changes_total{target=\"internet\"}") == 0)
        #expect(
            RunningExporter.value(
                text, "reachability_interface_info{target=\"internet\",interface=\"eth0\",type=\"wiredEthernet\"}")
                == 1)
        metrics.record(Self.state([.reachable, .isWWAN], wwan0), target: "internet")
        text = registry.emitToString()
        #expect(!text.contains("interface=\"eth0\""))
        #expect(
            RunningExporter.value(
                text, "reachability_interface_info{target=\"internet\",interface=\"wwan0\",type=\"cellular\"}")
                == 1)
        #expect(
            RunningExporter.value(text, "reachability_status{target=\"internet\",status=\"reachableViaWWAN\"}") == 1)
        #expect(
            RunningExporter.value(text, "reachability_status{target=\"internet\",status=\"reachableViaWiFi\"}") == 0)
        #expect(RunningExporter.value(text, "reachability_changes_total{target=\"internet\"}") == 1)
        metrics.record(Self.state([], nil), target: "internet")
        text = registry.emitToString()
        #expect(RunningExporter.value(text, "reachability_reachable{target=\"internet\"}") == 0)
        #expect(!text.contains("reachability_interface_info{"))
        metrics.forget(target: "internet")
        #expect(!registry.emitToString().contains("target=\"internet\""))
    }
}
