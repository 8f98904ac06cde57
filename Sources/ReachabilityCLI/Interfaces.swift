import ArgumentParser
import Foundation
import Reachability

struct Interfaces: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the interfaces, like networkctl list.",
        discussion: """
            For each interface: index, name, type (wifi, cellular, wiredEthernet, loopback, \
            other), operational state, carrier, whether a default route leaves through it, and \
            its addresses.
            """)

    @Flag(help: "Print a JSON array instead of a table.")
    var json = false

    @OptionGroup var namespace: NamespaceOption

    func run() async throws {
        let list = try NetworkInterfaces.list(environment: namespace.environment)
        if json {
            let objects = list.map { details -> String in
                let addresses = details.addresses.map { Output.quote($0.description) }.joined(separator: ", ")
                let families = details.defaultRouteFamilies.map { Output.quote($0.rawValue) }.joined(separator: ", ")
                return "{\"index\": \(details.interface.index), \"name\": \(Output.quote(details.interface.name)), "
                    + "\"type\": \(Output.quote(details.interface.type.rawValue)), "
                    + "\"operState\": \(Output.quote(details.operState)), \"up\": \(details.isUp), "
                    + "\"carrier\": \(details.hasCarrier), \"defaultRoute\": \(details.hasDefaultRoute), "
                    + "\"defaultRouteFamilies\": [\(families)], \"addresses\": [\(addresses)]}"
            }
            Output.emit("[" + objects.joined(separator: ",\n ") + "]")
            return
        }
        let rows = list.map { details -> [String] in
            [
                String(details.interface.index), details.interface.name, details.interface.type.rawValue,
                details.operState, details.hasCarrier ? "yes" : "no",
                details.defaultRouteFamilies.isEmpty
                    ? "no" : details.defaultRouteFamilies.map(\.rawValue).joined(separator: ","),
                details.addresses.map(\.description).joined(separator: ", "),
            ]
        }
        let header = ["IDX", "NAME", "TYPE", "OPERSTATE", "CARRIER", "DEFAULT", "ADDRESSES"]
        let widths = (0..<header.count).map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        for row in [header] + rows {
            let cells = row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }
            Output.emit(cells.joined(separator: "  "))
        }
        Output.emit("\n\(list.count) links listed.")
    }
}
