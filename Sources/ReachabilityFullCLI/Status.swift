import ArgumentParser
import ReachabilityCommands

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print whether TARGET is reachable now, and over what.",
        discussion: """
            Prints the status (notReachable, reachableViaWiFi, reachableViaWWAN), the flags as \
            letters (W R c t i C D l d) and names, the output interface and its type, and a \
            summary of the whole network path. A hostname is resolved first (up to --timeout); \
            a name that does not resolve and is one edit from a subcommand's name gets a \
            "did you mean" on stderr.

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

    /// The same command line as the small `reachability` parses it.
    var options: StatusOptions {
        StatusOptions(target: target, json: json, timeout: timeout, namespace: namespace.namespace)
    }

    func validate() throws {
        try usage(options.validate())
    }

    func run() async throws {
        try await options.run()
    }
}
