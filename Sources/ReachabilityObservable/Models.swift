import Dispatch
public import Observation
public import Reachability

#if Connectivity || Everything
    public import Connectivity
#endif

/// A `Reachability` as an `Observable` model: its state as separately tracked
/// properties, for SwiftUI-style views and `withObservationTracking`.
///
/// ```swift
/// import Observation
/// import ReachabilityObservable
///
/// let model = ReachabilityModel(try Reachability())
/// try model.reachability.startNotifier()
/// withObservationTracking { _ = model.status } onChange: { print("status changes") }
/// ```
///
/// The properties change on the instance's `notificationQueue`, in delivery
/// order (it is one of the instance's block observers), each one only when its
/// own value changes; they read as the getters do until the first delivery.
///
/// `Sendable`: the values are behind a lock, and Observation's registrar is `Sendable`.
public final class ReachabilityModel: Observable, Sendable {
    /// The instance this model follows (kept alive by it).
    public let reachability: Reachability
    private let registrar = ObservationRegistrar()
    private let current: LockedValue<ReachabilityState>
    private let observation = LockedValue<ReachabilityObservation?>(nil)

    /// Follows `reachability`, from now until the model is released.
    public init(_ reachability: Reachability) {
        self.reachability = reachability
        current = LockedValue(reachability.state)
        let token = reachability.addObserver { [weak self] in self?.apply($0) }
        observation.withLock { $0 = token }
    }

    deinit {
        observation.withLock { $0 }?.remove()
    }

    /// The last delivered state: flags and output interface.
    public var state: ReachabilityState { read(\.state) { $0 } }
    /// The last delivered flags.
    public var flags: ReachabilityFlags { read(\.flags) { $0.flags } }
    /// Apple's status for the last delivered flags.
    public var status: NetworkStatus { read(\.status) { $0.status } }
    /// Whether the last delivered state is reachable.
    public var isReachable: Bool { read(\.isReachable) { $0.isReachable } }
    /// The last delivered output interface, if there was a route.
    public var interface: NetworkInterface? { read(\.interface) { $0.interface } }
    /// The medium of the last delivered output interface, if there was a route.
    public var interfaceType: InterfaceType? { read(\.interfaceType) { $0.interfaceType } }

    private func read<Member>(_ keyPath: KeyPath<ReachabilityModel, Member>, _ value: (ReachabilityState) -> Member)
        -> Member
    {
        registrar.access(self, keyPath: keyPath)
        return value(current.withLock { $0 })
    }

    private func apply(_ new: ReachabilityState) {
        registrar.change(
            self, current, to: new,
            [
                .init(\.state) { $0 }, .init(\.flags) { $0.flags }, .init(\.status) { $0.status },
                .init(\.isReachable) { $0.isReachable }, .init(\.interface) { $0.interface },
                .init(\.interfaceType) { $0.interfaceType },
            ])
    }
}

/// A `PathMonitor` as an `Observable` model: its path as separately tracked
/// properties.
///
/// The properties change on the monitor's notification queue, in delivery order,
/// each only when its own value changes; they follow the monitor across stops and
/// starts (they read as `PathMonitor.currentPath` does until the first delivery).
///
/// `Sendable`: the values are behind a lock, and Observation's registrar is `Sendable`.
public final class PathModel: Observable, Sendable {
    /// The monitor this model follows (kept alive by it).
    public let monitor: PathMonitor
    private let registrar = ObservationRegistrar()
    private let current: LockedValue<NetworkPath>
    private let following = LockedValue<Task<Void, Never>?>(nil)

    /// Follows `monitor`, from now until the model is released.
    public init(_ monitor: PathMonitor) {
        self.monitor = monitor
        current = LockedValue(monitor.currentPath)
        let task = follow({ monitor.updates }, on: { monitor.notificationQueue }) {
            [weak self] in self?.apply($0)
        }
        following.withLock { $0 = task }
    }

    deinit {
        following.withLock { $0 }?.cancel()
    }

    /// The last delivered path.
    public var path: NetworkPath { read(\.path) { $0 } }
    /// Its status.
    public var status: NetworkPath.Status { read(\.status) { $0.status } }
    /// Its interfaces, in order of preference.
    public var availableInterfaces: [NetworkInterface] { read(\.availableInterfaces) { $0.availableInterfaces } }
    /// Whether it is expensive.
    public var isExpensive: Bool { read(\.isExpensive) { $0.isExpensive } }
    /// Whether it is constrained.
    public var isConstrained: Bool { read(\.isConstrained) { $0.isConstrained } }

    private func read<Member>(_ keyPath: KeyPath<PathModel, Member>, _ value: (NetworkPath) -> Member) -> Member {
        registrar.access(self, keyPath: keyPath)
        return value(current.withLock { $0 })
    }

    private func apply(_ new: NetworkPath) {
        registrar.change(
            self, current, to: new,
            [
                .init(\.path) { $0 }, .init(\.status) { $0.status },
                .init(\.availableInterfaces) { $0.availableInterfaces }, .init(\.isExpensive) { $0.isExpensive },
                .init(\.isConstrained) { $0.isConstrained },
            ])
    }
}

#if Connectivity || Everything
    /// A `Connectivity` as an `Observable` model: its published result as separately
    /// tracked properties.
    ///
    /// The properties change on the instance's notification queue, in delivery
    /// order, each only when its own value changes; they follow the instance across
    /// stops and starts, and keep the last published result while it is stopped
    /// (until then they read as `Connectivity.latestResult` does).
    ///
    /// `Sendable`: the values are behind a lock, and Observation's registrar is `Sendable`.
    public final class ConnectivityModel: Observable, Sendable {
        /// The instance this model follows (kept alive by it).
        public let connectivity: Connectivity
        private let registrar = ObservationRegistrar()
        private let current: LockedValue<ConnectivityResult?>
        private let following = LockedValue<Task<Void, Never>?>(nil)

        /// Follows `connectivity`, from now until the model is released.
        public init(_ connectivity: Connectivity) {
            self.connectivity = connectivity
            current = LockedValue(connectivity.latestResult)
            let task = follow({ connectivity.updates }, on: { connectivity.notificationQueue }) { [weak self] in
                self?.apply($0)
            }
            following.withLock { $0 = task }
        }

        deinit {
            following.withLock { $0 }?.cancel()
        }

        /// The last published result; nil before the first.
        public var result: ConnectivityResult? { read(\.result) { $0 } }
        /// Its status; `.determining` before the first.
        public var status: ConnectivityStatus { read(\.status) { $0?.status ?? .determining } }
        /// Its verdict; nil before the first.
        public var verdict: Verdict? { read(\.verdict) { $0?.verdict } }
        /// Whether its status is a connected one.
        public var isConnected: Bool { read(\.isConnected) { $0?.status.isConnected ?? false } }

        private func read<Member>(
            _ keyPath: KeyPath<ConnectivityModel, Member>, _ value: (ConnectivityResult?) -> Member
        )
            -> Member
        {
            registrar.access(self, keyPath: keyPath)
            return value(current.withLock { $0 })
        }

        private func apply(_ new: ConnectivityResult) {
            registrar.change(
                self, current, to: Optional(new),
                [
                    .init(\.result) { $0 }, .init(\.status) { $0?.status ?? .determining },
                    .init(\.verdict) { $0?.verdict }, .init(\.isConnected) { $0?.status.isConnected ?? false },
                ])
        }
    }
#endif

/// One tracked property of a model: its key path, and its value in the model's value.
struct Tracked<Subject: Observable, Value> {
    let differs: (Value, Value) -> Bool
    let willSet: (ObservationRegistrar, Subject) -> Void
    let didSet: (ObservationRegistrar, Subject) -> Void

    init<Member: Equatable>(_ keyPath: KeyPath<Subject, Member>, _ value: @escaping (Value) -> Member) {
        differs = { value($0) != value($1) }
        willSet = { $0.willSet($1, keyPath: keyPath) }
        didSet = { $0.didSet($1, keyPath: keyPath) }
    }
}

extension ObservationRegistrar {
    /// Sets `current` to `new`, between the `willSet` and `didSet` of each tracked
    /// property whose value changes (none: nothing happens).
    func change<Subject: Observable, Value: Sendable>(
        _ subject: Subject, _ current: LockedValue<Value>, to new: Value, _ tracked: [Tracked<Subject, Value>]
    ) {
        let old = current.withLock { $0 }
        let changed = tracked.filter { $0.differs(old, new) }
        guard !changed.isEmpty else { return }
        for property in changed { property.willSet(self, subject) }
        current.withLock { $0 = new }
        for property in changed { property.didSet(self, subject) }
    }
}

/// Iterates the sequences `sequence` makes, one after another (each finishes when
/// its monitor stops; the next waits for the next start), and runs `apply` with
/// each element on `queue()`, in order, until the task is cancelled.
func follow<Element: Sendable>(
    _ sequence: @escaping @Sendable () -> AsyncStream<Element>, on queue: @escaping @Sendable () -> DispatchQueue,
    _ apply: @escaping @Sendable (Element) -> Void
) -> Task<Void, Never> {
    Task {
        while !Task.isCancelled {
            for await element in sequence() {
                queue().async { apply(element) }
            }
        }
    }
}
