import Foundation
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// DNS hijack detection against a real resolver: dnsmasq in a
/// named namespace answers the check endpoints' names with private addresses, as a
/// captive portal's resolver does, and `reachability check` runs under `ip netns
/// exec` (so that it, and the HTTP client in it, use that resolver).
@Suite("DNS hijack detection against a real DNS server", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLIDNSHijackTests {
    /// veth0 192.0.2.1/24 with a default route; 10.9.9.9 and 10.9.9.8 on lo (the
    /// "portal"); dnsmasq answering the given names.
    static func setUp(_ hosts: [String: String]) throws -> (TestNamespace, DNSServer) {
        let ns = try TestNamespace(named: "rtest-hijack")
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.ip("addr add 10.9.9.9/32 dev lo")
        try ns.ip("addr add 10.9.9.8/32 dev lo")
        return (ns, try DNSServer(in: ns, hosts: hosts))
    }

    static func check(_ ns: TestNamespace, _ arguments: [String]) throws -> Command.Output {
        try Command.run(["ip", "netns", "exec", try #require(ns.name), CLI.path, "check"] + arguments)
    }

    @Test("a name answered with a private address that serves the expected 204: noInternet (dnsHijacked), not online")
    func mimickingPortal() throws {
        let (ns, dns) = try Self.setUp(["mimic.rtest": "10.9.9.9"])
        defer { withExtendedLifetime(dns) {} }  // dnsmasq answers while it lives
        let server = try TestHTTPServer(in: ns, host: "10.9.9.9", routes: ["/generate_204": .respond(status: 204)])
        let url = "http://mimic.rtest:\(server.port)/generate_204"
        let output = try Self.check(ns, ["--url", url])
        #expect(output.status == 1, "\(output.stdout)\(output.stderr)")
        #expect(output.stdout.contains("verdict: noInternet (dnsHijacked)"), "\(output.stdout)")
        #expect(
            output.stdout.contains("DNS hijacked: mimic.rtest → 10.9.9.9, a private or local address"),
            "\(output.stdout)")
        #expect(server.count("/generate_204") >= 1, "the probe still went (a redirect would name the portal)")
    }

    @Test("a hijacked name whose address redirects: captivePortal with the login URL")
    func redirectingPortal() throws {
        let (ns, dns) = try Self.setUp(["portal.rtest": "10.9.9.9"])
        defer { withExtendedLifetime(dns) {} }  // dnsmasq answers while it lives
        let server = try TestHTTPServer(
            in: ns, host: "10.9.9.9",
            routes: ["/generate_204": .respond(status: 302, headers: ["Location": "http://10.9.9.9/login"])])
        let output = try Self.check(ns, ["--url", "http://portal.rtest:\(server.port)/generate_204", "--json"])
        #expect(output.status == 1)
        let object = try jsonObject(output.stdout)
        #expect(object["verdict"] as? String == "captivePortal")
        #expect(object["loginURL"] as? String == "http://10.9.9.9/login")
    }

    @Test("a hijacked name whose address refuses: dnsHijacked at once, not connectionRefused or a timeout")
    func refusingAddress() throws {
        let (ns, dns) = try Self.setUp(["closed.rtest": "10.9.9.8"])
        defer { withExtendedLifetime(dns) {} }  // dnsmasq answers while it lives
        let started = Date()
        let output = try Self.check(ns, ["--url", "http://closed.rtest:8080/generate_204", "--deadline", "10"])
        #expect(output.status == 1)
        #expect(output.stdout.contains("verdict: noInternet (dnsHijacked)"), "\(output.stdout)")
        #expect(Date().timeIntervalSince(started) < 8, "not the deadline")
    }

    @Test("three vendors' names all answered with one public address that serves 204: dnsHijacked, not online")
    func oneAddressForAll() throws {
        let (ns, dns) = try Self.setUp([
            "a.one.rtest": "192.0.2.1", "b.two.rtest": "192.0.2.1", "c.three.rtest": "192.0.2.1",
        ])
        defer { withExtendedLifetime(dns) {} }  // dnsmasq answers while it lives
        let server = try TestHTTPServer(in: ns, host: "192.0.2.1", routes: ["/generate_204": .respond(status: 204)])
        let urls = ["a.one.rtest", "b.two.rtest", "c.three.rtest"].flatMap {
            ["--url", "http://\($0):\(server.port)/generate_204"]
        }
        let output = try Self.check(ns, urls)
        #expect(output.status == 1, "\(output.stdout)\(output.stderr)")
        #expect(output.stdout.contains("verdict: noInternet (dnsHijacked)"), "\(output.stdout)")
        #expect(
            output.stdout.contains(
                "DNS hijacked: a.one.rtest → 192.0.2.1, one address the names of 3 vendors (one.rtest, three.rtest, "
                    + "two.rtest) resolved to"), "\(output.stdout)")
        #expect(!output.stdout.contains("private or local"), "a public address is not called private")
        // Two vendors on one address (a shared CDN edge) are no alarm.
        let two = try Self.check(ns, Array(urls.prefix(4)))
        #expect(two.status == 0, "\(two.stdout)\(two.stderr)")
    }

    @Test("no false alarm: a name answered with a public address that serves 204 is online")
    func publicAnswer() throws {
        let (ns, dns) = try Self.setUp(["fine.rtest": "192.0.2.1"])
        defer { withExtendedLifetime(dns) {} }  // dnsmasq answers while it lives
        let server = try TestHTTPServer(in: ns, host: "192.0.2.1", routes: ["/generate_204": .respond(status: 204)])
        let output = try Self.check(ns, ["--url", "http://fine.rtest:\(server.port)/generate_204"])
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        #expect(output.stdout.contains("verdict: online"))
    }
}

/// The shared-address rule under any overlap of answer sets: a
/// scripted DNS server answers each vendor's name with chosen address sets, and one
/// HTTP server on every address of the namespace serves the expected 204, so only the
/// rule can keep the verdict from `online`.
@Suite(
    "DNS hijack: one address in three vendors' answers, whatever else they hold", .enabled(if: IntegrationGate.enabled),
    .ownThreads)
struct CLIDNSHijackOverlapTests {
    /// `answers`: each name's one address set. 198.51.100.1–4 are on lo, 192.0.2.1 on veth0.
    static func check(_ answers: [String: [String]], _ extra: [String] = []) throws -> Command.Output {
        let ns = try TestNamespace(named: "rtest-overlap")
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        for host in 1...4 { try ns.ip("addr add 198.51.100.\(host)/32 dev lo") }
        let dns = try ScriptedDNSServer(in: ns)
        for (name, addresses) in answers { try dns.set(name, answers: [addresses]) }
        let server = try TestHTTPServer(in: ns, host: "0.0.0.0", routes: ["/generate_204": .respond(status: 204)])
        let urls = answers.keys.sorted().flatMap { ["--url", "http://\($0):\(server.port)/generate_204"] }
        return try withExtendedLifetime((dns, server)) { try CLIDNSHijackTests.check(ns, urls + extra) }
    }

    @Test("four vendors, three of them on one public address and the fourth on another: dnsHijacked, even at 100 %")
    func threeOfFour() throws {
        let output = try Self.check(
            [
                "a.one.rtest": ["192.0.2.1"], "b.two.rtest": ["192.0.2.1"], "c.three.rtest": ["192.0.2.1"],
                "d.four.rtest": ["198.51.100.4"],
            ], ["--threshold", "100"])
        #expect(output.status == 1, "\(output.stdout)\(output.stderr)")
        #expect(output.stdout.contains("verdict: noInternet (dnsHijacked)"), "\(output.stdout)")
        #expect(
            output.stdout.contains(
                "DNS hijacked: c.three.rtest → 192.0.2.1, one address the names of 3 vendors (one.rtest, three.rtest, "
                    + "two.rtest) resolved to"), "\(output.stdout)")
        #expect(!output.stdout.contains("private or local"), "\(output.stdout)")
    }

    @Test("three vendors each answered {a shared address, one of its own}: dnsHijacked")
    func sharedPlusUnique() throws {
        let output = try Self.check([
            "a.one.rtest": ["192.0.2.1", "198.51.100.1"], "b.two.rtest": ["192.0.2.1", "198.51.100.2"],
            "c.three.rtest": ["192.0.2.1", "198.51.100.3"],
        ])
        #expect(output.status == 1, "\(output.stdout)\(output.stderr)")
        #expect(output.stdout.contains("verdict: noInternet (dnsHijacked)"), "\(output.stdout)")
        #expect(output.stdout.contains("DNS hijacked: b.two.rtest → 192.0.2.1, one address"), "\(output.stdout)")
    }

    @Test("no false alarm: vendors whose answers overlap only pairwise, or not at all, are online at 100 %")
    func pairwiseOverlaps() throws {
        let output = try Self.check(
            [
                "a.one.rtest": ["198.51.100.1", "198.51.100.2"], "b.two.rtest": ["198.51.100.2", "198.51.100.3"],
                "c.three.rtest": ["198.51.100.3", "198.51.100.1"], "d.four.rtest": ["198.51.100.4"],
            ], ["--threshold", "100"])
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        #expect(output.stdout.contains("verdict: online"), "\(output.stdout)")
        #expect(!output.stdout.contains("DNS hijacked"), "\(output.stdout)")
    }
}

/// `check --strict` against two local servers standing for two
/// vendors (two addresses).
@Suite("check --strict: two vendors before online", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLIStrictTests {
    @Test("one vendor healthy, the other silent: online without --strict, limited (unconfirmed) with it")
    func strict() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.ip("addr add 198.51.100.7/32 dev lo")
        let one = try TestHTTPServer(in: ns, host: "192.0.2.1", routes: ["/generate_204": .respond(status: 204)])
        let two = try TestHTTPServer(in: ns, host: "198.51.100.7", routes: ["/generate_204": .respond(status: 500)])
        let urls = [
            "--url", "http://192.0.2.1:\(one.port)/generate_204", "--url",
            "http://198.51.100.7:\(two.port)/generate_204",
        ]
        let lenient = try ns.cli(["check"] + urls)
        #expect(lenient.status == 0, "\(lenient.stdout)")
        let strict = try ns.cli(["check", "--strict"] + urls)
        #expect(strict.status == 1)
        #expect(strict.stdout.contains("verdict: limited (only one vendor's endpoints answered"), "\(strict.stdout)")

        let healthy = try TestHTTPServer(in: ns, host: "198.51.100.7", routes: ["/generate_204": .respond(status: 204)])
        let both = try ns.cli([
            "check", "--strict", "--url", "http://192.0.2.1:\(one.port)/generate_204", "--url",
            "http://198.51.100.7:\(healthy.port)/generate_204",
        ])
        #expect(both.status == 0, "\(both.stdout)")
        #expect(both.stdout.contains("verdict: online"))
    }

    @Test("--fallback-url: each check probes the primary and one fallback at random; over checks, every fallback")
    func fallbacks() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let server = try TestHTTPServer(
            in: ns, host: "192.0.2.1",
            routes: ["/primary": .respond(status: 204), "/a": .respond(status: 204), "/b": .respond(status: 204)])
        let base = "http://192.0.2.1:\(server.port)"
        for _ in 0..<12 {
            // --threshold 100: the check waits for both answers (at 50 % it may end
            // on the first and cancel the other before the server sees it).
            let output = try ns.cli([
                "check", "--json", "--threshold", "100", "--url", "\(base)/primary", "--fallback-url", "\(base)/a",
                "--fallback-url", "\(base)/b",
            ])
            #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
            let endpoints = try #require(try jsonObject(output.stdout)["endpoints"] as? [[String: Any]])
            #expect(endpoints.count == 2, "the primary and one fallback")
        }
        #expect(server.count("/primary") == 12)
        #expect(server.count("/a") + server.count("/b") == 12)
        #expect(server.count("/a") > 0 && server.count("/b") > 0, "12 draws of 2 never all the same (p = 2^-11)")
    }
}
