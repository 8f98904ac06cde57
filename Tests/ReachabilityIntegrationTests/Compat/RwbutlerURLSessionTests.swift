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

@Suite("rwbutler/Connectivity's URLSession API: the mapping (no network)")
struct RwbutlerURLSessionUnitTests {
    @Test("urlSessionConfiguration round-trips the timeouts and headers; values that can't work are ignored or clamped")
    func roundTrip() {
        let connectivity = Connectivity(configuration: ConnectivityConfiguration(pollingIsEnabled: false))
        connectivity.urlSessionConfiguration = session(request: 3, resource: 7, headers: ["X-Session": "a"])
        #expect(connectivity.configuration.probeTimeout == .seconds(3))
        #expect(connectivity.configuration.checkDeadline == .seconds(7))
        let read = connectivity.urlSessionConfiguration
        #expect(read.timeoutIntervalForRequest == 3)
        #expect(read.timeoutIntervalForResource == 7)
        #expect(read.httpAdditionalHeaders?["X-Session"] as? String == "a")

        let ignored = ConnectivityConfiguration().configureURLSession(session(request: 0, resource: .infinity))
        #expect(ignored.probeTimeout == .seconds(5) && ignored.checkDeadline == .seconds(10))
        let clamped = ConnectivityConfiguration().configureURLSession(session(request: 1e12, resource: -1))
        #expect(clamped.probeTimeout == .seconds(7 * 86_400) && clamped.checkDeadline == .seconds(10))
        #expect(Connectivity(configuration: clamped).urlSessionConfiguration.httpAdditionalHeaders == nil)
    }

    @Test(
        "The static urlSessionConfiguration is the default of instances made afterwards by Connectivity() and Connectivity(shouldUseHTTPS:)"
    )
    func staticDefault() {
        // Process-wide, as rwbutler's: only a header that no other test looks for is
        // set, and the default is put back.
        defer { Connectivity.rwbutlerSessionDefaults.withLock { $0 = nil } }
        let before = Connectivity()
        Connectivity.urlSessionConfiguration = session(request: 0, resource: 0, headers: ["X-Static": "s"])
        #expect(Connectivity.urlSessionConfiguration.httpAdditionalHeaders?["X-Static"] as? String == "s")
        #expect(Connectivity().urlSessionConfiguration.httpAdditionalHeaders?["X-Static"] as? String == "s")
        let isHTTPSOnly = Connectivity.isHTTPSOnly
        #expect(
            Connectivity(shouldUseHTTPS: isHTTPSOnly).urlSessionConfiguration.httpAdditionalHeaders?["X-Static"]
                as? String == "s")
        // Timeouts that can't work were ignored: the defaults stand.
        #expect(Connectivity().configuration.probeTimeout == .seconds(5))
        // Made before, or from a configuration of its own: unchanged.
        #expect(before.urlSessionConfiguration.httpAdditionalHeaders == nil)
        #expect(
            Connectivity(configuration: ConnectivityConfiguration()).urlSessionConfiguration.httpAdditionalHeaders
                == nil)
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

@Suite(
    "rwbutler/Connectivity's URLSession API against local HTTP servers in test namespaces",
    .enabled(if: IntegrationGate.enabled), .serialized)
struct RwbutlerURLSessionIntegrationTests {
    static let routes: [String: TestHTTPServer.Behaviour] = [
        "/success": .respond(status: 200, body: "<HTML><BODY>Success</BODY></HTML>"),
        "/failure": .respond(status: 200, body: "Please log in"),
        "/stall": .silent,
    ]

    /// An instance in a test namespace, configured with rwbutler's initializer.
    static func setUp(_ path: String) async throws -> (TestNamespace, TestHTTPServer, Connectivity) {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(routes)
        let connectivity = Connectivity(
            configuration: ConnectivityConfiguration(
                connectivityURLs: [server.url(path)], pollingIsEnabled: false, environment: ns.environment))
        return (ns, server, connectivity)
    }

    @Test("a request timeout from configureURLSession: a stalled URL fails the check")
    func requestTimeout() async throws {
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

    @Test("connectivityURLRequests: method and header reach the server; the answer is judged by the validation mode")
    func urlRequests() async throws {
        let (ns, server, connectivity) = try await Self.setUp("/success")
        defer { withExtendedLifetime((ns, server)) {} }
        connectivity.connectivityURLRequests = [request(server.url("/success"), method: "POST", header: ("X-Req", "1"))]
        let passed: ConnectivityResult = try await connectivity.checkConnectivity()
        #expect(passed.isConnected)
        let seen = try #require(server.requests.last)
        #expect(seen.path == "/success" && seen.method == "POST" && seen.headers["x-req"] == "1")

        connectivity.connectivityURLRequests = [request(server.url("/failure"), method: "PUT", header: ("X-Req", "2"))]
        let failed: ConnectivityResult = try await connectivity.checkConnectivity()
        #expect(failed.status == .connectedViaEthernetWithoutInternet, "contains \"Success\" is not met")
        #expect(server.requests.last?.method == "PUT")
        connectivity.expectedResponseString = "log in"
        let judged: ConnectivityResult = try await connectivity.checkConnectivity()
        #expect(judged.isConnected, "the changed expectation judges the request's answer")
        #expect(server.requests.last?.headers["x-req"] == "2")
    }
}
