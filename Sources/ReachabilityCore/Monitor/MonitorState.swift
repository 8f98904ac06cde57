@_spi(Testing) import ReachabilityBase

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
        /// The earliest end of a route's lifetime (``ReaderMachine/expiryMargin``
        /// included) among the answers that starts looked up since the reader last
        /// took it (``ReaderWakeup/startsExpire``).
        var startsExpire: ContinuousClock.Instant?
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

    /// A pass begins at `generation`: it publishes `table` when given one
    /// (``ReaderMachine/Action/plan(_:publishes:)`` says), and counts.
    mutating func beginPass(publishing table: InterfaceTable?, generation: UInt64) {
        if let table { self.table = table }
        self.generation = generation
        statistics.evaluationPasses += 1
    }

    /// A start looked up `results`, naming `gateways`, at `now`: its gateways count
    /// until the next pass replaces them, and the end of a route lifetime among its
    /// answers is the reader's to re-check at (returns true when that is earlier
    /// than what the reader was told so far: it must be woken to hear of it).
    mutating func recordStart(
        _ results: [LookupResult], gateways: Set<InterfaceTable.NeighborKey>, at now: ContinuousClock.Instant
    ) -> Bool {
        gatewayNeighbors.formUnion(gateways)
        var earlier = false
        for case .route(let route) in results {
            guard let lifetime = route.remainingLifetime else { continue }
            let ends = now + lifetime + ReaderMachine.expiryMargin
            if startsExpire.map({ ends < $0 }) ?? true {
                startsExpire = ends
                earlier = true
            }
        }
        return earlier
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
    /// Lookups a pass took from the last pass's answers instead of asking the
    /// kernel: only routes had changed, and none covers their destination
    /// (``ReaderMachine``, "ask what moved").
    var keptAnswers = 0
    /// Passes begun before the drain had handled every datagram it read: a link the
    /// answers went out of went down or away (``ReaderWakeup/answerLinkLost``).
    var earlyPasses = 0
    var failedPasses = 0
    /// Changes of the resolver's configuration files seen (inotify).
    var resolverConfigurationChanges = 0
    /// SO_RCVBUF the kernel granted the event socket.
    var eventReceiveBuffer = 0

    /// Adds what a wake-up brought (``ReaderMachine/statistics(of:)``).
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
