public import CoreMetrics
public import Reachability

/// Reachability, path, connectivity and monitor figures as swift-metrics gauges
/// (meters), counters and timers: an app that bootstraps a metrics backend
/// (`MetricsSystem.bootstrap`) gets them under the names below, and
/// `reachability exporter` serves them to Prometheus through swift-prometheus.
///
/// Updated by events: `observe(_:target:)`, ``observe(_:)-(PathMonitor)`` and
/// `observe(_:)` of a `Connectivity` (with the Connectivity trait) record every delivery; `recordMonitorCounters(environment:)`
/// copies the shared monitor's counters (cheap: a lock and a copy, no netlink work).
///
/// | series | kind | meaning |
/// |---|---|---|
/// | `reachability_reachable{target}` | gauge | 1 when the target's status is not notReachable |
/// | `reachability_flags{target}` | gauge | the SCNetworkReachabilityFlags bit value |
/// | `reachability_status{target,status}` | gauge | 1 for the current status (notReachable, reachableViaWiFi, reachableViaWWAN), 0 for the others |
/// | `reachability_interface_info{target,interface,type}` | gauge | 1 for the output interface; no series without a route |
/// | `reachability_changes_total{target}` | counter | deliveries after the first (changes of flags or interface) |
/// | `reachability_path_satisfied` | gauge | 1 when the path is satisfied |
/// | `reachability_path_status{status}` | gauge | 1 for the path's status (satisfied, unsatisfied, requiresConnection) |
/// | `reachability_path_expensive` | gauge | 1 when the path is expensive |
/// | `reachability_path_changes_total` | counter | path deliveries after the first |
/// | `reachability_connectivity_verdict{verdict}` | gauge | 1 for the last verdict (online, captivePortal, noInternet, limited, notConnected, proxyFailed) |
/// | `reachability_connectivity_checks_total{verdict}` | counter | every check, by its own verdict (``recordCheck(_:)``) |
/// | `reachability_connectivity_probe_duration_seconds{endpoint}` | histogram | each endpoint's probe time in a check, retries included |
/// | `reachability_monitor_events_total` … | counter | the monitor's `MonitorCounters`: `events`, `overruns`, `resyncs`, `failed_resyncs`, `malformed_messages`, `evaluation_passes`, `failed_passes` |
public final class ReachabilityMetrics: Sendable {
    let factory: any MetricsFactory
    /// The labels every series of this instance carries before its own.
    let labels: [(String, String)]
    let state = LockedValue(Series())

    /// Records into `factory` (the bootstrapped backend by default). Every series
    /// carries `labels` before its own (`reachability exporter --all-namespaces`
    /// gives each namespace an instance with its `namespace` and `container_id`).
    public init(factory: any MetricsFactory = MetricsSystem.factory, labels: [(String, String)] = []) {
        self.factory = factory
        self.labels = labels
    }

    /// Removes every series this instance recorded, from the backend too (what a
    /// namespace that went away had: no stale series).
    public func forgetAll() {
        state.withLock { state in
            for series in state.targets.values { series.destroy() }
            state.path?.destroy()
            state.connectivity?.destroy()
            state.monitor?.destroy()
            state = Series()
        }
    }

    // MARK: Recording

    /// Records a target's state (from a delivery, or read with `Reachability/state`).
    public func record(_ reachability: ReachabilityState, target: String) {
        let status = NetworkStatus(flags: reachability.flags)
        let interface = reachability.interface.map { [($0.name), $0.type.rawValue] }
        state.withLock { state in
            var series = state.targets[target] ?? TargetSeries(target: target, labels: labels, factory: factory)
            if series.recorded { series.changes.increment() }
            series.recorded = true
            series.reachable.set(status == .notReachable ? 0 : 1)
            series.flags.set(Int(reachability.flags.rawValue))
            for (name, meter) in series.statuses { meter.set(name == status.rawValue ? 1 : 0) }
            if series.interfaceLabels != interface {
                series.interfaceInfo?.destroy()
                series.interfaceInfo = interface.map {
                    Meter(
                        label: "reachability_interface_info",
                        dimensions: labels + [("target", target), ("interface", $0[0]), ("type", $0[1])],
                        factory: factory)
                }
                series.interfaceInfo?.set(1)
                series.interfaceLabels = interface
            }
            state.targets[target] = series
        }
    }

    /// Records a path (from a `PathMonitor` delivery).
    public func record(_ path: NetworkPath) {
        state.withLock { state in
            var series = state.path ?? PathSeries(labels: labels, factory: factory)
            if series.recorded { series.changes.increment() }
            series.recorded = true
            series.satisfied.set(path.status == .satisfied ? 1 : 0)
            series.expensive.set(path.isExpensive ? 1 : 0)
            for (name, meter) in series.statuses { meter.set(name == path.status.rawValue ? 1 : 0) }
            state.path = series
        }
    }

    /// Copies the counters of the monitor serving `environment` (nothing when none
    /// runs). Counters only grow: a monitor that restarted from zero starts a new count.
    public func recordMonitorCounters(environment: NetworkEnvironment = .default) {
        guard let counters = environment.monitorCounters else { return }
        state.withLock { state in
            var series = state.monitor ?? MonitorSeries(labels: labels, factory: factory)
            let now = MonitorSeries.values(counters)
            for (index, counter) in series.counters.enumerated() {
                let previous = series.last[index]
                // A new monitor counts from zero again: count what it has seen since.
                let delta = now[index] >= previous ? now[index] - previous : now[index]
                if delta > 0 { counter.increment(by: delta) }
            }
            series.last = now
            state.monitor = series
        }
    }

    // MARK: Observing

    /// Records `reachability`'s every delivery (the first included) under `target`,
    /// until the observation is removed or the instance stops.
    @discardableResult
    public func observe(_ reachability: Reachability, target: String) -> ReachabilityObservation {
        reachability.addObserver { [self] state in record(state, target: target) }
    }

    /// Records every path `monitor` delivers while it runs; the task ends when its
    /// `updates` sequence finishes (`PathMonitor/stop()`).
    @discardableResult
    public func observe(_ monitor: PathMonitor) -> Task<Void, Never> {
        let paths = monitor.updates
        return Task { [self] in
            for await path in paths { record(path) }
        }
    }

    /// Removes a target's series (for a target no longer watched).
    public func forget(target: String) {
        state.withLock { state in
            guard let series = state.targets.removeValue(forKey: target) else { return }
            series.destroy()
        }
    }

    // MARK: Help texts

    /// The `# HELP` text of every series family this type records, by family name
    /// (the series of this type's table). swift-metrics has no help text to hand a
    /// backend, so a Prometheus exposition gets them from here: see ``addingHelp(to:)``.
    public static let helpTexts: [String: String] = {
        var texts = [
            "reachability_reachable": "1 when the target's status is not notReachable, else 0.",
            "reachability_flags": "The target's SCNetworkReachabilityFlags bit value.",
            "reachability_status":
                "1 for the target's current status (notReachable, reachableViaWiFi, reachableViaWWAN), 0 for the others.",
            "reachability_interface_info":
                "1 for the output interface toward the target and its type; no series without a route.",
            "reachability_changes_total": "The target's deliveries after the first (changes of flags or interface).",
            "reachability_path_satisfied": "1 when the path is satisfied, else 0.",
            "reachability_path_status":
                "1 for the path's status (satisfied, unsatisfied, requiresConnection), 0 for the others.",
            "reachability_path_expensive": "1 when the path is expensive, else 0.",
            "reachability_path_changes_total": "Path deliveries after the first.",
            "reachability_connectivity_verdict":
                "1 for the last connectivity verdict (online, captivePortal, noInternet, limited, notConnected, proxyFailed), 0 for the others.",
            "reachability_connectivity_checks_total": "Connectivity checks, by verdict.",
            "reachability_connectivity_probe_duration_seconds":
                "Each endpoint's probe time in a connectivity check, retries included.",
        ]
        let monitor = [
            "events": "Kernel messages the shared monitor read from its event socket.",
            "overruns": "Times the kernel reported the monitor's events dropped for a full receive buffer (ENOBUFS).",
            "resyncs": "Re-dumps of links and addresses after an overrun or a malformed message.",
            "failed_resyncs": "Re-dumps of links and addresses that failed (they are retried).",
            "malformed_messages": "Kernel messages the monitor dropped as malformed (a resync follows).",
            "evaluation_passes": "Evaluation passes: one per batch of events that could change an answer.",
            "failed_passes": "Evaluation passes that failed (their route lookups could not be made; retried).",
        ]
        for name in MonitorSeries.names {
            texts["reachability_monitor_\(name)_total"] = monitor[name] ?? "The monitor's \(name) counter."
        }
        return texts
    }()

    /// `exposition` (Prometheus's text format, as swift-prometheus writes it) with a
    /// `# HELP` line before each family's `# TYPE` line that has none, from
    /// ``helpTexts`` (a family not listed there gets a generic text), so that every
    /// family has both (`promtool check metrics` warns otherwise).
    public static func addingHelp(to exposition: [UInt8]) -> [UInt8] {
        let typePrefix = Array("# TYPE ".utf8)
        let helpPrefix = Array("# HELP ".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(exposition.count + 2_048)
        var previous: ArraySlice<UInt8> = []
        var start = exposition.startIndex
        while start < exposition.endIndex {
            let end = exposition[start...].firstIndex(of: UInt8(ascii: "\n")) ?? exposition.endIndex
            let line = exposition[start..<end]
            if line.starts(with: typePrefix) {
                let name = line.dropFirst(typePrefix.count).prefix { $0 != UInt8(ascii: " ") }
                if !(previous.starts(with: helpPrefix + name + [UInt8(ascii: " ")])) {
                    let family = String(decoding: name, as: UTF8.self)
                    let text = helpTexts[family] ?? "The \(family) series of reachability."
                    output += helpPrefix
                    output += name
                    output.append(UInt8(ascii: " "))
                    output += escapedHelp(text)
                    output.append(UInt8(ascii: "\n"))
                }
            }
            output += exposition[start..<min(end + 1, exposition.endIndex)]
            previous = line
            start = end + 1
        }
        return output
    }

    /// A help text as the text format wants it: backslash and newline escaped.
    private static func escapedHelp(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): bytes += Array("\\\\".utf8)
            case UInt8(ascii: "\n"): bytes += Array("\\n".utf8)
            default: bytes.append(byte)
            }
        }
        return bytes
    }
}

// MARK: - Series

struct TargetSeries: @unchecked Sendable {
    // @unchecked: swift-metrics' handles are thread-safe; these live inside a lock.
    let reachable: Meter
    let flags: Meter
    let statuses: [(String, Meter)]
    let changes: Counter
    var interfaceInfo: Meter?
    var interfaceLabels: [String]?
    var recorded = false

    init(target: String, labels: [(String, String)], factory: any MetricsFactory) {
        let dimensions = labels + [("target", target)]
        reachable = Meter(label: "reachability_reachable", dimensions: dimensions, factory: factory)
        flags = Meter(label: "reachability_flags", dimensions: dimensions, factory: factory)
        statuses = NetworkStatus.allCases.map {
            (
                $0.rawValue,
                Meter(
                    label: "reachability_status", dimensions: dimensions + [("status", $0.rawValue)], factory: factory)
            )
        }
        changes = Counter(label: "reachability_changes_total", dimensions: dimensions, factory: factory)
    }

    func destroy() {
        reachable.destroy()
        flags.destroy()
        for (_, meter) in statuses { meter.destroy() }
        changes.destroy()
        interfaceInfo?.destroy()
    }
}

struct PathSeries: @unchecked Sendable {
    let satisfied: Meter
    let expensive: Meter
    let statuses: [(String, Meter)]
    let changes: Counter
    var recorded = false

    init(labels: [(String, String)], factory: any MetricsFactory) {
        satisfied = Meter(label: "reachability_path_satisfied", dimensions: labels, factory: factory)
        expensive = Meter(label: "reachability_path_expensive", dimensions: labels, factory: factory)
        statuses = ["satisfied", "unsatisfied", "requiresConnection"].map {
            ($0, Meter(label: "reachability_path_status", dimensions: labels + [("status", $0)], factory: factory))
        }
        changes = Counter(label: "reachability_path_changes_total", dimensions: labels, factory: factory)
    }

    func destroy() {
        satisfied.destroy()
        expensive.destroy()
        for (_, meter) in statuses { meter.destroy() }
        changes.destroy()
    }
}

struct ConnectivitySeries: @unchecked Sendable {
    static let verdictNames = ["online", "captivePortal", "noInternet", "limited", "notConnected", "proxyFailed"]
    let verdicts: [(String, Meter)]
    var checks: [String: Counter] = [:]
    var durations: [String: CoreMetrics.Timer] = [:]

    init(labels: [(String, String)], factory: any MetricsFactory) {
        verdicts = Self.verdictNames.map {
            (
                $0,
                Meter(
                    label: "reachability_connectivity_verdict", dimensions: labels + [("verdict", $0)], factory: factory
                )
            )
        }
    }

    func destroy() {
        for (_, meter) in verdicts { meter.destroy() }
        for counter in checks.values { counter.destroy() }
        for timer in durations.values { timer.destroy() }
    }
}

struct MonitorSeries: @unchecked Sendable {
    static let names = [
        "events", "overruns", "resyncs", "failed_resyncs", "malformed_messages", "evaluation_passes", "failed_passes",
    ]
    let counters: [Counter]
    var last: [Int]

    init(labels: [(String, String)], factory: any MetricsFactory) {
        counters = Self.names.map {
            Counter(label: "reachability_monitor_\($0)_total", dimensions: labels, factory: factory)
        }
        last = Array(repeating: 0, count: Self.names.count)
    }

    func destroy() {
        for counter in counters { counter.destroy() }
    }

    static func values(_ counters: MonitorCounters) -> [Int] {
        [
            counters.eventsReceived, counters.overruns, counters.resyncs, counters.failedResyncs,
            counters.malformedMessages, counters.evaluationPasses, counters.failedPasses,
        ]
    }
}

/// Every series, by what it belongs to.
struct Series: Sendable {
    var targets: [String: TargetSeries] = [:]
    var path: PathSeries?
    var connectivity: ConnectivitySeries?
    var monitor: MonitorSeries?
}
