import Dispatch
@_spi(Testing) import ReachabilityBase

/// What a subscription keeps under its lock that the shared part needs.
protocol SubscriptionStorage {
    associatedtype State: Sendable & Equatable
    var machine: DeliveryStateMachine<State> { get set }
    /// Set while registered with a monitor; whoever clears it unregisters.
    var monitor: NetlinkMonitor? { get set }
    var streams: StreamRegistry<State> { get set }
    /// Called under the lock when the subscription stops.
    mutating func didStop()
}

extension SubscriptionStorage {
    mutating func didStop() {}
}

/// One subscription to a namespace's monitor over a pure ``Evaluation``: what a
/// `Reachability` (``NotifierCore``) and a `PathMonitor` (``PathMonitorCore``)
/// share. The shared part registers with the monitor, starts and stops, plans each
/// pass once (the lookups of one snapshot of the evaluation, and its state from
/// the answers), evaluates the start and the synchronous getters through the same
/// ``Evaluation/evaluate(in:lookup:)``, and feeds the async sequences. A conforming
/// core says how to take the snapshot and how to deliver.
protocol Subscription: MonitorClient {
    associatedtype Storage: SubscriptionStorage & Sendable
    associatedtype Evaluated: Evaluation where Evaluated.State == Storage.State
    var storage: LockedValue<Storage> { get }
    var environment: NetworkEnvironment { get }

    /// The evaluation as of now. Called without the lock held (it may read files,
    /// or take the lock itself).
    func currentEvaluation() -> Evaluated

    /// Takes a pass's `state`, evaluated from the plan's `evaluation`: under the
    /// lock, unless the evaluation no longer stands (a hostname's target that a
    /// newer resolution replaced), the state machine observes it and a delivery it
    /// decides is scheduled. Each core implements it on its concrete storage: the
    /// same steps written once here, generically, run unspecialized for every
    /// client on every pass.
    func observe(_ state: State, generation: UInt64, planned evaluation: Evaluated)

    /// Schedules a delivery the state machine decided. Called under the lock, so
    /// deliveries keep their order; runs no user code.
    func schedule(_ action: DeliveryStateMachine<Storage.State>.Action, in storage: inout Storage)

    /// After a pass's state was taken, outside the lock (a hostname may re-resolve).
    func passFinished(cause: PassCause)

    /// This core's state in a simulated network's states (ReachabilityTestKit).
    static func simulated(_ states: SimulatedStates) -> Storage.State
}

extension Subscription {
    typealias State = Storage.State

    func passFinished(cause: PassCause) {}

    // MARK: The monitor's side

    func plan(for table: InterfaceTable) -> MonitorPlan {
        let evaluation = currentEvaluation()
        let requests = evaluation.lookups(for: table)
        return MonitorPlan(requests: requests) { [self] results, generation, cause in
            observe(
                evaluation.state(from: results, for: requests, in: table), generation: generation,
                planned: evaluation)
            passFinished(cause: cause)
        }
    }

    // MARK: Evaluation

    /// The state the getters report: the running subscription's, else evaluated
    /// afresh (nil when that fails).
    var currentOrFreshState: State? {
        if let cached = storage.withLock({ $0.machine.current }) { return cached }
        if let simulation = environment.simulation { return Self.simulated(simulation.states) }
        return try? OneShotEvaluator.evaluate(currentEvaluation(), environment: environment)
    }

    /// Completes the start `token` began with a first evaluation on `monitor`;
    /// throws (and abandons the start) when the lookups fail.
    func completeStart(_ token: UInt64, on monitor: NetlinkMonitor) throws(ReachabilityError) {
        do throws(ReachabilityError) {
            let (state, generation) = try monitor.evaluate(currentEvaluation())
            completeStart(token, with: state, generation: generation)
        } catch {
            abandonStart(token)
            throw error
        }
    }

    /// Starts the session `token` began with `state`, unless it was stopped meanwhile.
    func completeStart(_ token: UInt64, with state: State, generation: UInt64) {
        storage.withLock { storage in
            guard let action = storage.machine.start(with: state, generation: generation, token: token) else { return }
            schedule(action, in: &storage)
        }
    }

    // MARK: Start and stop

    /// Begins a start (`prepare` runs under the lock when it does) and registers
    /// with the namespace's monitor. Nil when already running or starting, or when
    /// a stop superseded this start meanwhile. Throws when the monitor can't start.
    func beginStart(prepare: (inout Storage) -> Void = { _ in }) throws(ReachabilityError)
        -> (token: UInt64, monitor: NetlinkMonitor)?
    {
        let token = storage.withLock { storage -> UInt64? in
            guard !storage.machine.isRunning, !storage.machine.isStarting else { return nil }
            prepare(&storage)
            return storage.machine.begin()
        }
        guard let token else { return nil }
        if let simulation = environment.simulation {
            try startSimulated(token, on: simulation)
            return nil
        }
        let monitor: NetlinkMonitor
        do throws(ReachabilityError) {
            monitor = try MonitorRegistry.register(self, environment: environment)
        } catch {
            storage.withLock { if $0.machine.isStarting(token) { $0.machine.stop() } }
            throw error
        }
        let superseded = storage.withLock { storage -> Bool in
            guard storage.machine.isStarting(token) else { return true }
            storage.monitor = monitor
            return false
        }
        if superseded {
            MonitorRegistry.unregister(self, from: monitor)
            return nil
        }
        // The namespace may have gone away between registering and here, before the
        // monitor could tell this client: don't start on a monitor that has stopped.
        if let failure = monitor.failure {
            abandonStart(token)
            throw failure
        }
        return (token, monitor)
    }

    /// Completes the start `token` on a simulated network instead of the kernel's
    /// monitor: its changes are observed as a pass's states are, while this core
    /// runs; its end is the loss of the namespace.
    private func startSimulated(_ token: UInt64, on simulation: any NetworkSimulation) throws(ReachabilityError) {
        let first: (states: SimulatedStates, generation: UInt64)
        do throws(ReachabilityError) {
            first = try simulation.subscribe(
                ObjectIdentifier(self),
                feed: { [weak self] states, generation in
                    guard let self else { return false }
                    return storage.withLock { storage in
                        guard storage.machine.isActive else { return false }
                        if let action = storage.machine.observe(Self.simulated(states), generation: generation) {
                            schedule(action, in: &storage)
                        }
                        return true
                    }
                },
                end: { [weak self] error in self?.monitorFailed(error) })
        } catch {
            storage.withLock { if $0.machine.isStarting(token) { $0.machine.stop() } }
            throw error
        }
        completeStart(token, with: Self.simulated(first.states), generation: first.generation)
    }

    /// Whether the loss of the namespace concerns this core now: it is registered
    /// with a monitor, or it runs on a simulated network (which has none).
    func isWatching(_ storage: Storage) -> Bool {
        storage.monitor != nil || (environment.simulation != nil && storage.machine.isActive)
    }

    /// Ends a start whose first evaluation failed; unregisters if it was still current.
    func abandonStart(_ token: UInt64) {
        let monitor = storage.withLock { storage -> NetlinkMonitor? in
            guard storage.machine.isStarting(token) else { return nil }
            storage.machine.stop()
            defer { storage.monitor = nil }
            return storage.monitor
        }
        if let monitor { MonitorRegistry.unregister(self, from: monitor) }
    }

    /// Stops: queued deliveries are dropped, sequences finish, and the core leaves
    /// the monitor (which stops after its last client).
    func stopNotifying() {
        let (monitor, streams) = storage.withLock { storage in
            storage.machine.stop()
            storage.didStop()
            let streams = storage.streams.takeAll()
            defer { storage.monitor = nil }
            return (storage.monitor, streams)
        }
        // Outside the lock: finishing runs onTermination handlers, which take it.
        for stream in streams { stream.finish() }
        if let monitor { MonitorRegistry.unregister(self, from: monitor) }
    }

    /// A new sequence: the current value first when running, then every delivery;
    /// only the newest is kept for a slow consumer.
    func makeStream() -> AsyncStream<State> {
        let (stream, continuation) = AsyncStream.makeStream(of: State.self, bufferingPolicy: .bufferingNewest(1))
        let id = storage.withLock { storage in
            if let current = storage.machine.current { continuation.yield(current) }
            return storage.streams.add(continuation)
        }
        continuation.onTermination = { [weak self] _ in
            let owner = self
            StreamRegistry<State>.removeLater { owner?.storage.withLock { $0.streams.remove(id) } }
        }
        return stream
    }

    // MARK: Hold-down

    /// How long a change must last before it is delivered (nil: off); see `HoldDown.md`.
    var holdDown: Duration? { storage.withLock { $0.machine.holdDown } }

    /// Changes the hold-down; a change held now is delivered at once when it has
    /// lasted the new one (or it is turned off), else at its new deadline.
    func setHoldDown(_ holdDown: Duration?) {
        storage.withLock { storage in
            guard let action = storage.machine.setHoldDown(holdDown) else { return }
            schedule(action, in: &storage)
        }
    }

    /// Arms the wake-up the state machine asked for (a change being held down): at
    /// `deadline`, the machine decides under the lock whether the change has lasted
    /// (a delivery) or needs the next wake-up. One timer at a time per subscription;
    /// one fired a little early by Dispatch's clock (another one) just arms again.
    func armWake(at deadline: ContinuousClock.Instant, token: UInt64) {
        let delay = max(.zero, deadline - .now)
        let (seconds, attoseconds) = delay.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000) + 1
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
            guard let self else { return }
            storage.withLock { storage in
                guard let action = storage.machine.wake(token, at: .now) else { return }
                schedule(action, in: &storage)
            }
        }
    }
}
