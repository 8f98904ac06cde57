import ArgumentParser
import Connectivity
import ReachabilityCommands

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
            answer (the first 3 distinct ones, asked together, as the C library would ask them; \
            on timeout stderr names them and why none answered). --connectivity: a validated \
            Internet instead (the check endpoints answer as expected; see `reachability check`). \
            A link with no carrier is never waited for \
            unless it is named. When the watched namespace goes away (--namespace), it says so \
            on stderr and exits 1.

            --dns asks the nameservers the C library asks: the first 3 distinct addresses of \
            resolv.conf's nameserver lines, in file order (repeats and unparsable entries \
            skipped; at most the first 1 MiB of the file is read; systemd-resolved's stub \
            127.0.0.53 is asked like any server), together, at once and then every second, for \
            `. NS` over UDP (NOERROR or NXDOMAIN counts as an answer); a round waits at most a \
            second and never past --timeout.

            Under systemd (NOTIFY_SOCKET set) it reports with sd_notify, no libsystemd needed: \
            "STATUS=Waiting for eth0:routable and a nameserver that answers", then READY=1 with \
            "STATUS=Online: ...", or "STATUS=Timed out after 120 s waiting for ...". The unit \
            reachability-wait-online.service, which `make install` installs, orders itself \
            Before=network-online.target, as systemd-networkd-wait-online.service does \
            (docs/OPERATIONS.md in the repository).

            Exit status: 0 online, 1 timed out (default 120 s) or the namespace went away, 2 \
            usage or resolver error.
            """)

    @Argument(help: "A hostname, an IPv4/IPv6 address, or @internet (the Internet, as none).")
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

    /// The same command line as the small `reachability` parses it (without `--connectivity`).
    var options: WaitOptions {
        WaitOptions(
            target: target, timeout: timeout, interfaces: interfaces, any: any, ignore: ignore, ipv4: ipv4,
            ipv6: ipv6, dns: dns, namespace: namespace.namespace)
    }

    func validate() throws {
        if connectivity && (target != nil || !interfaces.isEmpty || !ignore.isEmpty || ipv4 || ipv6) {
            throw ValidationError(
                "--connectivity waits for the Internet: no TARGET, --interface, --ignore, --ipv4 or --ipv6")
        }
        try probes.requireConnectivity(connectivity)
        try usage(options.validate())
    }

    func run() async throws {
        guard connectivity else { return try await options.run() }
        let environment = Namespace.environment(namespace.namespace)
        let deadline = ContinuousClock.now + Seconds.duration(timeout)
        let what = options.description(connectivity: true)
        SystemdNotify.status("Waiting for \(what)")
        if dns { try await options.waitForDNS(environment, until: deadline, what: what) }
        try await waitForConnectivity(until: deadline, what: what)
    }

    private func waitForConnectivity(until deadline: ContinuousClock.Instant, what: String) async throws {
        var configuration = try probes.configuration()
        // Waiting is the point: check again at least every 2 s while not online,
        // rather than backing off to a minute and overshooting the timeout.
        configuration.offlineRetryLimit = min(configuration.offlineRetryLimit, .seconds(2))
        configuration.environment = Namespace.environment(namespace.namespace)
        let connectivity = try Connectivity(validating: configuration)
        try connectivity.start()
        // A verdict that is already notConnected doesn't change when the namespace
        // goes away: that ends the wait at once (exit 1, saying why) all the same.
        // After the start, so it shares the monitor the checker opened.
        let sentinel = try Namespace.exitWhenGone(namespace.namespace)
        defer { withExtendedLifetime(sentinel) {} }
        let connected = await firstElement(of: connectivity.updates, within: max(deadline - .now, .zero)) {
            $0.isConnected || connectivity.lastError != nil
        }
        if let error = connectivity.lastError {
            CLIProcess.writeError("reachability: \(error)\n")
            throw ExitStatus(1)
        }
        // Read before stopping: a stopped checker keeps no result.
        let last = connectivity.latestResult.map { ["the last check said \($0.verdict)"] } ?? ["no check ended"]
        connectivity.stop()
        guard connected != nil else { throw options.timedOut(what, missing: last) }
        SystemdNotify.send("READY=1\nSTATUS=Online: \(what)")
        throw ExitStatus(0)
    }
}
