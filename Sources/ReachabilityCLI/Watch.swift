import ArgumentParser
import Connectivity
import Foundation
import Reachability

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print each TARGET's state, then one line per change, until interrupted.",
        discussion: """
            Prints the current state of every target first, then one line whenever a target's \
            flags or output interface change, each flushed at once. Nothing is printed while \
            nothing changes, and the process does no work then. SIGINT or SIGTERM ends it with \
            exit status 0. When the watched namespace goes away (--namespace), it says so on \
            stderr and exits 1; a resolver failure is reported on stderr and the name retried.

            With --json, each line is one JSON object: {"time", "target", "status", "reachable", \
            "connectionRequired", "flags", "rawFlags", "interface"}; see the README.

            --path adds a line per path change, as NWPathMonitor reports it (status, interfaces \
            in order of preference, families, DNS, cost; JSON: {"time", "path": {…}}). \
            --connectivity adds a line per change of the connectivity verdict (see `reachability \
            check`; JSON: {"time", "connectivity": {…}}). With either, targets are watched only \
            when given.
            """)

    @Argument(help: "Hostnames or addresses; none watches the Internet.")
    var targets: [String] = []

    @Flag(help: "Print one JSON object per line.")
    var json = false

    @Flag(help: "Also print a line per path change (NWPathMonitor's view).")
    var path = false

    @Flag(help: "Also print a line per change of the connectivity verdict (real Internet, or captive portal).")
    var connectivity = false

    @OptionGroup(title: "Connectivity options (with --connectivity)")
    var probes: ProbeOptions

    @OptionGroup var namespace: NamespaceOption

    /// What a running watch keeps alive (a released instance stops its notifier),
    /// held here rather than by locals around a call that never returns: the
    /// optimizer may end a local's lifetime before such a call.
    nonisolated(unsafe) private static var running: [AnyObject] = []

    func validate() throws {
        try probes.requireConnectivity(connectivity)
    }

    func run() throws {
        // Being interrupted is how a watch ends: SIGINT and SIGTERM exit 0 (the
        // signal thread of CLIProcess takes them, once no line is being written).
        CLIProcess.signalsExitZero()
        let queue = DispatchQueue(label: "reachability.watch")
        let environment = namespace.environment
        let names: [String?] = targets.isEmpty ? (path || connectivity ? [] : [nil]) : targets.map(Optional.some)
        let watched = try names.map { try TargetArgument.make($0, queue: queue, environment: environment) }
        Self.running = watched.map(\.reachability)
        let width = max(watched.map(\.name.count).max() ?? 0, path ? 4 : 0, connectivity ? 12 : 0)
        if path { try watchPath(environment, queue: queue, width: width) }
        if connectivity { try watchConnectivity(environment, width: width) }
        for (name, reachability) in watched {
            // The namespace gone: exit 1 with a message. A resolver failure: a message,
            // and the watch goes on (the library tries the name again).
            TargetArgument.exitOnErrors(reachability, resolverFailure: nil)
            // Called with the state (a hostname: once resolved), then on every change,
            // on the monitor's reader thread: the line is written with no hop to a queue.
            reachability.deliverSynchronously { [json] state in
                Output.emit(
                    json
                        ? Output.json(target: name, state: state)
                        : Output.line(target: name, state: state, width: width))
            }
            try reachability.startNotifier()
        }
        // Wait for a signal; the monitor's reader thread does the work, and nothing
        // else runs: no Swift concurrency, so no libdispatch pool monitor waking
        // the process every second. (Not dispatchMain: its main thread waits in
        // sigsuspend with an empty mask, where SIGINT and SIGTERM would kill the
        // process by their default action.)
        CLIProcess.parkForever()
    }

    /// A line per path change: `TIME  path  satisfied via eth0 (#2, wiredEthernet) ipv4 dns`.
    private func watchPath(_ environment: NetworkEnvironment, queue: DispatchQueue, width: Int) throws {
        let monitor = try PathMonitor(environment: environment)
        monitor.pathUpdateHandler = { [json] path in
            Output.emit(
                json
                    ? "{\"time\": \(Output.quote(Output.timestamp(Date()))), \"path\": \(Output.pathJSON(path))}"
                    : "\(Output.timestamp(Date()))  \("path".padding(toLength: width, withPad: " ", startingAt: 0))  \(path)"
            )
        }
        // The paths sequence finishes when the namespace goes away: exit 1 saying so.
        let paths = monitor.paths
        Task {
            for await _ in paths {}
            if let error = monitor.lastError {
                CLIProcess.writeError("reachability: \(error)\n")
                CLIProcess.finish(1)
            }
        }
        try monitor.start(queue: queue)
        Self.running.append(monitor)
    }

    /// A line per change of the verdict: `TIME  connectivity  captivePortal (login at …)  via eth0 (#2, …)`.
    private func watchConnectivity(_ environment: NetworkEnvironment, width: Int) throws {
        var configuration = try probes.configuration()
        configuration.environment = environment
        let checker = try Connectivity(validating: configuration)
        let updates = checker.updates
        let label = "connectivity".padding(toLength: width, withPad: " ", startingAt: 0)
        Task { [json] in
            var last: Verdict?
            for await result in updates where result.verdict != last {
                last = result.verdict
                let time = Output.timestamp(Date())
                Output.emit(
                    json
                        ? "{\"time\": \(Output.quote(time)), \"connectivity\": \(Check.json(result))}"
                        : "\(time)  \(label)  \(result.verdict)" + (result.interface.map { "  via \($0)" } ?? ""))
            }
        }
        try checker.start()
        Self.running.append(checker)
    }
}
