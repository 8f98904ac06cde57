/// The `AsyncStream`s a notifier feeds: each keeps only the newest value, and
/// all of them finish when the notifier stops.
package struct StreamRegistry<Element: Sendable>: Sendable {
    private var continuations: [UInt64: AsyncStream<Element>.Continuation] = [:]
    private var nextID: UInt64 = 0

    package init() {}

    package mutating func add(_ continuation: AsyncStream<Element>.Continuation) -> UInt64 {
        nextID += 1
        continuations[nextID] = continuation
        return nextID
    }

    package mutating func remove(_ id: UInt64) -> AsyncStream<Element>.Continuation? {
        continuations.removeValue(forKey: id)
    }

    /// Yielding runs no user code: safe under the owner's lock.
    package func yield(_ element: Element) {
        for continuation in continuations.values { continuation.yield(element) }
    }

    /// Removes every stream, for the caller to finish after unlocking (finishing
    /// runs termination handlers, which take the owner's lock).
    package mutating func takeAll() -> [AsyncStream<Element>.Continuation] {
        defer { continuations.removeAll() }
        return Array(continuations.values)
    }
}

/// What a notifier core keeps under its lock that the shared lifecycle needs.
protocol NotifierStorage {
    associatedtype State: Sendable & Equatable
    var machine: DeliveryStateMachine<State> { get set }
    /// Set while registered with a monitor; whoever clears it unregisters.
    var monitor: NetlinkMonitor? { get set }
    var streams: StreamRegistry<State> { get set }
    /// Called under the lock when the notifier stops.
    mutating func didStop()
}

extension NotifierStorage {
    mutating func didStop() {}
}

/// A notifier core (Reachability's or PathMonitor's): registration with the
/// shared monitor, start and stop bookkeeping, and its async sequences, in one place.
protocol NotifierLifecycle: MonitorClient {
    associatedtype Storage: NotifierStorage & Sendable
    var storage: LockedValue<Storage> { get }
    var environment: NetworkEnvironment { get }
}

extension NotifierLifecycle {
    typealias State = Storage.State

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
            let removed = self?.storage.withLock { $0.streams.remove(id) }
            withExtendedLifetime(removed) {}
        }
        return stream
    }
}
