import Foundation
import Reachability
import Synchronization
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// Hostname targets against a real DNS server (dnsmasq) inside a named test
/// namespace, resolved by the real system resolver through /etc/netns/NAME.
@Suite("Hostname targets against a real DNS server", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct HostnameIntegrationTests {
    /// A named namespace with veth0 (192.0.2.1/24, on-link), veth2 (198.51.100.1/24) and dnsmasq.
    private func setUp(_ hosts: [String: String]) throws -> (TestNamespace, DNSServer) {
        let ns = try TestNamespace(named: "rtest-dns")
        try ns.disableIPv6()
        try ns.twoLinks()
        return (ns, try DNSServer(in: ns, hosts: hosts))
    }

    @Test("A name resolving to a reachable address: its flags follow routing changes and DNS changes")
    func resolvesAndFollows() async throws {
        let (ns, dns) = try setUp(["svc.rtest": "192.0.2.77"])
        let reachability = try Reachability(hostname: "svc.rtest", environment: ns.environment)
        #expect(reachability.targetDescription == "svc.rtest")
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forCount: 1, "the first delivery, after the first resolution")
        // The first delivery waits for DNS: it is the resolved answer, never a premature "unreachable".
        #expect(
            log.entries.first
                == Delivery(status: .reachableViaWiFi, flags: [.reachable, .isDirect], interface: "veth0"))

        // Routing changes move its flags.
        try ns.ip("link set veth1 down")
        try await log.wait(forLast: .notReachable, "notReachable after carrier loss")
        try ns.ip("link set veth1 up")
        try await log.wait(forLast: .reachableViaWiFi, "reachable again")

        // A changed DNS answer is picked up when the network changes.
        try dns.reload(["svc.rtest": "198.51.100.9"])
        try ns.ip("addr add 203.0.113.1/24 dev veth2")
        try await log.wait(for: "the new address's interface") { $0.last?.interface == "veth2" }
        #expect(
            log.entries.last == Delivery(status: .reachableViaWiFi, flags: [.reachable, .isDirect], interface: "veth2"))
        #expect(reachability.core.currentResolution == .addresses([try IPAddress("198.51.100.9")]))
    }

    @Test("NXDOMAIN gives exactly one delivery, notReachable")
    func nxdomain() async throws {
        let (ns, _) = try setUp(["svc.rtest": "192.0.2.77"])
        let reachability = try Reachability(hostname: "missing.rtest", environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forCount: 1, "the first delivery")
        #expect(log.entries == [Delivery(status: .notReachable, flags: [], interface: nil)])
        guard case .failed = try #require(reachability.core.currentResolution) else {
            Issue.record("expected a failed resolution")
            return
        }
        // A network change re-resolves (still NXDOMAIN): nothing new to deliver. A second,
        // address-based instance marks when the change has been processed.
        let marker = try Reachability(address: "192.0.2.77", environment: ns.environment)
        let markerLog = try DeliveryLog.started(marker)
        try await markerLog.wait(forCount: 1, "the marker's first delivery")
        try ns.ip("link set veth1 down")
        try await markerLog.wait(forLast: .notReachable, "the marker sees the change")
        try await eventually("the re-resolution to finish") { !reachability.core.isResolving }
        #expect(log.entries.count == 1)
    }

    @Test("An IP literal passed as a hostname is an address, with no DNS")
    func literalHostname() throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute()
        let reachability = try Reachability(hostname: "192.0.2.1", environment: ns.environment)
        #expect(reachability.targetDescription == "192.0.2.1")
        #expect(reachability.core.spec == .fixed(.address(try IPAddress("192.0.2.1"))))
        #expect(reachability.flags == [.reachable, .isLocalAddress, .isDirect])
        let bracketed = try Reachability(hostname: "[::1]", environment: ns.environment)
        #expect(bracketed.core.spec == .fixed(.address(try IPAddress("::1"))))
    }

    @Test("A resolver that never answers: startNotifier and currentReachabilityStatus do not wait")
    func silentResolver() async throws {
        let ns = try TestNamespace(named: "rtest-silent")
        try ns.ipv4WithDefaultRoute()
        let server = try SilentDNSServer(in: ns)
        let reachability = try Reachability(hostname: "slow.rtest", environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        // The resolution is still in flight (the server never answers, and the resolver's
        // timeout is 5 s × 3 attempts), yet the getters answer now: provisionally, from
        // the route the Internet target takes (the default route via veth0).
        #expect(reachability.core.isResolving)
        #expect(reachability.currentReachabilityStatus == .reachableViaWiFi)
        #expect(reachability.flags == [.reachable])
        #expect(reachability.state.isProvisional)
        #expect(reachability.state.interface?.name == "veth0")
        #expect(reachability.resolvedAddresses == nil)
        #expect(reachability.core.isResolving)
        #expect(log.entries.isEmpty, "no delivery before the first resolution")
        // A second instance, never started: its getter does not wait either.
        let other = try Reachability(hostname: "other.rtest", environment: ns.environment)
        #expect(other.currentReachabilityStatus == .reachableViaWiFi)
        #expect(other.state.isProvisional)
        #expect(other.core.isResolving)
        reachability.stop()
        _ = server
    }

    @Test("Invalid hostnames throw with the name in the message")
    func invalidHostnames() {
        let bad = [
            "", "has space.example", "tab\there", "ctl\u{1}x", String(repeating: "a", count: 64) + ".example",
            String(repeating: "abcdefghi.", count: 26) + "example", "double..dot",
        ]
        for name in bad {
            let error = #expect(throws: ReachabilityError.self) { try Reachability(hostname: name) }
            #expect(error?.code == .invalidHostname, "\(name)")
            if !name.isEmpty {
                #expect(
                    error?.description.contains(
                        String(name.prefix(20)).replacingOccurrences(of: "\t", with: "\\u{9}").replacingOccurrences(
                            of: "\u{1}", with: "\\u{1}")) == true, "\(name): \(String(describing: error))")
            }
        }
        #expect((try? Reachability(hostname: "fine.example.")) != nil)
    }
}

/// Block observers, the async sequence, waiting, and many targets.
@Suite("Observers, updates and waiting against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct ObserverIntegrationTests {
    @Test("A block observer is called at once, then on every change; removal works from inside the callback")
    func blockObservers() async throws {
        let (ns, reachability, log) = try TestNamespace.watchingInternet(ipv4Only: true)
        try await log.wait(forCount: 1, "the initial delivery")

        // 100 observers, each must see every change exactly once.
        let seen = LockedValue([[NetworkStatus]](repeating: [], count: 100))
        var tokens: [ReachabilityObservation] = []
        for i in 0..<100 {
            tokens.append(reachability.addObserver { state in seen.withLock { $0[i].append(state.status) } })
        }
        // An observer that removes itself on its second call.
        let selfRemoving = LockedValue<(calls: Int, token: ReachabilityObservation?)>((0, nil))
        let token = reachability.addObserver { _ in
            let remove = selfRemoving.withLock { state -> ReachabilityObservation? in
                state.calls += 1
                return state.calls == 2 ? state.token : nil
            }
            remove?.remove()
        }
        selfRemoving.withLock { $0.token = token }
        try await eventually("the immediate calls") { seen.withLock { $0.allSatisfy { $0.count == 1 } } }
        #expect(seen.withLock { $0.allSatisfy { $0 == [.reachableViaWiFi] } })

        try ns.ip("route del default")
        try await log.wait(forLast: .notReachable, "down")
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await log.wait(forLast: .reachableViaWiFi, "up")
        try ns.ip("route del default")
        try await log.wait(forLast: .notReachable, "down again")
        try await eventually("every observer saw every change") { seen.withLock { $0.allSatisfy { $0.count == 4 } } }
        #expect(
            seen.withLock {
                $0.allSatisfy { $0 == [.reachableViaWiFi, .notReachable, .reachableViaWiFi, .notReachable] }
            })
        // Observers run after the closures on the same serial queue: by the time the log
        // saw the last delivery and every observer saw it too, the self-removed one would have as well.
        #expect(selfRemoving.withLock { $0.calls } == 2)

        for token in tokens.prefix(50) { reachability.removeObserver(token) }
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await log.wait(forLast: .reachableViaWiFi, "up again")
        try await eventually("the remaining observers saw it") {
            seen.withLock { $0[50...].allSatisfy { $0.count == 5 } }
        }
        #expect(seen.withLock { $0[..<50].allSatisfy { $0.count == 4 } })
        #expect(selfRemoving.withLock { $0.calls } == 2)
    }

    @Test("updates: a slow consumer sees the newest state; the sequence ends on stop and on cancellation")
    func asyncUpdates() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.addVeth("veth2", peer: "veth3", address: "198.51.100.1/24")
        let reachability = try Reachability(environment: ns.environment)
        let log = try DeliveryLog.started(reachability)
        let updates = reachability.updates
        try await log.wait(forCount: 1, "the initial delivery")

        // Three changes while nobody reads the sequence.
        try ns.ip("route del default")
        try await log.wait(forCount: 2, "down")
        try ns.ip("route add default via 198.51.100.2 dev veth2")
        try await log.wait(forCount: 3, "up via veth2")
        try ns.ip("route replace default via 192.0.2.2 dev veth0")
        try await log.wait(forCount: 4, "up via veth0")
        var iterator = updates.makeAsyncIterator()
        let newest = await iterator.next()
        #expect(
            newest?.interface?.name == "veth0" && newest?.status == .reachableViaWiFi, "\(String(describing: newest))")

        // The next change arrives, then stop() finishes the sequence.
        try ns.ip("route del default")
        #expect(await iterator.next()?.status == .notReachable)
        reachability.stop()
        #expect(await iterator.next() == nil)

        // Cancellation ends a loop that is waiting for a change.
        try reachability.start()
        let started = LockedValue(false)
        let loop = Task {
            var count = 0
            for await _ in reachability.updates {
                count += 1
                started.withLock { $0 = true }
            }
            return count
        }
        try await eventually("the loop got the current state") { started.withLock { $0 } }
        loop.cancel()
        #expect(await loop.value == 1)
    }

    @Test("waitUntilReachable: true soon after the link comes up 0.5 s later; false at the deadline")
    func waiting() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.ip("link set veth1 down")  // No carrier: not reachable yet.
        let reachability = try Reachability(environment: ns.environment)
        #expect(reachability.currentReachabilityStatus == .notReachable)

        // The link comes up 0.5 s after waiting starts.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { _ = try? ns.ip("link set veth1 up") }
        let start = ContinuousClock.now
        #expect(await reachability.waitUntilReachable(timeout: .seconds(20)))
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(400), "it returned \(waited) after starting: before the link came up?")
        #expect(reachability.currentReachabilityStatus == .reachableViaWiFi)
        // Already reachable: true at once.
        #expect(await reachability.waitUntilReachable(timeout: .seconds(20)))

        // Never reachable: false at the deadline; the completion form agrees.
        try ns.ip("link set veth1 down")
        let deadlineStart = ContinuousClock.now
        #expect(await reachability.waitUntilReachable(timeout: .seconds(1)) == false)
        #expect(ContinuousClock.now - deadlineStart >= .seconds(1))
        let answer = await withCheckedContinuation { continuation in
            reachability.waitUntilReachable(timeout: .milliseconds(300)) { continuation.resume(returning: $0) }
        }
        #expect(answer == false)
        #expect(!reachability.isRunning, "waiting does not start the instance's own notifier")
    }

    @Test("10,000 address targets share one event socket and are all updated after one link change")
    func tenThousandTargets() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.addVeth("veth0", peer: "veth1", address: "10.0.0.1/16")
        let environment = ns.environment
        let before = try NetlinkSockets.count(inNamespace: ns.path)
        let unreachable = Atomic<Int>(0)
        let lastDelivery = LockedValue(ContinuousClock.now)
        var targets: [Reachability] = []
        targets.reserveCapacity(10_000)
        let startAll = ContinuousClock.now
        for i in 0..<10_000 {
            let r = try Reachability(address: "10.0.\(1 + i / 250).\(1 + i % 250)", environment: environment)
            r.whenUnreachable = { _ in
                unreachable.add(1, ordering: .relaxed)
                lastDelivery.withLock { $0 = ContinuousClock.now }
            }
            try r.start()
            targets.append(r)
        }
        let startup = ContinuousClock.now - startAll
        #expect(targets.allSatisfy { $0.flags == [.reachable, .isDirect] })
        #expect(try NetlinkSockets.count(inNamespace: ns.path) - before == 2, "one event socket and one request socket")
        #expect(MonitorRegistry.running(for: environment)?.clientCount == 10_000)

        let change = ContinuousClock.now
        try ns.ip("link set veth1 down")
        try await eventually("all 10,000 notified", timeout: .seconds(60)) {
            unreachable.load(ordering: .relaxed) == 10_000
        }
        let elapsed = lastDelivery.withLock { $0 } - change
        #expect(targets.allSatisfy { $0.flags == [] })
        print("10,000 targets: started in \(startup); one link change → all notified in \(elapsed)")
        for r in targets { r.stop() }
    }
}

/// Counts this process's netlink sockets that live in a given network namespace,
/// from `/proc/self/task/*/net/netlink` (per namespace) and `/proc/self/fd`.
enum NetlinkSockets {
    static func count(inNamespace path: String) throws -> Int {
        let fm = FileManager.default
        let target = try fm.destinationOfSymbolicLink(atPath: path)
        var ourInodes: Set<String> = []
        for fd in try fm.contentsOfDirectory(atPath: "/proc/self/fd") {
            if let link = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"), link.hasPrefix("socket:[") {
                ourInodes.insert(String(link.dropFirst(8).dropLast()))
            }
        }
        // Any file listing the namespace's netlink sockets will do: read it through a
        // thread in that namespace, or through the namespace holder process.
        var tables: [String] = []
        for task in try fm.contentsOfDirectory(atPath: "/proc/self/task") {
            if (try? fm.destinationOfSymbolicLink(atPath: "/proc/self/task/\(task)/ns/net")) == target {
                tables.append("/proc/self/task/\(task)/net/netlink")
                break
            }
        }
        if tables.isEmpty, path.hasPrefix("/proc/") {
            tables.append(path.replacingOccurrences(of: "/ns/net", with: "/net/netlink"))
        }
        guard let table = tables.first, let text = try? String(contentsOfFile: table, encoding: .utf8) else {
            return 0
        }
        // Columns: sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
        return text.split(separator: "\n").dropFirst().filter { line in
            guard let inode = line.split(separator: " ", omittingEmptySubsequences: true).last else { return false }
            return ourInodes.contains(String(inode))
        }.count
    }
}
