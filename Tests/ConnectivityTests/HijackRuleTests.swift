import Foundation
import Reachability
import Testing

@testable import Connectivity

/// The DNS-hijack rule's pure parts: "three or more vendors'
/// names resolving to one and the same address" holds for any overlap of answer
/// sets; the detail says which rule caught a name; a shared address decides the
/// verdict whatever the other endpoints answered.
@Suite struct HijackRuleTests {
    let clock = ContinuousClock()

    /// An IPv4 address from its dotted text (a test's literal).
    static func address(_ text: String) -> IPAddress {
        IPAddress(bytes: text.split(separator: ".").map { UInt8($0)! })!
    }
    static let x = address("203.0.113.7")
    static let y = address("203.0.113.8")
    static let z = address("203.0.113.9")
    static let w = address("198.51.100.4")

    /// Each name's vendor: its last two labels, as ``CheckTally/vendor(of:)`` says.
    static func vendors(_ answers: [String: [IPAddress]]) -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: answers.keys.map {
                ($0, CheckTally.vendor(of: URL(string: "http://\($0)/generate_204")!))
            })
    }

    static func shared(_ answers: [String: [IPAddress]]) -> [String: ProbeRunner.SharedAddress] {
        ProbeRunner.sharedAddresses(answers, vendors: vendors(answers))
    }

    @Test("three vendors on one address: each name, with that address and the three vendors")
    func oneAddressForAll() {
        let answers = ["a.one.test": [Self.x], "b.two.test": [Self.x], "c.three.test": [Self.x]]
        let expected = ProbeRunner.SharedAddress(address: Self.x, vendors: ["one.test", "three.test", "two.test"])
        #expect(Self.shared(answers) == answers.mapValues { _ in expected })
    }

    @Test("dodge 1: four vendors, three on one address and the fourth on another: the three are caught")
    func threeOfFour() {
        let answers = [
            "a.one.test": [Self.x], "b.two.test": [Self.x], "c.three.test": [Self.x], "d.four.test": [Self.w],
        ]
        let shared = Self.shared(answers)
        #expect(Set(shared.keys) == ["a.one.test", "b.two.test", "c.three.test"])
        #expect(shared.values.allSatisfy { $0.address == Self.x && $0.vendors.count == 3 })
    }

    @Test("dodge 2: three vendors each answered {a shared address, one of its own}: all three are caught")
    func sharedPlusUnique() {
        let answers = [
            "a.one.test": [Self.y, Self.x], "b.two.test": [Self.x, Self.z], "c.three.test": [Self.w, Self.x],
        ]
        let shared = Self.shared(answers)
        #expect(Set(shared.keys) == Set(answers.keys))
        #expect(shared.values.allSatisfy { $0.address == Self.x })
    }

    @Test(
        "no alarm: two vendors on one address (a CDN edge), overlaps only pairwise, disjoint sets, one vendor's names")
    func noAlarm() {
        #expect(Self.shared(["a.one.test": [Self.x], "b.two.test": [Self.x]]).isEmpty)
        // Every address in exactly two vendors' answers.
        let pairwise = [
            "a.one.test": [Self.x, Self.y], "b.two.test": [Self.y, Self.z], "c.three.test": [Self.z, Self.x],
            "d.four.test": [Self.w],
        ]
        #expect(Self.shared(pairwise).isEmpty)
        #expect(Self.shared(["a.one.test": [Self.x], "b.two.test": [Self.y], "c.three.test": [Self.z]]).isEmpty)
        // Three names of one vendor, and a second vendor, on one address: two vendors.
        let oneSite = ["a.one.test": [Self.x], "b.one.test": [Self.x], "c.one.test": [Self.x], "d.two.test": [Self.x]]
        #expect(Self.shared(oneSite).isEmpty)
        #expect(Self.shared([:]).isEmpty)
        #expect(Self.shared(["a.one.test": [], "b.two.test": [], "c.three.test": []]).isEmpty)
    }

    @Test("a name holding two shared addresses is named with the first in its answer order")
    func firstSharedAddress() {
        let answers = [
            "a.one.test": [Self.y, Self.x], "b.two.test": [Self.x, Self.y], "c.three.test": [Self.x, Self.y],
        ]
        let shared = Self.shared(answers)
        #expect(shared["a.one.test"]?.address == Self.y)
        #expect(shared["b.two.test"]?.address == Self.x)
    }

    @Test("the detail names the rule: a private or local address, or the shared one and its vendors")
    func details() {
        let names = ["a.one.test": [0], "b.two.test": [1], "c.three.test": [2, 3], "portal.test": [4]]
        let answers = [
            "a.one.test": [Self.x], "b.two.test": [Self.x], "c.three.test": [Self.x, Self.z],
            "portal.test": [Self.address("10.9.9.9")],
        ]
        let hijacks = ProbeRunner.hijacks(names: names, answers: answers, vendors: Self.vendors(answers))
        #expect(hijacks.endpoints[4] == "portal.test → 10.9.9.9, a private or local address")
        #expect(
            hijacks.endpoints[2]
                == "c.three.test → 203.0.113.7, one address the names of 3 vendors (one.test, three.test, two.test) "
                + "resolved to")
        #expect(hijacks.endpoints[3] == hijacks.endpoints[2], "every endpoint of the name")
        #expect(hijacks.sharedAddress == [0, 1, 2, 3])
        #expect(ProbeFailure.dnsHijacked(hijacks.endpoints[0]!).description.hasPrefix("DNS hijacked: a.one.test → "))
        #expect(!ProbeFailure.dnsHijacked(hijacks.endpoints[0]!).description.contains("private or local"))
        #expect(
            ProbeFailure.dnsHijacked(hijacks.endpoints[4]!).description
                == "DNS hijacked: portal.test → 10.9.9.9, a private or local address")

        // A private address among a name's answers is named first, even when it also holds a shared one.
        var mixed = answers
        mixed["a.one.test"] = [Self.address("192.168.1.1"), Self.x]
        let first = ProbeRunner.hijacks(names: names, answers: mixed, vendors: Self.vendors(mixed))
        #expect(first.endpoints[0] == "a.one.test → 192.168.1.1, a private or local address")
        #expect(first.sharedAddress == [1, 2, 3], "b, c (and a) still share 203.0.113.7: three vendors")

        let none = ProbeRunner.hijacks(
            names: ["a.one.test": [0], "b.two.test": [1]], answers: ["a.one.test": [Self.x], "b.two.test": [Self.x]],
            vendors: ["a.one.test": "one.test", "b.two.test": "two.test"])
        #expect(none == ProbeRunner.Hijacks())
    }

    @Test("a shared address decides: noInternet(dnsHijacked) though the fourth vendor answered, at any threshold")
    func sharedAddressVerdict() {
        let urls = (1...4).map { "http://e\($0).v\($0).test/generate_204" }
        for threshold in [25.0, 50, 100] {
            var tally = CheckTally(endpoints: urls.map(DNSHijackTests.endpoint), successThreshold: threshold)
            for index in 0..<3 { tally.markHijacked(index, "shared", sharedAddress: true) }
            for index in urls.indices { tally.attemptStarted(index, at: clock.now) }
            _ = tally.record(3, DNSHijackTests.answer(urls[3], 204), at: clock.now, mayRetry: true)
            #expect(!tally.isDecided, "the fourth's success doesn't end the check (\(threshold) %)")
            for index in 0..<3 {
                _ = tally.record(index, DNSHijackTests.answer(urls[index], 204), at: clock.now, mayRetry: true)
            }
            #expect(tally.isDecided)
            #expect(tally.verdict == .noInternet(.dnsHijacked), "\(threshold) %")
        }

        // A redirect still names the portal.
        var tally = CheckTally(endpoints: urls.map(DNSHijackTests.endpoint), successThreshold: 50)
        for index in 0..<3 { tally.markHijacked(index, "shared", sharedAddress: true) }
        for index in urls.indices { tally.attemptStarted(index, at: clock.now) }
        _ = tally.record(
            0, DNSHijackTests.answer(urls[0], 302, location: "http://portal.test/login"), at: clock.now, mayRetry: true)
        for index in 1..<4 {
            _ = tally.record(index, DNSHijackTests.answer(urls[index], 204), at: clock.now, mayRetry: true)
        }
        #expect(tally.verdict == .captivePortal(loginURL: URL(string: "http://portal.test/login")!))

        // A private address alone leaves the threshold to rule (the documented rule).
        var privateOnly = CheckTally(endpoints: urls.map(DNSHijackTests.endpoint), successThreshold: 25)
        privateOnly.markHijacked(0, "e1.v1.test → 10.9.9.9, a private or local address")
        for index in urls.indices { privateOnly.attemptStarted(index, at: clock.now) }
        for index in urls.indices {
            _ = privateOnly.record(index, DNSHijackTests.answer(urls[index], 204), at: clock.now, mayRetry: true)
        }
        #expect(privateOnly.verdict == .online)
    }
}
