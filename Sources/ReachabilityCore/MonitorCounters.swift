@_spi(Testing) import ReachabilityBase

/// The counters of a namespace's shared netlink monitor, for metrics and diagnostics
/// (`reachability exporter` serves them as `reachability_monitor_*_total`).
///
/// All count from the monitor's start and only grow while it runs; a monitor stops
/// when its last client stops, and the next one starts from zero (Prometheus treats
/// that as a counter reset).
public struct MonitorCounters: Sendable, Hashable {
    /// Kernel messages read from the event socket.
    public var eventsReceived: Int
    /// Times the kernel reported events dropped for a full receive buffer (ENOBUFS).
    public var overruns: Int
    /// Re-dumps of links and addresses after an overrun or a malformed message.
    public var resyncs: Int
    /// Re-dumps that failed (they are retried).
    public var failedResyncs: Int
    /// Messages dropped as malformed (a resync follows).
    public var malformedMessages: Int
    /// Evaluation passes: one per batch of events that could change an answer.
    public var evaluationPasses: Int
    /// Passes that failed (their route lookups could not be made; retried).
    public var failedPasses: Int

    /// Counters with the given values (for tests of code that reads them).
    public init(
        eventsReceived: Int = 0, overruns: Int = 0, resyncs: Int = 0, failedResyncs: Int = 0,
        malformedMessages: Int = 0, evaluationPasses: Int = 0, failedPasses: Int = 0
    ) {
        self.eventsReceived = eventsReceived
        self.overruns = overruns
        self.resyncs = resyncs
        self.failedResyncs = failedResyncs
        self.malformedMessages = malformedMessages
        self.evaluationPasses = evaluationPasses
        self.failedPasses = failedPasses
    }

    init(_ statistics: MonitorStatistics) {
        self.init(
            eventsReceived: statistics.eventsReceived, overruns: statistics.overruns, resyncs: statistics.resyncs,
            failedResyncs: statistics.failedResyncs, malformedMessages: statistics.malformedMessages,
            evaluationPasses: statistics.evaluationPasses, failedPasses: statistics.failedPasses)
    }
}

extension NetworkEnvironment {
    /// The counters of the monitor that serves this environment's namespace, or nil
    /// when none runs (no instance watching it has been started). Reading them takes
    /// a lock for a copy: no netlink work, no waiting on one.
    public var monitorCounters: MonitorCounters? {
        MonitorRegistry.running(for: self).map { MonitorCounters($0.statistics) }
    }
}
