import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// Metered paths without NetworkManager, against the real
/// kernel: a USB-tethered phone (its driver, from sysfs) and a network whose DHCP
/// server says `ANDROID_METERED` (dnsmasq handing option 43, a real dhclient
/// writing its lease) make the path expensive.
@Suite("Metered paths: tethering and ANDROID_METERED", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct MeteredIntegrationTests {
    @Test("an interface whose driver is rndis_host (Android USB tethering) makes the path expensive")
    func usbTethering() async throws {
        let sysfs = try fakeTetheredSysfs()
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let environment = NetworkEnvironment(networkNamespacePath: ns.path, sysfsRoot: sysfs)
        let path = try PathMonitor(environment: environment).currentPath
        #expect(path.status == .satisfied)
        #expect(path.isExpensive)
        #expect(path.usesInterfaceType(.wiredEthernet))
        // Without the driver fact, the same link is a free wired one.
        #expect(
            try !PathMonitor(environment: NetworkEnvironment(networkNamespacePath: ns.path)).currentPath.isExpensive)
    }

    @Test("dnsmasq says ANDROID_METERED (option 43), dhclient records it: the running monitor's path turns expensive")
    func androidMetered() async throws {
        let root = NSTemporaryDirectory() + "rtest-metered-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root + "/var/lib/dhcp", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let network = try TestNamespace()
        let host = try TestNamespace()
        try network.disableIPv6()
        try host.disableIPv6()
        try network.addVeth("dhcp0", peerIn: host, peer: "lan0", address: "192.0.2.1/24")
        // A static address and route first: the path is satisfied and free before the lease.
        try host.ip("addr add 192.0.2.99/24 dev lan0")
        try host.ip("route add default via 192.0.2.1 dev lan0")
        let environment = NetworkEnvironment(networkNamespacePath: host.path, leaseRoot: root)
        let log = try await PathLog.started(try PathMonitor(environment: environment), queue: "metered")
        #expect(log.paths.last?.isExpensive == false)

        let dnsmasq = try network.spawn([
            "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--user=root",
            "--port=0", "--interface=dhcp0", "--bind-interfaces", "--dhcp-authoritative",
            "--dhcp-range=192.0.2.10,192.0.2.20,255.255.255.0,1h", "--dhcp-option-force=43,ANDROID_METERED",
            "--dhcp-leasefile=\(root)/dnsmasq.leases", "--pid-file=",
        ])
        defer { dnsmasq.terminate() }
        let script = root + "/dhclient-script"
        try "#!/bin/sh\nexit 0\n".write(toFile: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        let leaseFile = root + "/var/lib/dhcp/dhclient.lan0.leases"
        let pidFile = root + "/dhclient.pid"
        defer {
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
                let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1
            {
                kill(pid, SIGTERM)
            }
        }
        _ = try await offPool {
            try host.run(["timeout", "90", "dhclient", "-1", "-lf", leaseFile, "-pf", pidFile, "-sf", script, "lan0"])
        }
        let lease = try String(contentsOfFile: leaseFile, encoding: .utf8)
        #expect(lease.contains("vendor-encapsulated-options \"ANDROID_METERED\""), "\(lease)")
        try await log.wait(for: "the metered path") { $0.last?.isExpensive == true }
        #expect(log.paths.last?.status == .satisfied)

        // A later lease without the option (another network): free again.
        try (lease.replacingOccurrences(of: "ANDROID_METERED", with: "SOMETHING_ELSE"))
            .write(toFile: leaseFile, atomically: true, encoding: .utf8)
        try await log.wait(for: "the free path") { $0.last?.isExpensive == false }
    }
}
