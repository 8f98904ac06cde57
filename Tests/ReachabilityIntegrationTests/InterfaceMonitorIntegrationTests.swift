import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// `InterfaceMonitor` against the real kernel: every carrier, address and default
/// route change comes as a new list, from rtnetlink events, with no polling.
@Suite("InterfaceMonitor against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct InterfaceMonitorIntegrationTests {
    /// Collects every list a monitor's sequence yields, until it finishes.
    final class Collected: Sendable {
        let lists = LockedValue<[[InterfaceDetails]]>([])
        let finished = LockedValue(false)

        init(_ updates: AsyncStream<[InterfaceDetails]>) {
            Task { [lists, finished] in
                for await list in updates { lists.withLock { $0.append(list) } }
                finished.withLock { $0 = true }
            }
        }

        var last: [InterfaceDetails] { lists.withLock { $0.last ?? [] } }
        func veth0() -> InterfaceDetails? { last.first { $0.interface.name == "veth0" } }
    }

    @Test("Carrier, address and default route changes each bring a list; cancel ends the sequence")
    func changes() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ip("link add veth0 type veth peer name veth1")
        try ns.ip("link set veth0 up")
        let monitor = try InterfaceMonitor(environment: ns.environment)
        let collected = Collected(monitor.updates)
        try monitor.start()

        try await eventually("the first list") { collected.veth0() != nil }
        #expect(collected.veth0()?.hasCarrier == false)
        #expect(collected.last.map(\.interface.name).sorted() == ["lo", "veth0", "veth1"])

        try ns.ip("link set veth1 up")
        try await eventually("veth0's carrier") { collected.veth0()?.hasCarrier == true }
        try ns.ip("addr add 192.0.2.1/24 dev veth0")
        try await eventually("veth0's address") { collected.veth0()?.addresses.map(\.description) == ["192.0.2.1/24"] }
        #expect(collected.veth0()?.defaultRouteFamilies == [])
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await eventually("the default route") { collected.veth0()?.defaultRouteFamilies == [.ipv4] }
        #expect(monitor.currentInterfaces == collected.last)

        // An unrelated route is not a change of any interface: no new list. The carrier
        // loss after it is the sentinel; the kernel may report it in more than one
        // message (veth1 down, then veth0's carrier), so the lists after the route are
        // counted by what they say, not by how many came: a list the route brought would
        // repeat the one before it.
        let count = collected.lists.withLock { $0.count }
        try ns.ip("route add 203.0.113.0/24 via 192.0.2.2 dev veth0")
        try ns.ip("link set veth1 down")
        try await eventually("the carrier loss") { collected.veth0()?.hasCarrier == false }
        let lists = collected.lists.withLock { $0 }
        #expect(lists.count > count)
        for index in lists.indices.dropFirst() {
            #expect(lists[index] != lists[index - 1], "list \(index) repeats the one before it")
        }

        monitor.stop()
        try await eventually("the sequence's end") { collected.finished.withLock { $0 } }
        // Stopped: read afresh.
        #expect(monitor.currentInterfaces.first { $0.interface.name == "veth0" }?.hasCarrier == false)
    }

    @Test("The namespace goes away: the sequence finishes and lastError says why")
    func namespaceGone() async throws {
        var ns: TestNamespace? = try TestNamespace(named: "rtest-ifmon")
        let monitor = try InterfaceMonitor(environment: try #require(ns).environment)
        let collected = Collected(monitor.updates)
        try monitor.start()
        try await eventually("the first list") { !collected.last.isEmpty }
        try #require(ns).delete()  // /run/netns/NAME goes; the monitor notices the namespace is gone.
        ns = nil
        try await eventually("the sequence's end") { collected.finished.withLock { $0 } }
        #expect(monitor.lastError?.code == .namespace)
    }

    @Test("A bad environment throws at init: a missing namespace file")
    func badEnvironment() {
        #expect(throws: ReachabilityError.self) {
            try InterfaceMonitor(environment: NetworkEnvironment(networkNamespacePath: "/run/netns/rtest-no-such-ns"))
        }
    }
}
