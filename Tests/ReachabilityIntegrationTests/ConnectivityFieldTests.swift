import Connectivity
import Foundation
import NIOConcurrencyHelpers
import Reachability
import Testing

/// Connectivity in the field, against real HTTP servers in test namespaces:
/// hostile login URLs, the path going away under a one-off check, an RFC 8908 API
/// that never answers.
@Suite("Connectivity field hardening", .enabled(if: IntegrationGate.enabled), .ownThreads, .serialized)
struct ConnectivityFieldTests {
    /// Locations a hostile portal sends; none may become the login URL.
    static let hostileLocations: [(name: String, location: String)] = [
        ("javascript:", "javascript:alert(document.cookie)"),
        ("file:", "file:///etc/passwd"),
        ("data:", "data:text/html,<script>alert(1)</script>"),
        ("user and password", "http://user:pass@10.9.9.9/login"),
        ("user", "http://user@10.9.9.9/login"),
        ("60 KB", "http://10.9.9.9/login?" + String(repeating: "a", count: 60 * 1024)),
    ]

    @Test("a hostile portal's redirect: captivePortal at the probe URL, never at its Location")
    func hostileRedirect() async throws {
        var routes: [String: TestHTTPServer.Behaviour] = [:]
        for (index, hostile) in Self.hostileLocations.enumerated() {
            routes["/hostile\(index)"] = .respond(status: 302, headers: ["Location": hostile.location])
        }
        routes["/relative"] = .respond(status: 302, headers: ["Location": "//portal.test/login"])
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(routes)
        for (index, hostile) in Self.hostileLocations.enumerated() {
            let probe = server.url("/hostile\(index)")
            let result = try await ConnectivityIntegrationTests.check(
                ConnectivityIntegrationTests.configuration(
                    ns, [ConnectivityEndpoint(url: probe, expectation: .status(204))]))
            let fellBack = result.verdict == .captivePortal(loginURL: probe)
            #expect(fellBack, "\(hostile.name): \(result.verdict.description.prefix(200))")
            #expect(result.endpoints.first?.httpStatus == 302, "\(hostile.name): the answer came")
        }
        #expect(server.requests.count == Self.hostileLocations.count, "no Location was followed")
        // A relative Location still resolves against the probe.
        let relative = try await ConnectivityIntegrationTests.check(
            ConnectivityIntegrationTests.configuration(
                ns, [ConnectivityEndpoint(url: server.url("/relative"), expectation: .status(204))]))
        #expect(relative.verdict == .captivePortal(loginURL: URL(string: "http://portal.test/login")!))
    }

    @Test("an RFC 8908 API's user-portal-url with credentials or javascript: is not used")
    func hostileAPIPortalURL() async throws {
        func api(_ portal: String) -> TestHTTPServer.Behaviour {
            .respond(
                status: 200, headers: ["Content-Type": "application/captive+json"],
                body: #"{"captive": true, "user-portal-url": "\#(portal)"}"#)
        }
        let (ns, server) = try await ConnectivityIntegrationTests.setUp([
            "/generate_204": .respond(status: 204),
            "/credentials": api("https://user:pass@portal.test/login"),
            "/javascript": api("javascript:alert(1)"),
            "/good": api("https://portal.test/login"),
        ])
        var configuration = ConnectivityIntegrationTests.configuration(
            ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))])
        for path in ["/credentials", "/javascript"] {
            configuration.captivePortalAPI = server.url(path)
            let result = try await ConnectivityIntegrationTests.check(configuration)
            // Captive (the API is authoritative), at the API's own URL: the fallback.
            #expect(result.verdict == .captivePortal(loginURL: server.url(path)), "\(path)")
            #expect(result.captivePortalAPI?.captive == true, "\(path)")
            #expect(result.captivePortalAPI?.userPortalURL == nil, "\(path)")
        }
        configuration.captivePortalAPI = server.url("/good")
        let good = try await ConnectivityIntegrationTests.check(configuration)
        #expect(good.verdict == .captivePortal(loginURL: URL(string: "https://portal.test/login")!))
    }

    @Test(
        "one-off check: the path going away mid-check ends it at once with notConnected",
        arguments: ["link set veth0 down", "route del default"])
    func pathGoesAwayDuringOneOffCheck(change: String) async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .silent])
        var configuration = ConnectivityIntegrationTests.configuration(
            ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))])
        configuration.probeTimeout = .seconds(20)
        configuration.checkDeadline = .seconds(30)
        let connectivity = try Connectivity(validating: configuration)
        let started = ContinuousClock.now
        let check = Task { try await connectivity.checkConnectivity() }
        try await eventually("the probe reaches the server") { server.count("/generate_204") == 1 }
        try await offPool { try ns.ip(change) }
        let result = try await check.value
        let elapsed = ContinuousClock.now - started
        #expect(result.verdict == .notConnected, "\(change): \(result.verdict) after \(elapsed)")
        #expect(result.status == .notConnected)
        #expect(result.endpoints.isEmpty, "no probe result is reported for a path that went away")
        // Far below the probe timeout the silent server would have run it to.
        #expect(elapsed < configuration.probeTimeout, "\(change): took \(elapsed)")
    }

    @Test(
        "out of descriptors: checkConnectivity() and start() throw systemCall naming EMFILE; no crash",
        arguments: [("namespace", 0), ("namespace", 2), ("default", 0)])
    func outOfDescriptors(environment: String, free: Int) async throws {
        let ns = try await HardeningIntegrationTests.namespace()
        // "default": the process's own namespace, so the binary runs inside the test's.
        let run = [StressBinary.path, "connectivity-emfile", ns.path, environment, String(free)]
        let argv = environment == "default" ? ["nsenter", "--net=\(ns.path)", "--"] + run : run
        let output = try await offPool { try Command.run(argv) }
        print("ReachabilityStress connectivity-emfile \(environment) \(free): \(output.stdout)", terminator: "")
        #expect(output.status == 0, "exit \(output.status) (132: SIGILL); \(output.stderr.suffix(1500))")
        var steps: [String: [String: Any]] = [:]
        for line in output.stdout.split(separator: "\n") where line.hasPrefix("{") {
            let object = try jsonObject(String(line))
            steps[object["step"] as? String ?? "?"] = object["result"] as? [String: Any]
        }
        for step in ["check", "startNotifier"] {
            let result = try #require(steps[step], "no \(step) line: \(output.stdout)")
            #expect(result["thrown"] as? Bool == true, "\(step) gave \(result)")
            #expect(result["code"] as? String == "systemCall", "\(step): \(result)")
            #expect(result["errno"] as? Int == Int(EMFILE), "\(step): \(result)")
            let description = result["description"] as? String ?? ""
            #expect(description.hasPrefix("cannot check connectivity: "), "\(description)")
            #expect(description.hasSuffix("Too many open files (errno 24)"), "\(description)")
        }
        // With the descriptors back, the same instance checks again (nothing listens: noInternet).
        let recovered = try #require(steps["recovered"], "no recovered line: \(output.stdout)")
        #expect(recovered["verdict"] as? String == "noInternet", "\(recovered)")
    }

    @Test("an RFC 8908 API that never answers: the probes' verdict at the probe timeout, not at the deadline")
    func silentAPI() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp([
            "/generate_204": .respond(status: 204), "/api": .silent,
        ])
        var configuration = ConnectivityIntegrationTests.configuration(
            ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))])
        configuration.captivePortalAPI = server.url("/api")
        configuration.probeTimeout = .seconds(2)
        configuration.checkDeadline = .seconds(30)
        let started = ContinuousClock.now
        let result = try await ConnectivityIntegrationTests.check(configuration)
        let elapsed = ContinuousClock.now - started
        #expect(server.count("/api") == 1, "the API was asked")
        #expect(result.verdict == .online)
        #expect(result.captivePortalAPI == nil, "the API did not answer")
        // The API is waited for up to the probe timeout from the check's start (2 s),
        // never to the deadline (30 s).
        #expect(elapsed < .seconds(10), "took \(elapsed)")
    }
}
