import ArgumentParser
import Dispatch
import Glibc
import Reachability
import ReachabilityCommands

/// `--all-namespaces [--namespace-dir DIR]…`, on `status`, `watch` and `interfaces`.
struct AllNamespacesOption: ParsableArguments {
    @Flag(
        help: """
            Look at every network namespace on the host: this one, those named in /run/netns (and \
            each --namespace-dir), and those held by processes (containers, pods). Seeing and \
            entering other users' namespaces needs root.
            """)
    var allNamespaces = false

    @Option(
        name: .customLong("namespace-dir"),
        help: ArgumentHelp(
            "With --all-namespaces: also the namespaces named in this directory (Docker's /run/docker/netns).",
            valueName: "dir"))
    var namespaceDirectories: [String] = []

    func validate() throws {
        if !allNamespaces, !namespaceDirectories.isEmpty {
            throw ValidationError("--namespace-dir needs --all-namespaces")
        }
        for directory in namespaceDirectories
        where !directory.hasPrefix("/") || directory.utf8.contains(0) || directory.utf8.count >= 4096 {
            throw ValidationError("--namespace-dir \(quotedForMessage(directory)) is not an absolute path")
        }
    }

    /// Refuses `--all-namespaces` with `--namespace`, which names one.
    func validate(with namespace: NamespaceOption) throws {
        if allNamespaces, namespace.namespace != nil {
            throw ValidationError("--all-namespaces and --namespace exclude each other")
        }
    }

    /// The directories of named namespaces: `/run/netns`, then the `--namespace-dir`s.
    var directories: [String] { NetworkNamespaceMonitor.defaultDirectories + namespaceDirectories }
}

/// How a namespace is named in lines, tables and JSON.
enum NamespaceLabel {
    /// The name of the command's own namespace.
    static let host = "@host"

    /// `@host` for the command's own; NAME for `/run/netns/NAME` (what `ip netns`
    /// calls it); the path for one named in another directory (`--namespace-dir`:
    /// the same NAME may be in two); else `net:[INODE]`. Unique among the
    /// namespaces seen at once, so an exporter's series never collide.
    static func name(_ namespace: NetworkNamespaceInfo) -> String {
        if namespace.isCurrent { return host }
        if let name = namespace.names.lazy.compactMap(NetworkNamespace.name(of:)).first { return name }
        return namespace.names.first ?? namespace.id.description
    }

    /// `PID/COMMAND` of its first holder, or `-`.
    static func process(_ namespace: NetworkNamespaceInfo) -> String {
        namespace.holders.first.map { "\($0.pid)/\($0.command)" } ?? "-"
    }

    /// The first 12 digits of its container id (as `docker ps` shows it), or `-`.
    static func container(_ namespace: NetworkNamespaceInfo) -> String {
        namespace.containerID.map { String($0.prefix(12)) } ?? "-"
    }

    /// `{"name", "id", "current", "paths", "containerID", "holders": [{"pid", "command",
    /// "containerID"}], "holderCount"}`.
    static func json(_ namespace: NetworkNamespaceInfo) -> String {
        let holders = namespace.holders.map { holder in
            "{\"pid\": \(holder.pid), \"command\": \(Output.quote(holder.command)), "
                + "\"containerID\": \(holder.containerID.map(Output.quote) ?? "null")}"
        }
        return "{\"name\": \(Output.quote(name(namespace))), \"id\": \(Output.quote(namespace.id.description)), "
            + "\"current\": \(namespace.isCurrent), "
            + "\"paths\": [\(namespace.names.map(Output.quote).joined(separator: ", "))], "
            + "\"containerID\": \(namespace.containerID.map(Output.quote) ?? "null"), "
            + "\"holders\": [\(holders.joined(separator: ", "))], \"holderCount\": \(namespace.holderCount)}"
    }

    /// `name (pid PID COMMAND, container ID)` for messages.
    static func described(_ namespace: NetworkNamespaceInfo) -> String {
        var parts: [String] = []
        if let holder = namespace.holders.first { parts.append("pid \(holder.pid) \(holder.command)") }
        if let container = namespace.containerID { parts.append("container \(container.prefix(12))") }
        return name(namespace) + (parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")")
    }

    /// Every namespace visible now, or exit 2 saying why not.
    static func list(_ option: AllNamespacesOption) -> [NetworkNamespaceInfo] {
        do throws(ReachabilityError) {
            return try NetworkNamespaceMonitor.list(directories: option.directories)
        } catch {
            CLIProcess.writeError(Output.terminalSafe("reachability: \(error)\n"))
            CLIProcess.finish(2)
        }
    }
}

// MARK: status --all-namespaces

extension Status {
    /// One row per namespace: its state toward the target. Exit 0 only when every
    /// row is reachable. A namespace gone between the listing and the look has no
    /// row; one that can't be looked at has an `error` row (exit 1).
    func runAllNamespaces() async throws {
        let target = TargetArgument.normalized(target)
        // A bad TARGET is bad input (exit 2), not an error row per namespace.
        _ = try TargetArgument.make(target)
        let namespaces = NamespaceLabel.list(all)
        let timeout = Seconds.duration(timeout)
        var outcomes = [Outcome?](repeating: nil, count: namespaces.count)
        // A few at a time: each look starts a monitor (a thread and two sockets) in its namespace.
        await withTaskGroup(of: (Int, Outcome).self) { group in
            var next = 0
            func addNext() {
                guard next < namespaces.count else { return }
                let (index, namespace) = (next, namespaces[next])
                next += 1
                group.addTask { (index, await Self.look(at: target, in: namespace, timeout: timeout)) }
            }
            for _ in 0..<16 { addNext() }
            for await (index, outcome) in group {
                outcomes[index] = outcome
                addNext()
            }
        }
        // Those the others' descriptors or threads crowded out: again, one at a time.
        for (index, outcome) in outcomes.enumerated() {
            guard case .failed(let error) = outcome, error.code == .systemCall,
                [EMFILE, ENFILE, ENOMEM, ENOBUFS, EAGAIN].contains(error.errno)
            else { continue }
            outcomes[index] = await Self.look(at: target, in: namespaces[index], timeout: timeout)
        }
        var rows: [(NetworkNamespaceInfo, String, Result<ReachabilityState, ReachabilityError>)] = []
        for (namespace, outcome) in zip(namespaces, outcomes) {
            switch outcome {
            case .state(let name, let state): rows.append((namespace, name, .success(state)))
            case .failed(let error):
                CLIProcess.writeError(
                    Output.terminalSafe(
                        "reachability: network namespace \(NamespaceLabel.described(namespace)): \(error)\n"))
                rows.append((namespace, target ?? TargetArgument.internet, .failure(error)))
            case .gone, nil: continue
            }
        }
        if json {
            let objects = rows.map { namespace, name, result in
                let label = ", \"namespace\": \(NamespaceLabel.json(namespace))"
                switch result {
                case .success(let state):
                    return Output.json(
                        target: name, state: state,
                        extra: label + (state.isProvisional ? ", \"provisional\": true" : ""))
                case .failure(let error):
                    return "{\"target\": \(Output.quote(name)), \"status\": \"error\", "
                        + "\"error\": \(Output.quote(error.description))\(label)}"
                }
            }
            Output.emit("[" + objects.joined(separator: ",\n ") + "]")
        } else {
            let cells = rows.map { namespace, name, result -> [String] in
                let head = [
                    Output.terminalSafe(NamespaceLabel.name(namespace)),
                    Output.terminalSafe(NamespaceLabel.process(namespace)),
                    NamespaceLabel.container(namespace), Output.terminalSafe(name),
                ]
                switch result {
                case .success(let state):
                    return head + [
                        state.status.rawValue + (state.isProvisional ? " (provisional)" : ""), "\(state.flags)",
                        state.interface.map { Output.terminalSafe($0.description) } ?? "-",
                    ]
                case .failure: return head + ["error", "-", "-"]
                }
            }
            Output.emitTable(
                header: ["NAMESPACE", "PROCESS", "CONTAINER", "TARGET", "STATUS", "FLAGS", "INTERFACE"], rows: cells)
        }
        let reachable = rows.allSatisfy { row in
            if case .success(let state) = row.2 { return state.isReachable && !state.isProvisional }
            return false
        }
        throw ExitStatus(reachable && !rows.isEmpty ? 0 : 1)
    }

    enum Outcome: Sendable {
        case state(name: String, ReachabilityState)
        case failed(ReachabilityError)
        /// It went away before it could be entered, or its path leads elsewhere now
        /// (its holder exited or moved to another namespace).
        case gone
    }

    /// The target's first state in `namespace`, as `status --namespace` finds it.
    static func look(at target: String?, in namespace: NetworkNamespaceInfo, timeout: Duration) async -> Outcome {
        do {
            let (name, reachability) = try TargetArgument.make(target, environment: namespace.environment, note: false)
            let first = try await TargetArgument.firstState(of: reachability, timeout: timeout)
            if first == nil, let error = reachability.lastError {
                return error.code == .namespace ? .gone : .failed(error)
            }
            return .state(name: name, first ?? reachability.state)
        } catch let error as ReachabilityError {
            return error.code == .namespace && !namespace.isAtPath ? .gone : .failed(error)
        } catch {
            return .failed(ReachabilityError(.systemCall, "\(error)"))
        }
    }
}

// MARK: interfaces --all-namespaces

extension Interfaces {
    /// The interfaces of every namespace, the namespace's columns first. Exit 1 when
    /// one could not be listed (it says why on stderr; the others are listed).
    func runAllNamespaces() throws {
        var listed: [(NetworkNamespaceInfo, [InterfaceDetails])] = []
        var failed = false
        for namespace in NamespaceLabel.list(all) {
            do throws(ReachabilityError) {
                listed.append((namespace, try NetworkInterfaces.list(environment: namespace.environment)))
            } catch  where error.code == .namespace && !namespace.isAtPath {
                continue  // Gone since the listing, or its holder moved on.
            } catch {
                failed = true
                CLIProcess.writeError(
                    Output.terminalSafe(
                        "reachability: network namespace \(NamespaceLabel.described(namespace)): \(error)\n"))
            }
        }
        if json {
            let objects = listed.map { namespace, list in
                "{\"namespace\": \(NamespaceLabel.json(namespace)), \"interfaces\": ["
                    + list.map(InterfacesOptions.jsonObject).joined(separator: ", ") + "]}"
            }
            Output.emit("[" + objects.joined(separator: ",\n ") + "]")
        } else {
            let rows = listed.flatMap { namespace, list in
                list.map { [Output.terminalSafe(NamespaceLabel.name(namespace))] + InterfacesOptions.row($0) }
            }
            Output.emitTable(header: ["NAMESPACE"] + InterfacesOptions.header, rows: rows)
            Output.emit("\n\(rows.count) links listed in \(listed.count) network namespaces.")
        }
        if failed { throw ExitStatus(1) }
    }
}

// MARK: Following namespaces

/// What `watch` and `exporter` keep per namespace under `--all-namespaces`: what
/// `start` made for it, from its appearance to its disappearance (then `stop`).
/// One that can't be entered is reported once and left out; one that failed for
/// want of descriptors, memory or threads, or whose path no longer leads to it, is
/// tried again at the next namespace event (a disappearance frees what it held; a
/// change gives it another path). Events come one at a time, on the
/// namespace monitor's thread; the entries can be read from any thread.
final class NamespaceFollower<Entry: Sendable>: @unchecked Sendable {
    // @unchecked: `waiting` and `start`/`stop` are used on the monitor's thread only;
    // the entries are behind a lock.
    private let entries = LockedValue<[NetworkNamespaceInfo.ID: (path: String?, entry: Entry)]>([:])
    private var waiting: [NetworkNamespaceInfo.ID: NetworkNamespaceInfo] = [:]
    private let start: (NetworkNamespaceInfo) throws -> Entry
    private let stop: (Entry) -> Void
    private let announce: (NetworkNamespaceInfo, Announcement) -> Void
    /// What each namespace was announced as (``NamespaceLabel/name(_:)``).
    private var labels: [NetworkNamespaceInfo.ID: String] = [:]

    /// What `watch` prints a line for.
    enum Announcement {
        case appeared
        /// Its name changed (``NamespaceLabel/name(_:)``): named after its process until
        /// `ip netns add` or `ip netns attach` named it, or the other way round.
        case renamed(from: String)
        case disappeared
    }

    init(
        start: @escaping (NetworkNamespaceInfo) throws -> Entry, stop: @escaping (Entry) -> Void,
        announce: @escaping (NetworkNamespaceInfo, Announcement) -> Void = { _, _ in }
    ) {
        self.start = start
        self.stop = stop
        self.announce = announce
    }

    /// The entries now, by namespace identity.
    var current: [(NetworkNamespaceInfo.ID, Entry)] {
        entries.withLock { entries in entries.keys.sorted().map { ($0, entries[$0]!.entry) } }
    }

    func handle(_ event: NetworkNamespaceEvent) {
        switch event {
        case .appeared(let namespace):
            labels[namespace.id] = NamespaceLabel.name(namespace)
            announce(namespace, .appeared)
            begin(namespace, retry: false)
        case .changed(let namespace):
            if let label = labels[namespace.id], label != NamespaceLabel.name(namespace) {
                labels[namespace.id] = NamespaceLabel.name(namespace)
                announce(namespace, .renamed(from: label))
            }
            // Held by another process now (the first one exited): follow it through that one.
            if waiting[namespace.id] != nil { waiting[namespace.id] = namespace }
            guard let known = entries.withLock({ $0[namespace.id] }), known.path != namespace.path else { break }
            end(namespace.id)
            begin(namespace, retry: false)
        case .disappeared(let namespace):
            waiting[namespace.id] = nil
            end(namespace.id)
            labels[namespace.id] = nil
            announce(namespace, .disappeared)
        }
        for namespace in waiting.values.sorted(by: { $0.id < $1.id }) {
            waiting[namespace.id] = nil
            begin(namespace, retry: true)
        }
    }

    private func begin(_ namespace: NetworkNamespaceInfo, retry: Bool) {
        do {
            let entry = try start(namespace)
            entries.withLock { $0[namespace.id] = (namespace.path, entry) }
        } catch let error as ReachabilityError where error.code == .namespace && !namespace.isAtPath {
            // Its path leads elsewhere now (the environment refuses another namespace):
            // its holder exited or moved on (`ip netns add` is in the new one until it
            // has named it), or its name went. Its change (a name, another holder) or
            // its disappearance follows; until then it waits, and nothing is said.
            waiting[namespace.id] = namespace
        } catch {
            let exhausted =
                (error as? ReachabilityError).map {
                    $0.code == .systemCall && [EMFILE, ENFILE, ENOMEM, ENOBUFS, EAGAIN].contains($0.errno)
                } ?? false
            if exhausted { waiting[namespace.id] = namespace }
            if !retry {
                let again = exhausted ? " (tried again when a namespace goes)" : ""
                CLIProcess.writeError(
                    Output.terminalSafe(
                        "reachability: network namespace \(NamespaceLabel.described(namespace)) is not watched\(again): \(error)\n"
                    ))
            }
        }
    }

    private func end(_ id: NetworkNamespaceInfo.ID) {
        guard let entry = entries.withLock({ $0.removeValue(forKey: id) }) else { return }
        stop(entry.entry)
    }
}

/// What runs for one namespace: its targets' instances and path monitor.
struct Running: @unchecked Sendable {
    // @unchecked: the instances are Sendable; held only to keep them running.
    var objects: [AnyObject] = []
}

extension Running {
    /// Starts `targets` in `namespace`, each state handed to `state` on the reader
    /// thread, and with `path` a path monitor; throws with what it started stopped.
    static func start(
        in namespace: NetworkNamespaceInfo, targets: [String?], path: (@Sendable (NetworkPath) -> Void)?,
        state: @escaping @Sendable (_ target: String, ReachabilityState) -> Void
    ) throws -> Running {
        let environment = namespace.environment
        let label = NamespaceLabel.name(namespace)
        var running = Running()
        do {
            for target in targets {
                let (name, reachability) = try TargetArgument.make(target, environment: environment, note: false)
                reachability.whenError = { _, error in
                    // Its namespace gone: the namespace monitor reports that.
                    if error.code != .namespace {
                        CLIProcess.writeError(
                            Output.terminalSafe("reachability: network namespace \(label): \(error)\n"))
                    }
                }
                reachability.deliverSynchronously { state(name, $0) }
                running.objects.append(reachability)
                try reachability.start()
            }
            if let path {
                let monitor = try PathMonitor(environment: environment)
                monitor.pathUpdateHandler = path
                running.objects.append(monitor)
                try monitor.start()
            }
        } catch {
            stopAll(running)
            throw error
        }
        return running
    }
}

/// Stops what a namespace's entry runs.
func stopAll(_ running: Running) {
    for object in running.objects {
        (object as? Reachability)?.stop()
        (object as? PathMonitor)?.stop()
    }
}

// MARK: watch --all-namespaces

/// What `watch --all-namespaces` runs: one set of watched targets (and path) per
/// namespace, started when the namespace appears and stopped when it disappears.
enum AllNamespacesWatch {
    /// What keeps a running watch alive (held here: the call that parks never returns).
    nonisolated(unsafe) private static var running: [AnyObject] = []

    /// Follows the namespaces until a signal ends the process (exit 0).
    static func run(targets: [String], json: Bool, path: Bool, option: AllNamespacesOption) throws -> Never {
        CLIProcess.signalsExitZero()
        let names: [String?] = targets.isEmpty ? (path ? [] : [nil]) : targets.map(Optional.some)
        // A bad TARGET is bad input (exit 2), not a namespace that can't be watched.
        for name in names { _ = try TargetArgument.make(name) }
        let width = max(names.map { ($0 ?? TargetArgument.internet).count }.max() ?? 0, path ? 4 : 0)
        let follower = NamespaceFollower<Running>(
            start: { try start($0, targets: names, json: json, path: path, width: width) }, stop: stopAll,
            announce: { announce($0, $1, json: json) })
        let monitor = NetworkNamespaceMonitor(directories: option.directories)
        monitor.eventHandler = { follower.handle($0) }
        try monitor.start()
        running = [follower, monitor]
        CLIProcess.parkForever()
    }

    private static func announce(
        _ namespace: NetworkNamespaceInfo, _ what: NamespaceFollower<Running>.Announcement, json: Bool
    ) {
        let time = Output.timestamp()
        let (event, from): (String, String?) =
            switch what {
            case .appeared: ("appeared", nil)
            case .renamed(let from): ("renamed", from)
            case .disappeared: ("disappeared", nil)
            }
        if json {
            Output.emit(
                "{\"time\": \(Output.quote(time)), \"namespace\": \(NamespaceLabel.json(namespace)), \"event\": \"\(event)\""
                    + (from.map { ", \"from\": \(Output.quote($0))" } ?? "") + "}")
        } else {
            var line = "\(time)  \(Output.pad(NamespaceLabel.name(namespace), to: 16))  \(event)"
            if let from { line += "  from \(from)" }
            if let holder = namespace.holders.first { line += "  pid \(holder.pid) \(holder.command)" }
            if let container = namespace.containerID { line += "  container \(container.prefix(12))" }
            Output.emit(line)
        }
    }

    /// Starts the namespace's targets (and path); throws, with what it started stopped.
    private static func start(
        _ namespace: NetworkNamespaceInfo, targets: [String?], json: Bool, path: Bool, width: Int
    ) throws -> Running {
        let prefix = Output.pad(NamespaceLabel.name(namespace), to: 16) + "  "
        let namespaceJSON = ", \"namespace\": \(NamespaceLabel.json(namespace))"
        var pathLine: (@Sendable (NetworkPath) -> Void)?
        if path {
            pathLine = { path in
                let time = Output.timestamp()
                Output.emit(
                    json
                        ? "{\"time\": \(Output.quote(time)), \"path\": \(Output.pathJSON(path))\(namespaceJSON)}"
                        : "\(time)  \(prefix)\(Output.pad("path", to: width))  \(path)")
            }
        }
        return try Running.start(in: namespace, targets: targets, path: pathLine) { name, state in
            if json {
                Output.emit(Output.json(target: name, state: state, extra: namespaceJSON))
            } else {
                Output.emit(Output.line(target: prefix + Output.pad(name, to: width), state: state, width: 0))
            }
        }
    }
}
