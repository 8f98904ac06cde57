import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// The network identity against the real kernel: the path's
/// `networkIdentity` follows the gateway's link-layer address (the neighbor table,
/// from RTM_NEWNEIGH events), the gateway and the address prefixes, and a change of
/// it alone is delivered while the status stays satisfied.
@Suite("Network identity against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct NetworkIdentityTests {
    static func gatewayMAC(_ path: NetworkPath?) -> String? {
        path?.networkIdentity?.gateways.first?.hardwareAddress
    }

    @Test("a new router behind the same gateway address: a new identity, delivered, status satisfied throughout")
    func newRouter() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let log = try await PathLog.started(try PathMonitor(environment: ns.environment), queue: "identity")
        let first = try #require(log.paths.last?.networkIdentity)
        #expect(first.interface == "veth0")
        #expect(first.gateways.map(\.address.description) == ["192.0.2.2"])
        #expect(first.prefixes == ["192.0.2.0/24"])

        try ns.ip("neigh replace 192.0.2.2 lladdr 02:00:00:00:00:aa dev veth0 nud permanent")
        try await log.wait(for: "the gateway's MAC") { Self.gatewayMAC($0.last) == "02:00:00:00:00:aa" }
        let routerA = try #require(log.paths.last?.networkIdentity)
        try ns.ip("neigh replace 192.0.2.2 lladdr 02:00:00:00:00:bb dev veth0 nud permanent")
        try await log.wait(for: "another router") { Self.gatewayMAC($0.last) == "02:00:00:00:00:bb" }
        let routerB = try #require(log.paths.last?.networkIdentity)
        #expect(routerA != routerB)
        #expect(routerA.id != routerB.id)
        #expect(routerA.id.count == 16)
        #expect(routerB.description == "veth0 via 192.0.2.2 (02:00:00:00:00:bb) on 192.0.2.0/24")
        #expect(log.paths.allSatisfy { $0.status == .satisfied }, "only the identity changed")

        // The same network again: the same id (stable across instances and runs).
        try ns.ip("neigh replace 192.0.2.2 lladdr 02:00:00:00:00:aa dev veth0 nud permanent")
        try await log.wait(for: "router A again") { Self.gatewayMAC($0.last) == "02:00:00:00:00:aa" }
        #expect(log.paths.last?.networkIdentity?.id == routerA.id)
    }

    @Test("another host on the LAN appearing or changing makes no evaluation pass; the gateway's does")
    func otherNeighbors() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let log = try await PathLog.started(try PathMonitor(environment: ns.environment), queue: "identity-lan")
        let environment = ns.environment
        @Sendable func counters() throws -> MonitorCounters { try #require(environment.monitorCounters) }
        // The gateway's MAC first: once its path is in, every event of the setup
        // before it has been read and passed (events are read in order).
        try ns.ip("neigh replace 192.0.2.2 lladdr 02:00:00:00:00:99 dev veth0 nud permanent")
        try await log.wait(for: "the gateway's first MAC") { Self.gatewayMAC($0.last) == "02:00:00:00:00:99" }
        let before = try counters()
        for host in 10..<30 {
            try ns.ip("neigh replace 192.0.2.\(host) lladdr 02:00:00:00:01:\(host) dev veth0 nud permanent")
        }
        try await eventually("the 20 neighbor events read") {
            (try? counters().eventsReceived) ?? 0 >= before.eventsReceived + 20
        }
        #expect(try counters().evaluationPasses == before.evaluationPasses, "no pass for hosts that are no gateway")
        let delivered = log.paths.count
        try ns.ip("neigh replace 192.0.2.2 lladdr 02:00:00:00:00:aa dev veth0 nud permanent")
        try await log.wait(for: "the gateway's MAC") { Self.gatewayMAC($0.last) == "02:00:00:00:00:aa" }
        // Counted by now (the pass that delivered this path came after the 20 events):
        // exactly one pass, the gateway's.
        #expect(try counters().evaluationPasses == before.evaluationPasses + 1)
        #expect(log.paths.count == delivered + 1)
    }

    @Test("a lease on another subnet, another gateway, carrier loss and the gateway's entry deleted")
    func otherChanges() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let log = try await PathLog.started(try PathMonitor(environment: ns.environment), queue: "identity-other")
        try ns.ip("neigh replace 192.0.2.2 lladdr 02:00:00:00:00:aa dev veth0")
        try await log.wait(for: "the gateway's MAC") { Self.gatewayMAC($0.last) == "02:00:00:00:00:aa" }

        // The kernel deletes the entry: the MAC goes with it.
        try ns.ip("neigh del 192.0.2.2 dev veth0")
        try await log.wait(for: "no MAC") {
            $0.last?.networkIdentity?.gateways.first.map { $0.hardwareAddress == nil } == true
        }

        // A new address on another subnet (a new lease) and a gateway there.
        try ns.ip("addr add 198.51.100.7/24 dev veth0")
        try await log.wait(for: "the new prefix") {
            $0.last?.networkIdentity?.prefixes == ["192.0.2.0/24", "198.51.100.0/24"]
        }
        try ns.ip("addr del 192.0.2.1/24 dev veth0")
        try ns.ip("route replace default via 198.51.100.1 dev veth0")
        try await log.wait(for: "the new gateway") {
            $0.last?.networkIdentity?.gateways.map(\.address.description) == ["198.51.100.1"]
                && $0.last?.networkIdentity?.prefixes == ["198.51.100.0/24"]
        }

        // Carrier loss: unsatisfied, no identity; back, the same identity as before.
        let before = try #require(log.paths.last?.networkIdentity)
        try ns.ip("link set veth1 down")
        try await log.wait(for: "unsatisfied") { $0.last?.status == .unsatisfied }
        #expect(log.paths.last?.networkIdentity == nil)
        try ns.ip("link set veth1 up")
        try await log.wait(for: "satisfied again") { $0.last?.status == .satisfied }
        #expect(log.paths.last?.networkIdentity == before)
    }
}

/// `status --json` and `watch --path --json` carry the network identity.
@Suite("The CLI's network identity", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLINetworkIdentityTests {
    @Test("status --json: the path's networkIdentity with the gateway's MAC; watch --path --json: a line per change")
    func statusAndWatch() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.ip("neigh replace 192.0.2.2 lladdr 02:00:00:00:00:aa dev veth0 nud permanent")
        let output = try Command.run([CLI.path, "status", "--json", "--namespace", ns.path])
        #expect(output.status == 0, "\(output.stderr)")
        let path = try #require(try jsonObject(output.stdout)["path"] as? [String: Any])
        let identity = try #require(path["networkIdentity"] as? [String: Any])
        #expect(identity["interface"] as? String == "veth0")
        #expect((identity["id"] as? String)?.count == 16)
        #expect(identity["prefixes"] as? [String] == ["192.0.2.0/24"])
        let gateways = try #require(identity["gateways"] as? [[String: Any]])
        #expect(gateways.first?["address"] as? String == "192.0.2.2")
        #expect(gateways.first?["hardwareAddress"] as? String == "02:00:00:00:00:aa")

        let watch = try Child([CLI.path, "watch", "--path", "--json", "--namespace", ns.path], captureOutput: true)
        defer { watch.terminate() }
        let first = try jsonObject(watch.nextLine(timeout: 30))
        let firstIdentity = (first["path"] as? [String: Any])?["networkIdentity"] as? [String: Any]
        try ns.ip("neigh replace 192.0.2.2 lladdr 02:00:00:00:00:bb dev veth0 nud permanent")
        let second = try jsonObject(watch.nextLine(timeout: 30))
        let secondPath = try #require(second["path"] as? [String: Any])
        #expect(secondPath["status"] as? String == "satisfied")
        let secondIdentity = try #require(secondPath["networkIdentity"] as? [String: Any])
        #expect(
            (secondIdentity["gateways"] as? [[String: Any]])?.first?["hardwareAddress"] as? String
                == "02:00:00:00:00:bb")
        #expect(secondIdentity["id"] as? String != firstIdentity?["id"] as? String)
    }
}
