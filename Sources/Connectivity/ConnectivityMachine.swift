import Foundation
import Reachability

/// When to check and what to publish, free of I/O and clocks: path changes, check
/// results and timer firings go in; actions come out, to be run after unlocking.
///
/// - A path change cancels the check in flight and the timer. Without a usable
///   path: notConnected at once. With one: a new check.
/// - Every check and timer carries the generation it was started in; anything
///   from an older generation is dropped, so a stale result never overwrites a
///   newer one.
/// - Hysteresis: `failuresToGoOffline` consecutive failed checks leave online, one
///   success returns. While not online the next check waits `offlineRetryInitial`,
///   doubling up to `offlineRetryLimit`; with polling it waits at most the interval.
///   Without `retriesWhileOffline` (rwbutler's way) there is no retry: only path
///   changes, requests and polling check.
struct ConnectivityMachine: Sendable {
    struct Settings: Sendable, Hashable {
        var failuresToGoOffline = 2
        var offlineRetryInitial: Duration = .seconds(1)
        var offlineRetryLimit: Duration = .seconds(60)
        var pollingInterval: Duration?
        var pollWhileOfflineOnly = false
        var retriesWhileOffline = true
        /// How the status names the link (rwbutler's `framework`).
        var framework: ConnectivityFramework = .network
        /// Where the checks' probes leave; carried on every result.
        var scope: ProbeScope = .any
    }

    enum Action: Sendable, Hashable {
        /// Deliver this result (status or verdict changed).
        case publish(ConnectivityResult)
        /// Start a check for this generation (cancelling any other first).
        case startCheck(generation: UInt64)
        /// Cancel the check in flight.
        case cancelCheck
        /// Fire ``ConnectivityMachine/timerFired(generation:)`` after this long.
        case schedule(after: Duration, generation: UInt64)
        /// Cancel the pending timer.
        case cancelTimer
    }

    private(set) var settings: Settings
    private(set) var generation: UInt64 = 0
    /// Counts the check results taken (a check of the current generation that
    /// finished, or the path going away): what a caller waiting for "the next
    /// result" watches.
    private(set) var results: UInt64 = 0
    private(set) var path: NetworkPath?
    /// Validated online (held through fewer than `failuresToGoOffline` failures).
    private(set) var isOnline = false
    private(set) var consecutiveFailures = 0
    private(set) var nextRetryDelay: Duration
    /// Whether a check of the current generation is running.
    private(set) var checkInFlight = false
    /// The last published result; nil until the first.
    private(set) var published: ConnectivityResult?
    /// The result last taken (what bumped ``results``), published or not: a check's
    /// own verdict, validated only when online (a failure held online by
    /// `failuresToGoOffline` reads as that failure), or notConnected for the path
    /// going away.
    private(set) var taken: ConnectivityResult?

    init(settings: Settings) {
        self.settings = settings
        nextRetryDelay = settings.offlineRetryInitial
    }

    /// The status to report now.
    var status: ConnectivityStatus { published?.status ?? .determining }

    private var isPathUsable: Bool { path?.status == .satisfied }

    /// A path change. Losing the path is reported at once. Otherwise a new check
    /// starts (cancelling the one in flight) — unless a check is already in flight
    /// over the same route (interface and gateways), which still tests it: changes
    /// elsewhere (an unrelated interface coming and going) can't starve the checks.
    /// A new primary interface forgets the hysteresis: what held online was
    /// another link.
    mutating func pathChanged(_ newPath: NetworkPath, at date: Date) -> [Action] {
        // Within a scope, the path is what the scope's interface and family offer.
        let newPath = settings.scope.restrict(newPath)
        let old = path
        path = newPath
        guard isPathUsable else {
            generation &+= 1
            results &+= 1
            checkInFlight = false
            nextRetryDelay = settings.offlineRetryInitial
            isOnline = false
            consecutiveFailures = 0
            let result = ConnectivityResult(
                verdict: .notConnected, status: .notConnected, interface: newPath.availableInterfaces.first,
                endpoints: [], captivePortalAPI: nil, date: date, scope: settings.scope)
            taken = result
            return [.cancelCheck, .cancelTimer] + publish(result)
        }
        let sameInterface =
            old?.status == .satisfied && old?.availableInterfaces.first == newPath.availableInterfaces.first
        if sameInterface && old?.gateways == newPath.gateways && checkInFlight { return [] }
        if !sameInterface {
            isOnline = false
            consecutiveFailures = 0
        }
        generation &+= 1
        checkInFlight = true
        nextRetryDelay = settings.offlineRetryInitial
        return [.cancelCheck, .cancelTimer, .startCheck(generation: generation)]
    }

    /// A check of `generation` finished with `verdict` (never notConnected: that
    /// comes from the path).
    mutating func checkFinished(
        generation finished: UInt64, verdict: Verdict, endpoints: [EndpointResult],
        api: CaptivePortalAPIResponse?, apiSource: CaptivePortalAPISource? = nil, at date: Date
    ) -> [Action] {
        guard finished == generation, isPathUsable, let path else { return [] }
        checkInFlight = false
        results &+= 1
        let interface = path.availableInterfaces.first
        func result(validated: Bool) -> ConnectivityResult {
            ConnectivityResult(
                verdict: verdict,
                status: .make(
                    validated: validated, pathUsable: true, interfaceType: interface?.type,
                    framework: settings.framework),
                interface: interface, endpoints: endpoints, captivePortalAPI: api, captivePortalAPISource: apiSource,
                date: date, scope: settings.scope)
        }
        taken = result(validated: verdict == .online)
        if verdict == .online {
            isOnline = true
            consecutiveFailures = 0
            nextRetryDelay = settings.offlineRetryInitial
            var actions = publish(result(validated: true))
            if let interval = settings.pollingInterval, !settings.pollWhileOfflineOnly {
                actions.append(.schedule(after: interval, generation: generation))
            }
            return actions
        }
        consecutiveFailures += 1
        if isOnline && consecutiveFailures < settings.failuresToGoOffline {
            // Held online: confirm soon rather than flip on one failure (without
            // retries, at the next poll, if any).
            if settings.retriesWhileOffline {
                return [.schedule(after: settings.offlineRetryInitial, generation: generation)]
            }
            if let interval = settings.pollingInterval, !settings.pollWhileOfflineOnly {
                return [.schedule(after: interval, generation: generation)]
            }
            return []
        }
        isOnline = false
        var actions = publish(result(validated: false))
        guard settings.retriesWhileOffline else {
            if let interval = settings.pollingInterval {
                actions.append(.schedule(after: interval, generation: generation))
            }
            return actions
        }
        var delay = nextRetryDelay
        if let interval = settings.pollingInterval { delay = min(delay, interval) }
        nextRetryDelay = min(nextRetryDelay * 2, settings.offlineRetryLimit)
        actions.append(.schedule(after: delay, generation: generation))
        return actions
    }

    /// A check of `generation` that could not run (its probes' sockets could not be
    /// made): no verdict, nothing published, the hysteresis untouched; checked again
    /// after the offline retry's delay (doubling), whatever the settings, since
    /// nothing else would bring the next check.
    mutating func checkCouldNotRun(generation finished: UInt64) -> [Action] {
        guard finished == generation, isPathUsable else { return [] }
        checkInFlight = false
        let delay = nextRetryDelay
        nextRetryDelay = min(nextRetryDelay * 2, settings.offlineRetryLimit)
        return [.schedule(after: delay, generation: generation)]
    }

    /// A timer scheduled in `generation` fired: check again (in a new generation,
    /// so that nothing older can land afterwards).
    mutating func timerFired(generation fired: UInt64) -> [Action] {
        guard fired == generation, isPathUsable else { return [] }
        generation &+= 1
        checkInFlight = true
        return [.startCheck(generation: generation)]
    }

    /// A check asked for now (rwbutler's `checkConnectivity(completion:)` while
    /// the notifier runs): a check of a new generation starts, cancelling the timer
    /// and any check in flight. `willReport` says whether a result is to come:
    /// false without a usable path (notConnected stands and nothing is checked);
    /// true before the first path, whose arrival brings one.
    mutating func checkRequested() -> (actions: [Action], willReport: Bool) {
        guard let path else { return ([], true) }
        guard path.status == .satisfied else { return ([], false) }
        generation &+= 1
        checkInFlight = true
        return ([.cancelTimer, .startCheck(generation: generation)], true)
    }

    /// New settings, e.g. polling turned on while running. They apply from the next
    /// decision; a timer is rescheduled at once where the polling changed it: while
    /// online (and held by no failure) the polling timer is set or cancelled; while
    /// not online a retry is brought forward to the polling interval. A check in
    /// flight schedules with the new settings when it finishes.
    mutating func settingsChanged(_ new: Settings) -> [Action] {
        let old = settings
        settings = new
        guard isPathUsable, !checkInFlight, published != nil,
            old.pollingInterval != new.pollingInterval || old.pollWhileOfflineOnly != new.pollWhileOfflineOnly
        else { return [] }
        if isOnline {
            guard consecutiveFailures == 0 else { return [] }  // A confirming check is due soon.
            if let interval = new.pollingInterval, !new.pollWhileOfflineOnly {
                return [.schedule(after: interval, generation: generation)]
            }
            return [.cancelTimer]
        }
        guard let interval = new.pollingInterval else { return new.retriesWhileOffline ? [] : [.cancelTimer] }
        return [
            .schedule(after: new.retriesWhileOffline ? min(interval, nextRetryDelay) : interval, generation: generation)
        ]
    }

    /// Stops: cancels everything; later results are stale.
    mutating func stop() -> [Action] {
        generation &+= 1
        checkInFlight = false
        path = nil
        isOnline = false
        consecutiveFailures = 0
        published = nil
        nextRetryDelay = settings.offlineRetryInitial
        return [.cancelCheck, .cancelTimer]
    }

    private mutating func publish(_ result: ConnectivityResult) -> [Action] {
        defer { published = result }
        if let published, published.status == result.status, published.verdict == result.verdict,
            published.interface == result.interface
        {
            return []
        }
        return [.publish(result)]
    }
}
