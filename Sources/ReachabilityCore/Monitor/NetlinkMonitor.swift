import Dispatch
import Glibc
import Logging
import Synchronization

/// Something the monitor re-evaluates after every relevant kernel event.
protocol MonitorClient: AnyObject, Sendable {
    /// This pass's plan over `table`: the lookups, and what to do with their
    /// answers. Asked once per pass, on the reader thread.
    func plan(for table: InterfaceTable) -> MonitorPlan

    /// The monitor stopped for good: its namespace went away. The client has been
    /// dropped; it should stop and tell its user (on its own queue, not here).
    func monitorFailed(_ error: ReachabilityError)
}

/// A client's plan for one pass: its lookups, and what it does with their answers
/// (in the same order), the pass's generation (which orders evaluations) and what
/// changed. `finish` runs on the reader thread: it must not call user code or block.
struct MonitorPlan {
    var requests: [LookupRequest]
    var finish: (_ results: [LookupResult], _ generation: UInt64, _ cause: PassCause) -> Void
}

/// The process-wide monitor of one network namespace: one event socket joined
/// to the link, address, route and rule groups, one request socket for dumps and
/// lookups, and one reader thread that blocks in poll(2) until the kernel has
/// news or `stop()` is called. It serves every client (Reachability instance)
/// of its namespace. Its decisions are pure machines' (``ReaderMachine``,
/// ``LookupBatch``, the rules of ``Shared``); this is their I/O.
final class NetlinkMonitor: Sendable {
    let environment: NetworkEnvironment
    /// The namespace the sockets are in, held open (nil: the process's own).
    let namespace: NetworkNamespace?
    private let shared = LockedValue(Shared())
    /// The request socket, shared by the reader thread and registering threads.
    private let requests = LockedValue<RequestSocket?>(nil)
    private let wake: Int32
    private let thread = LockedValue<JoinableThread?>(nil)
    /// Left when `start()` has finished; its outcome is in `startOutcome`.
    private let started = DispatchGroup()
    private let startOutcome = LockedValue<Result<Void, ReachabilityError>?>(nil)

    init(environment: NetworkEnvironment, namespace: NetworkNamespace?) throws(ReachabilityError) {
        self.environment = environment
        self.namespace = namespace
        switch environment.systemCalls.eventfd() {
        case .success(let fd): wake = fd
        case .failure(let failure): throw failure.reachabilityError
        }
        started.enter()
    }

    deinit {
        systemCalls.close(wake)
    }

    var statistics: MonitorStatistics { shared.withLock { $0.statistics } }
    var clientCount: Int { shared.withLock { $0.clients.count } }
    /// Whether lookups now give settled answers (``Shared/answersSettled(at:)``).
    var answersSettled: Bool { shared.withLock { $0.answersSettled(at: .now) } }

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

    private func startReader() throws(ReachabilityError) {
        let ready = ResultBox<Bool>()
        let semaphore = DispatchSemaphore(value: 0)
        let reader = try JoinableThread(name: "reachability-nl", systemCalls: systemCalls) { [self] in
            run(ready: ready, semaphore: semaphore)
        }
        // Known before the loop can run: a reader that fails by itself detaches it.
        thread.withLock { $0 = reader }
        semaphore.wait()
        do throws(ReachabilityError) {
            _ = try ready.get()
        } catch {
            thread.withLock { $0 = nil }
            reader.join()
            throw error
        }
    }

    /// Stops the reader thread and closes the sockets. Returns after the thread
    /// has exited (unless called on the reader thread itself).
    func stop() {
        shared.withLock { $0.stopRequested = true }
        systemCalls.signal(wake)
        guard
            let reader = thread.withLock({ current -> JoinableThread? in
                defer { current = nil }
                return current
            })
        else { return }
        if reader.isCurrent { reader.detach() } else { reader.join() }
    }

    // MARK: Evaluation

    /// Evaluates `evaluation` now: the published table plus fresh kernel lookups,
    /// with the table's generation.
    func evaluate<E: Evaluation>(_ evaluation: E) throws(ReachabilityError) -> (E.State, UInt64) {
        let (table, generation) = snapshot
        let state = try evaluation.evaluate(in: table) { requests throws(ReachabilityError) in
            let began = ContinuousClock.now
            let results = try lookup(requests)
            let gateways = LookupBatch.gateways(requests, results)
            shared.withLock {
                $0.recordStart(requests, results, gateways: gateways, askedAt: generation, began: began)
            }
            return results
        }
        return (state, generation)
    }

    /// Reads nl80211's view (SSID, signal) of every up Wi-Fi link of `table` in
    /// `environment`'s namespace; returns whether any changed. Links of other types
    /// cost nothing; without nl80211 (no cfg80211) the read fails fast and the
    /// status stays nil.
    static func refreshWireless(_ table: inout InterfaceTable, environment: NetworkEnvironment) -> Bool {
        var changed = false
        for state in table.interfaces where state.classification.type == .wifi && state.isUp {
            let index = state.index
            switch WirelessInfo.read(interfaceIndex: index, environment: environment, timeout: wirelessTimeout) {
            case .success(let status): changed = table.setWireless(status, of: index) || changed
            case .failure(.noNL80211), .failure(.notWireless): changed = table.setWireless(nil, of: index) || changed
            case .failure(.failed):
                // A busy driver or a timeout says nothing new: the last status stands,
                // so the identity's SSID doesn't flap.
                break
            }
        }
        return changed
    }

    /// How long a pass waits for nl80211 per Wi-Fi link (the kernel answers in
    /// microseconds; a driver stuck in a firmware reset must not hold the reader).
    static let wirelessTimeout: Duration = .milliseconds(250)

    /// The published interface table and its generation.
    var snapshot: (InterfaceTable, UInt64) { shared.withLock { ($0.table, $0.generation) } }

    /// Asks the kernel, on the shared request socket.
    func lookup(_ requests: [LookupRequest]) throws(ReachabilityError) -> [LookupResult] {
        guard !requests.isEmpty else { return [] }
        let outcome: Result<[LookupResult], ReachabilityError> = self.requests.withLock { socket in
            guard let socket else {
                return .failure(ReachabilityError(.systemCall, "the netlink monitor is stopped"))
            }
            do throws(ReachabilityError) { return .success(try socket.socket.lookup(requests)) } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    // MARK: Reader thread

    private func run(ready: ResultBox<Bool>, semaphore: DispatchSemaphore) {
        let sysfs = SysfsReader(environment)
        let opened: Opened
        do throws(ReachabilityError) {
            // The sockets are made inside the watched namespace by a short-lived thread
            // (a socket stays bound to the namespace it was created in); this reader
            // thread stays in the process's own namespace, because the Dispatch work it
            // enqueues may start threads that inherit its namespace.
            let environment = environment
            opened = try JoinableThread.inNamespace(namespace) { () throws(ReachabilityError) in
                // Subscribe first, then dump: events that race with the dump queue up
                // on the event socket and are applied after it.
                let events = try NetlinkSocket(
                    receiveBuffer: environment.eventReceiveBuffer, groups: RTNLGroup.monitored, role: "events",
                    datagramsPerRead: Self.datagramsPerRead, firstRead: 2, systemCalls: environment.systemCalls)
                let request = try NetlinkSocket(
                    receiveBuffer: 4 << 20, role: "requests", datagramsPerRead: Self.datagramsPerRead,
                    systemCalls: environment.systemCalls)
                var table = InterfaceTable()
                try Self.load(into: &table, from: request, sysfs: sysfs, environment: environment)
                return Opened(events: events, request: request, table: table)
            }
        } catch {
            ready.set(.failure(error))
            semaphore.signal()
            return
        }
        var table = opened.table
        let published = table
        shared.withLock {
            $0.table = published
            $0.generation = Generation.next()
            // A change the dump already showed makes no pass: the kernel may still be
            // finishing it without a message.
            $0.unsettledSince = .now
            $0.statistics.eventReceiveBuffer = opened.events.receiveBufferSize
        }
        requests.withLock { $0 = RequestSocket(socket: opened.request) }
        // The watch is in place before start() returns, and the namespace is checked
        // once it is: a namespace deleted (or a process gone) between opening it and
        // watching it makes start() throw, rather than going unnoticed for good.
        let watch = Watch(namespace: namespace, leases: sysfs.leases, systemCalls: systemCalls)
        if let loss = namespaceLoss(processExited: false) {
            watch.close()
            requests.withLock { $0 = nil }
            ready.set(.failure(loss))
            semaphore.signal()
            return
        }
        ready.set(.success(true))
        semaphore.signal()
        if let failure = loop(events: opened.events, table: &table, sysfs: sysfs, watch: watch) {
            fail(failure)
        }
        requests.withLock { $0 = nil }
    }

    /// What the reader watches besides netlink: the resolver's configuration
    /// files, and whether the watched namespace still exists (its file, or the
    /// process behind `/proc/PID/ns/net`).
    private struct Watch {
        let files: FileWatch?
        /// A pidfd of the process whose namespace this is; readable once it exits.
        let process: Int32?
        let systemCalls: SystemCalls

        init(namespace: NetworkNamespace?, leases: LeaseFiles?, systemCalls: SystemCalls) {
            self.systemCalls = systemCalls
            let files = try? FileWatch(systemCalls: systemCalls)
            for (directory, names) in FileWatch.resolverFiles(for: namespace, systemCalls: systemCalls) {
                files?.add(directory: directory, names: names, subject: .resolverConfiguration)
            }
            // Any file in the lease directories (that exist now).
            for directory in leases?.directories ?? [] {
                files?.add(directory: directory, names: [], subject: .leases)
            }
            var process: Int32?
            if let namespace, let pid = namespace.owningProcess {
                if case .success(let fd) = systemCalls.pidfdOpen(pid) { process = fd }
            } else if let namespace, let slash = namespace.path.lastIndex(of: "/") {
                let directory = String(namespace.path[..<slash])
                let name = String(namespace.path[namespace.path.index(after: slash)...])
                files?.add(directory: directory.isEmpty ? "/" : directory, names: [name], subject: .namespaceFile)
            }
            self.files = files
            self.process = process
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
        thread.withLock { current -> JoinableThread? in
            defer { current = nil }
            return current
        }?.detach()
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

    /// Replaces `table` with a fresh dump of links and addresses (never routes).
    static func load(
        into table: inout InterfaceTable, from socket: NetlinkSocket, sysfs: SysfsReader,
        environment: NetworkEnvironment
    )
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
        _ = refreshWireless(&fresh, environment: environment)
        table = fresh
    }

    /// Runs until stopped; returns the error when the namespace went away. The
    /// decisions are ``ReaderMachine``'s; this is the I/O around them.
    private func loop(events: NetlinkSocket, table: inout InterfaceTable, sysfs: SysfsReader, watch: Watch)
        -> ReachabilityError?
    {
        defer { watch.close() }
        var machine = ReaderMachine(watchesLeases: sysfs.leases != nil)
        /// The last pass's batch, reused while the plans ask the same.
        var lastBatch: LookupBatch?
        let descriptors = [events.fd, wake, watch.files?.fd ?? -1, watch.process ?? -1]
        while true {
            // Datagrams already read wait when the last drain stopped early after an
            // answer's link went down: poll(2) doesn't see those, so it doesn't wait.
            let held = events.holdsReadDatagrams
            let ready: UInt64
            switch systemCalls.poll(
                descriptors, timeoutMilliseconds: held ? 0 : machine.pollTimeout, subject: "monitor")
            {
            case .success(let bits):
                ready = bits
            case .failure:
                // Only ENOMEM is plausible: back off, then treat it as lost events.
                SystemCalls.sleep(microseconds: 100_000)
                machine.pollFailed()
                continue
            }
            // Bit i: descriptors[i] is readable.
            func readable(_ index: Int) -> Bool { ready & 1 << UInt64(index) != 0 }
            if readable(1) {
                systemCalls.drain(wake)
                if shared.withLock({ $0.stopRequested }) { return nil }
            }
            var wakeup = ReaderWakeup()
            if readable(3) || readable(2) {
                let touched = readable(2) ? watch.files?.drain() ?? [] : []
                if readable(3) || touched.contains(.namespaceFile),
                    let loss = namespaceLoss(processExited: readable(3))
                {
                    return loss
                }
                wakeup.noteFiles(touched)
            }
            if readable(0) || held {
                ReaderDrain.drain(
                    events, into: &table, wakeup: &wakeup, destinations: { lookupDestinations($0) },
                    classify: { InterfaceClassifier.classify($0, sysfs: sysfs) },
                    isGateway: { key in shared.withLock { $0.gatewayNeighbors.contains(key) } },
                    carriesAnswers: { index in shared.withLock { $0.carriesAnswers(index) } })
                wakeup.noteDrained(foreignDatagrams: events.foreignDatagrams)
            }
            let leases = machine.leaseRead(for: wakeup)
            if leases != .none {
                let changed = table.updateMeteredByLease(all: leases == .all) { sysfs.meteredByLease($0) }
                machine.leasesRead(changed: changed, wakeup: &wakeup)
            }
            if wakeup.overruns > 0 {
                log(.info, "netlink events were lost (ENOBUFS): reading links and addresses again")
            }
            if wakeup.malformedDatagrams > 0 {
                log(
                    .info, "malformed netlink messages dropped: reading links and addresses again",
                    ["count": "\(wakeup.malformedDatagrams)"])
            }
            let decision = machine.decide(wakeup)
            if let update = decision.statistics { shared.withLock { $0.statistics.add(update) } }
            if decision.pause { SystemCalls.sleep(microseconds: Self.unrelatedBatchPause) }
            if decision.resync { machine.resyncFinished(succeeded: resync(&table, sysfs: sysfs)) }
            if decision.evaluate {
                // Wi-Fi links: their SSID and signal as of this pass (nl80211 sends no
                // event for a signal change; a pass reads them afresh).
                let wirelessChanged = Self.refreshWireless(&table, environment: environment)
                let publishes = machine.passBegins(decision, wirelessChanged: wirelessChanged)
                let published = publishes ? table : nil
                let routesOnly = decision.cause.routesOnly != nil
                let now = ContinuousClock.now
                let settled = shared.withLock {
                    $0.beginPass(publishing: published, generation: Generation.next(), routesOnly: routesOnly, at: now)
                }
                switch reevaluateAll(
                    cause: decision.cause, lastBatch: &lastBatch, settled: settled,
                    holdingStaleAnswers: machine.mayHoldStaleAnswers(at: now))
                {
                case .delivered: machine.evaluationFinished(succeeded: true)
                case .failed: machine.evaluationFinished(succeeded: false)
                case .stale:
                    machine.answersStale(cause: decision.cause, at: now)
                    shared.withLock { $0.statistics.staleAnswerPasses += 1 }
                }
                // The published copy shares the table's storage: copy it now, after the
                // pass's lines are out, not in the next event's drain.
                if publishes { table.separate() }
            }
            if shared.withLock({ $0.stopRequested }) { return nil }
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

    /// Microseconds to pause after a wake-up that brought only unrelated events,
    /// once ``ReaderMachine/unrelatedStreakBeforePausing`` had in a row.
    static let unrelatedBatchPause: UInt32 = 500

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
                try Self.load(into: &fresh, from: socket.socket, sysfs: sysfs, environment: environment)
                return .success(fresh)
            } catch { return .failure(error) }
        }
        guard case .success(let fresh) = outcome else {
            shared.withLock { $0.statistics.failedResyncs += 1 }
            if case .failure(let error) = outcome {
                log(.info, "reading links and addresses again failed; retrying", ["error": "\(error)"])
            }
            return false
        }
        table = fresh
        shared.withLock { $0.statistics.resyncs += 1 }
        log(.debug, "links and addresses read again", ["interfaces": "\(fresh.interfaces.count)"])
        return true
    }

    /// Whether the kernel may skip routes over `links` without carrier for
    /// `families` (`ignore_routes_with_linkdown` set on one of them or on `all`);
    /// also when that can't be read.
    private func linkdownRoutesMayBeIgnored(_ links: Set<Int32>, _ families: Set<UInt8>) -> Bool {
        requests.withLock { socket in
            guard let socket else { return true }
            return (try? socket.socket.ignoresLinkdownRoutes(links: links, families: families)) ?? true
        }
    }

    /// What a pass came to.
    private enum PassOutcome {
        /// Every client was handed its new state.
        case delivered
        /// The lookups failed.
        case failed
        /// An answer went out of a link that is down: nothing was handed out
        /// (``ReaderMachine/answersStale(cause:at:)``).
        case stale
    }

    /// Looks up every client's target (pipelined, identical lookups shared) and
    /// hands each its new state, unless `holdingStaleAnswers` and an answer goes
    /// out of a link the table has down while another is usable
    /// (``LookupBatch/mayMove(_:in:)``): the kernel is still taking that link down,
    /// and a state from it would be one it is about to take back (a route over the
    /// other link may be the answer in a moment). `settled`: its lookups give
    /// settled answers (``Shared/answersSettled(at:)``). The decisions are
    /// ``LookupBatch``'s; this is the I/O around them.
    private func reevaluateAll(
        cause: PassCause, lastBatch: inout LookupBatch?, settled: Bool, holdingStaleAnswers: Bool
    ) -> PassOutcome {
        let (clients, table, generation, version) = shared.withLock {
            ($0.clientList, $0.table, $0.generation, $0.planVersion)
        }
        guard !clients.isEmpty else { return .delivered }
        // Each client plans once per pass; the plans also say which route events
        // matter until the next pass.
        let plans = clients.map { $0.plan(for: table) }
        let batch = LookupBatch(plans.lazy.map(\.requests), unlessSameAs: lastBatch)
        lastBatch = batch
        let known = shared.withLock { shared in
            shared.keep(batch.requests, plannedAt: version)
            return shared.knownAnswers
        }
        let outcome: LookupBatch.Outcome
        var keptAnswers = 0
        if let reused = batch.reuse(cause: cause, known: known, linkdownRoutesMayBeIgnored: linkdownRoutesMayBeIgnored)
        {
            // Only carrier changed, on links whose routes the kernel keeps using
            // without it: the known answers still hold (no lookup round trips).
            outcome = reused
        } else {
            do throws(ReachabilityError) {
                if let (kept, moved) = batch.unmoved(cause: cause, known: known) {
                    // Only routes changed: the kernel is asked what they cover.
                    let asked = try lookup(moved.map { batch.requests[$0] })
                    outcome = batch.lookedUp(asked, at: moved, keeping: kept)
                    keptAnswers = kept.count - moved.count
                } else {
                    outcome = batch.lookedUp(try lookup(batch.requests))
                }
            } catch {
                outcome = .failed
            }
        }
        shared.withLock {
            $0.record(outcome, of: batch, at: generation, settled: settled)
            $0.statistics.keptAnswers += keptAnswers
        }
        guard let answers = outcome.answers else { return .failed }
        if holdingStaleAnswers, LookupBatch.mayMove(answers, in: table) { return .stale }
        for (index, plan) in plans.enumerated() {
            plan.finish(batch.answers(forPlan: index, in: answers), generation, cause)
        }
        return .delivered
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
