import Foundation
import Reachability
import Testing

@testable import ReachabilityCompat
@_spi(Testing) @testable import ReachabilityCore

/// Network's `NWPathMonitor` and the values its paths carry, from Apple's
/// documentation: non-throwing `init()` and `start(queue:)`, the handler's first
/// path then changes, gateways as `.hostPort` endpoints, `for await`.
@Suite("NWPathMonitor values")
struct NWPathMonitorValueTests {
    @Test("IPv4Address and IPv6Address parse literals and keep their bytes")
    func addresses() throws {
        let v4 = try #require(IPv4Address("192.0.2.1"))
        #expect(v4.rawValue == Data([192, 0, 2, 1]))
        #expect(v4.debugDescription == "192.0.2.1")
        #expect(IPv4Address(Data([192, 0, 2, 1])) == v4)
        #expect(IPv4Address("1.2.3") == nil && IPv4Address("::1") == nil && IPv4Address("host") == nil)
        #expect(IPv4Address.loopback.isLoopback && IPv4Address("169.254.1.1")?.isLinkLocal == true)
        #expect(IPv4Address("224.0.0.1")?.isMulticast == true && !v4.isMulticast)

        let v6 = try #require(IPv6Address("2001:db8::1"))
        #expect(v6.rawValue == Data([0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1]))
        #expect(v6.debugDescription == "2001:db8::1")
        #expect(IPv6Address("192.0.2.1") == nil && IPv6Address(Data([1, 2, 3, 4])) == nil)
        #expect(IPv6Address.loopback.isLoopback && IPv6Address("fe80::1")?.isLinkLocal == true)
        let scoped = try #require(IPv6Address("fe80::1%lo"))
        #expect(scoped.interface?.name == "lo")
        #expect(scoped.debugDescription == "fe80::1%lo")
        #expect(scoped != IPv6Address("fe80::1"))
    }

    @Test("NWEndpoint: hosts from strings, ports from integers, Network's text")
    func endpoints() {
        #expect(NWEndpoint.Host("192.0.2.1") == .ipv4(IPv4Address("192.0.2.1")!))
        #expect(NWEndpoint.Host("2001:db8::1") == .ipv6(IPv6Address("2001:db8::1")!))
        #expect(NWEndpoint.Host("example.com") == .name("example.com", nil))
        let literal: NWEndpoint.Host = "example.com"
        #expect(literal == .name("example.com", nil))
        let port: NWEndpoint.Port = 443
        #expect(port == .https && port.rawValue == 443 && NWEndpoint.Port("80") == .http)
        #expect(NWEndpoint.Port.any.rawValue == 0 && NWEndpoint.Port("x") == nil)
        #expect(NWEndpoint.hostPort(host: "192.0.2.1", port: 0).debugDescription == "192.0.2.1:0")
        #expect(NWEndpoint.hostPort(host: "2001:db8::1", port: 443).debugDescription == "2001:db8::1.443")
    }

    @Test("NWPath from a core path: status, reason (notAvailable when satisfied, as Network), interfaces, gateways")
    func pathMapping() throws {
        let eth = NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet)
        let core = NetworkPath(
            status: .satisfied, availableInterfaces: [eth],
            gateways: [try IPAddress("192.0.2.2"), try IPAddress("2001:db8::2")], supportsIPv4: true,
            supportsIPv6: true, supportsDNS: true)
        let path = NWPath(core)
        #expect(path.status == .satisfied && path.unsatisfiedReason == .notAvailable)
        #expect(path.availableInterfaces.map(\.name) == ["eth0"])
        #expect(path.availableInterfaces.first?.type == .wiredEthernet && path.availableInterfaces.first?.index == 2)
        #expect(
            path.gateways == [
                .hostPort(host: .ipv4(IPv4Address("192.0.2.2")!), port: 0),
                .hostPort(host: .ipv6(IPv6Address("2001:db8::2")!), port: 0),
            ])
        #expect(path.supportsIPv4 && path.supportsIPv6 && path.supportsDNS && !path.isExpensive)
        #expect(path.usesInterfaceType(.wiredEthernet) && !path.usesInterfaceType(.wifi))
        #expect(path.localEndpoint == nil && path.remoteEndpoint == nil)
        #expect(
            path.debugDescription
                == "satisfied (Path is satisfied), interface: eth0, ipv4, ipv6, dns, uses wiredEthernet")
        #expect(path == NWPath(core))

        let denied = NWPath(NetworkPath(status: .unsatisfied, unsatisfiedReason: .cellularDenied))
        #expect(denied.status == .unsatisfied && denied.unsatisfiedReason == .cellularDenied)
        #expect(denied != path)
        #expect(NWPath(NetworkPath(status: .requiresConnection)).status == .requiresConnection)
    }
}

@Suite("NWPathMonitor against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct NWPathMonitorIntegrationTests {
    @Test("init() and start(queue:) do not throw; the handler gets the first path, then each change")
    func handler() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let monitor = NWPathMonitor(environment: ns.environment)
        let log = CallLog<NWPath>()
        monitor.pathUpdateHandler = { log.append($0) }
        #expect(monitor.queue == nil)
        let queue = DispatchQueue(label: "test.nwpath")
        monitor.start(queue: queue)
        #expect(monitor.queue === queue)
        try await log.wait(for: "the first path") { !$0.isEmpty }
        let first = try #require(log.all.first)
        #expect(first.status == .satisfied)
        #expect(first.availableInterfaces.map(\.name) == ["veth0"])
        #expect(first.availableInterfaces.map(\.type) == [.wiredEthernet])
        #expect(first.gateways == [.hostPort(host: .ipv4(IPv4Address("192.0.2.2")!), port: .any)])
        #expect(first.supportsIPv4 && !first.supportsIPv6)
        #expect(first.usesInterfaceType(.wiredEthernet))
        #expect(monitor.currentPath == first)
        #expect(monitor.lastError == nil)

        try ns.ip("route del default")
        try await log.wait(for: "unsatisfied") { $0.last?.status == .unsatisfied }
        #expect(log.all.count == 2, "one update for one change: \(log.all)")
        #expect(log.all.last?.unsatisfiedReason == .notAvailable)
        #expect(log.all.last?.gateways.isEmpty == true)

        monitor.cancel()
        #expect(monitor.queue == nil)
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        #expect(monitor.currentPath.status == .satisfied, "evaluated afresh when cancelled")
    }

    @Test("Gateways are .hostPort endpoints with the gateway's host, IPv4 then IPv6")
    func gateways() async throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute("eth0", peer: "peer0")
        try ns.ip("-6 addr add 2001:db8::1/64 dev eth0 nodad")
        try ns.ip("-6 route add default via 2001:db8::2 dev eth0")
        let path = NWPathMonitor(environment: ns.environment).currentPath
        #expect(path.status == .satisfied && path.supportsIPv4 && path.supportsIPv6)
        let hosts = path.gateways.compactMap { endpoint -> NWEndpoint.Host? in
            guard case .hostPort(let host, let port) = endpoint, port == .any else { return nil }
            return host
        }
        #expect(hosts == [.ipv4(IPv4Address("192.0.2.2")!), .ipv6(IPv6Address("2001:db8::2")!)])
        #expect(path.gateways.map(\.debugDescription) == ["192.0.2.2:0", "2001:db8::2.0"])
    }

    @Test("Interface types: a prohibited modem gives cellularDenied; a required one is used, expensive")
    func interfaceTypes() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute("wwan0", peer: "tower0")
        let sysfs = try fakeSysfs(["wwan0": "wwan"])
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let environment = NetworkEnvironment(networkNamespacePath: ns.path, sysfsRoot: sysfs)

        let denied = NWPathMonitor(prohibitedInterfaceTypes: [.cellular], environment: environment).currentPath
        #expect(denied.status == .unsatisfied && denied.unsatisfiedReason == .cellularDenied)
        let cellular = NWPathMonitor(requiredInterfaceType: .cellular, environment: environment).currentPath
        #expect(cellular.status == .satisfied && cellular.isExpensive && cellular.usesInterfaceType(.cellular))
        #expect(
            NWPathMonitor(requiredInterfaceType: .wifi, environment: environment).currentPath.status == .unsatisfied)
    }

    @Test("for await starts the monitor, sees changes, and cancels it when the loop ends")
    func forAwait() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let monitor = NWPathMonitor(environment: ns.environment)
        #expect(monitor.monitor?.isRunning != true)
        var statuses: [NWPath.Status] = []
        for await path in monitor {
            statuses.append(path.status)
            #expect(monitor.monitor?.isRunning == true, "iterating started it")
            if statuses.count == 1 {
                try ns.ip("route del default")
            } else {
                break
            }
        }
        #expect(statuses == [.satisfied, .unsatisfied])
        #expect(monitor.monitor?.isRunning != true, "the loop's end cancelled it")
        #expect(monitor.queue == nil)

        // A second loop starts it again.
        for await path in monitor {
            #expect(path.status == .unsatisfied)
            break
        }
        #expect(monitor.monitor?.isRunning != true)
    }

    @Test("for await over a monitor started with start(queue:) leaves it started")
    func forAwaitStarted() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let monitor = NWPathMonitor(environment: ns.environment)
        let log = CallLog<NWPath>()
        monitor.pathUpdateHandler = { log.append($0) }
        monitor.start(queue: DispatchQueue(label: "test.nwpath.started"))
        for await path in monitor {
            #expect(path.status == .satisfied)
            break
        }
        #expect(monitor.monitor?.isRunning == true, "still started")
        try ns.ip("route del default")
        try await log.wait(for: "the handler still hears changes") { $0.last?.status == .unsatisfied }
        monitor.cancel()
    }

    @Test("A monitor that can't start: an unsatisfied monitorFailed path on the queue, and lastError")
    func startFailure() async throws {
        var ns: TestNamespace? = try TestNamespace()
        let monitor = NWPathMonitor(environment: try #require(ns).environment)
        ns = nil  // The namespace goes away before the start.
        let log = CallLog<NWPath>()
        monitor.pathUpdateHandler = { log.append($0) }
        monitor.start(queue: DispatchQueue(label: "test.nwpath.fail"))
        try await log.wait(for: "the failure path") { !$0.isEmpty }
        #expect(log.all.map(\.status) == [.unsatisfied])
        #expect(log.all.first?.unsatisfiedReason == .monitorFailed)
        #expect(monitor.lastError?.code == .namespace)
        #expect(monitor.currentPath.unsatisfiedReason == .monitorFailed)

        // A namespace path that never existed: the monitor can't even be made; that
        // shows the same way, and a for-await loop yields the failure path and ends.
        let missing = NWPathMonitor(environment: NetworkEnvironment(networkNamespacePath: "/nonexistent/ns/net"))
        #expect(missing.lastError?.code == .namespace)
        var paths: [NWPath] = []
        for await path in missing { paths.append(path) }
        #expect(paths.map(\.unsatisfiedReason) == [.monitorFailed])
        let missingLog = CallLog<NWPath>()
        missing.pathUpdateHandler = { missingLog.append($0) }
        missing.start(queue: DispatchQueue(label: "test.nwpath.missing"))
        try await missingLog.wait(for: "the failure path") { !$0.isEmpty }
        #expect(missingLog.all.map(\.unsatisfiedReason) == [.monitorFailed])
    }
}
