import ArgumentParser
import Connectivity
import ReachabilityCommands

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

    @Argument(help: "Hostnames, addresses or @internet (the Internet); none watches the Internet.")
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

    /// The same command line as the small `reachability` parses it (without `--connectivity`).
    var options: WatchOptions {
        WatchOptions(targets: targets, json: json, path: path, namespace: namespace.namespace)
    }

    func validate() throws {
        try probes.requireConnectivity(connectivity)
        try usage(options.validate())
    }

    func run() throws {
        try options.run(connectivity: connectivity ? { try watchConnectivity(width: $0) } : nil)
    }

    /// A line per change of the verdict: `TIME  connectivity  captivePortal (login at …)  via eth0 (#2, …)`.
    private func watchConnectivity(width: Int) throws -> AnyObject {
        var configuration = try probes.configuration()
        configuration.environment = Namespace.environment(namespace.namespace)
        let checker = try Connectivity(validating: configuration)
        let updates = checker.updates
        let label = Output.pad("connectivity", to: width)
        Task { [json] in
            var last: Verdict?
            for await result in updates where result.verdict != last {
                last = result.verdict
                let time = Output.timestamp()
                Output.emit(
                    json
                        ? "{\"time\": \(Output.quote(time)), \"connectivity\": \(Check.json(result))}"
                        : "\(time)  \(label)  \(result.verdict)" + (result.interface.map { "  via \($0)" } ?? ""))
            }
        }
        try checker.start()
        return checker
    }
}
