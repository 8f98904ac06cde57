import Foundation
import Testing

@testable import Connectivity

/// Servers the probes ask that turn hostile (docs/DESIGN.md §10.1, "HTTP(S) servers
/// Connectivity probes"): a head that never ends or trickles, a body that trickles,
/// a TLS handshake never finished. Each check ends by its own bounds, never online.
@Suite("Hostile probed servers", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct ProbedServerHostileTests {
    /// Accepts, reads the request, then per mode: an endless status line; a
    /// 200,000-byte reason phrase, then a complete 204; an endless header field;
    /// endless interim answers (`100 Continue`); the head one byte every 0.2 s; a
    /// head, then the body one byte every 0.2 s; nothing at all (for TLS: the
    /// handshake never finished). The number of bytes sent goes to stdout on exit.
    static let server = """
        import socket, sys, threading, time
        mode, host = sys.argv[1], sys.argv[2]
        server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host, 0)); server.listen(16)
        print(server.getsockname()[1], flush=True)
        sent = [0]
        def send(conn, data):
            conn.sendall(data); sent[0] += len(data)
        def serve(conn):
            try:
                conn.recv(4096)
                if mode == "endless status line":
                    send(conn, b"HTTP/1.1 204 ")
                    while True: send(conn, b"a" * 65536)
                elif mode == "long reason phrase":
                    send(conn, b"HTTP/1.1 204 " + b"a" * 200000 + b"\\r\\nContent-Length: 0\\r\\n\\r\\n")
                    time.sleep(60)
                elif mode == "endless header":
                    send(conn, b"HTTP/1.1 204 No Content\\r\\nX-Flood: ")
                    while True: send(conn, b"a" * 65536)
                elif mode == "endless interim answers":
                    while True: send(conn, b"HTTP/1.1 100 Continue\\r\\n\\r\\n" * 1000)
                elif mode == "trickled head":
                    for byte in b"HTTP/1.1 204 No Content\\r\\n" + b"X: y\\r\\n" * 1000:
                        send(conn, bytes([byte])); time.sleep(0.2)
                elif mode == "trickled body":
                    send(conn, b"HTTP/1.1 200 OK\\r\\nContent-Length: 100000\\r\\n\\r\\n")
                    while True: send(conn, b"x"); time.sleep(0.2)
                else: time.sleep(60)
            except OSError: pass
            finally: conn.close()
        def report():
            sys.stdin.read()
            print(sent[0], flush=True)
        threading.Thread(target=report, daemon=True).start()
        while True:
            conn, _ = server.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()
        """

    @Test(
        "a hostile server's head or body: refused past 80 KiB of head, or cut off by the probe's limit; never online",
        arguments: [
            "endless status line", "long reason phrase", "endless header", "endless interim answers", "trickled head",
            "trickled body", "TLS handshake never finished",
        ])
    func hostileServer(mode: String) async throws {
        let (ns, server, line) = try await offPool {
            let ns = try TestNamespace()
            try ns.disableIPv6()
            try ns.ipv4WithDefaultRoute()
            let server = try ns.spawn(["python3", "-c", Self.server, mode, "192.0.2.1"], captureOutput: true)
            return (ns, server, server.readLine())
        }
        defer { server.terminate() }
        let port = try #require(Int(line.trimmingCharacters(in: .whitespacesAndNewlines)), "the port: \(line)")
        let scheme = mode.hasPrefix("TLS") ? "https" : "http"
        var configuration = ConnectivityConfiguration(
            endpoints: [
                ConnectivityEndpoint(
                    url: URL(string: "\(scheme)://192.0.2.1:\(port)/generate_204")!, expectation: .status(204))
            ],
            environment: ns.environment)
        configuration.discoversCaptivePortalAPI = false
        // The floods end by the head's limit whatever the machine's load (under
        // ThreadSanitizer beside a build, 3 s was once too short for their 80 KiB);
        // the trickles and the silent handshake are cut off by the timeout.
        let floods = !["trickled head", "trickled body", "TLS handshake never finished"].contains(mode)
        configuration.probeTimeout = .seconds(floods ? 20 : 3)
        configuration.checkDeadline = .seconds(floods ? 25 : 4)
        let started = ContinuousClock.now
        let result = try await Connectivity(validating: configuration).checkConnectivity()
        let elapsed = ContinuousClock.now - started
        server.closeInput()
        let sent = Int(server.readLine().trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        #expect(result.verdict != .online, "\(result.endpoints)")
        // Only tells an unbounded wait from a slow machine.
        #expect(elapsed < .seconds(60), "bounded by the check's deadline: \(elapsed)")
        let endpoint = try #require(result.endpoints.first)
        let error = endpoint.error ?? ""
        switch mode {
        case "trickled head", "trickled body", "TLS handshake never finished":
            #expect(endpoint.failure == .timedOut, "\(error)")
        default:
            #expect(error.contains("over 81920 bytes"), "\(error)")
            // Refused at the bound, not read on to the probe's limit (the floods send
            // gigabytes in 3 s): what the kernel's buffers hold beyond it at most.
            #expect(sent < 16_000_000, "the server sent \(sent) bytes")
        }
        withExtendedLifetime(ns) {}
    }

    @Test("an RFC 8908 API that trickles its answer, or sends a body over the cap: no API answer, the probes' verdict")
    func hostileAPI() async throws {
        // A captive answer padded past maximumBodySize (64 KiB): parsed whole, it would say captive.
        let padded =
            #"{"captive": true, "user-portal-url": "https://portal.test/"}"# + String(repeating: " ", count: 70_000)
        let (ns, server, trickler, line) = try await offPool {
            let (ns, server) = try ConnectivityIntegrationTests.setUpBlocking([
                "/generate_204": .respond(status: 204),
                "/api": .respond(status: 200, headers: ["Content-Type": "application/captive+json"], body: padded),
            ])
            let trickler = try ns.spawn(
                ["python3", "-c", Self.server, "trickled body", "192.0.2.1"], captureOutput: true)
            return (ns, server, trickler, trickler.readLine())
        }
        defer { trickler.terminate() }
        let port = try #require(Int(line.trimmingCharacters(in: .whitespacesAndNewlines)), "the port: \(line)")
        for api in [server.url("/api"), URL(string: "http://192.0.2.1:\(port)/api")!] {
            var configuration = ConnectivityIntegrationTests.configuration(
                ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))])
            configuration.captivePortalAPI = api
            configuration.probeTimeout = .seconds(2)
            configuration.checkDeadline = .seconds(30)
            let started = ContinuousClock.now
            let result = try await ConnectivityIntegrationTests.check(configuration)
            let elapsed = ContinuousClock.now - started
            #expect(result.verdict == .online, "\(api): \(result.verdict)")
            #expect(result.captivePortalAPI == nil, "\(api)")
            // The API is waited for up to the probe timeout (2 s), never to the deadline (30 s).
            #expect(elapsed < .seconds(20), "\(api): \(elapsed)")
        }
        #expect(server.count("/api") == 1)
    }
}
