// Stress runs that must be measured in a process of their own (RSS, descriptors and
// threads of a test process move with whatever other tests run beside it). The
// integration tests (HardeningIntegrationTests) start it inside a namespace they made
// and check the JSON line it prints.
//
//   ReachabilityStress storm NSPATH   100,000 route add/delete events while targets are watched
//   ReachabilityStress churn NSPATH   1,000 veth create/delete cycles while a PathMonitor runs
//
// NSPATH has veth0 (192.0.2.1/24, default via 192.0.2.2) and veth2 (no address),
// both up with their peers, and IPv6 off.
import Dispatch
import Foundation
import Reachability

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("ReachabilityStress: \(message)\n".utf8))
    exit(1)
}

/// `ip -force -batch -` inside the namespace, fed through a pipe: one process for
/// all the changes, so the kernel's events come as fast as it makes them.
func ipBatch(_ namespace: String, _ lines: [String]) {
    let process = Process()
    let input = Pipe()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/nsenter")
    process.arguments = ["--net=\(namespace)", "--", "ip", "-force", "-batch", "-"]
    process.standardInput = input
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { fail("cannot run ip: \(error)") }
    input.fileHandleForWriting.write(Data(lines.joined(separator: "\n").utf8 + [0x0A]))
    try? input.fileHandleForWriting.close()
    process.waitUntilExit()
}

/// Descriptors, threads and memory of this process. Memory is read after
/// malloc_trim(0), so that RSS shows what is live rather than the allocator's
/// high-water mark (a storm that the reader falls behind on parses a full receive
/// buffer at once; that is a peak, not growth).
struct Footprint {
    var descriptors: Int
    var threads: Int
    /// Threads the library made (named reachability-…); libdispatch's workers come and go.
    var libraryThreads: Int
    var residentKiB: Int

    static var now: Footprint {
        _ = mallocTrim?(0)
        func list(_ path: String) -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] }
        let tasks = list("/proc/self/task")
        let library = tasks.filter { task in
            let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            return name.hasPrefix("reachability")
        }
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Footprint(
            descriptors: list("/proc/self/fd").count, threads: tasks.count, libraryThreads: library.count,
            residentKiB: Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1)
    }
}

/// glibc's malloc_trim (not in the Glibc module's headers): gives free heap pages back.
let mallocTrim: (@convention(c) (Int) -> Int32)? = dlsym(dlopen(nil, RTLD_NOW), "malloc_trim").map {
    unsafeBitCast($0, to: (@convention(c) (Int) -> Int32).self)
}

/// Polls `condition` every 20 ms; fails the run after `seconds`.
func waitFor(_ what: String, seconds: Double = 120, _ condition: () -> Bool) {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { fail("timed out waiting for \(what)") }
        usleep(20_000)
    }
}

/// The sanitizer this binary was built with, if any: its shadow memory and
/// quarantines make RSS figures meaningless, so the tests don't compare them then.
let sanitizer: String = {
    let handle = dlopen(nil, RTLD_NOW)
    for (name, symbol) in [("thread", "__tsan_init"), ("address", "__asan_init")] where dlsym(handle, symbol) != nil {
        return name
    }
    return "none"
}()

func emit(_ object: [String: Any]) {
    var object = object
    object["sanitizer"] = sanitizer
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    FileHandle.standardOutput.write(data + [0x0A])
}

/// `count` /32 routes out of veth2: 10.0.0.0, 10.0.0.1, … (10.0.0.5 among them).
func hostRoutes(_ verb: String, _ count: Int) -> [String] {
    (0..<count).map { "route \(verb) 10.\($0 >> 16).\(($0 >> 8) & 255).\($0 & 255)/32 dev veth2" }
}

func storm(_ namespace: String) {
    let environment = NetworkEnvironment(networkNamespacePath: namespace)
    let targets: [(name: String, make: () throws -> Reachability)] = [
        ("internet", { try Reachability(environment: environment) }),
        ("10.0.0.5", { try Reachability(address: "10.0.0.5", environment: environment) }),
        ("198.51.100.7", { try Reachability(address: "198.51.100.7", environment: environment) }),
        ("192.0.2.77", { try Reachability(address: "192.0.2.77", environment: environment) }),
    ]
    let deliveries = LockedCounter()
    var watched: [Reachability] = []
    do {
        for target in targets {
            let reachability = try target.make()
            reachability.whenReachable = { _ in deliveries.increment() }
            reachability.whenUnreachable = { _ in deliveries.increment() }
            try reachability.startNotifier()
            watched.append(reachability)
        }
    } catch { fail("cannot watch: \(error)") }

    /// Every watched target's notifier state equals a fresh evaluation, and `expected`.
    func settled(_ expected: [ReachabilityFlags], interface: String? = nil) -> Bool {
        zip(zip(targets, watched), expected).allSatisfy { pair, flags in
            let ((_, make), reachability) = pair
            guard let fresh = try? make() else { return false }
            return reachability.flags == flags && fresh.flags == flags
                && reachability.interface?.name == fresh.interface?.name
        }
    }
    let viaGateway: ReachabilityFlags = [.reachable]
    let direct: ReachabilityFlags = [.reachable, .isDirect]

    // Warm-up: 20,000 events, then 198.51.100.0/24 onto veth2 as a marker.
    ipBatch(namespace, hostRoutes("add", 10_000) + hostRoutes("del", 10_000) + ["route add 198.51.100.0/24 dev veth2"])
    waitFor("the warm-up to settle") { settled([viaGateway, viaGateway, direct, direct]) }
    let before = Footprint.now
    let eventsBefore = BenchmarkHooks.monitorCounters(for: environment)?.events ?? 0

    // The storm: 50,000 adds (10.0.0.5 moves onto veth2), 50,000 deletes (it moves
    // back), then the marker and the default route go.
    let started = Date()
    ipBatch(namespace, hostRoutes("add", 50_000) + hostRoutes("del", 50_000))
    ipBatch(namespace, ["route del 198.51.100.0/24 dev veth2", "route del default"])
    waitFor("the final state after the storm") { settled([[], [], [], direct]) }
    let seconds = Date().timeIntervalSince(started)
    let after = Footprint.now
    let counters = BenchmarkHooks.monitorCounters(for: environment)
    emit([
        "mode": "storm", "seconds": seconds, "finalFlagsRight": true, "deliveries": deliveries.value,
        "eventsReceived": (counters?.events ?? 0) - eventsBefore, "overruns": counters?.overruns ?? -1,
        "resyncs": counters?.resyncs ?? -1, "before": before.json, "after": after.json,
    ])
    for reachability in watched { reachability.stopNotifier() }
}

func churn(_ namespace: String, cycles: Int) {
    let environment = NetworkEnvironment(networkNamespacePath: namespace)
    let monitor: PathMonitor
    do {
        monitor = try PathMonitor(environment: environment)
        try monitor.start(queue: DispatchQueue(label: "stress.path"))
    } catch { fail("cannot start the path monitor: \(error)") }
    func available() -> Set<String> { Set(monitor.currentPath.availableInterfaces.map(\.name)) }
    waitFor("veth0 available") { available() == ["veth0"] }
    let baseline = BenchmarkHooks.tableSizes(for: environment)

    let round = 100
    var before = Footprint.now
    var seen = 0
    for start in stride(from: 0, to: cycles, by: round) {
        let names = (start..<min(start + round, cycles)).map { "c\($0)" }
        var create: [String] = []
        for (offset, name) in names.enumerated() {
            let i = start + offset
            create += [
                "link add \(name) type veth peer name p\(i)",
                "addr add 10.60.\(i / 128).\((i % 128) * 2)/31 dev \(name)",
                "link set p\(i) up", "link set \(name) up",
            ]
        }
        ipBatch(namespace, create)
        waitFor("round \(start / round) up") { available().isSuperset(of: names) }
        seen += names.count
        ipBatch(namespace, names.map { "link del \($0)" })
        waitFor("round \(start / round) gone") { available() == ["veth0"] }
        if start == 0 { before = Footprint.now }  // After one round: allocator pools warm.
    }
    // The published table too: back to the namespace's own interfaces.
    waitFor("the table back to its size") {
        BenchmarkHooks.tableSizes(for: environment).map { $0 == baseline! } ?? false
    }
    let after = Footprint.now
    emit([
        "mode": "churn", "cycles": cycles, "seenAvailable": seen, "availableAtEnd": available().sorted(),
        "tableInterfaces": baseline?.interfaces ?? -1, "before": before.json, "after": after.json,
    ])
    monitor.cancel()
}

final class LockedCounter: @unchecked Sendable {
    // @unchecked: `count` is only touched under `lock`.
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

extension Footprint {
    var json: [String: Int] {
        [
            "descriptors": descriptors, "threads": threads, "libraryThreads": libraryThreads,
            "residentKiB": residentKiB,
        ]
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: ReachabilityStress storm|churn NSPATH [CYCLES]") }
switch arguments[1] {
case "storm": storm(arguments[2])
case "churn": churn(arguments[2], cycles: arguments.count > 3 ? Int(arguments[3]) ?? 1000 : 1000)
default: fail("unknown mode \(arguments[1])")
}
