/// What a simulated network gives the monitors made for it: the state every
/// `Reachability` reports, whatever its target, and the path every `PathMonitor`
/// reports.
package struct SimulatedStates: Sendable, Equatable {
    /// What every `Reachability` of the simulated network reports.
    package var reachability: ReachabilityState
    /// What every `PathMonitor` of the simulated network reports.
    package var path: NetworkPath

    /// The states of a network: `reachability` for every target, `path` for every path monitor.
    package init(reachability: ReachabilityState, path: NetworkPath) {
        self.reachability = reachability
        self.path = path
    }
}

/// A network that stands in for the kernel: ReachabilityTestKit's `SimulatedNetwork`.
/// A `Reachability` or `PathMonitor` made for an environment that carries one
/// (``NetworkEnvironment/simulation``) takes its states from it instead of from a
/// netlink monitor's evaluations, and opens no socket; everything after the
/// evaluation (the delivery state machine, the queue, callbacks, observers,
/// streams, notifications) is the one the kernel's states go through.
package protocol NetworkSimulation: AnyObject, Sendable {
    /// The states now: what a stopped instance's getters report.
    var states: SimulatedStates { get }

    /// Subscribes the starting instance `id` (a later call for the same `id`
    /// replaces its subscription): `feed` is called with every later change and its
    /// generation, in order, until it returns false; `end` once, with the error that
    /// ends the network. Returns the states now and their generation; throws that
    /// error when the network has already ended.
    func subscribe(
        _ id: ObjectIdentifier, feed: @escaping @Sendable (SimulatedStates, UInt64) -> Bool,
        end: @escaping @Sendable (ReachabilityError) -> Void
    ) throws(ReachabilityError) -> (states: SimulatedStates, generation: UInt64)
}
