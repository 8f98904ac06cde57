import Foundation
import Testing

@testable import Connectivity

/// The check's bookkeeping: threshold, retries, early decisions, verdicts.
@Suite struct CheckTallyTests {
    let clock = ContinuousClock()

    static func endpoint(_ url: String, _ expectation: ConnectivityEndpoint.Expectation = .status(204))
        -> ConnectivityEndpoint
    {
        ConnectivityEndpoint(url: URL(string: url)!, expectation: expectation)
    }

    static func answer(_ url: String, _ status: Int, body: String = "", location: String? = nil) -> AttemptOutcome {
        var headers: [ProbeResponse.HTTPHeader] = []
        if let location { headers.append(.init(name: "Location", value: location)) }
        return .answered(
            ProbeResponse(url: URL(string: url)!, status: status, headers: headers, body: Array(body.utf8)))
    }

    let http = "http://check.test/generate_204"
    let http2 = "http://other.test/ok"
    let https = "https://secure.test/generate_204"

    func tally(_ endpoints: [ConnectivityEndpoint], threshold: Double = 50, api: URL? = nil) -> CheckTally {
        var tally = CheckTally(endpoints: endpoints, successThreshold: threshold, apiURL: api)
        for index in endpoints.indices { tally.attemptStarted(index, at: clock.now) }
        return tally
    }

    @Test(arguments: [
        (0.0, 4, 1), (1.0, 4, 1), (25.0, 4, 1), (26.0, 4, 2), (50.0, 4, 2), (50.0, 3, 2), (75.0, 4, 3),
        (100.0, 4, 4), (100.0, 1, 1), (33.4, 3, 2),
    ])
    func requiredFollowsThePercentageAndIsAtLeastOne(threshold: Double, count: Int, required: Int) {
        let endpoints = (0..<count).map { Self.endpoint("http://e\($0).test/") }
        #expect(CheckTally(endpoints: endpoints, successThreshold: threshold).required == required)
    }

    @Test func healthyAnswerIsOnline() {
        var tally = tally([Self.endpoint(http)])
        do {
            let retry = tally.record(0, Self.answer(http, 204), at: clock.now, mayRetry: true)
            #expect(!retry)
        }
        #expect(tally.isDecided)
        #expect(tally.verdict == .online)
        #expect(tally.results.first?.isValid == true)
        #expect(tally.results.first?.httpStatus == 204)
    }

    @Test func redirectIsACaptivePortalWithTheLocation() {
        var tally = tally([Self.endpoint(http)])
        _ = tally.record(
            0, Self.answer(http, 302, location: "http://portal.test/login?x=1"), at: clock.now, mayRetry: true)
        #expect(tally.verdict == .captivePortal(loginURL: URL(string: "http://portal.test/login?x=1")!))
        #expect(tally.results.first?.location == "http://portal.test/login?x=1")
    }

    @Test func relativeLocationIsResolvedAgainstTheProbe() {
        var tally = tally([Self.endpoint(http)])
        _ = tally.record(0, Self.answer(http, 307, location: "/login"), at: clock.now, mayRetry: true)
        #expect(tally.verdict == .captivePortal(loginURL: URL(string: "http://check.test/login")!))
    }

    @Test func loginPageOn204URLAnd511AreCaptivePortalsAtTheProbeURL() {
        for status in [200, 511] {
            var tally = tally([Self.endpoint(http)])
            _ = tally.record(0, Self.answer(http, status, body: "<html>Log in</html>"), at: clock.now, mayRetry: true)
            #expect(tally.verdict == .captivePortal(loginURL: URL(string: http)!), "status \(status)")
        }
    }

    @Test func wrongAnswerOverHTTPSIsNotAPortal() {
        var tally = tally([Self.endpoint(https)])
        _ = tally.record(0, Self.answer(https, 302, location: "http://portal.test/"), at: clock.now, mayRetry: true)
        #expect(tally.verdict == .noInternet(.unexpectedResponse))
    }

    @Test func serverErrorOnPlainHTTPIsNoInternetNotAPortal() {
        var tally = tally([Self.endpoint(http)])
        _ = tally.record(0, Self.answer(http, 503), at: clock.now, mayRetry: true)
        #expect(tally.verdict == .noInternet(.unexpectedResponse))
    }

    @Test func oneFastFailureIsRetriedAndDoesNotDecideAlone() {
        var tally = tally([Self.endpoint(http)])
        do {
            let retry = tally.record(0, .failed(.connectionRefused), at: clock.now, mayRetry: true)
            #expect(retry)
        }
        #expect(!tally.isDecided)
        tally.attemptStarted(0, at: clock.now)
        do {
            let retry = tally.record(0, .failed(.connectionRefused), at: clock.now, mayRetry: true)
            #expect(!retry)
        }
        #expect(tally.isDecided)
        #expect(tally.verdict == .noInternet(.connectionRefused))
        #expect(tally.results.first?.attempts == 2)
    }

    @Test func timeoutsAreNotRetried() {
        var tally = tally([Self.endpoint(http), Self.endpoint(http2)], threshold: 100)
        do {
            let retry = tally.record(0, .failed(.timedOut), at: clock.now, mayRetry: true)
            #expect(!retry)
        }
        // Threshold unreachable, but one failure alone doesn't decide.
        #expect(!tally.isDecided)
        do {
            let retry = tally.record(1, .failed(.timedOut), at: clock.now, mayRetry: true)
            #expect(!retry)
        }
        #expect(tally.isDecided)
        #expect(tally.verdict == .noInternet(.timedOut))
    }

    @Test func noRetryWhenTheDeadlineIsTooClose() {
        var tally = tally([Self.endpoint(http)])
        do {
            let retry = tally.record(0, .failed(.connectionRefused), at: clock.now, mayRetry: false)
            #expect(!retry)
        }
        #expect(tally.isDecided)
    }

    @Test func oneDownOneHealthyAtFiftyPercentIsOnline() {
        var tally = tally([Self.endpoint(http), Self.endpoint(http2)], threshold: 50)
        do {
            let retry = tally.record(0, .failed(.connectionRefused), at: clock.now, mayRetry: true)
            #expect(retry)
        }
        _ = tally.record(1, Self.answer(http2, 204), at: clock.now, mayRetry: true)
        #expect(tally.isDecided)
        #expect(tally.verdict == .online)
    }

    @Test func thresholdMetStopsEarly() {
        let endpoints = (0..<4).map { Self.endpoint("http://e\($0).test/") }
        var tally = tally(endpoints, threshold: 50)
        _ = tally.record(0, Self.answer("http://e0.test/", 204), at: clock.now, mayRetry: true)
        #expect(!tally.isDecided)
        _ = tally.record(3, Self.answer("http://e3.test/", 204), at: clock.now, mayRetry: true)
        #expect(tally.isDecided)
        tally.finishOpen(with: .cancelled, at: clock.now)
        #expect(tally.verdict == .online)
        #expect(tally.results.filter { $0.failure == .cancelled }.count == 2)
    }

    @Test func thresholdMetOverPlainHTTPAloneWaitsForHTTPSAndBlockedHTTPSIsLimited() {
        let plain = (0..<4).map { "http://e\($0).test/" }
        let secure = ["https://s0.test/", "https://s1.test/"]
        var tally = tally((plain + secure).map { Self.endpoint($0) }, threshold: 50)
        for (index, url) in plain.enumerated() {
            _ = tally.record(index, Self.answer(url, 204), at: clock.now, mayRetry: true)
        }
        #expect(!tally.isDecided, "4 of 6 is over 50 %, but no HTTPS endpoint has answered yet")
        _ = tally.record(4, .failed(.tlsFailed("x")), at: clock.now, mayRetry: false)
        _ = tally.record(5, .failed(.tlsFailed("x")), at: clock.now, mayRetry: false)
        #expect(tally.isDecided)
        #expect(tally.verdict == .limited(.httpsBlocked))
    }

    @Test func bothSchemesAnsweringIsOnline() {
        var tally = tally([Self.endpoint(http), Self.endpoint(http2), Self.endpoint(https)], threshold: 50)
        _ = tally.record(0, Self.answer(http, 204), at: clock.now, mayRetry: true)
        _ = tally.record(1, Self.answer(http2, 204), at: clock.now, mayRetry: true)
        #expect(!tally.isDecided)
        _ = tally.record(2, Self.answer(https, 204), at: clock.now, mayRetry: true)
        #expect(tally.isDecided)
        #expect(tally.verdict == .online)
    }

    @Test func failuresNeverEndACheckEarly() {
        // The second endpoint might still be the redirect that names the portal.
        var tally = tally([Self.endpoint(http), Self.endpoint(http2)], threshold: 100)
        _ = tally.record(0, .failed(.timedOut), at: clock.now, mayRetry: true)
        #expect(!tally.isDecided)
        _ = tally.record(1, Self.answer(http2, 302, location: "http://portal.test/"), at: clock.now, mayRetry: true)
        #expect(tally.isDecided)
        #expect(tally.verdict == .captivePortal(loginURL: URL(string: "http://portal.test/")!))
    }

    @Test func httpFineHttpsBlockedIsLimited() {
        var tally = tally([Self.endpoint(http), Self.endpoint(https)], threshold: 100)
        _ = tally.record(0, Self.answer(http, 204), at: clock.now, mayRetry: true)
        _ = tally.record(1, .failed(.tlsFailed("bad certificate")), at: clock.now, mayRetry: false)
        #expect(tally.verdict == .limited(.httpsBlocked))
    }

    @Test func httpsFineHttpBlockedIsLimited() {
        var tally = tally([Self.endpoint(http), Self.endpoint(https)], threshold: 100)
        _ = tally.record(0, .failed(.connectionRefused), at: clock.now, mayRetry: false)
        _ = tally.record(1, Self.answer(https, 204), at: clock.now, mayRetry: false)
        #expect(tally.verdict == .limited(.httpBlocked))
    }

    @Test func belowThresholdIsLimited() {
        let endpoints = (0..<3).map { Self.endpoint("http://e\($0).test/") }
        var tally = tally(endpoints, threshold: 100)
        _ = tally.record(0, Self.answer("http://e0.test/", 204), at: clock.now, mayRetry: false)
        _ = tally.record(1, .failed(.timedOut), at: clock.now, mayRetry: false)
        _ = tally.record(2, .failed(.timedOut), at: clock.now, mayRetry: false)
        #expect(tally.verdict == .limited(.belowThreshold(succeeded: 1, required: 3)))
    }

    @Test func captiveAPIIsAuthoritativeWhenCaptive() {
        let api = URL(string: "https://api.test/captive")!
        var tally = tally([Self.endpoint(http)], api: api)
        _ = tally.record(0, Self.answer(http, 204), at: clock.now, mayRetry: true)
        #expect(!tally.isDecided, "the API has not answered yet")
        tally.recordAPI(
            .answered(CaptivePortalAPIResponse(captive: true, userPortalURL: URL(string: "https://login.test/")!)))
        #expect(tally.isDecided)
        #expect(tally.verdict == .captivePortal(loginURL: URL(string: "https://login.test/")!))
    }

    @Test func captiveAPISayingNotCaptiveLeavesItToTheProbes() {
        var tally = tally([Self.endpoint(http)], api: URL(string: "https://api.test/captive")!)
        tally.recordAPI(.answered(CaptivePortalAPIResponse(captive: false)))
        _ = tally.record(0, Self.answer(http, 204), at: clock.now, mayRetry: true)
        #expect(tally.isDecided)
        #expect(tally.verdict == .online)
    }

    @Test func captiveAPIWithoutPortalURLFallsBackToTheAPIURL() {
        let api = URL(string: "https://api.test/captive")!
        var tally = tally([Self.endpoint(https)], api: api)
        tally.recordAPI(.answered(CaptivePortalAPIResponse(captive: true)))
        #expect(tally.isDecided)
        #expect(tally.verdict == .captivePortal(loginURL: api))
    }

    @Test func deadlineFinishesOpenEndpointsAsTimedOut() {
        var tally = tally([Self.endpoint(http), Self.endpoint(http2)])
        tally.finishOpen(with: .timedOut, at: clock.now)
        #expect(tally.isDecided)
        #expect(tally.verdict == .noInternet(.timedOut))
        #expect(tally.results.count == 2)
    }

    @Test func dominantReasonIsTheMostCommonFailure() {
        func result(_ failure: ProbeFailure) -> EndpointResult {
            EndpointResult(
                url: URL(string: "http://x.test/")!, isValid: false, httpStatus: nil, location: nil, failure: failure,
                mismatch: nil, duration: .zero, attempts: 1)
        }
        #expect(
            CheckTally.dominantReason([result(.timedOut), result(.timedOut), result(.connectionRefused)]) == .timedOut)
        #expect(CheckTally.dominantReason([result(.timedOut), result(.connectionRefused)]) == .connectionRefused)
        #expect(CheckTally.dominantReason([result(.nameResolutionFailed("x"))]) == .nameResolutionFailed)
        #expect(CheckTally.dominantReason([]) == .timedOut)
    }
}
