public import Reachability

#if Connectivity || Everything
    public import Connectivity
#endif

/// A network your tests drive, standing in for the kernel: no netlink socket, no
/// root, no namespace, no probe.
///
/// Make your monitors with its ``environment`` — `Reachability`, `PathMonitor`,
/// `Connectivity` (through `ConnectivityConfiguration.environment`) and the
/// compatibility layers built on them — and your code sees what you
/// ``set(_:)``: the same callbacks, notifications, `updates` sequences, observers
/// and getters as in production, on the same queues, with the same rules (the first
/// state on start, then only changes; hysteresis and retries for `Connectivity`).
/// Only the evaluation is replaced: every `Reachability` reports ``State/flags``
/// and ``State/interface`` whatever its target, every `PathMonitor`
/// ``State/path``, every `InterfaceMonitor` the path's interfaces, and every
/// `Connectivity` check ``State/verdict``.
///
/// ```swift
/// import ReachabilityTestKit
///
/// let network = SimulatedNetwork(.connected(via: .wifi))
/// let reachability = try Reachability(environment: network.environment)
/// reachability.whenUnreachable = { _ in print("offline") }
/// try reachability.startNotifier()
/// network.set(.disconnected)      // "offline", on reachability.notificationQueue
/// ```
///
/// `Sendable`: its state is behind a lock; drive it from any thread or task.
public final class SimulatedNetwork: Sendable {
    /// What the network is like at one moment. The fields are independent: a test
    /// that edits one (``SimulatedNetwork/update(_:)``) changes only that one.
    public struct State: Sendable, Hashable {
        /// What every `Reachability` reports as its flags, whatever its target.
        public var flags: ReachabilityFlags
        /// What every `Reachability` reports as its output interface: nil without a route.
        public var interface: NetworkInterface?
        /// What every `PathMonitor` reports.
        public var path: NetworkPath
        #if Connectivity || Everything
            /// What every `Connectivity` check concludes while ``path`` is satisfied
            /// (without a usable path there is no check: notConnected).
            public var verdict: Verdict
        #endif

        #if Connectivity || Everything
            /// A state with these fields.
            public init(flags: ReachabilityFlags, interface: NetworkInterface?, path: NetworkPath, verdict: Verdict) {
                self.flags = flags
                self.interface = interface
                self.path = path
                self.verdict = verdict
            }
        #else
            /// A state with these fields.
            public init(flags: ReachabilityFlags, interface: NetworkInterface?, path: NetworkPath) {
                self.flags = flags
                self.interface = interface
                self.path = path
            }
        #endif

        /// Reachable through `interface`, as the kernel reports a link with a
        /// default route: flags `reachable` (and `isWWAN` for cellular), a satisfied
        /// path over IPv4 with DNS, and (with Connectivity) the Internet validated.
        public static func connected(via interface: NetworkInterface) -> State {
            let path = NetworkPath(
                status: .satisfied, availableInterfaces: [interface], supportsIPv4: true, supportsDNS: true,
                isExpensive: interface.type == .cellular)
            let flags: ReachabilityFlags = interface.type == .cellular ? [.reachable, .isWWAN] : .reachable
            #if Connectivity || Everything
                return State(flags: flags, interface: interface, path: path, verdict: .online)
            #else
                return State(flags: flags, interface: interface, path: path)
            #endif
        }

        /// Reachable through an interface of `type` with the name Linux usually gives
        /// it (`eth0`, `wlan0`, `wwan0`, `tun0`, `lo`), index 2.
        public static func connected(via type: InterfaceType) -> State {
            let name =
                switch type {
                case .wiredEthernet: "eth0"
                case .wifi: "wlan0"
                case .cellular: "wwan0"
                case .loopback: "lo"
                case .other: "tun0"
                }
            return connected(via: NetworkInterface(name: name, index: 2, type: type))
        }

        /// No route: no flags, no interface, an unsatisfied path (and, with
        /// Connectivity, notConnected).
        public static var disconnected: State {
            #if Connectivity || Everything
                State(flags: [], interface: nil, path: .unsatisfied, verdict: .notConnected)
            #else
                State(flags: [], interface: nil, path: .unsatisfied)
            #endif
        }

        /// The reachability state the flags and interface make.
        var reachability: ReachabilityState { ReachabilityState(flags: flags, interface: interface) }
    }

    /// What the lock guards.
    private struct Shared: Sendable {
        var state: State
        /// Bumped by every change: orders the states a monitor is fed.
        var generation: UInt64 = 1
        var subscribers: [ObjectIdentifier: Subscriber] = [:]
        var checkers: [ObjectIdentifier: @Sendable () -> Bool] = [:]
        var ended: ReachabilityError?
    }

    private struct Subscriber: Sendable {
        var feed: @Sendable (SimulatedStates, UInt64) -> Bool
        var end: @Sendable (ReachabilityError) -> Void
    }

    private let shared: LockedValue<Shared>

    /// Pass it where your code makes its monitors (`Reachability(environment:)`,
    /// `PathMonitor(environment:)`, `ConnectivityConfiguration.environment`):
    /// what they make for it is driven by this network.
    public var environment: NetworkEnvironment {
        var environment = NetworkEnvironment()
        environment.simulation = self
        return environment
    }

    /// A network in `state` (by default connected via `eth0`).
    public init(_ state: State = .connected(via: .wiredEthernet)) {
        shared = LockedValue(Shared(state: state))
    }

    /// The network's state now.
    public var state: State { shared.withLock { $0.state } }

    /// Changes the network to `state`, as one kernel event would: each running
    /// monitor delivers the change it sees (nothing when its part is unchanged), and
    /// each running `Connectivity` checks again when its path or the verdict changed.
    /// Monitors made afterwards, and the getters of stopped ones, report it too.
    /// After ``end(message:)`` it changes what the getters report, and nothing is
    /// delivered.
    public func set(_ state: State) {
        update { $0 = state }
    }

    /// Changes the network with `change`, as one kernel event would (see ``set(_:)``).
    ///
    /// ```swift
    /// import ReachabilityTestKit
    ///
    /// let network = SimulatedNetwork()
    /// network.update { $0.flags.insert(.connectionRequired) }
    /// ```
    ///
    /// `change` runs under the network's lock: it must not call the network.
    public func update(_ change: (inout State) -> Void) {
        // Fed under the lock, so that monitors see the changes in order; feeding
        // runs no user code (deliveries are queued), and never calls back here.
        shared.withLock { shared in
            let before = shared.state
            change(&shared.state)
            guard shared.ended == nil else { return }
            shared.generation += 1
            let states = SimulatedStates(reachability: shared.state.reachability, path: shared.state.path)
            shared.subscribers = shared.subscribers.filter { $0.value.feed(states, shared.generation) }
            #if Connectivity || Everything
                // A new path makes its own check; a new verdict alone is checked now.
                if shared.state.verdict != before.verdict && shared.state.path == before.path {
                    shared.checkers = shared.checkers.filter { $0.value() }
                }
            #else
                _ = before
            #endif
        }
    }

    /// Ends the network as the loss of its namespace does (`/run/netns/NAME`
    /// deleted): every running monitor stops and reports a `ReachabilityError`
    /// with code `.namespace` and `message` — a
    /// `Reachability` to `whenError` and `lastError`, a `PathMonitor` with a last
    /// unsatisfied path and `lastError`, a `Connectivity` with notConnected and
    /// `lastError` — and their `updates` sequences finish. Starting a monitor of
    /// this network afterwards throws that error.
    public func end(message: String = "the simulated network's namespace went away") {
        let error = ReachabilityError(.namespace, message)
        let subscribers = shared.withLock { shared -> [Subscriber] in
            guard shared.ended == nil else { return [] }
            shared.ended = error
            shared.checkers = [:]
            defer { shared.subscribers = [:] }
            return Array(shared.subscribers.values)
        }
        for subscriber in subscribers { subscriber.end(error) }
    }
}

extension SimulatedNetwork: NetworkSimulation {
    /// How many instances have subscribed (started), stopped ones included until the next change.
    package var subscriberCount: Int { shared.withLock { $0.subscribers.count } }

    package var states: SimulatedStates {
        shared.withLock { SimulatedStates(reachability: $0.state.reachability, path: $0.state.path) }
    }

    package func subscribe(
        _ id: ObjectIdentifier, feed: @escaping @Sendable (SimulatedStates, UInt64) -> Bool,
        end: @escaping @Sendable (ReachabilityError) -> Void
    ) throws(ReachabilityError) -> (states: SimulatedStates, generation: UInt64) {
        try shared.withLock { shared throws(ReachabilityError) in
            if let ended = shared.ended { throw ended }
            shared.subscribers[id] = Subscriber(feed: feed, end: end)
            return (
                SimulatedStates(reachability: shared.state.reachability, path: shared.state.path), shared.generation
            )
        }
    }
}

#if Connectivity || Everything
    extension SimulatedNetwork: ConnectivitySimulation {
        package var verdict: Verdict { state.verdict }

        package func subscribeChecks(_ id: ObjectIdentifier, recheck: @escaping @Sendable () -> Bool) {
            shared.withLock { shared in
                if shared.ended == nil { shared.checkers[id] = recheck }
            }
        }
    }
#endif
