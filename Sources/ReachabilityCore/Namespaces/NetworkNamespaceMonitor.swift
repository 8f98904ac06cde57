import Dispatch
import Glibc
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// Finds the host's network namespaces and follows them as they come and go:
/// those named in `/run/netns` (what `ip netns add` makes) and any directory you
/// add (Docker's `/run/docker/netns`, a CNI's), and those held by processes
/// (`/proc/PID/ns/net`: containers, pods, `unshare -n`, systemd's
/// `PrivateNetwork=`), each once, by identity, with the processes that hold it and
/// their container id.
///
/// ```swift
/// let namespaces = NetworkNamespaceMonitor()
/// let events = namespaces.events       // made before start: gets every namespace there
/// try namespaces.start()
/// for await event in events {
///     if case .appeared(let found) = event {
///         let reachability = try Reachability(hostname: "db.internal", environment: found.environment)
///         // …
///     }
/// }
/// ```
///
/// How it sees them. One thread (`reachability-netns`) waits in poll(2), doing
/// nothing while nothing happens, and looks again (a *scan*: the watched
/// directories and every `/proc/PID/ns/net`, a stat(2) each, no descriptor kept)
/// when
/// - a watched directory changes (inotify), or the mount table does (a namespace
///   is named by a bind mount, and container runtimes mount their root file
///   systems): a new named namespace is seen at once;
/// - a process starts, changes program or ends (the kernel's process events, which
///   it sends to root on the host): a namespace held only by a process that made no
///   mount (`unshare -n`), and the end of the last process holding one, are seen
///   within ``rescanInterval`` (2 s). The rescan bound: at most one such scan per
///   interval, however many processes start. Where the kernel sends no process
///   events (not root, or in a container's user or PID namespace), it looks every
///   interval instead. An idle host means no scan and no wake-up.
///
/// A namespace disappears when a scan finds no watched name and no process for it
/// (a descriptor that still holds it, this library's monitors' included, is not
/// seen). A scan that ran out of descriptors or memory on the way reports nothing
/// gone: what it could not see is kept until a scan sees everything.
///
/// Seeing other users' processes' namespaces, and entering them, needs root
/// (`CAP_SYS_PTRACE` to stat their `/proc/PID/ns/net`, `CAP_SYS_ADMIN` to enter).
///
/// `Sendable`: its state is behind a lock.
public final class NetworkNamespaceMonitor: Sendable {
    /// The directories of named namespaces watched by default: `ip netns`'s.
    public static let defaultDirectories = ["/run/netns"]

    /// The directories whose entries name namespaces.
    public let directories: [String]
    /// Whether namespaces held by processes are looked for (`/proc/PID/ns/net`).
    public let includesProcesses: Bool
    /// The least time between two scans that no name's change asked for; where the
    /// kernel sends no process events, how often it looks (10 ms to a year).
    public let rescanInterval: Duration

    private let systemCalls: SystemCalls
    private let procRoot: String
    private let state = LockedValue(State())

    private struct State {
        var namespaces: [NetworkNamespaceInfo.ID: NetworkNamespaceInfo] = [:]
        var holders: [NetworkNamespaceInfo.ID: [Int32]] = [:]
        var streams = StreamRegistry<NetworkNamespaceEvent>()
        var handler: (@Sendable (NetworkNamespaceEvent) -> Void)?
        var thread: JoinableThread?
        var wake: Int32 = -1
        var stopRequested = false
        var lastProblem: String?
        /// What the thread's watches lack since ``start()``, if anything.
        var watchProblem: String?
        var followsProcessEvents = false
        var scans = 0
        var rescans = 0
    }

    /// A monitor of the namespaces named in `directories` (each a directory whose
    /// entries are namespace files) and, with `includeProcesses`, of those held by
    /// processes, looking at `/proc` at most once per `rescanInterval` for them.
    /// It watches nothing until ``start()``.
    public convenience init(
        directories: [String] = defaultDirectories, includeProcesses: Bool = true,
        rescanInterval: Duration = .seconds(2)
    ) {
        self.init(
            directories: directories, includeProcesses: includeProcesses, rescanInterval: rescanInterval,
            systemCalls: .live, procRoot: "/proc")
    }

    /// The same, through `systemCalls` and with `/proc` at `procRoot` (tests).
    init(
        directories: [String], includeProcesses: Bool, rescanInterval: Duration, systemCalls: SystemCalls,
        procRoot: String
    ) {
        self.directories = Self.normalized(directories)
        self.includesProcesses = includeProcesses
        self.rescanInterval = min(max(rescanInterval, .milliseconds(10)), .seconds(31_536_000))
        self.systemCalls = systemCalls
        self.procRoot = procRoot
    }

    deinit { stop() }

    /// Every namespace visible now, by identity: one scan, nothing kept. Throws
    /// ``ReachabilityError/Code/systemCall`` when the scan could not see everything
    /// (the process is out of descriptors or memory).
    public static func list(directories: [String] = defaultDirectories, includeProcesses: Bool = true)
        throws(ReachabilityError) -> [NetworkNamespaceInfo]
    {
        let scan = NamespaceScan(directories: normalized(directories), processes: includeProcesses, systemCalls: .live)
        let outcome = scan.scan(previous: [:])
        guard outcome.complete else {
            throw ReachabilityError(
                .systemCall, "cannot see every network namespace: " + outcome.problems.joined(separator: "; "))
        }
        return outcome.namespaces.keys.sorted().map { outcome.namespaces[$0]! }
    }

    /// The namespaces as of the last scan, by identity (empty before ``start()``).
    public var namespaces: [NetworkNamespaceInfo] {
        state.withLock { state in state.namespaces.keys.sorted().map { state.namespaces[$0]! } }
    }

    /// The events as an `AsyncSequence`: when started, an ``NetworkNamespaceEvent/appeared(_:)``
    /// for every namespace there, then each change. It finishes on ``stop()``. Each
    /// sequence buffers up to ``eventBufferLimit`` events for a slow consumer; past
    /// that the oldest are kept and the newest dropped (``namespaces`` stays right).
    public var events: AsyncStream<NetworkNamespaceEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: NetworkNamespaceEvent.self, bufferingPolicy: .bufferingOldest(Self.eventBufferLimit))
        let id = state.withLock { $0.streams.add(continuation) }
        continuation.onTermination = { [weak self] _ in
            let owner = self
            StreamRegistry<NetworkNamespaceEvent>.removeLater { owner?.state.withLock { $0.streams.remove(id) } }
        }
        return stream
    }

    /// The events a sequence keeps for a consumer that doesn't read.
    public static let eventBufferLimit = 65_536

    /// Called with each event, in order: the appearances of the namespaces there at
    /// ``start()`` on its caller's thread before it returns, then each change on the
    /// monitor's thread. It must not block: the next scan waits for it. Set it
    /// before ``start()``.
    public var eventHandler: (@Sendable (NetworkNamespaceEvent) -> Void)? {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }

    /// Looks once, reports every namespace there as appeared, and starts following
    /// them. Calling it while running does nothing. Throws
    /// ``ReachabilityError/Code/systemCall`` when the thread or its descriptors can't
    /// be made.
    public func start() throws(ReachabilityError) {
        let wake: Int32
        switch systemCalls.eventfd() {
        case .success(let fd): wake = fd
        case .failure(let failure): throw failure.reachabilityError
        }
        let running = state.withLock { state -> Bool in
            guard state.thread == nil else { return true }
            state.stopRequested = false
            state.wake = wake
            return false
        }
        if running {
            systemCalls.close(wake)
            return
        }
        // The kernel's process events are its processes': a fake /proc has none.
        let watch = Watch(
            directories: directories, processes: includesProcesses && procRoot == "/proc", systemCalls: systemCalls)
        // The thread first, held until the first scan is done here: a start that can't
        // make it has looked at nothing, and a later one reports every namespace.
        let firstScan = DispatchSemaphore(value: 0)
        do throws(ReachabilityError) {
            let reference = WeakMonitor(self)
            let (directories, processes, systemCalls, interval) = (
                directories, includesProcesses, systemCalls, rescanInterval
            )
            let thread = try JoinableThread(name: "reachability-netns", systemCalls: systemCalls) {
                firstScan.wait()
                Self.run(
                    weak: reference, watch: watch, wake: wake, directories: directories, processes: processes,
                    systemCalls: systemCalls, interval: interval)
            }
            state.withLock { $0.thread = thread }
        } catch {
            watch.close()
            state.withLock { $0.wake = -1 }
            systemCalls.close(wake)
            throw error
        }
        state.withLock { state in
            state.watchProblem = watch.problem
            state.followsProcessEvents = watch.processes != nil
        }
        look()
        firstScan.signal()
    }

    /// Stops following; every ``events`` sequence finishes. It can be started again.
    public func stop() {
        let (thread, wake) = state.withLock { state -> (JoinableThread?, Int32) in
            state.stopRequested = true
            defer { state.thread = nil }
            return (state.thread, state.wake)
        }
        guard let thread else { return }
        systemCalls.signal(wake)
        if thread.isCurrent { thread.detach() } else { thread.join() }
        systemCalls.close(wake)
        let streams = state.withLock { state in
            state.wake = -1
            state.namespaces = [:]
            state.holders = [:]
            return state.streams.takeAll()
        }
        for stream in streams { stream.finish() }
    }

    /// What the last scan could not see or found no namespace at (a named path), or
    /// what the watches lack (new names are then seen later), if anything.
    public var lastProblem: String? { state.withLock { $0.lastProblem } }

    /// Scans since ``start()`` (tests and benchmarks count them).
    var scanCount: Int { state.withLock { $0.scans } }

    /// Those of them no name's change asked for: for processes, or on the timer.
    var rescanCount: Int { state.withLock { $0.rescans } }

    /// Whether `/proc` is looked at on the kernel's process events, not on a timer.
    var followsProcessEvents: Bool { state.withLock { $0.followsProcessEvents } }

    // MARK: The thread

    /// What tells the thread to look again: inotify on the directories, the mount table,
    /// the kernel's process events.
    private struct Watch: @unchecked Sendable {
        // @unchecked: the descriptors are read on the monitor's thread only.
        let inotify: Int32
        let mounts: Int32
        /// The kernel's process events, when it sends them to this process (root on
        /// the host) and processes are looked for: else `/proc` is looked at on a timer.
        let processes: ProcessConnector?
        let systemCalls: SystemCalls
        /// The directories watched, by watch descriptor (re-added when they come back).
        var watched: [Int32: String] = [:]
        /// What could not be set up: then new names are seen at mount-table changes
        /// only (no inotify), or at rescans (no mount table).
        let problem: String?

        init(directories: [String], processes: Bool, systemCalls: SystemCalls) {
            self.systemCalls = systemCalls
            self.processes = processes ? ProcessConnector(systemCalls: systemCalls) : nil
            var problems: [String] = []
            switch systemCalls.inotify() {
            case .success(let fd): inotify = fd
            case .failure(let failure):
                inotify = -1
                problems.append("\(failure.reachabilityError)")
            }
            switch systemCalls.open("/proc/self/mountinfo", flags: O_RDONLY | O_CLOEXEC) {
            case .success(let fd): mounts = fd
            case .failure(let failure):
                mounts = -1
                problems.append("\(failure.reachabilityError)")
            }
            let seen =
                mounts < 0 ? "new names are seen at rescans only" : "new names are seen at mount-table changes only"
            problem = problems.isEmpty ? nil : seen + ": " + problems.joined(separator: "; ")
            addMissing(directories)
        }

        /// Watches the directories not watched yet (they may not exist yet).
        mutating func addMissing(_ directories: [String]) {
            guard inotify >= 0 else { return }
            for directory in directories where !watched.values.contains(directory) {
                if case .success(let wd) = systemCalls.watchDirectory(inotify, directory) { watched[wd] = directory }
            }
        }

        /// Reads the pending events; forgets the watches of directories that went away.
        mutating func drain() {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let outcome = buffer.withUnsafeMutableBytes { systemCalls.read(inotify, into: $0, subject: .inotify) }
                guard case .success(let count) = outcome, count > 0 else { return }
                var offset = 0
                while offset + 16 <= count {
                    let (wd, mask, length) = buffer.withUnsafeBytes { raw in
                        (
                            raw.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                            raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                            Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                        )
                    }
                    if mask & UInt32(IN_IGNORED) != 0 { watched[wd] = nil }
                    offset += 16 + length
                }
            }
        }

        func close() {
            if inotify >= 0 { systemCalls.close(inotify) }
            if mounts >= 0 { systemCalls.close(mounts) }
            processes?.close()
        }
    }

    /// The thread's loop. It holds the monitor only while it scans, so that a
    /// monitor released while running stops (its deinit wakes the poll).
    private static func run(
        weak reference: WeakMonitor, watch: Watch, wake: Int32,
        directories: [String], processes: Bool, systemCalls: SystemCalls, interval: Duration
    ) {
        var watch = watch
        defer { watch.close() }
        // A name comes with a bind mount, and the mount table says so: only a blind
        // spot (processes and no process events, or no mount table) needs a timer.
        var schedule = RescanSchedule(
            interval: interval, periodic: watch.mounts < 0 || (processes && watch.processes == nil),
            lastScan: .now)
        while true {
            let timeout = schedule.deadline.map { deadline -> Int32 in
                // Rounded up: a poll that returned early would scan late, after another wait.
                let left = (deadline - .now).components
                let milliseconds =
                    left.seconds * 1000 + (left.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
                return Int32(clamping: max(0, milliseconds))
            }
            // While a scan is due anyway, process events are left queued: a fork storm
            // wakes the thread once per interval, not once per fork.
            let listening = schedule.due == nil ? watch.processes?.fd ?? -1 : -1
            let ready: UInt64
            switch systemCalls.poll(
                [wake, watch.inotify, watch.mounts, listening], timeoutMilliseconds: timeout ?? -1, subject: .monitor,
                priority: 1 << 2)
            {
            case .success(let bits): ready = bits
            case .failure:
                SystemCalls.sleep(microseconds: 100_000)
                ready = 0
            }
            guard let monitor = reference.monitor, !monitor.state.withLock({ $0.stopRequested }) else { return }
            if ready & 1 << 1 != 0 { watch.drain() }
            if ready & 1 << 3 != 0, watch.processes?.drain() == true { schedule.processesChanged(at: .now) }
            let named = ready & (1 << 1 | 1 << 2) != 0
            guard named || schedule.isDue(at: .now) else { continue }
            // What is queued came before this scan, which sees it.
            _ = watch.processes?.drain()
            watch.addMissing(directories)
            // A rescan for processes lists only them: the watched directories said
            // nothing (a new name is an inotify event, a bind a mount-table change).
            monitor.look(unchanged: named ? [] : Set(watch.watched.values))
            if !named { monitor.state.withLock { $0.rescans += 1 } }
            schedule.scanned(at: .now)
        }
    }

    private final class WeakMonitor: Sendable {
        weak let monitor: NetworkNamespaceMonitor?
        init(_ monitor: NetworkNamespaceMonitor) { self.monitor = monitor }
    }

    /// One scan, and its events to the handler and the sequences.
    private func look(unchanged: Set<String> = []) {
        let previous = state.withLock { ($0.namespaces, $0.holders) }
        let scan = NamespaceScan(
            directories: directories, processes: includesProcesses, systemCalls: systemCalls, procRoot: procRoot)
        var outcome = scan.scan(previous: previous.0, unchanged: unchanged)
        if !outcome.complete {
            // What it could not see is not gone: keep what it knew beside what it found.
            for (id, info) in previous.0 where outcome.namespaces[id] == nil {
                outcome.namespaces[id] = info
                outcome.holders[id] = previous.1[id]
            }
        }
        let events = NamespaceScan.events(
            from: previous.0, oldHolders: previous.1, to: outcome.namespaces, newHolders: outcome.holders)
        let handler = state.withLock { state -> (@Sendable (NetworkNamespaceEvent) -> Void)? in
            state.namespaces = outcome.namespaces
            state.holders = outcome.holders
            state.scans += 1
            state.lastProblem = outcome.problems.last ?? state.watchProblem
            for event in events { state.streams.yield(event) }
            return state.handler
        }
        for event in events { handler?(event) }
    }

    private static func normalized(_ directories: [String]) -> [String] {
        var seen: Set<String> = []
        return directories.compactMap { directory in
            var path = directory
            while path.count > 1, path.hasSuffix("/") { path.removeLast() }
            return seen.insert(path).inserted ? path : nil
        }
    }
}

/// When the monitor looks at `/proc` again without a name's change. The rescan
/// bound (a correctness rule: a host's fork storm must not become a scan storm):
/// at most one such scan per `interval`. With process events, the first event
/// after a quiet interval is looked at at once, and those within an interval of
/// the last scan wait for its end, together; without them (`periodic`), it looks
/// every `interval`.
struct RescanSchedule {
    let interval: Duration
    /// No process events: a namespace held by a process is found by looking.
    let periodic: Bool
    private(set) var lastScan: ContinuousClock.Instant
    /// When the scan the process events asked for is due (nil: none asked).
    private(set) var due: ContinuousClock.Instant?

    init(interval: Duration, periodic: Bool, lastScan: ContinuousClock.Instant) {
        self.interval = interval
        self.periodic = periodic
        self.lastScan = lastScan
    }

    /// A process started or ended at `now`.
    mutating func processesChanged(at now: ContinuousClock.Instant) {
        if due == nil { due = max(now, lastScan + interval) }
    }

    /// A scan (of anything: every scan lists `/proc`) ended at `now`.
    mutating func scanned(at now: ContinuousClock.Instant) {
        lastScan = now
        due = nil
    }

    /// When the next scan is due, if one is.
    var deadline: ContinuousClock.Instant? { periodic ? lastScan + interval : due }

    func isDue(at now: ContinuousClock.Instant) -> Bool { deadline.map { now >= $0 } ?? false }
}
