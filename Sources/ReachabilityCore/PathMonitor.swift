public import Dispatch
import Glibc
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// Watches the host's network path, as NWPathMonitor does: whether traffic can
/// get out, over which interfaces in order of preference, with which gateways,
/// address families and DNS, and whether it is expensive.
///
/// ```swift
/// let monitor = try PathMonitor()
/// monitor.pathUpdateHandler = { path in print(path.status, path.availableInterfaces.map(\.name)) }
/// try monitor.start()
/// ```
///
/// It shares the process-wide netlink monitor with every `Reachability` instance:
/// an update is delivered on start, then only when the path really changes.
/// Unlike NWPathMonitor, ``start()`` throws: on Linux the netlink sockets can
/// fail to open (a sandbox, the descriptor limit, a namespace that can't be
/// entered), and a monitor that silently never reports would be worse.
///
/// ``pathUpdateHandler`` runs on ``notificationQueue``, a serial queue owned by the
/// library unless you pass one (NWPathMonitor's `start(queue:)` is in
/// `ReachabilityCompat`).
///
/// Every initializer checks its ``NetworkEnvironment`` and ``Options`` first and
/// throws ``ReachabilityError`` for a bad namespace, sysfs root or resolv.conf path.
///
/// `Sendable`: all mutable state is behind a lock.
public final class PathMonitor: Sendable, AsyncSequence {
    /// Per-interface settings of the path's cost flags (``PathMonitorOptions``).
    public typealias Options = PathMonitorOptions

    /// Iterating a monitor yields paths (see ``makeAsyncIterator()``).
    public typealias Element = NetworkPath

    /// Only interfaces of this type count, when set.
    public let requiredInterfaceType: InterfaceType?
    /// Interfaces of these types are ignored.
    public let prohibitedInterfaceTypes: [InterfaceType]
    /// The namespace and sysfs tree this monitor watches.
    public let environment: NetworkEnvironment
    let core: PathMonitorCore

    private init(
        required: InterfaceType?, prohibited: [InterfaceType], environment: NetworkEnvironment, options: Options,
        queue: DispatchQueue?
    ) throws(ReachabilityError) {
        try environment.validate()
        _ = try MonitorRegistry.Key(environment)  // A missing namespace file fails here, not later.
        if let path = options.resolvConfPath { try Self.checkResolvConf(path, systemCalls: environment.systemCalls) }
        requiredInterfaceType = required
        prohibitedInterfaceTypes = prohibited
        self.environment = environment
        core = PathMonitorCore(
            evaluator: PathEvaluator(
                requiredInterfaceType: required, prohibitedInterfaceTypes: Set(prohibited), options: options),
            environment: environment)
        core.storage.withLock { $0.queue = queue }
    }

    /// Watches every interface but loopback.
    public convenience init(
        environment: NetworkEnvironment = .default, options: Options = Options(),
        notificationQueue: DispatchQueue? = nil
    ) throws(ReachabilityError) {
        try self.init(
            required: nil, prohibited: [], environment: environment, options: options, queue: notificationQueue)
    }

    /// Watches only interfaces of `requiredInterfaceType`: the path is satisfied
    /// only while one of them is usable and has a route out.
    public convenience init(
        requiredInterfaceType: InterfaceType, environment: NetworkEnvironment = .default,
        options: Options = Options(), notificationQueue: DispatchQueue? = nil
    ) throws(ReachabilityError) {
        try self.init(
            required: requiredInterfaceType, prohibited: [], environment: environment, options: options,
            queue: notificationQueue)
    }

    /// Watches every interface except loopback and those of `prohibitedInterfaceTypes`.
    public convenience init(
        prohibitedInterfaceTypes: [InterfaceType], environment: NetworkEnvironment = .default,
        options: Options = Options(), notificationQueue: DispatchQueue? = nil
    ) throws(ReachabilityError) {
        try self.init(
            required: nil, prohibited: prohibitedInterfaceTypes, environment: environment, options: options,
            queue: notificationQueue)
    }

    deinit {
        core.cancel()
    }

    /// A resolv.conf path must be readable without blocking or reading forever:
    /// missing (no DNS) or a regular file, after symbolic links.
    private static func checkResolvConf(_ path: String, systemCalls: SystemCalls) throws(ReachabilityError) {
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw ReachabilityError(
                .invalidArgument, "resolvConfPath \(quotedForMessage(path)) is not a file path")
        }
        let status: FileStatus
        switch systemCalls.stat(path) {
        case .success(let found):
            status = found
        case .failure(let failure):
            guard failure.errno == ENOENT || failure.errno == ENOTDIR else {
                throw ReachabilityError(
                    .invalidArgument, "resolvConfPath \(quotedForMessage(path)) can't be read", errno: failure.errno)
            }
            return
        }
        guard status.isRegularFile else {
            throw ReachabilityError(
                .invalidArgument, "resolvConfPath \(quotedForMessage(path)) is not a regular file")
        }
    }

    /// Called on ``notificationQueue`` with the first path, then with every change.
    public var pathUpdateHandler: (@Sendable (NetworkPath) -> Void)? {
        get { core.storage.withLock { $0.handler } }
        set { core.storage.replace(\.handler, with: newValue) }
    }

    /// The serial queue ``pathUpdateHandler`` runs on: the one given to the
    /// initializer, else ``defaultNotificationQueue``. Changing it affects deliveries
    /// scheduled afterwards.
    public var notificationQueue: DispatchQueue {
        get { core.storage.withLock { $0.queue ?? Self.defaultNotificationQueue } }
        set { core.storage.withLock { $0.queue = newValue } }
    }

    /// Starts watching and delivers the current path to ``pathUpdateHandler`` on
    /// ``notificationQueue``; afterwards only changes. Calling it while running does
    /// nothing. Throws when the netlink sockets cannot be opened.
    public func start() throws(ReachabilityError) {
        try core.start()
    }

    /// Whether the monitor is running: from ``start()`` (or iteration) until
    /// ``stop()`` (or the loss of the watched namespace).
    public var isRunning: Bool { core.storage.withLock { $0.machine.isRunning } }

    /// Starts watching and hands the current path, then every change, straight to
    /// `subscriber` with no queue in between: in order, on the thread that evaluated
    /// the path (the shared monitor's reader thread after the first). For the
    /// package's own subscribers (`Connectivity`), which must not block or call back
    /// into this monitor from it. ``updates`` sequences are fed as well.
    package func start(directly subscriber: @escaping @Sendable (NetworkPath) -> Void) throws(ReachabilityError) {
        try core.start(directly: subscriber)
    }

    /// Stops watching; queued updates are dropped and every ``updates`` sequence
    /// finishes. It can be started again. (NWPathMonitor's `cancel()` is in
    /// `ReachabilityCompat`.)
    public func stop() {
        core.cancel()
    }

    /// Why the monitor stopped by itself, if it did: the watched network namespace
    /// went away (`/run/netns/NAME` deleted, or the process behind
    /// `/proc/PID/ns/net` exited). It then delivered a last unsatisfied path and
    /// stopped as if cancelled. Cleared by ``start()``.
    public var lastError: ReachabilityError? { core.storage.withLock { $0.lastError } }

    /// The current path: cached while started, else evaluated afresh.
    public var currentPath: NetworkPath { core.currentPath }

    /// A hold-down against a flapping link: how long a change of the path must last
    /// before the monitor delivers it. Off by default (nil; nil or a duration of zero
    /// or less turns it off). Set it before or after starting; it is kept across stop
    /// and start.
    ///
    /// With one set, every change of the path, in either direction, is held: it is
    /// delivered once the path has stayed away from the path delivered last for
    /// `holdDown`, measured from the latest change. A change that lasts is delivered
    /// once, `holdDown` after the path settled; a change back within the hold-down is
    /// never delivered. The start still delivers the current path at once.
    ///
    /// It applies to ``pathUpdateHandler``, ``updates`` and iteration alike, and,
    /// while the monitor runs, to ``currentPath``, which reports the delivered path.
    /// Changed while a change is held, the new value applies to that change from when
    /// it happened. The loss of the watched namespace is delivered at once.
    public var holdDown: Duration? {
        get { core.holdDown }
        set { core.setHoldDown(newValue) }
    }

    /// The paths as an `AsyncSequence`: the current one first when started, then
    /// every change; a slow consumer sees only the newest. It finishes on
    /// ``stop()`` (a sequence made before ``start()`` waits for it). Unlike
    /// iterating the monitor itself, it never starts the monitor.
    public var updates: AsyncStream<NetworkPath> { core.makeStream() }

    /// Iterates the monitor as NWPathMonitor's `for await path in monitor` does:
    /// the current path first, then every change; a slow consumer sees only the
    /// newest.
    ///
    /// ```swift
    /// for await path in try PathMonitor() where path.status == .satisfied {
    ///     print("online via", path.availableInterfaces.first?.name ?? "?")
    ///     break
    /// }
    /// ```
    ///
    /// A stopped monitor is started and the iterator keeps it alive; when the last such
    /// loop ends — `break`, the task cancelled, the iterator dropped — the monitor is
    /// stopped again, unless ``start()`` was called meanwhile. A monitor
    /// already started stays as it is. The loop ends on ``stop()``, and at once
    /// when the start fails (``lastError`` then says why).
    public func makeAsyncIterator() -> Iterator {
        Iterator(base: core.beginIteration().makeAsyncIterator(), lease: IterationLease(monitor: self))
    }

    /// The serial queue ``pathUpdateHandler`` runs on when the initializer is given none.
    public static let defaultNotificationQueue = DeliveryQueue.default

    /// The iterator of `for await path in monitor`; see ``makeAsyncIterator()``.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<NetworkPath>.Iterator
        let lease: IterationLease

        /// The next path, or nil when the monitor was stopped or its start failed.
        public mutating func next() async -> NetworkPath? {
            await base.next()
        }
    }

    /// Keeps the monitor alive while an iterator of it is, and ends the iteration
    /// with the iterator.
    final class IterationLease: Sendable {
        let monitor: PathMonitor
        init(monitor: PathMonitor) { self.monitor = monitor }
        deinit { monitor.core.endIteration() }
    }
}
