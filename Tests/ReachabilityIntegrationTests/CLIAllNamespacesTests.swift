import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// A world of one test's own for `--all-namespaces`: new network, mount and PID
/// namespaces (`unshare --net --mount --pid --fork --mount-proc`) with a tmpfs over
/// /run/netns, so that only the namespaces the test makes show: /proc there lists
/// the world's processes only, and `@host` is the world's network namespace, with
/// lo, `veth0` (192.0.2.1/24) and a default route via 192.0.2.2. Its first process
/// (`cat`, pid 1 inside) holds it until this object goes: then the kernel kills
/// everything in it, and its mounts and namespaces go.
final class IsolatedWorld: @unchecked Sendable {
    // @unchecked: set once in init.
    private let root: Child
    /// Its pid 1, as this process sees it.
    let pid: Int32

    /// lo up, and a veth pair with an address and a default route (the peer end up,
    /// so the route is usable): what makes a namespace reachable.
    static func routed(_ netns: String? = nil) -> String {
        let ip = netns.map { "ip -n \($0)" } ?? "ip"
        return """
            \(ip) link set lo up
            \(ip) link add veth0 type veth peer name veth1
            \(ip) link set veth1 up
            \(ip) link set veth0 up
            \(ip) addr add 192.0.2.1/24 dev veth0
            \(ip) route add default via 192.0.2.2 dev veth0

            """
    }

    init() throws {
        let script =
            "set -e\nmkdir -p /run/netns\nmount -t tmpfs none /run/netns\n" + Self.routed()
            + "echo ready\nexec cat\n"
        root = try Child(
            [
                "unshare", "--net", "--mount", "--pid", "--fork", "--mount-proc", "--propagation", "private", "sh",
                "-c",
                script,
            ], captureOutput: true)
        guard root.readLine().hasPrefix("ready") else {
            root.closeInput()
            let (_, errors) = root.readAll()
            throw CommandFailed(command: "unshare (an isolated world)", status: root.wait(), stderr: errors)
        }
        let children = try String(contentsOfFile: "/proc/\(root.pid)/task/\(root.pid)/children", encoding: .utf8)
        pid = try #require(children.split(separator: " ").first.flatMap { Int32($0) }, "unshare's child")
    }

    deinit {
        root.closeInput()
        root.wait()
    }

    /// What runs a command inside (its namespaces, its /proc).
    var enter: [String] { ["nsenter", "-t", "\(pid)", "-n", "-m", "-p", "--"] }

    /// Runs a shell script inside.
    func run(_ script: String) throws -> Command.Output {
        try Command.run(enter + ["sh", "-c", script])
    }

    /// Runs a shell script inside; throws with its stderr unless it exits 0.
    @discardableResult
    func check(_ script: String) throws -> String {
        let output = try run(script)
        guard output.status == 0 else {
            throw CommandFailed(command: script, status: output.status, stderr: output.stderr)
        }
        return output.stdout
    }

    /// Starts `unshare -n sh -c 'SETUP; exec sleep SECONDS'` in the background inside
    /// and returns its pid there once it is `sleep` in its own namespace.
    func startHolder(setup: String = "ip link set lo up", seconds: Int = 120) throws -> Int32 {
        let script = """
            unshare -n sh -c '\(setup)
            exec sleep \(seconds)' >/dev/null 2>&1 &
            P=$!
            while [ "$(cat /proc/$P/comm 2>/dev/null)" != sleep ]; do
                kill -0 $P 2>/dev/null || exit 1
                sleep 0.01
            done
            echo $P
            """
        let out = try check(script)
        return try #require(Int32(out.trimmingCharacters(in: .whitespacesAndNewlines)), "a pid: \(out)")
    }

    /// Starts `nsenter -t HOLDER -n sleep SECONDS` in the background inside: a second
    /// process in `holder`'s namespace; returns its pid there once it is in.
    func startSecondHolder(of holder: Int32, seconds: Int = 120) throws -> Int32 {
        let script = """
            nsenter -t \(holder) -n sleep \(seconds) >/dev/null 2>&1 &
            P=$!
            want=$(stat -L -c %i /proc/\(holder)/ns/net)
            while [ "$(cat /proc/$P/comm 2>/dev/null)" != sleep ] \\
                || [ "$(stat -L -c %i /proc/$P/ns/net 2>/dev/null)" != "$want" ]; do
                kill -0 $P 2>/dev/null || exit 1
                sleep 0.01
            done
            echo $P
            """
        let out = try check(script)
        return try #require(Int32(out.trimmingCharacters(in: .whitespacesAndNewlines)), "a pid: \(out)")
    }

    /// The inode of the network namespace of `path` inside (`net:[INODE]`).
    func namespaceLabel(_ path: String) throws -> String {
        "net:[" + (try check("stat -L -c %i \(path)")).trimmingCharacters(in: .whitespacesAndNewlines) + "]"
    }

    /// Runs the CLI inside (killed after 60 s: a hang fails, not sticks).
    func cli(_ arguments: [String], as user: [String] = []) throws -> Command.Output {
        try Command.run(enter + ["timeout", "-s", "KILL", "60"] + user + [CLI.path] + arguments)
    }

    /// Starts the CLI inside, its stderr into its stdout (a line on stderr starts
    /// with `reachability:`), readable line by line.
    func spawnCLI(_ arguments: [String], as user: [String] = []) throws -> Child {
        try Child(enter + ["sh", "-c", #"exec "$@" 2>&1"#, "sh"] + user + [CLI.path] + arguments, captureOutput: true)
    }

    /// `setpriv` to the user nobody, no groups.
    static let nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
}

/// The lines of a running `watch`, read as they come.
final class WatchLines: @unchecked Sendable {
    // @unchecked: used by one test.
    let child: Child
    private(set) var seen: [String] = []

    init(_ child: Child) { self.child = child }

    deinit { child.terminate() }

    /// The next line satisfying `predicate`, within `timeout` seconds (the lines
    /// before it are kept in ``seen``).
    func next(_ what: String, timeout: Double = 15, where predicate: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let line = child.nextLine(timeout: left) else {
                throw CommandFailed(
                    command: "watch", status: -1,
                    stderr: "no line for \(what) in \(timeout) s; lines so far:\n"
                        + seen.joined(separator: "\n"))
            }
            seen.append(line)
            if predicate(line) { return line }
        }
    }

    /// The next JSON object satisfying `predicate`.
    func nextObject(_ what: String, timeout: Double = 15, where predicate: @escaping ([String: Any]) -> Bool) throws
        -> [String: Any]
    {
        try jsonObject(
            try next(what, timeout: timeout) { line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    return false
                }
                return predicate(object)
            })
    }

    /// The JSON objects among the lines seen.
    var objects: [[String: Any]] {
        seen.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// The lines seen that came from stderr.
    var errors: [String] { seen.filter { $0.hasPrefix("reachability:") } }
}

/// The namespace object of a JSON line, and its name.
func namespaceObject(_ object: [String: Any]) -> [String: Any]? { object["namespace"] as? [String: Any] }
func namespaceName(_ object: [String: Any]) -> String? { namespaceObject(object)?["name"] as? String }

/// Whether a watch JSON line is the event `event` ("appeared", "disappeared") of namespace `name`.
func isEvent(_ object: [String: Any], _ event: String, _ name: String) -> Bool {
    object["event"] as? String == event && namespaceName(object) == name
}

/// Whether a watch JSON line says namespace `name` came into view: it appeared, or
/// was renamed to it (a scan found the process of `ip netns add` or `unshare -n mount`
/// in it before the mount named it).
func isArrival(_ object: [String: Any], _ name: String) -> Bool {
    ["appeared", "renamed"].contains(object["event"] as? String) && namespaceName(object) == name
}

/// Whether a watch JSON line is a target line of namespace `name`.
func isTargetLine(_ object: [String: Any], _ name: String) -> Bool {
    object["target"] is String && object["event"] == nil && namespaceName(object) == name
}

/// `status`, `watch` and `interfaces` with `--all-namespaces`, each run in an
/// isolated world of its own: the host's namespaces (and other tests') never show.
@Suite("reachability --all-namespaces", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLIAllNamespacesTests {
    /// The rows of a `status --all-namespaces` table, by NAMESPACE: the cells split
    /// at runs of spaces (the INTERFACE cell may hold spaces: it is the rest).
    static func rows(_ table: String) throws -> [String: [String]] {
        let lines = table.split(separator: "\n").map(String.init)
        let header = try #require(lines.first, "a table: \(table)")
        #expect(
            header.split(separator: " ", omittingEmptySubsequences: true)
                == ["NAMESPACE", "PROCESS", "CONTAINER", "TARGET", "STATUS", "FLAGS", "INTERFACE"], "\(header)")
        var rows: [String: [String]] = [:]
        for line in lines.dropFirst() {
            let cells = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard let name = cells.first else { continue }
            #expect(rows[name] == nil, "one row per namespace: \(table)")
            rows[name] = cells
        }
        return rows
    }

    @Test(
        "status --all-namespaces: a row per namespace (@host, named, held by a process); exit 0 only if all reachable")
    func status() throws {
        let world = try IsolatedWorld()
        try world.check(
            "ip netns add a\nip netns add b\nip -n b link set lo up\n" + IsolatedWorld.routed("a"))
        let holder = try world.startHolder(setup: IsolatedWorld.routed())
        let unnamed = try world.namespaceLabel("/proc/\(holder)/ns/net")

        let text = try world.cli(["status", "--all-namespaces"])
        #expect(text.status == 1, "b has no route: \(text)")
        let rows = try Self.rows(text.stdout)
        #expect(Set(rows.keys) == ["@host", "a", "b", unnamed], "\(text.stdout)")
        #expect(rows["@host"]?.prefix(5) == ["@host", "1/cat", "-", "@internet", "reachableViaWiFi"], "\(text.stdout)")
        #expect(rows["a"]?.prefix(5) == ["a", "-", "-", "@internet", "reachableViaWiFi"], "\(text.stdout)")
        #expect(rows["b"]?.prefix(5) == ["b", "-", "-", "@internet", "notReachable"], "\(text.stdout)")
        #expect(
            rows[unnamed]?.prefix(5) == [unnamed, "\(holder)/sleep", "-", "@internet", "reachableViaWiFi"],
            "\(text.stdout)")
        #expect(rows["a"]?.last?.hasPrefix("veth0") == true || rows["a"]?.contains { $0.hasPrefix("veth0") } == true)
        #expect(text.stderr.isEmpty, "\(text.stderr)")

        // A target: the same rows toward it.
        let toward = try world.cli(["status", "--all-namespaces", "192.0.2.9"])
        #expect(toward.status == 1)
        let towardRows = try Self.rows(toward.stdout)
        #expect(towardRows.values.allSatisfy { $0[3] == "192.0.2.9" }, "\(toward.stdout)")
        #expect(towardRows["b"]?[4] == "notReachable" && towardRows["a"]?[4] == "reachableViaWiFi")

        try world.check(IsolatedWorld.routed("b"))
        let all = try world.cli(["status", "--all-namespaces"])
        #expect(all.status == 0, "every row reachable: \(all)")
        #expect(try Self.rows(all.stdout).values.allSatisfy { $0[4] == "reachableViaWiFi" }, "\(all.stdout)")

        let json = try world.cli(["status", "--all-namespaces", "--json"])
        #expect(json.status == 0, "\(json)")
        let array = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]], "\(json.stdout)")
        #expect(array.count == 4)
        var byName: [String: [String: Any]] = [:]
        for object in array {
            let namespace = try #require(namespaceObject(object), "\(object)")
            let name = try #require(namespace["name"] as? String)
            byName[name] = object
            let id = try #require(namespace["id"] as? String)
            #expect(id.hasPrefix("net:[") && id.hasSuffix("]") && UInt64(id.dropFirst(5).dropLast()) != nil, "\(id)")
            #expect(namespace["holders"] is [Any], "\(namespace)")
            #expect(namespace["paths"] is [String] && namespace["current"] is Bool && namespace["holderCount"] is Int)
            #expect(object["target"] as? String == "@internet")
            #expect(object["reachable"] as? Bool == true)
        }
        #expect(Set(byName.keys) == ["@host", "a", "b", unnamed])
        let host = try #require(byName["@host"].flatMap(namespaceObject))
        #expect(host["current"] as? Bool == true)
        #expect((host["holders"] as? [[String: Any]])?.first?["pid"] as? Int == 1)
        let a = try #require(byName["a"].flatMap(namespaceObject))
        #expect(a["paths"] as? [String] == ["/run/netns/a"])
        #expect((a["holders"] as? [Any])?.isEmpty == true && a["holderCount"] as? Int == 0)
        #expect(a["current"] as? Bool == false && a["containerID"] is NSNull)
        let held = try #require(byName[unnamed].flatMap(namespaceObject))
        #expect(held["id"] as? String == unnamed)
        #expect(held["paths"] as? [String] == [])
        let holders = try #require(held["holders"] as? [[String: Any]])
        #expect(holders.count == 1 && held["holderCount"] as? Int == 1)
        #expect(holders.first?["pid"] as? Int == Int(holder) && holders.first?["command"] as? String == "sleep")
        #expect(holders.first?["containerID"] is NSNull)
    }

    /// The cgroup v2 hierarchy's mount point here (`/sys/fs/cgroup`, or
    /// `/sys/fs/cgroup/unified` on a hybrid host), if there is one.
    static var cgroup2: String? {
        let mounts = (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? ""
        for line in mounts.split(separator: "\n") {
            let fields: [Substring] = line.split(separator: " ")
            if fields.count > 2, fields[2] == "cgroup2" { return String(fields[1]) }
        }
        return nil
    }

    @Test("A container id: the CONTAINER column's first 12 digits, the full id in JSON and on watch's appeared line")
    func containerID() throws {
        // A process moved into a cgroup named as Docker names its containers'
        // (`docker-ID.scope`) carries the id in /proc/PID/cgroup. cgroup v2 is mounted
        // and writable on the machines this project runs on (here and in CI): required.
        let hierarchy = try #require(Self.cgroup2, "a cgroup v2 hierarchy")
        let id = String((0..<4).map { _ in String(format: "%016llx", UInt64.random(in: 0...UInt64.max)) }.joined())
        let cgroup = "\(hierarchy)/docker-\(id).scope"
        try FileManager.default.createDirectory(atPath: cgroup, withIntermediateDirectories: false)
        defer {
            // The world's processes are gone once it is (pid 1 reaps them all on its way).
            for _ in 0..<100 where rmdir(cgroup) != 0 { usleep(20_000) }
        }
        do {
            let world = try IsolatedWorld()
            let holder = try world.startHolder()
            let label = try world.namespaceLabel("/proc/\(holder)/ns/net")
            try world.check("echo \(holder) > \(cgroup)/cgroup.procs")
            #expect(try world.check("cat /proc/\(holder)/cgroup").contains("docker-\(id).scope"))

            let text = try world.cli(["status", "--all-namespaces"])
            let rows = try Self.rows(text.stdout)
            #expect(rows[label]?.prefix(3) == [label, "\(holder)/sleep", String(id.prefix(12))], "\(text.stdout)")
            #expect(rows["@host"]?[2] == "-", "\(text.stdout)")

            let json = try world.cli(["status", "--all-namespaces", "--json"])
            let array = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
            let namespace = try #require(array.compactMap(namespaceObject).first { $0["name"] as? String == label })
            #expect(namespace["containerID"] as? String == id)
            #expect((namespace["holders"] as? [[String: Any]])?.first?["containerID"] as? String == id)

            let watch = WatchLines(try world.spawnCLI(["watch", "--all-namespaces"]))
            let appeared = try watch.next("\(label) appeared") { $0.contains(" \(label) ") && $0.contains("appeared") }
            #expect(appeared.hasSuffix("appeared  pid \(holder) sleep  container \(id.prefix(12))"), "\(appeared)")
        }
    }

    @Test(
        "watch --all-namespaces --json: namespaces appear and disappear as they come and go, each with its target line")
    func watch() throws {
        let world = try IsolatedWorld()
        try world.check("ip netns add a\nip netns add b\nip -n b link set lo up\n" + IsolatedWorld.routed("a"))
        let watch = WatchLines(try world.spawnCLI(["watch", "--all-namespaces", "--json"]))
        var pending: Set<String> = [
            "appeared @host", "appeared a", "appeared b", "target @host", "target a", "target b",
        ]
        while !pending.isEmpty {
            let object = try watch.nextObject("the first lines (\(pending.sorted()))") { _ in true }
            let name = namespaceName(object) ?? "?"
            if isEvent(object, "appeared", name) {
                #expect(pending.remove("appeared \(name)") != nil, "one appearance each: \(watch.seen)")
            } else if isTargetLine(object, name) {
                #expect(object["target"] as? String == "@internet")
                #expect(
                    (object["reachable"] as? Bool) == (name != "b"), "\(name): \(object)")
                pending.remove("target \(name)")
            } else {
                Issue.record("an unexpected line: \(object)")
            }
        }
        #expect(watch.errors.isEmpty, "\(watch.errors)")
        for object in watch.objects where object["event"] != nil {
            #expect(object["time"] is String)
            #expect(namespaceObject(object)?["id"] is String)
        }

        // A named namespace made: at once (the mount table), with its target line.
        try world.check("ip netns add c\nip -n c link set lo up")
        let start = Date()
        let c = try watch.nextObject("c appeared", timeout: 10) { isArrival($0, "c") }
        #expect(Date().timeIntervalSince(start) < 3, "named: seen at once")
        #expect((namespaceObject(c)?["paths"] as? [String]) == ["/run/netns/c"])
        let cTarget = try watch.nextObject("c's target line", timeout: 10) { isTargetLine($0, "c") }
        #expect(cTarget["reachable"] as? Bool == false)
        try world.check("ip netns del c")
        _ = try watch.nextObject("c disappeared", timeout: 10) { isEvent($0, "disappeared", "c") }

        // One held by a process only: within the rescan (2 s).
        let holder = try world.startHolder(seconds: 30)
        let appearing = Date()
        let label = try world.namespaceLabel("/proc/\(holder)/ns/net")
        let held = try watch.nextObject("\(label) appeared", timeout: 10) { isEvent($0, "appeared", label) }
        // The rescan is every 2 s; the rest is margin for a loaded machine.
        #expect(Date().timeIntervalSince(appearing) < 4, "within the 2 s rescan")
        let holders = namespaceObject(held)?["holders"] as? [[String: Any]]
        #expect(holders?.first?["pid"] as? Int == Int(holder) && holders?.first?["command"] as? String == "sleep")
        _ = try watch.nextObject("\(label)'s target line", timeout: 10) { isTargetLine($0, label) }
        try world.check("kill \(holder)")
        let dying = Date()
        _ = try watch.nextObject("\(label) disappeared", timeout: 10) { isEvent($0, "disappeared", label) }
        #expect(Date().timeIntervalSince(dying) < 4, "within the 2 s rescan")

        // @host still watched: a change there is a line.
        try world.check("ip route del default")
        let down = try watch.nextObject("@host unreachable", timeout: 10) { isTargetLine($0, "@host") }
        #expect(down["reachable"] as? Bool == false)
        #expect(watch.errors.isEmpty, "\(watch.errors)")
        #expect(watch.child.isRunning)
    }

    @Test("interfaces --all-namespaces: each namespace's interfaces, in JSON and as a table")
    func interfaces() throws {
        let world = try IsolatedWorld()
        try world.check("ip netns add a\nip netns add b\n" + IsolatedWorld.routed("a"))
        let holder = try world.startHolder()
        let label = try world.namespaceLabel("/proc/\(holder)/ns/net")

        let json = try world.cli(["interfaces", "--all-namespaces", "--json"])
        #expect(json.status == 0, "\(json)")
        let array = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]], "\(json.stdout)")
        var names: [String: [String]] = [:]
        for object in array {
            let name = try #require(namespaceName(object), "\(object)")
            let interfaces = try #require(object["interfaces"] as? [[String: Any]], "\(object)")
            names[name] = interfaces.compactMap { $0["name"] as? String }.sorted()
        }
        #expect(array.count == 4)
        #expect(names["@host"] == ["lo", "veth0", "veth1"])
        #expect(names["a"] == ["lo", "veth0", "veth1"])
        #expect(names["b"] == ["lo"])
        #expect(names[label] == ["lo"])

        let text = try world.cli(["interfaces", "--all-namespaces"])
        #expect(text.status == 0, "\(text)")
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("NAMESPACE") == true, "\(text.stdout)")
        #expect(lines.filter { $0.hasPrefix("b ") }.count == 1, "\(text.stdout)")
        #expect(lines.filter { $0.hasPrefix("a ") }.count == 3, "\(text.stdout)")
        #expect(lines.last == "8 links listed in 4 network namespaces.", "\(text.stdout)")
    }

    @Test("Entries of /run/netns that are no namespace (a file, an empty file, a FIFO, a directory) are left out")
    func notNamespaces() throws {
        let world = try IsolatedWorld()
        try world.check(
            "ip netns add a\n" + IsolatedWorld.routed("a")
                + "echo junk > /run/netns/regular\ntouch /run/netns/empty\nmkfifo /run/netns/fifo\nmkdir /run/netns/dir"
        )
        let status = try world.cli(["status", "--all-namespaces", "--json"])
        #expect(status.status == 0, "\(status)")
        let array = try #require(
            try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [[String: Any]], "\(status.stdout)")
        #expect(Set(array.compactMap(namespaceName)) == ["@host", "a"], "\(status.stdout)")

        let interfaces = try world.cli(["interfaces", "--all-namespaces", "--json"])
        #expect(interfaces.status == 0, "\(interfaces)")

        let watch = WatchLines(try world.spawnCLI(["watch", "--all-namespaces", "--json"]))
        var targets: Set<String> = []
        while targets != ["@host", "a"] {
            let object = try watch.nextObject("the target lines of @host and a (\(targets.sorted()))") {
                $0["target"] != nil
            }
            targets.insert(namespaceName(object) ?? "?")
        }
        try world.check("ip netns add d")
        _ = try watch.nextObject("d appeared", timeout: 10) { isArrival($0, "d") }
        let appeared = Set(
            watch.objects.filter { $0["event"] as? String == "appeared" || $0["event"] as? String == "renamed" }
                .compactMap(namespaceName).filter { !$0.hasPrefix("net:[") })
        #expect(appeared == ["@host", "a", "d"], "\(watch.seen)")
        #expect(watch.errors.isEmpty, "\(watch.errors)")
    }

    @Test("As nobody: named namespaces are seen but can't be entered: an error each, @host still looked at and watched")
    func cannotEnter() throws {
        let world = try IsolatedWorld()
        try world.check("ip netns add a\nip netns add b\n" + IsolatedWorld.routed("a"))

        let status = try world.cli(["status", "--all-namespaces"], as: IsolatedWorld.nobody)
        #expect(status.status == 1, "\(status)")
        let rows = try Self.rows(status.stdout)
        #expect(Set(rows.keys) == ["@host", "a", "b"], "root's processes are not seen: \(status.stdout)")
        #expect(rows["@host"]?[4] == "reachableViaWiFi", "\(status.stdout)")
        #expect(rows["a"]?[4] == "error" && rows["b"]?[4] == "error", "\(status.stdout)")
        let errors = status.stderr.split(separator: "\n")
        #expect(errors.filter { $0.hasPrefix("reachability: network namespace a") }.count == 1, "\(status.stderr)")
        #expect(errors.filter { $0.hasPrefix("reachability: network namespace b") }.count == 1, "\(status.stderr)")

        let json = try world.cli(["status", "--all-namespaces", "--json"], as: IsolatedWorld.nobody)
        #expect(json.status == 1)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let a = try #require(array.first { namespaceName($0) == "a" })
        #expect(a["status"] as? String == "error" && a["error"] is String, "\(a)")

        let watch = WatchLines(try world.spawnCLI(["watch", "--all-namespaces", "--json"], as: IsolatedWorld.nobody))
        var pending: Set<String> = ["error a", "error b", "target @host"]
        while !pending.isEmpty {
            let line = try watch.next("an error for a and b, @host's line (\(pending.sorted()))") { _ in true }
            if line.hasPrefix("reachability: network namespace a ") {
                #expect(line.contains("is not watched"), "\(line)")
                pending.remove("error a")
            } else if line.hasPrefix("reachability: network namespace b ") {
                pending.remove("error b")
            } else if let object = try? jsonObject(line), isTargetLine(object, "@host") {
                #expect(object["reachable"] as? Bool == true)
                pending.remove("target @host")
            }
        }
        // A namespace made after: seen (a scan after the first), reported once too.
        try world.check("ip netns add z")
        _ = try watch.next("z not watched", timeout: 10) { $0.hasPrefix("reachability: network namespace z ") }
        try world.check("ip route del default")
        let down = try watch.nextObject("@host's change", timeout: 10) { isTargetLine($0, "@host") }
        #expect(down["reachable"] as? Bool == false)
        #expect(watch.child.isRunning, "still watching")
        for name in ["a", "b", "z"] {
            #expect(
                watch.errors.filter { $0.hasPrefix("reachability: network namespace \(name) ") }.count == 1,
                "reported once: \(watch.errors)")
        }
    }

    @Test("--namespace-dir: its entries are named namespaces too; a namespace with names and holders is one row")
    func namespaceDirectories() throws {
        let world = try IsolatedWorld()
        // x: named only in /run/dnetns; a: named in both, and held by a process.
        let holder = try #require(
            Int32(
                try world.check(
                    """
                    mkdir -p /run/dnetns
                    touch /run/dnetns/x
                    unshare -n mount --bind /proc/self/ns/net /run/dnetns/x
                    ip netns add a
                    touch /run/dnetns/a2 /run/dnetns/0first
                    mount --bind /run/netns/a /run/dnetns/a2
                    mount --bind /run/netns/a /run/dnetns/0first
                    ip netns exec a sleep 120 >/dev/null 2>&1 &
                    P=$!
                    while [ "$(cat /proc/$P/comm 2>/dev/null)" != sleep ]; do sleep 0.01; done
                    echo $P
                    """
                ).trimmingCharacters(in: .whitespacesAndNewlines)))

        let plain = try world.cli(["status", "--all-namespaces"])
        let plainRows = try Self.rows(plain.stdout)
        #expect(Set(plainRows.keys) == ["@host", "a"], "x is named in no watched directory: \(plain.stdout)")
        #expect(plainRows["a"]?[1] == "\(holder)/sleep", "named and held: one row, its holder shown: \(plain.stdout)")

        let both = try world.cli(["status", "--all-namespaces", "--namespace-dir", "/run/dnetns/"])
        let rows = try Self.rows(both.stdout)
        // Named only in a --namespace-dir: its path names it (the same NAME may be in two).
        #expect(Set(rows.keys) == ["@host", "a", "/run/dnetns/x"], "\(both.stdout)")
        #expect(rows["/run/dnetns/x"]?[1] == "-" && rows["/run/dnetns/x"]?[4] == "notReachable", "\(both.stdout)")

        let json = try world.cli([
            "status", "--all-namespaces", "--namespace-dir", "/run/dnetns", "--namespace-dir", "/run/none", "--json",
        ])
        let array = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(array.count == 3, "\(json.stdout)")
        let a = try #require(array.compactMap(namespaceObject).first { $0["name"] as? String == "a" }, "\(json.stdout)")
        #expect(
            a["paths"] as? [String] == ["/run/netns/a", "/run/dnetns/0first", "/run/dnetns/a2"],
            "/run/netns first (it names the row), then each --namespace-dir's: \(a)")
        #expect((a["holders"] as? [[String: Any]])?.first?["pid"] as? Int == Int(holder))
        let x = try #require(array.compactMap(namespaceObject).first { $0["name"] as? String == "/run/dnetns/x" })
        #expect(x["paths"] as? [String] == ["/run/dnetns/x"])

        let interfaces = try world.cli(["interfaces", "--all-namespaces", "--namespace-dir", "/run/dnetns", "--json"])
        let listed = try #require(
            try JSONSerialization.jsonObject(with: Data(interfaces.stdout.utf8)) as? [[String: Any]])
        #expect(Set(listed.compactMap(namespaceName)) == ["@host", "a", "/run/dnetns/x"], "\(interfaces.stdout)")

        // watch: a namespace named in the extra directory later appears at once.
        let watch = WatchLines(
            try world.spawnCLI(["watch", "--all-namespaces", "--namespace-dir", "/run/dnetns", "--json"]))
        _ = try watch.nextObject("x's target line") { isTargetLine($0, "/run/dnetns/x") }
        try world.check("touch /run/dnetns/y && unshare -n mount --bind /proc/self/ns/net /run/dnetns/y")
        let y = try watch.nextObject("y appeared", timeout: 10) { isArrival($0, "/run/dnetns/y") }
        #expect(namespaceObject(y)?["paths"] as? [String] == ["/run/dnetns/y"])
    }

    @Test("watch: the first holder of a namespace exits while another holds it: watched on through the other")
    func holderChanges() throws {
        let world = try IsolatedWorld()
        let first = try world.startHolder()
        let second = try world.startSecondHolder(of: first)
        let label = try world.namespaceLabel("/proc/\(first)/ns/net")
        let watch = WatchLines(try world.spawnCLI(["watch", "--all-namespaces", "--json"]))
        let appeared = try watch.nextObject("\(label) appeared") { isEvent($0, "appeared", label) }
        #expect(namespaceObject(appeared)?["holderCount"] as? Int == 2, "\(appeared)")
        let before = try watch.nextObject("\(label)'s target line") { isTargetLine($0, label) }
        #expect(before["reachable"] as? Bool == false)

        // The first holder goes (a zombie: the world's pid 1 reaps nothing): the same
        // namespace, held by the second, watched again through it (its state again).
        try world.check("kill \(first)")
        let again = try watch.nextObject("\(label) watched through \(second)", timeout: 10) { isTargetLine($0, label) }
        #expect(again["reachable"] as? Bool == false)
        #expect(
            (namespaceObject(again)?["holders"] as? [[String: Any]])?.map { $0["pid"] as? Int } == [Int(second)],
            "\(again)")
        // A change there is still seen.
        try world.check("nsenter -t \(second) -n sh -c '\(IsolatedWorld.routed())'")
        let up = try watch.nextObject("\(label) reachable", timeout: 10) { isTargetLine($0, label) }
        #expect(up["reachable"] as? Bool == true, "\(up)")
        #expect(!watch.objects.contains { isEvent($0, "disappeared", label) }, "\(watch.seen)")
        #expect(watch.errors.isEmpty, "\(watch.errors)")
    }

    @Test(
        "watch: a process's namespace named (ip netns attach), then unnamed (ip netns del): a renamed line each, watched on"
    )
    func renamed() throws {
        let world = try IsolatedWorld()
        let holder = try world.startHolder()
        let label = try world.namespaceLabel("/proc/\(holder)/ns/net")
        let watch = WatchLines(try world.spawnCLI(["watch", "--all-namespaces", "--json"]))
        _ = try watch.nextObject("\(label) appeared") { isEvent($0, "appeared", label) }
        _ = try watch.nextObject("\(label)'s target line") { isTargetLine($0, label) }

        try world.check("ip netns attach blue \(holder)")
        let named = try watch.nextObject("renamed blue", timeout: 10) { isEvent($0, "renamed", "blue") }
        #expect(named["from"] as? String == label, "\(named)")
        _ = try watch.nextObject("blue's target line", timeout: 10) { isTargetLine($0, "blue") }
        // The path changed, not the namespace: a change there is seen under its new name.
        try world.check(IsolatedWorld.routed("blue"))
        let up = try watch.nextObject("blue reachable", timeout: 10) { isTargetLine($0, "blue") }
        #expect(up["reachable"] as? Bool == true, "\(up)")

        try world.check("ip netns del blue")
        let unnamed = try watch.nextObject("renamed \(label)", timeout: 10) { isEvent($0, "renamed", label) }
        #expect(unnamed["from"] as? String == "blue", "\(unnamed)")
        let again = try watch.nextObject("\(label)'s target line", timeout: 10) { isTargetLine($0, label) }
        #expect(again["reachable"] as? Bool == true, "\(again)")
        let lifecycle = watch.objects.filter { ["appeared", "disappeared"].contains($0["event"] as? String) }
        #expect(
            lifecycle.map { "\($0["event"] as? String ?? "?") \(namespaceName($0) ?? "?")" }.sorted()
                == ["appeared @host", "appeared \(label)"], "\(watch.seen)")
        #expect(watch.errors.isEmpty, "\(watch.errors)")
    }

    @Test("watch --all-namespaces with targets and --path: text lines led by the namespace, JSON path objects with it")
    func watchTargetsAndPath() throws {
        let world = try IsolatedWorld()
        try world.check("ip netns add a\nip netns add b\n" + IsolatedWorld.routed("a"))
        let text = WatchLines(try world.spawnCLI(["watch", "--all-namespaces", "--path", "192.0.2.9", "@internet"]))
        var pending: Set<String> = []
        for name in ["@host", "a", "b"] {
            pending.formUnion(["\(name) appeared", "\(name) 192.0.2.9", "\(name) @internet", "\(name) path"])
        }
        while !pending.isEmpty {
            let line = try text.next("text lines \(pending.sorted())") { _ in true }
            let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            #expect(words.count >= 3 && words[0].hasSuffix("Z"), "TIME  NAMESPACE  …: \(line)")
            guard words.count >= 3 else { continue }
            pending.remove("\(words[1]) \(words[2])")
            if words[2] == "path" {
                #expect(line.contains(words[1] == "b" ? "unsatisfied" : "satisfied via veth0"), "\(line)")
            } else if words[2] == "192.0.2.9" {
                #expect(words[3] == (words[1] == "b" ? "notReachable" : "reachableViaWiFi"), "\(line)")
            }
        }

        let json = WatchLines(try world.spawnCLI(["watch", "--all-namespaces", "--path", "--json"]))
        var paths: [String: [String: Any]] = [:]
        while paths.count < 3 {
            let object = try json.nextObject("path lines (\(paths.keys.sorted()))") { $0["path"] != nil }
            #expect(object["target"] == nil, "--path alone: no target lines")
            let name = try #require(namespaceName(object), "\(object)")
            paths[name] = try #require(object["path"] as? [String: Any])
        }
        #expect(Set(paths.keys) == ["@host", "a", "b"])
        #expect(paths["a"]?["status"] as? String == "satisfied" && paths["b"]?["status"] as? String == "unsatisfied")
        #expect(!json.objects.contains { $0["target"] != nil }, "\(json.seen)")
    }

    @Test("Names and commands with terminal controls: escaped on stdout and on stderr")
    func terminalControls() throws {
        let world = try IsolatedWorld()
        // A namespace named `ESC[31mred BEL`, and a process of that name holding another.
        let evil = "\u{1B}[31mred\u{07}"
        let folder = try NamespaceDirectory("rtest-evil")
        try world.check(
            """
            E=$(printf '\\033[31mred\\007')
            touch "/run/netns/$E" && unshare -n mount --bind /proc/self/ns/net "/run/netns/$E"
            cp /bin/sleep "\(folder.path)/$E"
            unshare -n "\(folder.path)/$E" 120 >/dev/null 2>&1 &
            P=$!
            while [ "$(cat /proc/$P/comm 2>/dev/null)" != "$E" ]; do sleep 0.01; done
            """)
        func controls(_ text: String) -> Bool { text.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{07}" } }

        let status = try world.cli(["status", "--all-namespaces"])
        #expect(status.stdout.contains("\\x1b[31mred\\x07"), "\(status.stdout)")
        #expect(!controls(status.stdout) && !controls(status.stderr), "\(status.stdout.debugDescription)")
        let json = try world.cli(["status", "--all-namespaces", "--json"])
        let array = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(array.compactMap(namespaceName).contains(evil), "the name itself in JSON")
        #expect(
            array.compactMap(namespaceObject).contains {
                ($0["holders"] as? [[String: Any]])?.first?["command"] as? String == evil
            }, "the command itself in JSON")

        let watch = WatchLines(try world.spawnCLI(["watch", "--all-namespaces"]))
        _ = try watch.next("the command's appeared line") { $0.contains("appeared  pid") && $0.contains("red") }
        _ = try watch.next("the name's target line") { $0.contains("red") && $0.contains("@internet") }
        #expect(!watch.seen.contains(where: controls), "\(watch.seen.map(\.debugDescription))")

        // As nobody the named one can't be entered: its name in a message on stderr.
        let refused = try world.cli(["status", "--all-namespaces"], as: IsolatedWorld.nobody)
        #expect(refused.stderr.contains("red"), "\(refused.stderr.debugDescription)")
        #expect(!controls(refused.stderr), "no terminal control on stderr: \(refused.stderr.debugDescription)")
        let listed = try world.cli(["interfaces", "--all-namespaces"], as: IsolatedWorld.nobody)
        #expect(listed.status == 1 && listed.stderr.contains("red"), "\(listed)")
        #expect(!controls(listed.stderr), "no terminal control on stderr: \(listed.stderr.debugDescription)")
        let watchRefused = WatchLines(try world.spawnCLI(["watch", "--all-namespaces"], as: IsolatedWorld.nobody))
        let said = try watchRefused.next("not watched") { $0.hasPrefix("reachability:") && $0.contains("red") }
        #expect(!controls(said), "no terminal control on stderr: \(said.debugDescription)")
    }

    @Test("status --all-namespaces within a descriptor limit the CLI accepts: a real row for every namespace")
    func statusDescriptorLimit() throws {
        let world = try IsolatedWorld()
        try world.check("for i in $(seq 1 60); do ip netns add n$i || exit 1; done")
        // 72 passes the CLI's own start-up check (64 free descriptors), so every
        // namespace should get its state, not an error of the CLI's own making (it
        // looks at 16 at once).
        let output = try world.cli(["status", "--all-namespaces"], as: ["prlimit", "--nofile=72", "--"])
        let rows = try Self.rows(output.stdout)
        #expect(rows.count == 61, "\(output.stdout)")
        let errors = rows.values.filter { $0[4] == "error" }.map { $0[0] }.sorted()
        #expect(errors.isEmpty, "error rows for \(errors); stderr: \(output.stderr.prefix(600))")
        #expect(rows.filter { $0.key != "@host" }.allSatisfy { $0.value[4] == "notReachable" }, "\(output.stdout)")
        #expect(output.status == 1, "no route in n1…n60")
    }

    @Test("Out of descriptors (60 namespaces, 100 descriptors): some can't be watched, said so; the others are")
    func descriptorLimit() throws {
        let world = try IsolatedWorld()
        try world.check("for i in $(seq 1 60); do ip netns add n$i || exit 1; done")
        let watch = WatchLines(
            try world.spawnCLI(["watch", "--all-namespaces", "--json"], as: ["prlimit", "--nofile=100", "--"]))
        // Until each of the 61 has appeared and then either a target line or a word on stderr.
        var appeared: Set<String> = []
        var watched: Set<String> = []
        var refused: [String: String] = [:]
        while appeared.count < 61 || appeared.count > watched.count + refused.count {
            let line = try watch.next(
                "61 namespaces, each watched or refused (\(appeared.count), \(watched.count), \(refused.count))",
                timeout: 60
            ) { _ in true }
            if line.hasPrefix("reachability: network namespace ") {
                let name = String(line.dropFirst("reachability: network namespace ".count).prefix { $0 != " " })
                #expect(refused[name] == nil, "once: \(line)")
                refused[name] = line
            } else if let object = try? jsonObject(line), let name = namespaceName(object) {
                if object["event"] as? String == "appeared" { appeared.insert(name) }
                if isTargetLine(object, name) { watched.insert(name) }
            } else {
                Issue.record("an unexpected line: \(line)")
            }
        }
        #expect(!refused.isEmpty, "100 descriptors can't watch 61 namespaces")
        #expect(watched.count >= 2, "\(watched.sorted())")
        #expect(watched.isDisjoint(with: refused.keys))
        for (name, line) in refused {
            #expect(line.contains("is not watched") && line.contains("Too many open files"), "\(name): \(line)")
        }
        let name = try #require(watched.sorted().first { $0 != "@host" }, "a named namespace watched")
        try world.check(IsolatedWorld.routed(name))
        let change = try watch.nextObject("\(name)'s change", timeout: 15) { isTargetLine($0, name) }
        #expect(change["reachable"] as? Bool == true)
        #expect(watch.child.isRunning)
    }
}
