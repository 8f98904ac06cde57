import ArgumentParser
import Foundation
import Reachability

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

    @Argument(help: "A hostname, an IPv4/IPv6 address, or nothing for the Internet.")
    var target: String?

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @Option(help: "Seconds to wait for a hostname's resolution.")
    var timeout: Double = 10

    @OptionGroup var namespace: NamespaceOption

    func validate() throws {
        try Seconds.check(timeout, "--timeout")
    }

    func run() async throws {
        let environment = namespace.environment
        let (name, reachability) = try TargetArgument.make(target, environment: environment)
        TargetArgument.exitOnErrors(reachability, resolverFailure: 2)
        let first = try await TargetArgument.firstState(of: reachability, timeout: Seconds.duration(timeout))
        // No first state because of an error (the namespace went away, or the resolver failed).
        if first == nil, let error = reachability.lastError {
            CLIProcess.writeError("reachability: \(error)\n")
            throw ExitCode(error.code == .namespace ? 1 : 2)
        }
        let state = first ?? reachability.state
        // A mistyped subcommand becomes a target ("reachability wacth"): say so when it didn't resolve.
        if let target, reachability.resolvedAddresses?.isEmpty == true,
            let hint = TargetArgument.suggestion(for: target)
        {
            CLIProcess.writeError("reachability: \(quotedForMessage(target)) did not resolve; \(hint)\n")
        }
        let path = try PathMonitor(environment: environment).currentPath
        if json {
            let pathJSON = ", \"path\": \(Output.pathJSON(path))"
            let provisional = state.isProvisional ? ", \"provisional\": true" : ""
            Output.emit(Output.json(target: name, state: state, extra: pathJSON + provisional))
        } else {
            let names = state.flags.names.isEmpty ? "none" : state.flags.names.joined(separator: ", ")
            Output.emit("target:     \(name)")
            Output.emit("status:     \(state.status)")
            Output.emit("flags:      \(state.flags)  (\(names))")
            Output.emit("interface:  \(state.interface?.description ?? "none")")
            Output.emit("path:       \(path)")
            if state.isProvisional {
                Output.emit("note:       not resolved within --timeout: the Internet route's state (provisional)")
            }
        }
        // A name not resolved in time is not known to be reachable, whatever the route says.
        throw ExitCode(state.isReachable && !state.isProvisional ? 0 : 1)
    }
}
