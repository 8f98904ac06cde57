import Dispatch
public import Foundation
import NIOSSL
public import Reachability

extension Notification.Name {
    /// Posted by a started ``Connectivity`` (the object) on its
    /// ``Connectivity/notificationQueue`` whenever its status or verdict changes;
    /// `userInfo[Connectivity.resultKey]` is the ``ConnectivityResult`` that changed it.
    /// rwbutler's ``ConnectivityDidChange`` is posted too when the status changed.
    public static let connectivityDidChange = Notification.Name("ReachabilityConnectivityDidChange")
}

/// Whether the Internet is really there, or a captive portal, or nothing — the
/// model of rwbutler/Connectivity, driven by the kernel's path changes.
///
/// ```swift
/// let connectivity = Connectivity(configuration: .recommended)
/// connectivity.whenConnected = { print("online via", $0.status) }
/// connectivity.whenDisconnected = { print("offline:", $0.latestResult?.verdict ?? .notConnected) }
/// try connectivity.start()
/// ```
///
/// A check fetches the configured endpoints concurrently and compares each answer
/// with its expectation; the success threshold decides online. It runs at start,
/// whenever the path changes (netlink, through the shared monitor: no polling),
/// while not online after a backoff (1 s doubling to a limit; with
/// ``ConnectivityConfiguration/retriesWhileOffline``), and on a polling interval if
/// you set one. Hysteresis: two failed checks in a row (in
/// ``ConnectivityConfiguration/recommended``) leave online, one success returns.
/// `Connectivity()` and `ConnectivityConfiguration()` are rwbutler's instead: no
/// retries, no hysteresis (see `Compat/RwbutlerConnectivity.swift`). A path that
/// goes away cancels the probes in flight and reports notConnected at once; a
/// check that finishes after a newer one started is dropped.
///
/// Probes never follow redirects, read at most 64 KiB of a body, bypass caches,
/// and leave from the configured namespace, where endpoint names are resolved
/// too (with its `/etc/netns/NAME` files, as `ip netns exec` reads them).
///
/// Callbacks, notifications and the completion handler of
/// ``checkConnectivity(completion:)`` run on ``notificationQueue``: the queue given
/// to the initializer, else a serial queue of the library's.
///
/// The settings can change at any time (``configuration``, and rwbutler's
/// properties such as `connectivityURLs` or `isPollingEnabled`): a change applies
/// from the next check, and a change of polling at once; only the
/// ``ConnectivityConfiguration/environment`` waits for the next start. A setting
/// that can't work doesn't stop anything: checks then fail, and ``lastError`` says
/// why (``init(validating:notificationQueue:)`` and ``start()`` throw it instead).
///
/// rwbutler/Connectivity's spellings (`Connectivity(shouldUseHTTPS:)`,
/// `connectivityURLs`, `validationMode`, `isConnectedViaWiFi`, the fluent
/// configuration…) are in `Compat/RwbutlerConnectivity.swift`.
///
/// `Sendable`: all mutable state is behind a lock; callbacks run on the
/// notification queue, never under it.
public final class Connectivity: Sendable, CustomStringConvertible {
    private let state: LockedValue<State>
    /// What the re-check timer and the probes' timers run on (tests advance their own).
    private let clock: any TimerClock

    /// A configuration checked once: the endpoints a check uses, or why none can run.
    struct Resolved: Sendable {
        var endpoints: [ConnectivityEndpoint] = []
        /// ``ConnectivityConfiguration/fallbackEndpoints`` as validated, and how many per check.
        var fallbacks: [ConnectivityEndpoint] = []
        var fallbacksPerCheck = 0
        /// The TLS context of the configuration's HTTPS probes (its trust roots).
        var tls = ProbeTLSContext(nil)
        /// Which probes go through which proxy.
        var proxy = ProxyRules.direct
        var error: ConnectivityError?
        /// The machine's settings, from the last configuration that could work.
        var machineSettings: ConnectivityMachine.Settings?

        init(_ configuration: ConnectivityConfiguration) {
            do throws(ConnectivityError) {
                let settings = try configuration.validatedSettings()
                endpoints = settings.endpoints
                fallbacks = settings.fallbacks
                fallbacksPerCheck = configuration.fallbacksPerCheck
                proxy = settings.proxy
                if let roots = settings.trustRoots {
                    var tls = TLSConfiguration.makeClientConfiguration()
                    tls.trustRoots = .certificates(roots)
                    self.tls = ProbeTLSContext(tls)
                }
                machineSettings = .init(
                    failuresToGoOffline: configuration.failuresToGoOffline,
                    offlineRetryInitial: configuration.offlineRetryInitial,
                    offlineRetryLimit: configuration.offlineRetryLimit,
                    pollingInterval: configuration.pollingInterval,
                    pollWhileOfflineOnly: configuration.pollWhileOfflineOnly,
                    retriesWhileOffline: configuration.retriesWhileOffline, framework: configuration.rwbutler.framework,
                    scope: configuration.scope)
            } catch {
                self.error = error
            }
        }
    }

    private struct State {
        /// The settings as last set (possibly ones that can't work).
        var configuration: ConnectivityConfiguration
        /// Bumped by every change of ``configuration``.
        var version: UInt64 = 0
        /// ``configuration`` checked; what checks use.
        var resolved: Resolved
        var machine: ConnectivityMachine
        var running = false
        /// Bumped by every start and stop: deliveries of another run are dropped.
        var run: UInt64 = 0
        var monitor: PathMonitor?
        /// ``Connectivity/holdDown``: set on the run's monitor.
        var holdDown: Duration?
        /// The namespace of the run (the configuration's at start).
        var environment: NetworkEnvironment
        /// ``Connectivity/notificationQueue`` as given, if it was.
        var queue: DispatchQueue?
        var check: Task<Void, Never>?
        var timer: Task<Void, Never>?
        var whenConnected: (@Sendable (Connectivity) -> Void)?
        var whenDisconnected: (@Sendable (Connectivity) -> Void)?
        var streams = StreamRegistry<ConnectivityResult>()
        /// The ``checks`` sequences.
        var checkStreams = StreamRegistry<ConnectivityResult>()
        /// The status last delivered to the callbacks (nil: nothing delivered yet).
        var deliveredStatus: ConnectivityStatus?
        /// While not running: the result of the last `checkConnectivity(completion:)`
        /// or of a start that failed; what ``status`` reports then.
        var standalone: ConnectivityResult?
        /// Why the last start or one-off check could not run (cleared by the next
        /// start, stop or one-off check that runs).
        var failure: ConnectivityError?
        /// Completion handlers waiting for the notifier's next check.
        var waiting: [@Sendable (Connectivity) -> Void] = []
        /// The machine's result count when the waiting handlers were last called.
        var resultsSeen: UInt64 = 0

        var notificationQueue: DispatchQueue {
            queue ?? configuration.rwbutler.callbackQueue ?? Connectivity.defaultNotificationQueue
        }
        /// The result ``status`` and ``latestResult`` report.
        var current: ConnectivityResult? { running ? machine.published : standalone }
    }

    /// The `userInfo` key of `Notification.Name.connectivityDidChange`'s result.
    public static let resultKey = "result"

    /// The queue deliveries run on when none is given.
    fileprivate static let defaultNotificationQueue = DispatchQueue(label: "Connectivity.notifications")

    /// Checks as `configuration` says; never fails. A configuration that can't work
    /// (no endpoints, a bad URL, header, pattern or threshold) makes every check fail
    /// with ``lastError`` saying why; ``init(validating:notificationQueue:)`` throws instead.
    ///
    /// rwbutler's `Connectivity(configuration:)`: its URLs (those set through
    /// `connectivityURLs` or `configureConnectivity(urls:)`, rwbutler's defaults
    /// included) lose their plain-HTTP ones while ``isHTTPSOnly`` is set, and, as
    /// rwbutler's sets its static `urlSessionConfiguration` to the configuration's,
    /// a configuration with such URLs makes its timeouts and session headers
    /// (module ConnectivityURLSession) those of the `Connectivity()` made
    /// afterwards. This package's own endpoints are kept as they are, and a
    /// configuration without rwbutler's URLs (``ConnectivityConfiguration/recommended``)
    /// changes no process-wide setting.
    public convenience init(configuration: ConnectivityConfiguration, notificationQueue: DispatchQueue? = nil) {
        Connectivity.adoptRwbutlerSessionSettings(of: configuration)
        self.init(configuration: configuration, notificationQueue: notificationQueue, clock: ContinuousClock())
    }

    /// ``init(configuration:notificationQueue:)`` with its timers on `clock`, and no
    /// process-wide setting changed.
    package init(configuration: ConnectivityConfiguration, notificationQueue: DispatchQueue?, clock: any TimerClock) {
        self.clock = clock
        let configuration = configuration.droppingPlainHTTPURLs(Connectivity.isHTTPSOnly)
        let resolved = Resolved(configuration)
        state = LockedValue(
            State(
                configuration: configuration, resolved: resolved,
                machine: ConnectivityMachine(settings: resolved.machineSettings ?? .init()),
                environment: configuration.environment, queue: notificationQueue))
    }

    /// Checks against `configuration`; throws ``ConnectivityError`` when it can't
    /// work (no endpoints, a bad URL, header, pattern or threshold).
    public convenience init(
        validating configuration: ConnectivityConfiguration, notificationQueue: DispatchQueue? = nil
    ) throws(ConnectivityError) {
        try configuration.validate()
        self.init(configuration: configuration, notificationQueue: notificationQueue)
    }

    deinit {
        stop()
    }

    /// The settings checks use. Setting them takes effect at the next check (a
    /// change of polling at once; the ``ConnectivityConfiguration/environment`` at
    /// the next start). A configuration that can't work makes checks fail, with
    /// ``lastError`` saying why.
    public var configuration: ConnectivityConfiguration {
        get { state.withLock { $0.configuration } }
        set { updateConfiguration { $0 = newValue } }
    }

    /// Changes the configuration under the lock, checks the result outside it, and
    /// applies it unless a newer change came meanwhile (which applies itself).
    func updateConfiguration(_ change: (inout ConnectivityConfiguration) -> Void) {
        let (configuration, version) = state.withLock { state -> (ConnectivityConfiguration, UInt64) in
            change(&state.configuration)
            state.version &+= 1
            return (state.configuration, state.version)
        }
        let resolved = Resolved(configuration)  // May read a trust-roots file: not under the lock.
        state.withLock { state in
            guard state.version == version else { return }
            state.resolved = resolved
            guard let settings = resolved.machineSettings else { return }
            let actions = state.machine.settingsChanged(settings)
            if state.running { apply(actions, state: &state, run: state.run) }
        }
    }

    /// Called on ``notificationQueue`` when the status changes to a connected one
    /// (also for the first result, when it is connected), as rwbutler's: a change
    /// from Wi-Fi to Ethernet calls it again.
    public var whenConnected: (@Sendable (Connectivity) -> Void)? {
        get { state.withLock { $0.whenConnected } }
        set { state.replace(\.whenConnected, with: newValue) }
    }

    /// Called on ``notificationQueue`` when the status changes to one that is not
    /// connected (also for the first result, when it is not connected), as
    /// rwbutler's: notConnected becoming connectedViaEthernetWithoutInternet calls
    /// it again.
    public var whenDisconnected: (@Sendable (Connectivity) -> Void)? {
        get { state.withLock { $0.whenDisconnected } }
        set { state.replace(\.whenDisconnected, with: newValue) }
    }

    /// The serial queue ``whenConnected``, ``whenDisconnected``, the notifications and
    /// the completion handler of ``checkConnectivity(completion:)`` run on: the queue
    /// given to the initializer, else a private serial queue of the library's, shared
    /// by every instance (not `.main`, which is rwbutler's default: a Linux daemon may
    /// never drain it). Changing it affects deliveries scheduled afterwards.
    public var notificationQueue: DispatchQueue {
        get { state.withLock { $0.notificationQueue } }
        set { state.withLock { $0.queue = newValue } }
    }

    /// The status now: `.determining` until the first check after start finishes.
    /// While the notifier is not running: the result of the last
    /// ``checkConnectivity(completion:)`` (or notConnected after a start that failed),
    /// else `.determining`.
    public var status: ConnectivityStatus { state.withLock { $0.current?.status ?? .determining } }

    /// True when the last check (hysteresis applied) validated the Internet.
    public var isConnected: Bool { status.isConnected }

    /// The result behind ``status``: verdict, interface and per-endpoint outcomes.
    public var latestResult: ConnectivityResult? { state.withLock { $0.current } }

    /// A hold-down against a flapping link, for the path this instance watches (its
    /// own `PathMonitor.holdDown`, not inherited from any other monitor): a change
    /// of the path — its loss as well as its return — reaches the checks only once
    /// it has lasted this long, measured from the latest change. A Wi-Fi blip
    /// shorter than it neither cancels the probes in flight nor reports
    /// notConnected; a path that stays gone does, `holdDown` after it went. Off by
    /// default (nil; nil or zero turns it off). It applies at once, to a running
    /// notifier too, and is kept across stop and start; one-off checks
    /// (``checkConnectivity()``) don't use it.
    public var holdDown: Duration? {
        get { state.withLock { $0.holdDown } }
        set {
            let monitor = state.withLock { state in
                state.holdDown = newValue
                return state.monitor
            }
            if let monitor { applyHoldDown(to: monitor) }
        }
    }

    /// Sets the run's monitor's hold-down outside this instance's lock (the monitor
    /// calls into it under its own), reading it again after each write so that a
    /// concurrent change is never overwritten by an older value.
    private func applyHoldDown(to monitor: PathMonitor) {
        var applied: Duration?? = .none
        while true {
            let wanted = state.withLock { $0.holdDown }
            if applied == .some(wanted) { return }
            monitor.holdDown = wanted
            applied = .some(wanted)
        }
    }

    /// rwbutler's description: the status's, e.g. `"Wi-Fi with Internet access"`.
    public var description: String { status.description }

    /// Whether the notifier is running: from a ``start()`` that succeeded until
    /// ``stop()``.
    public var isRunning: Bool { state.withLock { $0.running } }

    /// Why checks can't tell anything, if that is so: a start, a one-off check or the
    /// notifier's last check that could not run (no descriptor left for it:
    /// ``ConnectivityError/Code/systemCall``, nothing published; the
    /// namespace can't be entered: ``ConnectivityError/Code/namespace``); the watched
    /// network namespace gone while running (`/run/netns/NAME` deleted, or the
    /// process behind `/proc/PID/ns/net` exited: ``ConnectivityError/Code/namespace``,
    /// the last result published is then notConnected; stop and start again to watch
    /// a namespace made anew under the same name); or a configuration that can't work
    /// (``ConnectivityError/Code/invalidConfiguration``).
    public var lastError: ConnectivityError? {
        let (monitor, failure, invalid) = state.withLock { ($0.monitor, $0.failure, $0.resolved.error) }
        if let failure { return failure }
        if let error = monitor?.lastError { return ConnectivityError(error, while: "the path monitor stopped") }
        return invalid
    }

    /// Every change as an `AsyncSequence`: the current result first when there is
    /// one, then each change; a slow consumer sees only the newest. It finishes on
    /// ``stop()`` (a sequence made before ``start()`` waits for it).
    public var updates: AsyncStream<ConnectivityResult> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ConnectivityResult.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state -> UInt64 in
            if state.running, let current = state.machine.published { continuation.yield(current) }
            return state.streams.add(continuation)
        }
        continuation.onTermination = { [weak self] _ in
            let owner = self
            StreamRegistry<ConnectivityResult>.removeLater { owner?.state.withLock { $0.streams.remove(id) } }
        }
        return stream
    }

    /// Every result as it is taken, whether or not it changes anything: each check's
    /// own verdict as it finishes (a failure while ``ConnectivityConfiguration/failuresToGoOffline``
    /// holds ``status`` online included, and a check that repeats the last verdict),
    /// and notConnected when the path goes away. What counts checks (the exporter's
    /// `reachability_connectivity_checks_total`); ``updates`` has the changes. Keeps
    /// the 64 newest for a slow consumer; finishes on ``stop()`` (a sequence made
    /// before ``start()`` waits for it).
    public var checks: AsyncStream<ConnectivityResult> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ConnectivityResult.self, bufferingPolicy: .bufferingNewest(64))
        let id = state.withLock { $0.checkStreams.add(continuation) }
        continuation.onTermination = { [weak self] _ in
            let owner = self
            StreamRegistry<ConnectivityResult>.removeLater { owner?.state.withLock { $0.checkStreams.remove(id) } }
        }
        return stream
    }

    /// Starts watching the path and checking; deliveries go to
    /// ``notificationQueue``. The first result arrives
    /// when the first check finishes (at once for no usable path). Does nothing
    /// while running. Throws ``ConnectivityError`` for a configuration that can't
    /// work (``ConnectivityError/Code/invalidConfiguration``), when the netlink
    /// monitor can't be started or the namespace entered
    /// (``ConnectivityError/Code/namespace``), or when no descriptor is left for the
    /// HTTP client (``ConnectivityError/Code/systemCall``, `EMFILE`).
    ///
    /// (rwbutler's `startNotifier(queue:)`, which doesn't throw, is in
    /// `Compat/RwbutlerConnectivity.swift`.)
    public func start() throws(ConnectivityError) {
        try start(validating: true)
    }

    /// Starts; `validating`: throws for a configuration that can't work, rather
    /// than running with checks that fail.
    func start(validating: Bool) throws(ConnectivityError) {
        // Everything that can fail or take time happens before the state changes, so
        // a concurrent stop never sees half a start.
        let (environment, invalid) = state.withLock { ($0.configuration.environment, $0.resolved.error) }
        if validating, let invalid { throw invalid }
        let monitor = try Self.makePathMonitor(environment)
        // Held until stop (a simulated network's checks send nothing).
        if environment.simulation == nil { _ = try ProbeClients.shared.lease(environment) }
        let run = state.withLock { state -> UInt64? in
            guard !state.running else { return nil }
            state.running = true
            state.run += 1
            state.monitor = monitor
            state.environment = environment
            state.failure = nil
            state.standalone = nil
            state.deliveredStatus = nil
            return state.run
        }
        guard let run else {
            ProbeClients.shared.release(environment)  // Already running: its own lease stands.
            return
        }
        // A simulated network's new verdict is checked at once, as a requested check is.
        environment.connectivitySimulation?.subscribeChecks(ObjectIdentifier(self)) { [weak self] in
            guard let self, isRunning else { return false }
            handle(run: run) { $0.checkRequested().actions }
            return true
        }
        do throws(ReachabilityError) {
            applyHoldDown(to: monitor)
            // Subscribed directly: each path goes to the machine as the monitor
            // evaluates it, in order, with no queue in between (`handle` only takes
            // this instance's lock and starts tasks; it never calls back into the monitor).
            try monitor.start(directly: { [weak self] path in self?.pathChanged(path, run: run) })
        } catch {
            stop(run: run)
            throw ConnectivityError(error, while: "the path monitor can't start")
        }
    }

    /// A start that failed, made visible: notConnected, ``lastError``, and the
    /// callbacks and notifications of a change to notConnected.
    func failStart(_ error: ConnectivityError) {
        let delivery = state.withLock {
            state -> (DispatchQueue, ConnectivityResult, (@Sendable (Connectivity) -> Void)?, Bool)? in
            guard !state.running else { return nil }  // Started meanwhile by another call.
            state.failure = error
            let result = Self.notConnected(.unsatisfied)
            state.standalone = result
            let changed = state.deliveredStatus != result.status
            state.deliveredStatus = result.status
            return (state.notificationQueue, result, changed ? state.whenDisconnected : nil, changed)
        }
        guard let (queue, result, callback, changed) = delivery else { return }
        queue.async { [weak self] in
            guard let self else { return }
            callback?(self)
            self.post(result, statusChanged: changed)
        }
    }

    /// Stops: cancels the check in flight and the timer, drops queued callbacks,
    /// finishes every ``updates`` sequence and releases the HTTP client. It can be
    /// started again. Completion handlers still waiting for a check are called.
    /// ``status`` is `.determining` afterwards (rwbutler's keeps the last one), and
    /// the failure of a start that could not run is forgotten.
    public func stop() {
        stop(run: nil)
    }

    /// Stops the run `run` (nil: whichever is running; also clears a failed start).
    private func stop(run: UInt64?) {
        let stopped = state.withLock {
            state -> (PathMonitor?, [Task<Void, Never>], [AsyncStream<ConnectivityResult>.Continuation])? in
            guard state.running, run == nil || state.run == run else {
                if run == nil, !state.running {
                    state.failure = nil
                    state.standalone = nil
                    state.deliveredStatus = nil
                }
                return nil
            }
            state.running = false
            state.run += 1
            _ = state.machine.stop()
            state.deliveredStatus = nil
            let tasks = [state.check, state.timer].compactMap { $0 }
            state.check = nil
            state.timer = nil
            let monitor = state.monitor
            state.monitor = nil
            let streams = state.streams.takeAll() + state.checkStreams.takeAll()
            releaseWaiting(&state)
            ProbeClients.shared.release(state.environment)  // The start's lease.
            return (monitor, tasks, streams)
        }
        guard let (monitor, tasks, streams) = stopped else { return }
        monitor?.stop()
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
    /// thrown: ``ConnectivityError`` for a configuration that can't work
    /// (``ConnectivityError/Code/invalidConfiguration``), when the path monitor can't
    /// start (no descriptor left, netlink sockets refused:
    /// ``ConnectivityError/Code/systemCall``; the namespace gone:
    /// ``ConnectivityError/Code/namespace``) or the HTTP client, a probe's socket or
    /// a lookup can't be made (``ConnectivityError/Code/systemCall``, `EMFILE`).
    ///
    /// rwbutler's ``checkConnectivity(completion:)`` hands the instance back instead.
    /// In top-level code (`main.swift`), which Swift ranks as synchronous, a call
    /// without arguments picks that one (its completion defaults to nil): name the
    /// result's type there, `let result: ConnectivityResult = try await …`. Inside
    /// an `async` function the call picks this one.
    public func checkConnectivity() async throws(ConnectivityError) -> ConnectivityResult {
        try await checkConnectivity(over: state.withLock { $0.configuration.scope })
    }

    /// Checks once within `scope` (NetworkManager's per-device check, with IPv4 and
    /// IPv6 told apart), as ``checkConnectivity()`` does otherwise: the probes leave
    /// through the scope's interface only (`SO_BINDTOIFINDEX`) and use its family
    /// only; the result is notConnected, with no probe sent, unless that interface
    /// is among the path's available ones and the path carries that family; it
    /// carries the scope.
    ///
    /// Throws ``ConnectivityError/Code/invalidConfiguration`` as ``checkConnectivity()``
    /// does, and when `scope` names no valid interface or every endpoint is an
    /// address of the other family.
    public func checkConnectivity(over scope: ProbeScope) async throws(ConnectivityError) -> ConnectivityResult {
        let (configuration, resolved) = state.withLock { ($0.configuration, $0.resolved) }
        if let error = resolved.error { throw error }
        try scope.validate()
        let endpoints = Self.endpoints(resolved, scope: scope)
        try scope.requireEndpoint(in: endpoints)
        let environment = configuration.environment
        let monitor = try Self.makePathMonitor(environment)
        do throws(ReachabilityError) {
            try monitor.start()
        } catch {
            throw ConnectivityError(error, while: "the path monitor can't start")
        }
        defer { monitor.stop() }
        let paths = monitor.updates
        var path = scope.restrict(monitor.currentPath)
        // The path's families are any interface's: for one interface, its own
        // default routes say which families it carries.
        if path.status == .satisfied, let name = scope.interface, let family = scope.family,
            let details = (try? InterfaceMonitor(environment: environment))?.currentInterfaces.first(where: {
                $0.interface.name == name
            }), !details.defaultRouteFamilies.contains(family)
        {
            path = NetworkPath(status: .unsatisfied, unsatisfiedReason: .notAvailable)
        }
        let interface = path.availableInterfaces.first
        guard path.status == .satisfied else { return Self.notConnected(path, scope) }
        if let verdict = environment.connectivitySimulation?.verdict {
            return ConnectivityResult(
                verdict: verdict,
                status: .make(
                    validated: verdict == .online, pathUsable: true, interfaceType: interface?.type,
                    framework: configuration.rwbutler.framework),
                interface: interface, endpoints: [], captivePortalAPI: nil, date: Date(), scope: scope)
        }
        let client = try ProbeClients.shared.lease(environment)
        defer { ProbeClients.shared.release(environment) }
        let apiSource = configuration.captivePortalAPISource(for: interface)
        let runner = Self.runner(
            client, configuration.asking(apiSource), resolved, endpoints: endpoints, scope: scope, clock: clock)
        let event = await withTaskGroup(of: OneOffEvent.self) { group -> OneOffEvent in
            group.addTask { .finished(await runner.run()) }
            group.addTask {
                for await path in paths where scope.restrict(path).status != .satisfied {
                    return .pathLost(scope.restrict(path))
                }
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
            if case .pathLost(let lost) = event { return Self.notConnected(lost, scope) }
            return Self.notConnected(.unsatisfied, scope)
        }
        if let failure = outcome.failure { throw failure }
        return ConnectivityResult(
            verdict: outcome.verdict,
            status: .make(
                validated: outcome.verdict == .online, pathUsable: true, interfaceType: interface?.type,
                framework: configuration.rwbutler.framework),
            interface: interface, endpoints: outcome.endpoints, captivePortalAPI: outcome.api,
            captivePortalAPISource: apiSource, date: Date(), scope: scope)
    }

    /// Checks within each of `scopes` at once (``checkConnectivity(over:)``); the
    /// results in the same order. Throws the first error a check threw.
    public func checkConnectivity(over scopes: [ProbeScope]) async throws(ConnectivityError) -> [ConnectivityResult] {
        var outcomes = [Result<ConnectivityResult, ConnectivityError>?](repeating: nil, count: scopes.count)
        await withTaskGroup(of: ScopedOutcome.self) { group in
            for (index, scope) in scopes.enumerated() {
                group.addTask { ScopedOutcome(index: index, result: await self.scopedResult(scope)) }
            }
            while let outcome = await group.next() { outcomes[outcome.index] = outcome.result }
        }
        var results: [ConnectivityResult] = []
        for outcome in outcomes {
            switch outcome {
            case .success(let result)?: results.append(result)
            case .failure(let error)?: throw error
            case nil: throw ConnectivityError("a scoped check ended without a result")
            }
        }
        return results
    }

    /// One scope's check, its error as a value.
    private func scopedResult(_ scope: ProbeScope) async -> Result<ConnectivityResult, ConnectivityError> {
        do throws(ConnectivityError) {
            return .success(try await checkConnectivity(over: scope))
        } catch {
            return .failure(error)
        }
    }

    /// A scope's outcome in a task group, with its place in the list.
    private struct ScopedOutcome: Sendable {
        var index: Int
        var result: Result<ConnectivityResult, ConnectivityError>
    }

    /// Checks over every interface that could carry traffic out, for each family it
    /// has a default route for (of ``ConnectivityConfiguration/scope``'s family
    /// only, when it names one) — `online over eth0/IPv4, portal over wlan0/IPv4`.
    /// An interface counts when it is up, has carrier, is not loopback and a
    /// default route leaves through it. The results follow ``scopes(of:family:)``'s
    /// order; empty when no interface qualifies.
    public func checkEachInterface() async throws(ConnectivityError) -> [ConnectivityResult] {
        let configuration = state.withLock { $0.configuration }
        let interfaces: [InterfaceDetails]
        do throws(ReachabilityError) {
            interfaces = try InterfaceMonitor(environment: configuration.environment).currentInterfaces
        } catch {
            throw ConnectivityError(error, while: "the interfaces can't be read")
        }
        return try await checkConnectivity(over: Self.scopes(of: interfaces, family: configuration.scope.family))
    }

    /// The scopes ``checkEachInterface()`` checks, from an interface list (as
    /// `InterfaceMonitor.currentInterfaces` gives it): one per usable interface
    /// and default-route family (IPv4 first), in the list's order.
    public static func scopes(of interfaces: [InterfaceDetails], family: IPAddress.Family? = nil) -> [ProbeScope] {
        interfaces.flatMap { details -> [ProbeScope] in
            guard details.isUp, details.hasCarrier, details.interface.type != .loopback else { return [] }
            return [IPAddress.Family.ipv4, .ipv6]
                .filter { details.defaultRouteFamilies.contains($0) && (family == nil || family == $0) }
                .map { ProbeScope(interface: details.interface.name, family: $0) }
        }
    }

    /// rwbutler's one-off check: checks, then calls `completion` with this instance
    /// on ``notificationQueue``; read ``status`` (or ``latestResult``) there.
    ///
    /// While the notifier is not running, the check runs on its own
    /// (``checkConnectivity()``) and its result becomes ``status``; a check that can't
    /// run leaves notConnected with ``lastError`` saying why. While it runs, a check
    /// of the notifier's starts now (the timer's next one moves), `completion` runs
    /// after its result was delivered, and a change calls ``whenConnected`` or
    /// ``whenDisconnected`` and posts the notifications, as any check's does; with
    /// no usable path there is nothing to check, and `completion` runs at once.
    ///
    /// The completion handler is `@Sendable`: in Swift 6 mode it can't capture
    /// non-`Sendable` state (in Swift 5 mode that is a warning).
    public func checkConnectivity(completion: (@Sendable (Connectivity) -> Void)? = nil) {
        let handledByNotifier = state.withLock { state -> Bool in
            guard state.running else { return false }
            if let completion { state.waiting.append(completion) }
            let (actions, willReport) = state.machine.checkRequested()
            apply(actions, state: &state, run: state.run)
            if !willReport { releaseWaiting(&state) }  // Nothing to check: called at once.
            return true
        }
        if handledByNotifier { return }
        Task {
            let result: ConnectivityResult
            var failure: ConnectivityError?
            do throws(ConnectivityError) {
                result = try await checkConnectivity()
            } catch {
                failure = error
                result = Self.notConnected(.unsatisfied)
            }
            let queue = state.withLock { state -> DispatchQueue in
                if !state.running {
                    state.standalone = result
                    state.failure = failure
                }
                return state.notificationQueue
            }
            if let completion { queue.async { completion(self) } }
        }
    }

    /// Queues the completion handlers waiting for a check, in order, on the
    /// notification queue; called under the lock.
    private func releaseWaiting(_ state: inout State) {
        guard !state.waiting.isEmpty else { return }
        let waiting = state.waiting
        state.waiting = []
        state.notificationQueue.async { for completion in waiting { completion(self) } }
    }

    /// What ends a one-off check first: the probes, or the path going away.
    private enum OneOffEvent: Sendable {
        case finished(ProbeRunner.Outcome)
        case pathLost(NetworkPath)
        case watchEnded
    }

    /// A path monitor for `environment`; its failure as a ``ConnectivityError``.
    private static func makePathMonitor(_ environment: NetworkEnvironment) throws(ConnectivityError) -> PathMonitor {
        do throws(ReachabilityError) {
            return try PathMonitor(environment: environment)
        } catch {
            throw ConnectivityError(error, while: "the path monitor can't be made")
        }
    }

    /// The result for no usable path.
    private static func notConnected(_ path: NetworkPath, _ scope: ProbeScope = .any) -> ConnectivityResult {
        ConnectivityResult(
            verdict: .notConnected, status: .notConnected, interface: path.availableInterfaces.first, endpoints: [],
            captivePortalAPI: nil, date: Date(), scope: scope)
    }

    // MARK: - Engine

    /// The endpoints of one check within `scope`: the configured ones and this
    /// check's draw of fallbacks, those `scope` admits.
    private static func endpoints(_ resolved: Resolved, scope: ProbeScope) -> [ConnectivityEndpoint] {
        ConnectivityConfiguration.forOneCheck(
            resolved.endpoints, fallbacks: resolved.fallbacks, count: resolved.fallbacksPerCheck
        ).filter { scope.admits($0) }
    }

    /// The runner of one check of `endpoints` within `scope`.
    private static func runner(
        _ client: ProbeClient, _ configuration: ConnectivityConfiguration, _ resolved: Resolved,
        endpoints: [ConnectivityEndpoint], scope: ProbeScope, clock: any TimerClock
    ) -> ProbeRunner {
        let transport = ProbeTransport(
            scope: scope, client: client, environment: configuration.environment, tls: resolved.tls)
        return ProbeRunner(
            endpoints: endpoints,
            successThreshold: configuration.successThreshold,
            captivePortalAPI: configuration.captivePortalAPI, probeTimeout: configuration.probeTimeout,
            checkDeadline: configuration.checkDeadline, maximumBodySize: configuration.maximumBodySize,
            userAgent: configuration.userAgent,
            logger: configuration.environment.logger, environment: configuration.environment,
            detectsDNSHijacking: configuration.detectsDNSHijacking,
            requiresTwoVendors: configuration.requiresTwoVendors,
            transport: transport, proxy: resolved.proxy, clock: clock)
    }

    /// Feeds one input to the machine (if `run` is still current) and runs the
    /// actions it returns.
    /// A check that ran forgets the failure of one that could not (`clearingFailure`).
    private func handle(
        run: UInt64, clearingFailure: Bool = false, _ input: (inout ConnectivityMachine) -> [ConnectivityMachine.Action]
    ) {
        state.withLock { state in
            guard state.running, state.run == run else { return }
            if clearingFailure { state.failure = nil }
            apply(input(&state.machine), state: &state, run: run)
        }
    }

    /// A path from the run's monitor, fed to the machine. Under rwbutler's
    /// `.systemConfiguration`, a change of the path after the run's first also posts
    /// rwbutler's `ReachabilityDidChange` (as SCNetworkReachability's callback does
    /// there), queued before the deliveries the change brings.
    private func pathChanged(_ path: NetworkPath, run: UInt64) {
        state.withLock { state in
            guard state.running, state.run == run else { return }
            let old = state.machine.path
            let actions = state.machine.pathChanged(path, at: Date())
            if state.configuration.rwbutler.framework == .systemConfiguration, let old, old != state.machine.path {
                state.notificationQueue.async { [weak self] in
                    guard let self, self.state.withLock({ $0.running && $0.run == run }) else { return }
                    NotificationCenter.default.post(name: .ReachabilityDidChange, object: self)
                }
            }
            apply(actions, state: &state, run: run)
        }
    }

    /// Runs the machine's actions under the lock: tasks are started under it, so
    /// that a newer generation's cancel always finds them; callbacks are queued in
    /// order. When the actions follow a new result, the completion handlers waiting
    /// for one are queued after its deliveries.
    private func apply(_ actions: [ConnectivityMachine.Action], state: inout State, run: UInt64) {
        for action in actions {
            switch action {
            case .cancelCheck:
                state.check?.cancel()
                state.check = nil
            case .cancelTimer:
                state.timer?.cancel()
                state.timer = nil
            case .startCheck(let generation):
                state.check?.cancel()
                state.check = startCheck(run: run, generation: generation, state: state)
            case .schedule(let delay, let generation):
                state.timer?.cancel()
                state.timer = Task { [weak self, clock = self.clock] in
                    guard (try? await clock.sleep(for: delay)) != nil else { return }
                    self?.handle(run: run) { $0.timerFired(generation: generation) }
                }
            case .publish(let result):
                deliver(result, state: &state, run: run)
            }
        }
        if state.machine.results != state.resultsSeen {
            state.resultsSeen = state.machine.results
            if let taken = state.machine.taken { state.checkStreams.yield(taken) }
            releaseWaiting(&state)
        }
    }

    /// Starts a check of `generation` with the settings of now; called under the
    /// state lock while running, when the start's lease keeps the client alive (so
    /// nothing is made here).
    private func startCheck(run: UInt64, generation: UInt64, state: State) -> Task<Void, Never> {
        let environment = state.environment
        let configuration = state.configuration
        let resolved = state.resolved
        let client = resolved.error == nil ? ProbeClients.shared.leaseExisting(environment) : nil
        let interface = state.machine.path?.availableInterfaces.first
        let clock = self.clock
        return Task { [weak self] in
            // A configuration that can't work fails the check (`lastError` says why).
            var outcome = ProbeRunner.Outcome(verdict: .noInternet(.connectionFailed), endpoints: [], api: nil)
            // Discovery reads files: here, not under the state lock.
            let apiSource = client == nil ? nil : configuration.captivePortalAPISource(for: interface)
            let endpoints = Self.endpoints(resolved, scope: configuration.scope)
            let runner = client.flatMap { client in
                endpoints.isEmpty
                    ? nil
                    : Self.runner(
                        client, configuration.asking(apiSource), resolved, endpoints: endpoints,
                        scope: configuration.scope, clock: clock)
            }
            if let runner { outcome = await runner.run() }
            if let verdict = environment.connectivitySimulation?.verdict { outcome.verdict = verdict }
            if client != nil { ProbeClients.shared.release(environment) }
            guard !Task.isCancelled else { return }
            if let failure = outcome.failure {
                self?.checkCouldNotRun(failure, run: run, generation: generation)
                return
            }
            self?.handle(run: run, clearingFailure: true) { machine in
                machine.checkFinished(
                    generation: generation, verdict: outcome.verdict, endpoints: outcome.endpoints, api: outcome.api,
                    apiSource: apiSource, at: Date())
            }
        }
    }

    /// A notifier's check that could not run: ``lastError`` says why until a check
    /// runs again, nothing is published, and whoever waits for this check is
    /// answered (with the status as it was).
    private func checkCouldNotRun(_ failure: ConnectivityError, run: UInt64, generation: UInt64) {
        state.withLock { state in
            guard state.running, state.run == run, state.machine.generation == generation else { return }
            state.failure = failure
            apply(state.machine.checkCouldNotRun(generation: generation), state: &state, run: run)
            releaseWaiting(&state)
        }
    }

    /// Queues the deliveries of a published result: ``updates``, the callback of a
    /// status change (rwbutler's rule: ``whenConnected`` for a connected status,
    /// else ``whenDisconnected``), the notifications.
    private func deliver(_ result: ConnectivityResult, state: inout State, run: UInt64) {
        state.streams.yield(result)
        let changed = state.deliveredStatus != result.status
        state.deliveredStatus = result.status
        if changed {
            state.environment.logger?.info(
                "connectivity changed", metadata: ["verdict": "\(result.verdict)", "status": "\(result.status)"])
        }
        let callback: (@Sendable (Connectivity) -> Void)? =
            changed ? (result.status.isConnected ? state.whenConnected : state.whenDisconnected) : nil
        state.notificationQueue.async { [weak self] in
            guard let self, self.state.withLock({ $0.running && $0.run == run }) else { return }
            callback?(self)
            self.post(result, statusChanged: changed)
        }
    }

    /// Posts ``Foundation/Notification/Name/connectivityDidChange`` for every result
    /// published, and rwbutler's `ConnectivityDidChange` when the status changed;
    /// the object is this instance, `userInfo[Connectivity.resultKey]` the result.
    private func post(_ result: ConnectivityResult, statusChanged: Bool) {
        let userInfo = [Connectivity.resultKey: result]
        NotificationCenter.default.post(name: .connectivityDidChange, object: self, userInfo: userInfo)
        if statusChanged {
            NotificationCenter.default.post(name: .ConnectivityDidChange, object: self, userInfo: userInfo)
        }
    }
}
