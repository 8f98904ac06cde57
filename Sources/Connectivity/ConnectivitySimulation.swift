package import Reachability

/// What a simulated network (ReachabilityTestKit's `SimulatedNetwork`, carried by
/// ``ConnectivityConfiguration/environment``) says in place of the probes: a
/// ``Connectivity`` made for it sends none, opens no socket, and takes this
/// verdict as every check's outcome; its path comes from the simulated
/// `PathMonitor`, and what follows the check (the machine's hysteresis, retries,
/// the queue, callbacks, streams, notifications) is the production path.
package protocol ConnectivitySimulation: NetworkSimulation {
    /// The outcome of every check run now.
    var verdict: Verdict { get }

    /// Subscribes the running instance `id` (a later call for the same `id`
    /// replaces its subscription): `recheck` is called after every change of
    /// ``verdict``, until it returns false.
    func subscribeChecks(_ id: ObjectIdentifier, recheck: @escaping @Sendable () -> Bool)
}

extension NetworkEnvironment {
    /// The simulated network standing in for the probes, if there is one.
    var connectivitySimulation: (any ConnectivitySimulation)? { simulation as? any ConnectivitySimulation }
}
