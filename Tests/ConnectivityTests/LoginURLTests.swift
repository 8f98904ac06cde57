import Foundation
import Testing

@testable import Connectivity

/// The login URL a portal hands us — a redirect's `Location`, or the RFC 8908 API's
/// `user-portal-url` and `venue-info-url` — may be opened in a browser, so any
/// on-path server could steer it: only http(s), no credentials, a real host, and
/// a bounded length are taken.
@Suite struct LoginURLTests {
    let clock = ContinuousClock()
    static let probe = "http://check.test/generate_204"

    /// A URL text as a test argument, shown by its first 60 characters (one is 60 KB).
    struct Text: Sendable, CustomTestStringConvertible {
        var value: String
        var testDescription: String {
            value.count > 60 ? "\(value.prefix(60))… (\(value.utf8.count) bytes)" : value
        }
    }

    /// Locations a hostile portal could send, each of which must not become the login URL.
    static let hostileLocations: [Text] = [
        "javascript:alert(1)",
        "JavaScript:alert(document.cookie)",
        "file:///etc/passwd",
        "data:text/html,<script>alert(1)</script>",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "ftp://portal.test/login",
        "vbscript:msgbox(1)",
        "http://user:pass@10.9.9.9/login",
        "http://user@10.9.9.9/login",
        "http://:pass@10.9.9.9/login",
        "https://user:pass@portal.test/",
        "http:///login",
        "http://a%20b/login",
        "http://a%01b/login",
        "http://10.9.9.9/" + String(repeating: "a", count: 60 * 1024),
        "//user:pass@portal.test/login",
    ].map(Text.init)

    /// The tally of one plain-HTTP probe answered `status` with `location`.
    func verdict(status: Int = 302, location: String) -> Verdict {
        var tally = CheckTally(
            endpoints: [ConnectivityEndpoint(url: URL(string: Self.probe)!, expectation: .status(204))],
            successThreshold: 50)
        tally.attemptStarted(0, at: clock.now)
        let response = ProbeResponse(
            url: URL(string: Self.probe)!, status: status, headers: [.init(name: "Location", value: location)])
        _ = tally.record(0, .answered(response), at: clock.now, mayRetry: true)
        return tally.verdict
    }

    @Test("a hostile Location is not the login URL: the probe URL is", arguments: hostileLocations)
    func hostileLocationFallsBackToTheProbe(location: Text) {
        let verdict = verdict(location: location.value)
        let fellBack = verdict == .captivePortal(loginURL: URL(string: Self.probe)!)
        #expect(fellBack, "got \(verdict.description.prefix(200))")
    }

    @Test(
        "http(s) Locations, absolute or relative, are the login URL",
        arguments: [
            ("http://10.9.9.9/login", "http://10.9.9.9/login"),
            ("https://portal.test/login?x=1&y=%20", "https://portal.test/login?x=1&y=%20"),
            ("HTTP://Portal.test:8080/login", "HTTP://Portal.test:8080/login"),
            ("/login", "http://check.test/login"),
            ("login.html", "http://check.test/login.html"),
            ("//portal.example/x", "http://portal.example/x"),
            ("?next=1", "http://check.test/generate_204?next=1"),
        ])
    func plainLocations(location: String, expected: String) {
        #expect(verdict(location: location) == .captivePortal(loginURL: URL(string: expected)!))
    }

    @Test("a hostile Location on one probe doesn't hide a good one on another")
    func goodLocationElsewhereWins() {
        let other = "http://other.test/ok"
        var tally = CheckTally(
            endpoints: [
                ConnectivityEndpoint(url: URL(string: Self.probe)!, expectation: .status(204)),
                ConnectivityEndpoint(url: URL(string: other)!, expectation: .status(204)),
            ], successThreshold: 50)
        tally.attemptStarted(0, at: clock.now)
        tally.attemptStarted(1, at: clock.now)
        _ = tally.record(
            0,
            .answered(
                ProbeResponse(
                    url: URL(string: Self.probe)!, status: 302,
                    headers: [.init(name: "Location", value: "javascript:alert(1)")])), at: clock.now, mayRetry: true)
        _ = tally.record(
            1,
            .answered(
                ProbeResponse(
                    url: URL(string: other)!, status: 302,
                    headers: [.init(name: "Location", value: "http://portal.test/login")])), at: clock.now,
            mayRetry: true)
        #expect(tally.verdict == .captivePortal(loginURL: URL(string: "http://portal.test/login")!))
    }

    /// The RFC 8908 API's URL fields under the same rule.
    static let hostileAPIURLs: [Text] =
        hostileLocations.filter { $0.value.hasPrefix("http") }
        + [
            "javascript:alert(1)", "file:///etc/passwd", "data:text/html,x", "/relative/login",
            "https://user:pass@portal.test/login", "https://user@portal.test/login",
        ].map(Text.init)

    static func apiJSON(_ field: String, _ url: String) -> [UInt8] {
        let object: [String: Any] = ["captive": true, field: url]
        return (try? JSONSerialization.data(withJSONObject: object)).map { Array($0) } ?? []
    }

    @Test("the API's user-portal-url and venue-info-url under the same rule", arguments: hostileAPIURLs)
    func hostileAPIURLsAreIgnored(url: Text) throws {
        let portal = try #require(CaptivePortalAPIResponse(json: Self.apiJSON("user-portal-url", url.value)))
        #expect(portal.captive)
        let portalIgnored = portal.userPortalURL == nil
        #expect(portalIgnored, "kept \(String(describing: portal.userPortalURL).prefix(200))")
        let venue = try #require(CaptivePortalAPIResponse(json: Self.apiJSON("venue-info-url", url.value)))
        let venueIgnored = venue.venueInfoURL == nil
        #expect(venueIgnored, "kept \(String(describing: venue.venueInfoURL).prefix(200))")
    }

    @Test("an API portal URL that is ignored leaves the fallbacks: the intercepted probe, else the API URL")
    func ignoredAPIPortalURLFallsBack() throws {
        let api = URL(string: "https://api.test/captive")!
        let response = try #require(
            CaptivePortalAPIResponse(json: Self.apiJSON("user-portal-url", "http://user:pass@evil.test/login")))
        var tally = CheckTally(
            endpoints: [ConnectivityEndpoint(url: URL(string: "https://secure.test/")!, expectation: .status(204))],
            successThreshold: 50, apiURL: api)
        tally.recordAPI(.answered(response))
        #expect(tally.verdict == .captivePortal(loginURL: api))

        var intercepted = CheckTally(
            endpoints: [ConnectivityEndpoint(url: URL(string: Self.probe)!, expectation: .status(204))],
            successThreshold: 50, apiURL: api)
        intercepted.attemptStarted(0, at: clock.now)
        _ = intercepted.record(
            0,
            .answered(
                ProbeResponse(
                    url: URL(string: Self.probe)!, status: 302,
                    headers: [.init(name: "Location", value: "javascript:alert(1)")])), at: clock.now, mayRetry: true)
        intercepted.recordAPI(.answered(response))
        #expect(intercepted.verdict == .captivePortal(loginURL: URL(string: Self.probe)!))
    }

    @Test("good API URLs are kept")
    func goodAPIURLs() throws {
        let response = try #require(
            CaptivePortalAPIResponse(
                json: Array(
                    #"{"captive": true, "user-portal-url": "https://portal.test/login?a=1", "venue-info-url": "http://10.9.9.9:8080/venue"}"#
                        .utf8)))
        #expect(response.userPortalURL == URL(string: "https://portal.test/login?a=1"))
        #expect(response.venueInfoURL == URL(string: "http://10.9.9.9:8080/venue"))
    }
}
