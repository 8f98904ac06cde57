import Connectivity
import Foundation
import NIOConcurrencyHelpers
import Reachability
import TestSupport
import Testing

@testable import Connectivity

/// Records every result a started `Connectivity` publishes (from the notification,
/// which carries it), and the whenConnected / whenDisconnected calls.
final class ConnectivityLog: Sendable {
    private struct State {
        var results: [ConnectivityResult] = []
        var connected = 0
        var disconnected = 0
    }
    private let state = NIOLockedValueBox(State())
    /// Keeps the instance alive as long as the log (a released instance stops).
    let connectivity: Connectivity
    private struct Token: @unchecked Sendable { var value: any NSObjectProtocol }
    private let token: Token

    init(_ connectivity: Connectivity) {
        self.connectivity = connectivity
        let state = state
        token = Token(
            value: NotificationCenter.default.addObserver(
                forName: .connectivityDidChange, object: connectivity, queue: nil
            ) { notification in
                guard let result = notification.userInfo?[Connectivity.resultKey] as? ConnectivityResult else { return }
                state.withLockedValue { $0.results.append(result) }
            })
        connectivity.whenConnected = { _ in state.withLockedValue { $0.connected += 1 } }
        connectivity.whenDisconnected = { _ in state.withLockedValue { $0.disconnected += 1 } }
    }

    deinit {
        NotificationCenter.default.removeObserver(token.value)
        connectivity.stop()
    }

    var results: [ConnectivityResult] { state.withLockedValue { $0.results } }
    var verdicts: [String] { results.map(\.verdict.name) }
    var connectedCalls: Int { state.withLockedValue { $0.connected } }
    var disconnectedCalls: Int { state.withLockedValue { $0.disconnected } }

    /// Waits until the results satisfy `condition`.
    func wait(
        _ what: String, timeout: Duration = .seconds(20),
        _ condition: @escaping @Sendable ([ConnectivityResult]) -> Bool
    ) async throws {
        let state = state
        do {
            try await eventually(what, timeout: timeout) { condition(state.withLockedValue { $0.results }) }
        } catch {
            throw WaitTimedOut(what: "\(what); results: \(verdicts)", seen: [])
        }
    }
}

@Suite(
    "Connectivity against real HTTP servers in test namespaces", .enabled(if: IntegrationGate.enabled), .ownThreads,
    .serialized)
struct ConnectivityIntegrationTests {
    /// A namespace with a usable path out (veth0, 192.0.2.1/24, default route) and
    /// an HTTP server listening on its loopback.
    static func setUp(_ routes: [String: TestHTTPServer.Behaviour]) async throws -> (TestNamespace, TestHTTPServer) {
        try await offPool { try setUpBlocking(routes) }
    }

    /// ``setUp(_:)`` on the calling thread.
    static func setUpBlocking(_ routes: [String: TestHTTPServer.Behaviour]) throws -> (TestNamespace, TestHTTPServer) {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        return (ns, try TestHTTPServer(in: ns, routes: routes))
    }

    static func configuration(
        _ ns: TestNamespace, _ endpoints: [ConnectivityEndpoint], threshold: Double = 50
    ) -> ConnectivityConfiguration {
        var configuration = ConnectivityConfiguration(
            endpoints: endpoints, successThreshold: threshold, environment: ns.environment)
        // Generous: healthy probes answer at once, and the TSan run shares 2 cores with the storms.
        configuration.probeTimeout = .seconds(5)
        configuration.checkDeadline = .seconds(10)
        return configuration
    }

    static func check(_ configuration: ConnectivityConfiguration) async throws -> ConnectivityResult {
        try await Connectivity(configuration: configuration).checkConnectivity()
    }

    @Test("healthy 204 and healthy bodies: online over the namespace's Ethernet-like link")
    func healthy() async throws {
        let (ns, server) = try await Self.setUp([
            "/generate_204": .respond(status: 204),
            "/connecttest.txt": .respond(status: 200, body: "Microsoft Connect Test"),
            "/hotspot.html": .respond(status: 200, body: "<HTML><BODY>Success</BODY></HTML>"),
            "/regex": .respond(status: 200, body: "ok 42\n"),
        ])
        let endpoints = [
            ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204)),
            ConnectivityEndpoint(
                url: server.url("/connecttest.txt"), expectation: .bodyEquals("Microsoft Connect Test")),
            ConnectivityEndpoint(url: server.url("/hotspot.html"), expectation: .bodyContains("Success")),
            ConnectivityEndpoint(url: server.url("/regex"), expectation: .bodyMatches("^ok [0-9]+$")),
        ]
        for endpoint in endpoints {
            let result = try await Self.check(Self.configuration(ns, [endpoint]))
            #expect(result.verdict == .online, "\(endpoint)")
            #expect(result.status == .connectedViaEthernet)
            #expect(result.interface?.name == "veth0")
            #expect(result.endpoints.first?.isValid == true)
        }
        let all = try await Self.check(Self.configuration(ns, endpoints, threshold: 100))
        #expect(all.verdict == .online)
        #expect(all.endpoints.count == 4 && all.endpoints.allSatisfy { $0.isValid })
        // Caches bypassed: every probe asked for a fresh answer.
        let request = try #require(server.requests.first)
        #expect(request.headers["cache-control"]?.contains("no-cache") == true)
        #expect(request.headers["pragma"] == "no-cache")
    }

    @Test("302 with Location: captivePortal at that URL; the redirect is not followed")
    func redirect() async throws {
        let (ns, server) = try await Self.setUp([
            "/generate_204": .respond(status: 302, headers: ["Location": "http://127.0.0.1:1/portal/login?id=7"]),
            "/relative": .respond(status: 303, headers: ["Location": "/login"]),
        ])
        let result = try await Self.check(
            Self.configuration(ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))]))
        #expect(result.verdict == .captivePortal(loginURL: URL(string: "http://127.0.0.1:1/portal/login?id=7")!))
        #expect(result.status == .connectedViaEthernetWithoutInternet)
        #expect(result.endpoints.first?.httpStatus == 302)
        #expect(server.count("/portal/login") == 0)

        let relative = try await Self.check(
            Self.configuration(ns, [ConnectivityEndpoint(url: server.url("/relative"), expectation: .status(204))]))
        #expect(relative.verdict == .captivePortal(loginURL: server.url("/login")))
        #expect(server.count("/login") == 0, "redirects are answers, never followed")
    }

    @Test("a 200 login page on a 204 URL, and a 511: captivePortal at the probe URL")
    func loginPageAnd511() async throws {
        let (ns, server) = try await Self.setUp([
            "/generate_204": .respond(status: 200, body: "<html><form action=/login>Log in</form></html>"),
            "/nck": .respond(status: 511, body: "<html>Network Authentication Required</html>"),
        ])
        for path in ["/generate_204", "/nck"] {
            let result = try await Self.check(
                Self.configuration(ns, [ConnectivityEndpoint(url: server.url(path), expectation: .status(204))]))
            #expect(result.verdict == .captivePortal(loginURL: server.url(path)), "\(path)")
        }
    }

    @Test("a server slower than the probe timeout: noInternet(timedOut) within the deadline")
    func slowServer() async throws {
        let (ns, server) = try await Self.setUp([
            "/slow": .delayed(.seconds(30), .respond(status: 204)), "/silent": .silent,
        ])
        var configuration = Self.configuration(
            ns,
            [
                ConnectivityEndpoint(url: server.url("/slow"), expectation: .status(204)),
                ConnectivityEndpoint(url: server.url("/silent"), expectation: .status(204)),
            ])
        configuration.probeTimeout = .milliseconds(700)
        configuration.checkDeadline = .milliseconds(1500)
        let started = ContinuousClock.now
        let result = try await Self.check(configuration)
        let elapsed = ContinuousClock.now - started
        #expect(result.verdict == .noInternet(.timedOut))
        #expect(result.endpoints.allSatisfy { $0.failure == .timedOut })
        #expect(elapsed < .milliseconds(1500) + .seconds(2), "took \(elapsed)")
    }

    @Test("an endless body: a verdict within the deadline, the body read to 64 KiB and no further")
    func endlessBody() async throws {
        let (ns, server) = try await Self.setUp(["/generate_204": .endlessBody, "/page": .endlessBody])
        for path in ["/generate_204", "/page"] {
            let expectation: ConnectivityEndpoint.Expectation =
                path == "/page" ? .bodyContains("Success") : .status(204)
            for _ in 0..<10 {
                let result = try await Self.check(
                    Self.configuration(ns, [ConnectivityEndpoint(url: server.url(path), expectation: expectation)]))
                #expect(result.verdict == .captivePortal(loginURL: server.url(path)))
                // Judged when the cap was reached, not cut short by a timeout.
                #expect(
                    result.endpoints.map(\.httpStatus) == [200] && result.endpoints.allSatisfy { $0.failure == nil })
            }
        }
        // The client hung up on every endless answer (the close follows the verdict
        // on the client's event loop, not before it returns): the server's writes stop.
        try await eventually("the client hung up on all 20 endless answers") { server.endlessOpen == 0 }

        // Memory, in a process of its own (ReachabilityStress): this one's moves with
        // the tests running beside it.
        let run = [StressBinary.path, "endless-checks", ns.path, server.url("/page").absoluteString]
        let output = try await offPool { try Command.run(run) }
        print("ReachabilityStress endless-checks: \(output.stdout)", terminator: "")
        #expect(output.status == 0, "exit \(output.status); \(output.stderr.suffix(1500))")
        let result = try jsonObject(output.stdout.split(separator: "\n").last.map(String.init))
        #expect(result["verdicts"] as? [String] == Array(repeating: "captivePortal", count: 20))
        try StressFootprint.expectFlat(result)
        try await eventually("the client hung up on the stress run's answers") { server.endlessOpen == 0 }
    }

    @Test("a validator or pattern that never finishes: the probe gives up at its timeout")
    func runawayValidator() async throws {
        let (ns, server) = try await Self.setUp([
            "/page": .respond(status: 200, body: String(repeating: "a", count: 30) + "!")
        ])
        let release = NIOLockedValueBox(false)
        var configuration = Self.configuration(
            ns,
            [
                ConnectivityEndpoint(
                    url: server.url("/page"),
                    expectation: .custom { _ in
                        while !release.withLockedValue({ $0 }) { usleep(10_000) }
                        return true
                    }),
                // Catastrophic backtracking on 30 a's and a '!' (about 1 s of ICU here).
                ConnectivityEndpoint(url: server.url("/page"), expectation: .bodyMatches("^(a+)+$")),
            ], threshold: 100)
        configuration.probeTimeout = .milliseconds(700)
        configuration.checkDeadline = .seconds(2)
        let started = ContinuousClock.now
        let result = try await Self.check(configuration)
        release.withLockedValue { $0 = true }
        #expect(ContinuousClock.now - started < .seconds(3), "took \(ContinuousClock.now - started)")
        #expect(result.verdict != .online)
        // The validator never returns by itself: its probe timed out. (ICU gives up
        // on the pattern after about a second here: timed out, or no match.)
        #expect(result.endpoints.first?.failure == .timedOut)
        #expect(result.endpoints.last?.isValid == false)
    }

    @Test("connection refused: noInternet(connectionRefused), after a second attempt once the retry's pause passed")
    func refused() async throws {
        let (ns, server) = try await Self.setUp([:])
        let closed = URL(string: "http://127.0.0.1:\(server.port == 9 ? 10 : 9)/generate_204")!
        let clock = ManualClock()
        let connectivity = Connectivity(
            configuration: Self.configuration(ns, [ConnectivityEndpoint(url: closed, expectation: .status(204))]),
            notificationQueue: nil, clock: clock)
        let start = clock.now
        let check = Task { try await connectivity.checkConnectivity() }
        // The first attempt is refused at once; the second waits for the pause on the clock.
        try await eventually("the retry's pause") { clock.deadlines.contains(start + ProbeRunner.retryDelay) }
        clock.advance(to: start + ProbeRunner.retryDelay - .nanoseconds(1))
        #expect(clock.deadlines.contains(start + ProbeRunner.retryDelay), "retried before its pause")
        clock.advance(to: start + ProbeRunner.retryDelay)
        let result = try await check.value
        #expect(result.verdict == .noInternet(.connectionRefused))
        #expect(result.endpoints.first?.attempts == 2)
    }

    @Test("no usable path: notConnected at once, no probe sent")
    func noPath() async throws {
        let (ns, server) = try await offPool {
            let ns = try TestNamespace()
            return (ns, try TestHTTPServer(in: ns, routes: ["/generate_204": .respond(status: 204)]))
        }
        let result = try await Self.check(
            Self.configuration(ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))]))
        #expect(result.verdict == .notConnected)
        #expect(result.status == .notConnected)
        #expect(server.requests.isEmpty)
    }

    @Test("one endpoint down and one healthy at 50 %: online; at 100 %: limited")
    func partial() async throws {
        let (ns, server) = try await Self.setUp(["/generate_204": .respond(status: 204)])
        let endpoints = [
            ConnectivityEndpoint(url: URL(string: "http://127.0.0.1:9/down")!, expectation: .status(204)),
            ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204)),
        ]
        #expect(try await Self.check(Self.configuration(ns, endpoints, threshold: 50)).verdict == .online)
        let strict = try await Self.check(Self.configuration(ns, endpoints, threshold: 100))
        #expect(strict.verdict == .limited(.belowThreshold(succeeded: 1, required: 2)))
    }

    @Test("plain HTTP fine, HTTPS failing: limited(httpsBlocked)")
    func httpsBlocked() async throws {
        let (ns, server) = try await Self.setUp(["/generate_204": .respond(status: 204)])
        let endpoints = [
            ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204)),
            // An HTTP server where TLS is expected: the handshake fails.
            ConnectivityEndpoint(
                url: URL(string: "https://127.0.0.1:\(server.port)/generate_204")!, expectation: .status(204)),
        ]
        let result = try await Self.check(Self.configuration(ns, endpoints, threshold: 100))
        #expect(result.verdict == .limited(.httpsBlocked))
        guard case .tlsFailed? = result.endpoints.last?.failure else {
            Issue.record("expected a TLS failure, got \(String(describing: result.endpoints.last))")
            return
        }
    }

    @Test("HTTPS: a server with a certificate from the configured roots is online; with system roots, tlsFailed")
    func https() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (tls, ns, server) = try await offPool {
            let tls = try TestHTTPServer.selfSignedCertificate(in: directory)
            let ns = try TestNamespace()
            try ns.disableIPv6()
            try ns.ipv4WithDefaultRoute()
            return (tls, ns, try TestHTTPServer(in: ns, tls: tls, routes: ["/generate_204": .respond(status: 204)]))
        }
        var configuration = Self.configuration(
            ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))])
        configuration.httpsOnly = true
        let untrusted = try await Self.check(configuration)
        #expect(untrusted.verdict == .noInternet(.tlsFailed))
        configuration.trustedRootCertificatesPath = tls.certificate
        let trusted = try await Self.check(configuration)
        #expect(trusted.verdict == .online)
        #expect(trusted.endpoints.first?.httpStatus == 204)
    }

    @Test("RFC 8908: captive true from the API is authoritative, with its user-portal-url")
    func captiveAPI() async throws {
        let (ns, server) = try await Self.setUp([
            "/generate_204": .respond(status: 204),
            "/captive": .respond(
                status: 200, headers: ["Content-Type": "application/captive+json"],
                body: #"{"captive": true, "user-portal-url": "https://portal.test/login"}"#),
            "/released": .respond(
                status: 200, headers: ["Content-Type": "application/captive+json"], body: #"{"captive": false}"#),
        ])
        var configuration = Self.configuration(
            ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))])
        configuration.captivePortalAPI = server.url("/captive")
        let captive = try await Self.check(configuration)
        #expect(captive.verdict == .captivePortal(loginURL: URL(string: "https://portal.test/login")!))
        #expect(captive.captivePortalAPI?.captive == true)
        #expect(server.requests.first { $0.path == "/captive" }?.headers["accept"] == "application/captive+json")

        configuration.captivePortalAPI = server.url("/released")
        #expect(try await Self.check(configuration).verdict == .online)
    }

    @Test("Authorization goes only to the endpoint configured with it")
    func authorizationOnlyWhereConfigured() async throws {
        let (ns, server) = try await Self.setUp(["/a": .respond(status: 204), "/b": .respond(status: 204)])
        let endpoints = [
            ConnectivityEndpoint(
                url: server.url("/a"), expectation: .status(204), headers: ["Authorization": "Bearer s3cret"]),
            ConnectivityEndpoint(url: server.url("/b"), expectation: .status(204)),
        ]
        #expect(try await Self.check(Self.configuration(ns, endpoints, threshold: 100)).verdict == .online)
        let byPath = Dictionary(server.requests.map { ($0.path, $0.headers) }) { first, _ in first }
        #expect(byPath["/a"]?["authorization"] == "Bearer s3cret")
        #expect(byPath["/b"]?.keys.contains("authorization") == false)
    }

    @Test("notifier: a flapping endpoint doesn't flip online; a lasting failure does, then one success returns")
    func hysteresis() async throws {
        let (ns, server) = try await Self.setUp(["/generate_204": .respond(status: 204)])
        var configuration = Self.configuration(
            ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))])
        configuration.pollingInterval = .milliseconds(100)
        configuration.offlineRetryInitial = .milliseconds(100)
        configuration.offlineRetryLimit = .milliseconds(200)
        let log = ConnectivityLog(try Connectivity(validating: configuration))
        try log.connectivity.start()
        try await log.wait("online") { $0.last?.verdict == .online }
        // Every other answer fails: never two failures in a row.
        server.set("/generate_204", .alternating([.respond(status: 500), .respond(status: 204)]))
        let before = server.count("/generate_204")
        try await eventually("ten flapping checks") { server.count("/generate_204") >= before + 10 }
        #expect(log.verdicts == ["online"])
        #expect(log.connectivity.status == .connectedViaEthernet)
        // Lasting failure: offline after two checks.
        server.set("/generate_204", .respond(status: 500))
        try await log.wait("noInternet") { $0.last?.verdict == .noInternet(.unexpectedResponse) }
        #expect(log.connectivity.status == .connectedViaEthernetWithoutInternet)
        server.set("/generate_204", .respond(status: 204))
        try await log.wait("online again") { $0.last?.verdict == .online }
        #expect(log.verdicts == ["online", "noInternet", "online"])
        #expect(log.connectedCalls == 2 && log.disconnectedCalls == 1)
    }

    @Test("notifier: link down during a probe cancels it, notConnected at once, no late online")
    func linkDownDuringProbe() async throws {
        // The answer is held back for 4 s: long enough that a cancelled probe's close
        // reaches the server first even on a loaded machine (a sanitizer run on 2 cores).
        let answerDelay = Duration.seconds(4)
        let (ns, server) = try await Self.setUp(["/generate_204": .delayed(answerDelay, .respond(status: 204))])
        let configuration = Self.configuration(
            ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))])
        try configuration.validate()
        // Its timers (re-check, retry, deadline, probe limit) run only when the test moves the clock.
        let clock = ManualClock()
        let log = ConnectivityLog(Connectivity(configuration: configuration, notificationQueue: nil, clock: clock))
        try log.connectivity.start()
        try await eventually("the probe reaches the server") { server.count("/generate_204") == 1 }
        let down = ContinuousClock.now
        try await offPool { try ns.ip("link set veth0 down") }
        try await log.wait("notConnected") { $0.last?.verdict == .notConnected }
        #expect(ContinuousClock.now - down < answerDelay, "before the server would have answered")
        // The probe was cancelled: its connection closed before the server's
        // answer was due (4 s after the request), so the answer was never sent.
        try await eventually("the server finds the client gone") { server.abandoned == 1 }
        // Nothing is left that could bring an online: the probe's connection is closed,
        // and no timer (the check's, its probe's, a re-check or a retry) waits to start another.
        try await eventually("the cancelled check's timers gone") { clock.deadlines.isEmpty }
        #expect(log.verdicts == ["notConnected"])
        #expect(log.connectivity.status == .notConnected)
        // Link back: checked again (the path changed), online.
        server.set("/generate_204", .respond(status: 204))
        try await offPool { try ns.ip("link set veth0 up") }
        try await offPool { try ns.ip("route add default via 192.0.2.2 dev veth0") }
        try await log.wait("online after link up") { $0.last?.verdict == .online }
    }

    @Test("notifier: the re-check runs when the polling interval has passed on its clock, not before")
    func pollingOnTheClock() async throws {
        let (ns, server) = try await Self.setUp(["/generate_204": .respond(status: 204)])
        var configuration = Self.configuration(
            ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))])
        configuration.pollingInterval = .seconds(60)
        try configuration.validate()
        let clock = ManualClock()
        let due = clock.now + .seconds(60)
        let log = ConnectivityLog(Connectivity(configuration: configuration, notificationQueue: nil, clock: clock))
        try log.connectivity.start()
        try await log.wait("online") { $0.last?.verdict == .online }
        // The check's own timers end with it; the re-check's is left, a polling interval on.
        try await eventually("the re-check's timer alone") { clock.deadlines == [due] }
        clock.advance(to: due - .nanoseconds(1))
        #expect(clock.deadlines == [due] && server.count("/generate_204") == 1)
        clock.advance(to: due)
        try await eventually("the re-check, and the timer after it") {
            server.count("/generate_204") == 2 && clock.deadlines == [due + .seconds(60)]
        }
        #expect(log.verdicts == ["online"], "the same result is not published again")
    }

    @Test("notifier: callbacks may read the state and stop the instance (no lock is held around them)")
    func reentrantCallbacks() async throws {
        let (ns, server) = try await Self.setUp(["/generate_204": .respond(status: 204)])
        let connectivity = try Connectivity(
            validating: Self.configuration(
                ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))]))
        let seen = NIOLockedValueBox<[ConnectivityStatus]>([])
        connectivity.whenConnected = { c in
            seen.withLockedValue { $0.append(c.status) }
            _ = c.latestResult
            c.whenConnected = nil  // Replacing the running closure from inside it.
            c.stop()
        }
        try connectivity.start()
        try await eventually("the callback ran") { !seen.withLockedValue { $0 }.isEmpty }
        #expect(seen.withLockedValue { $0 } == [.connectedViaEthernet])
        try await eventually("stopped") { !connectivity.isRunning }
    }

    @Test("notifier: a sequence made before start waits for it")
    func updatesBeforeStart() async throws {
        let (ns, server) = try await Self.setUp(["/generate_204": .respond(status: 204)])
        let connectivity = try Connectivity(
            validating: Self.configuration(
                ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))]))
        let updates = connectivity.updates
        try connectivity.start()
        var iterator = updates.makeAsyncIterator()
        #expect(await iterator.next()?.verdict == .online)
        connectivity.stop()
    }

    @Test("notifier: updates sequence and stop; a stopped instance publishes nothing")
    func updatesAndStop() async throws {
        let (ns, server) = try await Self.setUp(["/generate_204": .respond(status: 204)])
        let connectivity = try Connectivity(
            validating: Self.configuration(
                ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))]))
        try connectivity.start()
        let updates = connectivity.updates
        var iterator = updates.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.verdict == .online)
        #expect(connectivity.isConnected)
        connectivity.stop()
        #expect(await iterator.next() == nil, "the sequence ends on stop")
        #expect(connectivity.status == .determining)
        #expect(!connectivity.isRunning)
    }

    /// A thread in another namespace that enqueues Dispatch work (resuming a task
    /// does) may start a Dispatch worker there, which then runs anyone's work, the
    /// user's callbacks included, in that namespace. Every job of the checks' tasks is
    /// recorded with the namespace of the thread that enqueued it.
    @Test("Probes in a namespace resume every task from the process's own namespace, and leave no thread there")
    func probeLoopResumesNothing() async throws {
        let home = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/net")
        let (ns, server) = try await Self.setUp(["/generate_204": .respond(status: 204)])
        let configuration = Self.configuration(
            ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))])
        let recorder = EnqueueRecorder()
        defer { recorder.stop() }
        for _ in 0..<3 {
            let result = try await withTaskExecutorPreference(recorder) { try await Self.check(configuration) }
            #expect(result.verdict == .online)
        }
        #expect(recorder.enqueuedFrom == [home], "tasks resumed from \(recorder.enqueuedFrom)")
        // The last check's release shuts its probe loop down: once that thread is gone,
        // only the test server's is in the namespace.
        let namespace = try FileManager.default.destinationOfSymbolicLink(atPath: ns.path)
        try await eventually("the probe loop's thread to end") {
            !RobustnessIntegrationTests.threadNamespaces().contains {
                $0.name == ProbeClients.namespaceThreadName && $0.namespace == namespace
            }
        }
        let there = RobustnessIntegrationTests.threadNamespaces().filter { $0.namespace == namespace }
        #expect(there.allSatisfy { $0.name == TestHTTPServer.threadName }, "threads in the namespace: \(there)")
    }

    /// In a process of its own (ReachabilityStress): this one's RSS and descriptors
    /// move with the tests running beside it.
    @Test("1,000 start/stop cycles: no growth in descriptors, threads or memory")
    func startStopCycles() async throws {
        let (ns, server) = try await Self.setUp(["/generate_204": .respond(status: 204)])
        let run = [StressBinary.path, "connectivity-cycles", ns.path, server.url("/generate_204").absoluteString]
        let output = try await offPool { try Command.run(run) }
        print("ReachabilityStress connectivity-cycles: \(output.stdout)", terminator: "")
        #expect(output.status == 0, "exit \(output.status); \(output.stderr.suffix(1500))")
        let result = try jsonObject(output.stdout.split(separator: "\n").last.map(String.init))
        try StressFootprint.expectFlat(result)
        let before = try #require((result["before"] as? [String: Int])?["threads"])
        let after = try #require((result["after"] as? [String: Int])?["threads"])
        #expect(after <= before + 1, "threads \(before) → \(after)")
        #expect(result["online"] as? Int == 110)
        #expect(server.count("/generate_204") >= 110)
    }
}

/// A task executor that runs its jobs on a thread of its own and records the
/// network namespace of each thread that enqueued one: the thread that started or
/// resumed the task.
final class EnqueueRecorder: TaskExecutor, @unchecked Sendable {
    // @unchecked: the queue and the set are behind locks; the semaphore is thread-safe.
    private let queue = NIOLockedValueBox<[UnownedJob?]>([])
    private let namespaces = NIOLockedValueBox<Set<String>>([])
    private let waiting = DispatchSemaphore(value: 0)

    init() {
        Thread.detachNewThread { [self] in
            while true {
                waiting.wait()
                guard let job = queue.withLockedValue({ $0.removeFirst() }) else { return }
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
    }

    /// The namespaces of the threads that enqueued jobs so far.
    var enqueuedFrom: Set<String> { namespaces.withLockedValue { $0 } }

    func enqueue(_ job: consuming ExecutorJob) {
        let here = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self/ns/net")) ?? "?"
        namespaces.withLockedValue { _ = $0.insert(here) }
        let job = UnownedJob(job)
        queue.withLockedValue { $0.append(job) }
        waiting.signal()
    }

    /// Ends the thread once the jobs before this call have run.
    func stop() {
        queue.withLockedValue { $0.append(nil) }
        waiting.signal()
    }
}
