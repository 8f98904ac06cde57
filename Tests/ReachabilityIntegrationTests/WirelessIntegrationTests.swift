import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// The nl80211 reader against the real kernel, where it can be exercised without a
/// radio: a veth in a fresh namespace (and loopback here) is never Wi-Fi. On a
/// kernel without cfg80211 (no `/sys/module/cfg80211`) the `nl80211` family does
/// not resolve at all and the controller answers ENOENT: `noNL80211`; with cfg80211,
/// nl80211 answers ENODEV for the veth: `notWireless`. Either way fast, and no
/// socket is left behind.
@Suite("nl80211 reader against the kernel", .enabled(if: IntegrationGate.enabled), .serialized)
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
        let table = "/proc/\(try #require(NetworkNamespace.open(ns.path).owningProcess))/net/netlink"
        let before = try Self.descriptors()

        let start = ContinuousClock.now
        let result = WirelessInfo.read(interfaceIndex: index, environment: ns.environment)
        let took = ContinuousClock.now - start
        Self.expectUnavailable(result)
        // The kernel answered: the read did not sit out its deadline (no timing beyond that).
        #expect(took < WirelessInfo.defaultTimeout, "\(took)")

        for _ in 0..<20 {
            Self.expectUnavailable(WirelessInfo.read(interfaceIndex: index, environment: ns.environment))
        }
        let after = try Self.descriptors()
        // No generic netlink socket of the namespace is still held by this process…
        let held = try Self.genericNetlinkInodes(table)
        #expect(after.filter { link in held.contains { link == "socket:[\($0)]" } }.isEmpty)
        // …and 21 reads did not leave a descriptor each (other tests may open a few meanwhile).
        #expect(after.count - before.count < 21, "\(before.count) descriptors before, \(after.count) after")
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
}
