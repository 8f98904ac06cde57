@_spi(Testing) import ReachabilityBase

/// Watches every interface of a namespace, as `networkctl list` or `ip monitor link
/// address` would show them, and reports each change: carrier, administrative and
/// operational state, addresses (with DAD state), default routes.
///
/// Driven by the same shared rtnetlink monitor as ``Reachability`` and
/// ``PathMonitor``: one evaluation per kernel event batch, no polling. What
/// `reachability wait --interface IF:OPERSTATE` waits on.
///
/// ```swift
/// let monitor = try InterfaceMonitor()
/// let updates = monitor.updates          // made before start: gets the first list
/// try monitor.start()
/// for await interfaces in updates {
///     if interfaces.contains(where: { $0.interface.name == "eth0" && $0.hasCarrier }) { break }
/// }
/// monitor.stop()
/// ```
///
/// `Sendable`: its state is behind a lock.
public final class InterfaceMonitor: Sendable {
    /// The namespace and files it watches.
    public let environment: NetworkEnvironment
    let core: InterfaceMonitorCore

    /// A monitor of `environment`'s interfaces; it watches nothing until
    /// ``start()``. Throws ``ReachabilityError`` for an environment whose paths are
    /// malformed or whose namespace file is missing.
    public init(environment: NetworkEnvironment = .default) throws(ReachabilityError) {
        try environment.validate()
        _ = try MonitorRegistry.Key(environment)  // A missing namespace file fails here, not later.
        self.environment = environment
        core = InterfaceMonitorCore(environment: environment)
    }

    deinit { core.stopNotifying() }

    /// Starts watching: every ``updates`` sequence gets the current list, then each
    /// change. Calling it while running does nothing. Throws when the netlink
    /// sockets cannot be opened or the namespace entered.
    public func start() throws(ReachabilityError) {
        try core.start()
    }

    /// Stops watching; every ``updates`` sequence finishes. It can be started again.
    public func stop() {
        core.stopNotifying()
    }

    /// Whether the monitor is running: from ``start()`` until ``stop()`` (or the
    /// loss of the watched namespace).
    public var isRunning: Bool { core.storage.withLock { $0.machine.isRunning } }

    /// The interface lists as an `AsyncSequence`, ordered by index: the current one
    /// first when started, then one after every change; a slow consumer sees only
    /// the newest. It finishes on ``stop()`` and when the namespace goes away (a
    /// sequence made before ``start()`` waits for it).
    public var updates: AsyncStream<[InterfaceDetails]> { core.makeStream() }

    /// The current list: cached while started, else read afresh; empty when that
    /// fails (``NetworkInterfaces/list(environment:)`` throws instead).
    public var currentInterfaces: [InterfaceDetails] { core.currentOrFreshState ?? [] }

    /// Why the monitor stopped by itself, if it did: the watched network namespace
    /// went away. Cleared by ``start()``.
    public var lastError: ReachabilityError? { core.storage.withLock { $0.lastError } }
}
