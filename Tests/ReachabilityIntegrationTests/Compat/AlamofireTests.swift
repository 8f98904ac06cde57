import Foundation
import Reachability
import Testing

@testable import ReachabilityCompat
@_spi(Testing) @testable import ReachabilityCore

/// What a compatibility callback was called with, in order, and a wait on it (the
/// three compatibility suites share it).
final class CallLog<Value: Sendable>: Sendable {
    private let values = LockedValue<[Value]>([])

    func append(_ value: Value) { values.withLock { $0.append(value) } }

    var all: [Value] { values.withLock { $0 } }

    func wait(for what: String, _ predicate: @escaping @Sendable ([Value]) -> Bool) async throws {
        do {
            try await eventually(what) { [values] in predicate(values.withLock { $0 }) }
        } catch {
            throw CommandFailed(command: "wait for \(what)", status: -1, stderr: "calls so far: \(all)")
        }
    }
}

typealias AlamofireStatus = NetworkReachabilityManager.NetworkReachabilityStatus

/// Alamofire's `NetworkReachabilityManager`, from its documented behaviour and its
/// own test suite (Tests/NetworkReachabilityManagerTests.swift): the status table,
/// the listener contract, the initializers.
@Suite("Alamofire NetworkReachabilityManager")
struct AlamofireStatusTableTests {
    /// Alamofire's mapping restated as a truth function: not reachable unless
    /// reachable and (no connection required, or one made automatically without
    /// intervention); then cellular when isWWAN.
    static func alamofire(_ flags: SCNetworkReachabilityFlags) -> AlamofireStatus {
        let automatic =
            (flags.contains(.connectionOnDemand) || flags.contains(.connectionOnTraffic))
            && !flags.contains(.interventionRequired)
        guard flags.contains(.reachable), !flags.contains(.connectionRequired) || automatic else {
            return .notReachable
        }
        return flags.contains(.isWWAN) ? .reachable(.cellular) : .reachable(.ethernetOrWiFi)
    }

    /// Apple's status in Alamofire's terms.
    static func apple(_ flags: SCNetworkReachabilityFlags) -> AlamofireStatus {
        switch NetworkStatus(flags: flags) {
        case .notReachable: .notReachable
        case .reachableViaWiFi: .reachable(.ethernetOrWiFi)
        case .reachableViaWWAN: .reachable(.cellular)
        }
    }

    static let combinations: [SCNetworkReachabilityFlags] = (0..<64).map { mask in
        let inputs: [SCNetworkReachabilityFlags] = [
            .reachable, .connectionRequired, .interventionRequired, .connectionOnTraffic, .connectionOnDemand, .isWWAN,
        ]
        return inputs.enumerated().reduce(into: []) { flags, entry in
            if mask & (1 << entry.offset) != 0 { flags.insert(entry.element) }
        }
    }

    @Test("Every combination of the six flags maps as Alamofire's rule says", arguments: combinations)
    func matchesAlamofire(_ flags: SCNetworkReachabilityFlags) {
        #expect(AlamofireStatus(flags) == Self.alamofire(flags), "flags \(flags)")
        let extra = flags.union([.transientConnection, .isLocalAddress, .isDirect])
        #expect(AlamofireStatus(extra) == AlamofireStatus(flags), "the other flags do not matter: \(flags)")
    }

    @Test(
        "The rows of Alamofire's own tests",
        arguments: [
            ([.connectionOnDemand], .notReachable),
            ([.reachable, .connectionRequired], .notReachable),
            ([.reachable, .connectionRequired, .interventionRequired], .notReachable),
            ([.reachable], .reachable(.ethernetOrWiFi)),
            ([.reachable, .connectionRequired, .connectionOnDemand], .reachable(.ethernetOrWiFi)),
            ([.reachable, .connectionRequired, .connectionOnTraffic], .reachable(.ethernetOrWiFi)),
            ([.reachable, .isWWAN], .reachable(.cellular)),
            ([.reachable, .isWWAN, .connectionRequired], .notReachable),
        ] as [(SCNetworkReachabilityFlags, AlamofireStatus)])
    func alamofireRows(_ flags: SCNetworkReachabilityFlags, _ status: AlamofireStatus) {
        #expect(AlamofireStatus(flags) == status)
    }

    @Test("Alamofire differs from Apple in one row only: reachable + connectionRequired + isWWAN, not automatic")
    func theRowWhereAlamofireDiffers() {
        let differing = Self.combinations.filter { AlamofireStatus($0) != Self.apple($0) }
        #expect(!differing.isEmpty)
        for flags in differing {
            #expect(flags.isSuperset(of: [.reachable, .connectionRequired, .isWWAN]), "flags \(flags)")
            #expect(AlamofireStatus(flags) == .notReachable)
            #expect(NetworkStatus(flags: flags) == .reachableViaWWAN)
        }
        // Every combination of that row without an automatic connection differs.
        #expect(differing.count == 5, "\(differing)")
    }

    @Test("init?(host:) is nil for what is no host; init?() and default exist")
    func initializers() {
        for bad in ["", "a b", "https://www.apple.com", "999.1.1.1", String(repeating: "a", count: 300)] {
            #expect(NetworkReachabilityManager(host: bad) == nil, "host \(bad)")
        }
        #expect(NetworkReachabilityManager(host: "localhost") != nil)
        #expect(NetworkReachabilityManager(host: "192.0.2.1") != nil)
        #expect(NetworkReachabilityManager() != nil)
        #expect(NetworkReachabilityManager.default != nil)
        #expect(
            NetworkReachabilityManager(environment: NetworkEnvironment(networkNamespacePath: "/nonexistent")) == nil)
    }
}

@Suite("Alamofire NetworkReachabilityManager against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct AlamofireIntegrationTests {
    /// A manager for the Internet in `ns`, listening on a queue of its own into a log.
    private func listening(in ns: TestNamespace) throws -> (NetworkReachabilityManager, CallLog<AlamofireStatus>) {
        let manager = try #require(NetworkReachabilityManager(environment: ns.environment))
        let log = CallLog<AlamofireStatus>()
        let started = manager.startListening(onQueue: DispatchQueue(label: "test.alamofire")) { log.append($0) }
        #expect(started)
        return (manager, log)
    }

    @Test("Start delivers the status once, then each change: link down, link up")
    func firstStatusThenChanges() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let (manager, log) = try listening(in: ns)
        try await log.wait(for: "the first status") { !$0.isEmpty }
        #expect(manager.status == .reachable(.ethernetOrWiFi))
        #expect(manager.flags == [.reachable])
        #expect(manager.isReachable && manager.isReachableOnEthernetOrWiFi && !manager.isReachableOnCellular)

        try ns.ip("link set veth0 down")
        try await log.wait(for: "notReachable") { $0.last == .notReachable }
        #expect(!manager.isReachable && !manager.isReachableOnEthernetOrWiFi)
        #expect(manager.status == .notReachable)

        try ns.ip("link set veth0 up")
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await log.wait(for: "reachable again") { $0.last == .reachable(.ethernetOrWiFi) }
        #expect(log.all == [.reachable(.ethernetOrWiFi), .notReachable, .reachable(.ethernetOrWiFi)])
        manager.stopListening()
    }

    @Test("stopListening, then startListening delivers the current status again, even the same one")
    func stopStart() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let (manager, first) = try listening(in: ns)
        try await first.wait(for: "the first start's status") { !$0.isEmpty }
        manager.stopListening()
        #expect(!manager.reachability.isRunning)

        try ns.ip("route del default")  // While stopped: delivered to nobody.
        let second = CallLog<AlamofireStatus>()
        #expect(manager.startListening(onQueue: DispatchQueue(label: "test.alamofire.2")) { second.append($0) })
        try await second.wait(for: "the second start's status") { !$0.isEmpty }
        #expect(second.all == [.notReachable])

        // Starting again (it stops first) delivers the same status again.
        #expect(manager.startListening(onQueue: DispatchQueue(label: "test.alamofire.3")) { second.append($0) })
        try await second.wait(for: "the third start's status") { $0.count == 2 }
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await second.wait(for: "reachable after the route is back") { $0.last == .reachable(.ethernetOrWiFi) }
        #expect(second.all == [.notReachable, .notReachable, .reachable(.ethernetOrWiFi)])
        #expect(first.all == [.reachable(.ethernetOrWiFi)], "the stopped listener heard nothing more")
        manager.stopListening()
    }

    @Test("A change that keeps the status (the route moves to another link) delivers nothing")
    func noDuplicateStatus() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.addVeth("veth2", peer: "veth3", address: "198.51.100.1/24")
        let (manager, log) = try listening(in: ns)
        // The core instance next to it sees every change of flags or interface.
        let core = try DeliveryLog.started(try Reachability(environment: ns.environment))
        try await log.wait(for: "the first status") { !$0.isEmpty }
        try await core.wait(forCount: 1, "the core's first delivery")

        try ns.ip("route replace default via 198.51.100.2 dev veth2")
        try await core.wait(for: "the core sees veth2") { $0.last?.interface == "veth2" }
        try ns.ip("route replace default via 192.0.2.2 dev veth0")
        try await core.wait(for: "the core sees veth0 again") { $0.count == 3 }
        try ns.ip("route del default")  // The marker: statuses are ordered.
        try await log.wait(for: "notReachable") { $0.last == .notReachable }
        // The two deliver on queues of their own: wait for the core's too.
        try await core.wait(forCount: 4, "the core sees no route")
        #expect(log.all == [.reachable(.ethernetOrWiFi), .notReachable])
        #expect(core.entries.map(\.interface) == ["veth0", "veth2", "veth0", nil])
        manager.stopListening()
    }

    @Test("startListening returns false when it can't start (the namespace is gone), and delivers nothing")
    func startFails() async throws {
        var ns: TestNamespace? = try TestNamespace()
        let environment = try #require(ns).environment
        let manager = try #require(NetworkReachabilityManager(environment: environment))
        ns = nil
        let log = CallLog<AlamofireStatus>()
        #expect(!manager.startListening(onQueue: DispatchQueue(label: "test.alamofire.fail")) { log.append($0) })
        #expect(!manager.reachability.isRunning)
        // Delivery would be asynchronous: a barrier on the manager's queue and the default one.
        manager.reachabilityQueue.sync {}
        Reachability.defaultNotificationQueue.sync {}
        #expect(log.all.isEmpty)
    }

    @Test("init?(host:): a name from the namespace's hosts file; reachable on-link, not without a route")
    func hostManager() async throws {
        let ns = try TestNamespace(named: "rcompat-af")
        try ns.disableIPv6()
        try ns.addVeth("veth0", peer: "veth1", address: "192.0.2.1/24")
        try ns.writeEtc("resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        try ns.writeEtc("hosts", "192.0.2.80 near.rcompat\n203.0.113.5 far.rcompat\n")

        let near = try #require(NetworkReachabilityManager(host: "near.rcompat", environment: ns.environment))
        let nearLog = CallLog<AlamofireStatus>()
        #expect(near.startListening(onQueue: DispatchQueue(label: "test.near")) { nearLog.append($0) })
        let far = try #require(NetworkReachabilityManager(host: "far.rcompat", environment: ns.environment))
        let farLog = CallLog<AlamofireStatus>()
        #expect(far.startListening(onQueue: DispatchQueue(label: "test.far")) { farLog.append($0) })

        try await nearLog.wait(for: "near's first status") { !$0.isEmpty }
        try await farLog.wait(for: "far's first status") { !$0.isEmpty }
        // The first status waits for the name's resolution: no provisional answer first.
        #expect(nearLog.all == [.reachable(.ethernetOrWiFi)])
        #expect(farLog.all == [.notReachable])
        #expect(near.isReachableOnEthernetOrWiFi)
        #expect(near.flags == [.reachable, .isDirect])
        #expect(!far.isReachable)

        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await farLog.wait(for: "far reachable via the new default route") { $0.count == 2 }
        #expect(farLog.all == [.notReachable, .reachable(.ethernetOrWiFi)])
        #expect(nearLog.all == [.reachable(.ethernetOrWiFi)], "near's status did not change")
        near.stopListening()
        far.stopListening()
    }

    @Test("A modem during IPv6 DAD: Apple says reachableViaWWAN, Alamofire notReachable; then cellular")
    func cellularConnectionRequired() async throws {
        let ns = try TestNamespace()
        try ns.ipv6WithSlowDAD("wwan0", peer: "tower0")
        let sysfs = try fakeSysfs(["wwan0": "wwan"])
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let environment = NetworkEnvironment(networkNamespacePath: ns.path, sysfsRoot: sysfs)

        let core = try DeliveryLog.started(try Reachability(environment: environment))
        let manager = try #require(NetworkReachabilityManager(environment: environment))
        let log = CallLog<AlamofireStatus>()
        #expect(manager.startListening(onQueue: DispatchQueue(label: "test.wwan")) { log.append($0) })
        try await core.wait(forCount: 1, "the core's first delivery")
        try await log.wait(for: "the first status") { !$0.isEmpty }
        let first = try #require(core.entries.first)
        try #require(
            first.flags.isSuperset(of: [.reachable, .connectionRequired, .isWWAN]),
            "DAD still running at start: \(first)")
        #expect(first.status == .reachableViaWWAN)
        #expect(log.all.first == .notReachable)

        try await log.wait(for: "cellular once DAD ends") { $0.last == .reachable(.cellular) }
        #expect(log.all == [.notReachable, .reachable(.cellular)])
        #expect(manager.isReachableOnCellular && !manager.isReachableOnEthernetOrWiFi)
        manager.stopListening()
    }
}
