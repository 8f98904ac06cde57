import ArgumentParser
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
            """)

    @Argument(help: "Hostnames or addresses; none watches the Internet.")
    var targets: [String] = []

    @Flag(help: "Print one JSON object per line.")
    var json = false

    @OptionGroup var namespace: NamespaceOption

    /// What a running watch keeps alive (a released instance stops its notifier),
    /// held here rather than by locals around a call that never returns: the
    /// optimizer may end a local's lifetime before such a call.
    nonisolated(unsafe) private static var running: [AnyObject] = []

    func run() throws {
        // Being interrupted is how a watch ends: SIGINT and SIGTERM exit 0 (the
        // signal thread of CLIProcess takes them, once no line is being written).
        CLIProcess.signalsExitZero()
        let queue = DispatchQueue(label: "reachability.watch")
        let environment = namespace.environment
        let watched = try (targets.isEmpty ? [nil] : targets.map(Optional.some)).map {
            try TargetArgument.make($0, queue: queue, environment: environment)
        }
        Self.running = watched.map(\.reachability)
        let width = watched.map(\.name.count).max() ?? 0
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
}
