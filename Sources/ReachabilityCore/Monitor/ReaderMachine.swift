/// What the reader thread drained in one wake-up: kernel events and file
/// events, reduced to what the decisions need. Filled by the file watch
/// (``noteFiles(_:)``), by ``ReaderDrain/drain(_:into:wakeup:destinations:classify:isGateway:)``
/// (``noteDrained(foreignDatagrams:)``) and by the lease read
/// (``ReaderMachine/leasesRead(changed:wakeup:)``); read by ``ReaderMachine``.
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

/// The reader thread's decisions, apart from its I/O, as a pure machine in the
/// manner of swift-async-algorithms' state machines: the loop reports what a
/// wake-up brought and what its resync and evaluation did; the machine says how
/// long to poll, whether to pause, resync and evaluate.
///
/// - A wake-up that lost events (or found a malformed message) resyncs; a resync
///   that fails is tried again every second until one works, and every resync is
///   followed by an evaluation pass, cause `resynced`.
/// - A pass whose lookups failed is tried again every second until one works.
/// - A run of ``unrelatedStreakBeforePausing`` wake-ups that brought only events
///   changing no answer is a storm of unrelated routes: each further one pauses
///   briefly so the next events gather (one wake-up per batch, not per route).
///   Anything that matters ends the run.
/// - Leases (``leaseRead(for:)``): every link's are read when the lease watch
///   fired, new links' when the table changed; a changed metered state is a
///   table change.
/// - Publishing (``passBegins(_:wirelessChanged:)``): a pass publishes the table
///   when it changed, when a Wi-Fi link's SSID or signal did, or when neighbor
///   changes are waiting. A neighbor change makes no pass unless it is a
///   gateway's, but it is published with the next pass.
/// - Counters: what each wake-up adds to ``MonitorStatistics`` (``Decision/statistics``).
struct ReaderMachine: Sendable, Equatable {
    /// Whether lease directories are watched (the environment has lease files).
    let watchesLeases: Bool
    /// A pass failed; the next is due even if nothing happens.
    private(set) var retryPending = false
    /// A resync failed (or the poll did); the next is due even if nothing happens.
    private(set) var resyncPending = false
    /// Wake-ups in a row that brought only events changing no answer.
    private(set) var unrelatedStreak = 0
    /// Neighbor changes in the reader's table not yet published.
    private(set) var neighborsUnpublished = false
    /// Since when the passes' answers have gone out of a link that is down
    /// (``answersStale(cause:at:)``), and what caused those passes: the next pass's
    /// cause too.
    private(set) var staleSince: ContinuousClock.Instant?
    private(set) var heldCause = PassCause()

    /// A machine with nothing pending; `watchesLeases`: the environment has lease files.
    init(watchesLeases: Bool = false) {
        self.watchesLeases = watchesLeases
    }

    static let unrelatedStreakBeforePausing = 8
    /// How long the loop waits to retry a failed pass or resync.
    static let retryMilliseconds: Int32 = 1000
    /// How long a pass whose answers were stale waits for the kernel's next message
    /// before it runs again, and for how long passes may hold stale answers back.
    static let staleAnswerWaitMilliseconds: Int32 = 2
    static let staleAnswerHoldLimit: Duration = .milliseconds(50)

    /// What to do after a wake-up, in this order.
    struct Decision: Sendable, Equatable {
        /// Pause briefly before going on (a storm of unrelated events).
        var pause = false
        /// Read the links and addresses afresh, then call ``ReaderMachine/resyncFinished(succeeded:)``.
        var resync = false
        /// Run an evaluation pass (publishing the table first when `tableChanged`),
        /// then call ``ReaderMachine/evaluationFinished(succeeded:)``.
        var evaluate = false
        var tableChanged = false
        var cause = PassCause()
        /// What to add to the monitor's statistics (nil: nothing).
        var statistics: StatisticsUpdate?
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

    /// The poll(2) timeout: none while nothing is pending, a second while a retry is,
    /// ``staleAnswerWaitMilliseconds`` after a pass whose answers were stale.
    var pollTimeout: Int32 {
        if staleSince != nil { return Self.staleAnswerWaitMilliseconds }
        return retryPending || resyncPending ? Self.retryMilliseconds : -1
    }

    /// Whether a pass at `now` may hold back answers that go out of a link that is
    /// down: for ``staleAnswerHoldLimit`` after the first pass that did.
    func mayHoldStaleAnswers(at now: ContinuousClock.Instant) -> Bool {
        guard let staleSince else { return true }
        return now - staleSince < Self.staleAnswerHoldLimit
    }

    /// poll(2) itself failed (only ENOMEM is plausible): events may be lost.
    mutating func pollFailed() { resyncPending = true }

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
        wakeup.cause.otherInterfaceChange = true
    }

    /// Decides what a wake-up calls for.
    mutating func decide(_ wakeup: ReaderWakeup) -> Decision {
        var decision = Decision()
        if wakeup.messages > 0 && !wakeup.changed && !wakeup.needsResync && !resyncPending {
            unrelatedStreak += 1
            decision.pause = unrelatedStreak >= Self.unrelatedStreakBeforePausing
        } else {
            unrelatedStreak = 0
        }
        decision.resync = wakeup.needsResync || resyncPending
        decision.evaluate = wakeup.changed || decision.resync || retryPending || staleSince != nil
        decision.tableChanged = wakeup.tableChanged || decision.resync
        decision.cause = wakeup.cause
        if staleSince != nil { decision.cause.add(heldCause) }
        if decision.resync { decision.cause.resynced = true }
        decision.cause.interfacesChanged = decision.cause.interfacesChanged || decision.tableChanged
        neighborsUnpublished = neighborsUnpublished || wakeup.neighborsChanged
        decision.statistics = Self.statistics(of: wakeup)
        return decision
    }

    /// What `wakeup` adds to the counters: the drain's figures when the socket
    /// was drained, a resolver-configuration change when the watch saw one.
    private static func statistics(of wakeup: ReaderWakeup) -> StatisticsUpdate? {
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

    /// The pass `decision` asked for begins, its Wi-Fi links read afresh
    /// (`wirelessChanged`: an SSID or signal moved). Returns whether it publishes
    /// the table: when the table changed (or was read afresh), when Wi-Fi did,
    /// or when neighbor changes wait; those are then published.
    mutating func passBegins(_ decision: Decision, wirelessChanged: Bool) -> Bool {
        defer { neighborsUnpublished = false }
        return decision.tableChanged || neighborsUnpublished || wirelessChanged
    }

    /// The resync a decision asked for worked, or not (then it is retried).
    mutating func resyncFinished(succeeded: Bool) { resyncPending = !succeeded }

    /// The pass a decision asked for worked, or not (then it is retried).
    mutating func evaluationFinished(succeeded: Bool) {
        retryPending = !succeeded
        staleSince = nil
        heldCause = PassCause()
    }

    /// The pass's answers went out of a link that is down, and it delivered nothing:
    /// the kernel is still taking the link down (IPv6 deletes the link's routes one by
    /// one after it sent the link's message; until then it answers with them). The
    /// pass runs again at the kernel's next message, or after
    /// ``staleAnswerWaitMilliseconds``, with `cause` added to its own (the clients
    /// were told nothing of it); ``mayHoldStaleAnswers(at:)`` bounds for how long.
    mutating func answersStale(cause: PassCause, at now: ContinuousClock.Instant) {
        retryPending = false
        if staleSince == nil { staleSince = now }
        heldCause = cause
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
    /// the next poll sees it). `destinations` gives what the
    /// clients look up in the table as it stands; it is asked at most once, and only when a route event
    /// came: a route whose prefix covers none of them can't change an answer, so
    /// a storm of unrelated routes costs parsing, not lookups.
    ///
    /// It stops early after a datagram in which a link that `carriesAnswers` (one
    /// the last pass's answers go out of) lost IFF_UP or its carrier, or went
    /// away (``ReaderWakeup/answerLinkLost``): that decides those answers, and the
    /// kernel's other messages about it (a dozen route, neighbour and address
    /// deletions follow a link going down) can wait for the pass after. A pass
    /// over the events up to that datagram is one a reader woken a little earlier
    /// would have made. What the source still holds is the caller's next drain,
    /// without waiting in poll(2).
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
            case .datagram(let bytes):
                let malformed = NetlinkParser.forEach(bytes) { item in
                    wakeup.messages += 1
                    switch item.message {
                    case .route(let route, _):
                        wakeup.cause.noteRoute(route.prefix)
                        // Once a pass is due, a route matters only to whether it may
                        // reuse the last answers (a carrier change so far alone).
                        guard !wakeup.cause.relevantRoute, !wakeup.changed || wakeup.cause.carrierOnlyLinks != nil
                        else { return true }
                        let targets = known ?? destinations(table)
                        known = targets
                        if targets.contains(where: route.covers) {
                            wakeup.changed = true
                            wakeup.relevantRoutes += 1
                            wakeup.cause.relevantRoute = true
                        }
                    case .rule:
                        wakeup.changed = true
                        wakeup.cause.rulesChanged = true
                    case .netconf:
                        // ignore_routes_with_linkdown (among others) decides whether routes
                        // over a link without carrier are used: it can move an answer.
                        wakeup.changed = true
                        wakeup.cause.netconfChanged = true
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
                        let change = table.applyLink(link, classify: classify)
                        guard change != .none else { return true }
                        if wasUsable, table[link.index]?.isUsable == false, carriesAnswers(link.index) {
                            wakeup.answerLinkLost = true
                        }
                        wakeup.changed = true
                        wakeup.tableChanged = true
                        if change == .carrierOnly {
                            wakeup.cause.carrierChangedLinks.insert(link.index)
                        } else {
                            wakeup.cause.otherInterfaceChange = true
                        }
                    default:
                        if table.apply(item.message, classify: classify) {
                            wakeup.changed = true
                            wakeup.tableChanged = true
                            wakeup.cause.otherInterfaceChange = true
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
}
