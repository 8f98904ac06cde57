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
            """)

    @Flag(help: "Print a JSON array instead of a table.")
    var json = false

    @OptionGroup var namespace: NamespaceOption

    /// The same command line as the small `reachability` parses it.
    var options: InterfacesOptions { InterfacesOptions(json: json, namespace: namespace.namespace) }

    func validate() throws {
        try usage(options.validate())
    }

    func run() async throws {
        try options.run()
    }
}
