import Foundation
import Reachability
import Testing

@testable import ReachabilityCompat
@_spi(Testing) @testable import ReachabilityCore

/// DTFoundation's `DTReachability`, from its header's documented behaviour: each
/// observer block is called once right after it is added, then every time the
/// flags change; the shared instance watches only while it has observers;
/// `isReachable` is reachable and not connectionRequired.
@Suite("DTReachability")
struct DTReachabilityInformationTests {
    @Test(
        "isReachable() is reachable and no connection required; isWWAN() is that over cellular",
        arguments: [
            ([], false, false),
            ([.reachable], true, false),
            ([.reachable, .isDirect], true, false),
            ([.reachable, .connectionRequired], false, false),
            ([.reachable, .connectionRequired, .connectionOnDemand], false, false),
            ([.reachable, .isWWAN], true, true),
            ([.reachable, .isWWAN, .connectionRequired], false, false),
            ([.isWWAN], false, false),
        ] as [(SCNetworkReachabilityFlags, Bool, Bool)])
    func information(_ flags: SCNetworkReachabilityFlags, _ reachable: Bool, _ wwan: Bool) {
        let information = DTReachabilityInformation(reachabilityFlags: flags)
        #expect(information.reachabilityFlags == flags)
        #expect(information.isReachable() == reachable)
        #expect(information.isWWAN() == wwan)
    }
}

extension DTReachability {
    /// Whether the core notifier is started: running, or starting (a hostname's
    /// start waits for its first resolution).
    var isWatching: Bool {
        guard let reachability else { return false }
        return reachability.isRunning || reachability.core.storage.withLock { $0.machine.isStarting }
    }
}

@Suite("DTReachability against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct DTReachabilityIntegrationTests {
    @Test("The shared instance starts with its first observer and stops with its last")
    func sharedInstanceLifecycle() {
        let shared = DTReachability.default()
        #expect(DTReachability.defaultReachability() === shared)
        #expect(shared.hostname == "apple.com")
        #expect(!shared.isWatching)
        let first = shared.addReachabilityObserver { _ in }
        #expect(shared.isWatching)
        let second = shared.addReachabilityObserverWithBlock { _ in }
        shared.removeReachabilityObserver(first)
        #expect(shared.isWatching, "one observer is left")
        shared.removeReachabilityObserver(first)  // Twice: nothing.
        shared.removeReachabilityObserver("not a token")
        #expect(shared.isWatching)
        shared.removeReachabilityObserver(second)
        #expect(!shared.isWatching)
    }

    @Test("Observers get the current information at once, then each change of flags; removed ones nothing")
    func observers() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let reachability = DTReachability(
            hostname: "203.0.113.9", environment: ns.environment, notificationQueue: DispatchQueue(label: "test.dt"))
        #expect(!reachability.isWatching)

        let first = CallLog<SCNetworkReachabilityFlags>()
        let token = reachability.addReachabilityObserver { first.append($0.reachabilityFlags) }
        #expect(reachability.isWatching)
        try await first.wait(for: "the first call") { !$0.isEmpty }
        #expect(first.all == [.reachable])

        let second = CallLog<SCNetworkReachabilityFlags>()
        let other = reachability.addReachabilityObserver { second.append($0.reachabilityFlags) }
        try await second.wait(for: "the second observer's first call") { !$0.isEmpty }
        #expect(second.all == [.reachable], "called at once with the current information")

        try ns.ip("route del default")
        try await first.wait(for: "not reachable") { $0.count == 2 }
        try await second.wait(for: "not reachable") { $0.count == 2 }
        #expect(first.all == [.reachable, []])

        reachability.removeReachabilityObserver(token)
        #expect(reachability.isWatching)
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await second.wait(for: "reachable again") { $0.count == 3 }
        #expect(second.all == [.reachable, [], .reachable])
        #expect(first.all.count == 2, "the removed observer heard nothing more")

        reachability.removeReachabilityObserver(other)
        #expect(!reachability.isWatching)
    }

    @Test("A change of interface alone is not a change of flags: no call")
    func flagsOnly() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.addVeth("veth2", peer: "veth3", address: "198.51.100.1/24")
        let reachability = DTReachability(hostname: "203.0.113.9", environment: ns.environment)
        let log = CallLog<SCNetworkReachabilityFlags>()
        let token = reachability.addReachabilityObserver { log.append($0.reachabilityFlags) }
        let core = try DeliveryLog.started(try Reachability(address: "203.0.113.9", environment: ns.environment))
        try await log.wait(for: "the first call") { !$0.isEmpty }
        try await core.wait(forCount: 1, "the core's first delivery")

        try ns.ip("route replace default via 198.51.100.2 dev veth2")
        try await core.wait(for: "the core sees veth2") { $0.last?.interface == "veth2" }
        try ns.ip("route del default")  // The marker.
        try await log.wait(for: "not reachable") { $0.count >= 2 }
        #expect(log.all == [.reachable, []])
        reachability.removeReachabilityObserver(token)
    }

    @Test("IPv6 DAD: reachable + connectionRequired is not isReachable(); it is once DAD ends")
    func connectionRequired() async throws {
        let ns = try TestNamespace()
        try ns.ipv6WithSlowDAD("veth0", peer: "veth1")
        let reachability = DTReachability(hostname: "2001:db8:1::1", environment: ns.environment)
        let log = CallLog<DTReachabilityInformation>()
        let token = reachability.addReachabilityObserver { log.append($0) }
        try await log.wait(for: "the first call") { !$0.isEmpty }
        let first = try #require(log.all.first)
        #expect(first.reachabilityFlags.isSuperset(of: [.reachable, .connectionRequired]), "\(first)")
        #expect(!first.isReachable())

        try await log.wait(for: "reachable once DAD ends") { $0.last?.isReachable() == true }
        #expect(log.all.last?.reachabilityFlags == [.reachable])
        reachability.removeReachabilityObserver(token)
    }

    @Test("setHostname: observers follow the new host; a name from the namespace's hosts file")
    func setHostname() async throws {
        let ns = try TestNamespace(named: "rcompat-dt")
        try ns.disableIPv6()
        try ns.addVeth("veth0", peer: "veth1", address: "192.0.2.1/24")
        try ns.writeEtc("resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        try ns.writeEtc("hosts", "192.0.2.80 near.rcompat\n203.0.113.5 far.rcompat\n")
        let reachability = DTReachability(hostname: "near.rcompat", environment: ns.environment)
        let log = CallLog<SCNetworkReachabilityFlags>()
        let token = reachability.addReachabilityObserver { log.append($0.reachabilityFlags) }
        try await log.wait(for: "near's first call") { !$0.isEmpty }
        #expect(log.all == [[.reachable, .isDirect]], "the first call waits for the name's resolution")

        reachability.setHostname("far.rcompat")
        #expect(reachability.hostname == "far.rcompat")
        #expect(reachability.isWatching)
        try await log.wait(for: "far's first call") { $0.count == 2 }
        #expect(log.all == [[.reachable, .isDirect], []])
        reachability.removeReachabilityObserver(token)
        #expect(!reachability.isWatching)
    }

    @Test("A hostname that is not valid: never watching, lastError says why")
    func invalidHostname() {
        let reachability = DTReachability(hostname: "not a host")
        #expect(reachability.lastError?.code == .invalidHostname)
        let token = reachability.addReachabilityObserver { _ in }
        #expect(!reachability.isWatching)
        #expect(reachability.lastError?.code == .invalidHostname)
        reachability.removeReachabilityObserver(token)
    }
}
