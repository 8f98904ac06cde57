import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// `watch --path` and `watch --connectivity`, run as built
/// inside test namespaces.
@Suite("reachability watch --path and --connectivity", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLIWatchStreamsTests {
    @Test("watch --path --json: a path object per change, and no target lines")
    func pathJSON() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let watch = try ns.spawnCLI(["watch", "--path", "--json"])
        defer { watch.terminate() }
        let first = try jsonObject(try #require(watch.nextLine(timeout: 30) as String?))
        #expect(first["time"] is String)
        #expect(first["target"] == nil, "path lines only")
        let path = try #require(first["path"] as? [String: Any])
        #expect(path["status"] as? String == "satisfied")
        #expect((path["interfaces"] as? [[String: Any]])?.first?["name"] as? String == "veth0")
        #expect(path["gateways"] as? [String] == ["192.0.2.2"])
        #expect(path["supportsIPv4"] as? Bool == true)

        try ns.ip("link set veth1 down")
        let second = try jsonObject(try #require(watch.nextLine(timeout: 30) as String?))
        #expect((second["path"] as? [String: Any])?["status"] as? String == "unsatisfied")
        #expect(watch.nextLine(timeout: 0.5) == nil, "one line per change")
    }

    @Test("watch TARGET --path: the target's lines and the path's, in text")
    func pathText() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let watch = try ns.spawnCLI(["watch", "192.0.2.9", "--path"])
        defer { watch.terminate() }
        let lines = [watch.nextLine(timeout: 30), watch.nextLine(timeout: 30)].compactMap { $0 }
        #expect(lines.count == 2)
        #expect(lines.contains { $0.contains("192.0.2.9") && $0.contains("reachableViaWiFi") }, "\(lines)")
        #expect(lines.contains { $0.contains("  path ") && $0.contains("satisfied via veth0") }, "\(lines)")
    }

    @Test("watch --connectivity --json: a verdict line per change; the link going makes it notConnected")
    func connectivity() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .respond(status: 204)])
        try await offPool {
            let watch = try ns.spawnCLI([
                "watch", "--connectivity", "--url", server.url("/generate_204").absoluteString, "--json",
            ])
            defer { watch.terminate() }
            let first = try jsonObject(try #require(watch.nextLine(timeout: 30) as String?))
            let verdict = try #require(first["connectivity"] as? [String: Any])
            #expect(verdict["verdict"] as? String == "online")
            #expect(first["time"] is String)

            try ns.ip("link set veth1 down")
            let second = try jsonObject(try #require(watch.nextLine(timeout: 30) as String?))
            #expect((second["connectivity"] as? [String: Any])?["verdict"] as? String == "notConnected")
        }
    }

    @Test("watch --path: the namespace goes away, it says so and exits 1")
    func pathNamespaceGone() throws {
        let ns = try TestNamespace(named: "rtest-wpath")
        let watch = try ns.spawnCLI(["watch", "--path", "--namespace", ns.path])
        #expect(watch.nextLine(timeout: 30) != nil)
        try Command.check(["ip", "netns", "del", ns.name ?? ""])
        #expect(watch.wait() == 1)
        #expect(watch.readAll().1.contains("namespace"))
    }
}
