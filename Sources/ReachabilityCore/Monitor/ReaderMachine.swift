@_spi(Testing) import ReachabilityBase

/// What the reader thread drained in one wake-up: kernel events and file
/// events, reduced to what the decisions need. Filled by the file watch
/// (``noteFiles(_:)``), by ``ReaderDrain/drain(_:into:wakeup:destinations:classify:isGateway:carriesAnswers:)``
/// (``noteDrained(foreignDatagrams:)``), by the lease read
/// (``ReaderMachine/leasesRead(changed:wakeup:)``) and by the Wi-Fi reads
/// (``noteWireless(changed:)``); read by ``ReaderMachine``.
struct ReaderWakeup: Sendable, Equatable {
    /// The event socket was drained (it was readable).
    var drained = false
    /// The event source's count of datagrams it dropped as not the kernel's (a
    /// total, not this wake-up's), when it was drained.
    var foreignDatagrams = 0
    /// A file in a watched lease directory changed: every link's leases are read again.
    var leasesChanged = false
    /// Netlink messages read.
    var messages = 0
    /// Something happened that may change an answer (a pass is due).
    var changed = false
    /// The interface table changed (it is published with the pass).
    var tableChanged = false
    /// A neighbor's link-layer address changed in the table (published with the
    /// next pass; a pass is due only when the neighbor is a gateway).
    var neighborsChanged = false
    /// Events were lost (ENOBUFS), a message was malformed, or the socket failed:
    /// the table must be read afresh.
    var needsResync = false
    /// Overruns the kernel reported (ENOBUFS), for the statistics.
    var overruns = 0
    /// Datagrams whose messages did not parse, for the statistics.
    var malformedDatagrams = 0
    /// Route events whose prefix covered a looked-up destination.
    var relevantRoutes = 0
    /// A link that carried one of the last pass's answers went down or away: the
    /// drain stopped after its datagram, so that the pass starts at once (the
    /// datagrams after it, already read or not, are the next drain's).
    var answerLinkLost = false
    /// The drain stopped so with datagrams already read still waiting: the pass
    /// begins before they are handled (counted: ``MonitorStatistics/earlyPasses``).
    var leftReadDatagrams = false
    /// The earliest end of a route's lifetime among the answers that starts looked
    /// up since the last wake-up (``NetlinkMonitor/Shared/startsExpire``).
    var startsExpire: ContinuousClock.Instant?
    /// What changed, for the clients (hostnames re-resolve on some causes only).
    var cause = PassCause()

    /// Notes what the file watch reported. Comes before the drain: a resolver
    /// change makes a pass due, after which the drain no longer weighs routes.
    mutating func noteFiles(_ touched: Set<FileWatch.Subject>) {
        if touched.contains(.resolverConfiguration) {
            changed = true
            cause.resolverConfigurationChanged = true
        }
        leasesChanged = touched.contains(.leases)
    }

    /// Notes that the event socket was drained, and its count of foreign datagrams.
    mutating func noteDrained(foreignDatagrams: Int) {
        drained = true
        self.foreignDatagrams = foreignDatagrams
    }

    /// Notes the Wi-Fi reads that came in (``WirelessReader``); `changed`: an SSID or
    /// signal in the table moved. The table is published with a pass, which asks
    /// the kernel nothing for it.
    mutating func noteWireless(changed: Bool) {
        guard changed else { return }
        self.changed = true
        tableChanged = true
        cause.wirelessChanged = true
    }
}

/// Which links' DHCP leases a wake-up reads (``LeaseFiles``: `ANDROID_METERED`).
enum LeaseRead: Sendable, Equatable {
    /// None.
    case none
    /// Links whose leases were never read: those the table just gained.
    case newLinks
    /// Every link's: a lease file changed.
    case all
}

/// The reader thread's decisions, apart from its I/O, as one pure machine in the
/// manner of swift-async-algorithms' state machines: the loop reports what
/// happened (a wake-up, a pause, a resync, the clients' plans, the kernel's
/// answers, the deliveries), and the machine answers with the one thing to do
/// next (an ``Action``), until it says to poll. It owns what a pass decides by:
/// the last pass's answers and batch, the earliest end of a route lifetime among
/// them, what failed and is retried, and the timing rules.
///
/// Its rules, each a **correctness** rule (without it a state the kernel no
/// longer gives stays reported) or a **speed** rule (without it the same states
/// come, later or at more cost); each correctness rule has a kernel test that
/// fails when it is removed:
/// - **Ask what moved** (speed): a pass caused by route events alone, or by what
///   moves no route's answer (a resolver file, a gateway's link-layer address, a
///   Wi-Fi SSID or signal), asks the kernel only the lookups a drained prefix
///   covers, and those with no known answer, and keeps the others: a lookup's
///   answer is a route whose prefix covers its destination
///   (``PassCause/routesOnly``). Any other cause asks every lookup.
///   **Correctness:** a cause that moves answers without a route event of its own
///   (a link, address or carrier change, a rule, a device setting, a nexthop
///   object, lost events, more route events than a cause keeps, an expiry) is
///   never routes-only (``PassCause/routesOnly`` names each one's test).
/// - **Re-check at expiry** (correctness): a route with a lifetime stops being
///   used when it ends, with no message until the IPv6 garbage collection (up to
///   30 s later): the machine polls until the earliest end among the known
///   answers (and the starts'), plus ``expiryMargin``, and asks every lookup then
///   (`SilentRouteChangeTests.ipv6RouteExpires`, `.ipv6RouteLifetimeRenewed`).
/// - **Retry** (correctness): a resync or a pass that failed is tried again after
///   ``retryMilliseconds``, until one works, with its cause added to the next
///   (`SystemCallFaultIntegrationTests.failingLookupSend`).
/// - **Storm pause** (speed): after ``unrelatedStreakBeforePausing`` wake-ups in a
///   row that brought only events changing no answer, each further one pauses
///   ``stormPauseMicroseconds`` so the next events gather (one wake-up per batch,
///   not per route). Anything that matters ends the run.
/// - Leases (``leaseRead(for:)``): every link's are read when the lease watch
///   fired, new links' when the table changed; a changed metered state is a
///   table change.
/// - Publishing: a pass publishes the table when it changed (or was read afresh),
///   or when neighbour changes wait: a neighbour change makes no pass unless it is
///   a gateway's, but it is published with the next pass.
///
/// What every lookup waits for — the whole of the change whose message was read —
/// is the socket's (``NetlinkSocket/lookup(_:)``), not a timing rule.
struct ReaderMachine: Sendable {
    /// Whether lease directories are watched (the environment has lease files).
    let watchesLeases: Bool
    /// Where the machine is: what it waits for the loop to report.
    private(set) var phase = Phase.waiting
    /// What failed and is tried again.
    private(set) var retry = Retry.nothing
    /// Wake-ups in a row that brought only events changing no answer.
    private(set) var unrelatedStreak = 0
    /// Neighbor changes in the reader's table not yet published.
    private(set) var neighborsUnpublished = false
    /// The last pass's answers; nil before the first and after a failed one.
    private(set) var known: KnownAnswers?
    /// The last pass's batch (the running pass's, once planned), reused while the
    /// plans ask the same.
    private(set) var lastBatch: LookupBatch?
    /// When the earliest route lifetime among the known answers (and the starts')
    /// has ended, ``expiryMargin`` included: a pass is due then.
    private(set) var expiry: ContinuousClock.Instant?
    /// When the running pass's lookups were asked. (Not in ``Phase/lookingUp(_:asked:kept:)``:
    /// a payload without spare bits makes every phase change a runtime call.)
    private var askedAt = ContinuousClock.Instant.now

    /// A machine with nothing pending; `watchesLeases`: the environment has lease files.
    init(watchesLeases: Bool = false) {
        self.watchesLeases = watchesLeases
    }

    static let unrelatedStreakBeforePausing = 8
    static let stormPauseMicroseconds: UInt32 = 500
    /// How long the loop waits to retry a failed pass or resync.
    static let retryMilliseconds: Int32 = 1000
    /// How long after a route's lifetime ends by its answer the kernel has surely
    /// stopped using it: the answer's `rta_expires` is cut down to a tick of 10 ms,
    /// and the kernel compares in jiffies (up to 10 ms more).
    static let expiryMargin: Duration = .milliseconds(25)

    /// What the machine waits for.
    enum Phase: Sendable, Equatable {
        /// The next wake-up (``woke(_:at:)``).
        case waiting
        /// The end of a storm pause (``paused()``), then `pending`, if any.
        case pausing(PendingPass?)
        /// The outcome of a resync (``resynced(_:)``).
        case resyncing(PendingPass)
        /// The clients' plans (``planned(_:)``).
        case planning(PassCause)
        /// The kernel's answers to the lookups of the pass's batch (``lastBatch``) at
        /// `asked` (nil: all of them), the others in `kept`, asked at ``askedAt``
        /// (``lookedUp(_:at:)``).
        case lookingUp(PassCause, asked: [Int]?, kept: [LookupResult])
        /// The deliveries' end (``delivered(at:)``).
        case delivering
    }

    /// What failed and is tried again, with the cause of the pass it was for.
    enum Retry: Sendable, Equatable {
        case nothing
        /// A pass's lookups failed.
        case pass(PassCause)
        /// A resync failed: the next wake-up resyncs, then passes.
        case resync(PassCause)
    }

    /// A pass a wake-up calls for: its cause, whether the table is read afresh
    /// first, and whether the pass publishes the table.
    struct PendingPass: Sendable, Equatable {
        var cause: PassCause
        var resync: Bool
        var publishes: Bool
    }

    /// What the loop does next.
    enum Action: Sendable, Equatable {
        /// Poll for the next wake-up, at most this long (-1: no limit).
        case poll(timeoutMilliseconds: Int32)
        /// Sleep this long, then report ``paused()``.
        case pause(microseconds: UInt32)
        /// Read the links and addresses afresh, then report ``resynced(_:)``.
        case resync
        /// Begin a pass for `cause`: publish the table (when `publishes`), ask each
        /// client for its plan, then report the plans' requests (``planned(_:)``).
        case plan(PassCause, publishes: Bool)
        /// Ask the kernel these requests, then report the answers (``lookedUp(_:at:)``);
        /// `behindChanges`: behind the change in progress (``PassCause/waitsForChanges``).
        case lookUp([LookupRequest], behindChanges: Bool)
        /// Hand each plan its answers, then report ``delivered(at:)``.
        case deliver(Delivery)
    }

    /// A pass's outcome, for the clients.
    struct Delivery: Sendable, Equatable {
        /// The pass's batch: each plan's answers are ``LookupBatch/answers(forPlan:in:)``.
        var batch: LookupBatch
        /// One answer per request of the batch.
        var answers: [LookupResult]
        var cause: PassCause
        /// The gateways the answers name: they replace the last pass's.
        var gateways: Set<InterfaceTable.NeighborKey>
        /// How many answers were kept without asking the kernel.
        var keptAnswers: Int
    }

    /// What one wake-up adds to ``MonitorStatistics``.
    struct StatisticsUpdate: Sendable, Equatable {
        var eventsReceived = 0
        var overruns = 0
        var malformedMessages = 0
        var relevantRouteEvents = 0
        var resolverConfigurationChanges = 0
        var earlyPasses = 0
        /// The event source's count of foreign datagrams (a total: it replaces
        /// the last); nil when it was not drained.
        var foreignDatagrams: Int?
    }

    /// Which links' leases `wakeup` calls for, once drained: every link's when a
    /// lease file changed, new links' when the table changed, none otherwise (or
    /// without lease files). Report the outcome to ``leasesRead(changed:wakeup:)``.
    func leaseRead(for wakeup: ReaderWakeup) -> LeaseRead {
        guard watchesLeases else { return .none }
        if wakeup.leasesChanged { return .all }
        return wakeup.tableChanged ? .newLinks : .none
    }

    /// The leases ``leaseRead(for:)`` asked for were read; `changed`: a link's
    /// metered state moved. That is a table change, and a pass.
    func leasesRead(changed: Bool, wakeup: inout ReaderWakeup) {
        guard changed else { return }
        wakeup.changed = true
        wakeup.tableChanged = true
        wakeup.cause.interfacesChanged = true
    }

    /// A wake-up at `now` brought `wakeup` (or nothing, when the poll timed out).
    mutating func woke(_ wakeup: ReaderWakeup, at now: ContinuousClock.Instant) -> Action {
        guard case .waiting = phase else { preconditionFailure("woke while \(phase)") }
        var resync = wakeup.needsResync
        if wakeup.messages > 0 && !wakeup.changed && !resync, case .nothing = retry {
            unrelatedStreak += 1
        } else {
            unrelatedStreak = 0
        }
        let pause = unrelatedStreak >= Self.unrelatedStreakBeforePausing
        neighborsUnpublished = neighborsUnpublished || wakeup.neighborsChanged
        var cause = wakeup.cause
        if let ends = wakeup.startsExpire { expiry = min(expiry ?? ends, ends) }
        if let expiry, now >= expiry {
            cause.answersExpired = true
            self.expiry = nil
        }
        switch retry {
        case .nothing: break
        case .pass(let failed): cause.add(failed)
        case .resync(let failed):
            cause.add(failed)
            resync = true
        }
        let due = wakeup.changed || resync || retry != .nothing || cause.answersExpired
        retry = .nothing
        if resync { cause.resynced = true }
        let pending =
            due
            ? PendingPass(
                cause: cause, resync: resync, publishes: wakeup.tableChanged || resync || neighborsUnpublished)
            : nil
        if pause {
            phase = .pausing(pending)
            return .pause(microseconds: Self.stormPauseMicroseconds)
        }
        return begin(pending, at: now)
    }

    /// The storm pause ended.
    mutating func paused(at now: ContinuousClock.Instant) -> Action {
        guard case .pausing(let pending) = phase else { preconditionFailure("paused while \(phase)") }
        return begin(pending, at: now)
    }

    private mutating func begin(_ pending: PendingPass?, at now: ContinuousClock.Instant) -> Action {
        guard let pending else {
            phase = .waiting
            return .poll(timeoutMilliseconds: timeout(at: now))
        }
        if pending.resync {
            phase = .resyncing(pending)
            return .resync
        }
        return plan(pending)
    }

    private mutating func plan(_ pending: PendingPass) -> Action {
        if pending.publishes { neighborsUnpublished = false }
        phase = .planning(pending.cause)
        return .plan(pending.cause, publishes: pending.publishes)
    }

    /// The resync ``Action/resync`` asked for worked, or not (it is tried again a
    /// second later); the pass goes on either way.
    mutating func resynced(_ succeeded: Bool) -> Action {
        guard case .resyncing(let pending) = phase else { preconditionFailure("resynced while \(phase)") }
        if !succeeded { retry = .resync(pending.cause) }
        return plan(pending)
    }

    /// The clients' plans, each given as its requests, in the order they are
    /// answered in: the machine decides what the kernel is asked (ask what moved).
    mutating func planned(_ plans: some Collection<[LookupRequest]>, at now: ContinuousClock.Instant) -> Action {
        guard case .planning(let cause) = phase else { preconditionFailure("planned while \(phase)") }
        let batch = LookupBatch(plans, unlessSameAs: lastBatch)
        lastBatch = batch
        guard let prefixes = cause.routesOnly, let known else { return askAll(batch, cause, at: now) }
        var asked: [Int] = []
        for (index, request) in batch.requests.enumerated()
        where prefixes.contains(where: { $0.covers(request.destination) }) || known.answer(to: request) == nil {
            asked.append(index)
        }
        // A route covering every lookup (a default route, with one family's targets)
        // asks them all, with nothing to keep.
        guard asked.count < batch.requests.count else { return askAll(batch, cause, at: now) }
        var kept: [LookupResult] = []
        kept.reserveCapacity(batch.requests.count)
        for request in batch.requests { kept.append(known.answer(to: request) ?? .noRoute(errno: 0)) }
        phase = .lookingUp(cause, asked: asked, kept: kept)
        askedAt = now
        return asked.isEmpty
            ? lookedUp([], at: now)
            : .lookUp(asked.map { batch.requests[$0] }, behindChanges: cause.waitsForChanges)
    }

    private mutating func askAll(_ batch: LookupBatch, _ cause: PassCause, at now: ContinuousClock.Instant) -> Action {
        phase = .lookingUp(cause, asked: nil, kept: [])
        askedAt = now
        return batch.requests.isEmpty
            ? lookedUp([], at: now) : .lookUp(batch.requests, behindChanges: cause.waitsForChanges)
    }

    /// The kernel's answers to the lookups ``Action/lookUp(_:behindChanges:)`` asked, in order, at
    /// `now`; nil when they failed (the pass is tried again a second later, and no
    /// answer is known until one works).
    mutating func lookedUp(_ answers: [LookupResult]?, at now: ContinuousClock.Instant) -> Action {
        guard case .lookingUp(let cause, let asked, var all) = phase, let batch = lastBatch else {
            preconditionFailure("looked up while \(phase)")
        }
        // The phase lets go of the kept answers, so that they are not copied when filled in.
        phase = .delivering
        guard let answers, answers.count == (asked?.count ?? batch.requests.count) else {
            known = nil
            if case .resync = retry {} else { retry = .pass(cause) }
            phase = .waiting
            return .poll(timeoutMilliseconds: timeout(at: now))
        }
        if let asked {
            for (index, answer) in zip(asked, answers) { all[index] = answer }
        } else {
            all = answers
        }
        known = KnownAnswers(requests: batch.distinct, results: all)
        // Re-check at expiry: the kept answers' ends are in the expiry already (it
        // is never later than theirs, and asks everything when it comes). It goes
        // only when every lookup was asked after it: one that came while they were
        // asked, or that a kept answer holds, stands (and is due at once), and an
        // answer looked up in its route's last tick shows no lifetime at all.
        if let current = expiry, asked == nil, current <= askedAt { expiry = nil }
        for answer in answers {
            guard case .route(let route) = answer, let lifetime = route.remainingLifetime else { continue }
            let ends = now + lifetime + Self.expiryMargin
            expiry = min(expiry ?? ends, ends)
        }
        return .deliver(
            Delivery(
                batch: batch, answers: all, cause: cause, gateways: LookupBatch.gateways(batch.requests, all),
                keptAnswers: all.count - answers.count))
    }

    /// The deliveries ``Action/deliver(_:)`` asked for are done.
    mutating func delivered(at now: ContinuousClock.Instant) -> Action {
        guard case .delivering = phase else { preconditionFailure("delivered while \(phase)") }
        phase = .waiting
        return .poll(timeoutMilliseconds: timeout(at: now))
    }

    /// The poll(2) timeout at `now`: until the expiry, and at most a second while a
    /// retry is pending; none otherwise.
    private func timeout(at now: ContinuousClock.Instant) -> Int32 {
        var timeout: Int32 = retry == .nothing ? -1 : Self.retryMilliseconds
        if let expiry {
            let (seconds, attoseconds) = (expiry - now).components
            // Rounded up: a poll that ends before the expiry would find nothing due.
            let milliseconds = max(0, seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
            let clamped = Int32(clamping: milliseconds)
            timeout = timeout < 0 ? clamped : min(timeout, clamped)
        }
        return timeout
    }

    /// Whether a known answer goes out of `link` (its going down ends the drain).
    func carriesAnswers(_ link: Int32) -> Bool { known?.goOut(of: link) ?? false }

    /// What `wakeup` adds to the counters: the drain's figures when the socket
    /// was drained, a resolver-configuration change when the watch saw one.
    static func statistics(of wakeup: ReaderWakeup) -> StatisticsUpdate? {
        let resolver = wakeup.cause.resolverConfigurationChanged ? 1 : 0
        guard wakeup.drained || resolver > 0 else { return nil }
        var update = StatisticsUpdate(resolverConfigurationChanges: resolver)
        if wakeup.drained {
            update.eventsReceived = wakeup.messages
            update.overruns = wakeup.overruns
            update.malformedMessages = wakeup.malformedDatagrams
            update.relevantRouteEvents = wakeup.relevantRoutes
            update.earlyPasses = wakeup.leftReadDatagrams ? 1 : 0
            update.foreignDatagrams = wakeup.foreignDatagrams
        }
        return update
    }
}

/// Where the reader's events come from: the monitor's event socket, or scripted
/// datagrams in unit tests.
protocol NetlinkEventSource: AnyObject {
    /// One datagram, an overrun, or nothing queued; never blocks.
    func receive() throws(ReachabilityError) -> NetlinkSocket.Received
    /// Datagrams dropped because the kernel did not send them.
    var foreignDatagrams: Int { get }
    /// Whether datagrams already read from the kernel wait to be handed out: poll(2)
    /// doesn't see them, so a drain doesn't stop while there are any.
    var holdsReadDatagrams: Bool { get }
}

extension NetlinkSocket: NetlinkEventSource {}

/// The reader's drain: reads what is queued (at most ``drainLimit`` datagrams)
/// and applies it to the interface table, noting in a ``ReaderWakeup`` what the
/// decisions need. No locks, no kernel: the monitor passes its socket, unit
/// tests a scripted source.
enum ReaderDrain {
    /// Most datagrams handled per wake-up before evaluating; bounds the work (and
    /// the staleness) of one pass during a storm. The rest waits in the socket.
    static let drainLimit = 8192

    /// Drains `source` into `table` and `wakeup` (``drainLimit`` datagrams, and
    /// those of the last read past it: the rest stays in the kernel's queue, where
    /// the next poll sees it). Its rules:
    /// - **Route relevance** (speed; its guard is correctness): `destinations` gives
    ///   what the clients look up in the table as it stands, asked at most once and
    ///   only when a route event came; a route whose prefix covers none of them
    ///   can't change an answer and makes no pass, so a storm of unrelated routes
    ///   costs parsing, not lookups (`ReachabilityIntegrationTests.unrelatedRoutesCostNoPass`).
    /// - **Lost events resync** (correctness): ENOBUFS, a truncated or malformed
    ///   datagram, or a failing socket asks for the table afresh
    ///   (`ReachabilityIntegrationTests.overrunResync`).
    /// - **Nothing older than the resync** (correctness): after an overrun what the
    ///   socket still queues is discarded (``discardQueued(_:wakeup:)``): the
    ///   kernel reports the overrun before the datagrams queued ahead of the lost
    ///   ones, and those, applied after the resync's dump, would bring back a state
    ///   the lost ones had replaced (`CLISmokeTests.watchStdoutNeverRead`).
    /// - **Every address message is a change** (correctness): see the `.newAddress` case
    ///   (`SilentRouteChangeTests.ipv6AddressKeptAtAdminDown`).
    /// - **The answers' link lost** (speed): it stops early after a datagram in
    ///   which a link that `carriesAnswers` (one the last pass's answers go out of)
    ///   lost IFF_UP or its carrier, or went away (``ReaderWakeup/answerLinkLost``):
    ///   that decides those answers, and the kernel's other messages about it (a
    ///   dozen route, neighbour and address deletions follow a link going down) can
    ///   wait for the pass after. A pass over the events up to that datagram is one
    ///   a reader woken a little earlier would have made. What the source still
    ///   holds is the caller's next drain, without waiting in poll(2).
    static func drain(
        _ source: some NetlinkEventSource, into table: inout InterfaceTable, wakeup: inout ReaderWakeup,
        destinations: (InterfaceTable) -> [IPAddress], classify: (LinkMessage) -> InterfaceClassification,
        isGateway: (InterfaceTable.NeighborKey) -> Bool = { _ in false },
        carriesAnswers: (Int32) -> Bool = { _ in false }
    ) {
        var known: [IPAddress]?
        var handled = 0
        while (handled < drainLimit || source.holdsReadDatagrams) && !wakeup.answerLinkLost {
            handled += 1
            let received: NetlinkSocket.Received
            do throws(ReachabilityError) {
                received = try source.receive()
            } catch {
                wakeup.needsResync = true
                return
            }
            switch received {
            case .empty:
                return
            case .overrun:
                // The kernel dropped events: our picture may be wrong. Keep the socket, re-dump.
                wakeup.needsResync = true
                wakeup.overruns += 1
                discardQueued(source, wakeup: &wakeup)
                return
            case .datagram(let bytes):
                let malformed = NetlinkParser.forEach(bytes) { item in
                    wakeup.messages += 1
                    switch item.message {
                    case .route(let route, _):
                        wakeup.cause.noteRoute(route.prefix)
                        // Once a pass is due, a route's prefix is noted for it, and
                        // whether it covers a destination no longer matters.
                        guard !wakeup.changed else { return true }
                        let targets = known ?? destinations(table)
                        known = targets
                        if targets.contains(where: route.covers) {
                            wakeup.changed = true
                            wakeup.relevantRoutes += 1
                        }
                    case .rule:
                        wakeup.changed = true
                        wakeup.cause.rulesChanged = true
                    case .netconf:
                        // ignore_routes_with_linkdown (among others) decides whether routes
                        // over a link without carrier are used: it can move an answer.
                        wakeup.changed = true
                        wakeup.cause.netconfChanged = true
                    case .nexthop:
                        // Routes using a nexthop object change with it, without route
                        // events (a deleted one's IPv4 routes go silently).
                        wakeup.changed = true
                        wakeup.cause.nexthopsChanged = true
                    case .overrun:
                        wakeup.needsResync = true
                    case .neighbor(let neighbor, _):
                        // Kept for the network identity; only a gateway's new address
                        // makes a pass (the LAN's other hosts come and go all the time).
                        guard table.apply(item.message, classify: classify) else { return true }
                        wakeup.neighborsChanged = true
                        if isGateway(
                            InterfaceTable.NeighborKey(index: neighbor.index, address: neighbor.address.withoutZone))
                        {
                            wakeup.changed = true
                            wakeup.cause.gatewayNeighborChanged = true
                        }
                    case .newLink(let link):
                        let wasUsable = table[link.index]?.isUsable ?? false
                        guard table.applyLink(link, classify: classify) else { return true }
                        if wasUsable, table[link.index]?.isUsable == false, carriesAnswers(link.index) {
                            wakeup.answerLinkLost = true
                        }
                        wakeup.changed = true
                        wakeup.tableChanged = true
                        wakeup.cause.interfacesChanged = true
                    case .newAddress(let address), .deletedAddress(let address):
                        // Every address message of a known link makes a pass that asks the
                        // kernel, even one that says what the table holds: the kernel
                        // changes an address without one (an IPv6 address kept at an admin
                        // down turns tentative), and its next message may then say what
                        // the table, now stale, still holds, while the kernel's choice of
                        // source moved back with it.
                        guard table[address.index] != nil else { return true }
                        wakeup.changed = true
                        if table.apply(item.message, classify: classify) {
                            wakeup.tableChanged = true
                            wakeup.cause.interfacesChanged = true
                        } else {
                            wakeup.cause.addressesRestated = true
                        }
                    default:
                        if table.apply(item.message, classify: classify) {
                            wakeup.changed = true
                            wakeup.tableChanged = true
                            wakeup.cause.interfacesChanged = true
                            if case .deletedLink(let link) = item.message, carriesAnswers(link.index) {
                                wakeup.answerLinkLost = true
                            }
                        }
                    }
                    return true
                }
                if malformed != nil {
                    wakeup.needsResync = true
                    wakeup.malformedDatagrams += 1
                }
            }
        }
        wakeup.leftReadDatagrams = wakeup.answerLinkLost && source.holdsReadDatagrams
    }

    /// Reads and drops what `source` queues (at most ``drainLimit`` datagrams, and
    /// those already read), after an overrun: all of it is older than the dump the
    /// resync takes next, on another socket. Another overrun meanwhile is counted.
    static func discardQueued(_ source: some NetlinkEventSource, wakeup: inout ReaderWakeup) {
        var discarded = 0
        while discarded < drainLimit || source.holdsReadDatagrams {
            discarded += 1
            switch try? source.receive() {
            case .datagram?: continue
            case .overrun?: wakeup.overruns += 1
            case .empty?, nil: return
            }
        }
    }
}
