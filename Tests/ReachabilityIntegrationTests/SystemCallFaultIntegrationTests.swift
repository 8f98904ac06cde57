import Foundation
import Reachability
import ReachabilityCommands
@_spi(Testing) import ReachabilitySystem
import TestSupport
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// System calls failing where the kernel would rarely make them fail (DESIGN §10):
/// a fault plan (`SystemCallFaults`) on the environment makes the monitor's
/// netlink sockets, its file watches, the sysfs and lease readers, the resolver
/// check and getaddrinfo fail, in a namespace of the test's own, and the library
/// must recover or report it as documented.
@Suite("System calls failing on purpose", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct SystemCallFaultIntegrationTests {
    /// A fault plan and `ns`'s environment that asks it.
    static func environment(_ ns: TestNamespace, sysfsRoot: String? = nil, leaseRoot: String? = nil) -> (
        SystemCallFaults, NetworkEnvironment
    ) {
        let faults = SystemCallFaults()
        var environment = NetworkEnvironment(networkNamespacePath: ns.path, sysfsRoot: sysfsRoot, leaseRoot: leaseRoot)
        environment.systemCalls = SystemCalls(faults: faults)
        return (faults, environment)
    }

    /// A namespace with the common IPv4 setup, the Internet target watched in it
    /// through a fault plan, and its first state in.
    static func watched() async throws -> (TestNamespace, SystemCallFaults, NetworkEnvironment, DeliveryLog) {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let (faults, environment) = Self.environment(ns)
        let log = try DeliveryLog.started(try Reachability(environment: environment))
        try await log.wait(forLast: .reachableViaWiFi, "the first state")
        return (ns, faults, environment, log)
    }

    // MARK: The netlink sockets

    @Test(
        "EMFILE on the netlink socket call: startNotifier throws .systemCall naming socket(2), then starts once it clears"
    )
    func socketExhausted() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let (faults, environment) = Self.environment(ns)
        let exhausted = faults.inject(.socket, errno: EMFILE, count: .always, matching: .netlink(.events))
        let reachability = try Reachability(environment: environment)
        #expect {
            try reachability.start()
        } throws: { error in
            guard let error = error as? ReachabilityError else { return false }
            return error.code == .systemCall && error.errno == EMFILE
                && error.message.hasPrefix("socket(NETLINK_ROUTE events)")
        }
        #expect(faults.fired(exhausted) == 1 && faults.attempts(.socket) == 1, "the event socket, the first made")
        #expect(!reachability.isRunning)
        #expect(MonitorRegistry.running(for: environment) == nil, "no monitor left registered")

        faults.remove(exhausted)
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forLast: .reachableViaWiFi, "the first state once sockets open")
    }

    @Test(
        "EINTR on the reader's poll and on poll and recvmsg of both sockets, an answer not queued yet: retried, and every state arrives"
    )
    func interruptsAreRetried() async throws {
        let (ns, faults, environment, log) = try await Self.watched()
        let rules = [
            faults.inject(.poll, errno: EINTR, count: .times(2), matching: .monitor),
            faults.inject(.recvmmsg, errno: EINTR, count: .times(2), matching: .netlink(.events)),
            faults.inject(.recvmmsg, errno: EINTR, count: .times(2), matching: .netlink(.requests)),
            // The answers are queued when the lookups' sendto returns, so the request
            // socket is read before it is polled: two reads that find nothing make
            // the poll (and its interrupts) happen.
            faults.inject(.recvmmsg, errno: EAGAIN, count: .times(2), matching: .netlink(.requests)),
            faults.inject(.poll, errno: EINTR, count: .times(2), matching: .netlink(.requests)),
        ]
        try ns.ip("route del default")
        try await log.wait(forLast: .notReachable, "unreachable without the default route")
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await log.wait(forLast: .reachableViaWiFi, "reachable again")
        // The reader polled again after the first change, before it could see the second.
        for rule in rules { #expect(faults.fired(rule) == 2) }
        let statistics = try #require(MonitorRegistry.running(for: environment)?.statistics)
        #expect(
            statistics.overruns == 0 && statistics.failedPasses == 0, "an interrupt is no lost event: \(statistics)")
        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable, .reachableViaWiFi])
    }

    @Test("ENOBUFS on the event socket's recvmsg: the monitor counts an overrun, resyncs, and its state stays right")
    func overrunResyncs() async throws {
        let (ns, faults, environment, log) = try await Self.watched()
        let monitor = try #require(MonitorRegistry.running(for: environment))
        let before = monitor.statistics
        let overrun = faults.inject(.recvmmsg, errno: ENOBUFS, matching: .netlink(.events))
        try ns.ip("route del default")
        try await log.wait(forLast: .notReachable, "unreachable without the default route")
        try await eventually("the resync") { monitor.statistics.resyncs > before.resyncs }
        #expect(faults.fired(overrun) == 1)
        #expect(monitor.statistics.overruns == before.overruns + 1)
        #expect(monitor.statistics.failedResyncs == before.failedResyncs)

        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await log.wait(forLast: .reachableViaWiFi, "reachable again")
        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable, .reachableViaWiFi])
    }

    @Test(
        "a dump's reply that never comes (every read finds nothing, poll says readable): start throws timedOut at 5 s")
    func dumpReplyNeverComes() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let (faults, environment) = Self.environment(ns)
        // The kernel queues the dump's answer at once, so poll(2) says readable;
        // every read of the requests socket finds nothing: no reply, ever.
        let nothing = faults.inject(.recvmmsg, errno: EAGAIN, count: .always, matching: .netlink(.requests))
        let started = ContinuousClock.now
        #expect {
            try Reachability(environment: environment).start()
        } throws: { error in
            (error as? ReachabilityError)?.code == .timedOut
        }
        let elapsed = ContinuousClock.now - started
        // The bound is NetlinkSocket.replyTimeoutMilliseconds (5 s) for the whole wait:
        // before, each wake-up that found nothing started it anew, for ever.
        #expect(elapsed >= .seconds(4) && elapsed < .seconds(60), "\(elapsed)")
        faults.remove(nothing)
        let log = try DeliveryLog.started(try Reachability(environment: environment))
        try await log.wait(forLast: .reachableViaWiFi, "started once the reads find the reply")
    }

    @Test(
        "A failing lookup send: the pass fails and is retried (failedPasses), the state arrives once the fault clears")
    func failingLookupSend() async throws {
        let (ns, faults, environment, log) = try await Self.watched()
        // The same namespace without the plan: a monitor of its own, undisturbed.
        let plain = try DeliveryLog.started(try Reachability(environment: ns.environment))
        try await plain.wait(forLast: .reachableViaWiFi, "the plain environment's first state")
        let monitor = try #require(MonitorRegistry.running(for: environment))
        #expect(MonitorRegistry.running(for: ns.environment) !== monitor, "a plan never shares a monitor")

        let failing = faults.inject(.sendto, errno: ENOBUFS, count: .always, matching: .netlink(.requests))
        try ns.ip("route del default")
        try await plain.wait(forLast: .notReachable, "the plain environment sees the change")
        try await eventually("a failed pass and its retry") { monitor.statistics.failedPasses >= 2 }
        #expect(log.entries.map(\.status) == [.reachableViaWiFi], "no state from a pass that could not look up")

        faults.remove(failing)
        try await log.wait(forLast: .notReachable, "the retried pass once the fault cleared")
        #expect(faults.fired(failing) >= 2)
        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable])
    }

    // MARK: The file watches

    @Test(
        "inotify can't be set up: the monitor starts and reports states; a lease change is not followed",
        arguments: [
            Input("inotify_init1 EMFILE", (SystemCallFaults.Call.inotifyInit1, EMFILE)),
            Input("inotify_add_watch ENOSPC", (SystemCallFaults.Call.inotifyAddWatch, ENOSPC)),
        ])
    func watchesUnavailable(_ fault: Input<(SystemCallFaults.Call, Int32)>) async throws {
        let root = try Self.leaseRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let (faults, environment) = Self.environment(ns, leaseRoot: root)
        let rule = faults.inject(fault.value.0, errno: fault.value.1, count: .always)
        let log = try await PathLog.started(try PathMonitor(environment: environment), queue: "syscalls.nowatch")
        #expect(faults.fired(rule) >= 1)
        #expect(log.paths.last?.status == .satisfied)
        #expect(log.paths.last?.isExpensive == false)

        // Metered by its lease now, but nothing watches the lease directory. A new
        // link is the sync point: a working watch would have been read by the pass
        // that reports it.
        try Self.writeMeteredLease(root: root, index: WirelessIntegrationTests.index(of: "veth0", in: ns))
        try ns.addVeth("veth2", peer: "veth3", address: "198.51.100.1/24")
        try await log.wait(for: "the path with the new link") {
            $0.last?.availableInterfaces.contains { $0.name == "veth2" } == true
        }
        #expect(log.paths.last?.isExpensive == false, "the lease change was not followed")
        try ns.ip("link set veth0 down")
        try await log.wait(for: "the path without veth0") {
            $0.last?.availableInterfaces.contains { $0.name == "veth0" } == false
        }
    }

    @Test("EINTR on reading the inotify descriptor: retried, and a lease change still makes the path expensive")
    func watchReadInterrupted() async throws {
        let root = try Self.leaseRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let (faults, environment) = Self.environment(ns, leaseRoot: root)
        let log = try await PathLog.started(try PathMonitor(environment: environment), queue: "syscalls.watch")
        #expect(log.paths.last?.isExpensive == false)

        let interrupted = faults.inject(.read, errno: EINTR, count: .times(2), matching: .inotify)
        try Self.writeMeteredLease(root: root, index: WirelessIntegrationTests.index(of: "veth0", in: ns))
        try await log.wait(for: "the metered path") { $0.last?.isExpensive == true }
        #expect(faults.fired(interrupted) == 2)
    }

    @Test("Out of descriptors, the namespace check can't tell: the namespace is not taken for deleted")
    func namespaceCheckWithoutDescriptors() throws {
        let ns = try TestNamespace(named: "rtest-nsfd")
        let faults = SystemCallFaults()
        let namespace = try NetworkNamespace.open(ns.path, systemCalls: SystemCalls(faults: faults))
        #expect(namespace.isStillAtPath)
        // Before the fix any failed open read as a deletion, and the monitor stopped
        // with "was deleted" (the look comes with a change in /run/netns).
        for error in [EMFILE, ENFILE, ENOMEM] {
            let rule = faults.inject(.open, errno: error, count: .always, matching: .path(ns.path))
            #expect(namespace.isStillAtPath, "errno \(error)")
            faults.remove(rule)
        }
        let missing = faults.inject(.open, errno: ENOENT, count: .always, matching: .path(ns.path))
        #expect(!namespace.isStillAtPath, "ENOENT: deleted")
        faults.remove(missing)
        try Command.check(["ip", "netns", "del", try #require(ns.name)])
        #expect(!namespace.isStillAtPath, "really deleted")
    }

    // MARK: The link and lease readers in the monitor

    @Test("readlink of the device driver failing: the tethered link reads as free once, then as tethered")
    func sysfsDriverUnreadable() throws {
        let sysfs = try fakeTetheredSysfs()
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let (faults, environment) = Self.environment(ns, sysfsRoot: sysfs)
        let unreadable = faults.inject(.readlink, errno: ENOENT, matching: .path("veth0/device/driver"))
        let monitor = try PathMonitor(environment: environment)
        let without = monitor.currentPath
        #expect(faults.fired(unreadable) == 1)
        #expect(without.status == .satisfied && !without.isExpensive, "no driver fact: a free wired link")
        #expect(monitor.currentPath.isExpensive, "read again: Android USB tethering")
    }

    // MARK: The resolver check and getaddrinfo

    @Test("The resolver check: a failed connect counts the server as not answering; EINTR on recv is retried")
    func resolverCheck() throws {
        let ns = try TestNamespace()
        let server = try ScriptedDNSServer(in: ns, resolvOptions: nil)
        let resolvConf = NSTemporaryDirectory() + "rtest-resolv-\(UUID().uuidString)"
        try "nameserver 127.0.0.1\n".write(toFile: resolvConf, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: resolvConf) }
        let (faults, environment) = Self.environment(ns)

        let refused = faults.inject(.connect, errno: ENOENT, matching: .nameserver("127.0.0.1"))
        let failed = try ResolverCheck.check(environment: environment, resolvConf: resolvConf, timeout: .seconds(5))
        #expect(failed == .noAnswer(["127.0.0.1: connect: No such file or directory"]))
        #expect(faults.fired(refused) == 1)
        #expect(try server.queries("") == 0, "nothing was sent")

        let interrupted = faults.inject(.recv, errno: EINTR, count: .times(2), matching: .nameserver("127.0.0.1"))
        let answered = try ResolverCheck.check(environment: environment, resolvConf: resolvConf, timeout: .seconds(5))
        #expect(answered == .answered(server: "127.0.0.1", rcode: 3))
        #expect(faults.fired(interrupted) == 2)
    }

    @Test(
        "getaddrinfo failing (EAI_SYSTEM, EMFILE): whenError gets .systemCall, the state is kept, then resolves again")
    func resolverFailure() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let (faults, environment) = Self.environment(ns)
        // The first resolution answers; every later one fails until the rule goes.
        let failing = faults.inject(.getaddrinfo, errno: EMFILE, count: .always, after: 1, matching: .host("localhost"))
        let reachability = try Reachability(hostname: "localhost", environment: environment)
        let errors = LockedValue<[ReachabilityError]>([])
        reachability.whenError = { _, error in errors.withLock { $0.append(error) } }
        let log = try DeliveryLog.started(reachability)
        try await log.wait(forCount: 1, "the first state")
        let first = try #require(log.entries.first)
        #expect(first.status == .reachableViaWiFi && first.flags.contains(.isLocalAddress), "\(first)")

        // An address change asks for a fresh answer; the resolver fails it.
        try ns.ip("addr add 192.0.2.7/24 dev veth0")
        try await eventually("the resolver failure reported") { !errors.withLock { $0 }.isEmpty }
        let error = try #require(errors.withLock { $0 }.first)
        #expect(error.code == .systemCall && error.errno == EMFILE, "\(error)")
        #expect(reachability.lastError?.errno == EMFILE)
        #expect(log.entries.map(\.status) == [.reachableViaWiFi], "the state is kept")
        #expect(reachability.currentReachabilityStatus == .reachableViaWiFi)

        // Cleared: the retry (1 s on) resolves again, and nothing changes.
        faults.remove(failing)
        let fired = faults.fired(failing)
        try await eventually("a resolution after the fault cleared") {
            faults.attempts(.getaddrinfo) > fired + 1
        }
        #expect(reachability.currentReachabilityStatus == .reachableViaWiFi)
        #expect(log.entries.map(\.status) == [.reachableViaWiFi])
    }

    // MARK: Helpers

    /// A lease root with networkd's (empty) lease directory, which the monitor watches.
    static func leaseRoot() throws -> String {
        let root = NSTemporaryDirectory() + "rtest-syscall-leases-\(UUID().uuidString)"
        try FileManager.default.createDirectory(
            atPath: root + "/" + LeaseFiles.networkdDirectory, withIntermediateDirectories: true)
        return root
    }

    /// networkd's lease for link `index`, saying ANDROID_METERED.
    static func writeMeteredLease(root: String, index: Int32) throws {
        try "ADDRESS=192.0.2.1\nVENDOR_SPECIFIC=414e44524f49445f4d455445524544\n".write(
            toFile: "\(root)/\(LeaseFiles.networkdDirectory)/\(index)", atomically: true, encoding: .utf8)
    }
}
