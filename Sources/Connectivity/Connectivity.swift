import Dispatch
public import Foundation
import NIOSSL
import Reachability

extension Notification.Name {
    /// Posted by a started ``Connectivity`` (the object) on its
    /// ``Connectivity/notificationQueue`` whenever its status or verdict changes;
    /// `userInfo[Connectivity.resultKey]` is the ``ConnectivityResult`` that changed it.
    public static let connectivityDidChange = Notification.Name("ReachabilityConnectivityDidChange")
}

/// Whether the Internet is really there, or a captive portal, or nothing — the
/// model of rwbutler/Connectivity, driven by the kernel's path changes.
///
/// ```swift
/// let connectivity = try Connectivity()
/// connectivity.whenConnected = { print("online via", $0.status) }
/// connectivity.whenDisconnected = { print("offline:", $0.latestResult?.verdict ?? .notConnected) }
/// try connectivity.startNotifier()
/// ```
///
/// A check fetches the configured endpoints concurrently and compares each answer
/// with its expectation; the success threshold decides online. It runs at start,
/// whenever the path changes (netlink, through the shared monitor: no polling),
/// while not online after a backoff (1 s doubling to a limit), and on a polling
/// interval if you set one. Hysteresis: two failed checks in a row (by default)
/// leave online, one success returns. A path that goes away cancels the probes in
/// flight and reports notConnected at once; a check that finishes after a newer
/// one started is dropped.
///
/// Probes never follow redirects, read at most 64 KiB of a body, bypass caches,
/// and leave from the configured namespace. In another namespace, host names in
/// endpoint URLs are still resolved by the process's resolver (AsyncHTTPClient
/// has no resolver hook): use IP-literal URLs there.
///
/// Callbacks, notifications and the completion handler of
/// ``checkConnectivity(completion:)`` run on ``notificationQueue``: the
/// configuration's ``ConnectivityConfiguration/notificationQueue``, else a serial
/// queue of the library's.
///
/// `Sendable`: all mutable state is behind a lock; callbacks run on the
/// notification queue, never under it.
public final class Connectivity: Sendable {
    /// The configuration it was made with.
    public let configuration: ConnectivityConfiguration
    private let endpoints: [ConnectivityEndpoint]
    private let tlsConfiguration: TLSConfiguration?
    /// The serial queue ``whenConnected``, ``whenDisconnected``, the
    /// ``Foundation/Notification/Name/connectivityDidChange`` notification and the
    /// completion handler of ``checkConnectivity(completion:)`` run on: the
    /// configuration's ``ConnectivityConfiguration/notificationQueue``, or else a
    /// private serial queue of the library's, shared by every instance made without
    /// one (not `.main`: a Linux daemon may never drain it).
    public let notificationQueue: DispatchQueue
    private let state: LockedValue<State>

    private struct State {
        var machine: ConnectivityMachine
        var running = false
        /// Bumped by every start and stop: deliveries of another run are dropped.
        var run: UInt64 = 0
        var monitor: PathMonitor?
        var check: Task<Void, Never>?
        var timer: Task<Void, Never>?
        var whenConnected: (@Sendable (Connectivity) -> Void)?
        var whenDisconnected: (@Sendable (Connectivity) -> Void)?
        var streams = StreamRegistry<ConnectivityResult>()
        /// Connected as last delivered to the callbacks (nil: nothing delivered yet).
        var deliveredConnected: Bool?
    }

    /// The `userInfo` key of ``Foundation/Notification/Name/connectivityDidChange``'s result.
    public static let resultKey = "result"

    /// The queue deliveries run on when the configuration names none.
    private static let defaultNotificationQueue = DispatchQueue(label: "Connectivity.notifications")

    /// Checks against `configuration`; throws ``ConnectivityError`` when it can't
    /// work (no endpoints, a bad URL, header, pattern or threshold).
    public init(configuration: ConnectivityConfiguration = ConnectivityConfiguration()) throws(ConnectivityError) {
        let settings = try configuration.validatedSettings()
        endpoints = settings.endpoints
        if let roots = settings.trustRoots {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(roots)
            tlsConfiguration = tls
        } else {
            tlsConfiguration = nil
        }
        self.configuration = configuration
        notificationQueue = configuration.notificationQueue ?? Self.defaultNotificationQueue
        state = LockedValue(
            State(
                machine: ConnectivityMachine(
                    settings: .init(
                        failuresToGoOffline: configuration.failuresToGoOffline,
                        offlineRetryInitial: configuration.offlineRetryInitial,
                        offlineRetryLimit: configuration.offlineRetryLimit,
                        pollingInterval: configuration.pollingInterval,
                        pollWhileOfflineOnly: configuration.pollWhileOfflineOnly))))
    }

    deinit {
        stopNotifier()
    }

    /// Called on ``notificationQueue`` when the status becomes connected.
    public var whenConnected: (@Sendable (Connectivity) -> Void)? {
        get { state.withLock { $0.whenConnected } }
        set { state.replace(\.whenConnected, with: newValue) }
    }

    /// Called on ``notificationQueue`` when the status becomes not connected (also
    /// for the first result, when it is not connected).
    public var whenDisconnected: (@Sendable (Connectivity) -> Void)? {
        get { state.withLock { $0.whenDisconnected } }
        set { state.replace(\.whenDisconnected, with: newValue) }
    }

    /// The status now: `.determining` until the first check after start finishes.
    public var status: ConnectivityStatus { state.withLock { $0.machine.status } }

    /// True when the last check (hysteresis applied) validated the Internet.
    public var isConnected: Bool { status.isConnected }

    /// The result behind ``status``: verdict, interface and per-endpoint outcomes.
    public var latestResult: ConnectivityResult? { state.withLock { $0.machine.published } }

    /// Whether the notifier is running: true from ``startNotifier()`` until
    /// ``stopNotifier()``.
    public var isNotifierRunning: Bool { state.withLock { $0.running } }

    /// Why the running notifier can no longer tell anything, if that happened: the
    /// watched network namespace went away (`/run/netns/NAME` deleted, or the process
    /// behind `/proc/PID/ns/net` exited), code ``ConnectivityError/Code/namespace``.
    /// The last result published is then notConnected. Stop and start again to
    /// watch a namespace made anew under the same name.
    public var lastError: ConnectivityError? {
        let monitor = state.withLock { $0.monitor }
        return monitor?.lastError.map { ConnectivityError($0, while: "the path monitor stopped") }
    }

    /// Every change as an `AsyncSequence`: the current result first when there is
    /// one, then each change; a slow consumer sees only the newest. It finishes on
    /// ``stopNotifier()`` (a sequence made before ``startNotifier()`` waits for it).
    public var updates: AsyncStream<ConnectivityResult> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ConnectivityResult.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state -> UInt64 in
            if state.running, let current = state.machine.published { continuation.yield(current) }
            return state.streams.add(continuation)
        }
        continuation.onTermination = { [weak self] _ in
            // The removed continuation is released here, after unlocking.
            let removed = self?.state.withLock { $0.streams.remove(id) }
            withExtendedLifetime(removed) {}
        }
        return stream
    }

    /// Starts watching the path and checking: the first result arrives when the
    /// first check finishes (at once for no usable path). Does nothing while
    /// running. Throws ``ConnectivityError`` when the netlink monitor can't be
    /// started or the namespace entered (``ConnectivityError/Code/namespace``), or
    /// when no descriptor is left for the HTTP client
    /// (``ConnectivityError/Code/systemCall``, `EMFILE`).
    public func startNotifier() throws(ConnectivityError) {
        // Everything that can fail or take time happens before the state changes, so
        // a concurrent stop never sees half a start.
        let environment = configuration.environment
        let monitor = try Self.makePathMonitor(environment)
        _ = try ProbeClients.shared.lease(environment)  // Held until stop.
        let run = state.withLock { state -> UInt64? in
            guard !state.running else { return nil }
            state.running = true
            state.run += 1
            state.monitor = monitor
            return state.run
        }
        guard let run else {
            ProbeClients.shared.release(environment)  // Already running: its own lease stands.
            return
        }
        do throws(ReachabilityError) {
            // Subscribed directly: each path goes to the machine as the monitor
            // evaluates it, in order, with no queue in between (`handle` only takes
            // this instance's lock and starts tasks; it never calls back into the monitor).
            try monitor.start(directly: { [weak self] path in
                self?.handle(run: run) { machine in machine.pathChanged(path, at: Date()) }
            })
        } catch {
            stop(run: run)
            throw ConnectivityError(error, while: "the path monitor can't start")
        }
    }

    /// Stops: cancels the check in flight and the timer, drops queued callbacks,
    /// finishes every ``updates`` sequence and releases the HTTP client. It can be
    /// started again.
    public func stopNotifier() {
        stop(run: nil)
    }

    /// Stops the run `run` (nil: whichever is running).
    private func stop(run: UInt64?) {
        let stopped = state.withLock {
            state -> (PathMonitor?, [Task<Void, Never>], [AsyncStream<ConnectivityResult>.Continuation])? in
            guard state.running, run == nil || state.run == run else { return nil }
            state.running = false
            state.run += 1
            _ = state.machine.stop()
            state.deliveredConnected = nil
            let tasks = [state.check, state.timer].compactMap { $0 }
            state.check = nil
            state.timer = nil
            let monitor = state.monitor
            state.monitor = nil
            let streams = state.streams.takeAll()
            ProbeClients.shared.release(configuration.environment)  // The start's lease.
            return (monitor, tasks, streams)
        }
        guard let (monitor, tasks, streams) = stopped else { return }
        monitor?.cancel()
        for task in tasks { task.cancel() }
        for stream in streams { stream.finish() }
    }

    /// Checks once, now, whether or not the notifier runs (its state is left
    /// alone): the path first (notConnected without one, no probe sent), then the
    /// endpoints. While the probes run the path is watched (the shared netlink
    /// monitor): when it stops being usable, the probes are cancelled and the
    /// result is notConnected at once.
    ///
    /// What the network does is a verdict; what stops the check from running is
    /// thrown: ``ConnectivityError`` when the path monitor can't start (no
    /// descriptor left, netlink sockets refused: ``ConnectivityError/Code/systemCall``;
    /// the namespace gone: ``ConnectivityError/Code/namespace``) or the HTTP client
    /// can't be made (``ConnectivityError/Code/systemCall``, `EMFILE`).
    public func checkConnectivity() async throws(ConnectivityError) -> ConnectivityResult {
        let environment = configuration.environment
        let monitor = try Self.makePathMonitor(environment)
        do throws(ReachabilityError) {
            try monitor.start(queue: Self.oneOffQueue)
        } catch {
            throw ConnectivityError(error, while: "the path monitor can't start")
        }
        defer { monitor.cancel() }
        let paths = monitor.paths
        let path = monitor.currentPath
        let interface = path.availableInterfaces.first
        guard path.status == .satisfied else { return Self.notConnected(path) }
        let client = try ProbeClients.shared.lease(environment)
        defer { ProbeClients.shared.release(environment) }
        let runner = runner(client)
        let event = await withTaskGroup(of: OneOffEvent.self) { group -> OneOffEvent in
            group.addTask { .finished(await runner.run()) }
            group.addTask {
                for await path in paths where path.status != .satisfied { return .pathLost(path) }
                return .watchEnded  // Cancelled, or the monitor stopped: the probes decide.
            }
            while let event = await group.next() {
                if case .watchEnded = event { continue }
                group.cancelAll()
                return event
            }
            return .watchEnded  // Not reached: the probes always finish.
        }
        guard case .finished(let outcome) = event else {
            if case .pathLost(let lost) = event { return Self.notConnected(lost) }
            return Self.notConnected(.unsatisfied)
        }
        return ConnectivityResult(
            verdict: outcome.verdict,
            status: .make(validated: outcome.verdict == .online, pathUsable: true, interfaceType: interface?.type),
            interface: interface, endpoints: outcome.endpoints, captivePortalAPI: outcome.api, date: Date())
    }

    /// ``checkConnectivity()`` with a completion handler, called on
    /// ``notificationQueue`` with the result, or with the ``ConnectivityError`` that
    /// stopped the check from running (no descriptor left, the namespace gone).
    public func checkConnectivity(
        completion: @escaping @Sendable (Result<ConnectivityResult, ConnectivityError>) -> Void
    ) {
        let queue = notificationQueue
        Task {
            let result: Result<ConnectivityResult, ConnectivityError>
            do throws(ConnectivityError) {
                result = .success(try await checkConnectivity())
            } catch {
                result = .failure(error)
            }
            queue.async { completion(result) }
        }
    }

    /// What ends a one-off check first: the probes, or the path going away.
    private enum OneOffEvent: Sendable {
        case finished(ProbeRunner.Outcome)
        case pathLost(NetworkPath)
        case watchEnded
    }

    /// The queue a one-off check's path monitor is started on (no handler runs there).
    private static let oneOffQueue = DispatchQueue(label: "Connectivity.oneOff")

    /// A path monitor for `environment`; its failure as a ``ConnectivityError``.
    private static func makePathMonitor(_ environment: NetworkEnvironment) throws(ConnectivityError) -> PathMonitor {
        do throws(ReachabilityError) {
            return try PathMonitor(environment: environment)
        } catch {
            throw ConnectivityError(error, while: "the path monitor can't be made")
        }
    }

    /// The result for no usable path.
    private static func notConnected(_ path: NetworkPath) -> ConnectivityResult {
        ConnectivityResult(
            verdict: .notConnected, status: .notConnected, interface: path.availableInterfaces.first, endpoints: [],
            captivePortalAPI: nil, date: Date())
    }

    // MARK: - Engine

    private func runner(_ client: ProbeClient) -> ProbeRunner {
        ProbeRunner(
            client: client, endpoints: endpoints, successThreshold: configuration.successThreshold,
            captivePortalAPI: configuration.captivePortalAPI, probeTimeout: configuration.probeTimeout,
            checkDeadline: configuration.checkDeadline, maximumBodySize: configuration.maximumBodySize,
            userAgent: configuration.userAgent, tlsConfiguration: tlsConfiguration)
    }

    /// Feeds one input to the machine (if `run` is still current) and runs the
    /// actions it returns: tasks are started under the lock, so that a newer
    /// generation's cancel always finds them; callbacks are queued in order.
    private func handle(run: UInt64, _ input: (inout ConnectivityMachine) -> [ConnectivityMachine.Action]) {
        state.withLock { state in
            guard state.running, state.run == run else { return }
            for action in input(&state.machine) {
                switch action {
                case .cancelCheck:
                    state.check?.cancel()
                    state.check = nil
                case .cancelTimer:
                    state.timer?.cancel()
                    state.timer = nil
                case .startCheck(let generation):
                    state.check?.cancel()
                    state.check = startCheck(run: run, generation: generation)
                case .schedule(let delay, let generation):
                    state.timer?.cancel()
                    state.timer = Task { [weak self] in
                        guard (try? await Task.sleep(for: delay)) != nil else { return }
                        self?.handle(run: run) { $0.timerFired(generation: generation) }
                    }
                case .publish(let result):
                    deliver(result, state: &state, run: run)
                }
            }
        }
    }

    /// Starts a check of `generation`; called under the state lock while running,
    /// when the start's lease keeps the client alive (so nothing is made here).
    private func startCheck(run: UInt64, generation: UInt64) -> Task<Void, Never> {
        let environment = configuration.environment
        let client = ProbeClients.shared.leaseExisting(environment)
        let runner = client.map(runner)
        return Task { [weak self] in
            var outcome = ProbeRunner.Outcome(
                verdict: .noInternet(.connectionFailed), endpoints: [], api: nil)  // Not reached: no client.
            if let runner {
                outcome = await runner.run()
                ProbeClients.shared.release(environment)
            }
            guard !Task.isCancelled else { return }
            self?.handle(run: run) { machine in
                machine.checkFinished(
                    generation: generation, verdict: outcome.verdict, endpoints: outcome.endpoints, api: outcome.api,
                    at: Date())
            }
        }
    }

    private func deliver(_ result: ConnectivityResult, state: inout State, run: UInt64) {
        state.streams.yield(result)
        let connected = result.status.isConnected
        let previously = state.deliveredConnected
        state.deliveredConnected = connected
        let callback: (@Sendable (Connectivity) -> Void)? =
            previously == connected ? nil : (connected ? state.whenConnected : state.whenDisconnected)
        notificationQueue.async { [weak self] in
            guard let self, self.state.withLock({ $0.running && $0.run == run }) else { return }
            callback?(self)
            NotificationCenter.default.post(
                name: .connectivityDidChange, object: self, userInfo: [Connectivity.resultKey: result])
        }
    }
}
