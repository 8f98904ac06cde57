import Connectivity
import Foundation
import Reachability
import Testing

/// Random fallback endpoints per check, against a real HTTP
/// server in a test namespace: each check probes the endpoints and one fallback
/// drawn at random, so over many checks every fallback comes up.
@Suite(
    "Connectivity fallback endpoints rotate at random between checks", .enabled(if: IntegrationGate.enabled),
    .ownThreads)
struct FallbackRotationTests {
    @Test("40 checks: the primary every time, exactly one fallback per check, each fallback at least once")
    func rotation() async throws {
        let fallbackPaths = ["/f1", "/f2", "/f3"]
        var routes: [String: TestHTTPServer.Behaviour] = ["/generate_204": .respond(status: 204)]
        for path in fallbackPaths { routes[path] = .respond(status: 204) }
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(routes)
        var configuration = ConnectivityIntegrationTests.configuration(
            ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))], threshold: 100)
        configuration.fallbackEndpoints = fallbackPaths.map {
            ConnectivityEndpoint(url: server.url($0), expectation: .status(204))
        }
        let connectivity = Connectivity(configuration: configuration)
        for _ in 0..<40 {
            let result = try await connectivity.checkConnectivity()
            #expect(result.verdict == .online)
            #expect(result.endpoints.count == 2, "the primary and one fallback")
        }
        #expect(server.count("/generate_204") == 40)
        let hits = fallbackPaths.map { server.count($0) }
        #expect(hits.reduce(0, +) == 40, "\(hits)")
        // Each is missed in all 40 draws with probability (2/3)^40, about 1e-7.
        #expect(hits.allSatisfy { $0 >= 1 }, "\(hits)")
    }

    @Test("fallbacksPerCheck outside 0…count is refused; 0 probes none")
    func limits() async throws {
        var configuration = ConnectivityConfiguration(endpoints: [
            ConnectivityEndpoint(url: URL(string: "http://192.0.2.1/generate_204")!, expectation: .status(204))
        ])
        configuration.fallbackEndpoints = [
            ConnectivityEndpoint(url: URL(string: "http://192.0.2.2/generate_204")!, expectation: .status(204))
        ]
        configuration.fallbacksPerCheck = 2
        #expect(throws: ConnectivityError.self) { try configuration.validate() }
        configuration.fallbacksPerCheck = -1
        #expect(throws: ConnectivityError.self) { try configuration.validate() }
        configuration.fallbacksPerCheck = 0
        try configuration.validate()
        configuration.fallbackEndpoints.append(
            ConnectivityEndpoint(url: URL(string: "ftp://192.0.2.3/")!, expectation: .status(204)))
        #expect(throws: ConnectivityError.self, "fallbacks are checked like endpoints") {
            try configuration.validate()
        }
    }
}
