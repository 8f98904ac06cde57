import ArgumentParser
import ReachabilityCommands

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print whether TARGET is reachable now, and over what.",
        discussion: """
            Prints the status (notReachable, reachableViaWiFi, reachableViaWWAN), the flags as \
            letters and names, the output interface and its type, and a summary of the whole \
            network path. Letters, `-` for a clear bit: W isWWAN, R reachable, c \
            connectionRequired, t transientConnection, i interventionRequired, C \
            connectionOnTraffic, D connectionOnDemand, l isLocalAddress, d isDirect. \
            reachableViaWiFi means "not cellular" (a wired link reports it; the interface type \
            says the medium). A hostname is resolved first, waiting up to --timeout seconds for \
            the first answer; without one it prints the Internet route's state marked \
            provisional (a `note:` line in text, "provisional": true in the JSON) and exits 1. \
            A name that does not resolve and is one edit from a subcommand's name gets a \
            "did you mean" on stderr.

            With --json, one object: {"time", "target", "status", "reachable", \
            "connectionRequired", "flags", "rawFlags", "interface", "path"}: the keys of a \
            `watch` JSON line, then the path object (docs/CLI.md in the repository has both).

            With --all-namespaces, a table with a row per network namespace (NAMESPACE: its \
            name, @host for this one, else net:[INODE]; PROCESS: PID/COMMAND of the first \
            process holding it; CONTAINER: its container id's first 12 digits), and exit 0 only \
            when every row is reachable; with --json, an array of the objects, each with a \
            "namespace" object.

            Exit status: 0 reachable, 1 not reachable (or output failed), 2 usage or input error \
            (and a resolver that failed: out of descriptors or memory).
            """)

    @Argument(help: "A hostname, an IPv4/IPv6 address, or @internet (the Internet, as none).")
    var target: String?

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @Option(help: "Seconds to wait for a hostname's resolution.")
    var timeout: Double = 10

    @OptionGroup var namespace: NamespaceOption

    @OptionGroup var all: AllNamespacesOption

    /// The same command line as the small `reachability` parses it.
    var options: StatusOptions {
        StatusOptions(target: target, json: json, timeout: timeout, namespace: namespace.namespace)
    }

    func validate() throws {
        try usage(options.validate())
        try all.validate(with: namespace)
    }

    func run() async throws {
        if all.allNamespaces { try await runAllNamespaces() }
        try await options.run()
    }
}
