import Dispatch
import Glibc
import Logging
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem
import Synchronization

/// Something the monitor re-evaluates after every relevant kernel event.
protocol MonitorClient: AnyObject, Sendable {
    /// This pass's plan over `table`: the lookups, and what to do with their
    /// answers. Asked once per pass, on the reader thread.
    func plan(for table: InterfaceTable) -> MonitorPlan

    /// The monitor stopped for good: its namespace went away. The client has been
    /// dropped; it should stop and tell its user (on its own queue, not here).
    func monitorFailed(_ error: ReachabilityError)

    /// The resolver's configuration files changed (or everything was read afresh):
    /// told before the pass's plans, on the reader thread.
    func resolverConfigurationChanged()
}

extension MonitorClient {
    func resolverConfigurationChanged() {}
}

/// A client's plan for one pass: its lookups, and what it does with their answers
/// (in the same order), the pass's generation (which orders evaluations) and what
/// changed. `finish` runs on the reader thread: it must not call user code or block.
struct MonitorPlan {
    var requests: [LookupRequest]
    var finish: (_ results: [LookupResult], _ generation: UInt64, _ cause: PassCause) -> Void
}

/// The process-wide monitor of one network namespace: one event socket joined
/// to the link, address, route and rule groups, and one request socket for dumps
/// and lookups, read by the reader thread every monitor shares (``ReaderThread``),
/// which sleeps until the kernel has news for one of them. It serves every client
/// (Reachability instance) of its namespace. Its decisions are pure machines'
/// (``ReaderMachine``, ``LookupBatch``, the rules of ``Shared``); this is their I/O.
final class NetlinkMonitor: Sendable {
    let environment: NetworkEnvironment
    /// The namespace the sockets are in, held open (nil: the process's own).
    let namespace: NetworkNamespace?
    private let shared = LockedValue(Shared())
    /// The request socket, shared by the reader thread and registering threads.
    private let requests = LockedValue<RequestSocket?>(nil)
    /// The reader thread it is registered with, its token there and its descriptors.
    private let registration = LockedValue<Registration?>(nil)
    /// Left when `start()` has finished; its outcome is in `startOutcome`.
    private let started = DispatchGroup()
    private let startOutcome = LockedValue<Result<Void, ReachabilityError>?>(nil)
    /// Reads the Wi-Fi links' SSID and signal off the reader thread.
    let wireless: WirelessReader

    init(environment: NetworkEnvironment, namespace: NetworkNamespace?) throws(ReachabilityError) {
        self.environment = environment
        self.namespace = namespace
        wireless = WirelessReader(namespace: namespace, systemCalls: environment.systemCalls)
        started.enter()
    }

    var statistics: MonitorStatistics { shared.withLock { $0.statistics } }
    var clientCount: Int { shared.withLock { $0.clients.count } }

    /// Adds one registration of a client; throws why the monitor stopped, if it did.
    func add(_ client: any MonitorClient) throws(ReachabilityError) {
        let failure = shared.withLock { shared -> ReachabilityError? in
            guard shared.failure == nil else { return shared.failure }
            shared.clients[ObjectIdentifier(client), default: (client, 0)].registrations += 1
            shared.invalidatePlans()
            return nil
        }
        if let failure { throw failure }
    }

    /// Why the monitor stopped by itself, if it did.
    var failure: ReachabilityError? { shared.withLock { $0.failure } }

    /// Drops one registration of a client; returns how many clients remain.
    func remove(_ client: any MonitorClient) -> Int {
        shared.withLock {
            let key = ObjectIdentifier(client)
            if let entry = $0.clients[key] {
                $0.clients[key] = entry.registrations > 1 ? (entry.client, entry.registrations - 1) : nil
            }
            $0.invalidatePlans()
            return $0.clients.count
        }
    }

    // MARK: Lifecycle

    /// Starts the reader thread and waits until it has subscribed and loaded the
    /// initial link and address dump. Throws what the thread could not do.
    func start() throws(ReachabilityError) {
        do throws(ReachabilityError) {
            try startReader()
            startOutcome.withLock { $0 = .success(()) }
            started.leave()
        } catch {
            startOutcome.withLock { $0 = .failure(error) }
            started.leave()
            throw error
        }
    }

    /// Whether the monitor has started (its table is the kernel's dump) and has not
    /// been stopped: only then may a one-off evaluation read its table. A monitor
    /// is registered before it starts, and its table is empty until the dump.
    var isServing: Bool {
        guard case .success = startOutcome.withLock({ $0 }) else { return false }
        return shared.withLock { !$0.stopRequested && $0.failure == nil }
    }

    /// Waits until another thread's `start()` has finished; throws its error.
    func waitUntilStarted() throws(ReachabilityError) {
        started.wait()
        try startOutcome.withLock { $0 }?.get()
    }

    /// Leaves the reader thread and closes the sockets. Returns once the reader
    /// thread no longer steps this monitor (at once when called on it: its next
    /// wake-up drops it).
    func stop() {
        shared.withLock { $0.stopRequested = true }
        leaveReaderThread()
    }

    private func leaveReaderThread() {
        guard
            let registration = registration.withLock({ current -> Registration? in
                defer { current = nil }
                return current
            })
        else { return }
        registration.thread.unregister(registration.token, descriptors: registration.descriptors)
        requests.withLock { $0 = nil }
    }

    /// Asks the reader thread to step this monitor now (a Wi-Fi read done, an
    /// earlier expiry to wait for).
    private func poke() {
        guard let registration = registration.withLock({ $0 }) else { return }
        registration.thread.poke(registration.token)
    }

    private struct Registration: Sendable {
        let thread: ReaderThread
        let token: UInt64
        let descriptors: [Int32]
    }

    // MARK: Evaluation

    /// Evaluates `evaluation` now: the published table plus fresh kernel lookups,
    /// with the table's generation. The answers' gateways count until the next pass,
    /// and a route lifetime among them is re-checked at its end.
    func evaluate<E: Evaluation>(_ evaluation: E) throws(ReachabilityError) -> (E.State, UInt64) {
        let (table, generation) = snapshot
        let state = try evaluation.evaluate(in: table) { requests throws(ReachabilityError) in
            let results = try lookup(requests)
            let gateways = LookupBatch.gateways(requests, results)
            let earlier = shared.withLock { $0.recordStart(results, gateways: gateways, at: .now) }
            // The reader waits until the expiry it knows: tell it of an earlier one.
            if earlier { poke() }
            return results
        }
        return (state, generation)
    }

    /// Reads nl80211's view (SSID, signal) of every up Wi-Fi link of `table` in
    /// `environment`'s namespace, one short-lived socket per link (a one-off
    /// evaluation's; a monitor's are its ``WirelessReader``'s); returns whether any
    /// changed. Without nl80211 (no cfg80211) a read fails fast.
    static func refreshWireless(_ table: inout InterfaceTable, environment: NetworkEnvironment) -> Bool {
        var outcomes: [Int32: Result<WirelessStatus, WirelessInfo.Unavailable>] = [:]
        for index in table.upWirelessLinks {
            outcomes[index] = WirelessInfo.read(
                interfaceIndex: index, environment: environment, timeout: WirelessReader.defaultTimeout)
        }
        return table.apply(outcomes)
    }

    /// The published interface table and its generation.
    var snapshot: (InterfaceTable, UInt64) { shared.withLock { ($0.table, $0.generation) } }

    /// Asks the kernel, on the shared request socket; `behindChanges`: after the
    /// change in progress is complete (``NetlinkSocket/lookup(_:behindChanges:)``).
    func lookup(_ requests: [LookupRequest], behindChanges: Bool = true) throws(ReachabilityError)
        -> [LookupResult]
    {
        guard !requests.isEmpty else { return [] }
        let outcome: Result<[LookupResult], ReachabilityError> = self.requests.withLock { socket in
            guard let socket else {
                return .failure(ReachabilityError(.systemCall, "the netlink monitor is stopped"))
            }
            do throws(ReachabilityError) {
                return .success(try socket.socket.lookup(requests, behindChanges: behindChanges))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    // MARK: Start

    /// Opens the sockets inside the namespace, loads the first table, sets up the
    /// watches and joins the reader thread; throws what it could not do.
    private func startReader() throws(ReachabilityError) {
        let sysfs = SysfsReader(environment)
        // The sockets are made inside the watched namespace by a short-lived thread
        // (a socket stays bound to the namespace it was created in), shared by the
        // starts that come together (``NamespaceEntry``); no long-lived thread changes
        // namespace, because the Dispatch work it enqueues may start threads that
        // inherit its namespace.
        let environment = environment
        let opened = try NamespaceEntry.run(in: namespace) { () throws(ReachabilityError) in
            // Subscribe first, then dump: events that race with the dump queue up
            // on the event socket and are applied after it.
            let events = try NetlinkSocket(
                receiveBuffer: environment.eventReceiveBuffer, groups: RTNLGroup.monitored,
                optionalGroups: RTNLGroup.monitoredWhereAvailable, role: .events,
                datagramsPerRead: Self.datagramsPerRead, firstRead: 2, systemCalls: environment.systemCalls)
            let request = try NetlinkSocket(
                receiveBuffer: 4 << 20, role: .requests, datagramsPerRead: Self.datagramsPerRead,
                systemCalls: environment.systemCalls)
            var table = InterfaceTable()
            try Self.load(into: &table, from: request, sysfs: sysfs)
            return Opened(events: events, request: request, table: table)
        }
        var table = opened.table
        // The first table has its Wi-Fi links' status (a start waits for it; a pass never does).
        let links = table.upWirelessLinks
        if !links.isEmpty { _ = table.apply(wireless.readSynchronously(links)) }
        let published = table
        shared.withLock {
            $0.table = published
            $0.generation = Generation.next()
            $0.statistics.eventReceiveBuffer = opened.events.receiveBufferSize
        }
        requests.withLock { $0 = RequestSocket(socket: opened.request) }
        // The watch is in place before start() returns, and the namespace is checked
        // once it is: a namespace deleted (or a process gone) between opening it and
        // watching it makes start() throw, rather than going unnoticed for good.
        let reader = Reader(
            monitor: self, events: opened.events, table: table, sysfs: sysfs,
            watch: Watch(namespace: namespace, systemCalls: systemCalls))
        let thread: ReaderThread
        do throws(ReachabilityError) {
            thread = try ReaderThread.reserve(systemCalls)
        } catch {
            requests.withLock { $0 = nil }
            throw error
        }
        registration.withLock {
            $0 = Registration(thread: thread, token: reader.token, descriptors: reader.descriptors.map(\.fd))
        }
        if let files = thread.files {
            Watch.add(
                to: files, owner: reader.token, namespace: namespace, leases: sysfs.leases, systemCalls: systemCalls)
        }
        do throws(ReachabilityError) {
            if let loss = namespaceLoss(processExited: false) { throw loss }
            try thread.add(reader)
        } catch {
            thread.files?.remove(owner: reader.token)
            registration.withLock { $0 = nil }
            thread.release()
            requests.withLock { $0 = nil }
            throw error
        }
    }

    /// What the reader watches besides netlink: the resolver's configuration
    /// files, the lease directories and whether the watched namespace still exists
    /// (its file, in the reader thread's file watch; or the process behind
    /// `/proc/PID/ns/net`, by a pidfd of its own).
    struct Watch {
        /// A pidfd of the process whose namespace this is; readable once it exits.
        let process: Int32?
        let systemCalls: SystemCalls

        init(namespace: NetworkNamespace?, systemCalls: SystemCalls) {
            self.systemCalls = systemCalls
            var process: Int32?
            if let pid = namespace?.owningProcess, case .success(let fd) = systemCalls.pidfdOpen(pid) {
                process = fd
            }
            self.process = process
        }

        /// Adds `owner`'s files to the reader thread's watch: the resolver's, the lease
        /// directories (that exist now), and a named namespace's file.
        static func add(
            to files: FileWatch, owner: UInt64, namespace: NetworkNamespace?, leases: LeaseFiles?,
            systemCalls: SystemCalls
        ) {
            for (directory, names) in FileWatch.resolverFiles(for: namespace, systemCalls: systemCalls) {
                files.add(directory: directory, names: names, subject: .resolverConfiguration, owner: owner)
            }
            for directory in leases?.directories ?? [] {
                files.add(directory: directory, names: [], subject: .leases, owner: owner)
            }
            if let namespace, namespace.owningProcess == nil, let slash = namespace.path.lastIndex(of: "/") {
                let directory = String(namespace.path[..<slash])
                let name = String(namespace.path[namespace.path.index(after: slash)...])
                files.add(
                    directory: directory.isEmpty ? "/" : directory, names: [name], subject: .namespaceFile, owner: owner
                )
            }
        }

        func close() {
            if let process { systemCalls.close(process) }
        }
    }

    /// The monitor's namespace is gone: every client is dropped and told, the
    /// monitor leaves the registry, and its reader thread cleans up after itself.
    private func fail(_ error: ReachabilityError) {
        log(.info, "the watched network namespace is gone: the monitor stops", ["error": "\(error)"])
        let clients = shared.withLock { shared -> [any MonitorClient] in
            shared.failure = error
            shared.stopRequested = true
            defer { shared.clients = [:] }
            return shared.clients.values.map(\.client)
        }
        MonitorRegistry.forget(self)
        leaveReaderThread()
        for client in clients { client.monitorFailed(error) }
    }

    /// Whether the watched namespace is still there; the error to report if not.
    private func namespaceLoss(processExited: Bool) -> ReachabilityError? {
        guard let namespace else { return nil }
        if processExited {
            return ReachabilityError(
                .namespace, "network namespace \(namespace.path) is gone: its process exited")
        }
        guard !namespace.isStillAtPath else { return nil }
        let now = systemCalls.openNetworkNamespace(namespace.path)
        if case .success(let fd) = now { systemCalls.close(fd) }
        let what =
            if case .success = now {
                "now names another namespace"
            } else if namespace.owningProcess != nil {
                "is gone: its process exited"
            } else {
                "was deleted"
            }
        return ReachabilityError(.namespace, "network namespace \(namespace.path) \(what)")
    }

    /// What the namespace thread hands back: sockets bound to the namespace and the first table.
    private struct Opened: @unchecked Sendable {
        // @unchecked: made on the namespace thread and handed to the reader exactly once.
        let events: NetlinkSocket
        let request: NetlinkSocket
        let table: InterfaceTable
    }

    /// Replaces `table` with a fresh dump of links and addresses (never routes). The
    /// Wi-Fi status is the caller's to read.
    static func load(into table: inout InterfaceTable, from socket: NetlinkSocket, sysfs: SysfsReader)
        throws(ReachabilityError)
    {
        let links = try socket.dump(NLMsgType.getLink)
        let addresses = try socket.dump(NLMsgType.getAddr)
        let neighbors = try socket.dump(NLMsgType.getNeigh, headerSize: 12)  // struct ndmsg
        var fresh = InterfaceTable()
        for message in links + addresses + neighbors {
            fresh.apply(message) { table.reuseOrClassify($0, sysfs: sysfs) }
        }
        if sysfs.leases != nil { _ = fresh.updateMeteredByLease(all: true) { sysfs.meteredByLease($0) } }
        table = fresh
    }

    /// One wake-up of this monitor on the reader thread: `ready` says which of its
    /// descriptors woke it (bits of ``ReaderThread/Descriptor``, and
    /// ``ReaderThread/pokeBit``, ``ReaderThread/lostBit``), or none when its time
    /// came. Returns when it wants to be stepped again without news (nil: only for
    /// news). The decisions are ``ReaderMachine``'s; this is the I/O around them.
    fileprivate func step(_ reader: Reader, ready: UInt64, files touched: Set<FileWatch.Subject>)
        -> ContinuousClock.Instant?
    {
        if shared.withLock({ $0.stopRequested }) { return nil }
        func readable(_ descriptor: ReaderThread.Descriptor) -> Bool { ready & 1 << descriptor.rawValue != 0 }
        if readable(.process), let loss = namespaceLoss(processExited: true) {
            fail(loss)
            return nil
        }
        if let until = reader.pausedUntil {
            // A storm pause: its end, whatever else came meanwhile (a file change waits in
            // its queue; a poke's cause is kept where the poke came from).
            let now = ContinuousClock.now
            guard now >= until else { return until }
            reader.pausedUntil = nil
            reader.thread?.pauseEvents(of: reader, false)
            return next(carryOut(reader.machine.paused(at: now), at: now, reader: reader), reader)
        }
        var wakeup = ReaderWakeup()
        if ready & ReaderThread.lostBit != 0 { wakeup.needsResync = true }
        // Datagrams already read wait when the last drain stopped early after an
        // answer's link went down: epoll doesn't see those, so the thread doesn't wait.
        let held = reader.events.holdsReadDatagrams
        if readable(.files) {
            if touched.contains(.namespaceFile), let loss = namespaceLoss(processExited: false) {
                fail(loss)
                return nil
            }
            wakeup.noteFiles(touched)
        }
        if readable(.events) || held {
            ReaderDrain.drain(
                reader.events, into: &reader.table, wakeup: &wakeup, destinations: { lookupDestinations($0) },
                classify: { [sysfs = reader.sysfs] in InterfaceClassifier.classify($0, sysfs: sysfs) },
                isGateway: { key in shared.withLock { $0.gatewayNeighbors.contains(key) } },
                carriesAnswers: { [machine = reader.machine] in machine.carriesAnswers($0) })
            wakeup.noteDrained(foreignDatagrams: reader.events.foreignDatagrams)
        }
        wakeup.noteWireless(changed: reader.table.apply(wireless.take()))
        wakeup.startsExpire = shared.withLock { shared in
            defer { shared.startsExpire = nil }
            return shared.startsExpire
        }
        let leases = reader.machine.leaseRead(for: wakeup)
        if leases != .none {
            let sysfs = reader.sysfs
            let changed = reader.table.updateMeteredByLease(all: leases == .all) { sysfs.meteredByLease($0) }
            reader.machine.leasesRead(changed: changed, wakeup: &wakeup)
        }
        if wakeup.overruns > 0 {
            log(.info, "netlink events were lost (ENOBUFS): reading links and addresses again")
        }
        if wakeup.malformedDatagrams > 0 {
            log(
                .info, "malformed netlink messages dropped: reading links and addresses again",
                ["count": "\(wakeup.malformedDatagrams)"])
        }
        if let update = ReaderMachine.statistics(of: wakeup) { shared.withLock { $0.statistics.add(update) } }
        let now = ContinuousClock.now
        return next(carryOut(reader.machine.woke(wakeup, at: now), at: now, reader: reader), reader)
    }

    /// When `reader` wants its next step, after `wait` (the machine's word).
    private func next(_ wait: Wait, _ reader: Reader) -> ContinuousClock.Instant? {
        if shared.withLock({ $0.stopRequested }) { return nil }
        switch wait {
        case .pause(let until):
            reader.pausedUntil = until
            reader.thread?.pauseEvents(of: reader, true)
            return until
        case .poll(let milliseconds):
            if reader.events.holdsReadDatagrams { return .now }
            return milliseconds < 0 ? nil : .now + .milliseconds(milliseconds)
        }
    }

    /// What the machine waits for after a wake-up's work.
    private enum Wait {
        /// News, or this long (-1: no limit).
        case poll(Int32)
        /// The storm pause's end: the event socket is not watched until then.
        case pause(until: ContinuousClock.Instant)
    }

    /// Does what `action` says, and what the machine says after it, until it says to
    /// poll; returns the poll's timeout. A pass plans, looks up and delivers here;
    /// what it asks and keeps is the machine's. `now`: the wake-up's time, until the
    /// kernel's answers come.
    private func carryOut(_ action: ReaderMachine.Action, at now: ContinuousClock.Instant, reader: Reader) -> Wait {
        var action = action
        var now = now
        var plans: [MonitorPlan] = []
        var generation: UInt64 = 0
        var planVersion: UInt64 = 0
        var published = false
        while true {
            switch action {
            case .poll(let timeout):
                return .poll(timeout)
            case .pause(let microseconds):
                // Not a sleep: the reader thread serves the other namespaces meanwhile.
                return .pause(until: now + .microseconds(microseconds))
            case .resync:
                action = reader.machine.resynced(resync(&reader.table, sysfs: reader.sysfs))
            case .plan(let cause, let publishes):
                generation = Generation.next()
                published = publishes
                let (clients, planned, version) = shared.withLock { shared in
                    shared.beginPass(publishing: publishes ? reader.table : nil, generation: generation)
                    return (shared.clientList, shared.table, shared.planVersion)
                }
                planVersion = version
                if cause.resolverConfigurationChanged || cause.resynced {
                    for client in clients { client.resolverConfigurationChanged() }
                }
                // Each client plans once per pass, on the published table; the plans
                // also say which route events matter until the next pass.
                plans = clients.map { $0.plan(for: planned) }
                action = reader.machine.planned(plans.lazy.map(\.requests), at: now)
            case .lookUp(let requests, let behindChanges):
                let answers = try? lookup(requests, behindChanges: behindChanges)
                if answers == nil { shared.withLock { $0.statistics.failedPasses += 1 } }
                // The answers' lifetimes, and the poll after the pass, count from here.
                now = .now
                action = reader.machine.lookedUp(answers, at: now)
            case .deliver(let delivery):
                shared.withLock {
                    $0.keep(delivery.batch.requests, plannedAt: planVersion)
                    $0.gatewayNeighbors = delivery.gateways
                    $0.statistics.keptAnswers += delivery.keptAnswers
                }
                for (index, plan) in plans.enumerated() {
                    plan.finish(
                        delivery.batch.answers(forPlan: index, in: delivery.answers), generation, delivery.cause)
                }
                // After the pass's lines are out: the published copy shares the table's
                // storage (copied now, not in the next event's drain), and the Wi-Fi
                // links' SSID and signal are read anew (nl80211 sends no event for a
                // signal change), unless a Wi-Fi read is what this pass was for.
                if published { reader.table.separate() }
                let links = reader.table.upWirelessLinks
                if !links.isEmpty, !delivery.cause.isWirelessOnly {
                    wireless.read(links) { [weak self] in self?.poke() }
                }
                plans = []
                action = reader.machine.delivered(at: now)
            }
        }
    }

    /// Datagrams each of the monitor's sockets reads per system call: a link going
    /// down sends about a dozen (the link, its routes, neighbours and addresses),
    /// a pass's lookups are answered by as many datagrams as requests. The event
    /// socket reads a burst's first two datagrams (the first is a link's message
    /// when one went down, which a pass may start from: ``ReaderDrain``), then up
    /// to this many. Address
    /// space: 16 × 64 KiB per socket, of which only the pages datagrams fill are
    /// memory.
    static let datagramsPerRead = 16

    /// Every distinct destination the clients looked up in the last pass: what
    /// makes a route event relevant. Planned again when a client joins or leaves or
    /// says its lookups changed (``lookupsChanged()``), not asked for per event.
    private func lookupDestinations(_ table: InterfaceTable) -> [IPAddress] {
        let (destinations, requests, clients, version) = shared.withLock {
            ($0.plannedDestinations, $0.plannedRequests, $0.plannedRequests == nil ? $0.clientList : [], $0.planVersion)
        }
        if let destinations { return destinations }
        let planned = requests ?? clients.flatMap { $0.plan(for: table).requests }
        let distinct = Array(Set(planned.lazy.map(\.destination)))
        shared.withLock {
            if requests == nil { $0.keep(planned, plannedAt: version) }
            if $0.planVersion == version { $0.plannedDestinations = distinct }
        }
        return distinct
    }

    /// Watches `path` (and where it points) as the resolver's configuration, once: its
    /// change makes a pass whose cause says so, and clients read it again then
    /// (``MonitorClient/resolverConfigurationChanged()``). Returns whether it is
    /// watched: not without the reader's file watch, or when inotify refuses.
    func watchResolverFile(_ path: String) -> Bool {
        guard let registration = registration.withLock({ $0 }), let files = registration.thread.files else {
            return false
        }
        var paths = [path]
        if case .success(let resolved) = systemCalls.realpath(path), resolved != path { paths.append(resolved) }
        return paths.allSatisfy { path in
            guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/") else { return false }
            let directory = String(path[..<slash])
            return files.add(
                directory: directory.isEmpty ? "/" : directory, names: [String(path[path.index(after: slash)...])],
                subject: .resolverConfiguration, owner: registration.token)
        }
    }

    /// A client's lookups changed outside a pass (a hostname resolved to new
    /// addresses): route relevance is planned again.
    func lookupsChanged() {
        shared.withLock { $0.invalidatePlans() }
    }

    /// Replaces the table with a fresh dump. Returns false when the dump failed
    /// (the caller retries: dropped events are never silently forgotten).
    private func resync(_ table: inout InterfaceTable, sysfs: SysfsReader) -> Bool {
        let outcome: Result<InterfaceTable, ReachabilityError> = requests.withLock { socket in
            guard let socket else { return .failure(ReachabilityError(.systemCall, "stopped")) }
            var fresh = table
            do throws(ReachabilityError) {
                try Self.load(into: &fresh, from: socket.socket, sysfs: sysfs)
                return .success(fresh)
            } catch { return .failure(error) }
        }
        guard case .success(var fresh) = outcome else {
            shared.withLock { $0.statistics.failedResyncs += 1 }
            if case .failure(let error) = outcome {
                log(.info, "reading links and addresses again failed; retrying", ["error": "\(error)"])
            }
            return false
        }
        // The Wi-Fi links keep their status until the read after the pass.
        for link in table.interfaces where link.wireless != nil && fresh[link.index]?.name == link.name {
            _ = fresh.setWireless(link.wireless, of: link.index)
        }
        table = fresh
        shared.withLock { $0.statistics.resyncs += 1 }
        log(.debug, "links and addresses read again", ["interfaces": "\(fresh.interfaces.count)"])
        return true
    }

}

/// Evaluation generations, process-wide and monotonic: an evaluation from a
/// monitor that has since been replaced (stop, then start on a new monitor) can
/// never outrank the new monitor's.
enum Generation {
    private static let counter = Atomic<UInt64>(0)
    static func next() -> UInt64 { counter.add(1, ordering: .relaxed).newValue }
}

/// The request socket, boxed so the lock can own it.
struct RequestSocket: @unchecked Sendable {
    // @unchecked: the socket is only used inside NetlinkMonitor.requests' lock.
    let socket: NetlinkSocket
}

extension InterfaceTable {
    /// Keeps the classification of a link that is already known under the same
    /// name and kind: sysfs is read once per interface, not once per event.
    func reuseOrClassify(_ link: LinkMessage, sysfs: SysfsReader) -> InterfaceClassification {
        if let known = self[link.index], known.name == link.name, known.kind == link.kind,
            known.hardwareType == link.hardwareType
        {
            return known.classification
        }
        return InterfaceClassifier.classify(link, sysfs: sysfs)
    }
}

extension NetlinkMonitor {
    /// Logs to the environment's logger (nothing without one), with the namespace.
    /// The message and metadata are made only when a logger takes the level.
    func log(
        _ level: Logger.Level, _ message: @autoclosure () -> String,
        _ metadata: @autoclosure () -> [String: String] = [:]
    ) {
        guard let logger = environment.logger, logger.logLevel <= level else { return }
        var all: Logger.Metadata = ["namespace": "\(environment.networkNamespacePath ?? "own")"]
        for (key, value) in metadata() { all[key] = "\(value)" }
        logger.log(level: level, "\(message())", metadata: all)
    }
}

extension NetlinkMonitor {
    /// The system calls of the monitor's environment: every call the monitor, its
    /// sockets and its watches make goes through them (DESIGN §4.1).
    var systemCalls: SystemCalls { environment.systemCalls }
}

extension NetlinkMonitor {
    /// A monitor's part of the reader thread: its event socket, its watches, its
    /// table and its machine, touched by the reader thread only, one step at a time
    /// (``NetlinkMonitor/step(_:ready:)``). Its descriptors close when the thread drops it.
    final class Reader: @unchecked Sendable {
        // @unchecked: stepped on the reader thread only, after it was handed over.
        let monitor: NetlinkMonitor
        let token = ReaderThread.token()
        let events: NetlinkSocket
        let sysfs: SysfsReader
        let watch: Watch
        var table: InterfaceTable
        var machine: ReaderMachine
        /// The end of a storm pause in progress.
        var pausedUntil: ContinuousClock.Instant?

        init(monitor: NetlinkMonitor, events: NetlinkSocket, table: InterfaceTable, sysfs: SysfsReader, watch: Watch) {
            self.monitor = monitor
            self.events = events
            self.table = table
            self.sysfs = sysfs
            self.watch = watch
            machine = ReaderMachine(watchesLeases: sysfs.leases != nil)
        }

        deinit { watch.close() }

        /// The thread it is registered with.
        var thread: ReaderThread? { monitor.registration.withLock { $0?.thread } }

        /// What the reader thread waits on for it.
        var descriptors: [(descriptor: ReaderThread.Descriptor, fd: Int32)] {
            [(.events, events.fd)] + (watch.process.map { [(.process, $0)] } ?? [])
        }

        /// One step; when to be stepped again without news.
        func step(ready: UInt64, files: Set<FileWatch.Subject>) -> ContinuousClock.Instant? {
            monitor.step(self, ready: ready, files: files)
        }
    }
}
