import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// Records every path a PathMonitor delivers and lets a test wait for one.
final class PathLog: Sendable {
    private let state = LockedValue<[NetworkPath]>([])
    /// Keeps the monitor alive as long as the log: Swift may release a local after
    /// its last use, and a released monitor cancels itself (by design).
    let monitor: PathMonitor

    init(_ monitor: PathMonitor) {
        self.monitor = monitor
        monitor.pathUpdateHandler = { [weak self] path in self?.state.withLock { $0.append(path) } }
    }

    /// A log of `monitor`'s paths, then the monitor started on a queue labelled
    /// `label`; returns once the first path is in.
    static func started(_ monitor: PathMonitor, queue label: String) async throws -> PathLog {
        let log = PathLog(monitor)
        monitor.notificationQueue = DispatchQueue(label: label)
        try monitor.start()
        try await log.wait(for: "the first path") { !$0.isEmpty }
        return log
    }

    var paths: [NetworkPath] { state.withLock { $0 } }

    func wait(for what: String, _ predicate: @escaping @Sendable ([NetworkPath]) -> Bool) async throws {
        do {
            try await eventually(what) { [state] in predicate(state.withLock { $0 }) }
        } catch {
            throw CommandFailed(command: "wait for \(what)", status: -1, stderr: "paths so far: \(paths)")
        }
    }
}

/// A sysfs tree that presents some interfaces as Wi-Fi or modems.
func fakeSysfs(_ devtypes: [String: String]) throws -> String {
    let root = NSTemporaryDirectory() + "rtest-sysfs-\(UUID().uuidString)"
    for (name, devtype) in devtypes {
        let directory = "\(root)/class/net/\(name)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "INTERFACE=\(name)\nDEVTYPE=\(devtype)\n".write(
            toFile: "\(directory)/uevent", atomically: true, encoding: .utf8)
    }
    return root
}

/// ``fakeSysfs(_:)`` with veth0 as ethernet whose device's driver is rndis_host
/// (Android USB tethering): a metered link.
func fakeTetheredSysfs() throws -> String {
    let sysfs = try fakeSysfs(["veth0": "ethernet"])
    try FileManager.default.createDirectory(
        atPath: "\(sysfs)/class/net/veth0/device", withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(
        atPath: "\(sysfs)/class/net/veth0/device/driver", withDestinationPath: "../../../bus/usb/drivers/rndis_host")
    return sysfs
}

@Suite("PathMonitor against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct PathMonitorIntegrationTests {
    @Test("A direct subscriber gets the first path before start returns, then each change, with no queue hop")
    func directSubscriber() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let monitor = try PathMonitor(environment: ns.environment)
        let seen = LockedValue<[NetworkPath]>([])
        try monitor.start(directly: { path in seen.withLock { $0.append(path) } })
        // Handed over on the starting thread, before start returned.
        #expect(seen.withLock { $0.map(\.status) } == [.satisfied])
        try ns.ip("route del default")
        try await eventually("the unsatisfied path") { seen.withLock { $0.last?.status == .unsatisfied } }
        #expect(seen.withLock { $0.count } == 2, "one call for one change: \(seen.withLock { $0 })")
        monitor.stop()
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        // Cancelled: a later change is not handed over (a running watcher would see it).
        let other = try PathMonitor(environment: ns.environment)
        let log = try await PathLog.started(other, queue: "test.path.other")
        try await log.wait(for: "satisfied again") { $0.last?.status == .satisfied }
        #expect(seen.withLock { $0.count } == 2)
        other.stop()
    }

    @Test("Two default routes: preference follows the metric; removing the preferred one puts the other first")
    func preferenceOrder() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.addVeth("eth1", peer: "peer1", address: "192.0.2.1/24")
        try ns.addVeth("eth2", peer: "peer2", address: "198.51.100.1/24")
        try ns.ip("route add default via 198.51.100.2 dev eth2 metric 200")
        try ns.ip("route add default via 192.0.2.2 dev eth1 metric 100")
        let monitor = try PathMonitor(environment: ns.environment)
        let log = try await PathLog.started(monitor, queue: "test.path")
        let first = try #require(log.paths.first)
        #expect(first.status == .satisfied)
        #expect(first.availableInterfaces.map(\.name) == ["eth1", "eth2"])
        #expect(first.gateways == [try IPAddress("192.0.2.2"), try IPAddress("198.51.100.2")])
        #expect(first.usesInterfaceType(.wiredEthernet))
        #expect(!first.isExpensive && !first.isConstrained)
        #expect(monitor.currentPath == first)

        try ns.ip("route del default via 192.0.2.2 dev eth1")
        try await log.wait(for: "eth2 first") { $0.last?.availableInterfaces.first?.name == "eth2" }
        #expect(log.paths.count == 2, "one update for one change: \(log.paths)")
        #expect(log.paths.last?.availableInterfaces.map(\.name) == ["eth2", "eth1"])
        #expect(log.paths.last?.gateways == [try IPAddress("198.51.100.2")])
        monitor.stop()
    }

    @Test("requiredInterfaceType .wifi: satisfied only while the (sysfs-presented) Wi-Fi interface is usable")
    func requiredWiFi() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.addVeth("wlan0", peer: "ap0", address: "192.0.2.1/24")
        try ns.addVeth("eth0", peer: "sw0", address: "198.51.100.1/24")
        try ns.ip("route add default via 192.0.2.2 dev wlan0 metric 600")
        try ns.ip("route add default via 198.51.100.2 dev eth0 metric 100")
        let sysfs = try fakeSysfs(["wlan0": "wlan"])
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let environment = NetworkEnvironment(networkNamespacePath: ns.path, sysfsRoot: sysfs)

        let wifiOnly = try PathMonitor(requiredInterfaceType: .wifi, environment: environment)
        let all = try PathMonitor(environment: environment)
        let log = try await PathLog.started(wifiOnly, queue: "test.wifi")
        #expect(log.paths.first?.status == .satisfied)
        #expect(log.paths.first?.availableInterfaces.map(\.name) == ["wlan0"])
        #expect(log.paths.first?.availableInterfaces.map(\.type) == [.wifi])
        #expect(log.paths.first?.usesInterfaceType(.wifi) == true)
        #expect(all.currentPath.availableInterfaces.map(\.name) == ["eth0", "wlan0"])

        try ns.ip("link set ap0 down")  // The access point goes away: no carrier on wlan0.
        try await log.wait(for: "unsatisfied without Wi-Fi") { $0.last?.status == .unsatisfied }
        #expect(log.paths.last?.unsatisfiedReason == .notAvailable)
        #expect(log.paths.last?.availableInterfaces.isEmpty == true)
        #expect(all.currentPath.status == .satisfied, "the wired path is still there for an unrestricted monitor")

        try ns.ip("link set ap0 up")
        try await log.wait(for: "satisfied again") { $0.last?.status == .satisfied }
        wifiOnly.stop()
    }

    @Test("prohibitedInterfaceTypes [.cellular]: a (sysfs-presented) modem is ignored")
    func prohibitedCellular() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute("wwan0", peer: "tower0")
        let sysfs = try fakeSysfs(["wwan0": "wwan"])
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let environment = NetworkEnvironment(networkNamespacePath: ns.path, sysfsRoot: sysfs)

        let anything = try PathMonitor(environment: environment).currentPath
        #expect(anything.status == .satisfied)
        #expect(anything.availableInterfaces.map(\.type) == [.cellular])
        #expect(anything.isExpensive)
        #expect(anything.usesInterfaceType(.cellular))
        // Reachability agrees: WWAN.
        #expect(try Reachability(environment: environment).flags == [.reachable, .isWWAN, .transientConnection])

        let noCellular = try PathMonitor(prohibitedInterfaceTypes: [.cellular], environment: environment)
        let log = try await PathLog.started(noCellular, queue: "test.cell")
        #expect(log.paths.first == NetworkPath(status: .unsatisfied, unsatisfiedReason: .cellularDenied))

        // Overrides: the modem marked inexpensive and constrained.
        let options = PathMonitor.Options(expensiveInterfaces: ["wwan0": false], constrainedInterfaces: ["wwan0"])
        let overridden = try PathMonitor(environment: environment, options: options).currentPath
        #expect(!overridden.isExpensive && overridden.isConstrained)
    }

    @Test("Only tentative IPv6: requiresConnection, then satisfied when DAD ends")
    func tentativeIPv6() async throws {
        let ns = try TestNamespace()
        try ns.ipv6WithSlowDAD("eth0", peer: "peer0")
        let monitor = try PathMonitor(environment: ns.environment)
        let log = try await PathLog.started(monitor, queue: "test.dad")
        #expect(log.paths.first?.status == .requiresConnection)
        try await log.wait(for: "satisfied after DAD") { $0.last?.status == .satisfied }
        let last = try #require(log.paths.last)
        #expect(last.supportsIPv6 && !last.supportsIPv4)
        #expect(last.gateways == [try IPAddress("2001:db8::2")])
    }

    @Test("IPv4-only vs dual-stack; gateways; supportsDNS follows resolv.conf")
    func familiesGatewaysDNS() async throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute("eth0", peer: "peer0")
        let withDNS = NSTemporaryDirectory() + "rtest-resolv-\(UUID().uuidString)"
        let withoutDNS = withDNS + "-empty"
        let stubOnly = withDNS + "-stub"
        try "# test\nnameserver 192.0.2.53\n".write(toFile: withDNS, atomically: true, encoding: .utf8)
        try "search example\n".write(toFile: withoutDNS, atomically: true, encoding: .utf8)
        try "nameserver 127.0.0.53\n".write(toFile: stubOnly, atomically: true, encoding: .utf8)
        defer { for file in [withDNS, withoutDNS, stubOnly] { try? FileManager.default.removeItem(atPath: file) } }

        let monitor = try PathMonitor(environment: ns.environment, options: .init(resolvConfPath: withDNS))
        let ipv4Only = monitor.currentPath
        #expect(ipv4Only.status == .satisfied)
        #expect(ipv4Only.supportsIPv4 && !ipv4Only.supportsIPv6)
        #expect(ipv4Only.gateways == [try IPAddress("192.0.2.2")])
        #expect(ipv4Only.supportsDNS)
        #expect(
            try PathMonitor(environment: ns.environment, options: .init(resolvConfPath: withoutDNS))
                .currentPath.supportsDNS == false)
        // Only systemd-resolved's stub, and no upstream list at the default path in this test: not configured
        // unless /run/systemd/resolve/resolv.conf has servers on this machine.
        let resolvedHasServers = !DNSConfiguration.nameservers(in: "/run/systemd/resolve/resolv.conf").isEmpty
        #expect(
            try PathMonitor(environment: ns.environment, options: .init(resolvConfPath: stubOnly))
                .currentPath.supportsDNS == resolvedHasServers)

        let log = try await PathLog.started(monitor, queue: "test.fam")
        try ns.ip("-6 addr add 2001:db8::1/64 dev eth0 nodad")
        try ns.ip("-6 route add default via 2001:db8::2 dev eth0")
        try await log.wait(for: "dual-stack") { $0.last?.supportsIPv6 == true }
        let dual = try #require(log.paths.last)
        #expect(dual.supportsIPv4 && dual.supportsIPv6)
        #expect(dual.gateways == [try IPAddress("192.0.2.2"), try IPAddress("2001:db8::2")])
    }

    @Test(
        "A resolv.conf of the caller's is watched while the monitor runs, one it can't watch read at every pass: supportsDNS follows"
    )
    func ownResolvConfWatched() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let directory = NSTemporaryDirectory() + "rtest-resolvdir-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/resolv.conf"
        try "nameserver 192.0.2.53\n".write(toFile: path, atomically: true, encoding: .utf8)
        let monitor = try PathMonitor(environment: ns.environment, options: .init(resolvConfPath: path))
        let log = try await PathLog.started(monitor, queue: "test.resolv")
        #expect(log.paths.last?.supportsDNS == true)
        // Read when it changes, not per pass: a new file in place, then one written over.
        try "search example\n".write(toFile: path, atomically: true, encoding: .utf8)
        try await log.wait(for: "no DNS once the nameserver is gone") { $0.last?.supportsDNS == false }
        try "nameserver 192.0.2.54\n".write(toFile: path, atomically: false, encoding: .utf8)
        try await log.wait(for: "DNS again") { $0.last?.supportsDNS == true }
        monitor.stop()

        // One it can't watch (its directory doesn't exist yet) is read at every pass.
        let later = directory + "/later/resolv.conf"
        let unwatched = try PathMonitor(environment: ns.environment, options: .init(resolvConfPath: later))
        let unwatchedLog = try await PathLog.started(unwatched, queue: "test.resolv.later")
        #expect(unwatchedLog.paths.last?.supportsDNS == false)
        try FileManager.default.createDirectory(atPath: directory + "/later", withIntermediateDirectories: false)
        try "nameserver 192.0.2.55\n".write(toFile: later, atomically: true, encoding: .utf8)
        try ns.ip("addr add 192.0.2.77/24 dev veth0")
        try await unwatchedLog.wait(for: "DNS at the address's pass") { $0.last?.supportsDNS == true }
        unwatched.stop()
    }

    @Test(
        "for await over a stopped monitor starts it, yields the first path and each change, and cancels it when the loop ends"
    )
    func iterationStartsAndEnds() async throws {
        try await runningAtMost(.seconds(60), "the for await loops") { try await Self.iterationStartsAndEnds() }
    }

    private static func iterationStartsAndEnds() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        var statuses: [NetworkPath.Status] = []
        // The README's form: the monitor lives as long as the loop.
        for await path in try PathMonitor(environment: ns.environment) {
            statuses.append(path.status)
            if statuses.count == 1 {
                try ns.ip("route del default")
            } else {
                break
            }
        }
        #expect(statuses == [.satisfied, .unsatisfied])

        let monitor = try PathMonitor(environment: ns.environment)
        #expect(!monitor.isRunning)
        for await path in monitor {
            #expect(path.status == .unsatisfied)
            #expect(monitor.isRunning, "iterating started it")
            break
        }
        try await eventually("the monitor cancelled after the loop") { !monitor.isRunning }

        // Started by its owner: a loop over it leaves it running (a later change still
        // reaches the owner's handler).
        let queue = DispatchQueue(label: "test.owned")
        let log = PathLog(monitor)
        monitor.notificationQueue = queue
        try monitor.start()
        for await _ in monitor { break }
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await log.wait(for: "satisfied after the loop") { $0.last?.status == .satisfied }
        #expect(monitor.notificationQueue === queue)
        monitor.stop()
    }

    @Test("No update when nothing relevant changed (a route in another table); the async sequence sees changes")
    func noSpuriousUpdates() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute("eth0", peer: "peer0")
        try ns.addVeth("eth1", peer: "peer1")
        let monitor = try PathMonitor(environment: ns.environment)
        let log = PathLog(monitor)
        monitor.notificationQueue = DispatchQueue(label: "test.quiet")
        try monitor.start()
        var paths = monitor.makeAsyncIterator()
        try await log.wait(for: "the first path") { !$0.isEmpty }
        #expect(await paths.next()?.status == .satisfied)

        try ns.batch((1...50).map { "route add 10.9.\($0).0/24 dev eth1 table 100" })
        try ns.ip("route del default")  // The marker: updates are ordered, so a spurious one would come first.
        try await log.wait(for: "unsatisfied") { $0.last?.status == .unsatisfied }
        #expect(log.paths.map(\.status) == [.satisfied, .unsatisfied])
        #expect(await paths.next()?.status == .unsatisfied)
        monitor.stop()
        #expect(await paths.next() == nil, "cancel finishes the sequence")
    }
}
