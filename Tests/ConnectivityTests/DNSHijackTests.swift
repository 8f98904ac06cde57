import Foundation
import Reachability
import Testing

@testable import Connectivity

/// DNS hijack detection's pure parts: which addresses no public server has, and
/// what a hijacked endpoint does to the verdict.
@Suite struct DNSHijackTests {
    let clock = ContinuousClock()

    @Test(
        "isPrivateOrLocal: RFC 1918, CGNAT, loopback, link-local, unspecified, ULA, and their mapped forms",
        arguments: [
            ("10.0.0.1", true), ("10.255.255.255", true), ("172.16.0.1", true), ("172.31.255.254", true),
            ("172.32.0.1", false), ("172.15.255.255", false), ("192.168.1.1", true), ("192.169.0.1", false),
            ("100.64.0.1", true), ("100.127.255.255", true), ("100.128.0.1", false), ("100.63.255.255", false),
            ("127.0.0.1", true), ("169.254.1.1", true), ("0.0.0.0", true), ("8.8.8.8", false),
            ("192.0.2.1", false), ("142.250.0.1", false), ("::", true), ("::1", true), ("fc00::1", true),
            ("fdff::1", true), ("fe80::1", true), ("febf::1", true), ("fec0::1", false), ("2001:db8::1", false),
            ("2606:4700::1111", false), ("::ffff:10.1.2.3", true), ("::ffff:8.8.8.8", false),
        ])
    func privateOrLocal(_ text: String, _ expected: Bool) throws {
        #expect(try IPAddress(text).isPrivateOrLocal == expected, "\(text)")
    }

    static func endpoint(_ url: String) -> ConnectivityEndpoint {
        ConnectivityEndpoint(url: URL(string: url)!, expectation: .status(204))
    }

    static func answer(_ url: String, _ status: Int, location: String? = nil) -> AttemptOutcome {
        .answered(
            ProbeResponse(
                url: URL(string: url)!, status: status,
                headers: location.map { [.init(name: "Location", value: $0)] } ?? []))
    }

    func tally(_ urls: [String], hijacked: [Int]) -> CheckTally {
        var tally = CheckTally(endpoints: urls.map(Self.endpoint), successThreshold: 50)
        for index in hijacked { tally.markHijacked(index, "check.test → 10.9.9.9") }
        for index in urls.indices { tally.attemptStarted(index, at: clock.now) }
        return tally
    }

    @Test("a hijacked endpoint that answers as expected is not a success: noInternet(dnsHijacked)")
    func expectedAnswerFromHijackedAddress() {
        let url = "http://check.test/generate_204"
        var tally = tally([url], hijacked: [0])
        _ = tally.record(0, Self.answer(url, 204), at: clock.now, mayRetry: true)
        #expect(tally.verdict == .noInternet(.dnsHijacked))
        #expect(tally.results.first?.isValid == false)
        #expect(tally.results.first?.failure == .dnsHijacked("check.test → 10.9.9.9"))
        #expect(tally.results.first?.httpStatus == 204)
    }

    @Test("a hijacked plain-HTTP endpoint that redirects: captivePortal with the login URL")
    func redirectFromHijackedAddress() {
        let url = "http://check.test/generate_204"
        var tally = tally([url], hijacked: [0])
        _ = tally.record(0, Self.answer(url, 302, location: "http://10.9.9.9/login"), at: clock.now, mayRetry: true)
        #expect(tally.verdict == .captivePortal(loginURL: URL(string: "http://10.9.9.9/login")!))
    }

    @Test("a transport failure of a hijacked endpoint is dnsHijacked, not retried, and names the reason")
    func refusedAtHijackedAddress() {
        let url = "http://check.test/generate_204"
        var tally = tally([url, "http://other.test/generate_204"], hijacked: [0])
        let retriedHijacked = tally.record(0, .failed(.connectionRefused), at: clock.now, mayRetry: true)
        let retriedOther = tally.record(1, .failed(.connectionRefused), at: clock.now, mayRetry: true)
        #expect(!retriedHijacked, "no retry")
        #expect(retriedOther, "a normal retry")
        _ = tally.record(1, .failed(.connectionRefused), at: clock.now, mayRetry: true)
        #expect(tally.verdict == .noInternet(.dnsHijacked), "hijacking explains the other failures")
        #expect(tally.results.first?.failure?.description.contains("check.test → 10.9.9.9") == true)
    }

    @Test("the threshold still rules: one hijacked of two at 50 %, the other healthy, is online")
    func thresholdWithOneHijacked() {
        let urls = ["http://check.test/generate_204", "http://other.test/generate_204"]
        var tally = tally(urls, hijacked: [0])
        _ = tally.record(1, Self.answer(urls[1], 204), at: clock.now, mayRetry: true)
        _ = tally.record(0, Self.answer(urls[0], 204), at: clock.now, mayRetry: true)
        #expect(tally.verdict == .online)
        #expect(tally.succeeded == 1)
    }
}

/// Strict mode: online needs two vendors' expected answers.
@Suite struct StrictModeTests {
    let clock = ContinuousClock()

    func tally(_ urls: [String]) -> CheckTally {
        var tally = CheckTally(
            endpoints: urls.map(DNSHijackTests.endpoint), successThreshold: 50, requiresTwoVendors: true)
        for index in urls.indices { tally.attemptStarted(index, at: clock.now) }
        return tally
    }

    @Test(
        "a vendor is the host's last two labels, or the address",
        arguments: [
            ("http://connectivitycheck.gstatic.com/generate_204", "gstatic.com"),
            ("https://www.google.com/generate_204", "google.com"), ("http://captive.apple.com/x", "apple.com"),
            ("http://localhost/x", "localhost"), ("http://192.0.2.1:8080/x", "192.0.2.1"), ("http://[::1]/x", "::1"),
            ("http://A.Example.COM./x", "example.com"),
        ])
    func vendor(_ url: String, _ expected: String) {
        #expect(CheckTally.vendor(of: URL(string: url)!) == expected)
    }

    @Test("one vendor answering is limited(unconfirmed); a second vendor's answer makes it online")
    func twoVendors() {
        let urls = ["http://a.one.test/generate_204", "http://b.one.test/generate_204", "http://two.test/generate_204"]
        var tally = tally(urls)
        _ = tally.record(0, DNSHijackTests.answer(urls[0], 204), at: clock.now, mayRetry: true)
        _ = tally.record(1, DNSHijackTests.answer(urls[1], 204), at: clock.now, mayRetry: true)
        #expect(!tally.isDecided, "two of three meets 50 %, but one vendor: wait for the third")
        _ = tally.record(2, .failed(.timedOut), at: clock.now, mayRetry: true)
        #expect(tally.verdict == .limited(.unconfirmed))

        var second = self.tally(urls)
        _ = second.record(0, DNSHijackTests.answer(urls[0], 204), at: clock.now, mayRetry: true)
        _ = second.record(2, DNSHijackTests.answer(urls[2], 204), at: clock.now, mayRetry: true)
        #expect(second.isDecided)
        #expect(second.verdict == .online)
    }

    @Test("one vendor let through, the other redirected: captivePortal")
    func portalLettingOneVendorThrough() {
        let urls = ["http://one.test/generate_204", "http://two.test/generate_204"]
        var tally = tally(urls)
        _ = tally.record(0, DNSHijackTests.answer(urls[0], 204), at: clock.now, mayRetry: true)
        _ = tally.record(
            1, DNSHijackTests.answer(urls[1], 302, location: "http://portal.test/login"), at: clock.now, mayRetry: true)
        #expect(tally.verdict == .captivePortal(loginURL: URL(string: "http://portal.test/login")!))
    }

    @Test("the configuration needs endpoints of two vendors")
    func configurationNeedsTwoVendors() throws {
        var configuration = ConnectivityConfiguration(
            endpoints: [DNSHijackTests.endpoint("http://a.one.test/x"), DNSHijackTests.endpoint("http://b.one.test/y")])
        configuration.requiresTwoVendors = true
        #expect(throws: ConnectivityError.self) { try configuration.validate() }
        configuration.endpoints.append(DNSHijackTests.endpoint("http://two.test/z"))
        try configuration.validate()
        #expect(try ConnectivityConfiguration.recommended.validate() == ())
        var defaults = ConnectivityConfiguration.recommended
        defaults.requiresTwoVendors = true
        try defaults.validate()
    }
}
