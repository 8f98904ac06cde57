import Foundation
import Reachability
import ReachabilityCommands
@_spi(Testing) import ReachabilitySystem
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// The one system-call edge (`SystemCalls`, DESIGN §4.1) and its fault plans
/// (`SystemCallFaults`, DESIGN §10), without root or a kernel of our own: the plan's
/// rules, the error policy (EINTR retried), and the file readers, the resolver
/// check and getaddrinfo failing as a test says.
@Suite struct SystemCallFaultTests {
    /// A plan, and system calls that ask it.
    static func plan() -> (SystemCallFaults, SystemCalls) {
        let faults = SystemCallFaults()
        return (faults, SystemCalls(faults: faults))
    }

    /// A scratch directory with `files` (relative path → contents); removed by the caller.
    static func directory(_ files: [String: String]) throws -> String {
        try LeaseFilesTests.root(files)
    }

    // MARK: Batched reads

    /// A netlink socket reads up to `datagramsPerRead` queued datagrams per system
    /// call (recvmmsg) and hands them out one by one, in order: ten lookups answered
    /// by eleven datagrams (the routing lock's barrier ahead of them is answered too)
    /// take three reads of four, not eleven of one, with the same answers.
    @Test("Netlink datagrams are read several per system call, in order, the same answers as one by one")
    func batchedReads() throws {
        let requests = try (1...10).map { LookupRequest(destination: try IPAddress("127.0.0.\($0)")) }
        func answers(perRead: Int) throws -> ([LookupResult], Int) {
            let (faults, system) = Self.plan()
            let socket = try NetlinkSocket(
                receiveBuffer: 1 << 20, role: .requests, datagramsPerRead: perRead, systemCalls: system)
            let results = try socket.lookup(requests)
            return (results, faults.attempts(.recvmmsg))
        }
        let (batched, batchedReads) = try answers(perRead: 4)
        let (single, singleReads) = try answers(perRead: 1)
        #expect(batched == single)
        #expect(batched.count == 10)
        for result in batched {
            guard case .route(let route) = result else {
                Issue.record("127.0.0.x answered \(result)")
                continue
            }
            #expect(route.type == RTN.local)
        }
        #expect(batchedReads == 3, "4 + 4 + 3, and the short read says the queue is empty")
        #expect(singleReads == 11)

        // A burst's first read takes fewer (the event socket's way), then four at a
        // time; the next request's answers are a burst of their own.
        let (faults, system) = Self.plan()
        let socket = try NetlinkSocket(
            receiveBuffer: 1 << 20, role: .requests, datagramsPerRead: 4, firstRead: 1, systemCalls: system)
        #expect(try socket.lookup(requests) == single)
        #expect(faults.attempts(.recvmmsg) == 4, "1 + 4 + 4 + 2")
        #expect(try socket.lookup(Array(requests.prefix(5))) == Array(single.prefix(5)))
        #expect(faults.attempts(.recvmmsg) == 4 + 3, "1 + 4 + 1")
        #expect(try socket.lookup(Array(requests.prefix(1))) == Array(single.prefix(1)))
        #expect(faults.attempts(.recvmmsg) == 4 + 3 + 2, "1 + 1")
    }

    @Test("A dump is bounded as a whole: past its datagrams or its messages it throws (a dump that never ends)")
    func dumpBounded() throws {
        let socket = try NetlinkSocket(receiveBuffer: 1 << 20, role: .requests, systemCalls: .live)
        let links = try socket.dump(NLMsgType.getLink)
        #expect(!links.isEmpty, "the process's namespace has a loopback at least")
        #expect {
            try socket.dump(NLMsgType.getLink, datagramLimit: 0)
        } throws: { error in
            (error as? ReachabilityError)?.message.contains("did not end within 0 datagrams") == true
        }
        let fresh = try NetlinkSocket(receiveBuffer: 1 << 20, role: .requests, systemCalls: .live)
        #expect {
            try fresh.dump(NLMsgType.getLink, messageLimit: 0)
        } throws: { error in
            (error as? ReachabilityError)?.message.contains("and 0 messages") == true
        }
        #expect(NetlinkSocket.dumpDatagramLimit == 65_536 && NetlinkSocket.dumpMessageLimit == 1_048_576)
    }

    // MARK: The plan

    @Test("A rule fails its call once, N times or always, after K successes, only on a matching subject")
    func rules() throws {
        let root = try Self.directory(["a.txt": "alpha", "b.txt": "beta"])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (faults, system) = Self.plan()
        func opens(_ name: String) -> Int32? {
            switch system.open("\(root)/\(name)", flags: O_RDONLY) {
            case .success(let fd):
                system.close(fd)
                return nil
            case .failure(let failure):
                #expect(failure.call == "open(\(root)/\(name))", "the error names the call and its path")
                return failure.errno
            }
        }

        let once = faults.inject(.open, errno: ENOENT, matching: .path("a.txt"))
        #expect(opens("b.txt") == nil, "another subject")
        #expect(opens("a.txt") == ENOENT)
        #expect(opens("a.txt") == nil, "once")
        #expect(faults.fired(once) == 1)

        let twice = faults.inject(.open, errno: EMFILE, count: .times(2), after: 1)
        #expect(opens("b.txt") == nil, "the first success")
        #expect(opens("a.txt") == EMFILE)
        #expect(opens("b.txt") == EMFILE)
        #expect(opens("a.txt") == nil)
        #expect(faults.fired(twice) == 2)

        let always = faults.inject(.open, errno: ENFILE, count: .always)
        for _ in 0..<5 { #expect(opens("a.txt") == ENFILE) }
        faults.remove(always)
        #expect(opens("a.txt") == nil, "removed")
        #expect(faults.fired(always) == 5, "a removed rule keeps its count")
        #expect(faults.attempts(.open) == 13)
        #expect(faults.attempts(.stat) == 0)

        // Two rules on one call: the first (in the order added) decides.
        faults.inject(.open, errno: EACCES)
        faults.inject(.open, errno: EPERM)
        #expect(opens("a.txt") == EACCES)
        #expect(opens("a.txt") == EPERM)
        faults.removeAll()
        #expect(opens("a.txt") == nil)
    }

    @Test("An injected EINTR is retried as a real one is: the read still gets the file; other errors come back")
    func interruptsAreRetried() throws {
        let root = try Self.directory(["file": "contents"])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (faults, system) = Self.plan()
        let interrupted = faults.inject(.read, errno: EINTR, count: .times(3), matching: .path("file"))
        #expect(readSmallFile("\(root)/file", limit: 100, systemCalls: system) == "contents")
        #expect(faults.fired(interrupted) == 3)
        #expect(faults.attempts(.read) >= 4, "three interrupted reads, then the real one")

        // Calls the library does not retry report EINTR like any error.
        faults.inject(.open, errno: EINTR)
        #expect(readSmallFile("\(root)/file", limit: 100, systemCalls: system) == nil)
        #expect(readSmallFile("\(root)/file", limit: 100, systemCalls: system) == "contents")

        faults.inject(.fstat, errno: EIO)
        #expect(readSmallFile("\(root)/file", limit: 100, systemCalls: system) == nil, "fstat failed: not read")
        faults.inject(.read, errno: EIO, matching: .path("file"))
        #expect(readSmallFile("\(root)/file", limit: 100, systemCalls: system) == nil, "read failed: nothing")
        #expect(readSmallFile("\(root)/file", limit: 100, systemCalls: system) == "contents")
    }

    @Test("Environments with and without a plan (or with another) are unequal and never share a monitor's key")
    func planIsPartOfTheKey() throws {
        let plain = NetworkEnvironment()
        var faulty = NetworkEnvironment()
        faulty.systemCalls = SystemCalls(faults: SystemCallFaults())
        var other = NetworkEnvironment()
        other.systemCalls = SystemCalls(faults: SystemCallFaults())
        var same = faulty
        same.logger = nil

        #expect(plain.systemCalls == .live)
        #expect(plain != faulty && faulty != other && faulty == same)
        #expect(Set([plain, faulty, other, same]).count == 3)
        let keys = try [plain, faulty, other, same].map { try MonitorRegistry.Key($0) }
        #expect(keys[0] != keys[1] && keys[1] != keys[2] && keys[1] == keys[3])
        // The resolver pool keeps requests with different plans apart too.
        typealias Key = ResolverPool.Key
        #expect(
            Key(namespace: nil, name: "a.example")
                != Key(namespace: nil, name: "a.example", systemCalls: faulty.systemCalls))
    }

    // MARK: The link and lease readers

    @Test("sysfs: a failed open, access or readlink leaves the link classified without that fact, until it reads again")
    func sysfsReaderFaults() throws {
        let sysfs = try FakeSysfs()
        defer { sysfs.remove() }
        try sysfs.interface("usb0", devtype: "wwan")
        try sysfs.interface("wlan0", wireless: .phy80211)
        try sysfs.interface("eth1")
        try FileManager.default.createDirectory(
            at: sysfs.root.appendingPathComponent("class/net/eth1/device"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: sysfs.root.appendingPathComponent("class/net/eth1/device/driver").path,
            withDestinationPath: "../../../bus/usb/drivers/rndis_host")
        let (faults, system) = Self.plan()
        let reader = SysfsReader(root: sysfs.root.path, systemCalls: system)
        func classify(_ name: String) -> InterfaceClassification {
            InterfaceClassifier.classify(ClassifierTests.link(name), sysfs: reader)
        }

        // DEVTYPE=wwan: cellular, unless uevent can't be opened.
        let uevent = faults.inject(.open, errno: EMFILE, matching: .path("usb0/uevent"))
        #expect(classify("usb0") == InterfaceClassification(.wiredEthernet))
        #expect(faults.fired(uevent) == 1)
        #expect(classify("usb0") == InterfaceClassification(.cellular))

        // The phy80211 marker: Wi-Fi, unless access fails.
        let marker = faults.inject(.access, errno: ENOENT, count: .times(2), matching: .path("wlan0/"))
        #expect(classify("wlan0") == InterfaceClassification(.wiredEthernet))
        #expect(faults.fired(marker) == 2, "both markers asked")
        #expect(classify("wlan0") == InterfaceClassification(.wifi))

        // The rndis_host driver: tethered, unless readlink fails.
        faults.inject(.readlink, errno: ENOENT, matching: .path("eth1/device/driver"))
        #expect(!classify("eth1").isTethered)
        #expect(classify("eth1").isTethered)
    }

    @Test("Leases: a failed open, opendir or stat reads as no lease (not metered), and the next read sees it")
    func leaseReaderFaults() throws {
        let metered = "414e44524f49445f4d455445524544"  // "ANDROID_METERED"
        let root = try Self.directory([
            "run/systemd/netif/leases/3": "ADDRESS=192.0.2.16\nVENDOR_SPECIFIC=\(metered)\n",
            "var/lib/dhcp/dhclient.eth4.leases": LeaseFilesTests.block("eth4", vendor: "\"ANDROID_METERED\""),
        ])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (faults, system) = Self.plan()
        let leases = LeaseFiles(root: root, systemCalls: system)
        let links: [(name: String, index: Int32)] = [("eth3", 3), ("eth4", 4)]
        #expect(leases.metered(links) == [3, 4])

        // networkd's file for index 3 can't be opened (EMFILE), nor read (ENOENT on open).
        let networkd = faults.inject(.open, errno: EMFILE, matching: .path("netif/leases/3"))
        #expect(leases.metered(links) == [4])
        #expect(faults.fired(networkd) == 1)
        #expect(leases.metered(links) == [3, 4])

        // dhclient's directory can't be listed, then its file can't be stat'ed or opened.
        faults.inject(.opendir, errno: EMFILE, matching: .path("var/lib/dhcp"))
        #expect(leases.metered(links) == [3])
        faults.inject(.stat, errno: ENOENT, matching: .path("dhclient.eth4.leases"))
        #expect(leases.metered(links) == [3])
        faults.inject(.open, errno: ENOENT, matching: .path("dhclient.eth4.leases"))
        #expect(leases.metered(links) == [3])
        #expect(leases.metered(links) == [3, 4], "the faults are spent: read again")
    }

    // MARK: Namespace files

    @Test("No descriptor to open the namespace file at start: .systemCall with the errno, never .namespace")
    func namespaceOpenWithoutDescriptors() throws {
        let (faults, system) = Self.plan()
        var environment = NetworkEnvironment(networkNamespacePath: "/proc/self/ns/net")
        environment.systemCalls = system
        for errno in [EMFILE, ENFILE, ENOMEM] {
            let rule = faults.inject(.open, errno: errno, count: .always, matching: .path("/proc/self/ns/net"))
            for (factory, make) in BadInputTests.everyFactory(environment) {
                let error = #expect(throws: ReachabilityError.self, "\(factory)") { try make() }
                #expect(error?.code == .systemCall, "\(factory): \(error?.description ?? "")")
                #expect(error?.errno == errno, "\(factory)")
                #expect(error?.message.contains("/proc/self/ns/net") == true, "\(factory)")
            }
            #expect(faults.fired(rule) > 0)
            faults.remove(rule)
        }
        // At the monitor's start: made while there were descriptors, started when none is left.
        let reachability = try Reachability(environment: environment)
        let rule = faults.inject(.open, errno: EMFILE, count: .always, matching: .path("/proc/self/ns/net"))
        let error = #expect(throws: ReachabilityError.self) { try reachability.startNotifier() }
        #expect(error?.code == .systemCall && error?.errno == EMFILE, "\(error?.description ?? "")")
        #expect(error?.description.contains("Too many open files") == true)
        #expect(faults.fired(rule) == 1)
        faults.remove(rule)
        // A namespace that is really missing is still .namespace.
        let missing = faults.inject(.open, errno: ENOENT, matching: .path("/proc/self/ns/net"))
        let gone = #expect(throws: ReachabilityError.self) { try reachability.startNotifier() }
        #expect(gone?.code == .namespace && gone?.errno == ENOENT, "\(gone?.description ?? "")")
        #expect(faults.fired(missing) == 1)
    }

    // MARK: The resolver check and getaddrinfo

    @Test(
        "sd_notify's socket: no descriptor, a refused connect or send is ignored (false), one attempt each, never a wait"
    )
    func systemdNotifyFaults() throws {
        let path = NSTemporaryDirectory() + "rtest-notify-\(getpid())"
        let receiver = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(receiver) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        unlink(path)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(receiver, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(bound == 0)
        defer { unlink(path) }
        let (faults, system) = Self.plan()
        #expect(SystemdNotify.send("READY=1", to: path, systemCalls: system), "the plan without faults sends")
        for (call, errno) in [
            (SystemCall.socket, EMFILE), (.socket, ENFILE), (.connect, ECONNREFUSED), (.send, EAGAIN),
        ] {
            let fault = faults.inject(call, errno: errno, count: .always)
            #expect(!SystemdNotify.send("READY=1", to: path, systemCalls: system), "\(call) \(errno)")
            #expect(faults.fired(fault) == 1, "\(call) \(errno): one attempt")
            faults.remove(fault)
        }
    }

    @Test("The resolver check: no socket for want of descriptors is a .systemCall error at once, not a wait")
    func resolverCheckSocketExhausted() throws {
        let root = try Self.directory(["resolv.conf": "nameserver 192.0.2.53\nnameserver 198.51.100.53\n"])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (faults, system) = Self.plan()
        var environment = NetworkEnvironment()
        environment.systemCalls = system
        let exhausted = faults.inject(.socket, errno: EMFILE, count: .always)
        #expect {
            try ResolverCheck.check(environment: environment, resolvConf: root + "/resolv.conf", timeout: .seconds(30))
        } throws: { error in
            guard let error = error as? ReachabilityError else { return false }
            return error.code == .systemCall && error.errno == EMFILE
                && error.message.contains("socket(nameserver 192.0.2.53)")
        }
        #expect(faults.fired(exhausted) == 1, "the first server's socket: the second was not tried")
        #expect(faults.attempts(.connect) == 0 && faults.attempts(.poll) == 0, "nothing waited on")

        // Any other socket failure is that server's: counted as not answering.
        faults.remove(exhausted)
        faults.inject(.socket, errno: EAFNOSUPPORT, count: .always)
        let outcome = try ResolverCheck.check(environment: environment, resolvConf: root + "/resolv.conf")
        guard case .noAnswer(let reasons) = outcome else {
            Issue.record("expected no answer, got \(outcome)")
            return
        }
        #expect(reasons.count == 2)
        #expect(reasons.first?.hasPrefix("192.0.2.53: socket: ") == true, "\(reasons)")
    }

    @Test("getaddrinfo through a plan: EAI_SYSTEM with EMFILE is a .systemCall error, never an answer about the name")
    func getaddrinfoFaults() throws {
        let (faults, system) = Self.plan()
        faults.inject(.getaddrinfo, errno: EMFILE, matching: .host("localhost"))
        #expect {
            try ResolverPool.getaddrinfo("localhost", systemCalls: system)
        } throws: { error in
            (error as? ReachabilityError)?.code == .systemCall && (error as? ReachabilityError)?.errno == EMFILE
        }
        let answer = try ResolverPool.getaddrinfo("localhost", systemCalls: system)
        #expect(answer.addresses.contains(try IPAddress("127.0.0.1")), "\(answer)")
    }

    @Test("The shared pool resolves each request through its own environment's calls: a plan reaches only its own")
    func poolRoutesPerRequest() async throws {
        let (faults, faulty) = Self.plan()
        faults.inject(.getaddrinfo, errno: EMFILE, count: .always, matching: .host("localhost"))
        let pool = ResolverPool()
        final class Requester: Sendable {}
        let (first, second) = (Requester(), Requester())
        func resolve(_ systemCalls: SystemCalls, _ requester: Requester) async -> ResolverPool.Outcome {
            await withCheckedContinuation { continuation in
                pool.resolve(
                    "localhost", in: nil, systemCalls: systemCalls, for: .init(id: ObjectIdentifier(requester))
                ) { continuation.resume(returning: $0) }
            }
        }
        // Asked at once, for the same name: one resolution each, not one shared.
        async let failing = resolve(faulty, first)
        async let answering = resolve(.live, second)
        let (failed, answered) = await (failing, answering)
        guard case .failure(let error) = failed else {
            Issue.record("the faulty environment's request succeeded: \(failed)")
            return
        }
        #expect(error.code == .systemCall && error.errno == EMFILE)
        guard case .success(let resolution) = answered else {
            Issue.record("the live request failed: \(answered)")
            return
        }
        #expect(resolution.addresses.contains(try IPAddress("127.0.0.1")))
        #expect(faults.attempts(.getaddrinfo) == 1, "only the faulty request asked the plan")
        withExtendedLifetime((first, second)) {}
    }
}
