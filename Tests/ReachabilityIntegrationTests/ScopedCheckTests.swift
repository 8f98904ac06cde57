import Connectivity
import Foundation
import Reachability
import Testing

@testable import Connectivity
@testable import ReachabilityCore

/// Per-interface and per-family verdicts against the real
/// kernel: a host namespace with two uplinks, each to a namespace of its own that
/// serves the same address — one a healthy network (204), the other a portal (302).
/// The main table prefers the first; only a probe bound to the second interface
/// can see the portal.
@Suite("Checks per interface and per family", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct ScopedCheckTests {
    /// The address both networks serve, and the probe URL.
    static let serverAddress = "198.51.100.80"
    static let probeURL = URL(string: "http://198.51.100.80/generate_204")!
    static let portal = "http://portal.rtest/login"

    /// The host and its two networks; the servers live as long as this.
    final class Uplinks: Sendable {
        let host: TestNamespace
        let healthy: TestNamespace
        let captive: TestNamespace
        let servers: [TestHTTPServer]

        /// `veth0` (10.1.0.2/24, default route metric 100) to the healthy network,
        /// `veth1` (10.2.0.2/24, default route metric 200) to the portal. With
        /// `tls`, both also serve HTTPS on 443 with that certificate.
        init(
            named: Bool = false, tls: (certificate: String, key: String)? = nil,
            healthyRoutes: [String: TestHTTPServer.Behaviour] = [:]
        ) throws {
            host = named ? try TestNamespace(named: "rtest-scope") : try TestNamespace()
            healthy = try TestNamespace()
            captive = try TestNamespace()
            try host.disableIPv6()
            var servers: [TestHTTPServer] = []
            for (index, (far, behaviour)) in [
                (healthy, TestHTTPServer.Behaviour.respond(status: 204)),
                (captive, .respond(status: 302, headers: ["Location": ScopedCheckTests.portal])),
            ].enumerated() {
                let subnet = "10.\(index + 1).0"
                try far.disableIPv6()
                try host.addVeth("veth\(index)", peerIn: far, peer: "eth0", address: "\(subnet).2/24")
                try far.ip("addr add \(subnet).1/24 dev eth0")
                try far.ip("addr add \(ScopedCheckTests.serverAddress)/32 dev lo")
                try far.ip("route add default via \(subnet).2")
                try host.ip("route add default via \(subnet).1 dev veth\(index) metric \(100 * (index + 1))")
                let routes = ["/generate_204": behaviour].merging(index == 0 ? healthyRoutes : [:]) { $1 }
                servers.append(
                    try TestHTTPServer(in: far, host: ScopedCheckTests.serverAddress, port: 80, routes: routes))
                if let tls {
                    servers.append(
                        try TestHTTPServer(
                            in: far, host: ScopedCheckTests.serverAddress, port: 443, tls: tls,
                            routes: ["/generate_204": behaviour]))
                }
            }
            self.servers = servers
        }

        /// Requests seen by the healthy (0) or the captive (1) network's plain-HTTP server.
        func requests(_ network: Int) -> Int { servers[servers.count / 2 * network].count("/generate_204") }

        func configuration(_ urls: [URL] = [ScopedCheckTests.probeURL]) -> ConnectivityConfiguration {
            var configuration = ConnectivityConfiguration(
                endpoints: urls.map { ConnectivityEndpoint(url: $0, expectation: .status(204)) },
                environment: host.environment)
            configuration.probeTimeout = .seconds(5)
            return configuration
        }
    }

    @Test("over each interface: the portal behind the second uplink shows only when probed through it")
    func perInterface() async throws {
        let uplinks = try await offPool { try Uplinks() }
        let connectivity = try Connectivity(validating: uplinks.configuration())

        let ordinary = try await connectivity.checkConnectivity()
        #expect(ordinary.verdict == .online, "the main table prefers veth0")
        #expect(ordinary.scope == .any)
        #expect(uplinks.requests(1) == 0)

        let captive = try await connectivity.checkConnectivity(over: ProbeScope(interface: "veth1"))
        #expect(captive.verdict == .captivePortal(loginURL: URL(string: Self.portal)!))
        #expect(captive.scope == ProbeScope(interface: "veth1"))
        #expect(captive.interface?.name == "veth1")
        #expect(uplinks.requests(1) == 1, "the probe left through veth1, against the main table's choice")

        let healthy = try await connectivity.checkConnectivity(over: ProbeScope(interface: "veth0", family: .ipv4))
        #expect(healthy.verdict == .online)
        #expect(healthy.interface?.name == "veth0")

        let each = try await connectivity.checkEachInterface()
        #expect(each.map(\.scope.description) == ["veth0/IPv4", "veth1/IPv4"])
        #expect(each.map(\.verdict.name) == ["online", "captivePortal"])
        #expect(uplinks.requests(1) == 2)
    }

    @Test("a scope whose interface has no carrier, or doesn't exist: notConnected, no probe sent")
    func unusableInterface() async throws {
        let uplinks = try await offPool { try Uplinks() }
        try uplinks.captive.ip("link set eth0 down")  // veth1 loses its carrier
        let connectivity = try Connectivity(validating: uplinks.configuration())
        let paths = try PathMonitor(environment: uplinks.host.environment)
        try await eventually("veth1 gone from the path") {
            !paths.currentPath.availableInterfaces.contains { $0.name == "veth1" }
        }
        let lost = try await connectivity.checkConnectivity(over: ProbeScope(interface: "veth1"))
        #expect(lost.verdict == .notConnected)
        let missing = try await connectivity.checkConnectivity(over: ProbeScope(interface: "veth9"))
        #expect(missing.verdict == .notConnected)
        #expect(missing.scope.interface == "veth9")
        #expect(uplinks.requests(1) == 0)
        let each = try await connectivity.checkEachInterface()
        #expect(each.map(\.scope.description) == ["veth0/IPv4"], "an interface without carrier is not checked")
    }

    @Test("HTTPS over an interface: TLS with the configured roots, through the bound socket")
    func httpsOverInterface() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let uplinks = try await offPool {
            try Uplinks(tls: try TestHTTPServer.selfSignedCertificate(in: directory, address: Self.serverAddress))
        }
        let https = URL(string: "https://198.51.100.80/generate_204")!
        var configuration = uplinks.configuration([https])
        let untrusted = try await Connectivity(validating: configuration)
            .checkConnectivity(over: ProbeScope(interface: "veth0"))
        #expect(untrusted.verdict == .noInternet(.tlsFailed), "the system roots don't know the test certificate")
        configuration.trustedRootCertificatesPath = "\(directory)/cert.pem"
        let connectivity = try Connectivity(validating: configuration)
        let healthy = try await connectivity.checkConnectivity(over: ProbeScope(interface: "veth0"))
        #expect(healthy.verdict == .online, "\(healthy.endpoints.map(\.error))")
        let captive = try await connectivity.checkConnectivity(over: ProbeScope(interface: "veth1"))
        // A redirect over verified TLS is the server's own answer, not a portal's
        // (the tally's rule); the 302 shows the probe reached the second network.
        #expect(captive.verdict == .noInternet(.unexpectedResponse))
        #expect(captive.endpoints.first?.httpStatus == 302)
    }

    @Test("a notifier scoped to an interface: its verdicts, and notConnected when that interface loses carrier")
    func scopedNotifier() async throws {
        let uplinks = try await offPool { try Uplinks() }
        var configuration = uplinks.configuration()
        configuration.scope = ProbeScope(interface: "veth1")
        let log = ConnectivityLog(try Connectivity(validating: configuration))
        try log.connectivity.start()
        try await log.wait("the portal") { $0.last?.verdict.name == "captivePortal" }
        #expect(log.results.allSatisfy { $0.scope == ProbeScope(interface: "veth1") })
        try uplinks.captive.ip("link set eth0 down")
        try await log.wait("notConnected") { $0.last?.verdict == .notConnected }
        #expect(uplinks.requests(0) == 0, "nothing went over veth0 though the path stayed satisfied there")
    }

    @Test("scopes that can't work are refused: bad interface names, a family no endpoint has")
    func refusedScopes() async throws {
        let uplinks = try await offPool { try Uplinks() }
        let connectivity = try Connectivity(validating: uplinks.configuration())
        for name in ["", "a/b", "has space", "sixteen-bytes-xx", "..", "eth0:1"] {
            await #expect(throws: ConnectivityError.self, "\(name)") {
                try await connectivity.checkConnectivity(over: ProbeScope(interface: name))
            }
        }
        await #expect(throws: ConnectivityError.self) {
            try await connectivity.checkConnectivity(over: ProbeScope(family: .ipv6))
        }
        var configuration = uplinks.configuration()
        configuration.scope = ProbeScope(family: .ipv6)
        #expect(throws: ConnectivityError.self) { try configuration.validate() }
        #expect(uplinks.requests(0) == 0)
    }

    /// `host` reaching `far` over veth0 with both families, each by a default route;
    /// `probe.rtest` is ``serverAddress`` and 2001:db8:80::80 in host's hosts file, and
    /// `far` has the IPv6 one only when `ipv6Answers`.
    static func dualStack(named name: String, ipv6Answers: Bool) throws -> (TestNamespace, TestNamespace) {
        let host = try TestNamespace(named: name)
        let far = try TestNamespace()
        try host.addVeth("veth0", peerIn: far, peer: "eth0", address: "10.1.0.2/24")
        try host.ip("-6 addr add fd00:1::2/64 dev veth0 nodad")
        try far.ip("addr add 10.1.0.1/24 dev eth0")
        try far.ip("-6 addr add fd00:1::1/64 dev eth0 nodad")
        try far.ip("addr add \(serverAddress)/32 dev lo")
        if ipv6Answers { try far.ip("-6 addr add 2001:db8:80::80/128 dev lo") }
        try far.ip("route add default via 10.1.0.2")
        try far.ip("-6 route add default via fd00:1::2")
        try host.ip("route add default via 10.1.0.1 dev veth0")
        try host.ip("-6 route add default via fd00:1::1 dev veth0")
        try host.writeEtc(
            "hosts", "127.0.0.1 localhost\n\(serverAddress) probe.rtest\n2001:db8:80::80 probe.rtest\n")
        return (host, far)
    }

    @Test("per family: a name with an IPv4 and an IPv6 address, healthy over IPv4, a portal over IPv6")
    func perFamily() async throws {
        let (host, far, servers) = try await offPool {
            let (host, far) = try Self.dualStack(named: "rtest-family", ipv6Answers: true)
            let servers = [
                try TestHTTPServer(
                    in: far, host: Self.serverAddress, port: 80, routes: ["/generate_204": .respond(status: 204)]),
                try TestHTTPServer(
                    in: far, host: "2001:db8:80::80", port: 80,
                    routes: ["/generate_204": .respond(status: 302, headers: ["Location": Self.portal])]),
            ]
            return (host, far, servers)
        }
        defer { withExtendedLifetime((far, servers)) {} }
        let paths = try PathMonitor(environment: host.environment)
        try await eventually("IPv6 usable") { paths.currentPath.supportsIPv6 }
        let connectivity = try Connectivity(
            validating: ConnectivityConfiguration(
                endpoints: [
                    ConnectivityEndpoint(
                        url: URL(string: "http://probe.rtest/generate_204")!, expectation: .status(204))
                ], environment: host.environment))
        let results = try await connectivity.checkConnectivity(over: [
            ProbeScope(family: .ipv4), ProbeScope(family: .ipv6),
        ])
        #expect(results.map(\.verdict) == [.online, .captivePortal(loginURL: URL(string: Self.portal)!)])
        #expect(servers.map { $0.count("/generate_204") } == [1, 1], "one probe to each family's address")
        let each = try await connectivity.checkEachInterface()
        #expect(each.map(\.scope.description) == ["veth0/IPv4", "veth0/IPv6"])
        #expect(each.map(\.verdict.name) == ["online", "captivePortal"])
    }

    @Test(
        "Happy Eyeballs: a name whose IPv6 address drops every packet and whose IPv4 one answers is online, scoped or not"
    )
    func blackHoledIPv6() async throws {
        let (host, far, server) = try await offPool {
            // 2001:db8:80::80 is routed to `far`, which neither has it nor forwards: a SYN
            // to it is dropped without a word, as on a network whose IPv6 is broken.
            let (host, far) = try Self.dualStack(named: "rtest-eyeballs", ipv6Answers: false)
            let server = try TestHTTPServer(
                in: far, host: Self.serverAddress, port: 80, routes: ["/generate_204": .respond(status: 204)])
            return (host, far, server)
        }
        defer { withExtendedLifetime((far, server)) {} }
        let paths = try PathMonitor(environment: host.environment)
        try await eventually("IPv6 usable") { paths.currentPath.supportsIPv6 }
        var configuration = ConnectivityConfiguration(
            endpoints: [
                ConnectivityEndpoint(url: URL(string: "http://probe.rtest/generate_204")!, expectation: .status(204))
            ], environment: host.environment)
        // One attempt's time: trying IPv6 until it gave up would leave none for IPv4.
        configuration.probeTimeout = .seconds(3)
        configuration.checkDeadline = .seconds(3)
        let connectivity = try Connectivity(validating: configuration)
        let results = try await connectivity.checkConnectivity(over: [.any, ProbeScope(interface: "veth0")])
        #expect(results.map(\.verdict) == [.online, .online], "\(results.map(\.endpoints))")
        #expect(server.count("/generate_204") == 2, "one probe each, over IPv4")
    }

    @Test("hostile answers over an interface: an endless body is capped, silence times out, garbage fails")
    func hostileOverInterface() async throws {
        let uplinks = try await offPool {
            try Uplinks(healthyRoutes: ["/endless": .endlessBody, "/silent": .silent])
        }
        // A server that answers anything with bytes that are not HTTP, then closes.
        let garbage = try uplinks.healthy.spawn(
            [
                "python3", "-c",
                """
                import socket
                s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("\(Self.serverAddress)", 81)); s.listen(); print("ready", flush=True)
                while True:
                    c, _ = s.accept(); c.recv(4096); c.sendall(b"\\x00\\xffnot http at all\\r\\n\\r\\n"); c.close()
                """,
            ], captureOutput: true)
        defer { garbage.terminate() }
        #expect(garbage.readLine().hasPrefix("ready"))
        func endpoint(_ url: String, _ expectation: ConnectivityEndpoint.Expectation) -> ConnectivityEndpoint {
            ConnectivityEndpoint(url: URL(string: url)!, expectation: expectation)
        }
        // Answers that end by themselves (a body past the cap, bytes that are not
        // HTTP): judged as such however slow the machine, so the timeouts are far off.
        var configuration = uplinks.configuration()
        configuration.endpoints = [
            endpoint("http://198.51.100.80/endless", .bodyContains("never there")),
            endpoint("http://198.51.100.80:81/", .status(204)),
        ]
        configuration.probeTimeout = .seconds(30)
        configuration.checkDeadline = .seconds(60)
        configuration.maximumBodySize = 4096
        let result = try await Connectivity(validating: configuration).checkConnectivity(
            over: ProbeScope(interface: "veth0"))
        #expect(result.verdict != .online, "a 200 with the wrong body on plain HTTP reads as a portal")
        #expect(result.endpoints.count == 2)
        let endless = result.endpoints[0]
        #expect(endless.httpStatus == 200, "the head counts; the body stopped at the cap")
        #expect(endless.mismatch != nil)
        #expect(result.endpoints[1].httpStatus == nil)
        #expect(result.endpoints[1].failure != nil && result.endpoints[1].failure != .timedOut)

        // Silence: the probe gives up at its timeout, and the check ends.
        configuration.endpoints = [endpoint("http://198.51.100.80/silent", .status(204))]
        configuration.probeTimeout = .seconds(2)
        configuration.checkDeadline = .seconds(4)
        let silent = try await Connectivity(validating: configuration).checkConnectivity(
            over: ProbeScope(interface: "veth0"))
        #expect(silent.endpoints.map(\.failure) == [.timedOut])
        #expect(silent.verdict == .noInternet(.timedOut))
    }

    /// Pure: which interfaces and families `checkEachInterface` picks.
    @Test("the scopes of an interface list: up, carrier, not loopback, per default-route family")
    func scopesOfInterfaces() {
        func details(
            _ name: String, _ type: InterfaceType = .wiredEthernet, up: Bool = true,
            carrier: Bool = true, families: [IPAddress.Family]
        ) -> InterfaceDetails {
            InterfaceDetails(
                interface: NetworkInterface(name: name, index: 1, type: type), operState: "up", isUp: up,
                hasCarrier: carrier, addresses: [], defaultRouteFamilies: families)
        }
        let list = [
            details("lo", .loopback, families: [.ipv4]),
            details("eth0", families: [.ipv4, .ipv6]),
            details("wlan0", .wifi, families: [.ipv6]),
            details("eth1", carrier: false, families: [.ipv4]),
            details("eth2", up: false, families: [.ipv4]),
            details("tun0", .other, families: []),
        ]
        #expect(Connectivity.scopes(of: list).map(\.description) == ["eth0/IPv4", "eth0/IPv6", "wlan0/IPv6"])
        #expect(Connectivity.scopes(of: list, family: .ipv6).map(\.description) == ["eth0/IPv6", "wlan0/IPv6"])
        #expect(ProbeScope.any.description == "any")
        #expect(ProbeScope(family: .ipv6).description == "IPv6")
    }
}
