import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// Regressions found in review: namespaces leaking into Dispatch threads, forged
/// rtnetlink messages, zoned link-local pairs, hidden notifications, lock re-entry.
@Suite("Robustness against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct RobustnessIntegrationTests {
    /// The network namespace of every thread of this process, by thread name.
    static func threadNamespaces() -> [(name: String, namespace: String)] {
        let fm = FileManager.default
        return ((try? fm.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap { task in
            guard let namespace = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/task/\(task)/ns/net") else {
                return nil
            }
            // Read after the namespace: a thread whose name can no longer be read has
            // exited meanwhile (a short-lived namespace helper of a test running beside
            // this one), and a thread gone is no stray. Names are set before a thread
            // enters a namespace, so a live one is always seen with its name.
            guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8) else {
                return nil
            }
            return (name.trimmingCharacters(in: .whitespacesAndNewlines), namespace)
        }
    }

    @Test("Callbacks and every thread the library leads to stay in the process's own namespace")
    func noNamespaceLeak() async throws {
        let home = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/net")
        let ns = try TestNamespace(named: "rtest-leak")
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        _ = try DNSServer(in: ns, hosts: ["svc.rtest": "192.0.2.77"])
        let seen = LockedValue<Set<String>>([])
        let record: @Sendable (ReachabilityState) -> Void = { _ in
            let here = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self/ns/net")) ?? "?"
            seen.withLock { _ = $0.insert(here) }
            // Work enqueued from a callback may start new Dispatch threads.
            DispatchQueue.global().async {}
        }
        let internet = try Reachability(environment: ns.environment, notificationQueue: DispatchQueue(label: "a"))
        let host = try Reachability(
            hostname: "svc.rtest", environment: ns.environment, notificationQueue: DispatchQueue(label: "b"))
        let log = DeliveryLog(internet)
        let hostLog = DeliveryLog(host)
        let tokens = [internet.addObserver(record), host.addObserver(record)]
        try internet.start()
        try host.start()
        try await hostLog.wait(forCount: 1, "the hostname's first delivery")
        for round in 0..<5 {
            try ns.ip("link set veth1 down")
            try await log.wait(forCount: 2 + 2 * round, "down \(round)")
            try ns.ip("link set veth1 up")
            try await log.wait(forCount: 3 + 2 * round, "up \(round)")
        }
        #expect(seen.withLock { $0 } == [home], "callbacks ran in \(seen.withLock { $0 })")
        // Only the library's short-lived namespace helpers may ever be elsewhere, and
        // the event loops that run probes (Connectivity) or test servers there on purpose.
        let allowed: Set<String> = ["reachability-ns", "connectivity-ns", "test-http"]
        let strays = Self.threadNamespaces().filter { $0.namespace != home && !allowed.contains($0.name) }
        #expect(strays.isEmpty, "threads outside the process's namespace: \(strays)")
        withExtendedLifetime(tokens) {}
    }

    @Test("A forged rtnetlink message from root inside the namespace is dropped, not believed")
    func forgedMessage() async throws {
        let (ns, _, log) = try TestNamespace.watchingInternet(ipv4Only: true)
        try await log.wait(forCount: 1, "the initial delivery")
        let monitor = try #require(MonitorRegistry.running(for: ns.environment))

        // "veth0 is down", multicast to RTNLGRP_LINK by a process, not the kernel.
        let forge = """
            import socket, struct, sys
            idx = socket.if_nametoindex(sys.argv[1])
            s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
            s.bind((0, 0))
            name = sys.argv[1].encode() + b'\\0'
            attr = struct.pack('=HH', 4 + len(name), 3) + name
            attr += b'\\0' * ((4 - len(attr) % 4) % 4)
            body = struct.pack('=BxHiII', 0, 1, idx, 0, 0xffffffff) + attr
            for _ in range(10):
                s.sendto(struct.pack('=IHHII', 16 + len(body), 16, 0, 0, 0) + body, (0, 1))
            """
        try ns.run(["python3", "-c", forge, "veth0"])
        try await eventually("the forged datagrams to be seen") { monitor.statistics.foreignDatagrams >= 10 }
        // A marker change: had the forgery been believed, a delivery would come first.
        try ns.ip("route del default")
        try await log.wait(forLast: .notReachable, "the marker")
        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable])
        #expect(log.entries.last?.interface == nil)
        #expect(try ns.ip("link show veth0").contains("state UP"), "the forgery changed nothing in the kernel either")
    }

    @Test("An address pair of zoned link-local addresses is reachable on its link")
    func zonedLinkLocalPair() throws {
        let ns = try TestNamespace()
        try ns.addVeth("veth0", peer: "veth1")
        try ns.ip("-6 addr add fe80::1/64 dev veth0 nodad")
        let index = try #require(
            try ns.ip("-o link show veth0").split(separator: ":").first.map { String($0) }.flatMap { Int($0) })
        let pair = try Reachability(
            localAddress: "fe80::1%\(index)", remoteAddress: "fe80::2%\(index)", environment: ns.environment)
        #expect(pair.flags == [.reachable, .isDirect])
        #expect(pair.interface?.name == "veth0")
        // The same address zoned to another interface is not ours.
        let wrongZone = try Reachability(
            localAddress: "fe80::1%1", remoteAddress: "fe80::2%\(index)", environment: ns.environment)
        #expect(wrongZone.flags == [])
    }

    @Test("waitUntilReachable posts no notification for its internal watcher")
    func waitPostsNothing() async throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute()
        let reachability = try Reachability(environment: ns.environment)
        let foreign = LockedValue(0)
        let token = NotificationCenter.default.addObserver(forName: .reachabilityChanged, object: nil, queue: nil) {
            note in
            if let object = note.object as? Reachability, object.environment == ns.environment,
                object !== reachability
            {
                foreign.withLock { $0 += 1 }
            }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        #expect(await reachability.waitUntilReachable(timeout: .seconds(10)))
        try ns.ip("link set veth1 down")
        #expect(await reachability.waitUntilReachable(timeout: .milliseconds(300)) == false)
        #expect(foreign.withLock { $0 } == 0)
    }

    /// Holds a weak reference for a test.
    final class Weak<T: AnyObject>: @unchecked Sendable {
        // @unchecked: written once in init; weak loads are thread-safe.
        weak var value: T?
        init(_ value: T) { self.value = value }
    }

    /// An instance owned only by its own observer and closure (a cycle), running.
    static func makeCycle(_ environment: NetworkEnvironment) throws -> (ReachabilityObservation, Weak<Reachability>) {
        let reachability = try Reachability(environment: environment)
        let token = reachability.addObserver { _ in _ = reachability.flags }
        reachability.whenReachable = { _ in _ = reachability.flags }
        try reachability.start()
        return (token, Weak(reachability))
    }

    @Test("Removing the observer that owns the instance releases it, running deinit, without a crash")
    func releaseOutsideTheLock() async throws {
        let ns = try TestNamespace()
        try ns.ipv4WithDefaultRoute()
        let (token, instance) = try Self.makeCycle(ns.environment)
        try await eventually("the notifier to run") { instance.value?.isRunning == true }
        // Let the queued deliveries finish, so that nothing but the observer holds the instance.
        Reachability.defaultNotificationQueue.sync {}
        instance.value?.whenReachable = nil  // The observer still owns it.
        Reachability.defaultNotificationQueue.sync {}
        #expect(instance.value != nil)
        token.remove()  // Releases the last owner: deinit runs here, and must not re-enter the lock.
        try await eventually("the instance to be released") { instance.value == nil }
        #expect(MonitorRegistry.running(for: ns.environment) == nil, "deinit stopped its notifier")
    }
}
