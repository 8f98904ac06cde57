import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// Whether integration tests must run: in CI they fail (never skip) when a
/// namespace cannot be made.
enum IntegrationGate {
    static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"
    static let namespacesWork: Bool = (try? TestNamespace()) != nil
    /// Run when namespaces work, and always in CI (where a failure to make one fails the test).
    static var enabled: Bool { isCI || namespacesWork }
    /// The suites that load the machine on purpose (hundreds of hostile connections,
    /// descriptor sweeps, a thousand stalled names) run only when
    /// `REACHABILITY_HEAVY_TESTS=1`, in a run of their own: beside the rest of the suite
    /// on 2 cores they starved tests with deadlines of seconds. `.ci/run` runs them so,
    /// against the release binary.
    static var heavyEnabled: Bool { enabled && ProcessInfo.processInfo.environment["REACHABILITY_HEAVY_TESTS"] == "1" }
}

struct CommandFailed: Error, CustomStringConvertible {
    var command: String
    var status: Int32
    var stderr: String
    var description: String { "`\(command)` exited \(status): \(stderr)" }
}

/// A private network namespace for one test. Either anonymous — a child process
/// (`unshare -n cat`) holds it open, and `cat` exits when the test process closes
/// its stdin (also when the test process dies) — or named (`ip netns add`), with
/// its own `/etc/netns/NAME/`. Two tests never share a namespace.
final class TestNamespace: @unchecked Sendable {
    // @unchecked: the fields are set once in init and only read afterwards.
    private let holder: Child?
    /// `/proc/PID/ns/net` of the holder, or `/run/netns/NAME`: what the library is pointed at.
    let path: String
    /// The name of a named namespace, else nil.
    let name: String?
    private static let counter = LockedValue(0)

    /// An anonymous namespace held open by a child process (`unshare -n`).
    init() throws {
        guard geteuid() == 0 else {
            throw CommandFailed(
                command: "unshare -n", status: -1, stderr: "integration tests need root (CAP_SYS_ADMIN for setns)")
        }
        name = nil
        // The shell runs only once unshare(2) has made the namespace; it says so, then
        // becomes `cat`, which holds the namespace until our end of its stdin closes.
        let holder = try Child(["unshare", "-n", "sh", "-c", "echo ready; exec cat"], captureOutput: true)
        self.holder = holder
        path = "/proc/\(holder.pid)/ns/net"
        guard holder.readLine().hasPrefix("ready") else {
            throw CommandFailed(command: "unshare -n", status: holder.wait(), stderr: "no new network namespace")
        }
        try ip("link set lo up")
    }

    /// A named namespace, `/run/netns/NAME`, with its own `/etc/netns/NAME/`
    /// (resolv.conf, hosts), as `ip netns add` makes. Removed on deinit.
    init(named prefix: String) throws {
        guard geteuid() == 0 else {
            throw CommandFailed(command: "ip netns add", status: -1, stderr: "integration tests need root")
        }
        let serial = Self.counter.withLock { value -> Int in
            value += 1
            return value
        }
        let name = "\(prefix)-\(getpid())-\(serial)"
        self.name = name
        holder = nil
        path = "/run/netns/\(name)"
        try Command.check(["ip", "netns", "add", name])
        try FileManager.default.createDirectory(atPath: "/etc/netns/\(name)", withIntermediateDirectories: true)
        try ip("link set lo up")
    }

    deinit {
        if let holder {
            holder.closeInput()
            holder.wait()
        }
        if name != nil { try? delete() }
    }

    /// Deletes a named namespace (`ip netns del`) and its `/etc/netns` folder;
    /// throws with `ip`'s words when the file is still there after a few tries.
    /// (Its unlink can fail with EBUSY while a mount namespace made meanwhile, by
    /// another test's `ip netns exec`, still holds the mount; that passes.)
    func delete() throws {
        guard let name else { return }
        try? FileManager.default.removeItem(atPath: "/etc/netns/\(name)")
        var said = ""
        for attempt in 0..<20 {
            if attempt > 0 { usleep(50_000) }
            let output = try Command.run(["ip", "netns", "del", name])
            said = output.stderr
            if access(path, F_OK) != 0 { return }
        }
        throw CommandFailed(command: "ip netns del \(name)", status: -1, stderr: "still at \(path): \(said)")
    }

    /// The environment that points the library at this namespace.
    var environment: NetworkEnvironment { NetworkEnvironment(networkNamespacePath: path) }

    /// Writes `/etc/netns/NAME/FILE` (a named namespace only).
    func writeEtc(_ file: String, _ contents: String) throws {
        guard let name else { throw CommandFailed(command: "writeEtc", status: -1, stderr: "not a named namespace") }
        try contents.write(toFile: "/etc/netns/\(name)/\(file)", atomically: true, encoding: .utf8)
    }

    /// Runs `ip ARGS` inside the namespace; throws with its stderr when it fails.
    @discardableResult
    func ip(_ arguments: String) throws -> String {
        try run(["ip"] + arguments.split(separator: " ").map(String.init))
    }

    /// Runs several `ip` commands in one `ip -batch` process.
    func batch(_ lines: [String]) throws {
        try run(["ip", "-batch", "-"], input: lines.joined(separator: "\n") + "\n")
    }

    /// Runs a command inside the namespace.
    @discardableResult
    func run(_ command: [String], input: String? = nil) throws -> String {
        try Command.check(["nsenter", "--net=\(path)", "--"] + command, input: input)
    }

    /// Runs a command with `ip netns exec NAME`, which also mounts
    /// `/etc/netns/NAME/*` over `/etc` (a named namespace only).
    @discardableResult
    func netnsExec(_ command: [String]) throws -> String {
        guard let name else { throw CommandFailed(command: "netnsExec", status: -1, stderr: "not a named namespace") }
        return try Command.check(["ip", "netns", "exec", name] + command)
    }

    /// Starts a long-running command inside the namespace. It is stopped when the
    /// returned `Child` is terminated or released.
    func spawn(_ command: [String], captureOutput: Bool = false) throws -> Child {
        try Child(["nsenter", "--net=\(path)", "--"] + command, captureOutput: captureOutput)
    }

    /// A veth pair, both ends in this namespace and up, with `address` (a prefix:
    /// `192.0.2.1/24`) on `name` when one is given. The peer end carries no address,
    /// so gateways on the subnet resolve on-link through `name`.
    func addVeth(_ name: String, peer: String, address: String? = nil) throws {
        try ip("link add \(name) type veth peer name \(peer)")
        try ip("link set \(peer) up")
        try ip("link set \(name) up")
        if let address { try ip("addr add \(address) dev \(name)") }
    }

    /// A veth pair whose peer end is in `far` (and up there), with `address` on
    /// `name`: `name`'s carrier follows the peer's state in `far`, and nothing of the
    /// peer shows here, as with a cable to another machine.
    func addVeth(_ name: String, peerIn far: TestNamespace, peer: String, address: String) throws {
        try ip("link add \(name) type veth peer name \(peer) netns \(far.path)")
        try far.ip("link set \(peer) up")
        try ip("link set \(name) up")
        try ip("addr add \(address) dev \(name)")
    }

    /// A namespace, and a second one for its links' peers
    /// (``addVeth(_:peerIn:peer:address:)``), with duplicate address detection off in
    /// the first: no address is tentative, and no DAD completion comes later.
    static func withFarPeersWithoutDAD() throws -> (ns: TestNamespace, far: TestNamespace) {
        let (ns, far) = (try TestNamespace(), try TestNamespace())
        try ns.run(["sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"])
        return (ns, far)
    }

    /// Turns IPv6 off in the namespace, so that only IPv4 events exist (link down
    /// then removes routes with no RTM_DELROUTE at all, and no IPv6 route event
    /// hides a missed link event).
    func disableIPv6() throws {
        try run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"])
    }

    /// The common IPv4 setup: `veth0` with 192.0.2.1/24 and a default route via 192.0.2.2.
    func ipv4WithDefaultRoute(_ name: String = "veth0", peer: String = "veth1") throws {
        try addVeth(name, peer: peer, address: "192.0.2.1/24")
        try ip("route add default via 192.0.2.2 dev \(name)")
    }

    /// The two-link setup: `veth0` with 192.0.2.1/24 and `veth2` with 198.51.100.1/24,
    /// both on-link and up, and no default route.
    func twoLinks() throws {
        try addVeth("veth0", peer: "veth1", address: "192.0.2.1/24")
        try addVeth("veth2", peer: "veth3", address: "198.51.100.1/24")
    }

    /// The common IPv6 setup: `name` with 2001:db8::1/64 and a default route via
    /// 2001:db8::2, its duplicate address detection slowed down (6 probes, about 6 s)
    /// so that the address's tentative phase is certain to be seen, even by a test
    /// process slowed by ThreadSanitizer or a loaded machine (3 s was not enough).
    func ipv6WithSlowDAD(_ name: String, peer: String) throws {
        try addVeth(name, peer: peer)
        try run(["sysctl", "-qw", "net.ipv6.conf.\(name).dad_transmits=6"])
        try ip("-6 addr add 2001:db8::1/64 dev \(name)")
        try ip("-6 route add default via 2001:db8::2 dev \(name)")
    }

    /// The start most notifier tests share: a namespace of their own with the common
    /// IPv4 setup (IPv6 turned off first when `ipv4Only`), and the Internet target in
    /// it, its deliveries logged and its notifier started. The caller waits for the
    /// first delivery as the test needs.
    static func watchingInternet(ipv4Only: Bool = false) throws -> (TestNamespace, Reachability, DeliveryLog) {
        let ns = try TestNamespace()
        if ipv4Only { try ns.disableIPv6() }
        try ns.ipv4WithDefaultRoute()
        let reachability = try Reachability(environment: ns.environment)
        return (ns, reachability, try DeliveryLog.started(reachability))
    }
}

/// Polls `condition` until it holds; fails after `timeout`. For conditions that
/// have no event to wait on (an internal counter), never a fixed wait.
func eventually(
    _ what: String, timeout: Duration = .seconds(30), _ condition: @Sendable () -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what, seen: []) }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// Runs `body`, cancelling it and failing with ``WaitTimedOut`` when it has run
/// `limit`: a bound on a loop that might never end, counted from when the test runs.
/// (`.timeLimit` counts from when it was queued, and under `.ownThreads` a test may
/// wait a minute for its turn.)
func runningAtMost(_ limit: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> Void)
    async throws
{
    try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask {
            try await body()
            return true
        }
        group.addTask {
            try await Task.sleep(for: limit)
            return false
        }
        let finished = try await group.next() ?? false
        group.cancelAll()
        if !finished { throw WaitTimedOut(what: what, seen: []) }
    }
}

/// What one delivery showed: the state read inside the callback.
struct Delivery: Sendable, Equatable, CustomStringConvertible {
    var status: NetworkStatus
    var flags: ReachabilityFlags
    var interface: String?
    var description: String { "\(status) \(flags) \(interface ?? "-")" }
}

struct WaitTimedOut: Error, CustomStringConvertible {
    var what: String
    var seen: [Delivery]
    var description: String { "timed out waiting for \(what); deliveries so far: \(seen)" }
}

/// Records every delivery of a `Reachability` (closures and NotificationCenter)
/// and lets a test wait, with a deadline, until the log satisfies a condition.
final class DeliveryLog: Sendable {
    private struct Waiter {
        var predicate: @Sendable ([Delivery]) -> Bool
        var continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var entries: [Delivery] = []
        var notifications = 0
        var waiters: [UUID: Waiter] = [:]
    }
    private let state = LockedValue(State())
    /// Keeps the instance alive as long as the log: Swift may release a local after
    /// its last use, and a released instance stops its notifier (by design).
    let reachability: Reachability
    /// @unchecked: NotificationCenter tokens are opaque and only passed back to removeObserver.
    private struct Token: @unchecked Sendable { var value: any NSObjectProtocol }
    private let observer = LockedValue<Token?>(nil)

    init(_ reachability: Reachability) {
        self.reachability = reachability
        reachability.whenReachable = { [weak self] in self?.record($0) }
        reachability.whenUnreachable = { [weak self] in self?.record($0) }
        let token = NotificationCenter.default.addObserver(
            forName: .reachabilityChanged, object: reachability, queue: nil
        ) { [weak self] _ in
            self?.state.withLock { $0.notifications += 1 }
        }
        observer.withLock { $0 = Token(value: token) }
    }

    deinit {
        if let token = observer.withLock({ $0 }) { NotificationCenter.default.removeObserver(token.value) }
    }

    /// A log of `reachability`'s deliveries, then its notifier started: the log sees
    /// the first delivery.
    static func started(_ reachability: Reachability) throws -> DeliveryLog {
        let log = DeliveryLog(reachability)
        try reachability.start()
        return log
    }

    var entries: [Delivery] { state.withLock { $0.entries } }
    var notificationCount: Int { state.withLock { $0.notifications } }

    private func record(_ reachability: Reachability) {
        let delivery = Delivery(
            status: reachability.currentReachabilityStatus, flags: reachability.flags,
            interface: reachability.interface?.name)
        let ready = state.withLock { state -> [Waiter] in
            state.entries.append(delivery)
            let entries = state.entries
            let done = state.waiters.filter { $0.value.predicate(entries) }
            for key in done.keys { state.waiters[key] = nil }
            return Array(done.values)
        }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Waits until `predicate` holds for the whole log; fails after `timeout` seconds.
    func wait(
        for what: String, timeout: Double = 30, until predicate: @escaping @Sendable ([Delivery]) -> Bool
    ) async throws {
        let id = UUID()
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let satisfied = state.withLock { state -> Bool in
                if predicate(state.entries) { return true }
                state.waiters[id] = Waiter(predicate: predicate, continuation: continuation)
                return false
            }
            if satisfied {
                continuation.resume()
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [state] in
                let expired = state.withLock { state -> (Waiter, [Delivery])? in
                    guard let waiter = state.waiters.removeValue(forKey: id) else { return nil }
                    return (waiter, state.entries)
                }
                if let (waiter, seen) = expired {
                    waiter.continuation.resume(throwing: WaitTimedOut(what: what, seen: seen))
                }
            }
        }
    }

    /// Waits until there are `count` deliveries in all.
    func wait(forCount count: Int, _ what: String) async throws {
        try await wait(for: what) { $0.count >= count }
    }

    /// Waits until the newest delivery has `status`.
    func wait(forLast status: NetworkStatus, _ what: String) async throws {
        try await wait(for: what) { $0.last?.status == status }
    }
}

/// Polls `condition` on the calling thread until it holds; throws after `timeout` seconds.
func eventuallyBlocking(_ what: String, timeout: Double = 30, _ condition: () -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        guard Date() < deadline else { throw WaitTimedOut(what: what, seen: []) }
        usleep(5000)
    }
}
