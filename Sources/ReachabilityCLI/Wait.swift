import ArgumentParser
import Connectivity
import Foundation
import Reachability

struct Wait: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait until the network is online, as nm-online and systemd-networkd-wait-online do.",
        discussion: """
            Exits 0 as soon as what it waits for holds (at once if it already does), or 1 when \
            --timeout seconds pass first (0: check once). By default it waits for TARGET, or with \
            no TARGET for a route to the Internet. With --interface IF[:STATE] (repeatable) it \
            waits for each named interface to reach STATE instead: carrier (up, with carrier), \
            degraded (carrier and a usable address) or routable (carrier, a usable global address \
            and a default route out of it; the default). --any: one of them is enough. --ignore \
            IF (repeatable): some interface other than these must be routable. -4/-6: only that \
            family's addresses and routes count. --dns: also a nameserver of resolv.conf must \
            answer. --connectivity: a validated Internet instead (the check endpoints answer as \
            expected; see `reachability check`). A link with no carrier is never waited for \
            unless it is named. Under systemd (NOTIFY_SOCKET set) it reports progress with \
            STATUS= and READY=1 (see reachability-wait-online.service in the repository). When \
            the watched namespace goes away (--namespace), it says so on stderr and exits 1.
            """)

    @Argument(help: "A hostname, an IPv4/IPv6 address, or nothing for the Internet.")
    var target: String?

    @Option(help: "Give up after this many seconds (0: check once).")
    var timeout: Double = 120

    @Option(
        name: [.customShort("i"), .customLong("interface")],
        help: ArgumentHelp(
            "Wait for this interface to reach STATE: carrier, degraded or routable (default). Repeatable.",
            valueName: "IF[:STATE]"))
    var interfaces: [String] = []

    @Flag(help: "With several --interface: wait for any one of them, not all.")
    var any = false

    @Option(help: ArgumentHelp("Don't count this interface (without --interface). Repeatable.", valueName: "IF"))
    var ignore: [String] = []

    @Flag(name: [.customShort("4"), .customLong("ipv4")], help: "Only count IPv4.")
    var ipv4 = false

    @Flag(name: [.customShort("6"), .customLong("ipv6")], help: "Only count IPv6.")
    var ipv6 = false

    @Flag(help: "Also wait until a nameserver in resolv.conf answers a query.")
    var dns = false

    @Flag(help: "Wait for a validated Internet (check endpoints answer), not just a route.")
    var connectivity = false

    @OptionGroup(title: "Connectivity options (with --connectivity)")
    var probes: ProbeOptions

    @OptionGroup var namespace: NamespaceOption

    func validate() throws {
        try Seconds.check(timeout, "--timeout")
        guard !(ipv4 && ipv6) else { throw ValidationError("--ipv4 and --ipv6 exclude each other") }
        if (ipv4 || ipv6) && target != nil {
            throw ValidationError("--ipv4 and --ipv6 apply to the Internet or interfaces, not to \(target ?? "")")
        }
        if connectivity && (target != nil || !interfaces.isEmpty || !ignore.isEmpty || ipv4 || ipv6) {
            throw ValidationError(
                "--connectivity waits for the Internet: no TARGET, --interface, --ignore, --ipv4 or --ipv6")
        }
        try probes.requireConnectivity(connectivity)
        if target != nil && (!interfaces.isEmpty || !ignore.isEmpty) {
            throw ValidationError("--interface and --ignore wait for interfaces, not for \(target ?? "")")
        }
        if !interfaces.isEmpty && !ignore.isEmpty {
            throw ValidationError("--ignore applies without --interface (the named interfaces are all that count)")
        }
        if any && interfaces.isEmpty { throw ValidationError("--any chooses among --interface options; none given") }
        for argument in interfaces { _ = try InterfaceCondition(parsing: argument) }
        for name in ignore where !InterfaceCondition.isValidName(name) {
            throw ValidationError("--ignore \(quotedForMessage(name)) is not an interface name")
        }
    }

    func run() async throws {
        let environment = namespace.environment
        let deadline = ContinuousClock.now + Seconds.duration(timeout)
        let family: IPAddress.Family? = ipv4 ? .ipv4 : ipv6 ? .ipv6 : nil
        let what = description(family: family)
        SystemdNotify.status("Waiting for \(what)")
        if connectivity {
            if dns { try await waitForDNS(environment, until: deadline, what: what) }
            try await waitForConnectivity(until: deadline, what: what)
        }
        let conditions = try interfaces.map { try InterfaceCondition(parsing: $0) }
        // Links, then DNS; then the links again, at once: if they went while the
        // resolver was being asked, wait for them again.
        while true {
            if !conditions.isEmpty || !ignore.isEmpty {
                let rule = InterfaceRule(conditions: conditions, any: any, ignored: Set(ignore), family: family)
                try await waitForInterfaces(rule, environment, until: deadline, what: what)
                guard dns else { break }
                try await waitForDNS(environment, until: deadline, what: what)
                if rule.holds(for: try NetworkInterfaces.list(environment: environment)) { break }
            } else {
                try await waitForTarget(environment, family: family, until: deadline, what: what)
                guard dns else { break }
                try await waitForDNS(environment, until: deadline, what: what)
                let again = try makeTargetInstance(environment, family: family)
                if again.currentReachabilityStatus != .notReachable { break }
            }
        }
        SystemdNotify.send("READY=1\nSTATUS=Online: \(what)")
        throw ExitCode(0)
    }

    /// What is waited for, for STATUS= lines and messages.
    private func description(family: IPAddress.Family?) -> String {
        var parts: [String] = []
        if connectivity {
            parts.append("a validated Internet connection")
        } else if !interfaces.isEmpty {
            parts.append((any ? "any of " : "") + interfaces.joined(separator: ", "))
        } else if !ignore.isEmpty {
            parts.append("a routable interface other than " + ignore.joined(separator: ", "))
        } else {
            parts.append(target.map { "a route to \($0)" } ?? "a route to the Internet")
        }
        if let family { parts[0] += " over \(family == .ipv4 ? "IPv4" : "IPv6")" }
        if dns { parts.append("a nameserver that answers") }
        return parts.joined(separator: " and ")
    }

    /// Exits 1 (after telling systemd) when the deadline has passed.
    private func timedOut(_ what: String) -> ExitCode {
        SystemdNotify.status("Timed out after \(Self.seconds(timeout)) waiting for \(what)")
        return ExitCode(1)
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    private func makeTargetInstance(_ environment: NetworkEnvironment, family: IPAddress.Family?) throws
        -> Reachability
    {
        guard let family else { return try TargetArgument.make(target, environment: environment).reachability }
        // A global address only the default route covers (no packet is sent to it).
        let reachability = try Reachability(
            address: family == .ipv4 ? IPAddress.internetProbeV4 : IPAddress.internetProbeV6,
            environment: environment)
        reachability.postsNotifications = false
        return reachability
    }

    private func waitForTarget(
        _ environment: NetworkEnvironment, family: IPAddress.Family?, until deadline: ContinuousClock.Instant,
        what: String
    ) async throws {
        let reachability = try makeTargetInstance(environment, family: family)
        TargetArgument.exitOnErrors(reachability, resolverFailure: 2)
        let updates = reachability.updates
        try reachability.startNotifier()
        defer { reachability.stopNotifier() }
        let reached =
            await firstElement(of: updates, within: max(deadline - .now, .zero)) { $0.isReachable } != nil
        guard reached else {
            // The sequence also ends when the namespace goes away: say why.
            if let error = reachability.lastError {
                CLIProcess.writeError("reachability: \(error)\n")
                throw ExitCode(error.code == .namespace ? 1 : 2)
            }
            throw timedOut(what)
        }
    }

    private func waitForInterfaces(
        _ rule: InterfaceRule, _ environment: NetworkEnvironment, until deadline: ContinuousClock.Instant,
        what: String
    ) async throws {
        let monitor = try InterfaceMonitor(environment: environment)
        let updates = monitor.updates
        try monitor.start()
        defer { monitor.cancel() }
        let reached = await firstElement(of: updates, within: max(deadline - .now, .zero)) { rule.holds(for: $0) }
        guard reached != nil else {
            if let error = monitor.lastError {
                CLIProcess.writeError("reachability: \(error)\n")
                throw ExitCode(1)
            }
            throw timedOut(what)
        }
    }

    /// Asks the resolver until it answers: at once, then every second (a query
    /// waits at most a second per server, and never past the deadline).
    private func waitForDNS(_ environment: NetworkEnvironment, until deadline: ContinuousClock.Instant, what: String)
        async throws
    {
        while true {
            let left = deadline - .now
            let outcome = try ResolverCheck.check(
                environment: environment, timeout: min(max(left, .milliseconds(1)), .seconds(1)))
            if outcome.answered { return }
            SystemdNotify.status("Waiting for \(what): \(outcome)")
            let pause = min(deadline - .now, .seconds(1))
            guard pause > .zero else { throw timedOut(what) }
            try? await Task.sleep(for: pause)
            guard ContinuousClock.now < deadline else { throw timedOut(what) }
        }
    }

    private func waitForConnectivity(until deadline: ContinuousClock.Instant, what: String) async throws {
        var configuration = try probes.configuration()
        // Waiting is the point: check again at least every 2 s while not online,
        // rather than backing off to a minute and overshooting the timeout.
        configuration.offlineRetryLimit = min(configuration.offlineRetryLimit, .seconds(2))
        configuration.environment = namespace.environment
        let connectivity = try Connectivity(validating: configuration)
        try connectivity.start()
        let connected = await firstElement(of: connectivity.updates, within: max(deadline - .now, .zero)) {
            $0.isConnected || connectivity.lastError != nil
        }
        if let error = connectivity.lastError {
            CLIProcess.writeError("reachability: \(error)\n")
            throw ExitCode(1)
        }
        connectivity.stopNotifier()
        guard connected != nil else { throw timedOut(what) }
        SystemdNotify.send("READY=1\nSTATUS=Online: \(what)")
        throw ExitCode(0)
    }
}

/// One `--interface IF[:STATE]`: the minimum state, in systemd-networkd's terms.
struct InterfaceCondition: Sendable, Equatable {
    enum State: String, Sendable, CaseIterable, Comparable {
        /// Administratively up, with carrier.
        case carrier
        /// Carrier and a usable address (not tentative, not failed DAD).
        case degraded
        /// Carrier, a usable global address and a default route out of the interface.
        case routable

        static func < (lhs: Self, rhs: Self) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    var name: String
    var state: State

    /// The kernel's rules (dev_valid_name): 1 to 15 bytes, not "." or "..", no '/',
    /// ':' or whitespace. Any other name could never match, and wait would sit out
    /// the whole timeout.
    static func isValidName(_ name: String) -> Bool {
        !(name.isEmpty || name.utf8.count > 15 || name == "." || name == ".."
            || name.contains(where: { $0 == "/" || $0 == ":" || $0.isWhitespace })
            || name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }))
    }

    /// The state `details` is in (nil: not even carrier), counting only `family`'s
    /// addresses and routes when given.
    static func state(of details: InterfaceDetails, family: IPAddress.Family?) -> State? {
        guard details.isUp, details.hasCarrier else { return nil }
        let usable = details.addresses.filter {
            !$0.isTentative && !$0.isDADFailed && (family == nil || $0.address.family == family)
        }
        guard !usable.isEmpty else { return .carrier }
        let global = usable.contains { !$0.address.isLinkLocal && !$0.address.isLoopback }
        let routes = details.defaultRouteFamilies.filter { family == nil || $0 == family }
        // The default route must be of a family the interface has a global address of.
        let routed = routes.contains { route in
            usable.contains { $0.address.family == route && !$0.address.isLinkLocal && !$0.address.isLoopback }
        }
        return global && routed ? .routable : .degraded
    }
}

extension InterfaceCondition {
    /// Parses `IF[:STATE]` (STATE defaults to routable); a ValidationError names what is wrong.
    init(parsing argument: String) throws {
        let parts = argument.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let name = String(parts[0])
        guard Self.isValidName(name) else {
            throw ValidationError("--interface \(quotedForMessage(argument)) is not an interface name")
        }
        self.name = name
        if parts.count == 2 {
            guard let state = State(rawValue: String(parts[1])) else {
                throw ValidationError(
                    "--interface \(quotedForMessage(argument)): \(quotedForMessage(String(parts[1]))) is not a state "
                        + "(carrier, degraded or routable)")
            }
            self.state = state
        } else {
            state = .routable
        }
    }
}

/// What `wait` checks against each interface list.
struct InterfaceRule: Sendable {
    var conditions: [InterfaceCondition]
    var any: Bool
    var ignored: Set<String>
    var family: IPAddress.Family?

    func holds(for list: [InterfaceDetails]) -> Bool {
        if conditions.isEmpty {
            // --ignore: some other interface (not loopback) is routable.
            return list.contains { details in
                details.interface.type != .loopback && !ignored.contains(details.interface.name)
                    && InterfaceCondition.state(of: details, family: family) == .routable
            }
        }
        let met = conditions.map { condition in
            guard let details = list.first(where: { $0.interface.name == condition.name }),
                let state = InterfaceCondition.state(of: details, family: family)
            else { return false }
            return state >= condition.state
        }
        return any ? met.contains(true) : !met.contains(false)
    }
}
