import Dispatch
public import Foundation

/// The part of a `Reachability` the monitor holds: its target, its state
/// machine, its callbacks, observers and streams, and (for a hostname) its
/// resolution. It holds the public instance weakly, so dropping the instance
/// stops it even while the monitor is running.
final class NotifierCore: NotifierLifecycle {
    enum Spec: Sendable, Hashable {
        case fixed(Target)
        case hostname(String)
    }

    typealias ObserverBlock = @Sendable (ReachabilityState) -> Void

    struct Storage: NotifierStorage {
        weak var owner: Reachability?
        var machine = NotifierStateMachine()
        var whenReachable: Reachability.NetworkReachable?
        var whenUnreachable: Reachability.NetworkReachable?
        var queue: DispatchQueue
        /// Set while registered with a monitor; whoever clears it unregisters.
        var monitor: NetlinkMonitor?
        var observers: [UInt64: ObserverBlock] = [:]
        var streams = StreamRegistry<ReachabilityState>()
        var nextID: UInt64 = 0
        /// Hostname targets: the latest resolution (nil before the first).
        var resolution: Resolution?
        var resolving = false
        var resolveAgain = false
        var resolvedAt: ContinuousClock.Instant?
    }

    /// Without a running notifier, a hostname's getters re-resolve in the
    /// background when the last answer is older than this.
    static let resolutionMaxAge: Duration = .seconds(5)

    let spec: Spec
    let environment: NetworkEnvironment
    let storage: LockedValue<Storage>
    /// False for the internal watcher of `waitUntilReachable`: it posts nothing.
    let postsNotifications: Bool

    init(spec: Spec, environment: NetworkEnvironment, queue: DispatchQueue, postsNotifications: Bool = true) {
        self.spec = spec
        self.environment = environment
        self.storage = LockedValue(Storage(queue: queue))
        self.postsNotifications = postsNotifications
    }

    /// The target as of the latest resolution.
    var target: Target { storage.withLock { target(in: $0) } }

    private func target(in storage: Storage) -> Target {
        switch spec {
        case .fixed(let target): return target
        case .hostname(let name): return .host(name: name, addresses: storage.resolution?.addresses ?? [])
        }
    }

    private var hostname: String? {
        if case .hostname(let name) = spec { return name }
        return nil
    }

    /// The state the getters report: cached while running, else evaluated afresh.
    /// Never waits on DNS: a hostname uses its latest resolution (and starts one
    /// in the background when it has none).
    var state: ReachabilityState {
        let isHostname = hostname != nil
        let (cached, target, resolvedAt) = storage.withLock {
            storage -> (ReachabilityState?, Target, ContinuousClock.Instant?) in
            (storage.machine.current, self.target(in: storage), storage.resolvedAt)
        }
        if let cached { return cached }
        if isHostname {
            // Never wait on DNS: answer from the latest addresses, and refresh them in
            // the background when they are missing or old.
            if resolvedAt.map({ ContinuousClock.now - $0 > Self.resolutionMaxAge }) ?? true { requestResolution() }
            if resolvedAt == nil { return .unreachable }
        }
        return (try? OneShotEvaluator.evaluate(target, environment: environment)) ?? .unreachable
    }

    var isRunning: Bool { storage.withLock { $0.machine.isRunning } }

    // MARK: Start and stop

    func start() throws(ReachabilityError) {
        guard let (token, monitor) = try beginStart() else { return }
        if hostname != nil { requestResolution() }
        // A hostname's first delivery waits for its first resolution, so an unknown
        // host never produces "reachable, then unreachable".
        let waitForResolution = hostname != nil && storage.withLock { $0.resolution == nil }
        guard !waitForResolution else { return }
        do throws(ReachabilityError) {
            let (state, generation) = try monitor.evaluate(target)
            complete(start: token, with: state, generation: generation)
        } catch {
            abandonStart(token)
            throw error
        }
    }

    /// Starts the session `token` began, unless it was stopped meanwhile.
    private func complete(start token: UInt64, with state: ReachabilityState, generation: UInt64) {
        storage.withLock { storage in
            guard let action = storage.machine.start(with: state, generation: generation, token: token) else { return }
            schedule(action, in: &storage)
        }
    }

    func stop() { stopNotifying() }

    // MARK: Monitor callbacks

    func lookups(for table: InterfaceTable) -> [LookupRequest] { target.lookups }

    func monitor(
        didLookUp requests: [LookupRequest], results: [LookupResult], in table: InterfaceTable, generation: UInt64,
        interfacesChanged: Bool
    ) {
        let changed = storage.withLock { storage -> Bool in
            // Lookups planned for addresses that a newer resolution replaced are stale.
            let target = target(in: storage)
            guard requests == target.lookups else { return false }
            let state = target.evaluate(results, in: table)
            guard let action = storage.machine.observe(state, generation: generation) else { return false }
            // Scheduled under the lock so deliveries keep their order; no user code runs here.
            schedule(action, in: &storage)
            return true
        }
        // The network changed: a hostname may now resolve differently.
        if hostname != nil && (interfacesChanged || changed) { requestResolution() }
    }

    // MARK: Hostname resolution

    /// Resolves the hostname in the background; at most one resolution is in
    /// flight, and a request during one runs it once more afterwards.
    func requestResolution() {
        guard let name = hostname else { return }
        let begin = storage.withLock { storage -> Bool in
            if storage.resolving {
                storage.resolveAgain = true
                return false
            }
            storage.resolving = true
            return true
        }
        guard begin else { return }
        ResolverPool.shared(for: environment.networkNamespacePath).resolve(name) { [weak self] resolution in
            self?.resolutionFinished(resolution)
        }
    }

    private func resolutionFinished(_ resolution: Resolution) {
        let (changed, again, pending, monitor, running) = storage.withLock { storage in
            storage.resolving = false
            let changed = storage.resolution?.addresses != resolution.addresses || storage.resolution == nil
            storage.resolution = resolution
            storage.resolvedAt = .now
            defer { storage.resolveAgain = false }
            return (
                changed, storage.resolveAgain, storage.machine.pendingStartToken, storage.monitor,
                storage.machine.isRunning
            )
        }
        if let monitor, let pending {
            let evaluated = try? monitor.evaluate(target)
            complete(start: pending, with: evaluated?.0 ?? .unreachable, generation: evaluated?.1 ?? 0)
        } else if let monitor, running, changed {
            let (table, generation) = monitor.snapshot
            let requests = target.lookups
            if let results = try? monitor.lookup(requests) {
                self.monitor(
                    didLookUp: requests, results: results, in: table, generation: generation, interfacesChanged: false)
            }
        }
        if again { requestResolution() }
    }

    /// Seeds a hostname's resolution from another instance (a waiter reuses its parent's).
    func adopt(resolution: Resolution?) {
        guard let resolution else { return }
        storage.withLock { if $0.resolution == nil { $0.resolution = resolution } }
    }

    var currentResolution: Resolution? { storage.withLock { $0.resolution } }

    // MARK: Observers and streams

    func addObserver(_ block: @escaping ObserverBlock) -> UInt64 {
        let (id, running) = storage.withLock { storage -> (UInt64, Bool) in
            storage.nextID += 1
            storage.observers[storage.nextID] = block
            if let current = storage.machine.current {
                scheduleImmediate(current, to: storage.nextID, on: storage.queue)
                return (storage.nextID, true)
            }
            // Starting (a hostname waiting for its first resolution): the start's own
            // first delivery includes this observer; an immediate "unreachable" would be
            // the "unreachable, then reachable" pair the first delivery exists to avoid.
            return (storage.nextID, storage.machine.isStarting)
        }
        guard !running else { return id }
        // Not running: called at once with the state the getters would report.
        let fresh = state
        storage.withLock { storage in
            scheduleImmediate(storage.machine.current ?? fresh, to: id, on: storage.queue)
        }
        return id
    }

    func removeObserver(_ id: UInt64) {
        // Released after unlocking: the block may own the last reference to the
        // instance, whose deinit takes this lock.
        let removed = storage.withLock { $0.observers.removeValue(forKey: id) }
        withExtendedLifetime(removed) {}
    }

    /// Replaces a stored value under the lock and releases the old one after it.
    func replace<Value: Sendable>(_ keyPath: WritableKeyPath<Storage, Value>, with value: Value) {
        let old = storage.withLock { storage -> Value in
            defer { storage[keyPath: keyPath] = value }
            return storage[keyPath: keyPath]
        }
        withExtendedLifetime(old) {}
    }

    // MARK: Delivery

    private func schedule(_ action: NotifierStateMachine.Action, in storage: inout Storage) {
        guard case .deliver(let state, let session) = action else { return }
        // Streams keep only the newest state; yielding runs no user code.
        storage.streams.yield(state)
        // Observers added after this point get their own immediate call instead.
        let observers = storage.observers.keys.sorted()
        storage.queue.async { [self] in deliver(state, session: session, observers: observers) }
    }

    private func scheduleImmediate(_ state: ReachabilityState, to id: UInt64, on queue: DispatchQueue) {
        queue.async { [self] in
            guard let block = storage.withLock({ $0.observers[id] }) else { return }
            block(state)
        }
    }

    /// Runs on the notification queue, with no lock held while user code runs.
    private func deliver(_ state: ReachabilityState, session: UInt64, observers: [UInt64]) {
        let pending = storage.withLock {
            storage -> (Reachability, Reachability.NetworkReachable?, [UInt64])? in
            guard storage.machine.accepts(session: session), let owner = storage.owner else { return nil }
            let callback = state.isReachable ? storage.whenReachable : storage.whenUnreachable
            return (owner, callback, observers)
        }
        guard let (owner, callback, observers) = pending else { return }
        callback?(owner)
        defer { if postsNotifications { NotificationCenter.default.post(name: .reachabilityChanged, object: owner) } }
        for id in observers {
            // Removal takes effect at once, even from inside an earlier callback.
            guard let block = storage.withLock({ $0.machine.accepts(session: session) ? $0.observers[id] : nil })
            else { continue }
            block(state)
        }
    }
}

extension Notification.Name {
    /// Posted on the instance's ``Reachability/notificationQueue`` with the
    /// ``Reachability`` instance as `object`: once when the notifier starts, then
    /// whenever its flags or output interface change.
    public static let reachabilityChanged = Notification.Name("reachabilityChanged")
}
