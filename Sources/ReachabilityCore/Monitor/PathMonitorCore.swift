import Dispatch
import Glibc
@_spi(Testing) import ReachabilityBase

/// The part of a `PathMonitor` the netlink monitor holds: a ``Subscription`` over
/// a ``PathEvaluation``, delivering to one handler and the streams.
final class PathMonitorCore: Subscription {
    struct Storage: SubscriptionStorage {
        var machine = DeliveryStateMachine<NetworkPath>()
        var handler: (@Sendable (NetworkPath) -> Void)?
        /// `PathMonitor.notificationQueue`; nil for the library's.
        var queue: DispatchQueue?
        /// Set while registered with a monitor; whoever clears it unregisters.
        var monitor: NetlinkMonitor?
        var streams = StreamRegistry<NetworkPath>()
        /// Why the monitor stopped by itself (its namespace went away), if it did.
        var lastError: ReachabilityError?
        /// A package-internal subscriber (Connectivity) called at once, in order,
        /// with each path instead of `handler` on `queue`.
        var direct: (@Sendable (NetworkPath) -> Void)?
        /// Iterators of the monitor itself (`for await path in monitor`) alive now.
        var iterators = 0
        /// Started by an iterator, not by `start()`: the last iterator to end
        /// cancels it.
        var startedForIteration = false
        /// Whether resolv.conf names a nameserver, as read last while registered with
        /// a monitor: read again when the monitor's file watch says it changed.
        var dnsConfigured: Bool?
        /// Changes of the resolver's configuration seen: a read begun before one is
        /// not kept.
        var dnsChanges = 0

        mutating func didStop() {
            direct = nil
            startedForIteration = false
            dnsConfigured = nil
        }
    }

    let evaluator: PathEvaluator
    let environment: NetworkEnvironment
    let dns: DNSConfiguration
    let storage = LockedValue(Storage())

    init(evaluator: PathEvaluator, environment: NetworkEnvironment) {
        self.evaluator = evaluator
        self.environment = environment
        self.dns = DNSConfiguration(
            resolvConf: DNSConfiguration.resolvConfPath(for: environment, override: evaluator.options.resolvConfPath),
            systemCalls: environment.systemCalls)
    }

    /// The path the getter reports: cached while running, else evaluated afresh.
    var currentPath: NetworkPath { currentOrFreshState ?? .unsatisfied }

    /// The evaluator with the resolver configuration: read now (file I/O: never
    /// under the lock), unless the monitor this core is registered with watches the
    /// files that read took and saw no change of them since. Files it can't watch
    /// (inotify's limits, a directory that doesn't exist yet) are read for every pass
    /// (`PathMonitorIntegrationTests.ownResolvConfWatched`).
    func currentEvaluation() -> PathEvaluation {
        let (known, changes, monitor) = storage.withLock { ($0.dnsConfigured, $0.dnsChanges, $0.monitor) }
        if monitor != nil, let known { return PathEvaluation(evaluator: evaluator, dnsConfigured: known) }
        // Watched before each read (a change after it makes a pass), again after every
        // change: where a symbolic resolv.conf points may have moved.
        let watched = monitor.map { ($0.watchResolverFile(dns.resolvConf), $0.watchResolverFile(dns.resolvedUpstream)) }
        var upstreamRead = false
        let configured = dns.isConfigured(upstreamRead: &upstreamRead)
        if let (conf, upstream) = watched, conf, upstream || !upstreamRead {
            storage.withLock {
                if $0.monitor === monitor && $0.dnsChanges == changes { $0.dnsConfigured = configured }
            }
        }
        return PathEvaluation(evaluator: evaluator, dnsConfigured: configured)
    }

    static func simulated(_ states: SimulatedStates) -> NetworkPath { states.path }

    func resolverConfigurationChanged() {
        storage.withLock {
            $0.dnsConfigured = nil
            $0.dnsChanges += 1
        }
    }

    func observe(_ path: NetworkPath, generation: UInt64, planned evaluation: PathEvaluation) {
        storage.withLock { storage in
            guard let action = storage.machine.observe(path, generation: generation) else { return }
            schedule(action, in: &storage)
        }
    }

    var isRunning: Bool { storage.withLock { $0.machine.isRunning } }

    func start() throws(ReachabilityError) {
        // A start of the caller's own keeps the monitor running after its loops end.
        storage.withLock { $0.startedForIteration = false }
        try start(direct: nil)
    }

    /// An iterator of the monitor begins: the stream it reads, made before the
    /// monitor starts so that it gets the first path. A stopped monitor is started,
    /// and cancelled again when its last iterator ends (so that
    /// `for await path in try PathMonitor()` works, as with NWPathMonitor). A start
    /// that fails is noted in `lastError`, and the stream ends at once.
    func beginIteration() -> AsyncStream<NetworkPath> {
        let stream = makeStream()
        let mustStart = storage.withLock { storage -> Bool in
            storage.iterators += 1
            return !storage.machine.isRunning && !storage.machine.isStarting
        }
        guard mustStart else { return stream }
        do throws(ReachabilityError) {
            try start(direct: nil)
            storage.withLock { $0.startedForIteration = true }
            return stream
        } catch {
            storage.withLock { $0.lastError = error }
            return AsyncStream { $0.finish() }
        }
    }

    /// An iterator of the monitor ended (its loop finished, or it was dropped).
    func endIteration() {
        let cancel = storage.withLock { storage -> Bool in
            storage.iterators -= 1
            return storage.iterators == 0 && storage.startedForIteration
        }
        if cancel { stopNotifying() }
    }

    /// Starts delivering each path straight to `subscriber`, with no queue in
    /// between: called in order, under this core's lock, on whichever thread
    /// evaluated the path (the monitor's reader, or the starting thread for the
    /// first). `subscriber` must not block or call back into this monitor.
    func start(directly subscriber: @escaping @Sendable (NetworkPath) -> Void) throws(ReachabilityError) {
        try start(direct: subscriber)
    }

    private func start(direct: (@Sendable (NetworkPath) -> Void)?) throws(ReachabilityError) {
        guard
            let (token, monitor) = try beginStart(prepare: {
                $0.direct = direct
                $0.lastError = nil
            })
        else { return }
        try completeStart(token, on: monitor)
    }

    func cancel() { stopNotifying() }

    /// The namespace went away: a last unsatisfied path (unless that is what was
    /// last delivered), then the monitor stops as if cancelled.
    func monitorFailed(_ error: ReachabilityError) {
        let ended = storage.withLock {
            storage -> (
                DispatchQueue, (@Sendable (NetworkPath) -> Void)?, NetworkPath?,
                [AsyncStream<NetworkPath>.Continuation],
                direct: (@Sendable (NetworkPath) -> Void)?
            )? in
            guard isWatching(storage) else { return nil }
            let last: NetworkPath? = storage.machine.lastDelivered == .unsatisfied ? nil : .unsatisfied
            let direct = storage.direct
            storage.machine.stop()
            storage.didStop()
            storage.monitor = nil
            storage.lastError = error
            let streams = storage.streams.takeAll()
            if let last { for stream in streams { stream.yield(last) } }
            return (storage.queue ?? DeliveryQueue.default, storage.handler, last, streams, direct)
        }
        guard let (queue, handler, last, streams, direct) = ended else { return }
        for stream in streams { stream.finish() }
        guard let last else { return }
        if let direct {
            direct(last)
        } else if let handler {
            queue.async { handler(last) }
        }
    }

    func schedule(_ action: DeliveryStateMachine<NetworkPath>.Action, in storage: inout Storage) {
        guard case .deliver(let path, let session) = action else {
            if case .wake(let deadline, let token) = action { armWake(at: deadline, token: token) }
            return
        }
        storage.streams.yield(path)
        if let direct = storage.direct {
            direct(path)
            return
        }
        (storage.queue ?? DeliveryQueue.default).async { [self] in
            // No lock is held while the handler runs.
            let handler = self.storage.withLock { $0.machine.accepts(session: session) ? $0.handler : nil }
            handler?(path)
        }
    }
}
