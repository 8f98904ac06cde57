import Connectivity
import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// RFC 8910 discovery end to end: a "network" namespace where
/// dnsmasq hands out leases with DHCP option 114 and an HTTPS server answers the RFC
/// 8908 API, joined by a veth pair to a "host" namespace where a real dhclient
/// takes a lease and writes its lease file; the check in the host namespace reads
/// that file, asks the announced API and reports it.
final class DHCPPortalNetwork: @unchecked Sendable {
    // @unchecked: set once in init, only read afterwards.
    let network: TestNamespace
    let host: TestNamespace
    /// The file-system root discovery reads (`ROOT/var/lib/dhcp/…`).
    let root: String
    let tls: (certificate: String, key: String)
    /// The RFC 8908 API (HTTPS) and the check endpoint (HTTP), on 192.0.2.1.
    let api: TestHTTPServer
    let probes: TestHTTPServer
    /// Where dhclient wrote its lease, when it ran.
    let leaseFile: String
    private var dnsmasq: Child?

    static let apiJSON = """
        {"captive": true, "user-portal-url": "https://192.0.2.1/portal", "venue-info-url": "https://192.0.2.1/venue",
         "seconds-remaining": 326, "bytes-remaining": 65536, "can-extend-session": true}
        """

    /// The namespaces, the servers, and `lan0` in the host namespace (its peer
    /// `dhcp0`, 192.0.2.1/24, in the network namespace); no address on `lan0` yet.
    init() throws {
        root = NSTemporaryDirectory() + "rtest-discovery-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root + "/var/lib/dhcp", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: root + "/run/systemd/netif/links", withIntermediateDirectories: true)
        leaseFile = root + "/var/lib/dhcp/dhclient.lan0.leases"
        tls = try TestHTTPServer.selfSignedCertificate(in: root, address: "192.0.2.1")
        network = try TestNamespace()
        host = try TestNamespace()
        try network.disableIPv6()
        try host.disableIPv6()
        try network.addVeth("dhcp0", peerIn: host, peer: "lan0", address: "192.0.2.1/24")
        api = try TestHTTPServer(
            in: network, host: "192.0.2.1", tls: tls,
            routes: [
                "/captive": .respond(
                    status: 200, headers: ["Content-Type": "application/captive+json"], body: Self.apiJSON),
                "/released": .respond(
                    status: 200, headers: ["Content-Type": "application/captive+json"], body: #"{"captive": false}"#),
            ])
        probes = try TestHTTPServer(in: network, host: "192.0.2.1", routes: ["/generate_204": .respond(status: 204)])
    }

    deinit {
        dnsmasq?.terminate()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// The announced URI: the API on its ephemeral port.
    var apiURL: URL { api.url("/captive") }

    /// dnsmasq serving DHCP on `dhcp0` with option 114 = `uri` (unquoted: on its
    /// command line dnsmasq would send quotes as part of the value), then dhclient in the
    /// host namespace taking a lease on `lan0` once (`-1`): its script applies the
    /// address and default route, and it writes `leaseFile`. dhclient is stopped
    /// once bound (its pid file names it).
    func leaseWithOption114(_ uri: String) throws {
        dnsmasq = try network.spawn([
            "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--user=root",
            "--port=0", "--interface=dhcp0", "--bind-interfaces", "--dhcp-authoritative",
            "--dhcp-range=192.0.2.10,192.0.2.20,255.255.255.0,1h", "--dhcp-option-force=114,\(uri)",
            "--dhcp-leasefile=\(root)/dnsmasq.leases", "--pid-file=",
        ])
        let script = root + "/dhclient-script"
        try """
        #!/bin/sh
        case "$reason" in
        BOUND|RENEW|REBIND|REBOOT)
            ip addr add "$new_ip_address/$new_subnet_mask" dev "$interface"
            ip route replace default via "$new_routers" dev "$interface" ;;
        esac
        exit 0

        """.write(toFile: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        let pidFile = root + "/dhclient.pid"
        defer {
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
                let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1
            {
                kill(pid, SIGTERM)
            }
        }
        // dnsmasq may need a moment to listen; dhclient -1 retries for its timeout (60 s).
        let command = [
            "timeout", "90", "dhclient", "-1", "-v", "-lf", leaseFile, "-pf", pidFile, "-sf", script, "lan0",
        ]
        let dhclient = try Command.run(["nsenter", "--net=\(host.path)", "--"] + command)
        guard dhclient.status == 0 else {
            throw CommandFailed(
                command: command.joined(separator: " "), status: dhclient.status, stderr: dhclient.stderr)
        }
        // The lease file alone doesn't say the script ran: the checks need its route.
        do {
            try eventuallyBlocking("dhclient's script to add the default route via lan0", timeout: 10) {
                (try? host.ip("route show default"))?.contains("lan0") == true
            }
        } catch {
            let state = (try? host.ip("addr show dev lan0")) ?? "?"
            throw CommandFailed(
                command: "dhclient (bound, but no default route via lan0 after 10 s)", status: 0,
                stderr: dhclient.stderr + "\nlan0: " + state)
        }
    }

    /// The host namespace's `lan0` index (the networkd state file's name).
    func hostIndex(_ name: String) throws -> Int {
        let line = try host.ip("-o link show dev \(name)")
        return try #require(Int(line.prefix { $0 != ":" }), "\(line)")
    }

    /// A check configuration for the host namespace: the HTTP probe endpoint, the
    /// test certificate trusted, discovery under `root`.
    func configuration() -> ConnectivityConfiguration {
        var configuration = ConnectivityConfiguration(
            endpoints: [ConnectivityEndpoint(url: probes.url("/generate_204"), expectation: .status(204))],
            environment: host.environment)
        configuration.trustedRootCertificatesPath = tls.certificate
        configuration.captivePortalDiscovery = CaptivePortalDiscovery(root: root)
        configuration.probeTimeout = .seconds(5)
        configuration.checkDeadline = .seconds(10)
        return configuration
    }
}

@Suite(
    "RFC 8910 discovery: dnsmasq's option 114, dhclient's lease, the RFC 8908 API",
    .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CaptivePortalDiscoveryIntegrationTests {
    @Test("dhclient's real lease: the announced API is asked, its fields and the lease file reported")
    func dhclientLease() async throws {
        let setup = try await offPool {
            let setup = try DHCPPortalNetwork()
            try setup.leaseWithOption114(setup.apiURL.absoluteString)
            return setup
        }
        let lease = try String(contentsOfFile: setup.leaseFile, encoding: .utf8)
        #expect(lease.contains("interface \"lan0\""), "\(lease)")
        #expect(lease.contains(setup.apiURL.absoluteString), "dhclient recorded option 114: \(lease)")

        let found = try #require(CaptivePortalDiscovery(root: setup.root).discover(interfaceName: "lan0", index: 0))
        #expect(found.uri == .api(setup.apiURL))
        #expect(found.format == .dhclient)
        #expect(found.path == setup.leaseFile)

        let result = try await Connectivity(configuration: setup.configuration()).checkConnectivity()
        #expect(result.interface?.name == "lan0")
        #expect(result.verdict == .captivePortal(loginURL: URL(string: "https://192.0.2.1/portal")!))
        let api = try #require(result.captivePortalAPI)
        #expect(
            api
                == CaptivePortalAPIResponse(
                    captive: true, userPortalURL: URL(string: "https://192.0.2.1/portal"),
                    venueInfoURL: URL(string: "https://192.0.2.1/venue"), secondsRemaining: 326, bytesRemaining: 65536,
                    canExtendSession: true))
        #expect(result.captivePortalAPISource == found)
        #expect(setup.api.count("/captive") == 1)
        #expect(setup.api.requests.first?.headers["accept"] == "application/captive+json")

        // Discovery off: the probes alone decide (the 204 endpoint answers: online).
        var off = setup.configuration()
        off.discoversCaptivePortalAPI = false
        let plain = try await Connectivity(configuration: off).checkConnectivity()
        #expect(plain.verdict == .online)
        #expect(plain.captivePortalAPISource == nil)
        #expect(setup.api.count("/captive") == 1, "not asked again")
    }

    @Test("networkd's link state file for the interface's index: the notifier's checks ask its API")
    func networkdLinkFile() async throws {
        let setup = try await offPool {
            let setup = try DHCPPortalNetwork()
            try setup.host.ip("addr add 192.0.2.10/24 dev lan0")
            try setup.host.ip("route add default via 192.0.2.1 dev lan0")
            return setup
        }
        let index = try setup.hostIndex("lan0")
        let linkFile = "\(setup.root)/run/systemd/netif/links/\(index)"
        try """
        # This is private data. Do not parse.
        ADMIN_STATE=configured
        OPER_STATE=routable
        NETWORK_FILE=/etc/systemd/network/lan0.network
        NETWORK_FILE_DROPINS=""
        DNS=192.0.2.1
        CAPTIVE_PORTAL=\(setup.api.url("/released").absoluteString)
        DOMAINS=

        """.write(toFile: linkFile, atomically: true, encoding: .utf8)

        let connectivity = Connectivity(configuration: setup.configuration())
        let log = ConnectivityLog(connectivity)
        try connectivity.start()
        try await log.wait("a result with the API's answer") { $0.contains { $0.captivePortalAPI != nil } }
        let result = try #require(log.results.last { $0.captivePortalAPI != nil })
        #expect(result.verdict == .online, "the API says captive: false, the probe answers 204")
        #expect(result.captivePortalAPI?.captive == false)
        #expect(
            result.captivePortalAPISource
                == CaptivePortalAPISource(
                    uri: .api(setup.api.url("/released")), format: .networkd, path: linkFile, interface: "lan0"))
        #expect(setup.api.count("/released") >= 1)
        connectivity.stop()

        // The unrestricted URN: reported, and no API is asked.
        try "NETWORK_FILE=/etc/systemd/network/lan0.network\nCAPTIVE_PORTAL=urn:ietf:params:capport:unrestricted\n"
            .write(toFile: linkFile, atomically: true, encoding: .utf8)
        let asked = setup.api.requests.count
        let unrestricted = try await Connectivity(configuration: setup.configuration()).checkConnectivity()
        #expect(unrestricted.verdict == .online)
        #expect(unrestricted.captivePortalAPISource?.uri == .unrestricted)
        #expect(unrestricted.captivePortalAPI == nil)
        #expect(setup.api.requests.count == asked)
    }
}

@Suite("CLI check: the discovered captive-portal API", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLICaptivePortalDiscoveryTests {
    @Test("check --discovery-root: dhclient's lease, the API's fields and their source, in text and JSON")
    func check() async throws {
        let setup = try await offPool {
            let setup = try DHCPPortalNetwork()
            try setup.leaseWithOption114(setup.apiURL.absoluteString)
            return setup
        }
        let arguments = [
            "check", "--url", setup.probes.url("/generate_204").absoluteString, "--ca-file", setup.tls.certificate,
            "--discovery-root", setup.root,
        ]
        let text = try await offPool { try setup.host.cli(arguments) }
        #expect(text.status == 1, "\(text.stdout)\(text.stderr)")
        #expect(text.stdout.contains("verdict: captivePortal (login at https://192.0.2.1/portal)"), "\(text.stdout)")
        #expect(
            text.stdout.contains("api:     \(setup.apiURL.absoluteString) (dhclient \(setup.leaseFile), lan0)"),
            "\(text.stdout)")
        for line in [
            "captive: true", "portal:  https://192.0.2.1/portal", "venue:   https://192.0.2.1/venue",
            "seconds: 326 remaining", "bytes:   65536 remaining", "extend:  yes",
        ] {
            #expect(text.stdout.contains(line), "\(line) in \(text.stdout)")
        }

        let json = try await offPool { try setup.host.cli(arguments + ["--json"]) }
        let object = try jsonObject(json.stdout)
        #expect(object["verdict"] as? String == "captivePortal")
        let api = try #require(object["captivePortalAPI"] as? [String: Any], "\(json.stdout)")
        #expect(api["captive"] as? Bool == true)
        #expect(api["userPortalURL"] as? String == "https://192.0.2.1/portal")
        #expect(api["venueInfoURL"] as? String == "https://192.0.2.1/venue")
        #expect(api["secondsRemaining"] as? Int == 326)
        #expect(api["bytesRemaining"] as? Int == 65536)
        #expect(api["canExtendSession"] as? Bool == true)
        let source = try #require(object["captivePortalAPISource"] as? [String: Any], "\(json.stdout)")
        #expect(source["uri"] as? String == setup.apiURL.absoluteString)
        #expect(source["format"] as? String == "dhclient")
        #expect(source["path"] as? String == setup.leaseFile)
        #expect(source["interface"] as? String == "lan0")

        let off = try await offPool { try setup.host.cli(arguments + ["--no-api-discovery", "--json"]) }
        let plain = try jsonObject(off.stdout)
        #expect(off.status == 0, "\(off.stdout)")
        #expect(plain["captivePortalAPI"] is NSNull)
        #expect(plain["captivePortalAPISource"] is NSNull)
    }
}
