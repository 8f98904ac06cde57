import Dispatch
@_spi(Testing) import ReachabilityBase

/// What a notifier watches: a fixed target, or a hostname resolved as it goes.
enum NotifierSpec: Sendable, Hashable {
    case fixed(Target)
    case hostname(String)
}

/// The part of a `Reachability` the monitor holds: a ``Subscription`` over its
/// ``Target`` (for a hostname, with the addresses of its latest resolution), its
/// callbacks, observers and streams, and the hostname's resolution. It holds its
/// owner (the public instance) weakly, so dropping the instance stops it even
/// while the monitor is running; it knows the owner only as what its callbacks
/// are called with.
///
/// Not generic over its owner: the monitor calls it through `any MonitorClient`
/// on every pass, and a generic class's witnesses run unspecialized (a witness
/// table and nested types' metadata looked up in the runtime's caches each time).
/// Naming its owner's type puts it in the API layer, beside `Reachability`.
final class NotifierCore: Subscription {
    typealias Owner = Reachability
    typealias Spec = NotifierSpec
    /// A reachable / unreachable callback, called with the owner.
    typealias Callback = @Sendable (Owner) -> Void
    /// An error callback, called with the owner and the error.
    typealias ErrorCallback = @Sendable (Owner, ReachabilityError) -> Void

    typealias ObserverBlock = @Sendable (ReachabilityState) -> Void

    struct Observer {
        var block: ObserverBlock
        /// The state it was last called with since the last stop: it is never
        /// called twice in a row with the same state.
        var lastDelivered: ReachabilityState?
        /// Added while stopped, before the hostname's first resolution: its first
        /// call waits for that resolution (never a provisional state).
        var awaitingFirstState = false
    }

    struct Storage: SubscriptionStorage {
        weak var owner: Owner?
        var machine = NotifierStateMachine()
        var whenReachable: Callback?
        var whenUnreachable: Callback?
        var whenError: ErrorCallback?
        var queue: DispatchQueue
        /// Where the owner's notification is posted: a `NotificationCenter`, nil for
        /// `NotificationCenter.default` (``PostsReachabilityNotifications``; this module
        /// has no Foundation).
        var notificationCenter: (any AnyObject & Sendable)?
        /// False: this instance posts nothing (the CLI, whose lines are all it delivers).
        var postsNotifications = true
        /// False: a state reachable only over cellular goes to `whenUnreachable`
        /// (ashleymills' `allowsCellularConnection`).
        var allowsCellular = true
        /// Set while registered with a monitor; whoever clears it unregisters.
        var monitor: NetlinkMonitor?
        var observers: [UInt64: Observer] = [:]
        var streams = StreamRegistry<ReachabilityState>()
        /// Called under the lock, in delivery order, on the thread that decided the
        /// delivery (``Reachability/deliverSynchronously(_:)``).
        var synchronousSinks: [ObserverBlock] = []
        var nextID: UInt64 = 0
        /// Hostname targets: the latest resolution (nil before the first).
        var resolution: Resolution?
        var resolvedAt: ContinuousClock.Instant?
        /// The latest error: a resolver failure, or the loss of the namespace.
        var lastError: ReachabilityError?
        /// Resolver failures in a row (the retry waits longer after each).
        var resolverFailures = 0
        var retryScheduled = false

        /// After a stop, a start delivers the current state to every observer again.
        mutating func didStop() {
            for id in observers.keys { observers[id]?.lastDelivered = nil }
        }
    }

    /// Without a running notifier, a hostname's getters re-resolve in the
    /// background when the last answer is older than this.
    static var resolutionMaxAge: Duration { .seconds(5) }
    /// The longest wait before retrying a resolver that failed.
    static var resolverRetryLimit: Duration { .seconds(30) }

    let spec: Spec
    /// A hostname as the resolver is asked for it (IDNA-encoded); nil for other targets.
    let lookupName: String?
    let environment: NetworkEnvironment
    let storage: LockedValue<Storage>
    /// Whether each delivery is also posted as a notification: the owner's type
    /// posts them (``PostsReachabilityNotifications``: the `Reachability` module is
    /// linked) and the owner wants them (false for the internal watcher of
    /// `waitUntilReachable`, which posts nothing).
    let posting: Bool
    /// The resolver for hostname targets (tests give their own).
    let resolver: ResolverPool

    init(
        spec: Spec, environment: NetworkEnvironment, queue: DispatchQueue, postsNotifications: Bool,
        resolver: ResolverPool = .shared
    ) {
        // A simulated network (ReachabilityTestKit) resolves nothing: its state stands for every target.
        self.spec =
            if environment.simulation != nil, case .hostname(let name) = spec {
                .fixed(.host(name: name, addresses: []))
            } else {
                spec
            }
        if case .hostname(let name) = self.spec { lookupName = Hostname.lookupName(name) } else { lookupName = nil }
        self.environment = environment
        self.storage = LockedValue(Storage(queue: queue))
        self.posting = postsNotifications && Owner.self is any PostsReachabilityNotifications.Type
        self.resolver = resolver
    }

    /// The target as of the latest resolution.
    var target: Target {
        // A fixed target never changes: no lock (only a hostname's resolves anew).
        if case .fixed(let target) = spec { return target }
        return storage.withLock { target(in: $0) }
    }

    private func target(in storage: Storage) -> Target {
        switch spec {
        case .fixed(let target): return target
        case .hostname(let name): return .host(name: name, addresses: storage.resolution?.addresses ?? [])
        }
    }

    private var isHostname: Bool { lookupName != nil }

    func currentEvaluation() -> Target { target }

    static func simulated(_ states: SimulatedStates) -> ReachabilityState { states.reachability }

    func observe(_ state: ReachabilityState, generation: UInt64, planned evaluation: Target) {
        storage.withLock { storage in
            // Lookups planned for addresses that a newer resolution replaced are stale.
            guard evaluation == target(in: storage),
                let action = storage.machine.observe(state, generation: generation)
            else { return }
            schedule(action, in: &storage)
        }
    }

    /// The state the getters report: cached while running, else evaluated afresh.
    /// Never waits on DNS: a hostname uses its latest resolution (refreshed in the
    /// background when missing or old), and before its first one answers
    /// provisionally from the Internet target's route.
    var state: ReachabilityState {
        let (cached, resolvedAt) = storage.withLock { ($0.machine.current, $0.resolvedAt) }
        if let cached { return cached }
        if isHostname {
            if resolvedAt.map({ ContinuousClock.now - $0 > Self.resolutionMaxAge }) ?? true { requestResolution() }
            if resolvedAt == nil { return provisionalState() }
        }
        return currentOrFreshState ?? .unreachable
    }

    /// Before a hostname's first resolution: the state of the route its traffic
    /// would most likely take, the Internet's, marked provisional.
    private func provisionalState() -> ReachabilityState {
        var state = (try? OneShotEvaluator.evaluate(Target.internet, environment: environment)) ?? .unreachable
        state.isProvisional = true
        return state
    }

    var isRunning: Bool { storage.withLock { $0.machine.isRunning } }

    var lastError: ReachabilityError? { storage.withLock { $0.lastError } }

    // MARK: Start and stop

    func start() throws(ReachabilityError) {
        guard let (token, monitor) = try beginStart(prepare: { $0.lastError = nil }) else { return }
        if isHostname { requestResolution() }
        // A hostname's first delivery waits for its first resolution, so an unknown
        // host never produces "reachable, then unreachable".
        let waitForResolution = isHostname && storage.withLock { $0.resolution == nil }
        guard !waitForResolution else { return }
        try completeStart(token, on: monitor)
    }

    func stop() { stopNotifying() }

    // MARK: Monitor callbacks

    func passFinished(cause: PassCause) {
        guard isHostname else { return }
        let addresses = storage.withLock { $0.resolution?.addresses ?? [] }
        // The network changed in a way that may change what the name resolves to
        // (never because the name's own answer changed the state: that would loop).
        if cause.isRelevant(toHostAt: addresses) { requestResolution() }
    }

    func monitorFailed(_ error: ReachabilityError) {
        let ended = storage.withLock {
            storage -> (
                owner: Owner?, handler: ErrorCallback?, queue: DispatchQueue,
                [AsyncStream<ReachabilityState>.Continuation]
            )? in
            guard isWatching(storage) else { return nil }
            storage.machine.stop()
            storage.monitor = nil
            storage.lastError = error
            storage.didStop()
            return (storage.owner, storage.whenError, storage.queue, storage.streams.takeAll())
        }
        guard let (owner, handler, queue, streams) = ended else { return }
        for stream in streams { stream.finish() }
        if let owner, let handler { queue.async { handler(owner, error) } }
    }

    // MARK: Hostname resolution

    /// Asks the resolver for a fresh answer for the hostname (the pool keeps it to
    /// one resolution in flight and one start per second per name). The namespace
    /// is the one the monitor's sockets are in while registered, else the one the
    /// environment's path names now.
    func requestResolution() {
        guard let name = lookupName else { return }
        var namespace = storage.withLock { $0.monitor }?.namespace
        if namespace == nil {
            do throws(ReachabilityError) {
                namespace = try environment.openNamespace()
            } catch {
                resolverFailed(error.resolving(spec.description))
                return
            }
        }
        let requester = ResolverPool.Requester(id: ObjectIdentifier(self))
        resolver.resolve(name, in: namespace, systemCalls: environment.systemCalls, for: requester) { [weak self] in
            self?.resolutionFinished($0)
        }
    }

    private func resolutionFinished(_ outcome: ResolverPool.Outcome) {
        switch outcome {
        case .success(let resolution): resolved(resolution)
        case .failure(let error): resolverFailed(error)
        }
    }

    private func resolved(_ resolution: Resolution) {
        let (changed, pending, monitor, running, awaiting) = storage.withLock { storage in
            let changed = !resolution.sameAnswer(as: storage.resolution)
            storage.resolution = resolution
            storage.resolvedAt = .now
            storage.resolverFailures = 0
            var awaiting: [UInt64] = []
            if !storage.machine.isRunning && !storage.machine.isStarting {
                for (id, observer) in storage.observers where observer.awaitingFirstState {
                    storage.observers[id]?.awaitingFirstState = false
                    awaiting.append(id)
                }
            }
            return (
                changed, storage.machine.pendingStartToken, storage.monitor, storage.machine.isRunning, awaiting
            )
        }
        // New addresses: the monitor plans which route events matter again.
        if changed { monitor?.lookupsChanged() }
        if let monitor, let pending {
            let evaluated = try? monitor.evaluate(currentEvaluation())
            completeStart(pending, with: evaluated?.0 ?? .unreachable, generation: evaluated?.1 ?? 0)
        } else if let monitor, running, changed, let (state, generation) = try? monitor.evaluate(currentEvaluation()) {
            storage.withLock { storage in
                guard let action = storage.machine.observe(state, generation: generation) else { return }
                schedule(action, in: &storage)
            }
        }
        if !awaiting.isEmpty {
            let fresh = (try? OneShotEvaluator.evaluate(target, environment: environment)) ?? .unreachable
            storage.withLock { storage in
                for id in awaiting { scheduleImmediate(storage.machine.current ?? fresh, to: id, on: storage.queue) }
            }
        }
    }

    /// The resolver itself failed (out of descriptors or memory, or the namespace
    /// is gone): that says nothing about the name, so the state stays as it was.
    /// The error goes to `whenError`, and the name is tried again after 1 s,
    /// doubling to 30 s, while the notifier runs.
    private func resolverFailed(_ error: ReachabilityError) {
        let report = storage.withLock {
            storage -> (
                owner: Owner?, handler: ErrorCallback?, queue: DispatchQueue, retry: Duration?
            ) in
            let active = storage.machine.isRunning || storage.machine.isStarting
            guard active else { return (nil, nil, storage.queue, nil) }
            storage.lastError = error
            storage.resolverFailures += 1
            var retry: Duration?
            if !storage.retryScheduled {
                storage.retryScheduled = true
                let exponent = min(storage.resolverFailures - 1, 5)
                retry = min(.seconds(1 << exponent), Self.resolverRetryLimit)
            }
            return (storage.owner, storage.whenError, storage.queue, retry)
        }
        if let logger = environment.logger, report.retry != nil {
            logger.info(
                "resolving a hostname failed; trying again",
                metadata: [
                    "target": "\(spec)", "error": "\(error)",
                    "namespace": "\(environment.networkNamespacePath ?? "own")",
                ])
        }
        if let owner = report.owner, let handler = report.handler { report.queue.async { handler(owner, error) } }
        if let retry = report.retry {
            resolver.clock.schedule(after: retry, on: .global()) { [weak self] in
                guard let self else { return }
                let active = storage.withLock { storage -> Bool in
                    storage.retryScheduled = false
                    return storage.machine.isRunning || storage.machine.isStarting
                }
                if active { requestResolution() }
            }
        }
    }

    /// Seeds a hostname's resolution from another instance (a waiter reuses its parent's).
    func adopt(resolution: Resolution?) {
        guard let resolution else { return }
        storage.withLock {
            if $0.resolution == nil {
                $0.resolution = resolution
                $0.resolvedAt = .now
            }
        }
    }

    var currentResolution: Resolution? { storage.withLock { $0.resolution } }

    /// Whether a resolution this core asked for has not answered yet.
    var isResolving: Bool { resolver.isWaiting(.init(id: ObjectIdentifier(self))) }

    // MARK: Observers and streams

    /// What adding an observer leads to.
    private enum Next { case nothing, resolve, evaluate }

    func addObserver(_ block: @escaping ObserverBlock) -> UInt64 {
        let (id, next) = storage.withLock { storage -> (UInt64, Next) in
            storage.nextID += 1
            let id = storage.nextID
            storage.observers[id] = Observer(block: block)
            if let current = storage.machine.current {
                scheduleImmediate(current, to: id, on: storage.queue)
                return (id, .nothing)
            }
            // Starting (a hostname waiting for its first resolution): the start's own
            // first delivery includes this observer.
            if storage.machine.isStarting { return (id, .nothing) }
            // Stopped, and a hostname not resolved yet: the first call waits for the
            // resolution, so that it is never a provisional answer followed by the real one.
            if isHostname && storage.resolution == nil {
                storage.observers[id]?.awaitingFirstState = true
                return (id, .resolve)
            }
            return (id, .evaluate)
        }
        switch next {
        case .nothing: break
        case .resolve: requestResolution()
        case .evaluate:
            // Stopped: called at once with the state the getters would report.
            let fresh = state
            storage.withLock { storage in
                scheduleImmediate(storage.machine.current ?? fresh, to: id, on: storage.queue)
            }
        }
        return id
    }

    /// Adds a sink called with every delivered state under the lock; when running,
    /// with the current state at once.
    func addSynchronousSink(_ sink: @escaping ObserverBlock) {
        storage.withLock { storage in
            storage.synchronousSinks.append(sink)
            if let current = storage.machine.current { sink(current) }
        }
    }

    func removeObserver(_ id: UInt64) {
        // Released after unlocking: the block may own the last reference to the
        // instance, whose deinit takes this lock.
        let removed = storage.withLock { $0.observers.removeValue(forKey: id) }
        withExtendedLifetime(removed) {}
    }

    // MARK: Delivery

    func schedule(_ action: NotifierStateMachine.Action, in storage: inout Storage) {
        guard case .deliver(let state, let session) = action else {
            if case .wake(let deadline, let token) = action { armWake(at: deadline, token: token) }
            return
        }
        // Streams keep only the newest state; yielding runs no user code.
        storage.streams.yield(state)
        // The package's own sinks (the CLI's line writer): at once, no queue hop.
        for sink in storage.synchronousSinks { sink(state) }
        // Observers added after this point get their own immediate call instead.
        let observers = storage.observers.isEmpty ? [] : storage.observers.keys.sorted()
        for id in observers { storage.observers[id]?.awaitingFirstState = false }
        // Nothing to call and nothing to post (the CLI's instances): no queue hop, so
        // no thread wakes up beside the reader.
        let posts = posting && storage.postsNotifications
        guard posts || !observers.isEmpty || storage.whenReachable != nil || storage.whenUnreachable != nil else {
            return
        }
        storage.queue.async { [self] in deliver(state, session: session, observers: observers) }
    }

    private func scheduleImmediate(_ state: ReachabilityState, to id: UInt64, on queue: DispatchQueue) {
        queue.async { [self] in
            guard let block = storage.withLock({ take(id, for: state, in: &$0) }) else { return }
            block(state)
        }
    }

    /// The block of observer `id` if it should be called with `state` (it was not
    /// last called with the same state), noting that it is.
    private func take(_ id: UInt64, for state: ReachabilityState, in storage: inout Storage) -> ObserverBlock? {
        guard let observer = storage.observers[id], observer.lastDelivered != state else { return nil }
        storage.observers[id]?.lastDelivered = state
        return observer.block
    }

    /// Runs on the notification queue, with no lock held while user code runs.
    private func deliver(_ state: ReachabilityState, session: UInt64, observers: [UInt64]) {
        let pending = storage.withLock {
            storage -> (Owner, Callback?, (any AnyObject & Sendable)?, Bool, [UInt64])? in
            guard storage.machine.accepts(session: session), let owner = storage.owner else { return nil }
            let reachable = state.isReachable && (storage.allowsCellular || state.status != .reachableViaWWAN)
            let callback = reachable ? storage.whenReachable : storage.whenUnreachable
            return (owner, callback, storage.notificationCenter, storage.postsNotifications, observers)
        }
        guard let (owner, callback, center, posts, observers) = pending else { return }
        callback?(owner)
        defer {
            if posting, posts, let poster = owner as? any PostsReachabilityNotifications {
                poster.postReachabilityChanged(on: center)
            }
        }
        for id in observers {
            // Removal takes effect at once, even from inside an earlier callback.
            guard
                let block = storage.withLock({ storage -> ObserverBlock? in
                    storage.machine.accepts(session: session) ? take(id, for: state, in: &storage) : nil
                })
            else { continue }
            block(state)
        }
    }
}

extension NotifierSpec: CustomStringConvertible {
    var description: String {
        switch self {
        case .fixed(let target): return target.description
        case .hostname(let name): return name
        }
    }
}
