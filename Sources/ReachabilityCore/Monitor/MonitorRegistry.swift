@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// One monitor per watched namespace, shared by every client in the process:
/// started by the first client, stopped after the last one leaves. Ten thousand
/// targets share one event socket.
package enum MonitorRegistry {
    /// What makes two environments share a monitor.
    struct Key: Hashable, Sendable {
        var namespace: FileIdentity?
        var sysfsRoot: String?
        var eventReceiveBuffer: Int
        /// The environment's system calls, by their fault plan's identity: a monitor
        /// made with a plan is never shared with an environment without it (or with
        /// another plan).
        var systemCalls: SystemCalls

        /// The key of `environment` as its namespace path names it now.
        init(_ environment: NetworkEnvironment) throws(ReachabilityError) {
            let namespace = try environment.openNamespace()
            self.init(environment, namespace: namespace)
        }

        /// The key of `environment` in the namespace held open as `namespace`.
        init(_ environment: NetworkEnvironment, namespace: NetworkNamespace?) {
            self.namespace = namespace?.identity
            sysfsRoot = environment.sysfsRoot
            eventReceiveBuffer = environment.eventReceiveBuffer
            systemCalls = environment.systemCalls
        }
    }

    private static let monitors = LockedValue<[Key: NetlinkMonitor]>([:])

    /// Adds `client` to its namespace's monitor, starting the monitor if it is
    /// the first. The start happens outside the registry lock, so a slow or failing
    /// namespace never holds up another; others registering meanwhile wait for its
    /// outcome. Throws when the monitor cannot start (socket or namespace errors).
    static func register(_ client: any MonitorClient, environment: NetworkEnvironment) throws(ReachabilityError)
        -> NetlinkMonitor
    {
        // Opened once: the key, the monitor's sockets and its resolutions all use
        // this very namespace, whatever its path names later.
        let namespace = try environment.openNamespace()
        let key = Key(environment, namespace: namespace)
        let found: Result<(NetlinkMonitor, Bool), ReachabilityError> = monitors.withLock { monitors in
            do throws(ReachabilityError) {
                if let existing = monitors[key] {
                    try existing.add(client)
                    return .success((existing, false))
                }
                let monitor = try NetlinkMonitor(environment: environment, namespace: namespace)
                try monitor.add(client)
                monitors[key] = monitor
                return .success((monitor, true))
            } catch {
                return .failure(error)
            }
        }
        let (monitor, mustStart) = try found.get()
        if mustStart {
            do throws(ReachabilityError) {
                try monitor.start()
            } catch {
                monitors.withLock { monitors in
                    if monitors[key] === monitor { monitors[key] = nil }
                }
                throw error
            }
        } else {
            do throws(ReachabilityError) {
                try monitor.waitUntilStarted()
            } catch {
                _ = monitor.remove(client)
                throw error
            }
        }
        return monitor
    }

    /// Removes `client`; stops the monitor (outside the registry lock) when it was the last.
    static func unregister(_ client: any MonitorClient, from monitor: NetlinkMonitor) {
        let finished = monitors.withLock { monitors -> NetlinkMonitor? in
            guard monitor.remove(client) == 0 else { return nil }
            for (key, value) in monitors where value === monitor {
                monitors[key] = nil
            }
            return monitor
        }
        finished?.stop()
    }

    /// Drops a monitor that stopped by itself (its namespace went away), so that
    /// the next registration makes a new one.
    static func forget(_ monitor: NetlinkMonitor) {
        monitors.withLock { monitors in
            for (key, value) in monitors where value === monitor { monitors[key] = nil }
        }
    }

    /// The monitor registered for `environment`, if any (it may still be starting).
    static func running(for environment: NetworkEnvironment) -> NetlinkMonitor? {
        guard let key = try? Key(environment) else { return nil }
        return monitors.withLock { $0[key] }
    }

    /// The monitor for `environment` if it has started and not stopped: what a
    /// one-off evaluation may read (a monitor still starting has an empty table).
    static func serving(for environment: NetworkEnvironment) -> NetlinkMonitor? {
        running(for: environment).flatMap { $0.isServing ? $0 : nil }
    }

    /// How many monitors are running (tests check that targets share one).
    static var runningCount: Int { monitors.withLock { $0.count } }
}

extension MonitorRegistry {
    /// The counters of the monitor running for `environment` (nil when none runs):
    /// overruns, resyncs, events received, evaluation passes. Package access: for
    /// the stress runs, which run in a process of their own (Tests/ReachabilityStress).
    package static func counters(
        for environment: NetworkEnvironment
    ) -> (overruns: Int, resyncs: Int, events: Int, passes: Int)? {
        guard let statistics = running(for: environment)?.statistics else { return nil }
        return (statistics.overruns, statistics.resyncs, statistics.eventsReceived, statistics.evaluationPasses)
    }

    /// Interfaces and interface-address lists in the published table of the monitor
    /// running for `environment` (what must shrink back when interfaces go away).
    package static func tableSizes(for environment: NetworkEnvironment) -> (interfaces: Int, addressLists: Int)? {
        guard let monitor = running(for: environment) else { return nil }
        let (table, _) = monitor.snapshot
        return (table.interfaces.count, table.addresses.count)
    }
}

/// Evaluates once, without a notifier: through the running monitor of the
/// namespace when there is one, else with a short-lived request socket.
enum OneShotEvaluator {
    /// Runs `body` with an interface table and a way to ask the kernel.
    static func run<T: Sendable>(
        environment: NetworkEnvironment,
        _ body: @escaping @Sendable (InterfaceTable, Lookup) throws(ReachabilityError) -> T
    ) throws(ReachabilityError) -> T {
        if let monitor = MonitorRegistry.serving(for: environment) {
            let (table, _) = monitor.snapshot
            if let value = try? body(table, { requests throws(ReachabilityError) in try monitor.lookup(requests) }) {
                return value
            }
        }
        let sysfs = SysfsReader(environment)
        let namespace = try environment.openNamespace()
        return try JoinableThread.inNamespace(namespace) { () throws(ReachabilityError) in
            let socket = try NetlinkSocket(
                receiveBuffer: 1 << 20, role: .oneOff, systemCalls: environment.systemCalls)
            var table = InterfaceTable()
            try NetlinkMonitor.load(into: &table, from: socket, sysfs: sysfs)
            _ = NetlinkMonitor.refreshWireless(&table, environment: environment)
            return try body(table) { requests throws(ReachabilityError) in try socket.lookup(requests) }
        }
    }

    /// Evaluates `evaluation` now, on the namespace's serving monitor or a socket
    /// of its own (the same path as the monitor's passes).
    static func evaluate<E: Evaluation>(_ evaluation: E, environment: NetworkEnvironment) throws(ReachabilityError)
        -> E.State
    {
        try run(environment: environment) { table, lookup throws(ReachabilityError) in
            try evaluation.evaluate(in: table, lookup: lookup)
        }
    }
}
