import ArgumentParser
import ReachabilityCommands

struct Interfaces: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the interfaces, like networkctl list.",
        discussion: """
            For each interface: index, name, type (wifi, cellular, wiredEthernet, loopback, \
            other), operational state, carrier, whether a default route leaves through it, and \
            its addresses.

            With --json, one array of objects: {"index", "name", "type", "operState", "up", \
            "carrier", "defaultRoute", "defaultRouteFamilies", "addresses"} (docs/CLI.md in the \
            repository).

            With --all-namespaces, the interfaces of every network namespace, each row led by \
            its namespace (its name, @host for this one, else net:[INODE]); with --json, an \
            array of {"namespace", "interfaces"}. Exit status 1 when a namespace could not be \
            listed (the others are).
            """)

    @Flag(help: "Print a JSON array instead of a table.")
    var json = false

    @OptionGroup var namespace: NamespaceOption

    @OptionGroup var all: AllNamespacesOption

    /// The same command line as the small `reachability` parses it.
    var options: InterfacesOptions { InterfacesOptions(json: json, namespace: namespace.namespace) }

    func validate() throws {
        try usage(options.validate())
        try all.validate(with: namespace)
    }

    func run() async throws {
        if all.allNamespaces { return try runAllNamespaces() }
        try options.run()
    }
}
