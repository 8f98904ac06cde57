import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// The kernel changes its routing answer without any message the monitor hears of:
/// after the message of a change, in the same system call or a later one, or on a
/// timer. Each test makes such a change and requires the last delivered state to be
/// the kernel's answer (a fresh evaluation) within a few seconds of the answer
/// changing; a monitor that waits for the next unrelated event is wrong for tens of
/// seconds or forever. One test at a time: each times the notifier, and the IPv4
/// multipath tests place threads on CPUs.
@Suite(
    "The kernel's answer changes without a route message", .enabled(if: IntegrationGate.enabled), .ownThreads,
    .serialized)
struct SilentRouteChangeTests {
    /// How long after the kernel's answer changed the notifier may take to deliver it.
    static let bound = 3.0

    /// The state of `probe` (a `Reachability` never started) evaluated afresh: the
    /// kernel's answer now, with the interface table's view of its link.
    static func answer(of probe: Reachability) -> Delivery {
        let state = probe.state
        return Delivery(status: state.status, flags: state.flags, interface: state.interface?.name)
    }

    /// Polls the kernel's answer for `probe` until `expected` holds, then requires the
    /// notifier to have delivered that same state last within ``bound`` seconds of
    /// then, and the kernel's answer to be still the same afterwards. Returns it.
    @discardableResult
    static func requireDelivered(
        _ what: String, log: DeliveryLog, probe: Reachability, kernelTimeout: Duration = .seconds(15),
        _ expected: (Delivery) -> Bool
    ) async throws -> Delivery {
        let deadline = ContinuousClock.now + kernelTimeout
        var kernel = answer(of: probe)
        while !expected(kernel) {
            guard ContinuousClock.now < deadline else {
                throw WaitTimedOut(what: "the kernel's answer: \(what) (it says \(kernel))", seen: log.entries)
            }
            try await Task.sleep(for: .milliseconds(5))
            kernel = answer(of: probe)
        }
        let settled = kernel
        try await log.wait(for: "\(what): \(settled), the kernel's answer", timeout: bound) { $0.last == settled }
        #expect(answer(of: probe) == settled, "the kernel's answer held: \(what)")
        return settled
    }

    /// Reachable over `name`, as the kernel and the table see it.
    static func via(_ name: String) -> (Delivery) -> Bool {
        { $0.status == .reachableViaWiFi && $0.interface == name }
    }

    /// Which of `candidates` the kernel routes over `link` (`ip route get`).
    static func routedOver(_ link: String, in ns: TestNamespace, _ candidates: [String]) throws -> [String] {
        try candidates.filter { try ns.ip("route get \($0)").contains(" dev \(link) ") }
    }

    @Test("IPv6 multipath: a next hop revived at carrier-up takes its flows back, with no route message")
    func ipv6NextHopRevivedAtCarrierUp() async throws {
        // IPv6 marks vA's next hops dead when vA goes down and clears that only when
        // vA is ready again: at the carrier-up after the admin up, which comes a
        // moment later as a link message of carrier alone, with no route message.
        // vA never has an IPv6 address (no link-local generated, no global), so no
        // address event follows the carrier-up; the source is vB's address.
        let (ns, far) = try TestNamespace.withFarPeersWithoutDAD()
        // The far namespace holds the peers: released early, it would take vA and vB with it.
        defer { withExtendedLifetime(far) {} }
        try ns.ip("link add vA type veth peer name pA netns \(far.path)")
        try far.ip("link set pA up")
        try ns.run(["sysctl", "-qw", "net.ipv6.conf.vA.addr_gen_mode=1"])
        try ns.ip("link set vA up")
        try ns.addVeth("vB", peerIn: far, peer: "pB", address: "2001:db8:b::1/64")
        // Permanent gateway neighbours: router selection depends on nothing but the
        // hash. vA going down flushes fe80::a's entry; it is not put back, as that would
        // be a gateway's neighbour event, which gets the target asked again.
        try ns.ip("-6 neigh add fe80::a dev vA lladdr 02:00:00:00:00:0a nud permanent")
        try ns.ip("-6 neigh add fe80::b dev vB lladdr 02:00:00:00:00:0b nud permanent")
        try ns.ip("-6 route add fd73::/64 nexthop via fe80::a dev vA nexthop via fe80::b dev vB")
        let target = try #require(
            Self.routedOver("vA", in: ns, (1...32).map { "fd73::\($0)" }).first, "a target hashed onto vA")

        let reachability = try Reachability(address: target, environment: ns.environment)
        let probe = try Reachability(address: target, environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        try await Self.requireDelivered("over vA at start", log: log, probe: probe, Self.via("vA"))
        // Each cycle is the same: the admin up's pass asks while vA's next hop is
        // still dead, and the carrier-up's is of carrier alone.
        for cycle in 1...5 {
            try ns.ip("link set vA down")
            try await Self.requireDelivered(
                "cycle \(cycle): over vB once vA is down", log: log, probe: probe, Self.via("vB"))
            try ns.ip("link set vA up")
            try await Self.requireDelivered(
                "cycle \(cycle): over vA once its carrier is back", log: log, probe: probe, Self.via("vA"))
            #expect(try !ns.ip("-6 addr show dev vA").contains("inet6"), "no IPv6 address on vA")
        }
        reachability.stop()
    }

    /// IPv4 only, vA and vB up with carrier (peers in `far`), a default route over vB,
    /// and nexthop object 1 over vA carrying 198.51.100.0/24.
    static func nexthopSetup() throws -> (ns: TestNamespace, far: TestNamespace) {
        let (ns, far) = (try TestNamespace(), try TestNamespace())
        try ns.disableIPv6()
        try ns.addVeth("vA", peerIn: far, peer: "pA", address: "10.1.0.1/24")
        try ns.addVeth("vB", peerIn: far, peer: "pB", address: "10.2.0.1/24")
        try ns.ip("route add default via 10.2.0.2 dev vB")
        try ns.ip("nexthop add id 1 via 10.1.0.2 dev vA")
        try ns.ip("route add 198.51.100.0/24 nhid 1")
        return (ns, far)
    }

    @Test("Nexthop objects: deleting the nexthop deletes its routes with no route message")
    func nexthopDeletion() async throws {
        // `ip nexthop del` removes the routes using the nexthop and says so only with
        // RTM_DELNEXTHOP (RTNLGRP_NEXTHOP); the kernel then answers with the default
        // route over vB. Re-adding the nexthop and its route is announced as usual.
        let (ns, far) = try Self.nexthopSetup()
        defer { withExtendedLifetime(far) {} }
        let reachability = try Reachability(address: "198.51.100.7", environment: ns.environment)
        let probe = try Reachability(address: "198.51.100.7", environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        for cycle in 1...3 {
            if cycle > 1 {
                try ns.ip("nexthop add id 1 via 10.1.0.2 dev vA")
                try ns.ip("route add 198.51.100.0/24 nhid 1")
            }
            try await Self.requireDelivered(
                "cycle \(cycle): over vA by the nexthop", log: log, probe: probe, Self.via("vA"))
            try ns.ip("nexthop del id 1")
            #expect(try ns.ip("route show 198.51.100.0/24").isEmpty, "the route went with its nexthop")
            try await Self.requireDelivered(
                "cycle \(cycle): over vB by the default route", log: log, probe: probe, Self.via("vB"))
        }
        reachability.stop()
    }

    @Test("Nexthop objects: replacing the nexthop moves its routes, announced only in compat mode")
    func nexthopReplacement() async throws {
        // With net.ipv4.nexthop_compat_mode at 1 (the default), replacing a nexthop
        // also sends RTM_NEWROUTE for each route using it; at 0 it sends only
        // RTM_NEWNEXTHOP, and the routes move silently.
        let (ns, far) = try Self.nexthopSetup()
        defer { withExtendedLifetime(far) {} }
        let reachability = try Reachability(address: "198.51.100.7", environment: ns.environment)
        let probe = try Reachability(address: "198.51.100.7", environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        try await Self.requireDelivered("over vA by the nexthop", log: log, probe: probe, Self.via("vA"))
        for compatMode in [1, 0] {
            try ns.run(["sysctl", "-qw", "net.ipv4.nexthop_compat_mode=\(compatMode)"])
            try ns.ip("nexthop replace id 1 via 10.2.0.2 dev vB")
            try await Self.requireDelivered(
                "compat mode \(compatMode): over vB by the replaced nexthop", log: log, probe: probe, Self.via("vB"))
            try ns.ip("nexthop replace id 1 via 10.1.0.2 dev vA")
            try await Self.requireDelivered(
                "compat mode \(compatMode): over vA by the nexthop put back", log: log, probe: probe, Self.via("vA"))
        }
        reachability.stop()
    }

    /// Multipath routes in ``Multipath``: enough that the kernel's walk over them
    /// outlasts the monitor's lookups for an address's messages.
    static let multipathRoutes = 10_000

    /// An IPv4-only namespace (no IPv6 event asks again by chance) with vA
    /// (10.1.0.1/24) and vB (10.2.0.1/24) up with carrier, ``multipathRoutes`` /32
    /// routes each split between 10.1.0.2 on vA and 10.2.0.2 on vB, and three of them
    /// that the hash puts on vA watched, each delivered over vA.
    struct Multipath {
        let ns: TestNamespace
        let far: TestNamespace
        let watched: [(address: String, probe: Reachability, log: DeliveryLog)]
        /// The thread id of the monitor's reader.
        let reader: String
        /// Two CPUs this process may use: one for `ip`, one for the reader.
        let cpus: (String, String)?

        init() async throws {
            (ns, far) = (try TestNamespace(), try TestNamespace())
            try ns.disableIPv6()
            try ns.addVeth("vA", peerIn: far, peer: "pA", address: "10.1.0.1/24")
            try ns.addVeth("vB", peerIn: far, peer: "pB", address: "10.2.0.1/24")
            // A metric of its own for each route, so that none shares its next-hop
            // records with another (routes alike share one set): the kernel then kills
            // and revives vA's next hops route by route, the routes added first last,
            // for milliseconds after the address's messages. The targets are among the
            // first.
            try ns.batch(
                (0..<multipathRoutes).map {
                    "route add 10.\(96 + $0 >> 16).\($0 >> 8 & 255).\($0 & 255)/32 metric \($0 + 1)"
                        + " nexthop via 10.1.0.2 dev vA nexthop via 10.2.0.2 dev vB"
                })
            let targets = Array(try routedOver("vA", in: ns, (0..<32).map { "10.96.0.\($0)" }).prefix(3))
            try #require(targets.count == 3, "three targets hashed onto vA")
            let readerThread = LockedValue<String?>(nil)
            watched = try targets.map { [ns] address in
                let reachability = try Reachability(address: address, environment: ns.environment)
                // A change is delivered to this sink on the monitor's reader thread.
                reachability.deliverSynchronously { _ in
                    let name = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
                    guard name?.hasPrefix("reachability-nl") == true,
                        let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"),
                        let thread = path.split(separator: "/").last
                    else { return }
                    readerThread.withLock { $0 = String(thread) }
                }
                let probe = try Reachability(address: address, environment: ns.environment)
                return (address, probe, try DeliveryLog.started(reachability))
            }
            for (address, probe, log) in watched {
                try await requireDelivered("\(address) over vA at start", log: log, probe: probe, via("vA"))
            }
            // A change for the first target alone (its own blackhole, ahead of its
            // route), so that the reader has delivered one and is known.
            let (first, probe, log) = watched[0]
            try ns.ip("route add blackhole \(first)/32 metric 0")
            try await requireDelivered("\(first) behind its blackhole", log: log, probe: probe) {
                $0.status == .notReachable
            }
            try ns.ip("route del blackhole \(first)/32 metric 0")
            try await requireDelivered("\(first) over vA again", log: log, probe: probe, via("vA"))
            reader = try #require(readerThread.withLock { $0 }, "the reader thread delivered")
            cpus = Self.twoCPUs()
        }

        /// Two CPUs this process may run on (`Cpus_allowed_list`), or nil.
        static func twoCPUs() -> (String, String)? {
            guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
            else { return nil }
            var cpus: [Int] = []
            for range in line.dropFirst("Cpus_allowed_list:".count).split(separator: ",") {
                let bounds = range.split(separator: "-").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
                guard let low = bounds.first, let high = bounds.last, low <= high else { continue }
                cpus += Array(low...high)
            }
            return cpus.count >= 2 ? (String(cpus[0]), String(cpus[1])) : nil
        }

        /// Changes vA's address with `ip addr VERB` on one CPU while the reader is
        /// pinned to another. A reader woken onto the CPU that runs the system call
        /// waits for it to end (the kernel doesn't preempt it while it walks the next
        /// hops) and looks up after the walk, which hides the race.
        func address(_ verb: String) throws {
            let command = ["ip", "addr", verb, "10.1.0.1/24", "dev", "vA"]
            guard let (mine, readers) = cpus else {
                try ns.run(command)
                return
            }
            try Command.check(["taskset", "-p", "-c", readers, reader])
            try ns.run(["taskset", "-c", mine] + command)
        }

        /// Requires each watched target delivered over `link`, as the kernel answers.
        func requireAll(over link: String, _ what: String) async throws {
            for (address, probe, log) in watched {
                try await requireDelivered("\(what): \(address) over \(link)", log: log, probe: probe, via(link))
            }
        }

        func stop() {
            for (_, _, log) in watched { log.reachability.stop() }
        }
    }

    @Test("IPv4 multipath: next hops revived after the address's message, with no message of their own")
    func ipv4NextHopsRevivedAfterAddress() async throws {
        // Adding vA's address back sends RTM_NEWADDR and the address's own routes, then
        // revives vA's next hops with no message: lookups for those messages can come
        // before the revival reaches the targets. Deleting the address kills the next
        // hops the same way, but then flushes vA's neighbours: the gateway's permanent
        // entry going (RTM_DELNEIGH) gets the targets asked again after the kill, so
        // that the revival alone is in question here.
        let setup = try await Multipath()
        for cycle in 1...5 {
            try setup.ns.ip("neigh replace 10.1.0.2 dev vA lladdr 02:00:00:00:01:02 nud permanent")
            try setup.address("del")
            #expect(try setup.ns.ip("neigh show dev vA").isEmpty, "the gateway's entry flushed with the address")
            try await setup.requireAll(over: "vB", "cycle \(cycle), without vA's address")
            try setup.address("add")
            try await setup.requireAll(over: "vA", "cycle \(cycle), vA's address back")
        }
        setup.stop()
    }

    @Test("IPv4 multipath: next hops killed after the address's message, with no message of their own")
    func ipv4NextHopsKilledAfterAddress() async throws {
        // Deleting vA's only address sends RTM_DELADDR and the address's own routes'
        // deletions, then kills vA's next hops with no message (no gateway neighbour
        // entry here to be flushed after): lookups for those messages can come before
        // the kill reaches the targets, which the kernel then routes over vB.
        let setup = try await Multipath()
        for cycle in 1...5 {
            try setup.address("del")
            try await setup.requireAll(over: "vB", "cycle \(cycle), without vA's address")
            try setup.address("add")
            try await setup.requireAll(over: "vA", "cycle \(cycle), vA's address back")
        }
        setup.stop()
    }

    @Test(
        "An IPv6 address kept at an admin down: tentative without a message, the source again with one that says no more"
    )
    func ipv6AddressKeptAtAdminDown() async throws {
        // With keep_addr_on_down, an admin down keeps vA's global address but marks it
        // tentative, silently: the kernel then sources traffic over vB from vB's
        // link-local address, and a global target is not reachable. At the admin up the
        // address goes through duplicate address detection again (a second here), and
        // its RTM_NEWADDR at the end says what the monitor's table still holds from
        // before the down, while the kernel sources from it again. vA has no link-local
        // address: its message at the end of its own detection would change the table
        // and ask everything in the same pass, hiding a pass that keeps its answers.
        let (ns, far) = try TestNamespace.withFarPeersWithoutDAD()
        defer { withExtendedLifetime(far) {} }
        try ns.ip("link add vA type veth peer name pA netns \(far.path)")
        try ns.run([
            "sysctl", "-qw", "net.ipv6.conf.vA.keep_addr_on_down=1", "net.ipv6.conf.vA.accept_dad=1",
            "net.ipv6.conf.vA.dad_transmits=1", "net.ipv6.conf.vA.addr_gen_mode=1",
        ])
        try far.ip("link set pA up")
        try ns.ip("link set vA up")
        try ns.ip("-6 addr add 2001:db8:1::5/64 dev vA")
        try ns.ip("link add vB type veth peer name pB netns \(far.path)")
        try far.ip("link set pB up")
        try ns.ip("link set vB up")
        try ns.ip("-6 route add 2001:db8:2::/64 dev vB")
        try ns.ip("-6 neigh replace 2001:db8:2::3 lladdr 02:00:00:00:02:03 dev vB nud permanent")
        try ns.ip("-6 route add 2001:db8:1000::/48 via 2001:db8:2::3 dev vB")
        let target = "2001:db8:1000::5"
        let reachability = try Reachability(address: target, environment: ns.environment)
        let probe = try Reachability(address: target, environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        for cycle in 1...2 {
            try await Self.requireDelivered(
                "cycle \(cycle): over vB, from vA's address", log: log, probe: probe, Self.via("vB"))
            try ns.ip("link set vA down")
            #expect(try ns.ip("-6 addr show dev vA").contains("tentative"), "kept, and tentative")
            try await Self.requireDelivered("cycle \(cycle): from vB's link-local address", log: log, probe: probe) {
                $0.status == .notReachable && $0.interface == "vB"
            }
            try ns.ip("link set vA up")
        }
        try await Self.requireDelivered("over vB from vA's address again", log: log, probe: probe, Self.via("vB"))
        reachability.stop()
    }

    /// An IPv6-only namespace (IPv4 has no route) with vA, 2001:db8:a::1/64, up with
    /// carrier, its router fe80::a a permanent neighbour; and the Internet target in
    /// it, started.
    static func ipv6Internet() throws -> (ns: TestNamespace, far: TestNamespace, log: DeliveryLog, probe: Reachability)
    {
        let (ns, far) = try TestNamespace.withFarPeersWithoutDAD()
        try ns.addVeth("vA", peerIn: far, peer: "pA", address: "2001:db8:a::1/64")
        try ns.ip("-6 neigh add fe80::a dev vA lladdr 02:00:00:00:00:0a nud permanent")
        let log = try DeliveryLog.started(try Reachability(environment: ns.environment))
        return (ns, far, log, try Reachability(environment: ns.environment))
    }

    @Test("IPv6 route lifetime: the kernel stops using an expired route long before deleting it")
    func ipv6RouteExpires() async throws {
        // At `expires` the kernel skips the route; it deletes it, with RTM_DELROUTE,
        // only when IPv6 route garbage collection runs (net.ipv6.route.gc_interval,
        // 30 s), as with a router advertisement's default route.
        let (ns, far, log, probe) = try Self.ipv6Internet()
        defer { withExtendedLifetime(far) {} }
        try await log.wait(forLast: .notReachable, "no IPv6 default route yet")
        try ns.ip("-6 route add default via fe80::a dev vA expires 3")
        try await Self.requireDelivered("over vA by the default route", log: log, probe: probe, Self.via("vA"))
        try await Self.requireDelivered("notReachable once the route expired", log: log, probe: probe) {
            $0.status == .notReachable
        }
        #expect(try ns.ip("-6 route show default").contains("via fe80::a"), "the expired route still in the table")
        log.reachability.stop()
    }

    /// The seconds left of the IPv6 default route's lifetime, as `ip -6 route show` rounds them.
    static func expiresIn(_ ns: TestNamespace) throws -> Int? {
        let words = try ns.ip("-6 route show default").split(separator: " ")
        guard let index = words.firstIndex(of: "expires"), index + 1 < words.count else { return nil }
        return Int(words[index + 1].dropLast(3))
    }

    @Test("IPv6 route lifetime: a lifetime renewed before it ends keeps the route, until the new end")
    func ipv6RouteLifetimeRenewed() async throws {
        // A route's lifetime is renewed silently when the same route is added again
        // without NLM_F_EXCL (`ip route append`, which then fails with EEXIST), as a
        // router advertisement renews its default route; `ip route replace` renews it
        // with a message. Neither end that passed may be kept.
        let (ns, far, log, probe) = try Self.ipv6Internet()
        defer { withExtendedLifetime(far) {} }
        try await log.wait(forLast: .notReachable, "no IPv6 default route yet")
        let added = ContinuousClock.now
        try ns.ip("-6 route add default via fe80::a dev vA expires 2")
        try await Self.requireDelivered("over vA by the default route", log: log, probe: probe, Self.via("vA"))
        let delivered = log.entries.count

        let append = "ip -6 route append default via fe80::a dev vA expires 5".split(separator: " ").map(String.init)
        let renewal = try Command.run(["nsenter", "--net=\(ns.path)", "--"] + append)
        #expect(renewal.status != 0 && renewal.stderr.contains("File exists"), "renewed in place: \(renewal.stderr)")
        #expect(try Self.expiresIn(ns) ?? 0 >= 4, "the lifetime renewed")

        /// Waits (the kernel's clock, not the library) until `end` plus a margin for a
        /// re-check, then requires the kernel and every delivery since the renewal to
        /// say reachable over vA.
        func heldPast(_ end: Duration, _ what: String) async throws {
            try await Task.sleep(until: added + end + .seconds(1.5))
            #expect(Self.via("vA")(Self.answer(of: probe)), "the kernel still routes over vA: \(what)")
            #expect(log.entries.dropFirst(delivered).allSatisfy(Self.via("vA")), "\(what): \(log.entries)")
        }
        try await heldPast(.seconds(2), "past the first end, renewed silently")
        try ns.ip("-6 route replace default via fe80::a dev vA expires 5")
        let replaced = ContinuousClock.now
        try await heldPast(.seconds(5), "past the silent renewal's end, replaced since")
        #expect(ContinuousClock.now < replaced + .seconds(5), "the replaced route has not expired yet")
        try await Self.requireDelivered("notReachable once the replaced route expired", log: log, probe: probe) {
            $0.status == .notReachable
        }
        #expect(try ns.ip("-6 route show default").contains("via fe80::a"), "the expired route still in the table")
        log.reachability.stop()
    }
}
