import Foundation
import Reachability
@_spi(Testing) import ReachabilitySystem
import Testing

@testable import ReachabilityBase
@_spi(Testing) @testable import ReachabilityCore

/// A directory of named network namespaces of one test's own, under /run: other
/// tests' namespaces (in /run/netns) never show in it. Entries are made as `ip
/// netns add` makes them: an empty file, then a namespace bind-mounted over it.
/// The mounts stay in the test process's mount namespace; whatever is left is
/// unmounted and removed on deinit.
final class NamespaceDirectory: @unchecked Sendable {
    // @unchecked: `path` is set once; the set of entries is behind a lock.
    let path: String
    private let entries = LockedValue<Set<String>>([])

    init(_ prefix: String = "rtest-nsdir") throws {
        var template = Array("/run/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard let made else {
            throw CommandFailed(command: "mkdtemp", status: errno, stderr: String(cString: strerror(errno)))
        }
        path = String(cString: made)
    }

    deinit {
        let left = entries.withLock { $0 }
        for entry in left { _ = try? Command.run(["umount", "-l", entry]) }
        _ = try? Command.run(["rm", "-rf", path])
    }

    /// The path of entry `name`.
    func entry(_ name: String) -> String { "\(path)/\(name)" }

    /// Names a new network namespace `DIR/NAME` for each name, in one shell: `touch`,
    /// then `unshare -n mount --bind /proc/self/ns/net` (what `ip netns add` does).
    @discardableResult
    func add(_ names: String...) throws -> [String] { try add(names) }

    @discardableResult
    func add(_ names: [String]) throws -> [String] {
        let paths = names.map(entry)
        entries.withLock { $0.formUnion(paths) }
        try Command.check(
            [
                "sh", "-c",
                #"for f in "$@"; do touch "$f" && unshare -n mount --bind /proc/self/ns/net "$f" || exit 1; done"#,
                "sh",
            ] + paths)
        return paths
    }

    /// Unnames them: `umount`, then `rm` (what `ip netns del` does).
    func remove(_ names: String...) throws { try remove(names) }

    func remove(_ names: [String]) throws {
        let paths = names.map(entry)
        try Command.check(
            [
                "sh", "-c",
                // rm is tried again: an unlink can meet EBUSY while another test's new
                // mount namespace still holds a copy of the mount.
                #"for f in "$@"; do umount -l "$f" || exit 1; "#
                    + #"for i in 1 2 3 4 5 6 7 8 9 10; do rm -f "$f" 2>/dev/null && break; sleep 0.05; done; "#
                    + #"[ -e "$f" ] && exit 1; done; exit 0"#,
                "sh",
            ] + paths)
        entries.withLock { $0.subtract(paths) }
    }
}

/// Every event a monitor reported through its handler, in order.
final class NamespaceEventLog: Sendable {
    private let log = LockedValue<[NetworkNamespaceEvent]>([])

    /// Sets `monitor`'s handler (before its start).
    init(_ monitor: NetworkNamespaceMonitor) {
        monitor.eventHandler = { [log] event in log.withLock { $0.append(event) } }
    }

    var all: [NetworkNamespaceEvent] { log.withLock { $0 } }

    /// The infos of the appearances (or disappearances) reported so far.
    var appeared: [NetworkNamespaceInfo] {
        all.compactMap { if case .appeared(let info) = $0 { info } else { nil } }
    }
    var disappeared: [NetworkNamespaceInfo] {
        all.compactMap { if case .disappeared(let info) = $0 { info } else { nil } }
    }

    /// The events about `id`.
    func about(_ id: NetworkNamespaceInfo.ID) -> [NetworkNamespaceEvent] { all.filter { $0.namespace.id == id } }

    /// Waits until the log satisfies `condition`; fails after `timeout`.
    func wait(
        _ what: String, timeout: Duration = .seconds(10),
        until condition: @escaping @Sendable ([NetworkNamespaceEvent]) -> Bool
    ) async throws {
        do {
            try await eventually(what, timeout: timeout) { [log] in condition(log.withLock { $0 }) }
        } catch {
            throw CommandFailed(command: "waiting for \(what)", status: -1, stderr: "events so far: \(all)")
        }
    }
}

/// A process holding an anonymous network namespace (`unshare -n sh -c 'exec
/// cat'`): its pid is `cat`'s. Unlike ``TestNamespace``'s, it can be killed and
/// left a zombie, so that its pid can't name another process while a test looks.
final class NamespaceHolder: Sendable {
    let child: Child
    let id: NetworkNamespaceInfo.ID

    init() throws {
        child = try Child(["unshare", "-n", "sh", "-c", "echo ready; exec cat"], captureOutput: true)
        guard child.readLine().hasPrefix("ready") else {
            throw CommandFailed(command: "unshare -n", status: child.wait(), stderr: "no new network namespace")
        }
        id = try Self.identity("/proc/\(child.pid)/ns/net")
    }

    var pid: Int32 { child.pid }

    /// Kills it and waits for its exit, leaving it a zombie (its pid stays taken).
    func kill() {
        child.signal(SIGKILL)
        child.waitForExitUnreaped()
    }

    /// The namespace identity of the file at `path`.
    static func identity(_ path: String) throws -> NetworkNamespaceInfo.ID {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw CommandFailed(command: "stat \(path)", status: errno, stderr: String(cString: strerror(errno)))
        }
        return NetworkNamespaceInfo.ID(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }
}

/// `NetworkNamespaceMonitor` and `NamespaceScan` against the kernel: named
/// namespaces made in a directory of each test's own, anonymous ones held by
/// processes the test starts, a fake `/proc`, and descriptors running out (a fault
/// plan). Serialized: the churn test counts the monitor's threads and descriptors
/// in this process, and no other suite runs a namespace monitor.
@Suite(
    "Network namespace discovery against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads, .serialized)
struct NamespaceDiscoveryTests {
    /// A monitor of `directory` only (no process is looked at), looking again only
    /// once a minute unless something changes: only its events explain a quick
    /// appearance.
    static func namedOnly(_ directory: NamespaceDirectory, systemCalls: SystemCalls = .live) -> NetworkNamespaceMonitor
    {
        NetworkNamespaceMonitor(
            directories: [directory.path], includeProcesses: false, rescanInterval: .seconds(60),
            systemCalls: systemCalls, procRoot: "/proc")
    }

    @Test("Monitors started together in 8 namespaces: one thread enters them all in turn, and each works")
    func startsShareOneEntryThread() async throws {
        let namespaces = try (0..<8).map { _ in try TestNamespace() }
        for ns in namespaces { try ns.ipv4WithDefaultRoute() }
        let faults = SystemCallFaults()
        let system = SystemCalls(faults: faults)
        // The first entry is held: the other starts are asked for while it waits.
        let held = faults.delay(.setns, by: .milliseconds(300), count: .once)
        let entryThreads = faults.delay(.pthreadCreate, by: .zero, matching: .thread("reachability-ns"))
        let started = try await withThrowingTaskGroup(of: Reachability.self) { group in
            for ns in namespaces {
                var environment = ns.environment
                environment.systemCalls = system
                group.addTask {
                    let reachability = try Reachability(environment: environment)
                    try reachability.startNotifier()
                    return reachability
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(faults.fired(held) == 1)
        #expect(faults.fired(entryThreads) < namespaces.count, "\(faults.fired(entryThreads)) threads for 8 starts")
        #expect(started.allSatisfy { $0.currentReachabilityStatus == .reachableViaWiFi })
        for reachability in started { reachability.stopNotifier() }
    }

    @Test("Named only, every directory watched: no rescan while nothing happens, one scan per change")
    func idleNamedOnly() async throws {
        let directory = try NamespaceDirectory()
        let monitor = NetworkNamespaceMonitor(
            directories: [directory.path], includeProcesses: false, rescanInterval: .milliseconds(20),
            systemCalls: .live, procRoot: "/proc")
        let log = NamespaceEventLog(monitor)
        try monitor.start()
        defer { monitor.stop() }
        // Nothing to wait for: a timer would have made 25 rescans in this time. (Scans
        // for names happen too: the mount table is the whole host's, other tests mount.)
        try await Task.sleep(for: .milliseconds(500))
        #expect(monitor.rescanCount == 0, "no scan per 20 ms: \(monitor.rescanCount) rescans")
        #expect(monitor.scanCount < 13, "the start's, and one per mount of other tests: \(monitor.scanCount)")
        let x = try directory.add("x")[0]
        try await log.wait("x appears", timeout: .seconds(5)) { events in
            events.contains { $0 == .appeared($0.namespace) && $0.namespace.names == [x] }
        }
        #expect(monitor.scanCount < 10, "scans at the changes only: \(monitor.scanCount)")
    }

    @Test("A named namespace appears at once (mount table and inotify, no rescan) and disappears when unnamed")
    func named() async throws {
        let directory = try NamespaceDirectory()
        let monitor = Self.namedOnly(directory)
        let log = NamespaceEventLog(monitor)
        let stream = monitor.events
        try monitor.start()
        defer { monitor.stop() }
        #expect(log.all.isEmpty, "an empty directory: \(log.all)")
        #expect(monitor.namespaces.isEmpty)

        let path = try directory.add("x")[0]
        let id = try NamespaceHolder.identity(path)
        try await log.wait("x appears", timeout: .seconds(5)) { events in
            events.contains { $0 == .appeared($0.namespace) && $0.namespace.names == [path] }
        }
        let found = try #require(log.appeared.first)
        #expect(log.all.count == 1, "one event: \(log.all)")
        #expect(found.id == id)
        #expect(found.names == [path])
        #expect(found.name == "x")
        #expect(found.holders.isEmpty && found.holderCount == 0, "nothing holds it but the mount")
        #expect(!found.isCurrent)
        #expect(found.path == path)
        #expect(found.containerID == nil)
        #expect(monitor.namespaces == [found])

        // Its environment enters it: a new namespace has only lo.
        let interfaces = try NetworkInterfaces.list(environment: found.environment)
        #expect(interfaces.map(\.interface.name) == ["lo"])
        let reachability = try Reachability(address: "127.0.0.1", environment: found.environment)
        try reachability.start()
        reachability.stop()

        try directory.remove("x")
        try await log.wait("x disappears", timeout: .seconds(5)) { $0.contains(.disappeared(found)) }
        #expect(log.all == [.appeared(found), .disappeared(found)])
        #expect(monitor.namespaces.isEmpty)

        monitor.stop()
        var streamed: [NetworkNamespaceEvent] = []
        for await event in stream { streamed.append(event) }
        #expect(streamed == log.all, "the sequence made before start saw the same events, and finished on stop")
    }

    @Test("Entries that are no namespace (a file, an empty file, a FIFO, a directory, a mount namespace) never appear")
    func notNamespaces() async throws {
        let directory = try NamespaceDirectory()
        try "not a namespace\n".write(toFile: directory.entry("regular"), atomically: false, encoding: .utf8)
        #expect(FileManager.default.createFile(atPath: directory.entry("empty"), contents: nil))
        #expect(mkfifo(directory.entry("fifo"), 0o600) == 0)
        try FileManager.default.createDirectory(
            atPath: directory.entry("directory"), withIntermediateDirectories: false)
        // An nsfs file of another kind: passes the file-system check, not the type check.
        try FileManager.default.createSymbolicLink(
            atPath: directory.entry("mnt"), withDestinationPath: "/proc/self/ns/mnt")
        let junk = ["directory", "empty", "fifo", "mnt", "regular"].map(directory.entry)

        let listed = try NetworkNamespaceMonitor.list(directories: [directory.path], includeProcesses: false)
        #expect(listed.isEmpty, "\(listed)")
        let outcome = NamespaceScan(directories: [directory.path], processes: false, systemCalls: .live)
            .scan(previous: [:])
        #expect(outcome.complete)
        #expect(outcome.namespaces.isEmpty)
        for path in junk {
            #expect(
                outcome.problems.contains { $0.hasPrefix("\(path) is not a network namespace") },
                "\(path): \(outcome.problems)")
        }

        let monitor = Self.namedOnly(directory)
        let log = NamespaceEventLog(monitor)
        try monitor.start()  // A FIFO opened without O_NONBLOCK would hang here (the test's time limit).
        defer { monitor.stop() }
        #expect(log.all.isEmpty)
        let problem = try #require(monitor.lastProblem)
        #expect(junk.contains { problem.contains($0) }, "names one of them: \(problem)")
        #expect(problem.contains("is not a network namespace"), "\(problem)")

        let real = try directory.add("real")[0]
        try await log.wait("the real one appears", timeout: .seconds(5)) { !$0.isEmpty }
        #expect(log.all.count == 1 && log.appeared.first?.names == [real], "\(log.all)")
        #expect(monitor.namespaces.map(\.names) == [[real]])
    }

    @Test("An anonymous namespace appears with its holder (pid, cat) within a rescan, and disappears when it exits")
    func unnamed() async throws {
        let monitor = NetworkNamespaceMonitor(
            directories: [], includeProcesses: true, rescanInterval: .milliseconds(200))
        let log = NamespaceEventLog(monitor)
        try monitor.start()
        defer { monitor.stop() }
        #expect(
            monitor.followsProcessEvents == Self.onTheHost,
            "root on the host: /proc is looked at on the kernel's process events (elsewhere on a timer)")
        let own = try NamespaceHolder.identity("/proc/self/ns/net")
        let current = monitor.namespaces.filter(\.isCurrent)
        #expect(current.map(\.id) == [own], "this process's namespace, once, marked current")
        #expect(current.first?.path == nil)
        #expect((current.first?.holderCount ?? 0) >= 1, "held by this process at least")

        let holder = try NamespaceHolder()
        let id = holder.id
        try await log.wait("the holder's namespace appears", timeout: .seconds(5)) { events in
            events.contains { $0 == .appeared($0.namespace) && $0.namespace.id == id }
        }
        let found = try #require(log.appeared.first { $0.id == id })
        #expect(found.holders == [NetworkNamespaceHolder(pid: holder.pid, command: "cat", containerID: nil)])
        #expect(found.holderCount == 1)
        #expect(found.names.isEmpty && found.name == nil)
        #expect(!found.isCurrent)
        #expect(found.path == "/proc/\(holder.pid)/ns/net")
        #expect(try NetworkInterfaces.list(environment: found.environment).map(\.interface.name) == ["lo"])

        holder.kill()
        try await log.wait("the namespace disappears", timeout: .seconds(5)) { events in
            events.contains { $0 == .disappeared($0.namespace) && $0.namespace.id == id }
        }
        // The kernel may give the freed inode number to another test's new namespace at
        // once: what comes after is about that one (other holders).
        let about = log.about(id)
        #expect(Array(about.prefix(2)) == [.appeared(found), .disappeared(found)], "\(about)")
        #expect(about.dropFirst(2).allSatisfy { !$0.namespace.holders.contains { $0.pid == holder.pid } }, "\(about)")
        #expect(!monitor.namespaces.contains { $0.id == id && $0.holders.contains { $0.pid == holder.pid } })
        holder.child.wait()
    }

    @Test(
        "A fork storm (3,000 processes) makes at most one rescan per interval, and a namespace made after it is found")
    func processStorm() async throws {
        let interval = Duration.milliseconds(250)
        let monitor = NetworkNamespaceMonitor(directories: [], includeProcesses: true, rescanInterval: interval)
        let log = NamespaceEventLog(monitor)
        try monitor.start()
        defer { monitor.stop() }
        #expect(monitor.followsProcessEvents == Self.onTheHost)
        let before = monitor.rescanCount
        let took = try ContinuousClock().measure {
            try Command.check(["sh", "-c", "i=0; while [ $i -lt 3000 ]; do /bin/true; i=$((i+1)); done"])
        }
        // The rescan bound: one per interval, and one that may have begun as the storm
        // ended (other tests' mounts make scans too, not counted here: each puts the next
        // rescan further off).
        let rescans = monitor.rescanCount - before
        #expect(rescans >= 1 && rescans <= Int(took / interval) + 2, "\(rescans) rescans in \(took)")

        let holder = try NamespaceHolder()
        defer {
            holder.kill()
            holder.child.wait()
        }
        try await log.wait("the holder's namespace appears", timeout: .seconds(5)) { events in
            events.contains { $0 == .appeared($0.namespace) && $0.namespace.id == holder.id }
        }
    }

    @Test("The listen's answer lost behind an overflow of other processes' events: the listen is asked again")
    func listenAnswerLost() throws {
        try #require(Self.onTheHost, "the kernel sends process events to root in the host's namespaces only")
        // The first drain finds only overflows: the answer queued behind them is never read
        // (as when a busy host's events fill the queue before it, and it is dropped).
        let faults = SystemCallFaults()
        faults.inject(
            .read, errno: ENOBUFS, count: .times(ProcessConnector.drainLimit), matching: .netlink(.processEvents))
        let connector = try #require(ProcessConnector(systemCalls: SystemCalls(faults: faults)))
        connector.close()
    }

    @Test(
        "The kernel queues a process's fork, exec and exit for the monitor, and drops a thread's: 50 threads queue nothing"
    )
    func threadEventsFiltered() throws {
        try #require(Self.onTheHost, "the kernel sends process events to root in the host's namespaces only")
        let connector = try #require(ProcessConnector(systemCalls: .live))
        defer { connector.close() }
        for index in 0..<50 {
            try JoinableThread(name: "rtest-thread-\(index)", systemCalls: .live) {}.join()
        }
        try Command.check(["/bin/true"])
        var messages: [ProcessConnector.Message] = []
        _ = connector.drain { messages.append($0) }
        #expect(!messages.contains(.other), "thread events reached the socket: \(messages.count) messages")
        #expect(messages.contains(.process), "/bin/true's fork, exec and exit: \(messages)")
    }

    /// Root in the host's user, PID and network namespaces: where the kernel sends
    /// process events (the CI machine; not a container's root).
    static var onTheHost: Bool {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let pids = status.split(separator: "\n").first { $0.hasPrefix("NSpid:") }?.split(whereSeparator: \.isWhitespace)
        let users = (try? String(contentsOfFile: "/proc/self/uid_map", encoding: .utf8))?.split(
            whereSeparator: \.isWhitespace)
        // kthreadd (pid 2) is in the host's network namespace.
        let net = (try? NamespaceHolder.identity("/proc/self/ns/net"), try? NamespaceHolder.identity("/proc/2/ns/net"))
        return geteuid() == 0 && pids?.count == 2 && users == ["0", "0", "4294967295"] && net.0 != nil && net.0 == net.1
    }

    @Test("A namespace held by two processes is one namespace, with both holders")
    func twoHolders() async throws {
        let holder = try NamespaceHolder()
        let second = try Child(
            ["nsenter", "--net=/proc/\(holder.pid)/ns/net", "--", "sleep", "60"], captureOutput: false)
        defer { second.terminate() }
        // nsenter enters, then execs sleep under the same pid.
        try await eventually("the second holder is in", timeout: .seconds(10)) {
            (try? NamespaceHolder.identity("/proc/\(second.pid)/ns/net")) == holder.id
                && ((try? String(contentsOfFile: "/proc/\(second.pid)/comm", encoding: .utf8)) ?? "") == "sleep\n"
        }
        let pids = [holder.pid, second.pid].sorted()

        let listed = try NetworkNamespaceMonitor.list(directories: [], includeProcesses: true)
        #expect(listed.filter { $0.id == holder.id }.count == 1)
        let info = try #require(listed.first { $0.id == holder.id })
        #expect(info.holderCount == 2)
        #expect(info.holders.map(\.pid) == pids, "lowest pid first")
        #expect(Set(info.holders.map(\.command)) == ["cat", "sleep"])
        #expect(Set(listed.map(\.id)).count == listed.count, "each namespace once")

        let monitor = NetworkNamespaceMonitor(
            directories: [], includeProcesses: true, rescanInterval: .milliseconds(200))
        let log = NamespaceEventLog(monitor)
        try monitor.start()
        defer { monitor.stop() }
        #expect(log.about(holder.id).count == 1, "\(log.about(holder.id))")
        #expect(log.about(holder.id).first == .appeared(info))

        // The first holder exits: the same namespace, held by the second: changed, not gone.
        holder.kill()
        try await log.wait("changed to its second holder", timeout: .seconds(5)) { events in
            events.contains { $0 == .changed($0.namespace) && $0.namespace.id == holder.id }
        }
        let changed = try #require(log.about(holder.id).last?.namespace)
        #expect(changed.holders.map(\.pid) == [second.pid] && changed.holderCount == 1)
        #expect(changed.path == "/proc/\(second.pid)/ns/net")
        #expect(!log.about(holder.id).contains { if case .disappeared = $0 { true } else { false } })
        holder.child.wait()
    }

    @Test("The holder exits between the listing and the entry: .namespace thrown, no crash, no hang")
    func holderExitsBeforeEntry() throws {
        let holder = try NamespaceHolder()
        let listed = try NetworkNamespaceMonitor.list(directories: [], includeProcesses: true)
        let info = try #require(listed.first { $0.id == holder.id })
        #expect(info.path == "/proc/\(holder.pid)/ns/net")
        holder.kill()  // A zombie now: its pid can't name another process's namespace.
        defer { holder.child.wait() }

        #expect {
            let reachability = try Reachability(environment: info.environment)
            try reachability.start()
        } throws: { error in
            (error as? ReachabilityError)?.code == .namespace
        }
        #expect {
            try NetworkInterfaces.list(environment: info.environment)
        } throws: { error in
            (error as? ReachabilityError)?.code == .namespace
        }
        #expect {
            try PathMonitor(environment: info.environment).start()
        } throws: { error in
            (error as? ReachabilityError)?.code == .namespace
        }
    }

    @Test(
        "The holder moves to another namespace between the listing and the entry: refused (.namespace), that other one never watched in its place"
    )
    func holderMovesBeforeEntry() throws {
        // As `ip netns add` does: in the new namespace for a moment, then back (setns).
        let mover = """
            import ctypes, os, sys
            print("ready", flush=True)
            fd = os.open(sys.stdin.readline().strip(), os.O_RDONLY)
            print("moved" if ctypes.CDLL(None).setns(fd, 0x40000000) == 0 else "failed", flush=True)
            sys.stdin.read()
            """
        let child = try Child(["unshare", "-n", "python3", "-c", mover], captureOutput: true)
        defer {
            child.signal(SIGKILL)
            child.wait()
        }
        // Whole lines: print may write "ready" and its newline apart (PYTHONUNBUFFERED).
        try #require(child.nextLine(timeout: 10) == "ready")
        let id = try NamespaceHolder.identity("/proc/\(child.pid)/ns/net")
        let listed = try NetworkNamespaceMonitor.list(directories: [], includeProcesses: true)
        let info = try #require(listed.first { $0.id == id })
        #expect(info.path == "/proc/\(child.pid)/ns/net" && info.isAtPath)
        child.write("/proc/\(getpid())/ns/net\n")
        try #require(child.nextLine(timeout: 10) == "moved")
        #expect(
            try NamespaceHolder.identity("/proc/\(child.pid)/ns/net") == NamespaceHolder.identity("/proc/self/ns/net"))
        #expect(!info.isAtPath)

        func refused(_ body: () throws -> Void) {
            #expect { try body() } throws: { ($0 as? ReachabilityError)?.code == .namespace }
        }
        refused { try Reachability(environment: info.environment).start() }
        refused { _ = try NetworkInterfaces.list(environment: info.environment) }
        refused { try PathMonitor(environment: info.environment).start() }
        // The path alone names this process's own namespace now, and is watched as such.
        let own = try PathMonitor(environment: NetworkEnvironment(networkNamespacePath: info.path))
        try own.start()
        own.stop()
    }

    /// The monitor's threads in this process (`reachability-netns`, 15 bytes kept).
    static var monitorThreads: Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            ((try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? "")
                .hasPrefix("reachability-ne")
        }.count
    }

    /// This process's descriptors open on its mount table: only the namespace monitor opens it.
    static var mountTableDescriptors: Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let own = ["/proc/\(getpid())/mountinfo", "/proc/self/mountinfo"]
        return fds.filter { fd in
            own.contains((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? "")
        }.count
    }

    /// This process's inotify descriptors watching the directory at `path` (their
    /// fdinfo names its inode): the monitor of a test's own directory has one, unless
    /// inotify_init1 failed (the user's inotify instances, 128 by default, are shared
    /// by every process of root on the machine).
    static func inotifyWatches(_ path: String) -> Int {
        var status = stat()
        guard stat(path, &status) == 0 else { return 0 }
        let wanted = "ino:" + String(UInt64(status.st_ino), radix: 16) + " "
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.filter { fd in
            guard
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"))
                    == "anon_inode:inotify"
            else { return false }
            let info = (try? String(contentsOfFile: "/proc/self/fdinfo/\(fd)", encoding: .utf8)) ?? ""
            return info.split(separator: "\n").contains { $0.hasPrefix("inotify ") && $0.contains(wanted) }
        }.count
    }

    @Test(
        "Churn: 100 named namespaces made then removed, twice: each appears and disappears; nothing leaks",
        .timeLimit(.minutes(3)))
    func churn() async throws {
        let directory = try NamespaceDirectory()
        // An empty plan: every call is made, and counted (the monitor's own descriptors).
        let faults = SystemCallFaults()
        let monitor = Self.namedOnly(directory, systemCalls: SystemCalls(faults: faults))
        let log = NamespaceEventLog(monitor)
        #expect(Self.monitorThreads == 0 && Self.mountTableDescriptors == 0, "no namespace monitor runs before")
        try monitor.start()
        // The thread names itself once it runs.
        try await eventually("its thread, named", timeout: .seconds(10)) { Self.monitorThreads == 1 }
        #expect(Self.mountTableDescriptors == 1, "its mount table")
        // Its inotify instance: there unless the machine's root had none left (then it
        // runs on the mount table alone; `watchesUnavailable` is about saying so).
        let inotify = Self.inotifyWatches(directory.path)
        #expect(inotify <= 1)

        let names = (0..<100).map { String(format: "churn%03d", $0) }
        let paths = Set(names.map(directory.entry))
        for round in 1...2 {
            let before = log.all.count
            try directory.add(names)
            try await log.wait("round \(round): all 100 appear", timeout: .seconds(30)) { events in
                Set(
                    events.dropFirst(before).compactMap { event in
                        if case .appeared(let info) = event { info.names.first } else { nil }
                    }) == paths
            }
            #expect(monitor.namespaces.count == 100)
            try directory.remove(names)
            try await log.wait("round \(round): all 100 disappear", timeout: .seconds(30)) { events in
                Set(
                    events.dropFirst(before).compactMap { event in
                        if case .disappeared(let info) = event { info.names.first } else { nil }
                    }) == paths
            }
            let events = log.all.dropFirst(before)
            #expect(events.count == 200, "one appearance and one disappearance each: \(events.count) events")
            #expect(monitor.namespaces.isEmpty)
        }
        #expect(monitor.scanCount < 1000, "scans: \(monitor.scanCount)")

        monitor.stop()
        #expect(Self.mountTableDescriptors == 0, "its mount table closed")
        #expect(Self.inotifyWatches(directory.path) == 0, "its inotify instance closed")
        // Joined; its /proc/self/task entry goes a moment after.
        try await eventually("its thread gone", timeout: .seconds(10)) { Self.monitorThreads == 0 }
        // Every descriptor it made (eventfd, inotify, the mount table, each new entry
        // opened to check it) closed: each made one is one close.
        let made = faults.attempts(.eventfd) + inotify + faults.attempts(.open)
        #expect(faults.attempts(.open) >= 200, "each new entry opened once to check it: \(faults.attempts(.open))")
        #expect(faults.attempts(.close) == made, "opened \(made), closed \(faults.attempts(.close))")
    }

    @Test("start twice, stop, start again, release: one thread at a time, every namespace appears at each start")
    func lifecycle() async throws {
        let directory = try NamespaceDirectory()
        let x = try directory.add("x")[0]
        do {
            let monitor = Self.namedOnly(directory)
            let log = NamespaceEventLog(monitor)
            let first = monitor.events
            try monitor.start()
            try monitor.start()  // Running: nothing.
            #expect(log.all.map(\.namespace.names) == [[x]], "\(log.all)")
            try await eventually("one thread", timeout: .seconds(10)) { Self.monitorThreads == 1 }
            #expect(Self.mountTableDescriptors == 1)

            monitor.stop()
            monitor.stop()
            #expect(monitor.namespaces.isEmpty)
            var streamed: [NetworkNamespaceEvent] = []
            for await event in first { streamed.append(event) }
            #expect(streamed.count == 1, "finished on stop: \(streamed)")
            try await eventually("no thread", timeout: .seconds(10)) { Self.monitorThreads == 0 }

            let second = monitor.events
            try monitor.start()
            #expect(log.appeared.count == 2, "x appears again at the second start: \(log.all)")
            try directory.remove("x")
            try await log.wait("x disappears", timeout: .seconds(5)) { $0.count == 3 }
            monitor.stop()
            var again: [NetworkNamespaceEvent] = []
            for await event in second { again.append(event) }
            #expect(again == Array(log.all.suffix(2)), "\(again)")
        }
        // Released while running, never stopped: its thread ends.
        do {
            let monitor = Self.namedOnly(directory)
            try monitor.start()
            try await eventually("one thread", timeout: .seconds(10)) { Self.monitorThreads == 1 }
        }
        try await eventually("the released monitor's thread gone", timeout: .seconds(10)) { Self.monitorThreads == 0 }
        #expect(Self.mountTableDescriptors == 0)
    }

    @Test("start fails (no thread): it throws, holds nothing, and a later start reports every namespace there")
    func startFails() async throws {
        let directory = try NamespaceDirectory()
        let x = try directory.add("x")[0]
        let faults = SystemCallFaults()
        let monitor = Self.namedOnly(directory, systemCalls: SystemCalls(faults: faults))
        let noThread = faults.inject(.pthreadCreate, errno: EAGAIN, count: .once)
        // The thread is made before the first scan: a start that can't make it reports nothing.
        let reported = LockedValue(0)
        let path = directory.path
        monitor.eventHandler = { _ in reported.withLock { $0 += 1 } }
        #expect {
            try monitor.start()
        } throws: { error in
            (error as? ReachabilityError)?.code == .systemCall
        }
        #expect(faults.fired(noThread) == 1)
        #expect(reported.withLock { $0 } == 0, "no scan, no event")
        #expect(Self.monitorThreads == 0 && Self.mountTableDescriptors == 0 && Self.inotifyWatches(path) == 0)
        #expect(monitor.namespaces.isEmpty, "not started: nothing kept (\"empty before start()\")")
        let made = faults.attempts(.eventfd) + faults.attempts(.inotifyInit1) + faults.attempts(.open)
        #expect(faults.attempts(.close) == made, "each descriptor made closed: \(made) made")

        // A sequence made now, then a start that works: "when started, an .appeared for
        // every namespace there".
        let log = NamespaceEventLog(monitor)
        let stream = monitor.events
        try monitor.start()
        defer { monitor.stop() }
        #expect(log.all.map(\.namespace.names) == [[x]], "the handler: \(log.all)")
        monitor.stop()
        var streamed: [NetworkNamespaceEvent] = []
        for await event in stream { streamed.append(event) }
        #expect(streamed.map(\.namespace.names) == [[x]], "the sequence: \(streamed)")
    }

    @Test("No inotify or no mount table at start: start throws, or the monitor says what it can't watch")
    func watchesUnavailable() async throws {
        let directory = try NamespaceDirectory()
        try directory.add("x")
        for (call, subject) in [
            (SystemCall.inotifyInit1, nil), (.open, SystemCallSubject.path("/proc/self/mountinfo")),
        ] {
            let faults = SystemCallFaults()
            faults.inject(call, errno: EMFILE, count: .once, matching: subject)
            let monitor = Self.namedOnly(directory, systemCalls: SystemCalls(faults: faults))
            defer { monitor.stop() }
            do {
                try monitor.start()
                // Running without it: new names would be seen only at the next rescan (a
                // minute here). That must not be silent.
                let problem = monitor.lastProblem ?? ""
                #expect(
                    problem.contains("inotify") || problem.contains("mountinfo"),
                    "\(call) failed with EMFILE, start() went on; lastProblem: \(monitor.lastProblem ?? "nil")")
            } catch {
                #expect(error.code == .systemCall && error.errno == EMFILE, "\(error)")
            }
        }
    }

    @Test("A fake /proc: holders' commands and container ids, the process's own namespace, a second namespace")
    func fakeProc() async throws {
        let other = try NamespaceHolder()
        let root = try NamespaceDirectory("rtest-fakeproc")
        let containerID = String(repeating: "0123456789abcdef", count: 4)
        let files = FileManager.default
        for pid in ["self", "100", "101", "102"] {
            try files.createDirectory(atPath: "\(root.path)/\(pid)/ns", withIntermediateDirectories: true)
        }
        try files.createSymbolicLink(atPath: "\(root.path)/self/ns/net", withDestinationPath: "/proc/self/ns/net")
        try files.createSymbolicLink(atPath: "\(root.path)/100/ns/net", withDestinationPath: "/proc/self/ns/net")
        try "nginx\n".write(toFile: "\(root.path)/100/comm", atomically: false, encoding: .utf8)
        try "12:memory:/docker/\(containerID)\n0::/system.slice/docker-\(containerID.uppercased()).scope\n"
            .write(toFile: "\(root.path)/100/cgroup", atomically: false, encoding: .utf8)
        try files.createSymbolicLink(
            atPath: "\(root.path)/101/ns/net", withDestinationPath: "/proc/\(other.pid)/ns/net")
        // 102 has exited (no ns/net any more); "abc" is no process.
        try files.createDirectory(atPath: "\(root.path)/abc/ns", withIntermediateDirectories: true)
        try files.createSymbolicLink(atPath: "\(root.path)/abc/ns/net", withDestinationPath: "/proc/self/ns/net")
        let own = try NamespaceHolder.identity("/proc/self/ns/net")

        let scan = NamespaceScan(directories: [], processes: true, systemCalls: .live, procRoot: root.path)
        let outcome = scan.scan(previous: [:])
        #expect(outcome.complete)
        #expect(outcome.namespaces.count == 2, "\(outcome.namespaces.values)")
        let mine = try #require(outcome.namespaces[own])
        #expect(mine.isCurrent)
        #expect(mine.holders == [NetworkNamespaceHolder(pid: 100, command: "nginx", containerID: containerID)])
        #expect(mine.containerID == containerID)
        #expect(mine.holderCount == 1)
        let theirs = try #require(outcome.namespaces[other.id])
        #expect(!theirs.isCurrent)
        #expect(
            theirs.holders == [NetworkNamespaceHolder(pid: 101, command: "", containerID: nil)], "no comm, no cgroup")
        #expect(outcome.holders[own] == [100] && outcome.holders[other.id] == [101])

        // A later scan reuses what it read of a holder it knew.
        try "apache\n".write(toFile: "\(root.path)/100/comm", atomically: false, encoding: .utf8)
        #expect(scan.scan(previous: outcome.namespaces).namespaces[own]?.holders.first?.command == "nginx")
        #expect(scan.scan(previous: [:]).namespaces[own]?.holders.first?.command == "apache")

        // The monitor over the same tree.
        let monitor = NetworkNamespaceMonitor(
            directories: [], includeProcesses: true, rescanInterval: .milliseconds(200), systemCalls: .live,
            procRoot: root.path)
        let log = NamespaceEventLog(monitor)
        try monitor.start()
        defer { monitor.stop() }
        #expect(Set(log.appeared.map(\.id)) == [own, other.id])
        #expect(monitor.namespaces.first { $0.isCurrent }?.holders.first?.command == "apache")
        // 101 goes: its namespace disappears at the next rescan.
        try files.removeItem(atPath: "\(root.path)/101")
        try await log.wait("101's namespace disappears", timeout: .seconds(5)) { events in
            events.contains { $0 == .disappeared($0.namespace) && $0.namespace.id == other.id }
        }
        #expect(log.about(own).count == 1, "the own namespace unchanged: \(log.about(own))")

        // A scan holds no descriptor: each it opens (a new named entry, comm, cgroup) it
        // closes (every file it opens exists: 101, whose comm was missing, is gone).
        let named = try NamespaceDirectory()
        try named.add("n1", "n2")
        let faults = SystemCallFaults()
        let counted = NamespaceScan(
            directories: [named.path], processes: true, systemCalls: SystemCalls(faults: faults), procRoot: root.path
        ).scan(previous: [:])
        #expect(counted.complete && counted.namespaces.count == 3, "\(counted.namespaces.values)")
        #expect(faults.attempts(.open) >= 2 + 2, "n1, n2, 100's comm and cgroup: \(faults.attempts(.open))")
        #expect(faults.attempts(.close) == faults.attempts(.open), "opened \(faults.attempts(.open))")
    }

    @Test("Out of descriptors: a scan that can't list a directory is incomplete, and nothing is reported gone")
    func directoryUnlistable() async throws {
        let directory = try NamespaceDirectory()
        let faults = SystemCallFaults()
        let systemCalls = SystemCalls(faults: faults)
        let x = try directory.add("x")[0]

        // One scan, the listing failing with EMFILE.
        let once = faults.inject(.opendir, errno: EMFILE, count: .once, matching: .path(directory.path))
        let outcome = NamespaceScan(directories: [directory.path], processes: false, systemCalls: systemCalls)
            .scan(previous: [:])
        #expect(faults.fired(once) == 1)
        #expect(!outcome.complete)
        #expect(outcome.namespaces.isEmpty)
        #expect(outcome.problems.count == 1 && outcome.problems[0].hasPrefix("cannot list \(directory.path)"))
        // A directory that doesn't exist is empty, not a blind spot.
        let missing = NamespaceScan(directories: [directory.path + "/none"], processes: false, systemCalls: .live)
            .scan(previous: [:])
        #expect(missing.complete && missing.namespaces.isEmpty && missing.problems.isEmpty)

        let monitor = Self.namedOnly(directory, systemCalls: systemCalls)
        let log = NamespaceEventLog(monitor)
        try monitor.start()
        defer { monitor.stop() }
        let found = try #require(log.appeared.first)
        #expect(found.names == [x])

        let exhausted = faults.inject(.opendir, errno: EMFILE, count: .always, matching: .path(directory.path))
        try directory.remove("x")
        // A change made after the removal wakes it (inotify): that scan saw the removal, blind.
        // Changes made after the removal wake it (inotify), twice: the first wake's scan
        // began after the removal, and the second's listing comes after the first's
        // outcome was taken (one thread scans).
        // (A file made in the directory wakes it through inotify, a namespace named
        // elsewhere through the mount table: either will do.)
        let elsewhere = try NamespaceDirectory()
        let fired = faults.fired(exhausted)
        for nudge in 1...2 {
            #expect(FileManager.default.createFile(atPath: directory.entry("nudge\(nudge)"), contents: nil))
            try elsewhere.add("nudge\(nudge)")
            try await eventually("blind scan \(nudge) after the removal", timeout: .seconds(10)) {
                faults.fired(exhausted) >= fired + nudge
            }
        }
        #expect(log.all == [.appeared(found)], "nothing reported gone: \(log.all)")
        #expect(monitor.namespaces == [found], "what it knew is kept")
        let problem = try #require(monitor.lastProblem)
        #expect(problem.contains("cannot list \(directory.path)"), "\(problem)")
        #expect(problem.contains("Too many open files"), "the errno in words: \(problem)")

        faults.remove(exhausted)
        #expect(FileManager.default.createFile(atPath: directory.entry("nudge3"), contents: nil))
        try elsewhere.add("nudge3")
        try await log.wait("x disappears once the directory can be listed", timeout: .seconds(10)) {
            $0.contains(.disappeared(found))
        }
        #expect(log.all == [.appeared(found), .disappeared(found)])
    }

    @Test("Out of descriptors: a scan that can't list /proc keeps the namespaces held by processes")
    func procUnlistable() async throws {
        let holder = try NamespaceHolder()
        let faults = SystemCallFaults()
        // No descriptor for the process events either: /proc is looked at on a timer.
        _ = faults.inject(.socket, errno: EMFILE, count: .always, matching: .netlink(.processEvents))
        let monitor = NetworkNamespaceMonitor(
            directories: [], includeProcesses: true, rescanInterval: .milliseconds(100),
            systemCalls: SystemCalls(faults: faults), procRoot: "/proc")
        let log = NamespaceEventLog(monitor)
        try monitor.start()
        defer { monitor.stop() }
        #expect(!monitor.followsProcessEvents)
        let found = try #require(log.appeared.first { $0.id == holder.id })

        let exhausted = faults.inject(.opendir, errno: EMFILE, count: .always, matching: .path("/proc"))
        holder.kill()
        defer { holder.child.wait() }
        let fired = faults.fired(exhausted)
        try await eventually("three blind rescans after the exit", timeout: .seconds(10)) {
            faults.fired(exhausted) >= fired + 3
        }
        #expect(log.about(holder.id) == [.appeared(found)], "nothing reported gone: \(log.about(holder.id))")
        #expect(log.disappeared.isEmpty, "no namespace reported gone while /proc can't be listed: \(log.disappeared)")
        #expect(monitor.namespaces.contains(found))
        #expect(monitor.lastProblem?.contains("cannot list /proc") == true, "\(monitor.lastProblem ?? "nil")")

        faults.remove(exhausted)
        try await log.wait("gone once /proc can be listed", timeout: .seconds(10)) { $0.contains(.disappeared(found)) }
    }
}
