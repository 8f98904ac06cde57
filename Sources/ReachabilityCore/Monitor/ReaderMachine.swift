/// What the reader thread drained in one wake-up: kernel events and file
/// events, reduced to what the decisions need. Filled by
/// ``ReaderDrain/drain(_:into:wakeup:destinations:classify:)`` and by the file
/// watch; read by ``ReaderMachine``.
struct ReaderWakeup: Sendable, Equatable {
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
    /// What changed, for the clients (hostnames re-resolve on some causes only).
    var cause = PassCause()
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
struct ReaderMachine: Sendable, Equatable {
    /// A pass failed; the next is due even if nothing happens.
    private(set) var retryPending = false
    /// A resync failed (or the poll did); the next is due even if nothing happens.
    private(set) var resyncPending = false
    /// Wake-ups in a row that brought only events changing no answer.
    private(set) var unrelatedStreak = 0

    static let unrelatedStreakBeforePausing = 8
    /// How long the loop waits to retry a failed pass or resync.
    static let retryMilliseconds: Int32 = 1000

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
    }

    /// The poll(2) timeout: none while nothing is pending, a second while a retry is.
    var pollTimeout: Int32 { retryPending || resyncPending ? Self.retryMilliseconds : -1 }

    /// poll(2) itself failed (only ENOMEM is plausible): events may be lost.
    mutating func pollFailed() { resyncPending = true }

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
        decision.evaluate = wakeup.changed || decision.resync || retryPending
        decision.tableChanged = wakeup.tableChanged || decision.resync
        decision.cause = wakeup.cause
        if decision.resync { decision.cause.resynced = true }
        decision.cause.interfacesChanged = decision.cause.interfacesChanged || decision.tableChanged
        return decision
    }

    /// The resync a decision asked for worked, or not (then it is retried).
    mutating func resyncFinished(succeeded: Bool) { resyncPending = !succeeded }

    /// The pass a decision asked for worked, or not (then it is retried).
    mutating func evaluationFinished(succeeded: Bool) { retryPending = !succeeded }
}

/// Where the reader's events come from: the monitor's event socket, or scripted
/// datagrams in unit tests.
protocol NetlinkEventSource: AnyObject {
    /// One datagram, an overrun, or nothing queued; never blocks.
    func receive() throws(ReachabilityError) -> NetlinkSocket.Received
    /// Datagrams dropped because the kernel did not send them.
    var foreignDatagrams: Int { get }
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

    /// Drains `source` into `table` and `wakeup`. `destinations` gives what the
    /// clients look up in the table as it stands; it is asked at most once, and only when a route event
    /// came: a route whose prefix covers none of them can't change an answer, so
    /// a storm of unrelated routes costs parsing, not lookups.
    static func drain(
        _ source: some NetlinkEventSource, into table: inout InterfaceTable, wakeup: inout ReaderWakeup,
        destinations: (InterfaceTable) -> [IPAddress], classify: (LinkMessage) -> InterfaceClassification,
        isGateway: (InterfaceTable.NeighborKey) -> Bool = { _ in false }
    ) {
        var known: [IPAddress]?
        for _ in 0..<drainLimit {
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
                let parsed = NetlinkParser.parse(bytes)
                wakeup.messages += parsed.messages.count
                for item in parsed.messages {
                    switch item.message {
                    case .route(let route, _):
                        wakeup.cause.noteRoute(route.prefix)
                        // Once a pass is due, a route matters only to whether it may
                        // reuse the last answers (a carrier change so far alone).
                        guard !wakeup.cause.relevantRoute, !wakeup.changed || wakeup.cause.carrierOnlyLinks != nil
                        else { continue }
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
                        guard table.apply(item.message, classify: classify) else { continue }
                        wakeup.neighborsChanged = true
                        if isGateway(
                            InterfaceTable.NeighborKey(index: neighbor.index, address: neighbor.address.withoutZone))
                        {
                            wakeup.changed = true
                            wakeup.cause.gatewayNeighborChanged = true
                        }
                    case .newLink(let link):
                        let before = table[link.index]
                        guard table.apply(item.message, classify: classify) else { continue }
                        wakeup.changed = true
                        wakeup.tableChanged = true
                        if let before, let after = table[link.index], before.differsOnlyInCarrier(from: after) {
                            wakeup.cause.carrierChangedLinks.insert(link.index)
                        } else {
                            wakeup.cause.otherInterfaceChange = true
                        }
                    default:
                        if table.apply(item.message, classify: classify) {
                            wakeup.changed = true
                            wakeup.tableChanged = true
                            wakeup.cause.otherInterfaceChange = true
                        }
                    }
                }
                if parsed.malformed != nil {
                    wakeup.needsResync = true
                    wakeup.malformedDatagrams += 1
                }
            }
        }
    }
}
