extension NetlinkMonitor {
    /// The monitor's state under its lock, with the pure rules that change it
    /// when plans change, a pass begins or ends, or a start looks up outside a
    /// pass. The monitor takes the lock and calls them.
    struct Shared: Sendable {
        /// The published interface table: what one-off evaluations read.
        var table = InterfaceTable()
        /// Each client with how many registrations it holds (a start superseded by
        /// stop + start unregisters its own registration, not the newer one).
        var clients: [ObjectIdentifier: (client: any MonitorClient, registrations: Int)] = [:]
        /// The clients, each once. A loop of concrete types: `values.map(\.client)`
        /// here ran as an unspecialized generic, looking up type metadata at run
        /// time on every pass.
        var clientList: [any MonitorClient] {
            var list: [any MonitorClient] = []
            list.reserveCapacity(clients.count)
            for entry in clients.values { list.append(entry.client) }
            return list
        }
        /// The destinations of the clients' latest plans (nil: plan again). What
        /// makes a route event relevant.
        var plannedDestinations: [IPAddress]?
        /// The distinct requests of the latest pass's plans (nil: plan again).
        var plannedRequests: [LookupRequest]?
        /// Bumped whenever plans may have changed (a client joined or left, or its
        /// lookups changed): plans made before a bump are not kept.
        var planVersion: UInt64 = 0
        /// Bumped each time the table or the routing state changes.
        var generation: UInt64 = 0
        /// The answers known to hold since the last change that could move one: what
        /// a pass after a carrier change alone reuses, and a pass after route events
        /// alone keeps where no route covers them (nil after a failed pass).
        var knownAnswers: KnownAnswers?
        /// When the last pass caused by more than route events began (a link, an
        /// address, a carrier, a rule, a setting, a resync…), or the monitor opened:
        /// the kernel may still be changing routes without a message then
        /// (``answersSettled(at:)``).
        var unsettledSince: ContinuousClock.Instant?
        /// The gateways the last pass's answers named, on their links: a change of
        /// one's link-layer address (the network identity) makes a pass.
        var gatewayNeighbors: Set<InterfaceTable.NeighborKey> = []
        var stopRequested = false
        /// Why the monitor stopped by itself (its namespace went away), if it did.
        var failure: ReachabilityError?
        var statistics = MonitorStatistics()
    }
}

extension NetlinkMonitor.Shared {
    /// Whether an answer known to hold goes out of `link`: its going down ends the
    /// drain at once (``ReaderDrain``). Asked only when a link goes down or away.
    func carriesAnswers(_ link: Int32) -> Bool { knownAnswers?.goOut(of: link) ?? false }

    mutating func invalidatePlans() {
        plannedRequests = nil
        plannedDestinations = nil
        planVersion &+= 1
    }

    /// Keeps a pass's distinct requests unless plans changed since they were made;
    /// their destinations are worked out when a route event first needs them, and
    /// kept while the passes' requests stay the same.
    mutating func keep(_ requests: [LookupRequest], plannedAt version: UInt64) {
        guard version == planVersion, plannedRequests != requests else { return }
        plannedRequests = requests
        plannedDestinations = nil
    }

    /// A pass begins at `generation`, at `now`: it publishes `table` when given one
    /// (``ReaderMachine/passBegins(_:wirelessChanged:)`` says), and counts. A pass
    /// caused by more than route events (`routesOnly` false) unsettles the answers
    /// for a while. Returns whether the pass's lookups give settled answers
    /// (``answersSettled(at:)``).
    mutating func beginPass(
        publishing table: InterfaceTable?, generation: UInt64, routesOnly: Bool, at now: ContinuousClock.Instant
    ) -> Bool {
        if let table { self.table = table }
        self.generation = generation
        if !routesOnly { unsettledSince = now }
        statistics.evaluationPasses += 1
        return answersSettled(at: now)
    }

    /// How long after a pass caused by more than route events the kernel's answers
    /// count as unsettled. The kernel changes routes without a message after the
    /// message of the change that causes it (IPv4 routes over a link going down,
    /// or whose source address went, are retired after the link's or address's
    /// message; dead next hops revive after an address's), inside the same system
    /// call, while lookups don't wait for it: a lookup in that window may get the
    /// answer of before.
    static let settleTime: Duration = .seconds(1)

    /// Whether lookups at `now` give settled answers: no pass caused by more than
    /// route events began within ``settleTime`` before (nor did the monitor open).
    /// Only settled answers are kept by a pass after route events alone
    /// (``LookupBatch/unmoved(cause:known:)``); unsettled ones are asked again by the
    /// next pass that asks the kernel (a carrier-only pass reuses them as they are).
    func answersSettled(at now: ContinuousClock.Instant) -> Bool {
        guard let unsettledSince else { return true }
        return now - unsettledSince >= Self.settleTime
    }

    /// The pass at `generation` over `batch` ended with `outcome`. Reused answers
    /// still hold at `generation`; the kernel's are the known ones now (`settled`:
    /// looked up when ``answersSettled(at:)``); after a failure none are known. The
    /// answers' gateways replace the last pass's.
    mutating func record(
        _ outcome: LookupBatch.Outcome, of batch: LookupBatch, at generation: UInt64, settled: Bool
    ) {
        switch outcome {
        case .reused(_, let gateways):
            knownAnswers?.stillHold(at: generation)
            statistics.reusedAnswerPasses += 1
            gatewayNeighbors = gateways
        case .lookedUp(let answers, let gateways):
            knownAnswers = KnownAnswers(
                requests: batch.distinct, results: answers, generation: generation, settled: settled)
            gatewayNeighbors = gateways
        case .failed:
            statistics.failedPasses += 1
            knownAnswers = nil
        }
    }

    /// A start looked up `requests` (answers `results`, naming `gateways`) on the
    /// table of `generation`, beginning at `began`. Its gateways count until the
    /// next pass replaces them; its answers join the known ones if no pass came in
    /// between (unsettling them all if it asked while they were unsettled).
    mutating func recordStart(
        _ requests: [LookupRequest], _ results: [LookupResult], gateways: Set<InterfaceTable.NeighborKey>,
        askedAt generation: UInt64, began: ContinuousClock.Instant
    ) {
        gatewayNeighbors.formUnion(gateways)
        guard self.generation == generation else { return }
        if knownAnswers?.generation != generation {
            knownAnswers = KnownAnswers(generation: generation)
        }
        let settled = answersSettled(at: began)
        knownAnswers?.add(requests, results, askedAt: generation, settled: settled)
    }
}

/// Counters kept by a monitor, for tests and diagnostics.
struct MonitorStatistics: Sendable, Equatable {
    /// Times the kernel reported dropped events (ENOBUFS).
    var overruns = 0
    /// Re-dumps of links and addresses after an overrun or a malformed message.
    var resyncs = 0
    /// Re-dumps that failed (and were retried).
    var failedResyncs = 0
    var malformedMessages = 0
    /// Datagrams dropped because they were not from the kernel (forged events).
    var foreignDatagrams = 0
    var eventsReceived = 0
    /// Route events whose prefix covered a looked-up destination (they cause a pass).
    var relevantRouteEvents = 0
    var evaluationPasses = 0
    /// Passes after a carrier change alone that reused the last pass's answers.
    var reusedAnswerPasses = 0
    /// Lookups a pass took from the known answers instead of asking the kernel:
    /// only routes had changed, none covers their destination, and the answers
    /// were settled (``LookupBatch/unmoved(cause:known:)``).
    var keptAnswers = 0
    /// Passes begun before the drain had handled every datagram it read: a link the
    /// answers went out of went down or away (``ReaderWakeup/answerLinkLost``).
    var earlyPasses = 0
    /// Passes that delivered nothing because an answer went out of a link that is
    /// down (``ReaderMachine/answersStale(cause:at:)``), and ran again.
    var staleAnswerPasses = 0
    var failedPasses = 0
    /// Changes of the resolver's configuration files seen (inotify).
    var resolverConfigurationChanges = 0
    /// SO_RCVBUF the kernel granted the event socket.
    var eventReceiveBuffer = 0

    /// Adds what a wake-up brought (``ReaderMachine/Decision/statistics``).
    mutating func add(_ update: ReaderMachine.StatisticsUpdate) {
        eventsReceived += update.eventsReceived
        overruns += update.overruns
        malformedMessages += update.malformedMessages
        relevantRouteEvents += update.relevantRouteEvents
        resolverConfigurationChanges += update.resolverConfigurationChanges
        earlyPasses += update.earlyPasses
        if let foreign = update.foreignDatagrams { foreignDatagrams = foreign }
    }
}
