import Foundation
import Testing

/// `reachability check --interface / --each-interface / -4 / -6`
/// against the two-uplink setup of ``ScopedCheckTests``: the healthy network behind
/// veth0 (preferred by the main table), a portal behind veth1.
@Suite("check per interface and family (CLI)", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLIScopedCheckTests {
    static let url = ScopedCheckTests.probeURL.absoluteString

    static func check(_ uplinks: ScopedCheckTests.Uplinks, _ arguments: [String]) throws -> Command.Output {
        try Command.run([CLI.path, "check", "--namespace", uplinks.host.path, "--url", url] + arguments)
    }

    @Test("--interface twice: one verdict each, JSON per scope; exit 0 when one of them is online")
    func interfacesJSON() throws {
        let uplinks = try ScopedCheckTests.Uplinks()
        let output = try Self.check(uplinks, ["-i", "veth1", "--interface", "veth0", "--json"])
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        let object = try jsonObject(output.stdout)
        #expect(object["verdict"] as? String == "online")
        let scopes = try #require(object["scopes"] as? [[String: Any]])
        #expect(scopes.map { $0["scope"] as? String } == ["veth1", "veth0"])
        #expect(scopes.map { $0["interface"] as? String } == ["veth1", "veth0"])
        #expect(scopes.allSatisfy { $0["family"] is NSNull })
        #expect(scopes.map { $0["verdict"] as? String } == ["captivePortal", "online"])
        #expect(scopes.first?["loginURL"] as? String == ScopedCheckTests.portal)
        #expect((scopes.first?["endpoints"] as? [[String: Any]])?.first?["httpStatus"] as? Int == 302)
    }

    @Test("--interface over the portal alone: exit 1 and the verdict over it; an ordinary check stays online")
    func portalOnly() throws {
        let uplinks = try ScopedCheckTests.Uplinks()
        let portal = try Self.check(uplinks, ["--interface", "veth1"])
        #expect(portal.status == 1, "\(portal.stdout)\(portal.stderr)")
        #expect(portal.stdout.hasPrefix("captivePortal over veth1\n"), "\(portal.stdout)")
        #expect(portal.stdout.contains("login:   \(ScopedCheckTests.portal)"))
        let ordinary = try Self.check(uplinks, [])
        #expect(ordinary.status == 0)
        #expect(ordinary.stdout.hasPrefix("verdict: online\n"), "\(ordinary.stdout)")
    }

    @Test("--each-interface -4: every uplink, IPv4, in interface order")
    func eachInterface() throws {
        let uplinks = try ScopedCheckTests.Uplinks()
        let output = try Self.check(uplinks, ["--each-interface", "-4"])
        #expect(output.status == 0, "\(output.stdout)\(output.stderr)")
        #expect(
            output.stdout.hasPrefix("online over veth0/IPv4, captivePortal over veth1/IPv4\n"), "\(output.stdout)")
        #expect(output.stdout.contains("[veth1/IPv4]\nverdict: captivePortal"))
        try uplinks.healthy.ip("link set eth0 down")  // veth0 loses carrier: only veth1 is left
        let after = try Self.check(uplinks, ["--each-interface", "--json"])
        #expect(after.status == 1, "no scope online")
        let object = try jsonObject(after.stdout)
        #expect(object["verdict"] as? String == "captivePortal")
        #expect((object["scopes"] as? [[String: Any]])?.map { $0["scope"] as? String } == ["veth1/IPv4"])
    }

    @Test("scopes that can't work exit 2 with the reason, before any probe")
    func refused() throws {
        let uplinks = try ScopedCheckTests.Uplinks()
        for (arguments, reason) in [
            (["-i", "a/b"], "is not an interface name"),
            (["-i", "veth0", "--each-interface"], "exclude each other"),
            (["-6"], "none can be probed over ipv6"),
            (["-i", String(repeating: "x", count: 16)], "is not an interface name"),
        ] {
            let output = try Self.check(uplinks, arguments)
            #expect(output.status == 2, "\(arguments): \(output.stdout)\(output.stderr)")
            #expect(output.stderr.contains(reason), "\(arguments): \(output.stderr)")
        }
        #expect(uplinks.requests(0) + uplinks.requests(1) == 0)
    }
}
