@_spi(Testing) import ReachabilityBase

/// The part of an `InterfaceMonitor` the netlink monitor holds: a ``Subscription``
/// over ``InterfacesEvaluation``, delivering to the streams only.
final class InterfaceMonitorCore: Subscription {
    struct Storage: SubscriptionStorage {
        var machine = DeliveryStateMachine<[InterfaceDetails]>()
        /// Set while registered with a monitor; whoever clears it unregisters.
        var monitor: NetlinkMonitor?
        var streams = StreamRegistry<[InterfaceDetails]>()
        /// Why the monitor stopped by itself (its namespace went away), if it did.
        var lastError: ReachabilityError?
    }

    let environment: NetworkEnvironment
    let storage = LockedValue(Storage())

    init(environment: NetworkEnvironment) {
        self.environment = environment
    }

    func currentEvaluation() -> InterfacesEvaluation { InterfacesEvaluation() }

    /// A simulated network's interfaces: those its path has available, up, with
    /// carrier and the path's families as default routes (addresses unknown).
    static func simulated(_ states: SimulatedStates) -> [InterfaceDetails] {
        let path = states.path
        guard path.status != .unsatisfied else { return [] }
        let families = (path.supportsIPv4 ? [IPAddress.Family.ipv4] : []) + (path.supportsIPv6 ? [.ipv6] : [])
        return path.availableInterfaces.map {
            InterfaceDetails(
                interface: $0, operState: "up", isUp: true, hasCarrier: true, addresses: [],
                defaultRouteFamilies: families)
        }
    }

    func observe(_ state: [InterfaceDetails], generation: UInt64, planned evaluation: InterfacesEvaluation) {
        storage.withLock { storage in
            guard let action = storage.machine.observe(state, generation: generation) else { return }
            schedule(action, in: &storage)
        }
    }

    func start() throws(ReachabilityError) {
        guard let (token, monitor) = try beginStart(prepare: { $0.lastError = nil }) else { return }
        try completeStart(token, on: monitor)
    }

    /// The namespace went away: the sequences finish and the monitor stops.
    func monitorFailed(_ error: ReachabilityError) {
        let streams = storage.withLock { storage -> [AsyncStream<[InterfaceDetails]>.Continuation]? in
            guard isWatching(storage) else { return nil }
            storage.machine.stop()
            storage.monitor = nil
            storage.lastError = error
            return storage.streams.takeAll()
        }
        for stream in streams ?? [] { stream.finish() }
    }

    func schedule(_ action: DeliveryStateMachine<[InterfaceDetails]>.Action, in storage: inout Storage) {
        // Streams only: yielding runs no user code, so no queue hop.
        guard case .deliver(let interfaces, _) = action else { return }
        storage.streams.yield(interfaces)
    }
}
