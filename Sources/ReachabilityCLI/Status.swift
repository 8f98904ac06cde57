import ArgumentParser
import Foundation
import Reachability

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print whether TARGET is reachable now, and over what.",
        discussion: """
            Prints the status (notReachable, reachableViaWiFi, reachableViaWWAN), the flags as \
            letters (W R c t i C D l d) and names, the output interface and its type, and a \
            summary of the whole network path. A hostname is resolved first (up to --timeout).

            Exit status: 0 reachable, 1 not reachable, 2 usage or input error.
            """)

    @Argument(help: "A hostname, an IPv4/IPv6 address, or nothing for the Internet.")
    var target: String?

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @Option(help: "Seconds to wait for a hostname's resolution.")
    var timeout: Double = 10

    func validate() throws {
        try Seconds.check(timeout, "--timeout")
    }

    func run() async throws {
        let (name, reachability) = try TargetArgument.make(target)
        let state = try await TargetArgument.firstState(of: reachability, timeout: Seconds.duration(timeout))
        let path = try PathMonitor().currentPath
        if json {
            let interfaces = path.availableInterfaces.map { Output.interfaceJSON($0) }.joined(separator: ", ")
            let gateways = path.gateways.map { Output.quote($0.description) }.joined(separator: ", ")
            let pathJSON =
                ", \"path\": {\"status\": \(Output.quote(path.status.rawValue)), \"interfaces\": [\(interfaces)], "
                + "\"gateways\": [\(gateways)], \"supportsIPv4\": \(path.supportsIPv4), "
                + "\"supportsIPv6\": \(path.supportsIPv6), \"supportsDNS\": \(path.supportsDNS), "
                + "\"isExpensive\": \(path.isExpensive)}"
            Output.emit(Output.json(target: name, state: state, extra: pathJSON))
        } else {
            let names = state.flags.names.isEmpty ? "none" : state.flags.names.joined(separator: ", ")
            Output.emit("target:     \(name)")
            Output.emit("status:     \(state.status)")
            Output.emit("flags:      \(state.flags)  (\(names))")
            Output.emit("interface:  \(state.interface?.description ?? "none")")
            Output.emit("path:       \(path)")
        }
        throw ExitCode(state.isReachable ? 0 : 1)
    }
}
