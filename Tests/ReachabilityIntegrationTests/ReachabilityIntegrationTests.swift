import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// Against the real kernel, each test in a network namespace of its own (so they
/// can run in parallel). See DESIGN §9.
@Suite("Reachability against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct ReachabilityIntegrationTests {
    @Test("IPv4 default route: the Internet is reachable over wired Ethernet")
    func ipv4DefaultRoute() async throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute()
        let reachability = try Reachability(environment: ns.environment)
        // Without the notifier: evaluated afresh.
        #expect(reachability.currentReachabilityStatus == .reachableViaWiFi)
        #expect(reachability.flags == [.reachable])
        #expect(reachability.interfaceType == .wiredEthernet)
        #expect(reachability.interface?.name == "veth0")
        #expect(!reachability.connectionRequired)

        let log = try DeliveryLog.started(reachability)
        try await log.wait(forCount: 1, "the initial delivery")
        #expect(log.entries == [Delivery(status: .reachableViaWiFi, flags: [.reachable], interface: "veth0")])
        #expect(reachability.currentReachabilityStatus == .reachableViaWiFi)
        #expect(reachability.flags.description == "-R -------")
        reachability.stop()
    }

    @Test("No default route: the Internet is not reachable")
    func noDefaultRoute() throws {
        let ns = try TestNamespace()
        try ns.addVeth("veth0", peer: "veth1", address: "192.0.2.1/24")
        let reachability = try Reachability(environment: ns.environment)
        #expect(reachability.currentReachabilityStatus == .notReachable)
        #expect(reachability.flags == [])
        #expect(reachability.interface == nil)
    }

    /// veth0 down, then up with its default route back, waiting for notReachable and
    /// then reachableViaWiFi.
    static func cycleDefaultLink(_ ns: TestNamespace, _ log: DeliveryLog) async throws {
        // Link down removes the IPv4 routes without RTM_DELROUTE: the link event must trigger re-evaluation.
        try ns.ip("link set veth0 down")
        try await log.wait(forLast: .notReachable, "notReachable after link down")
        try ns.ip("link set veth0 up")
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await log.wait(forLast: .reachableViaWiFi, "reachable after link up + route")
    }

    @Test("An IPv6 answer carries its route's remaining lifetime, in every window of lookups; others none")
    func routeLifetimes() throws {
        let ns = try TestNamespace()
        try ns.run(["sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"])
        try ns.addVeth("veth0", peer: "veth1", address: "192.0.2.1/24")
        try ns.ip("-6 addr add 2001:db8::1/64 dev veth0 nodad")
        try ns.ip("-6 route add default via 2001:db8::2 dev veth0 expires 60")
        try ns.ip("-6 route add 2001:db8:5::/48 via 2001:db8::3 dev veth0")
        try ns.ip("route add default via 192.0.2.2")
        // Three windows' worth of IPv6 lookups, each asked twice, among others.
        let addresses =
            ["2001:db8:5::1", "198.51.100.1"] + (1...150).map { "2001:db8:ffff::\(String($0, radix: 16))" }
        let requests = try addresses.map { LookupRequest(destination: try IPAddress($0)) }
        let results = try OneShotEvaluator.run(environment: ns.environment) { _, lookup throws(ReachabilityError) in
            try lookup(requests)
        }
        let lifetimes = results.map { answer -> Duration? in
            guard case .route(let route) = answer else { return .zero }
            return route.remainingLifetime
        }
        #expect(lifetimes[0] == nil && lifetimes[1] == nil, "routes without a lifetime, IPv6 and IPv4")
        for lifetime in lifetimes.dropFirst(2) {
            #expect(lifetime.map { $0 > .seconds(50) && $0 <= .seconds(60) } == true, "\(String(describing: lifetime))")
        }
    }

    @Test("IPv4 only: link down on the default-route interface, then up with the route back")
    func linkDownUp() async throws {
        let (ns, _, log) = try TestNamespace.watchingInternet(ipv4Only: true)
        try await log.wait(forLast: .reachableViaWiFi, "reachable at start")
        try await Self.cycleDefaultLink(ns, log)
        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable, .reachableViaWiFi])
        #expect(log.notificationCount == log.entries.count)
    }

    @Test("IPv4 only: carrier loss (peer down, routes stay) and back")
    func carrierLoss() async throws {
        let (ns, _, log) = try TestNamespace.watchingInternet(ipv4Only: true)
        try await log.wait(forLast: .reachableViaWiFi, "reachable at start")

        try ns.ip("link set veth1 down")
        try await log.wait(forLast: .notReachable, "notReachable after carrier loss")
        // The route is still there, flagged linkdown; the interface is still the output interface.
        #expect(try ns.ip("route show default").contains("linkdown"))
        #expect(log.entries.last?.interface == "veth0")
        #expect(log.entries.last?.flags == [])

        try ns.ip("link set veth1 up")
        try await log.wait(forLast: .reachableViaWiFi, "reachable after carrier returns")
        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable, .reachableViaWiFi])
    }

    /// IPv4 only: `veth0` (192.0.2.1/24, default route via .2, metric 10) and `veth2`
    /// (198.51.100.1/24, default route via .2, metric 20), each with its peer in a
    /// second namespace; `ignore_routes_with_linkdown` on veth0 as given. The Internet
    /// target is watched, and the monitor has both links operationally up.
    static func watchingOverTwoFarLinks(ignoreLinkdownOnVeth0: Bool) async throws -> (
        ns: TestNamespace, far: TestNamespace, log: DeliveryLog, monitor: NetlinkMonitor, reachability: Reachability
    ) {
        let (ns, far) = (try TestNamespace(), try TestNamespace())
        try ns.disableIPv6()
        try ns.addVeth("veth0", peerIn: far, peer: "veth1", address: "192.0.2.1/24")
        try ns.addVeth("veth2", peerIn: far, peer: "veth3", address: "198.51.100.1/24")
        try ns.ip("route add default via 192.0.2.2 dev veth0 metric 10")
        try ns.ip("route add default via 198.51.100.2 dev veth2 metric 20")
        if ignoreLinkdownOnVeth0 {
            try ns.run(["sysctl", "-qw", "net.ipv4.conf.veth0.ignore_routes_with_linkdown=1"])
        }
        let reachability = try Reachability(environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        let monitor = try #require(MonitorRegistry.running(for: ns.environment))
        try await eventually("veth0 and veth2 operationally up in the monitor's table") {
            let up = monitor.snapshot.0.interfaces.filter { $0.operState == IFOper.up }.map(\.name)
            return up.contains("veth0") && up.contains("veth2")
        }
        try await log.wait(for: "reachable over veth0 at start") {
            $0.last?.status == .reachableViaWiFi && $0.last?.interface == "veth0"
        }
        return (ns, far, log, monitor, reachability)
    }

    @Test("A carrier loss while the kernel keeps using the link's routes: the answer stays over it, unusable")
    func carrierLossKeepsLinkdownRoutes() async throws {
        let (ns, far, log, monitor, reachability) = try await Self.watchingOverTwoFarLinks(ignoreLinkdownOnVeth0: false)
        defer { withExtendedLifetime((ns, reachability)) {} }
        let failed = monitor.statistics.failedPasses
        // The kernel flags veth0's route linkdown and still picks it over the metric-20 one.
        try far.ip("link set veth1 down")
        try await log.wait(for: "not reachable over veth0 after its carrier went") {
            $0.last?.status == .notReachable && $0.last?.interface == "veth0"
        }
        try far.ip("link set veth1 up")
        try await log.wait(for: "reachable over veth0 again") {
            $0.last?.status == .reachableViaWiFi && $0.last?.interface == "veth0"
        }
        #expect(monitor.statistics.failedPasses == failed)
    }

    @Test("With ignore_routes_with_linkdown set, a carrier loss moves the answer to the other route")
    func carrierLossWithIgnoreLinkdownMovesTheAnswer() async throws {
        let (ns, far, log, _, reachability) = try await Self.watchingOverTwoFarLinks(ignoreLinkdownOnVeth0: true)
        defer { withExtendedLifetime((ns, reachability)) {} }
        try far.ip("link set veth1 down")
        try await log.wait(for: "reachable over veth2 once veth0 lost its carrier") {
            $0.last?.status == .reachableViaWiFi && $0.last?.interface == "veth2"
        }
        try far.ip("link set veth1 up")
        try await log.wait(for: "back over veth0 with its carrier") { $0.last?.interface == "veth0" }
    }

    @Test("Setting ignore_routes_with_linkdown while a link has no carrier is a change (netconf event)")
    func ignoreLinkdownSettingIsAnEvent() async throws {
        let (ns, far, log, monitor, reachability) = try await Self.watchingOverTwoFarLinks(ignoreLinkdownOnVeth0: false)
        defer { withExtendedLifetime((ns, reachability)) {} }
        try far.ip("link set veth1 down")
        try await log.wait(for: "not reachable over veth0 after its carrier went") {
            $0.last?.status == .notReachable && $0.last?.interface == "veth0"
        }
        let passes = monitor.statistics.evaluationPasses
        // No link, address or route event: only RTM_NEWNETCONF says the answer moved.
        try ns.run(["sysctl", "-qw", "net.ipv4.conf.all.ignore_routes_with_linkdown=1"])
        try await log.wait(for: "reachable over veth2 once linkdown routes are ignored") {
            $0.last?.status == .reachableViaWiFi && $0.last?.interface == "veth2"
        }
        #expect(monitor.statistics.evaluationPasses > passes)
    }

    @Test("A synchronous sink gets the same states as the queue, in order, changes on the reader thread")
    func synchronousSink() async throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute()
        try ns.disableIPv6()
        let reachability = try Reachability(environment: ns.environment)
        let sunk = LockedValue<[(state: ReachabilityState, thread: String)]>([])
        reachability.deliverSynchronously { state in
            let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            sunk.withLock { $0.append((state, name.trimmingCharacters(in: .newlines))) }
        }
        let observed = ObserverLog(reachability)
        let log = try DeliveryLog.started(reachability)
        // Each sink call comes before its queue delivery, so once the log has a state the
        // sink has it too.
        try await log.wait(forLast: .reachableViaWiFi, "reachable at start")
        try await Self.cycleDefaultLink(ns, log)

        let calls = sunk.withLock { $0 }
        observed.settle()
        #expect(Array(observed.entries.prefix(calls.count)) == calls.map(\.state))
        // Link up and the route's return may be evaluated apart (a second notReachable
        // with other flags); the statuses in turn are these.
        let statuses = calls.map(\.state.status).reduce(into: [NetworkStatus]()) { if $0.last != $1 { $0.append($1) } }
        #expect(statuses == [.reachableViaWiFi, .notReachable, .reachableViaWiFi])
        // The changes were written by the monitor's reader thread, with no hop to a queue.
        #expect(calls.dropFirst().allSatisfy { $0.thread == "reachability-nl" })
        reachability.stop()
    }

    @Test("An instance set not to post: its closures are still called, no reachabilityChanged for it")
    func instanceThatDoesNotPost() async throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute()
        try ns.disableIPv6()
        // The control posts as every instance does by default: it shows that the
        // notifications of this namespace's changes reach an observer here.
        let silent = try Reachability(environment: ns.environment)
        silent.postsNotifications = false
        let silentLog = try DeliveryLog.started(silent)
        let postingLog = try DeliveryLog.started(try Reachability(environment: ns.environment))
        try await silentLog.wait(forLast: .reachableViaWiFi, "the silent instance reachable at start")
        try await postingLog.wait(forLast: .reachableViaWiFi, "the control reachable at start")
        for (command, status) in [("link set veth0 down", NetworkStatus.notReachable), ("link set veth0 up", nil)] {
            try ns.ip(command)
            guard let status else { continue }
            try await silentLog.wait(forLast: status, "the silent instance after \(command)")
            try await postingLog.wait(forLast: status, "the control after \(command)")
        }
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await silentLog.wait(forLast: .reachableViaWiFi, "the silent instance reachable again")
        try await postingLog.wait(forLast: .reachableViaWiFi, "the control reachable again")
        try await eventually("a notification per delivery of the control") {
            postingLog.notificationCount == postingLog.entries.count
        }
        // Link up and the route's return may be delivered apart (a second notReachable).
        let statuses = silentLog.entries.map(\.status).reduce(into: [NetworkStatus]()) {
            if $0.last != $1 { $0.append($1) }
        }
        #expect(statuses == [.reachableViaWiFi, .notReachable, .reachableViaWiFi])
        #expect(silentLog.notificationCount == 0)
    }

    @Test("Default route delete and add; replace onto a second interface gives one delivery")
    func defaultRouteChanges() async throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute()
        try ns.addVeth("veth2", peer: "veth3", address: "198.51.100.1/24")
        let reachability = try Reachability(environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forLast: .reachableViaWiFi, "reachable at start")

        try ns.ip("route del default")
        try await log.wait(forLast: .notReachable, "notReachable after route delete")
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await log.wait(forLast: .reachableViaWiFi, "reachable after route add")
        #expect(log.entries.count == 3)

        try ns.ip("route replace default via 198.51.100.2 dev veth2")
        try await log.wait(for: "a delivery naming veth2") { $0.last?.interface == "veth2" }
        #expect(log.entries.count == 4, "exactly one delivery for the replace: \(log.entries)")
        #expect(log.entries.last == Delivery(status: .reachableViaWiFi, flags: [.reachable], interface: "veth2"))
    }

    @Test("IPv6 only: reachable over IPv6; during DAD reachable + connectionRequired + transientConnection")
    func ipv6OnlyWithDAD() async throws {
        let ns = try TestNamespace()
        // DAD slowed down, so the tentative phase is certain to be seen.
        try ns.ipv6WithSlowDAD("veth0", peer: "veth1")
        #expect(try ns.ip("-6 addr show dev veth0").contains("tentative"))

        let reachability = try Reachability(environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forCount: 1, "the initial delivery")
        #expect(
            log.entries.first
                == Delivery(
                    status: .notReachable, flags: [.reachable, .connectionRequired, .transientConnection],
                    interface: "veth0"))
        try await log.wait(forLast: .reachableViaWiFi, "reachable once DAD ends")
        #expect(log.entries.last == Delivery(status: .reachableViaWiFi, flags: [.reachable], interface: "veth0"))
        #expect(!(try ns.ip("-6 addr show dev veth0 scope global").contains("tentative")))
        // No IPv4 at all: the IPv6 answer alone decides.
        #expect(try Reachability(address: "192.0.2.9", environment: ns.environment).flags == [])
    }

    @Test("Address targets: own, on-link, via gateway, blackhole/unreachable/prohibit")
    func addressTargets() throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute()
        try ns.batch([
            "route add blackhole 203.0.113.0/26",
            "route add unreachable 203.0.113.64/26",
            "route add prohibit 203.0.113.128/26",
            "route add throw 203.0.113.192/26",
        ])
        func flags(_ address: String) throws -> ReachabilityFlags {
            try Reachability(address: address, environment: ns.environment).flags
        }
        #expect(try flags("192.0.2.1") == [.reachable, .isLocalAddress, .isDirect])
        #expect(try flags("127.0.0.1") == [.reachable, .isLocalAddress, .isDirect])
        #expect(try flags("192.0.2.77") == [.reachable, .isDirect])
        #expect(try flags("198.18.0.1") == [.reachable])
        #expect(try flags("203.0.113.1") == [])
        #expect(try flags("203.0.113.65") == [])
        #expect(try flags("203.0.113.129") == [])
        // throw falls through to the next rule; main has no other match, default has none.
        #expect(try flags("203.0.113.193") == [])
        let onLink = try Reachability(address: "192.0.2.77", environment: ns.environment)
        #expect(onLink.interface?.name == "veth0")
        #expect(onLink.currentReachabilityStatus == .reachableViaWiFi)
        let own = try Reachability(address: "192.0.2.1", environment: ns.environment)
        #expect(own.interface?.type == .loopback)
    }

    @Test("Address pair: a local address this host owns, and one it doesn't")
    func addressPairs() throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute()
        let owned = try Reachability(
            localAddress: "192.0.2.1", remoteAddress: "198.18.0.1", environment: ns.environment)
        #expect(owned.flags == [.reachable])
        #expect(owned.interface?.name == "veth0")
        let foreign = try Reachability(
            localAddress: "192.0.2.99", remoteAddress: "198.18.0.1", environment: ns.environment)
        #expect(foreign.flags == [])
    }

    @Test("A target routed only through an ip rule into another table follows the rule")
    func policyRule() async throws {
        let ns = try TestNamespace()
        // IPv4 alone: no address of IPv6's coming later makes a pass of its own.
        try ns.disableIPv6()
        try ns.addVeth("veth0", peer: "veth1", address: "192.0.2.1/24")
        try ns.ip("route add 198.51.100.0/24 via 192.0.2.3 dev veth0 table 100")
        let reachability = try Reachability(address: "198.51.100.7", environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forLast: .notReachable, "notReachable without the rule")
        // A pass first (a route for the target in a table no rule leads to), so that
        // the rule's pass has an answer it could keep.
        let monitor = try #require(MonitorRegistry.running(for: ns.environment))
        try await monitor.pass(
            after: { try ns.ip("route add blackhole 198.51.100.0/24 table 200") }, "a pass for the other table's route")

        try ns.ip("rule add to 198.51.100.0/24 lookup 100")
        try await log.wait(forLast: .reachableViaWiFi, "reachable through the rule")
        #expect(log.entries.last == Delivery(status: .reachableViaWiFi, flags: [.reachable], interface: "veth0"))

        try ns.ip("rule del to 198.51.100.0/24 lookup 100")
        try await log.wait(forLast: .notReachable, "notReachable once the rule is gone")
    }

    @Test("The monitored interface is deleted: notReachable, no crash, and the monitor keeps working")
    func interfaceDeleted() async throws {
        let (ns, _, log) = try TestNamespace.watchingInternet()
        try await log.wait(forLast: .reachableViaWiFi, "reachable at start")

        try ns.ip("link del veth0")
        try await log.wait(forLast: .notReachable, "notReachable after deletion")
        #expect(log.entries.last?.interface == nil)

        try ns.ipv4WithDefaultRoute("veth4", peer: "veth5")
        try await log.wait(forLast: .reachableViaWiFi, "reachable over a new interface")
        #expect(log.entries.last?.interface == "veth4")
    }

    @Test("Re-adding an identical route many times delivers nothing")
    func identicalRouteNoDelivery() async throws {
        let (ns, _, log) = try TestNamespace.watchingInternet()
        try await log.wait(forCount: 1, "the initial delivery")

        try ns.batch(Array(repeating: "route replace default via 192.0.2.2 dev veth0", count: 200))
        try ns.batch(Array(repeating: "link set veth0 up", count: 50))
        // A marker change: deliveries are ordered, so anything the replaces caused comes before it.
        try ns.ip("route del default")
        try await log.wait(forLast: .notReachable, "the marker delivery")
        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable])
    }

    @Test("Stop + start delivers the current state again; nothing is delivered while stopped")
    func stopStart() async throws {
        let (ns, reachability, log) = try TestNamespace.watchingInternet()
        try await log.wait(forCount: 1, "the first start's delivery")
        #expect(reachability.isRunning)
        reachability.stop()
        #expect(!reachability.isRunning)

        try ns.ip("route del default")
        // Stopped: the getters evaluate afresh, never a stale answer.
        #expect(reachability.currentReachabilityStatus == .notReachable)
        try reachability.start()
        try await log.wait(forCount: 2, "the second start's delivery")
        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable])
        try reachability.start()  // Already running: no second delivery.
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await log.wait(forCount: 3, "the change after restart")
        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable, .reachableViaWiFi])
    }

    @Test("Many instances share one monitor; it stops after the last one, and a dropped instance stops cleanly")
    func sharedMonitorLifecycle() async throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute()
        let environment = ns.environment
        var instances: [Reachability] = []
        for host in 1...50 {
            let r = try Reachability(address: "192.0.2.\(100 + host)", environment: environment)
            try r.start()
            instances.append(r)
        }
        let monitor = try #require(MonitorRegistry.running(for: environment))
        #expect(monitor.clientCount == 50)
        #expect(instances.allSatisfy { $0.flags == [.reachable, .isDirect] })

        // Dropped while running: deinit stops them (an instance whose delivery is
        // running on the notification queue right then is released when it ends).
        instances.removeLast(25)
        try await eventually("the dropped instances left the monitor") { monitor.clientCount == 25 }
        for r in instances { r.stop() }
        #expect(MonitorRegistry.running(for: environment) == nil)
        instances.removeAll()
    }

    /// A monitor is registered before its start has dumped the kernel's tables; a
    /// one-off evaluation (a stopped instance's getter, an observer's first call)
    /// that read its table then saw no interfaces and said notReachable. Seen as a
    /// hostname's observer called with notReachable, then with its real state. The
    /// window is widest in a ThreadSanitizer build, where this test failed before the fix.
    @Test("A one-off evaluation while the namespace's monitor is starting reads the kernel's tables, not an empty one")
    func oneOffDuringMonitorStart() async throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute()
        let environment = ns.environment
        let starter = try Reachability(address: "192.0.2.7", environment: environment)
        let reader = try Reachability(address: "192.0.2.9", environment: environment)
        let done = LockedValue(false)
        let wrong = LockedValue<[ReachabilityFlags]>([])
        let reads = LockedValue(0)
        let cycles = 300
        // A thread of its own, not a task: a spinning task would hold a thread of the
        // cooperative pool that this test needs to go on.
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while !done.withLock({ $0 }) {
                let flags = reader.flags
                reads.withLock { $0 += 1 }
                if flags != [.reachable, .isDirect] { wrong.withLock { $0.append(flags) } }
            }
            finished.signal()
        }
        defer { done.withLock { $0 = true } }  // also when a wait below throws
        try await eventually("the reading thread runs") { reads.withLock { $0 } > 0 }
        let readsBefore = reads.withLock { $0 }
        try await offPool {
            defer { done.withLock { $0 = true } }
            for _ in 0..<cycles {
                try starter.start()
                starter.stop()
            }
        }
        try await offPool { finished.wait() }
        #expect(!reader.isRunning)
        #expect(reads.withLock { $0 } > readsBefore, "the getters ran while the monitor started and stopped")
        #expect(wrong.withLock { $0 }.isEmpty, "\(wrong.withLock { $0 }.count) of \(reads.withLock { $0 }) reads wrong")
    }

    /// A namespace with veth0 (192.0.2.1/24, the default route) and veth2, no IPv6
    /// (a link-local address finishing DAD would be an address event with a pass),
    /// and 198.51.100.7 watched past its first delivery; with the namespace's monitor.
    static func watchingOneAddress() async throws -> (TestNamespace, Reachability, DeliveryLog, NetlinkMonitor) {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.addVeth("veth2", peer: "veth3")
        let reachability = try Reachability(address: "198.51.100.7", environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forCount: 1, "the initial delivery")
        let monitor = try #require(MonitorRegistry.running(for: ns.environment))
        // The kernel reports a veth's carrier (operstate up) a moment after the link is
        // up: that event causes a pass of its own. Wait until the monitor has it for both
        // links, so that the counters a test reads next see only its own events.
        try await eventually("veth0 and veth2 operationally up in the monitor's table") {
            let up = monitor.snapshot.0.interfaces.filter { $0.operState == IFOper.up }.map(\.name)
            return up.contains("veth0") && up.contains("veth2")
        }
        return (ns, reachability, log, monitor)
    }

    @Test("Routes whose prefixes cover no target cause no evaluation pass; a covering one does")
    func unrelatedRoutesCostNoPass() async throws {
        let (ns, reachability, log, monitor) = try await Self.watchingOneAddress()
        let (passes, resyncs) = (monitor.statistics.evaluationPasses, monitor.statistics.resyncs)
        try ns.batch((0..<2000).map { "route add 10.\($0 / 250).\($0 % 250).0/24 dev veth2" })
        try await eventually("2,000 route events received or resynced") {
            monitor.statistics.eventsReceived >= 2000 || monitor.statistics.resyncs > resyncs
        }
        // No pass, except one per resync if a slow build (TSan) let the kernel overrun the buffer.
        #expect(monitor.statistics.evaluationPasses - passes <= monitor.statistics.resyncs - resyncs)
        #expect(monitor.statistics.relevantRouteEvents == 0)
        // A route covering the target moves it: a pass, and a delivery (now via veth2, direct).
        try ns.ip("route add 198.51.100.0/24 dev veth2")
        try await log.wait(forCount: 2, "the covering route's delivery")
        #expect(reachability.interface?.name == "veth2")
        #expect(monitor.statistics.relevantRouteEvents == 1)
    }

    @Test("Each client is asked for its plan once per pass, not again for every route event")
    func onePlanPerPass() async throws {
        let (ns, reachability, _, monitor) = try await Self.watchingOneAddress()
        defer { withExtendedLifetime(reachability) {} }
        let counter = CountingClient(destination: try IPAddress("198.51.100.9"))
        try monitor.add(counter)
        defer { _ = monitor.remove(counter) }
        let passesBefore = monitor.statistics.evaluationPasses
        let (plansBefore, finishedBefore) = counter.counts
        // Unrelated route events in many wake-ups, then ten that cover the counter's
        // destination (each a pass).
        try ns.batch((0..<2000).map { "route add 10.\($0 / 250).\($0 % 250).0/24 dev veth2" })
        for i in 0..<10 {
            let passes = monitor.statistics.evaluationPasses
            try ns.ip("route \(i % 2 == 0 ? "add" : "del") 198.51.100.9/32 dev veth2")
            try await eventually("pass \(i + 1)") { monitor.statistics.evaluationPasses > passes }
        }
        try await eventually("the last pass finished") {
            counter.counts.finished - finishedBefore == monitor.statistics.evaluationPasses - passesBefore
        }
        let passes = monitor.statistics.evaluationPasses - passesBefore
        let (plans, finished) = (counter.counts.plans - plansBefore, counter.counts.finished - finishedBefore)
        #expect(passes >= 10)
        #expect(finished == passes)
        // One plan per pass, plus at most one to learn the destinations after it joined.
        #expect(plans <= passes + 1, "\(plans) plans for \(passes) passes")
        #expect(monitor.statistics.eventsReceived >= 2000)
    }

    @Test("Forced ENOBUFS: the monitor resyncs, counts it, and the final state is right")
    func overrunResync() async throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute()
        try ns.addVeth("veth2", peer: "veth3")
        var environment = ns.environment
        environment.eventReceiveBuffer = 4096  // Tiny: a burst overruns it.
        let reachability = try Reachability(environment: environment)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forCount: 1, "the initial delivery")
        let monitor = try #require(MonitorRegistry.running(for: environment))

        // Hold the reader inside a pass (a client of its own that blocks when asked
        // to), so the burst certainly overflows the small buffer, then let it go.
        let blocker = try BlockingClient.holding(monitor) { try ns.ip("addr add 203.0.113.1/24 dev veth2") }
        defer { _ = monitor.remove(blocker) }
        var burst: [String] = []
        for i in 0..<2000 { burst.append("route add 10.\(i / 250).\(i % 250).0/24 dev veth2") }
        burst.append("route del default")
        try ns.batch(burst)
        blocker.release()
        try await log.wait(forLast: .notReachable, "notReachable after the burst")
        #expect(monitor.statistics.overruns >= 1)
        #expect(monitor.statistics.resyncs >= 1)

        // Deliveries keep flowing after the resync.
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await log.wait(forLast: .reachableViaWiFi, "reachable after the resync")
    }

    @Test("Lost events and no route among those read: the resync's pass asks everything")
    func overrunWithoutRoutesAsksEverything() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.addVeth("veth2", peer: "veth3", address: "203.0.113.1/24")
        var environment = ns.environment
        environment.eventReceiveBuffer = 4096  // Tiny: a burst overruns it.
        let reachability = try Reachability(environment: environment)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forLast: .reachableViaWiFi, "reachable at start")
        let monitor = try #require(MonitorRegistry.running(for: environment))
        // A pass first, so that the answers are known and could be kept.
        try await monitor.pass(
            after: { try ns.ip("route add blackhole 0.0.0.0/1 table 200") }, "a pass for the other table's default")

        // The reader held in a pass while neighbour entries (no route, link or address:
        // nothing that asks the kernel of itself) overflow the buffer, and the default
        // route goes last, its message lost.
        let blocker = try BlockingClient.holding(monitor) { try ns.ip("addr add 203.0.113.2/24 dev veth2") }
        defer { _ = monitor.remove(blocker) }
        let resyncs = monitor.statistics.resyncs
        try ns.batch(
            (10..<210).map { "neigh add 203.0.113.\($0) lladdr 02:00:00:00:00:01 dev veth2 nud permanent" }
                + ["route del default"])
        blocker.release()
        try await log.wait(forLast: .notReachable, "notReachable once the resync's pass asked")
        #expect(monitor.statistics.overruns >= 1 && monitor.statistics.resyncs > resyncs)
    }

    @Test(
        "A link the answers go out of going down: the pass starts at its link message; the kernel's other messages about it follow without another event"
    )
    func answerLinkDownPassesEarly() async throws {
        // Nothing but the link going down may wake the reader afterwards (that would
        // hide datagrams left unhandled): the peers are in another namespace, no
        // address is tentative (no DAD completion comes later), and veth2, made to
        // cause a pass, has no IPv6 (no MLD timers).
        let (ns, far) = try TestNamespace.withFarPeersWithoutDAD()
        try ns.addVeth("veth0", peerIn: far, peer: "veth1", address: "192.0.2.1/24")
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try ns.ip("addr add 2001:db8:1::1/64 dev veth0")
        try ns.run(["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"])
        try ns.addVeth("veth2", peerIn: far, peer: "veth3", address: "198.51.100.1/24")
        let reachability = try Reachability(environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forLast: .reachableViaWiFi, "reachable over veth0 at start")
        let monitor = try #require(MonitorRegistry.running(for: ns.environment))
        let global = try IPAddress("2001:db8:1::1")
        @Sendable func veth0Global() -> Bool {
            let table = monitor.snapshot.0
            guard let veth0 = table.interfaces.first(where: { $0.name == "veth0" }) else { return false }
            return table.addresses(of: veth0.index).contains { $0.address == global }
        }
        try await eventually("veth0's IPv6 address published") { veth0Global() }

        // Hold the reader inside a pass, so that everything the kernel says about the
        // link going down is queued when it reads: one read takes it all.
        let blocker = try BlockingClient.holding(monitor) { try ns.ip("addr add 203.0.113.1/24 dev veth2") }
        defer { _ = monitor.remove(blocker) }
        let early = monitor.statistics.earlyPasses
        // Two addresses first (four datagrams: the burst's first read takes two), then
        // the link's RTM_NEWLINK and its routes', neighbours' and addresses'
        // deletions: the next read takes the link's among a dozen.
        try ns.ip("addr add 203.0.113.2/24 dev veth2")
        try ns.ip("addr add 203.0.113.3/24 dev veth2")
        try ns.ip("link set veth0 down")
        blocker.release()
        try await log.wait(forLast: .notReachable, "notReachable after veth0 went down")
        // The pass began after the link's message; the rest were read with it and are
        // handled next, without the kernel saying anything more (poll(2) doesn't see them).
        try await eventually("veth0's IPv6 address gone from the published table") { !veth0Global() }
        #expect(monitor.statistics.earlyPasses == early + 1)
        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable])
        reachability.stop()
    }

    @Test(
        "An answer's link going down while another default route stands: the one delivery is the other route, never notReachable between"
    )
    func answerLinkDownFailsOver() async throws {
        // IPv6 only, two default routes; a thousand more routes over veth0, so that the
        // kernel is still deleting them when the pass that the link's message starts
        // asks it the way out.
        let (ns, far) = try TestNamespace.withFarPeersWithoutDAD()
        try ns.addVeth("veth0", peerIn: far, peer: "veth1", address: "2001:db8:1::1/64")
        try ns.addVeth("veth2", peerIn: far, peer: "veth3", address: "2001:db8:2::1/64")
        try ns.ip("-6 route add default via 2001:db8:1::2 dev veth0 metric 10")
        try ns.ip("-6 route add default via 2001:db8:2::2 dev veth2 metric 20")
        try ns.batch((0..<1000).map { "route add 2001:db8:f\($0 / 256):\($0 % 256)::/64 via 2001:db8:1::2 dev veth0" })
        let reachability = try Reachability(environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(for: "reachable over veth0 at start") {
            $0.last?.status == .reachableViaWiFi && $0.last?.interface == "veth0"
        }
        let monitor = try #require(MonitorRegistry.running(for: ns.environment))
        let passes = monitor.statistics.evaluationPasses

        try ns.ip("link set veth0 down")
        try await log.wait(for: "reachable over veth2") {
            $0.last?.status == .reachableViaWiFi && $0.last?.interface == "veth2"
        }
        // Every route deletion handled: veth0's address is gone from the published table.
        try await eventually("the kernel's messages about veth0 handled") {
            let table = monitor.snapshot.0
            guard let veth0 = table.interfaces.first(where: { $0.name == "veth0" }) else { return false }
            return !veth0.isUsable && table.addresses(of: veth0.index).allSatisfy { $0.scope != 0 }
        }
        #expect(
            log.entries.map(\.description) == [
                "reachableViaWiFi -R ------- veth0", "reachableViaWiFi -R ------- veth2",
            ])
        #expect(monitor.statistics.evaluationPasses > passes)
        reachability.stop()
    }

    @Test("A route change asks the kernel only about the targets it covers; the others keep their answers")
    func routeChangesAskOnlyWhatTheyCover() async throws {
        let (ns, _, log) = try TestNamespace.watchingInternet(ipv4Only: true)
        let a = try Reachability(address: "198.51.100.7", environment: ns.environment)
        let b = try Reachability(address: "203.0.113.9", environment: ns.environment)
        let (logA, logB) = (try DeliveryLog.started(a), try DeliveryLog.started(b))
        try await log.wait(forLast: .reachableViaWiFi, "the Internet reachable at start")
        try await logA.wait(forLast: .reachableViaWiFi, "a reachable at start")
        try await logB.wait(forLast: .reachableViaWiFi, "b reachable at start")
        let monitor = try #require(MonitorRegistry.running(for: ns.environment))
        // The starts' answers are not the passes': wait for veth0 in the table, then
        // let a blackhole for a alone come and go. The first pass may ask everything
        // (no pass since the starts), the second keeps the three it doesn't cover. (A
        // pass counts what it kept before it hands out its states.)
        try await eventually("veth0 usable in the monitor's table") {
            monitor.snapshot.0.interfaces.contains { $0.name == "veth0" && $0.isUsable }
        }
        try ns.ip("route add blackhole 198.51.100.7/32")
        try await logA.wait(forLast: .notReachable, "a unreachable behind its own blackhole")
        let primed = monitor.statistics.keptAnswers
        try ns.ip("route del blackhole 198.51.100.7/32")
        try await logA.wait(forLast: .reachableViaWiFi, "a reachable again")
        #expect(monitor.statistics.keptAnswers == primed + 3, "settled answers kept")
        let kept = monitor.statistics.keptAnswers

        /// A fresh evaluation of each target (no monitor): what the kernel says now.
        func fresh(_ address: String) throws -> NetworkStatus {
            try Reachability(address: address, environment: ns.environment).currentReachabilityStatus
        }
        // A blackhole covering a alone: a is asked (and unreachable); b and the
        // Internet's two lookups keep their answers. (The count is kept before the
        // pass hands out its states.)
        try ns.ip("route add blackhole 198.51.100.0/24")
        try await logA.wait(forLast: .notReachable, "a unreachable behind the blackhole")
        #expect(try fresh("198.51.100.7") == .notReachable && fresh("203.0.113.9") == .reachableViaWiFi)
        #expect(monitor.statistics.keptAnswers == kept + 3)

        try ns.ip("route del blackhole 198.51.100.0/24")
        try await logA.wait(forLast: .reachableViaWiFi, "a reachable once the blackhole is gone")
        try ns.ip("route add unreachable 203.0.113.0/24")
        try await logB.wait(forLast: .notReachable, "b unreachable behind its unreachable route")
        #expect(try fresh("198.51.100.7") == .reachableViaWiFi && fresh("203.0.113.9") == .notReachable)
        #expect(monitor.statistics.keptAnswers == kept + 9)

        // The IPv4 default route covers every IPv4 target: all are asked, and a and
        // the Internet go; only the Internet's IPv6 lookup keeps its answer.
        try ns.ip("route del default")
        try await log.wait(forLast: .notReachable, "the Internet unreachable without the default route")
        try await logA.wait(forLast: .notReachable, "a unreachable without the default route")
        #expect(monitor.statistics.keptAnswers == kept + 10)

        // An address change asks everything (the kernel may move routes after its
        // message); a route after it, only what it covers.
        try await monitor.pass(after: { try ns.ip("addr add 192.0.2.77/24 dev veth0") }, "the address's pass")
        #expect(monitor.statistics.keptAnswers == kept + 10)
        try ns.ip("route add 198.51.100.0/24 via 192.0.2.2")
        try await logA.wait(forLast: .reachableViaWiFi, "a reachable over its own route")
        #expect(monitor.statistics.keptAnswers == kept + 13)

        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable])
        #expect(
            logA.entries.map(\.status) == [
                .reachableViaWiFi, .notReachable, .reachableViaWiFi, .notReachable, .reachableViaWiFi, .notReachable,
                .reachableViaWiFi,
            ])
        #expect(logB.entries.map(\.status) == [.reachableViaWiFi, .notReachable])
        a.stop()
        b.stop()
    }

    @Test("More route events than a pass keeps the prefixes of (a storm) ask every lookup")
    func routeStormAsksEverything() async throws {
        let (ns, _, log) = try TestNamespace.watchingInternet(ipv4Only: true)
        let a = try Reachability(address: "198.51.100.7", environment: ns.environment)
        let logA = try DeliveryLog.started(a)
        try await log.wait(forLast: .reachableViaWiFi, "the Internet reachable at start")
        try await logA.wait(forLast: .reachableViaWiFi, "a reachable at start")
        let monitor = try #require(MonitorRegistry.running(for: ns.environment))
        // A pass, so that every lookup's answer is known.
        try await monitor.pass(
            after: { try ns.ip("route add 198.51.100.0/24 via 192.0.2.2 dev veth0") }, "a pass for a's new route")

        // The reader is held in a pass while a blackhole for a and a hundred other
        // routes queue up, so that one drain reads them all: more than the cause keeps.
        let blocker = try BlockingClient.holding(monitor) {
            try ns.ip("route add 198.51.100.0/25 via 192.0.2.2 dev veth0")
        }
        defer { _ = monitor.remove(blocker) }
        let kept = monitor.statistics.keptAnswers
        try ns.batch(
            ["route add blackhole 198.51.100.7/32"] + (0..<100).map { "route add 10.77.\($0).0/24 dev veth0" })
        blocker.release()
        try await logA.wait(forLast: .notReachable, "a unreachable behind its blackhole, among a hundred routes")
        #expect(monitor.statistics.keptAnswers == kept, "nothing kept")
        a.stop()
    }

    @Test("Link-local target follows the local link")
    func linkLocal() async throws {
        let ns = try TestNamespace()
        try ns.addVeth("veth0", peer: "veth1", address: "192.0.2.1/24")
        let reachability = try Reachability.forLinkLocal(environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(for: "reachable + isDirect on the link") {
            $0.last?.flags.isSuperset(of: [.reachable, .isDirect]) == true
                && $0.last?.flags.contains(.connectionRequired) == false
        }
        try ns.ip("link set veth1 down")
        try await log.wait(forLast: .notReachable, "notReachable without carrier")
    }

    @Test("DORMANT link (802.1X/WPA pending): reachable + connectionRequired + interventionRequired, then reachable")
    func dormantLink() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ip("link add veth0 type veth peer name veth1")
        try ns.ip("link set veth1 up")
        try ns.ip("link set veth0 mode dormant")
        try ns.ip("link set veth0 up")
        try ns.ip("addr add 192.0.2.1/24 dev veth0")
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        #expect(try ns.ip("link show veth0").contains("state DORMANT"))

        let reachability = try Reachability(environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forCount: 1, "the initial delivery")
        #expect(
            log.entries.first
                == Delivery(
                    status: .notReachable, flags: [.reachable, .connectionRequired, .interventionRequired],
                    interface: "veth0"))
        #expect(reachability.connectionRequired)

        // "Authentication completes": the supplicant sets operstate UP.
        try ns.run(["python3", "-c", KernelTricks.setOperstate, "veth0", "6"])
        try await log.wait(forLast: .reachableViaWiFi, "reachable once operstate is UP")
        #expect(log.entries.last?.flags == [.reachable])
    }

    @Test("VPN over tun: transientConnection while a process holds it; carrier gone when it lets go")
    func tunVPN() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.ip("tuntap add mode tun tun0")
        let holder = try ns.attachTun("tun0")
        try ns.ip("link set tun0 up")
        try ns.ip("addr add 10.8.0.2/24 dev tun0")
        // OpenVPN-style split: two /1 routes through the tunnel win over the default route.
        try ns.ip("route add 0.0.0.0/1 via 10.8.0.1 dev tun0")
        try ns.ip("route add 128.0.0.0/1 via 10.8.0.1 dev tun0")

        let reachability = try Reachability(environment: ns.environment)
        #expect(reachability.interface?.name == "tun0")
        #expect(reachability.interfaceType == .other)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forCount: 1, "the initial delivery")
        #expect(
            log.entries.first
                == Delivery(
                    status: .reachableViaWiFi, flags: [.reachable, .transientConnection], interface: "tun0"))

        holder.detach()
        try await log.wait(forLast: .notReachable, "notReachable once the tun has no carrier")
        #expect(log.entries.last?.interface == "tun0")

        // The VPN goes away entirely: back to the physical default route.
        try ns.ip("link del tun0")
        try await log.wait(forLast: .reachableViaWiFi, "reachable via veth0 again")
        #expect(log.entries.last == Delivery(status: .reachableViaWiFi, flags: [.reachable], interface: "veth0"))
    }

    @Test("A namespace that cannot be used surfaces as a thrown error, at init or from start()")
    func badNamespace() throws {
        for path in ["/nonexistent/ns/net", "/proc/self/ns/uts", "/etc/hostname"] {
            let error = #expect(throws: ReachabilityError.self) {
                try Reachability(environment: NetworkEnvironment(networkNamespacePath: path))
            }
            #expect(error?.code == .namespace)
            #expect(error?.description.contains(path) == true)
        }
        // A FIFO must not hang the check (the namespace file is opened non-blocking).
        let fifo = NSTemporaryDirectory() + "rtest-fifo-\(UUID().uuidString)"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        #expect(throws: ReachabilityError.self) {
            try Reachability(environment: NetworkEnvironment(networkNamespacePath: fifo))
        }
        // The namespace disappears between init and start: start() throws.
        var ns: TestNamespace? = try TestNamespace()
        let reachability = try Reachability(environment: try #require(ns).environment)
        let path = try #require(ns).path
        ns = nil
        #expect(!FileManager.default.fileExists(atPath: path))
        let startError = try #require(throws: ReachabilityError.self) { try reachability.start() }
        #expect(startError.code == .namespace)
        #expect(startError.description.contains(path))
        #expect(!reachability.isRunning)
    }
}

/// A monitor client that looks up one destination and counts how often the monitor
/// asks for its plan and finishes a pass with it.
final class CountingClient: MonitorClient, Sendable {
    private let destination: IPAddress
    private let tally = LockedValue((plans: 0, finished: 0))

    init(destination: IPAddress) { self.destination = destination }

    var counts: (plans: Int, finished: Int) { tally.withLock { $0 } }

    func plan(for table: InterfaceTable) -> MonitorPlan {
        tally.withLock { $0.plans += 1 }
        return MonitorPlan(requests: [LookupRequest(destination: destination)]) { [tally] _, _, _ in
            tally.withLock { $0.finished += 1 }
        }
    }

    func monitorFailed(_ error: ReachabilityError) {}
}

extension NetlinkMonitor {
    /// Makes `change`, then waits until the monitor has begun a pass after it.
    func pass(after change: () throws -> Void, _ what: String) async throws {
        let passes = statistics.evaluationPasses
        try change()
        try await eventually(what) { self.statistics.evaluationPasses > passes }
    }
}

/// A monitor client that holds the reader thread in the first pass it is called
/// in, until `release()`: the kernel's events then queue up on the event socket.
final class BlockingClient: MonitorClient, Sendable {
    /// A client added to `monitor` that holds its reader in the pass `trigger` makes,
    /// until ``release()``: what the kernel sends meanwhile waits in the socket, and the
    /// reader's next drain reads it at once. The caller removes it.
    static func holding(_ monitor: NetlinkMonitor, after trigger: () throws -> Void) throws -> BlockingClient {
        let blocker = BlockingClient()
        try monitor.add(blocker)
        try trigger()
        #expect(blocker.entered.wait(timeout: .now() + 30) == .success, "the reader ran a pass")
        return blocker
    }

    let entered = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)
    private let blocked = LockedValue(false)

    func plan(for table: InterfaceTable) -> MonitorPlan {
        MonitorPlan(requests: []) { [self] _, _, _ in holdFirstPass() }
    }

    private func holdFirstPass() {
        let first = blocked.withLock { blocked -> Bool in
            defer { blocked = true }
            return !blocked
        }
        guard first else { return }
        entered.signal()
        gate.wait()
    }

    func monitorFailed(_ error: ReachabilityError) { gate.signal() }

    func release() { gate.signal() }
}
