import Foundation
import Reachability
@_spi(Testing) import ReachabilitySystem
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// The nl80211 reader against the real kernel, where it can be exercised without a
/// radio: a veth in a fresh namespace (and loopback here) is never Wi-Fi. On a
/// kernel without cfg80211 (no `/sys/module/cfg80211`) the `nl80211` family does
/// not resolve at all and the controller answers ENOENT: `noNL80211`; with cfg80211,
/// nl80211 answers ENODEV for the veth: `notWireless`. Either way fast, and no
/// socket is left behind.
@Suite("nl80211 reader against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads, .serialized)
struct WirelessIntegrationTests {
    static let hasCfg80211 = FileManager.default.fileExists(atPath: "/sys/module/cfg80211")

    /// The inodes of the generic netlink (protocol 16) sockets in the namespace whose
    /// `net/netlink` table is at `table`.
    static func genericNetlinkInodes(_ table: String) throws -> Set<String> {
        let lines = try String(contentsOfFile: table, encoding: .utf8).split(separator: "\n").dropFirst()
        return Set(
            lines.compactMap { line in
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                return fields.count >= 10 && fields[1] == "16" ? String(fields[fields.count - 1]) : nil
            })
    }

    /// This process's descriptors: each one's link target (`socket:[INODE]`, …).
    static func descriptors() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")
        }
    }

    static func index(of name: String, in ns: TestNamespace) throws -> Int32 {
        let line = try ns.ip("-o link show dev \(name)")
        return try #require(Int32(line.prefix(while: { $0 != ":" })), "no index in \(line)")
    }

    static func expectUnavailable(_ result: Result<WirelessStatus, WirelessInfo.Unavailable>) {
        switch result {
        case .failure(.noNL80211): #expect(!hasCfg80211, "nl80211 exists here, yet did not resolve")
        case .failure(.notWireless(let errno)):
            #expect(hasCfg80211, "no cfg80211, yet nl80211 answered")
            #expect(errno == ENODEV)
        case let other: Issue.record("a veth or loopback read as \(other)")
        }
    }

    @Test("a veth in a fresh namespace: unavailable, fast, and no descriptor left behind")
    func vethInNamespace() throws {
        let ns = try TestNamespace()
        try ns.addVeth("veth0", peer: "veth1", address: "192.0.2.1/24")
        let index = try Self.index(of: "veth0", in: ns)
        let table =
            "/proc/\(try #require(NetworkNamespace.open(ns.path, systemCalls: .live).owningProcess))/net/netlink"

        let result = WirelessInfo.read(interfaceIndex: index, environment: ns.environment)
        // The kernel answered (a read that sat out its deadline would be `.failed(timedOut)`).
        Self.expectUnavailable(result)

        for _ in 0..<20 {
            Self.expectUnavailable(WirelessInfo.read(interfaceIndex: index, environment: ns.environment))
        }
        let after = try Self.descriptors()
        // No generic netlink socket of the namespace is still held by this process…
        let held = try Self.genericNetlinkInodes(table)
        #expect(after.filter { link in held.contains { link == "socket:[\($0)]" } }.isEmpty)
        // (A count of the process's descriptors would race with the tests running
        // beside this one; the namespace's own socket table is exact.)
    }

    @Test("loopback in this namespace, and an interface index that does not exist: unavailable, never a crash")
    func hostNamespace() throws {
        Self.expectUnavailable(WirelessInfo.read(interfaceIndex: 1))
        let ns = try TestNamespace()
        Self.expectUnavailable(WirelessInfo.read(interfaceIndex: 1, environment: ns.environment))
        Self.expectUnavailable(WirelessInfo.read(interfaceIndex: 999_999, environment: ns.environment))
        // A namespace path that is none: a failure the caller can print, not a throw.
        guard
            case .failure(.failed(let error)) = WirelessInfo.read(
                interfaceIndex: 1, environment: NetworkEnvironment(networkNamespacePath: "/nonexistent"))
        else {
            Issue.record("a bad namespace is a failure")
            return
        }
        #expect(error.code == .namespace)
    }

    @Test(
        "a PathMonitor whose lead is Wi-Fi (by a fake sysfs) asks nl80211 each pass: unknown quality, no SSID, no hang")
    func pathMonitorWithWiFiLead() async throws {
        let sysfs = try fakeSysfs(["veth0": "wlan"])
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let environment = NetworkEnvironment(networkNamespacePath: ns.path, sysfsRoot: sysfs)
        let log = try await PathLog.started(try PathMonitor(environment: environment), queue: "wifi-lead")
        let first = try #require(log.paths.last)
        #expect(first.usesInterfaceType(.wifi))
        #expect(first.linkQuality == .unknown, "no cfg80211 here: nothing to read")
        #expect(first.networkIdentity?.ssid == nil)
        // A pass (a new address) reads nl80211 again and still delivers.
        try ns.ip("addr add 192.0.2.77/24 dev veth0")
        try await log.wait(for: "the new prefix's pass") { $0.count >= 1 && $0.last?.networkIdentity != nil }
        try ns.ip("route replace default via 192.0.2.3 dev veth0")
        try await log.wait(for: "the new gateway") {
            $0.last?.gateways.map(\.description) == ["192.0.2.3"]
        }
        #expect(log.paths.last?.linkQuality == .unknown)
    }

    @Test("A pass's lines never wait for nl80211: a route change's line comes while a Wi-Fi read is stuck")
    func linesDoNotWaitForWiFi() async throws {
        let sysfs = try fakeSysfs(["veth0": "wlan"])
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let faults = SystemCallFaults()
        var environment = NetworkEnvironment(networkNamespacePath: ns.path, sysfsRoot: sysfs)
        environment.systemCalls = SystemCalls(faults: faults)
        let reachability = try Reachability(address: "198.51.100.7", environment: environment)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forLast: .reachableViaWiFi, "reachable over the Wi-Fi link at start")
        let monitor = try #require(MonitorRegistry.running(for: environment))
        try await eventually("the start's Wi-Fi read over") { !monitor.wireless.isReading }

        // From now on an nl80211 request doesn't return until the test lets it: a
        // driver stuck in a firmware reset. A pass (a new address) begins a read after
        // its lines, and the read sticks.
        let stuck = faults.delay(.sendto, by: .seconds(60), matching: .netlink(.nl80211))
        defer { faults.remove(stuck) }
        try ns.ip("addr add 192.0.2.77/24 dev veth0")
        try await eventually("a Wi-Fi read stuck in nl80211") { faults.fired(stuck) > 0 }

        // A route change's line comes while the read is still stuck.
        try ns.ip("route add blackhole 198.51.100.0/24")
        try await log.wait(forLast: .notReachable, "unreachable behind the blackhole, the read still stuck")
        #expect(monitor.wireless.isReading && faults.fired(stuck) == 1)
        faults.remove(stuck)
        try await eventually("the read over once the driver answers") { !monitor.wireless.isReading }
        reachability.stop()
    }
}
