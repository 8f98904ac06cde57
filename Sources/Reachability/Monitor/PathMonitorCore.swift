import Dispatch
import Foundation

/// The part of a `PathMonitor` the netlink monitor holds: a ``Subscription`` over
/// a ``PathEvaluation``, delivering to one handler and the streams.
final class PathMonitorCore: Subscription {
    struct Storage: SubscriptionStorage {
        var machine = DeliveryStateMachine<NetworkPath>()
        var handler: (@Sendable (NetworkPath) -> Void)?
        var queue: DispatchQueue?
        /// Set while registered with a monitor; whoever clears it unregisters.
        var monitor: NetlinkMonitor?
        var streams = StreamRegistry<NetworkPath>()
        /// Why the monitor stopped by itself (its namespace went away), if it did.
        var lastError: ReachabilityError?
        /// A package-internal subscriber (Connectivity) called at once, in order,
        /// with each path instead of `handler` on `queue`.
        var direct: (@Sendable (NetworkPath) -> Void)?

        mutating func didStop() { direct = nil }
    }

    let evaluator: PathEvaluator
    let environment: NetworkEnvironment
    let dns: DNSConfiguration
    let storage = LockedValue(Storage())

    init(evaluator: PathEvaluator, environment: NetworkEnvironment) {
        self.evaluator = evaluator
        self.environment = environment
        let named = environment.networkNamespacePath.flatMap(NetworkNamespace.name(of:))
        let netnsConf = named.map { "/etc/netns/\($0)/resolv.conf" }
        let conf =
            evaluator.options.resolvConfPath
            ?? netnsConf.flatMap { FileManager.default.fileExists(atPath: $0) ? $0 : nil } ?? "/etc/resolv.conf"
        self.dns = DNSConfiguration(resolvConf: conf)
    }

    /// The path the getter reports: cached while running, else evaluated afresh.
    var currentPath: NetworkPath { currentOrFreshState ?? .unsatisfied }

    /// The evaluator with the resolver configuration read now (file I/O: never
    /// under the lock).
    func currentEvaluation() -> PathEvaluation {
        PathEvaluation(evaluator: evaluator, dnsConfigured: dns.isConfigured)
    }

    func observe(_ path: NetworkPath, generation: UInt64, planned evaluation: PathEvaluation) {
        storage.withLock { storage in
            guard let action = storage.machine.observe(path, generation: generation) else { return }
            schedule(action, in: &storage)
        }
    }

    var isRunning: Bool { storage.withLock { $0.machine.isRunning } }

    func start(queue: DispatchQueue) throws(ReachabilityError) {
        try start(queue: queue, direct: nil)
    }

    /// Starts delivering each path straight to `subscriber`, with no queue in
    /// between: called in order, under this core's lock, on whichever thread
    /// evaluated the path (the monitor's reader, or the starting thread for the
    /// first). `subscriber` must not block or call back into this monitor.
    func start(directly subscriber: @escaping @Sendable (NetworkPath) -> Void) throws(ReachabilityError) {
        try start(queue: nil, direct: subscriber)
    }

    private func start(
        queue: DispatchQueue?, direct: (@Sendable (NetworkPath) -> Void)?
    ) throws(ReachabilityError) {
        guard
            let (token, monitor) = try beginStart(prepare: {
                $0.queue = queue
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
            guard storage.monitor != nil else { return nil }
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
        guard case .deliver(let path, let session) = action else { return }
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
