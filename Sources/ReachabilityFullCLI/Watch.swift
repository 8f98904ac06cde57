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

            A text line is TIME  TARGET  STATUS  FLAGS  INTERFACE, aligned in columns: the time \
            in UTC with milliseconds (2026-11-22T08:42:21.440Z), the target as given (@internet \
            for the Internet), the status (reachableViaWiFi is any link that is not cellular), the \
            flags in Apple's letters (W isWWAN, R reachable, c connectionRequired, t \
            transientConnection, i interventionRequired, C connectionOnTraffic, D \
            connectionOnDemand, l isLocalAddress, d isDirect; `-` for a clear bit) and the output \
            interface with its index and type. Output is unbuffered: `watch | head -1` and a log \
            reader see each line at once.

            With --json, each line is one JSON object, keys in this order: "time" (ISO 8601, \
            UTC, milliseconds), "target", "status", "reachable" (status is not notReachable), \
            "connectionRequired", "flags" (the names of the set flags, in bit order), "rawFlags" \
            (the SCNetworkReachabilityFlags value), "interface" ({"name", "index", "type"}, or \
            null without a route). docs/CLI.md in the repository has every key.

            --path adds a line per path change, as NWPathMonitor reports it (status, interfaces \
            in order of preference, families, DNS, cost): "TIME  path  satisfied via eth0 (#2, \
            wiredEthernet) ipv4 dns"; JSON: {"time", "path": {"status", "interfaces", \
            "gateways", "supportsIPv4", "supportsIPv6", "supportsDNS", "isExpensive", \
            "linkQuality", "networkIdentity"}}. --connectivity adds a line per change of the \
            connectivity verdict (see `reachability check`): "TIME  connectivity  captivePortal \
            (login at ...)  via eth0 (...)"; JSON: {"time", "connectivity": {...}}, the object `check \
            --json` prints. With either, targets are watched only when given.

            With --all-namespaces, every network namespace on the host is watched, as it comes \
            and goes: a line when one appears or disappears ("TIME  NAMESPACE  appeared  pid \
            PID COMMAND  container ID"; JSON: {"time", "namespace": {...}, "event"}) or its \
            name changes ("TIME  NAME  renamed  from net:[INODE]"; JSON: "from"), and each \
            target line is led by the namespace's name (@host for this one, else net:[INODE]; \
            JSON: a "namespace" object after the keys above). One that can't be entered is \
            reported on stderr and the others are watched. New namespaces held only by a \
            process are found within 2 s; named ones at once.

            Exit status: 0 on SIGINT or SIGTERM, 1 when the watched namespace goes away, 2 for a \
            usage or input error.
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

    @OptionGroup var all: AllNamespacesOption

    /// The same command line as the small `reachability` parses it (without `--connectivity`).
    var options: WatchOptions {
        WatchOptions(targets: targets, json: json, path: path, namespace: namespace.namespace)
    }

    func validate() throws {
        try probes.requireConnectivity(connectivity)
        try usage(options.validate())
        try all.validate(with: namespace)
        if all.allNamespaces, connectivity {
            throw ValidationError(
                "--connectivity and --all-namespaces exclude each other: check one namespace with --namespace")
        }
    }

    func run() throws {
        if all.allNamespaces { try AllNamespacesWatch.run(targets: targets, json: json, path: path, option: all) }
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
