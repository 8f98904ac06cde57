// Checks through a real HTTP proxy (Debian's tinyproxy) in test namespaces: the
// client's only way out is the proxy.
import Connectivity
import Foundation
import Reachability
import TestSupport
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// client (192.0.2.1, default route via 192.0.2.2) → proxy namespace (192.0.2.2:8888,
/// tinyproxy; forwards nothing itself) → server namespace (198.51.100.2: an HTTP and
/// an HTTPS test server). A probe reaches the servers through tinyproxy or not at all.
final class ProxyTopology: @unchecked Sendable {
    let client: TestNamespace
    let proxy: TestNamespace
    let server: TestNamespace
    let http: TestHTTPServer
    let https: TestHTTPServer
    let certificate: String
    private let tinyproxy: Child
    private let directory: String

    static let proxyAddress = "192.0.2.2"
    static let proxyPort = 8888
    static let serverAddress = "198.51.100.2"
    /// The HTTPS server's name: in the proxy namespace's hosts file only.
    static let serverName = "check.proxy.test"

    /// The topology; with `credentials`, tinyproxy asks for them (`BasicAuth`).
    /// With `filter`, tinyproxy refuses (403) requests to hosts matching its lines.
    init(
        credentials: (user: String, password: String)? = nil, filter: [String]? = nil,
        routes: [String: TestHTTPServer.Behaviour]
    ) throws {
        client = try TestNamespace()
        // Named: its /etc/netns/NAME/hosts gives tinyproxy the server's name.
        proxy = try TestNamespace(named: "rproxy")
        server = try TestNamespace()
        for ns in [client, proxy, server] { try ns.disableIPv6() }
        try client.addVeth("veth0", peerIn: proxy, peer: "veth1", address: "192.0.2.1/24")
        try proxy.ip("addr add \(Self.proxyAddress)/24 dev veth1")
        try client.ip("route add default via \(Self.proxyAddress) dev veth0")
        try proxy.addVeth("veth2", peerIn: server, peer: "veth3", address: "198.51.100.1/24")
        try server.ip("addr add \(Self.serverAddress)/24 dev veth3")
        try server.ip("route add default via 198.51.100.1 dev veth3")
        directory = NSTemporaryDirectory() + "proxy-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // The HTTPS server by name, as real endpoints are: only the proxy resolves it.
        let key = "\(directory)/key.pem"
        certificate = "\(directory)/cert.pem"
        try Command.check([
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=\(Self.serverName)",
            "-addext", "subjectAltName=DNS:\(Self.serverName)",
        ])
        let tls = (certificate: certificate, key: key)
        try proxy.writeEtc("hosts", "127.0.0.1 localhost\n\(Self.serverAddress) \(Self.serverName)\n")
        http = try TestHTTPServer(in: server, host: Self.serverAddress, routes: routes)
        https = try TestHTTPServer(in: server, host: Self.serverAddress, tls: tls, routes: routes)
        var configuration = """
            Port \(Self.proxyPort)
            Listen \(Self.proxyAddress)
            Timeout 10
            MaxClients 50
            Allow 192.0.2.0/24
            LogLevel Info
            LogFile "\(directory)/tinyproxy.log"
            PidFile "\(directory)/tinyproxy.pid"

            """
        if let credentials { configuration += "BasicAuth \(credentials.user) \(credentials.password)\n" }
        if let filter {
            try (filter.joined(separator: "\n") + "\n").write(
                toFile: "\(directory)/filter", atomically: true, encoding: .utf8)
            configuration += "Filter \"\(directory)/filter\"\nFilterDefaultDeny No\n"
        }
        try configuration.write(toFile: "\(directory)/tinyproxy.conf", atomically: true, encoding: .utf8)
        tinyproxy = try Child(
            ["ip", "netns", "exec", proxy.name!, "tinyproxy", "-d", "-c", "\(directory)/tinyproxy.conf"],
            captureOutput: false)
        // Listening once a connection to its port succeeds.
        try eventuallyBlocking("tinyproxy listening", timeout: 10) {
            (try? proxy.run([
                "bash", "-c", "exec 3<>/dev/tcp/\(Self.proxyAddress)/\(Self.proxyPort)",
            ])) != nil
        }
    }

    deinit {
        tinyproxy.terminate()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A configuration of the client's namespace checking `endpoints`, trusting the
    /// HTTPS server's certificate, through `proxy`.
    func configuration(_ endpoints: [ConnectivityEndpoint], proxy: ProxySetting) -> ConnectivityConfiguration {
        var configuration = ConnectivityConfiguration(endpoints: endpoints, environment: client.environment)
        configuration.trustedRootCertificatesPath = certificate
        configuration.proxy = proxy
        configuration.discoversCaptivePortalAPI = false
        configuration.probeTimeout = .seconds(5)
        configuration.checkDeadline = .seconds(10)
        return configuration
    }

    /// tinyproxy's log: what it was asked.
    var log: String { (try? String(contentsOfFile: "\(directory)/tinyproxy.log", encoding: .utf8)) ?? "" }
}

@Suite(
    "Checks through an HTTP proxy (tinyproxy) in test namespaces", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct ProxyIntegrationTests {
    static let routes: [String: TestHTTPServer.Behaviour] = ["/generate_204": .respond(status: 204, body: "")]

    static func endpoints(_ topology: ProxyTopology) -> [ConnectivityEndpoint] {
        [
            ConnectivityEndpoint(url: topology.http.url("/generate_204"), expectation: .status(204)),
            ConnectivityEndpoint(
                url: URL(string: "https://\(ProxyTopology.serverName):\(topology.https.port)/generate_204")!,
                expectation: .status(204)),
        ]
    }

    @Test("through the proxy: plain HTTP sent to it whole, HTTPS through CONNECT; directly, nothing gets out")
    func throughTheProxy() async throws {
        let topology = try await offPool { try ProxyTopology(routes: Self.routes) }
        let proxyURL = URL(string: "http://\(ProxyTopology.proxyAddress):\(ProxyTopology.proxyPort)")!
        let proxied = try await Connectivity(
            validating: topology.configuration(Self.endpoints(topology), proxy: .server(proxyURL))
        ).checkConnectivity()
        #expect(proxied.verdict == .online, "\(proxied.endpoints.map { $0.error ?? "ok" }) \(topology.log.suffix(600))")
        #expect(proxied.endpoints.allSatisfy { $0.httpStatus == 204 })
        #expect(topology.http.count("/generate_204") >= 1 && topology.https.count("/generate_204") >= 1)
        #expect(topology.log.contains("CONNECT"), "HTTPS went through a tunnel")

        var direct = topology.configuration(Self.endpoints(topology), proxy: .direct)
        direct.probeTimeout = .seconds(1)
        direct.checkDeadline = .seconds(2)
        let directResult = try await Connectivity(validating: direct).checkConnectivity()
        #expect(directResult.verdict != .online, "the proxy is the only way out")

        // no_proxy sends the servers' address around the proxy: nothing gets out.
        var bypassed = topology.configuration(
            Self.endpoints(topology), proxy: .server(proxyURL, noProxy: [ProxyTopology.serverAddress]))
        bypassed.probeTimeout = .seconds(1)
        bypassed.checkDeadline = .seconds(2)
        #expect(try await Connectivity(validating: bypassed).checkConnectivity().verdict != .online)
    }

    @Test("a per-interface check and the notifier go through the proxy too")
    func scopedAndNotifier() async throws {
        let topology = try await offPool { try ProxyTopology(routes: Self.routes) }
        let proxyURL = URL(string: "http://\(ProxyTopology.proxyAddress):\(ProxyTopology.proxyPort)")!
        let connectivity = try Connectivity(
            validating: topology.configuration(Self.endpoints(topology), proxy: .server(proxyURL)))
        let scoped = try await connectivity.checkConnectivity(over: ProbeScope(interface: "veth0", family: .ipv4))
        #expect(scoped.verdict == .online, "\(scoped.endpoints)")
        #expect(scoped.scope == ProbeScope(interface: "veth0", family: .ipv4))
        let before = topology.https.count("/generate_204")

        let results = LockedValue<[Verdict]>([])
        connectivity.whenConnected = { connectivity in
            if let verdict = connectivity.latestResult?.verdict { results.withLock { $0.append(verdict) } }
        }
        try connectivity.start()
        defer { connectivity.stopNotifier() }
        try await eventually("the notifier's first check, online through the proxy") {
            results.withLock { $0.contains(.online) }
        }
        #expect(topology.https.count("/generate_204") > before)
    }

    @Test("a proxy that asks for credentials: sent from the proxy URL, never shown")
    func credentials() async throws {
        let topology = try await offPool {
            try ProxyTopology(credentials: ("alice", "s3cret"), routes: Self.routes)
        }
        let withCredentials = URL(
            string: "http://alice:s3cret@\(ProxyTopology.proxyAddress):\(ProxyTopology.proxyPort)")!
        let configuration = topology.configuration(Self.endpoints(topology), proxy: .server(withCredentials))
        #expect(!"\(configuration.proxy)".contains("s3cret"))
        let result = try await Connectivity(validating: configuration).checkConnectivity()
        #expect(result.verdict == .online, "\(result.endpoints)")
        #expect(!"\(result)".contains("s3cret"))

        let without = URL(string: "http://\(ProxyTopology.proxyAddress):\(ProxyTopology.proxyPort)")!
        let refused = try await Connectivity(
            validating: topology.configuration(Self.endpoints(topology), proxy: .server(without))
        ).checkConnectivity()
        #expect(refused.verdict == .proxyFailed(.authenticationRequired), "\(refused.endpoints)")
        #expect(refused.endpoints.allSatisfy { $0.failure == .proxyFailed(.authenticationRequired) })
        #expect(refused.verdict.description == "proxyFailed (authentication required (407))")

        let wrong = URL(string: "http://alice:guess@\(ProxyTopology.proxyAddress):\(ProxyTopology.proxyPort)")!
        let wrongResult = try await Connectivity(
            validating: topology.configuration(Self.endpoints(topology), proxy: .server(wrong))
        ).checkConnectivity()
        #expect(wrongResult.verdict == .proxyFailed(.authenticationRequired), "\(wrongResult.endpoints)")
        #expect(!"\(wrongResult)".contains("guess"))

        // Plain HTTP only: tinyproxy answers wrong credentials with 401 there, which
        // is the proxy's refusal (the endpoint was sent no credentials), not the Internet's.
        let plainOnly = try await Connectivity(
            validating: topology.configuration([Self.endpoints(topology)[0]], proxy: .server(wrong))
        ).checkConnectivity()
        #expect(plainOnly.verdict == .proxyFailed(.authenticationRequired), "\(plainOnly.endpoints)")
    }

    @Test(
        "a proxy whose filter refuses the endpoints: proxyFailed(refused), 403 to the plain-HTTP request and to the CONNECT"
    )
    func filtered() async throws {
        let topology = try await offPool {
            try ProxyTopology(filter: [ProxyTopology.serverAddress, ProxyTopology.serverName], routes: Self.routes)
        }
        let proxyURL = URL(string: "http://\(ProxyTopology.proxyAddress):\(ProxyTopology.proxyPort)")!
        let result = try await Connectivity(
            validating: topology.configuration(Self.endpoints(topology), proxy: .server(proxyURL))
        ).checkConnectivity()
        guard case .proxyFailed(.refused) = result.verdict else {
            Issue.record(
                "expected proxyFailed(refused): \(result.verdict) \(result.endpoints) \(topology.log.suffix(800))")
            return
        }
        #expect(result.endpoints[0].failure == .proxyFailed(.refused(status: 403)), "\(result.endpoints[0])")
        #expect(result.endpoints[1].failure == .proxyFailed(.refused(status: 403)), "\(result.endpoints[1])")
        #expect(topology.http.count("/generate_204") == 0 && topology.https.count("/generate_204") == 0)
    }

    @Test("nothing listening where the proxy should be: proxyFailed(unreachable), not noInternet")
    func proxyDown() async throws {
        let topology = try await offPool { try ProxyTopology(routes: Self.routes) }
        let nobody = URL(string: "http://\(ProxyTopology.proxyAddress):\(ProxyTopology.proxyPort + 1)")!
        let result = try await Connectivity(
            validating: topology.configuration(Self.endpoints(topology), proxy: .server(nobody))
        ).checkConnectivity()
        guard case .proxyFailed(.unreachable) = result.verdict else {
            Issue.record("expected proxyFailed(unreachable): \(result.verdict) \(result.endpoints)")
            return
        }
        #expect(result.endpoints.allSatisfy { $0.error?.hasPrefix("proxy unreachable") == true }, "\(result.endpoints)")
    }

    @Test("a captive portal answering in the proxy's place: still captivePortal, with its login URL")
    func portalInFrontOfTheProxy() async throws {
        let probe = "http://198.51.100.2/generate_204"
        let (client, portal, server) = try await offPool {
            let client = try TestNamespace()
            let portal = try TestNamespace()
            for ns in [client, portal] { try ns.disableIPv6() }
            try client.addVeth("veth0", peerIn: portal, peer: "veth1", address: "192.0.2.1/24")
            try portal.ip("addr add 192.0.2.2/24 dev veth1")
            try client.ip("route add default via 192.0.2.2 dev veth0")
            let server = try TestHTTPServer(
                in: portal, host: "192.0.2.2",
                routes: [probe: .respond(status: 302, headers: ["Location": "http://192.0.2.2/login"])])
            return (client, portal, server)
        }
        defer { withExtendedLifetime(portal) {} }
        var configuration = ConnectivityConfiguration(
            endpoints: [ConnectivityEndpoint(url: URL(string: probe)!, expectation: .status(204))],
            environment: client.environment)
        configuration.proxy = .server(URL(string: "http://192.0.2.2:\(server.port)")!)
        configuration.discoversCaptivePortalAPI = false
        configuration.probeTimeout = .seconds(5)
        let result = try await Connectivity(validating: configuration).checkConnectivity()
        #expect(
            result.verdict == .captivePortal(loginURL: URL(string: "http://192.0.2.2/login")!), "\(result.endpoints)")
        #expect(server.count(probe) >= 1, "the probe was sent to the proxy's address, in absolute form")
    }

    /// A hostile proxy: accepts, reads the CONNECT, then per mode says nothing,
    /// floods an endless head, trickles one byte a second, answers what is not HTTP,
    /// or says 200 and sends data before the tunnel is used.
    static let hostileProxy = """
        import socket, sys, threading, time
        mode, host = sys.argv[1], sys.argv[2]
        server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host, 0)); server.listen(16)
        print(server.getsockname()[1], flush=True)
        def serve(conn):
            try:
                conn.recv(4096)
                if mode == "silent": time.sleep(60)
                elif mode == "flood":
                    conn.sendall(b"HTTP/1.1 200 OK\\r\\nX-Flood: ")
                    while True: conn.sendall(b"a" * 65536)
                elif mode == "trickle":
                    for byte in b"HTTP/1.1 200 OK\\r\\n" * 100: conn.sendall(bytes([byte])); time.sleep(1)
                elif mode == "lies": conn.sendall(b"SSH-2.0-OpenSSH_9.2\\r\\n\\r\\n"); time.sleep(60)
                elif mode == "early": conn.sendall(b"HTTP/1.1 200 OK\\r\\n\\r\\nsurprise"); time.sleep(60)
            except OSError: pass
            finally: conn.close()
        while True:
            conn, _ = server.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()
        """

    @Test(
        "a hostile proxy (silent, flooding, trickling, lying, talking first) ends the check by its deadline, never online",
        arguments: ["silent", "flood", "trickle", "lies", "early"])
    func hostileProxy(mode: String) async throws {
        // Set up off the cooperative pool: these calls block their thread.
        let (client, proxy, server, line) = try await offPool {
            let client = try TestNamespace()
            let proxy = try TestNamespace()
            for ns in [client, proxy] { try ns.disableIPv6() }
            try client.addVeth("veth0", peerIn: proxy, peer: "veth1", address: "192.0.2.1/24")
            try proxy.ip("addr add 192.0.2.2/24 dev veth1")
            try client.ip("route add default via 192.0.2.2 dev veth0")
            let server = try proxy.spawn(["python3", "-c", Self.hostileProxy, mode, "192.0.2.2"], captureOutput: true)
            return (client, proxy, server, server.readLine())
        }
        defer {
            server.terminate()
            withExtendedLifetime(proxy) {}
        }
        let port = try #require(Int(line.trimmingCharacters(in: .whitespacesAndNewlines)), "the port: \(line)")
        var configuration = ConnectivityConfiguration(
            endpoints: [
                ConnectivityEndpoint(
                    url: URL(string: "https://check.proxy.test/generate_204")!, expectation: .status(204))
            ],
            environment: client.environment)
        configuration.proxy = .server(URL(string: "http://192.0.2.2:\(port)")!)
        configuration.discoversCaptivePortalAPI = false
        // The proxies that answer get time to answer whatever the machine's load (under
        // ThreadSanitizer, with the whole suite in parallel, 2 s was once too short for
        // the lying one); the silent and trickling ones are cut off by the timeout.
        let answers = ["flood", "lies", "early"].contains(mode)
        configuration.probeTimeout = .seconds(answers ? 20 : 2)
        configuration.checkDeadline = .seconds(answers ? 25 : 3)
        let connectivity = try Connectivity(validating: configuration)
        let started = ContinuousClock.now
        let result = try await connectivity.checkConnectivity()
        let elapsed = ContinuousClock.now - started
        #expect(result.verdict != .online)
        // Only tells an unbounded wait from a slow machine.
        #expect(elapsed < .seconds(90), "bounded by the check's deadline: \(elapsed)")
        let error = result.endpoints.first?.error ?? ""
        switch mode {
        case "flood": #expect(error.contains("over 16384 bytes"), "\(error)")
        case "lies": #expect(error.contains("not HTTP"), "\(error)")
        case "early": #expect(error.contains("before the tunnel was used"), "\(error)")
        default:
            // Silent before its tunnel opened: the proxy's silence, not the Internet's.
            #expect(result.endpoints.first?.failure == .proxyFailed(.timedOut), "\(error)")
            #expect(result.verdict == .proxyFailed(.timedOut))
        }
    }

    @Test("the CLI: https_proxy/http_proxy from the environment, --proxy, --no-proxy; credentials never printed")
    func commandLine() async throws {
        let topology = try await offPool {
            try ProxyTopology(credentials: ("alice", "s3cret"), routes: Self.routes)
        }
        let endpoints = Self.endpoints(topology).flatMap { ["--url", $0.url.absoluteString] }
        let base = ["check", "--json", "--ca-file", topology.certificate, "--no-api-discovery"] + endpoints
        let proxy = "alice:s3cret@\(ProxyTopology.proxyAddress):\(ProxyTopology.proxyPort)"
        func run(_ environment: [String], _ arguments: [String]) async throws -> Command.Output {
            try await offPool {
                try Command.run(
                    ["nsenter", "--net=\(topology.client.path)", "--", "env"] + environment + [CLI.path] + arguments)
            }
        }
        let fromEnvironment = try await run(["http_proxy=http://\(proxy)", "https_proxy=\(proxy)"], base)
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stdout) \(fromEnvironment.stderr)")
        #expect(try jsonObject(fromEnvironment.stdout)["verdict"] as? String == "online")

        let bypassed = try await run(
            ["http_proxy=http://\(proxy)", "https_proxy=\(proxy)"], base + ["--no-proxy", "--deadline", "2"])
        #expect(bypassed.status == 1)
        #expect(try jsonObject(bypassed.stdout)["verdict"] as? String != "online")

        let explicit = try await run([], base + ["--proxy", proxy])
        #expect(explicit.status == 0, "\(explicit.stdout) \(explicit.stderr)")

        // The credentials from a file, out of the process list; a bad file is refused unquoted.
        let scratch = ScratchFiles(directoryName: "rtest-proxy-credentials")
        let file = scratch.write("credentials", Array("alice:s3cret\n".utf8))
        let address = "\(ProxyTopology.proxyAddress):\(ProxyTopology.proxyPort)"
        let fromFile = try await run([], base + ["--proxy", address, "--proxy-credentials-file", file])
        #expect(fromFile.status == 0, "\(fromFile.stdout) \(fromFile.stderr)")
        _ = scratch.write("credentials", Array("alice-s3cret\n".utf8))
        let badFile = try await run([], base + ["--proxy", address, "--proxy-credentials-file", file])
        #expect(badFile.status == 2 && badFile.stderr.contains("user:password"), "\(badFile.stderr)")
        #expect(!badFile.stderr.contains("s3cret"))

        let wrong = try await run(
            [], base + ["--proxy", "http://alice:guess@\(ProxyTopology.proxyAddress):\(ProxyTopology.proxyPort)"])
        #expect(wrong.status == 1)
        #expect(try jsonObject(wrong.stdout)["verdict"] as? String == "proxyFailed", "\(wrong.stdout)")
        let text = try await run([], ["check"] + base.dropFirst(2) + ["--proxy", "alice:guess@192.0.2.2:8888"])
        #expect(text.stdout.hasPrefix("verdict: proxyFailed (authentication required (407))"), "\(text.stdout)")
        for output in [fromEnvironment, bypassed, explicit, wrong, text] {
            #expect(
                !(output.stdout + output.stderr).contains("s3cret")
                    && !(output.stdout + output.stderr).contains("guess"))
        }

        // wait --connectivity takes the environment's proxy and --proxy, as check does.
        let waited = try await run(
            ["https_proxy=\(proxy)", "http_proxy=http://\(proxy)"],
            ["wait", "--connectivity", "--timeout", "20", "--ca-file", topology.certificate, "--no-api-discovery"]
                + endpoints)
        #expect(waited.status == 0, "\(waited.stdout) \(waited.stderr)")
        let waitedExplicit = try await run(
            [],
            ["wait", "--connectivity", "--timeout", "20", "--ca-file", topology.certificate, "--no-api-discovery"]
                + endpoints + ["--proxy", proxy])
        #expect(waitedExplicit.status == 0, "\(waitedExplicit.stdout) \(waitedExplicit.stderr)")
        #expect(!(waited.stdout + waited.stderr + waitedExplicit.stdout + waitedExplicit.stderr).contains("s3cret"))

        let both = try await run([], ["check", "--proxy", proxy, "--no-proxy"])
        #expect(both.status == 2 && both.stderr.contains("--proxy and --no-proxy exclude each other"), "\(both.stderr)")
        let bad = try await run([], ["check", "--proxy", "socks5://alice:s3cret@192.0.2.2:1080"])
        #expect(bad.status == 2 && !bad.stderr.contains("s3cret"), "\(bad.stderr)")
        let withoutConnectivity = try await run([], ["wait", "--proxy", proxy, "--timeout", "1"])
        #expect(withoutConnectivity.status == 2, "\(withoutConnectivity.stderr)")
        #expect(!withoutConnectivity.stderr.contains("s3cret"))
    }
}
