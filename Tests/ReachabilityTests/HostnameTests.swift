import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// Hostname validation limits and the hostname target's evaluation.
@Suite struct HostnameTests {
    @Test(
        "Names at the limits are accepted",
        arguments: [
            "a", "example.com", "example.com.", "under_score.example", "xn--bcher-kva.example",
            String(repeating: "a", count: 63) + ".example",
            // 253 bytes: 50 labels of "abcd." (250) + "abc"; and the same plus the root dot.
            String(repeating: "abcd.", count: 50) + "abc", String(repeating: "abcd.", count: 50) + "abc.",
        ])
    func accepted(_ name: String) throws {
        #expect(try Hostname.validate(name) == name)
    }

    @Test(
        "Names past the limits, or with spaces, control or bidi formatting characters, throw naming the input",
        arguments: [
            ("", "empty"),
            (String(repeating: "a", count: 64) + ".example", "limit is 63"),
            (String(repeating: "abcd.", count: 50) + "abcd", "254 bytes"),
            ("a..b", "empty label"),
            (".leading", "empty label"),
            ("sp ace.example", "a space"),
            ("tab\there", "U+9"),
            ("nul\u{0}byte", "U+0"),
            ("del\u{7F}", "U+7F"),
            ("nbsp\u{A0}x", "U+A0"),
            // C1's CSI, which terminals take as ESC [, and a right-to-left override.
            ("csi\u{9B}31m.example", "control character U+9B"),
            ("rlo\u{202E}elpmaxe.example", "formatting character U+202E"),
        ])
    func rejected(_ name: String, _ reason: String) {
        let error = #expect(throws: ReachabilityError.self) { try Hostname.validate(name) }
        #expect(error?.code == .invalidHostname)
        #expect(error?.message.contains(reason) == true, "\(String(describing: error))")
        if !name.isEmpty {
            #expect(error?.message.contains(String(name.prefix(3))) == true, "the message names the input")
        }
    }

    @Test("A hostname's flags are the best over its addresses; none without addresses")
    func hostTargetEvaluation() throws {
        let table = try TableBuilder()
            .link(2, "eth0")
            .address(2, "192.0.2.10/24")
            .link(3, "wwan0", as: InterfaceClassification(.cellular))
            .address(3, "198.51.100.10/24")
            .address(3, "2001:db8:1::10/64")
            .table
        let a = try IPAddress("203.0.113.1")
        let b = try IPAddress("2001:db8::1")
        let c = try IPAddress("198.18.0.1")
        // No addresses (NXDOMAIN, not resolved yet): nothing, and no lookups asked for.
        let empty = Target.host(name: "none.example", addresses: [])
        #expect(empty.lookups.isEmpty)
        #expect(empty.evaluate([], in: table) == .unreachable)

        let host = Target.host(name: "svc.example", addresses: [a, b, c])
        #expect(
            host.lookups == [
                LookupRequest(destination: a), LookupRequest(destination: b), LookupRequest(destination: c),
            ])
        // First address has no route, second goes over cellular, third over Ethernet via a gateway.
        let results = [
            Lookup.noRoute, Lookup.route(oif: 3, gateway: true, family: .ipv6), Lookup.route(oif: 2, gateway: true),
        ]
        let state = host.evaluate(results, in: table)
        // Cellular and Ethernet are both fully reachable: the first of the best wins (cellular).
        #expect(state.flags == [.reachable, .isWWAN, .transientConnection])
        #expect(state.interface?.name == "wwan0")
        // Only the Ethernet one is reachable now.
        let later = host.evaluate([Lookup.noRoute, Lookup.noRoute, Lookup.route(oif: 2, gateway: true)], in: table)
        #expect(
            later
                == ReachabilityState(
                    flags: [.reachable], interface: NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet)))
        // A result count that doesn't match the addresses is treated as no answer, never a crash.
        #expect(host.evaluate([Lookup.noRoute], in: table) == .unreachable)
        #expect(host.description == "svc.example")
    }

    @Test("An IP literal given as a hostname is an address target")
    func literal() throws {
        #expect(try Reachability(hostname: "192.0.2.1").core.spec == .fixed(.address(try IPAddress("192.0.2.1"))))
        #expect(try Reachability(hostname: "[2001:db8::1]").core.spec == .fixed(.address(try IPAddress("2001:db8::1"))))
        #expect(try Reachability(hostname: "svc.example").core.spec == .hostname("svc.example"))
        #expect(try Reachability(hostname: "1.example").core.spec == .hostname("1.example"))
        for malformed in ["999.1.1.1", "1.2.3", "::g", "[::g]", "1.2.3.4.5"] {
            let error = #expect(throws: ReachabilityError.self) { try Reachability(hostname: malformed) }
            #expect(error?.code == .invalidAddress)
            #expect(error?.message.contains(malformed.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))) == true)
        }
    }
}

/// The start path of the notification state machine: an evaluation that races
/// with startup is kept, and a superseded start cannot complete.
@Suite struct NotifierStartRaceTests {
    static let eth0 = NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet)
    static let up = ReachabilityState(flags: [.reachable], interface: eth0)
    static let down = ReachabilityState.unreachable

    @Test("A newer evaluation that arrives while starting wins over the first one")
    func newerDuringStart() throws {
        var machine = NotifierStateMachine()
        let token = machine.begin()
        #expect(machine.observe(Self.down, generation: 6) == nil, "nothing is delivered before the start completes")
        // The start's own evaluation was made at generation 5: the newer one (6) is delivered instead.
        #expect(machine.start(with: Self.up, generation: 5, token: token) == .deliver(Self.down, session: 1))
        #expect(machine.current == Self.down)
        // Afterwards an older generation is dropped.
        #expect(machine.observe(Self.up, generation: 5) == nil)
    }

    @Test("An older evaluation during the start does not replace the start's own")
    func olderDuringStart() throws {
        var machine = NotifierStateMachine()
        let token = machine.begin()
        _ = machine.observe(Self.down, generation: 3)
        #expect(machine.start(with: Self.up, generation: 5, token: token) == .deliver(Self.up, session: 1))
    }

    @Test("stop during a start, then a new start: only the newest start can complete")
    func supersededStart() throws {
        var machine = NotifierStateMachine()
        let first = machine.begin()
        machine.stop()
        #expect(!machine.isStarting(first))
        #expect(machine.start(with: Self.up, generation: 1, token: first) == nil)
        let second = machine.begin()
        #expect(machine.start(with: Self.up, generation: 1, token: first) == nil, "the stale token is refused")
        #expect(machine.start(with: Self.up, generation: 1, token: second) == .deliver(Self.up, session: 1))
        #expect(machine.isRunning)
    }
}
