import ArgumentParser
import Connectivity
import Foundation
import Reachability

struct Wait: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait until TARGET is reachable, as nm-online and systemd-networkd-wait-online do.",
        discussion: """
            Exits 0 as soon as the target is reachable (at once if it already is), or 1 when \
            --timeout seconds pass first. With --interface, only a route out of that interface \
            counts; with --ipv4 or --ipv6, only that family's route to the Internet. With \
            --connectivity, waits for a validated Internet instead: the check endpoints \
            (see `reachability check`) answer as expected, re-checked on every path change. \
            When the watched namespace goes away (--namespace), it says so on stderr and exits 1.
            """)

    @Argument(help: "A hostname, an IPv4/IPv6 address, or nothing for the Internet.")
    var target: String?

    @Option(help: "Give up after this many seconds.")
    var timeout: Double = 30

    @Option(help: "Only count a route out of this interface.")
    var interface: String?

    @Flag(help: "Only count IPv4 (Internet target only).")
    var ipv4 = false

    @Flag(help: "Only count IPv6 (Internet target only).")
    var ipv6 = false

    @Flag(help: "Wait for a validated Internet (check endpoints answer), not just a route.")
    var connectivity = false

    @OptionGroup(title: "Connectivity options (with --connectivity)")
    var probes: ProbeOptions

    @OptionGroup var namespace: NamespaceOption

    func validate() throws {
        try Seconds.check(timeout, "--timeout")
        guard !(ipv4 && ipv6) else { throw ValidationError("--ipv4 and --ipv6 exclude each other") }
        if (ipv4 || ipv6) && target != nil {
            throw ValidationError("--ipv4 and --ipv6 apply to the Internet target, not to \(target ?? "")")
        }
        if connectivity && (target != nil || interface != nil || ipv4 || ipv6) {
            throw ValidationError("--connectivity waits for the Internet: no TARGET, --interface, --ipv4 or --ipv6")
        }
        if !connectivity && (!probes.urls.isEmpty || probes.captiveAPI != nil || probes.httpsOnly) {
            throw ValidationError("--url, --captive-api and --https-only apply with --connectivity")
        }
        // The kernel's rules (dev_valid_name): 1 to 15 bytes, not "." or "..", no '/',
        // ':' or whitespace. Any other name could never match, and wait would sit out
        // the whole timeout.
        if let interface,
            interface.isEmpty || interface.utf8.count > 15 || interface == "." || interface == ".."
                || interface.contains(where: { $0 == "/" || $0 == ":" || $0.isWhitespace })
                || interface.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        {
            throw ValidationError("--interface \(quotedForMessage(interface)) is not an interface name")
        }
    }

    func run() async throws {
        if connectivity { try await waitForConnectivity() }
        let reachability: Reachability
        let environment = namespace.environment
        if ipv4 || ipv6 {
            // A global address only the default route covers (no packet is sent to it).
            reachability = try Reachability(
                address: ipv4 ? IPAddress.internetProbeV4 : IPAddress.internetProbeV6, environment: environment)
        } else {
            reachability = try TargetArgument.make(target, environment: environment).reachability
        }
        TargetArgument.exitOnErrors(reachability, resolverFailure: 2)
        try reachability.startNotifier()
        let wanted = interface
        let reached =
            await firstElement(of: reachability.updates, within: Seconds.duration(timeout)) { state in
                state.isReachable && (wanted == nil || state.interface?.name == wanted)
            } != nil
        // The sequence also ends when the namespace goes away: say why.
        if !reached, let error = reachability.lastError {
            CLIProcess.writeError("reachability: \(error)\n")
            throw ExitCode(error.code == .namespace ? 1 : 2)
        }
        reachability.stopNotifier()
        throw ExitCode(reached ? 0 : 1)
    }

    private func waitForConnectivity() async throws {
        var configuration = try probes.configuration()
        // Waiting is the point: check again at least every 2 s while not online,
        // rather than backing off to a minute and overshooting the timeout.
        configuration.offlineRetryLimit = min(configuration.offlineRetryLimit, .seconds(2))
        configuration.environment = namespace.environment
        let connectivity = try Connectivity(validating: configuration)
        try connectivity.start()
        let connected = await firstElement(of: connectivity.updates, within: Seconds.duration(timeout)) {
            $0.isConnected || connectivity.lastError != nil
        }
        if let error = connectivity.lastError {
            CLIProcess.writeError("reachability: \(error)\n")
            throw ExitCode(1)
        }
        connectivity.stopNotifier()
        throw ExitCode(connected != nil ? 0 : 1)
    }
}
