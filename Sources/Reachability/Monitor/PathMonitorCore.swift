import Dispatch
import Foundation

/// The part of a `PathMonitor` the netlink monitor holds: its evaluator, state
/// machine, handler and streams.
final class PathMonitorCore: NotifierLifecycle {
    struct Storage: NotifierStorage {
        var machine = DeliveryStateMachine<NetworkPath>()
        var handler: (@Sendable (NetworkPath) -> Void)?
        var queue: DispatchQueue?
        /// Set while registered with a monitor; whoever clears it unregisters.
        var monitor: NetlinkMonitor?
        var streams = StreamRegistry<NetworkPath>()
        /// Why the monitor stopped by itself (its namespace went away), if it did.
        var lastError: ReachabilityError?
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
    var currentPath: NetworkPath {
        if let cached = storage.withLock({ $0.machine.current }) { return cached }
        let (evaluator, dns) = (evaluator, dns)
        let path = try? OneShotEvaluator.run(environment: environment) { table, lookup throws(ReachabilityError) in
            let requests = evaluator.lookups(for: table)
            return evaluator.evaluate(
                requests: requests, results: try lookup(requests), in: table, dnsConfigured: dns.isConfigured)
        }
        return path ?? .unsatisfied
    }

    var isRunning: Bool { storage.withLock { $0.machine.isRunning } }

    func start(queue: DispatchQueue) throws(ReachabilityError) {
        guard
            let (token, monitor) = try beginStart(prepare: {
                $0.queue = queue
                $0.lastError = nil
            })
        else { return }
        do throws(ReachabilityError) {
            let (table, generation) = monitor.snapshot
            let requests = evaluator.lookups(for: table)
            let path = evaluator.evaluate(
                requests: requests, results: try monitor.lookup(requests), in: table, dnsConfigured: dns.isConfigured)
            storage.withLock { storage in
                guard let action = storage.machine.start(with: path, generation: generation, token: token) else {
                    return
                }
                schedule(action, in: &storage)
            }
        } catch {
            abandonStart(token)
            throw error
        }
    }

    func cancel() { stopNotifying() }

    func lookups(for table: InterfaceTable) -> [LookupRequest] { evaluator.lookups(for: table) }

    func monitor(
        didLookUp requests: [LookupRequest], results: [LookupResult], in table: InterfaceTable, generation: UInt64,
        cause: PassCause
    ) {
        // Reading resolv.conf is file I/O: done before taking the lock.
        let path = evaluator.evaluate(requests: requests, results: results, in: table, dnsConfigured: dns.isConfigured)
        storage.withLock { storage in
            guard let action = storage.machine.observe(path, generation: generation) else { return }
            schedule(action, in: &storage)
        }
    }

    /// The namespace went away: a last unsatisfied path (unless that is what was
    /// last delivered), then the monitor stops as if cancelled.
    func monitorFailed(_ error: ReachabilityError) {
        let ended = storage.withLock {
            storage -> (
                DispatchQueue, (@Sendable (NetworkPath) -> Void)?, NetworkPath?, [AsyncStream<NetworkPath>.Continuation]
            )? in
            guard storage.monitor != nil else { return nil }
            let last: NetworkPath? = storage.machine.lastDelivered == .unsatisfied ? nil : .unsatisfied
            storage.machine.stop()
            storage.monitor = nil
            storage.lastError = error
            let streams = storage.streams.takeAll()
            if let last { for stream in streams { stream.yield(last) } }
            return (storage.queue ?? DeliveryQueue.default, storage.handler, last, streams)
        }
        guard let (queue, handler, last, streams) = ended else { return }
        for stream in streams { stream.finish() }
        if let last, let handler { queue.async { handler(last) } }
    }

    private func schedule(_ action: DeliveryStateMachine<NetworkPath>.Action, in storage: inout Storage) {
        guard case .deliver(let path, let session) = action else { return }
        storage.streams.yield(path)
        (storage.queue ?? DeliveryQueue.default).async { [self] in
            // No lock is held while the handler runs.
            let handler = self.storage.withLock { $0.machine.accepts(session: session) ? $0.handler : nil }
            handler?(path)
        }
    }
}
