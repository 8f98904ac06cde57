// The in-process half of Benchmarks/scale.py: watches a namespace the script made,
// changes it through one long-lived `ip -batch -` (so no process start is timed),
// and prints one JSON line of figures.
//
//   ReachabilityScale targets NSPATH COUNT [PEERPATH]     COUNT address targets, one link change
//   ReachabilityScale latency NSPATH CHANGES [PEERPATH]   kernel event → callback, link down/up
//   ReachabilityScale routes NSPATH COUNT [PEERPATH]      COUNT address targets, a route covering one
//                                                         added and deleted 20 times: → its callback
//   ReachabilityScale wifi NSPATH LINKS PEERPATH [STALL]   one target beside LINKS links a fake sysfs
//                                                         calls Wi-Fi, each nl80211 request held STALL
//                                                         ms (0: none); a route covering the target
//                                                         added and deleted 20 times: → its callback
//
// NSPATH has veth0 (10.0.0.1/8, default via 10.0.0.2) whose peer veth1 is up, in
// PEERPATH when given (then NSPATH sees only veth0's carrier change), else in NSPATH.
import Dispatch
import Foundation
import Reachability
@_spi(Testing) import ReachabilityCore

// The fault plan of `wifi`'s stall (a module the Reachability package builds for its
// products, not one of them).
#if ENABLE_FAULT_INJECTION
    @_spi(Testing) import ReachabilitySystem
#endif

func now() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("ReachabilityScale: \(message)\n".utf8))
    exit(2)
}

/// `ip -batch -` inside the namespace: each line written is run at once.
final class IPBatch {
    let process = Process()
    let input = Pipe()

    init(namespace: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/nsenter")
        process.arguments = ["--net=\(namespace)", "--", "ip", "-force", "-batch", "-"]
        process.standardInput = input
        try process.run()
    }

    func run(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    func close() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

/// Counts callbacks and remembers when the last one came.
final class Tally: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`.
    private let lock = NSLock()
    private var count = 0
    private var last: UInt64 = 0
    private var waiters: [(Int, DispatchSemaphore)] = []

    /// Callbacks so far.
    var total: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }

    func hit() {
        lock.lock()
        count += 1
        last = now()
        let ready = waiters.filter { count >= $0.0 }
        waiters.removeAll { count >= $0.0 }
        lock.unlock()
        for (_, semaphore) in ready { semaphore.signal() }
    }

    /// Waits until `target` callbacks in all; returns the time of the last one, or nil at the timeout.
    func wait(for target: Int, seconds: Double) -> UInt64? {
        let semaphore = DispatchSemaphore(value: 0)
        lock.lock()
        if count >= target {
            lock.unlock()
            return last
        }
        waiters.append((target, semaphore))
        lock.unlock()
        guard semaphore.wait(timeout: .now() + seconds) == .success else { return nil }
        lock.lock()
        defer { lock.unlock() }
        return last
    }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

let arguments = CommandLine.arguments
guard (4...6).contains(arguments.count), let count = Int(arguments[3]), count > 0 else {
    fail("usage: ReachabilityScale targets|latency|routes|wifi NSPATH COUNT [PEERPATH] [STALL]")
}
let namespace = arguments[2]
let environment = NetworkEnvironment(networkNamespacePath: namespace)
let queue = DispatchQueue(label: "scale.callbacks")
/// Where veth1, whose state is veth0's carrier, is changed.
let batch = try IPBatch(namespace: arguments.count >= 5 ? arguments[4] : namespace)

/// COUNT distinct addresses on veth0's directly connected 10.0.0.0/8 (10.1.0.0 first),
/// each started with its callbacks counted by `tally`; returns once each has had its first.
func startTargets(_ count: Int, tally: Tally) throws -> [Reachability] {
    var instances: [Reachability] = []
    instances.reserveCapacity(count)
    for i in 0..<count {
        let address = "10.\(1 + (i >> 16) & 0xFF).\((i >> 8) & 0xFF).\(i & 0xFF)"
        let reachability = try Reachability(address: address, environment: environment, notificationQueue: queue)
        reachability.whenReachable = { _ in tally.hit() }
        reachability.whenUnreachable = { _ in tally.hit() }
        try reachability.start()
        instances.append(reachability)
    }
    guard tally.wait(for: count, seconds: 120) != nil else { fail("initial deliveries missing") }
    return instances
}

switch arguments[1] {
case "targets":
    let tally = Tally()
    let started = now()
    let instances = try startTargets(count, tally: tally)
    let ready = now()
    let change = now()
    batch.run("link set veth1 down")  // Carrier loss on veth0: every target becomes unreachable.
    guard let last = tally.wait(for: 2 * count, seconds: 60) else { fail("not every target was notified") }
    let unreachable = instances.filter { $0.currentReachabilityStatus == .notReachable }.count
    print(
        "{\"figure\": \"targets\", \"count\": \(count), \"startMillis\": \(Double(ready - started) / 1e6), "
            + "\"changeToLastCallbackMillis\": \(Double(last - change) / 1e6), \"unreachableAfter\": \(unreachable)}")
    batch.run("link set veth1 up")
    withExtendedLifetime(instances) {}

case "routes":
    // COUNT targets as above; a blackhole route covering the first alone comes and goes:
    // each change flips that one target, and no other.
    let tally = Tally()
    let instances = try startTargets(count, tally: tally)
    let routes = try IPBatch(namespace: namespace)
    var samples: [Double] = []
    for change in 0..<40 {
        let before = now()
        routes.run(change % 2 == 0 ? "route add blackhole 10.1.0.0/32" : "route del blackhole 10.1.0.0/32")
        guard let seen = tally.wait(for: count + change + 1, seconds: 60) else {
            fail("change \(change) not delivered")
        }
        samples.append(Double(seen - before) / 1e6)
        usleep(20_000)
    }
    routes.close()
    usleep(200_000)  // Room for a callback that should not come (another target's).
    let sorted = samples.sorted()
    print(
        "{\"figure\": \"routes\", \"count\": \(count), \"p50Millis\": \(percentile(sorted, 0.5)), "
            + "\"p90Millis\": \(percentile(sorted, 0.9)), \"callbacks\": \(tally.total)}")
    withExtendedLifetime(instances) {}

case "wifi":
    // LINKS links more, up and classified Wi-Fi by a fake sysfs (no radio: nl80211 has
    // no such device, or no family at all), made before the monitor starts; every
    // nl80211 request held STALL ms (a busy driver). Each pass reads them (after its
    // lines, on the monitor's Wi-Fi queue; before them, on the reader, until issue 43).
    let stall = arguments.count == 6 ? Int(arguments[5]) ?? 0 : 0
    let sysfs = NSTemporaryDirectory() + "scale-sysfs-\(getpid())"
    var lines: [String] = []
    for index in 0..<count {
        let directory = "\(sysfs)/class/net/wl\(index)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "INTERFACE=wl\(index)\nDEVTYPE=wlan\n".write(
            toFile: "\(directory)/uevent", atomically: true, encoding: .utf8)
        lines += ["link add wl\(index) type veth peer name wp\(index)", "link set wl\(index) up"]
    }
    let made = Process()
    made.executableURL = URL(fileURLWithPath: "/usr/bin/nsenter")
    made.arguments = ["--net=\(namespace)", "--", "ip", "-force", "-batch", "-"]
    let input = Pipe()
    made.standardInput = input
    try made.run()
    input.fileHandleForWriting.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    try input.fileHandleForWriting.close()
    made.waitUntilExit()
    // The fault engine is in a release build only when asked for (BENCHMARKS.md, E).
    #if ENABLE_FAULT_INJECTION
        var wifi = NetworkEnvironment(networkNamespacePath: namespace, sysfsRoot: sysfs)
        if stall > 0 {
            let faults = SystemCallFaults()
            faults.delay(.sendto, by: .milliseconds(stall), matching: .netlink(.nl80211))
            wifi.systemCalls = SystemCalls(faults: faults)
        }
    #else
        let wifi = NetworkEnvironment(networkNamespacePath: namespace, sysfsRoot: sysfs)
        if stall > 0 { fail("a stall needs the fault engine: build with -Xswiftc -DENABLE_FAULT_INJECTION") }
    #endif
    let tally = Tally()
    let target = try Reachability(address: "10.1.0.0", environment: wifi, notificationQueue: queue)
    target.whenReachable = { _ in tally.hit() }
    target.whenUnreachable = { _ in tally.hit() }
    try target.start()
    guard tally.wait(for: 1, seconds: 60) != nil else { fail("no initial delivery") }
    let routes = try IPBatch(namespace: namespace)
    var samples: [Double] = []
    for change in 0..<40 {
        let before = now()
        routes.run(change % 2 == 0 ? "route add blackhole 10.1.0.0/32" : "route del blackhole 10.1.0.0/32")
        guard let seen = tally.wait(for: change + 2, seconds: 120) else { fail("change \(change) not delivered") }
        samples.append(Double(seen - before) / 1e6)
        usleep(20_000)
    }
    routes.close()
    let sorted = samples.sorted()
    print(
        "{\"figure\": \"wifi\", \"links\": \(count), \"stallMillis\": \(stall), "
            + "\"p50Millis\": \(percentile(sorted, 0.5)), \"p90Millis\": \(percentile(sorted, 0.9))}")
    withExtendedLifetime(target) {}
    try? FileManager.default.removeItem(atPath: sysfs)

case "latency":
    // The Internet target; veth0's peer goes down and up: each change flips it.
    let tally = Tally()
    let reachability = try Reachability(environment: environment, notificationQueue: queue)
    reachability.whenReachable = { _ in tally.hit() }
    reachability.whenUnreachable = { _ in tally.hit() }
    try reachability.start()
    guard tally.wait(for: 1, seconds: 10) != nil else { fail("no initial delivery") }
    var samples: [Double] = []
    for change in 0..<count {
        let down = change % 2 == 0
        let before = now()
        batch.run(down ? "link set veth1 down" : "link set veth1 up")
        guard let seen = tally.wait(for: change + 2, seconds: 10) else { fail("change \(change) not delivered") }
        samples.append(Double(seen - before) / 1000)
        usleep(20_000)
    }
    let sorted = samples.sorted()
    print(
        "{\"figure\": \"latency\", \"changes\": \(count), \"p50Micros\": \(percentile(sorted, 0.5)), "
            + "\"p90Micros\": \(percentile(sorted, 0.9)), \"p99Micros\": \(percentile(sorted, 0.99)), "
            + "\"maxMicros\": \(sorted.last ?? 0)}")
    withExtendedLifetime(reachability) {}

default:
    fail("unknown figure \(arguments[1])")
}
batch.close()
