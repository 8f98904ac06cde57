import Foundation
import Testing

@testable import Connectivity

/// Expectations, configuration validation and the RFC 8908 JSON.
@Suite struct ExpectationTests {
    static func response(_ status: Int, _ body: String = "", headers: [(String, String)] = [], truncated: Bool = false)
        -> ProbeResponse
    {
        ProbeResponse(
            url: URL(string: "http://x.test/")!, status: status,
            headers: headers.map { ProbeResponse.HTTPHeader(name: $0.0, value: $0.1) }, body: Array(body.utf8),
            isBodyTruncated: truncated)
    }

    @Test func status() {
        #expect(ConnectivityEndpoint.Expectation.status(204).check(Self.response(204)) == nil)
        #expect(ConnectivityEndpoint.Expectation.status(204).check(Self.response(200)) != nil)
    }

    @Test func bodyEqualsTrimsWhitespaceAndRejectsTruncation() {
        let expectation = ConnectivityEndpoint.Expectation.bodyEquals("Microsoft Connect Test")
        #expect(expectation.check(Self.response(200, "Microsoft Connect Test\r\n")) == nil)
        #expect(expectation.check(Self.response(200, "Microsoft Connect Test!")) != nil)
        #expect(expectation.check(Self.response(200, "Microsoft Connect Test", truncated: true)) != nil)
        #expect(expectation.check(Self.response(500, "Microsoft Connect Test")) != nil, "needs a 2xx")
    }

    @Test func bodyContainsAndMatches() {
        #expect(
            ConnectivityEndpoint.Expectation.bodyContains("Success").check(Self.response(200, "<b>Success</b>")) == nil)
        #expect(ConnectivityEndpoint.Expectation.bodyContains("Success").check(Self.response(200, "Log in")) != nil)
        #expect(ConnectivityEndpoint.Expectation.bodyMatches("^ok [0-9]+$").check(Self.response(200, "ok 42")) == nil)
        #expect(ConnectivityEndpoint.Expectation.bodyMatches("^ok [0-9]+$").check(Self.response(200, "ok x")) != nil)
    }

    @Test func headerWithAndWithoutValue() {
        let answer = Self.response(204, headers: [("X-Check", "yes")])
        #expect(ConnectivityEndpoint.Expectation.header(name: "x-check", value: nil).check(answer) == nil)
        #expect(ConnectivityEndpoint.Expectation.header(name: "X-Check", value: "yes").check(answer) == nil)
        #expect(ConnectivityEndpoint.Expectation.header(name: "X-Check", value: "no").check(answer) != nil)
        #expect(ConnectivityEndpoint.Expectation.header(name: "X-Other", value: nil).check(answer) != nil)
    }

    @Test func customValidatorDecides() {
        let expectation = ConnectivityEndpoint.Expectation.custom { $0.status == 418 && $0.bodyText == "teapot" }
        #expect(expectation.check(Self.response(418, "teapot")) == nil)
        #expect(expectation.check(Self.response(200, "teapot")) != nil)
    }
}

@Suite struct ConfigurationTests {
    static let good = ConnectivityEndpoint(
        url: URL(string: "http://127.0.0.1:8080/generate_204")!, expectation: .status(204))

    @Test func defaultsAreValidAndMixHTTPAndHTTPS() throws {
        let endpoints = try ConnectivityConfiguration.recommended.validatedEndpoints()
        #expect(endpoints.count == ConnectivityEndpoint.defaults.count)
        #expect(endpoints.contains { $0.isHTTPS })
        #expect(endpoints.contains(where: { !$0.isHTTPS }))
    }

    /// Probes never send a URL's credentials, and endpoint URLs are printed and exported:
    /// such a URL is refused, and the message does not repeat the secret.
    @Test(arguments: [
        "http://user:SECRET@127.0.0.1/generate_204", "https://:SECRET@127.0.0.1/", "http://user@127.0.0.1/",
    ])
    func credentialsInAURLAreRefusedUnprinted(_ text: String) throws {
        let url = try #require(URL(string: text))
        var api = ConnectivityConfiguration.recommended
        api.captivePortalAPI = url
        for configuration in [
            ConnectivityConfiguration(endpoints: [ConnectivityEndpoint(url: url, expectation: .status(204))]), api,
        ] {
            let error = #expect(throws: ConnectivityError.self) { try Connectivity(validating: configuration) }
            #expect(error?.description.contains("user name or password") == true, "\(String(describing: error))")
            #expect(error?.description.contains("SECRET") == false && error?.description.contains("user@") == false)
        }
    }

    @Test func emptyEndpointListIsAConfigurationError() {
        #expect(throws: ConnectivityError.self) { try Connectivity(validating: .init(endpoints: [])) }
    }

    @Test func httpsOnlyKeepsHTTPSAndFailsWithoutAny() throws {
        var configuration = ConnectivityConfiguration.recommended
        configuration.httpsOnly = true
        #expect(try configuration.validatedEndpoints().allSatisfy { $0.isHTTPS })
        configuration.endpoints = [Self.good]
        #expect(throws: ConnectivityError.self) { try configuration.validatedEndpoints() }
    }

    @Test(arguments: [-1.0, 100.5, .nan, .infinity])
    func thresholdOutsidePercentIsRejected(value: Double) {
        #expect(throws: ConnectivityError.self) {
            try ConnectivityConfiguration(endpoints: [Self.good], successThreshold: value).validatedEndpoints()
        }
    }

    @Test(arguments: ["ftp://x.test/", "file:///etc/passwd", "http://", "mailto:a@b.test"])
    func nonHTTPURLsAreRejected(text: String) throws {
        let url = try #require(URL(string: text))
        #expect(throws: ConnectivityError.self) {
            try ConnectivityConfiguration(endpoints: [ConnectivityEndpoint(url: url, expectation: .status(204))])
                .validatedEndpoints()
        }
    }

    @Test func badHeadersPatternsStatusesAndMethodsAreRejected() {
        let url = Self.good.url
        let bad: [ConnectivityEndpoint] = [
            ConnectivityEndpoint(url: url, expectation: .status(204), headers: ["Bad Name": "x"]),
            ConnectivityEndpoint(url: url, expectation: .status(204), headers: ["X": "a\r\nInjected: 1"]),
            ConnectivityEndpoint(url: url, expectation: .status(204), headers: ["": "x"]),
            ConnectivityEndpoint(url: url, expectation: .status(204), headers: ["X": "a\u{1}b"]),
            ConnectivityEndpoint(url: url, expectation: .status(204), headers: ["X": "a\u{7F}"]),
            ConnectivityEndpoint(url: url, expectation: .bodyMatches("([unclosed")),
            ConnectivityEndpoint(url: url, expectation: .status(99)),
            ConnectivityEndpoint(url: url, expectation: .status(1000)),
            ConnectivityEndpoint(url: url, expectation: .status(204), method: "get me"),
            ConnectivityEndpoint(url: url, expectation: .status(204), method: ""),
        ]
        for endpoint in bad {
            #expect(throws: ConnectivityError.self, "\(endpoint)") {
                try ConnectivityConfiguration(endpoints: [endpoint]).validatedEndpoints()
            }
        }
    }

    @Test func timingsAndCountsMustBeSane() {
        var configurations: [ConnectivityConfiguration] = []
        for change in 0..<8 {
            var configuration = ConnectivityConfiguration(endpoints: [Self.good])
            switch change {
            case 0: configuration.probeTimeout = .zero
            case 1: configuration.checkDeadline = .seconds(-1)
            case 2: configuration.maximumBodySize = -1
            case 3: configuration.failuresToGoOffline = 0
            case 4: configuration.pollingInterval = .zero
            case 5: configuration.offlineRetryLimit = .seconds(Int64.max / 2)
            case 6: configuration.probeTimeout = .seconds(8 * 86_400)
            default: configuration.offlineRetryLimit = .milliseconds(10)
            }
            configurations.append(configuration)
        }
        for configuration in configurations {
            #expect(throws: ConnectivityError.self) { try configuration.validatedEndpoints() }
        }
    }

    @Test func trustRootsMustBeAPEMFileOfCertificates() {
        var configuration = ConnectivityConfiguration(endpoints: [Self.good])
        for path in ["/nonexistent/roots.pem", "/etc", "/etc/hostname"] {
            configuration.trustedRootCertificatesPath = path
            #expect(throws: ConnectivityError.self, "\(path)") { try configuration.validatedEndpoints() }
        }
    }
}

@Suite struct CaptivePortalAPITests {
    @Test func parsesRFC8908Fields() throws {
        let json =
            #"{"captive": true, "user-portal-url": "https://login.test/portal", "venue-info-url": "https://venue.test/", "seconds-remaining": 326}"#
        let parsed = try #require(CaptivePortalAPIResponse(json: Array(json.utf8)))
        #expect(parsed.captive)
        #expect(parsed.userPortalURL == URL(string: "https://login.test/portal"))
        #expect(parsed.venueInfoURL == URL(string: "https://venue.test/"))
        #expect(parsed.secondsRemaining == 326)
    }

    @Test(arguments: [
        "", "null", "[]", "{}", #"{"captive": "yes"}"#, #"{"captive": 1}"#, #"{"captive": true"#, "\u{0}",
        String(repeating: "[", count: 100_000),
    ])
    func rejectsWhatIsNotAnObjectWithBooleanCaptive(text: String) {
        #expect(CaptivePortalAPIResponse(json: Array(text.utf8)) == nil)
    }

    @Test func ignoresNonHTTPPortalURLsAndHugeNumbers() throws {
        let json = #"{"captive": false, "user-portal-url": "javascript:alert(1)", "seconds-remaining": 1e300}"#
        let parsed = try #require(CaptivePortalAPIResponse(json: Array(json.utf8)))
        #expect(!parsed.captive)
        #expect(parsed.userPortalURL == nil)
        #expect(parsed.secondsRemaining == nil)
    }

    /// rwbutler's validator protocol, as a program implements it: rejects everything.
    private final class Rejecting: ConnectivityResponseValidator {
        func isResponseValid(url: URL, response: ProbeResponse?, data: Data?) -> Bool { false }
    }

    @Test func aCustomValidatorJudgesEveryEndpointFallbacksIncluded() throws {
        var configuration = ConnectivityConfiguration.recommended
        configuration.fallbackEndpoints = [
            ConnectivityEndpoint(url: URL(string: "https://fallback.example/204")!, expectation: .status(204))
        ]
        let own = try configuration.validatedSettings()
        #expect((own.endpoints + own.fallbacks).allSatisfy { $0.expectation.description != "a custom validator" })
        let custom = try configuration.configureResponseValidator(Rejecting()).validatedSettings()
        #expect((custom.endpoints + custom.fallbacks).count == ConnectivityEndpoint.defaults.count + 1)
        #expect((custom.endpoints + custom.fallbacks).allSatisfy { $0.expectation.description == "a custom validator" })
        #expect(custom.endpoints.map(\.url) == own.endpoints.map(\.url), "each keeps its URL, method and headers")
        // A string mode judges the URLs set as URLs; this package's endpoints keep theirs.
        let strings = try configuration.configureResponseValidation(.containsExpectedResponseString, expected: "x")
            .validatedEndpoints()
        #expect(strings.map(\.expectation.description) == own.endpoints.map(\.expectation.description))
    }

    @Test func rwbutlerConfigurationDropsPlainHTTPURLsOnlyWhileHTTPSOnly() {
        let mixed = ConnectivityConfiguration(connectivityURLs: [
            URL(string: "http://a.example/")!, URL(string: "https://b.example/")!,
        ])
        #expect(mixed.droppingPlainHTTPURLs(true).endpoints.map(\.url) == [URL(string: "https://b.example/")!])
        #expect(mixed.droppingPlainHTTPURLs(false).endpoints.count == 2)
        let recommended = ConnectivityConfiguration.recommended
        #expect(recommended.droppingPlainHTTPURLs(true).endpoints.count == ConnectivityEndpoint.defaults.count)
    }
}
