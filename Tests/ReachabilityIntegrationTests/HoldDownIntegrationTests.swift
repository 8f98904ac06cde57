import Connectivity
import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// Every value a delivery carried, with when it arrived; a test waits for a count of
/// them, with a deadline only as a failure timeout.
final class TimedLog<Value: Sendable>: Sendable {
    struct Entry: Sendable {
        var value: Value
        var at: ContinuousClock.Instant
    }
    private struct Waiter {
        var count: Int
        var continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var entries: [Entry] = []
        var waiters: [UUID: Waiter] = [:]
    }
    private let state = LockedValue(State())

    var entries: [Entry] { state.withLock { $0.entries } }

    func record(_ value: Value) {
        let now = ContinuousClock.now
        let ready = state.withLock { state -> [Waiter] in
            state.entries.append(Entry(value: value, at: now))
            let count = state.entries.count
            let done = state.waiters.filter { $0.value.count <= count }
            for key in done.keys { state.waiters[key] = nil }
            return Array(done.values)
        }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Waits until `count` values have arrived and returns them all; fails after `timeout`.
    func wait(forCount count: Int, _ what: String, timeout: Duration = .seconds(30)) async throws -> [Entry] {
        let id = UUID()
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let satisfied = state.withLock { state -> Bool in
                if state.entries.count >= count { return true }
                state.waiters[id] = Waiter(count: count, continuation: continuation)
                return false
            }
            if satisfied {
                continuation.resume()
                return
            }
            let (seconds, attoseconds) = timeout.components
            let milliseconds = Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { [state] in
                let expired = state.withLock { state -> (Waiter, Int)? in
                    guard let waiter = state.waiters.removeValue(forKey: id) else { return nil }
                    return (waiter, state.entries.count)
                }
                if let (waiter, seen) = expired {
                    waiter.continuation.resume(
                        throwing: CommandFailed(command: "wait for \(what)", status: -1, stderr: "\(seen) so far"))
                }
            }
        }
        return entries
    }
}

/// The hold-down against the kernel (`HoldDown.md`): veth0's carrier follows the
/// admin state of its peer veth1, flipped with `ip link`. Only what a user sees is
/// checked here — what is delivered, and no earlier than the hold-down after the
/// change; the rules and their exact timing are HoldDownStateMachineTests'. A
/// second instance without a hold-down (the witness) proves that the monitor saw
/// the flapping. One test at a time: each flaps a link for seconds, a burst of events and
/// evaluations that the timed tests beside should not have to share.
@Suite("Hold-down against the kernel", .enabled(if: IntegrationGate.enabled), .ownThreads, .serialized)
struct HoldDownIntegrationTests {
    static let holdDown = Duration.seconds(2)
    /// The failure timeout of a delivery due the hold-down after a change.
    static let deliveryTimeout = holdDown + .seconds(30)

    /// An IPv4-only namespace with veth0 (192.0.2.1/24, default route via .2), its
    /// carrier following veth1.
    static func namespace() async throws -> TestNamespace {
        try await offPool {
            let ns = try TestNamespace()
            try ns.disableIPv6()
            try ns.ipv4WithDefaultRoute()
            return ns
        }
    }

    /// Sets veth1's admin state, and so veth0's carrier.
    static func setPeer(_ ns: TestNamespace, _ state: String) async throws {
        try await offPool { try ns.ip("link set veth1 \(state)") }
    }

    /// Flaps veth0's carrier: veth1's admin state set by `states` in turn, one every
    /// 100 ms (the pacing of the stimulus, not a wait for an effect), on a thread of
    /// its own. One `ip -batch` takes them all, a line at a time: a process per change
    /// would take the tests' spawn lock (``Child``) 30 times and load the machine the
    /// tests beside share.
    static func flap(_ ns: TestNamespace, _ states: [String]) async throws {
        try await offPool {
            let ip = try ns.spawn(["ip", "-batch", "-"])
            let begin = ContinuousClock.now
            for (index, state) in states.enumerated() {
                let wait = begin + .milliseconds(100 * index) - ContinuousClock.now
                if wait > .zero {
                    let (seconds, attoseconds) = wait.components
                    Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
                }
                ip.write("link set veth1 \(state)\n")
            }
            ip.closeInput()
            let status = ip.wait()
            guard status == 0 else {
                throw CommandFailed(command: "ip -batch - (flapping veth1)", status: status, stderr: "")
            }
        }
    }

    /// 30 changes at 10 Hz, starting with down and ending up.
    static let flapping = (0..<30).map { $0.isMultiple(of: 2) ? "down" : "up" }

    /// The Internet watched with the hold-down, its observer's states timed, and its
    /// closures logged; started, with the first delivery in.
    static func heldReachability(in ns: TestNamespace) async throws -> (
        Reachability, TimedLog<NetworkStatus>, DeliveryLog, ReachabilityObservation
    ) {
        let reachability = try Reachability(environment: ns.environment)
        reachability.holdDown = holdDown
        let timed = TimedLog<NetworkStatus>()
        let observation = reachability.addObserver { timed.record($0.status) }
        let log = try DeliveryLog.started(reachability)
        #expect(try await timed.wait(forCount: 1, "the start").map(\.value) == [.reachableViaWiFi])
        try await log.wait(forCount: 1, "the start's callback")
        return (reachability, timed, log, observation)
    }

    @Test("A link flapping at 10 Hz for 3 s with a 2 s hold-down: nothing delivered but the start")
    func flappingLink() async throws {
        let ns = try await Self.namespace()
        let (held, timed, log, observation) = try await Self.heldReachability(in: ns)
        defer { observation.remove() }
        let witness = try DeliveryLog.started(try Reachability(environment: ns.environment))
        try await witness.wait(forCount: 1, "the witness's start")

        try await Self.flap(ns, Self.flapping)  // Ends up, as delivered.
        try await witness.wait(for: "the flapping, seen without a hold-down") { entries in
            // A loaded reader may read several flaps in one pass: some of them, not all.
            entries.contains { $0.status == .notReachable } && entries.last?.status == .reachableViaWiFi
        }
        // Then a change that lasts: the next delivery must be it, the hold-down after it.
        let change = ContinuousClock.now
        try await Self.setPeer(ns, "down")
        let entries = try await timed.wait(forCount: 2, "the lasting change", timeout: Self.deliveryTimeout)
        #expect(entries.map(\.value) == [.reachableViaWiFi, .notReachable], "nothing of the flapping delivered")
        #expect(entries[1].at - change >= Self.holdDown, "delivered \(entries[1].at - change) after the change")
        try await log.wait(forCount: 2, "the callback of the lasting change")
        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable])
        try await eventually("a notification per delivery") { log.notificationCount == 2 }
        #expect(held.currentReachabilityStatus == .notReachable)
        held.stop()
    }

    @Test("A link down that stays down: one delivery, no earlier than the hold-down; its return likewise")
    func lastingChanges() async throws {
        let ns = try await Self.namespace()
        let (held, timed, log, observation) = try await Self.heldReachability(in: ns)
        defer { observation.remove() }
        let witness = try DeliveryLog.started(try Reachability(environment: ns.environment))
        try await witness.wait(forCount: 1, "the witness's start")

        for (count, (command, status)) in [("down", NetworkStatus.notReachable), ("up", .reachableViaWiFi)]
            .enumerated()
        {
            let change = ContinuousClock.now
            try await Self.setPeer(ns, command)
            try await witness.wait(forLast: status, "the witness sees veth1 \(command)")
            // Held: the getters report the delivered state until the change is delivered.
            let read = held.currentReachabilityStatus
            if ContinuousClock.now - change < Self.holdDown {
                #expect(read != status, "the getter shows the held change before it is delivered")
            }
            let entries = try await timed.wait(
                forCount: count + 2, "veth1 \(command) delivered", timeout: Self.deliveryTimeout)
            #expect(entries.count == count + 2)
            #expect(entries.last?.value == status)
            if let delivered = entries.last?.at {
                #expect(delivered - change >= Self.holdDown, "delivered \(delivered - change) after the change")
            }
            #expect(held.currentReachabilityStatus == status)
        }
        try await log.wait(forCount: 3, "the callbacks")
        #expect(log.entries.map(\.status) == [.reachableViaWiFi, .notReachable, .reachableViaWiFi])
        #expect(timed.entries.count == 3, "exactly one delivery per lasting change")
        held.stop()
    }

    @Test("PathMonitor: flapping at 10 Hz delivers nothing; a lasting loss once, no earlier than the hold-down")
    func pathMonitorFlapping() async throws {
        let ns = try await Self.namespace()
        let monitor = try PathMonitor(
            environment: ns.environment, notificationQueue: DispatchQueue(label: "test.holddown.path"))
        monitor.holdDown = Self.holdDown
        let timed = TimedLog<NetworkPath.Status>()
        monitor.pathUpdateHandler = { timed.record($0.status) }
        try monitor.start()
        defer { monitor.stop() }
        #expect(try await timed.wait(forCount: 1, "the first path").map(\.value) == [.satisfied])
        let witness = try PathMonitor(environment: ns.environment)
        let witnessLog = try await PathLog.started(witness, queue: "test.holddown.witness")
        defer { witness.stop() }

        try await Self.flap(ns, Self.flapping)
        try await witnessLog.wait(for: "the flapping, seen without a hold-down") { paths in
            paths.filter { $0.status != .satisfied }.count >= 5 && paths.last?.status == .satisfied
        }
        let change = ContinuousClock.now
        try await Self.setPeer(ns, "down")
        let entries = try await timed.wait(forCount: 2, "the lasting loss", timeout: Self.deliveryTimeout)
        #expect(entries.map(\.value) == [.satisfied, .unsatisfied], "nothing of the flapping delivered")
        #expect(entries[1].at - change >= Self.holdDown, "delivered \(entries[1].at - change) after the change")
        #expect(monitor.currentPath.status == .unsatisfied)
    }

    @Test("Connectivity: a blip shorter than its hold-down is not heard of; a lasting loss, no earlier than it")
    func connectivityHoldDown() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .respond(status: 204)])
        let connectivity = try Connectivity(
            validating: ConnectivityIntegrationTests.configuration(
                ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))]))
        connectivity.holdDown = Self.holdDown
        let log = ConnectivityLog(connectivity)
        try connectivity.start()
        try await log.wait("online at start") { $0.last?.verdict == .online }
        let witness = try PathMonitor(environment: ns.environment)
        let witnessLog = try await PathLog.started(witness, queue: "test.holddown.connectivity.witness")
        defer { witness.stop() }

        // A blip of about 200 ms (down again at 100 ms changes nothing), seen by the witness.
        try await Self.flap(ns, ["down", "down", "up"])
        try await witnessLog.wait(for: "the blip, seen without a hold-down") { paths in
            paths.contains { $0.status != .satisfied } && paths.last?.status == .satisfied
        }
        let change = Date()
        try await Self.setPeer(ns, "down")
        try await log.wait("notConnected", timeout: Self.deliveryTimeout) { $0.last?.verdict == .notConnected }
        #expect(log.verdicts == ["online", "notConnected"], "the blip neither cancelled nor reported anything")
        let lost = try #require(log.results.last?.date)
        #expect(lost.timeIntervalSince(change) >= 2, "notConnected \(lost.timeIntervalSince(change)) s after the loss")
        #expect(server.count("/generate_204") == 1, "no check for the blip's return")
        connectivity.stop()
    }
}
