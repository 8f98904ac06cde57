import Dispatch
package import ReachabilityCore

// What `status`, `watch`, `wait` and `interfaces` do, for both executables: the small
// `reachability` runs them from its own parse (``Invocation``), the full command from
// swift-argument-parser's. Errors: ``ExitStatus`` for the documented statuses, a
// ``ReachabilityError`` for bad input (exit 2), a ``UsageError`` never (validated).

extension StatusOptions {
    /// Prints the target's state and the path, then throws the exit status: 0
    /// reachable, 1 not (or not resolved within the timeout), 2 a resolver failure.
    package func run() async throws {
        let environment = Namespace.environment(namespace)
        let (name, reachability) = try TargetArgument.make(target, environment: environment)
        TargetArgument.exitOnErrors(reachability, resolverFailure: 2)
        let first = try await TargetArgument.firstState(of: reachability, timeout: Seconds.duration(timeout))
        // No first state because of an error (the namespace went away, or the resolver failed).
        if first == nil, let error = reachability.lastError {
            CLIProcess.writeError("reachability: \(error)\n")
            throw ExitStatus(error.code == .namespace ? 1 : 2)
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
        throw ExitStatus(state.isReachable && !state.isProvisional ? 0 : 1)
    }
}

extension WatchOptions {
    /// What a running watch keeps alive (a released instance stops its notifier),
    /// held here rather than by locals around a call that never returns: the
    /// optimizer may end a local's lifetime before such a call.
    nonisolated(unsafe) private static var running: [AnyObject] = []

    /// Prints each target's state, then a line per change, until a signal ends the
    /// process (exit 0). `connectivity` (the full command's `--connectivity`) starts
    /// the connectivity lines, given the label width, after the path's and before
    /// the targets'; without targets, path or connectivity it watches the Internet.
    package func run(connectivity: ((_ width: Int) throws -> AnyObject)? = nil) throws -> Never {
        // Being interrupted is how a watch ends: SIGINT and SIGTERM exit 0 (the
        // signal thread of CLIProcess takes them, once no line is being written).
        CLIProcess.signalsExitZero()
        let queue = DispatchQueue(label: "reachability.watch")
        let environment = Namespace.environment(namespace)
        let names: [String?] =
            targets.isEmpty ? (path || connectivity != nil ? [] : [nil]) : targets.map(Optional.some)
        let watched = try names.map { try TargetArgument.make($0, queue: queue, environment: environment) }
        Self.running = watched.map(\.reachability)
        let width = max(watched.map(\.name.count).max() ?? 0, path ? 4 : 0, connectivity != nil ? 12 : 0)
        if path { try watchPath(environment, queue: queue, width: width) }
        if let connectivity {
            Self.running.append(try connectivity(width))
            // The verdict alone may never change when the namespace goes: watch it.
            if watched.isEmpty, let sentinel = try Namespace.exitWhenGone(namespace) { Self.running.append(sentinel) }
        }
        for (name, reachability) in watched {
            // The namespace gone: exit 1 with a message. A resolver failure: a message,
            // and the watch goes on (the library tries the name again).
            TargetArgument.exitOnErrors(reachability, resolverFailure: nil)
            // Called with the state (a hostname: once resolved), then on every change,
            // on the monitor's reader thread: the line is written with no hop to a queue.
            reachability.deliverSynchronously { [json] state in
                if json {
                    Output.emitJSON(target: name, state: state)
                } else {
                    Output.emit(Output.line(target: name, state: state, width: width))
                }
            }
            try reachability.start()
        }
        // Wait for a signal; the monitor's reader thread does the work, and nothing
        // else runs: no Swift concurrency, so no libdispatch pool monitor waking
        // the process every second. (Not dispatchMain: its main thread waits in
        // sigsuspend with an empty mask, where SIGINT and SIGTERM would kill the
        // process by their default action.)
        CLIProcess.parkForever()
    }

    /// A line per path change: `TIME  path  satisfied via eth0 (#2, wiredEthernet) ipv4 dns`.
    private func watchPath(_ environment: NetworkEnvironment, queue: DispatchQueue, width: Int) throws {
        let monitor = try PathMonitor(environment: environment, notificationQueue: queue)
        monitor.pathUpdateHandler = { [json] path in
            Output.emit(
                json
                    ? "{\"time\": \(Output.quote(Output.timestamp())), \"path\": \(Output.pathJSON(path))}"
                    : "\(Output.timestamp())  \(Output.pad("path", to: width))  \(path)")
        }
        // The paths sequence finishes when the namespace goes away: exit 1 saying so.
        let paths = monitor.updates
        Task {
            for await _ in paths {}
            if let error = monitor.lastError {
                CLIProcess.writeError("reachability: \(error)\n")
                CLIProcess.finish(1)
            }
        }
        try monitor.start()
        Self.running.append(monitor)
    }
}

extension WaitOptions {
    /// Waits until what the options name holds (target, interfaces, then the
    /// resolver with `--dns`), telling systemd; throws the exit status: 0 online, 1
    /// timed out or the namespace gone, 2 a resolver failure.
    package func run() async throws {
        let environment = Namespace.environment(namespace)
        let deadline = ContinuousClock.now + Seconds.duration(timeout)
        let what = description()
        SystemdNotify.status("Waiting for \(what)")
        let conditions = try interfaces.map { argument throws(UsageError) in try InterfaceCondition(parsing: argument) }
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
                try await waitForTarget(environment, until: deadline, what: what)
                guard dns else { break }
                try await waitForDNS(environment, until: deadline, what: what)
                let again = try makeTargetInstance(environment)
                if again.currentReachabilityStatus != .notReachable { break }
            }
        }
        SystemdNotify.send("READY=1\nSTATUS=Online: \(what)")
        throw ExitStatus(0)
    }

    /// What is waited for, for STATUS= lines and messages (`connectivity`: the full
    /// command's `--connectivity`).
    package func description(connectivity: Bool = false) -> String {
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

    /// Exit status 1 for a deadline that has passed, after telling systemd and
    /// saying on stderr what was waited for and, when known, what was still missing.
    package func timedOut(_ what: String, missing: [String] = []) -> ExitStatus {
        SystemdNotify.status("Timed out after \(Self.seconds(timeout)) waiting for \(what)")
        let detail = missing.isEmpty ? "" : ": " + missing.joined(separator: "; ")
        CLIProcess.writeError("reachability: timed out after \(Self.seconds(timeout)) waiting for \(what)\(detail)\n")
        return ExitStatus(1)
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    private func makeTargetInstance(_ environment: NetworkEnvironment) throws -> Reachability {
        guard let family else { return try TargetArgument.make(target, environment: environment).reachability }
        // A global address only the default route covers (no packet is sent to it).
        let reachability = try Reachability(
            address: family == .ipv4 ? IPAddress.internetProbeV4 : IPAddress.internetProbeV6,
            environment: environment)
        reachability.postsNotifications = false
        return reachability
    }

    private func waitForTarget(_ environment: NetworkEnvironment, until deadline: ContinuousClock.Instant, what: String)
        async throws
    {
        let reachability = try makeTargetInstance(environment)
        TargetArgument.exitOnErrors(reachability, resolverFailure: 2)
        let updates = reachability.updates
        try reachability.start()
        defer { reachability.stop() }
        let reached =
            await firstElement(of: updates, within: max(deadline - .now, .zero)) { $0.isReachable } != nil
        guard reached else {
            // The sequence also ends when the namespace goes away: say why.
            if let error = reachability.lastError {
                CLIProcess.writeError("reachability: \(error)\n")
                throw ExitStatus(error.code == .namespace ? 1 : 2)
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
        defer { monitor.stop() }
        // A named interface that isn't there may come later (a USB modem, a VPN):
        // say so at once, and keep waiting. The monitor's list: no second dump.
        for name in rule.absentNames(in: monitor.currentInterfaces) {
            CLIProcess.writeError("reachability: warning: there is no interface \(quotedForMessage(name)) (yet)\n")
        }
        let reached = await firstElement(of: updates, within: max(deadline - .now, .zero)) { rule.holds(for: $0) }
        guard reached != nil else {
            if let error = monitor.lastError {
                CLIProcess.writeError("reachability: \(error)\n")
                throw ExitStatus(1)
            }
            throw timedOut(what, missing: rule.missing(in: monitor.currentInterfaces))
        }
    }

    /// Asks the resolver until it answers: at once, then every second. Each check
    /// asks the first 3 distinct nameservers of resolv.conf together (as the C
    /// library would ask them) and waits at most a second, never past the deadline.
    /// Timed out: says on stderr which servers were asked and why none answered.
    package func waitForDNS(_ environment: NetworkEnvironment, until deadline: ContinuousClock.Instant, what: String)
        async throws
    {
        while true {
            let started = ContinuousClock.now
            let report = try ResolverCheck.run(
                environment: environment, timeout: min(max(deadline - started, .milliseconds(1)), .seconds(1)))
            if report.outcome.answered { return }
            SystemdNotify.status("Waiting for \(what): \(report)")
            let pause = min(deadline, started + .seconds(1)) - .now
            if pause > .zero { try? await Task.sleep(for: pause) }
            guard ContinuousClock.now < deadline else {
                throw timedOut(what, missing: ["no nameserver answered (\(report))"])
            }
        }
    }
}

extension InterfacesOptions {
    /// Prints the interfaces as a table (networkctl list's columns) or a JSON array.
    package func run() throws {
        let list = try NetworkInterfaces.list(environment: Namespace.environment(namespace))
        if json {
            Output.emit("[" + list.map(Self.jsonObject).joined(separator: ",\n ") + "]")
            return
        }
        Output.emitTable(header: Self.header, rows: list.map(Self.row))
        Output.emit("\n\(list.count) links listed.")
    }

    /// The table's columns.
    package static let header = ["IDX", "NAME", "TYPE", "OPERSTATE", "CARRIER", "DEFAULT", "ADDRESSES"]

    /// One interface's JSON object: {"index", "name", "type", "operState", "up",
    /// "carrier", "defaultRoute", "defaultRouteFamilies", "addresses"}.
    package static func jsonObject(_ details: InterfaceDetails) -> String {
        let addresses = details.addresses.map { Output.quote($0.description) }.joined(separator: ", ")
        let families = details.defaultRouteFamilies.map { Output.quote($0.rawValue) }.joined(separator: ", ")
        return "{\"index\": \(details.interface.index), \"name\": \(Output.quote(details.interface.name)), "
            + "\"type\": \(Output.quote(details.interface.type.rawValue)), "
            + "\"operState\": \(Output.quote(details.operState)), \"up\": \(details.isUp), "
            + "\"carrier\": \(details.hasCarrier), \"defaultRoute\": \(details.hasDefaultRoute), "
            + "\"defaultRouteFamilies\": [\(families)], \"addresses\": [\(addresses)]}"
    }

    /// One interface's cells, in ``header``'s order.
    package static func row(_ details: InterfaceDetails) -> [String] {
        [
            // Escaped before the columns are measured.
            String(details.interface.index), Output.terminalSafe(details.interface.name),
            details.interface.type.rawValue,
            details.operState, details.hasCarrier ? "yes" : "no",
            details.defaultRouteFamilies.isEmpty
                ? "no" : details.defaultRouteFamilies.map(\.rawValue).joined(separator: ","),
            details.addresses.map(\.description).joined(separator: ", "),
        ]
    }
}
