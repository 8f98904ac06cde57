// rwbutler/Connectivity's URLSession-typed API (module ConnectivityURLSession):
// what a session configuration and `URLRequest`s mean for the probes, against local
// HTTP servers in test namespaces as RwbutlerConnectivityTests does.
import ConnectivityURLSession
import Foundation
import Reachability
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A session configuration as rwbutler code writes one.
private func session(request: TimeInterval, resource: TimeInterval, headers: [String: String]? = nil)
    -> URLSessionConfiguration
{
    let session = URLSessionConfiguration.default
    session.timeoutIntervalForRequest = request
    session.timeoutIntervalForResource = resource
    session.httpAdditionalHeaders = headers
    return session
}

/// A request with a method and a header, as rwbutler 6.1 code builds one.
private func request(_ url: URL, method: String, header: (String, String)) -> URLRequest {
    var request = URLRequest(url: url)
    request.httpMethod = method
    request.setValue(header.1, forHTTPHeaderField: header.0)
    return request
}

/// A validator exactly as rwbutler 6's protocol has it (its test's
/// `MockResponseValidator`, made `final` and `Sendable`): valid for a 200 whose body
/// ends with `z`, recording what it was handed.
private final class RequestValidator: ConnectivityResponseValidator, @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [(URLRequest, URLResponse?)] = []

    func isResponseValid(urlRequest: URLRequest, response: URLResponse?, data: Data?) -> Bool {
        lock.withLock { seen.append((urlRequest, response)) }
        let text = data.flatMap { String(data: $0, encoding: .utf8) } ?? ""
        return (response as? HTTPURLResponse)?.statusCode == 200 && text.hasSuffix("z")
    }

    var calls: [(URLRequest, URLResponse?)] { lock.withLock { seen } }
}

/// A validator of module Connectivity's protocol alone (`ProbeResponseValidator`):
/// valid for a 204.
private final class ProbeOnlyValidator: ProbeResponseValidator {
    func isResponseValid(url: URL, response: ProbeResponse?, data: Data?) -> Bool {
        response?.status == 204
    }
}

extension RwbutlerSuites {
    @Suite("rwbutler/Connectivity's URLSession API: the mapping (no network)")
    struct RwbutlerURLSessionUnitTests {
        @Test(
            "urlSessionConfiguration round-trips the timeouts and headers; values that can't work are ignored or clamped"
        )
        func roundTrip() {
            let connectivity = Connectivity(configuration: ConnectivityConfiguration(pollingIsEnabled: false))
            connectivity.urlSessionConfiguration = session(request: 3, resource: 7, headers: ["X-Session": "a"])
            #expect(connectivity.configuration.probeTimeout == .seconds(3))
            #expect(connectivity.configuration.checkDeadline == .seconds(7))
            let read = connectivity.urlSessionConfiguration
            #expect(read.timeoutIntervalForRequest == 3)
            #expect(read.timeoutIntervalForResource == 7)
            #expect(read.httpAdditionalHeaders?["X-Session"] as? String == "a")

            let ignored = ConnectivityConfiguration.recommended.configureURLSession(
                session(request: 0, resource: .infinity))
            #expect(ignored.probeTimeout == .seconds(5) && ignored.checkDeadline == .seconds(10))
            let clamped = ConnectivityConfiguration.recommended.configureURLSession(
                session(request: 1e12, resource: -1))
            #expect(clamped.probeTimeout == .seconds(7 * 86_400) && clamped.checkDeadline == .seconds(10))
            #expect(Connectivity(configuration: clamped).urlSessionConfiguration.httpAdditionalHeaders == nil)
        }

        @Test(
            "The static urlSessionConfiguration: Connectivity() and (shouldUseHTTPS:) made afterwards start with it"
        )
        func staticDefault() {
            // Process-wide, as rwbutler's: the default is put back.
            defer { Connectivity.rwbutlerSessionDefaults.withLock { $0 = nil } }
            Connectivity.isHTTPSOnly = true
            let before = Connectivity()
            Connectivity.urlSessionConfiguration = session(request: 2, resource: 3, headers: ["X-Static": "s"])
            #expect(Connectivity.urlSessionConfiguration.httpAdditionalHeaders?["X-Static"] as? String == "s")
            for made in [Connectivity(), Connectivity(shouldUseHTTPS: true)] {
                #expect(made.urlSessionConfiguration.httpAdditionalHeaders?["X-Static"] as? String == "s")
                #expect(
                    made.configuration.probeTimeout == .seconds(2) && made.configuration.checkDeadline == .seconds(3))
            }
            // Made before: unchanged (rwbutler's would read it at their next check).
            #expect(before.urlSessionConfiguration.httpAdditionalHeaders == nil)
            #expect(before.configuration.checkDeadline == .seconds(5))
            // This package's own configuration is not rwbutler's: it neither reads nor sets it.
            let recommended = Connectivity(configuration: .recommended)
            #expect(recommended.configuration.checkDeadline == .seconds(10))
            #expect(Connectivity().configuration.probeTimeout == .seconds(2))
            // Timeouts that can't work are ignored: the defaults stand.
            Connectivity.urlSessionConfiguration = session(request: 0, resource: 0)
            #expect(Connectivity().configuration.probeTimeout == .seconds(5))
        }

        @Test(
            "Connectivity(configuration:) sets the static urlSessionConfiguration to the configuration's, as rwbutler's configure(with:)"
        )
        func configurationSetsStatic() {
            defer { Connectivity.rwbutlerSessionDefaults.withLock { $0 = nil } }
            Connectivity.isHTTPSOnly = true
            Connectivity.urlSessionConfiguration = session(request: 2, resource: 3, headers: ["X-Static": "s"])
            // A configuration with a session configuration of its own: the instance has
            // it, and so has the static (rwbutler: Self.urlSessionConfiguration = …).
            let own = Connectivity(
                configuration: ConnectivityConfiguration(
                    urlSessionConfiguration: session(request: 4, resource: 6, headers: ["X-Own": "o"])))
            #expect(own.configuration.probeTimeout == .seconds(4) && own.configuration.checkDeadline == .seconds(6))
            let shared = Connectivity.urlSessionConfiguration
            #expect(shared.timeoutIntervalForRequest == 4 && shared.timeoutIntervalForResource == 6)
            #expect(shared.httpAdditionalHeaders?["X-Own"] as? String == "o")
            let later = Connectivity()
            #expect(later.configuration.probeTimeout == .seconds(4) && later.configuration.checkDeadline == .seconds(6))
            #expect(later.urlSessionConfiguration.httpAdditionalHeaders?["X-Own"] as? String == "o")
            // rwbutler's plain configuration: its default session configuration, which
            // becomes the static's (5 s, no headers); the static set before doesn't apply.
            Connectivity.urlSessionConfiguration = session(request: 2, resource: 3, headers: ["X-Static": "s"])
            for configuration in [ConnectivityConfiguration(), ConnectivityConfiguration(pollingIsEnabled: false)] {
                let made = Connectivity(configuration: configuration)
                #expect(
                    made.configuration.probeTimeout == .seconds(5) && made.configuration.checkDeadline == .seconds(5))
                #expect(made.urlSessionConfiguration.httpAdditionalHeaders == nil)
            }
            #expect(Connectivity.urlSessionConfiguration.timeoutIntervalForRequest == 5)
            #expect(Connectivity.urlSessionConfiguration.httpAdditionalHeaders == nil)
            #expect(Connectivity().configuration.checkDeadline == .seconds(5))
        }

        @Test("rwbutler 6's validator protocol: URLRequest and URLResponse, for its own validators and the package's")
        func requestValidators() throws {
            let url = try #require(URL(string: "https://example.com/check"))
            let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["A": "b"])
            let validator = RequestValidator()
            #expect(
                validator.isResponseValid(urlRequest: URLRequest(url: url), response: response, data: Data("12z".utf8)))
            #expect(
                !validator.isResponseValid(urlRequest: URLRequest(url: url), response: response, data: Data("1".utf8)))
            // Through module Connectivity's requirement (what a check calls): the probe's
            // answer as an HTTPURLResponse to a GET of the URL.
            let probe = ProbeResponse(url: url, status: 200, headers: [.init(name: "X-Check", value: "ok")])
            #expect(validator.isResponseValid(url: url, response: probe, data: Data("z".utf8)))
            let (request, handed) = try #require(validator.calls.last)
            #expect(request.url == url && request.httpMethod == "GET")
            let http = try #require(handed as? HTTPURLResponse)
            #expect(http.statusCode == 200 && http.value(forHTTPHeaderField: "x-check") == "ok")
            // The package's validators answer rwbutler's spelling, and are its protocol's.
            let contains: any ConnectivityResponseValidator = ConnectivityResponseContainsStringValidator()
            #expect(
                contains.isResponseValid(urlRequest: URLRequest(url: url), response: nil, data: Data("Success".utf8)))
            let equals: any ConnectivityResponseValidator = ConnectivityResponseStringEqualityValidator(
                expectedResponse: "a")
            #expect(!equals.isResponseValid(urlRequest: URLRequest(url: url), response: response, data: Data("b".utf8)))
            // It goes where module Connectivity's protocol does.
            let connectivity = Connectivity(
                configuration: ConnectivityConfiguration().configureResponseValidator(validator))
            #expect(connectivity.validationMode == .custom && connectivity.responseValidator === validator)
        }

        @Test(
            "responseValidator is of rwbutler's protocol's type here: assignable to ConnectivityResponseValidator, as there"
        )
        func responseValidatorType() throws {
            let url = try #require(URL(string: "https://example.com/check"))
            let connectivity = Connectivity()
            // rwbutler's default: the contains validator, of rwbutler's type.
            let initial: any ConnectivityResponseValidator = connectivity.responseValidator
            #expect(initial is ConnectivityResponseContainsStringValidator)
            let validator = RequestValidator()
            connectivity.responseValidator = validator
            connectivity.validationMode = .custom
            let read: any ConnectivityResponseValidator = connectivity.responseValidator
            #expect(read === validator)
            #expect(connectivity.probeResponseValidator === validator)
            // Another mode: that mode's validator (rwbutler's updateValidator), rwbutler's type too.
            connectivity.validationMode = .equalsExpectedResponseString
            let mode: any ConnectivityResponseValidator = connectivity.responseValidator
            #expect(mode is ConnectivityResponseStringEqualityValidator)

            // One of module Connectivity's protocol alone comes back wrapped, answering
            // rwbutler's requirement; set back, it is the validator itself again.
            let probeOnly = ProbeOnlyValidator()
            let configured = Connectivity(
                configuration: ConnectivityConfiguration().configureResponseValidator(probeOnly))
            let wrapped: any ConnectivityResponseValidator = configured.responseValidator
            let ok = HTTPURLResponse(url: url, statusCode: 204, httpVersion: "HTTP/1.1", headerFields: [:])
            let bad = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])
            #expect(wrapped.isResponseValid(urlRequest: URLRequest(url: url), response: ok, data: nil))
            #expect(!wrapped.isResponseValid(urlRequest: URLRequest(url: url), response: bad, data: nil))
            configured.responseValidator = wrapped
            #expect(configured.probeResponseValidator === probeOnly)
            #expect(configured.validationMode == .custom)
        }

        @Test("rwbutler's initializers with urlSessionConfiguration: and connectivityURLRequests:")
        func initializers() throws {
            let url = try #require(URL(string: "https://status.example.com/ping"))
            let withSession = ConnectivityConfiguration(urlSessionConfiguration: session(request: 2, resource: 4))
            #expect(withSession.probeTimeout == .seconds(2) && withSession.checkDeadline == .seconds(4))
            #expect(withSession.endpoints.map(\.url) == ConnectivityConfiguration.defaultConnectivityURLs)
            // rwbutler 6.1's: its default session configuration, 5 s and 5 s.
            let withRequests = ConnectivityConfiguration(
                connectivityURLRequests: [request(url, method: "POST", header: ("X-Request", "r"))])
            #expect(withRequests.probeTimeout == .seconds(5) && withRequests.checkDeadline == .seconds(5))
            let connectivity = Connectivity(configuration: withRequests)
            let requests = connectivity.connectivityURLRequests
            #expect(requests.map(\.url) == [url])
            #expect(requests.first?.httpMethod == "POST")
            #expect(requests.first?.value(forHTTPHeaderField: "X-Request") == "r")
            #expect(connectivity.connectivityURLs == [url])
        }
    }
}

extension RwbutlerSuites {
    @Suite(
        "rwbutler/Connectivity's URLSession API against local HTTP servers in test namespaces",
        .enabled(if: IntegrationGate.enabled), .ownThreads)
    struct RwbutlerURLSessionIntegrationTests {
        static let routes: [String: TestHTTPServer.Behaviour] = [
            "/success": .respond(status: 200, body: "<HTML><BODY>Success</BODY></HTML>"),
            "/failure": .respond(status: 200, body: "Please log in"),
            "/stall": .silent,
        ]

        /// An instance in a test namespace, configured with rwbutler's initializer.
        static func setUp(_ path: String) async throws -> (TestNamespace, TestHTTPServer, Connectivity) {
            Connectivity.isHTTPSOnly = false
            let (ns, server) = try await ConnectivityIntegrationTests.setUp(routes)
            let connectivity = Connectivity(
                configuration: ConnectivityConfiguration(
                    connectivityURLs: [server.url(path)], pollingIsEnabled: false, environment: ns.environment))
            return (ns, server, connectivity)
        }

        @Test("a request timeout from configureURLSession: a stalled URL fails the check")
        func requestTimeout() async throws {
            Connectivity.isHTTPSOnly = false
            // Connectivity(configuration:) makes its session settings the static's, as rwbutler's: put back.
            defer { Connectivity.rwbutlerSessionDefaults.withLock { $0 = nil } }
            let (ns, server) = try await ConnectivityIntegrationTests.setUp(Self.routes)
            defer { withExtendedLifetime((ns, server)) {} }
            let configuration = ConnectivityConfiguration(
                connectivityURLs: [server.url("/stall")], pollingIsEnabled: false, environment: ns.environment
            )
            .configureURLSession(session(request: 1, resource: 3))
            #expect(configuration.probeTimeout == .seconds(1))
            let connectivity = Connectivity(configuration: configuration)
            let result: ConnectivityResult = try await connectivity.checkConnectivity()
            #expect(result.status == .connectedViaEthernetWithoutInternet)
            #expect(result.endpoints.allSatisfy { !$0.isValid && $0.failure == .timedOut })
            #expect(server.count("/stall") >= 1)
        }

        @Test("httpAdditionalHeaders reach the server; a bearer token's Authorization wins over the session's")
        func additionalHeaders() async throws {
            let (ns, server, connectivity) = try await Self.setUp("/success")
            defer { withExtendedLifetime((ns, server)) {} }
            connectivity.urlSessionConfiguration = session(
                request: 5, resource: 10, headers: ["X-Session": "one", "Authorization": "Basic xyz"])
            connectivity.bearerToken = "t0ken"
            let result: ConnectivityResult = try await connectivity.checkConnectivity()
            #expect(result.isConnected)
            let headers = try #require(server.requests.last?.headers)
            #expect(headers["x-session"] == "one")
            #expect(headers["authorization"] == "Bearer t0ken")
        }

        @Test(
            "connectivityURLRequests: method and header reach the server; the answer is judged by the validation mode")
        func urlRequests() async throws {
            let (ns, server, connectivity) = try await Self.setUp("/success")
            defer { withExtendedLifetime((ns, server)) {} }
            connectivity.connectivityURLRequests = [
                request(server.url("/success"), method: "POST", header: ("X-Req", "1"))
            ]
            let passed: ConnectivityResult = try await connectivity.checkConnectivity()
            #expect(passed.isConnected)
            let seen = try #require(server.requests.last)
            #expect(seen.path == "/success" && seen.method == "POST" && seen.headers["x-req"] == "1")

            connectivity.connectivityURLRequests = [
                request(server.url("/failure"), method: "PUT", header: ("X-Req", "2"))
            ]
            let failed: ConnectivityResult = try await connectivity.checkConnectivity()
            #expect(failed.status == .connectedViaEthernetWithoutInternet, "contains \"Success\" is not met")
            #expect(server.requests.last?.method == "PUT")
            connectivity.expectedResponseString = "log in"
            let judged: ConnectivityResult = try await connectivity.checkConnectivity()
            #expect(judged.isConnected, "the changed expectation judges the request's answer")
            #expect(server.requests.last?.headers["x-req"] == "2")
        }

        @Test("a validator written against rwbutler 6's protocol judges the checks, handed the server's answer")
        func requestValidatorChecks() async throws {
            let (ns, server, connectivity) = try await Self.setUp("/z")
            defer { withExtendedLifetime((ns, server)) {} }
            server.set("/z", .respond(status: 200, headers: ["X-Served": "yes"], body: "abz"))
            let validator = RequestValidator()
            connectivity.responseValidator = validator
            connectivity.validationMode = .custom
            let passed: ConnectivityResult = try await connectivity.checkConnectivity()
            #expect(passed.isConnected)
            let (request, response) = try #require(validator.calls.last)
            #expect(request.url == server.url("/z"))
            let http = try #require(response as? HTTPURLResponse)
            #expect(http.statusCode == 200 && http.value(forHTTPHeaderField: "X-Served") == "yes")
            server.set("/z", .respond(status: 200, body: "aby"))
            let failed: ConnectivityResult = try await connectivity.checkConnectivity()
            #expect(failed.status == .connectedViaEthernetWithoutInternet)
        }
    }
}
