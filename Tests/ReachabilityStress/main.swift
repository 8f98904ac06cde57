// Stress runs that must be measured in a process of their own (RSS, descriptors and
// threads of a test process move with whatever other tests run beside it). The
// integration tests (HardeningIntegrationTests) start it inside a namespace they made
// and check the JSON line it prints.
//
//   ReachabilityStress storm NSPATH   100,000 route add/delete events while targets are watched
//   ReachabilityStress churn NSPATH   1,000 veth create/delete cycles while a PathMonitor runs
//   ReachabilityStress connectivity-emfile NSPATH namespace|default FREE
//                                     Connectivity with FREE descriptors left (0: none): a one-off
//                                     check and start() must throw a clear error, not trap
//                                     in NIO nor answer notConnected. "namespace" watches NSPATH
//                                     (the client gets an event loop of its own); "default" the
//                                     process's own namespace (run it inside NSPATH) on NIO's
//                                     shared event loops. Prints one JSON line per step; exits 0
//                                     when both threw systemCall with EMFILE.
//   ReachabilityStress connectivity-cycles NSPATH URL [CYCLES]
//                                     Connectivity (probing URL, a 204 endpoint in NSPATH) started
//                                     and stopped CYCLES times (1,000), every tenth run to online;
//                                     prints the footprint before and after.
//   ReachabilityStress endless-checks NSPATH URL [COUNT]
//                                     COUNT one-off checks (20) of URL, an endless body in NSPATH,
//                                     each read to its cap; prints the verdicts and the footprint
//                                     before and after.
//
// NSPATH has veth0 (192.0.2.1/24, default via 192.0.2.2) and veth2 (no address),
// both up with their peers, and IPv6 off.
import Connectivity
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
        // A leak is a descriptor that stays: the fewest of a few looks 20 ms apart, so
        // one open for a moment (libdispatch's pool monitor reads /proc/TID/stat; a
        // finished `ip` child's pipe closes on Foundation's queue) is not counted.
        var descriptors = Int.max
        for look in 0..<5 {
            if look > 0 { usleep(20_000) }
            descriptors = min(descriptors, list("/proc/self/fd").count)
        }
        return Footprint(
            descriptors: descriptors, threads: tasks.count, libraryThreads: library.count,
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
            try reachability.start()
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
    let eventsBefore = MonitorRegistry.counters(for: environment)?.events ?? 0

    // The storm: 50,000 adds (10.0.0.5 moves onto veth2), 50,000 deletes (it moves
    // back), then the marker and the default route go.
    let started = Date()
    ipBatch(namespace, hostRoutes("add", 50_000) + hostRoutes("del", 50_000))
    ipBatch(namespace, ["route del 198.51.100.0/24 dev veth2", "route del default"])
    waitFor("the final state after the storm") { settled([[], [], [], direct]) }
    let seconds = Date().timeIntervalSince(started)
    let after = Footprint.now
    let counters = MonitorRegistry.counters(for: environment)
    emit([
        "mode": "storm", "seconds": seconds, "finalFlagsRight": true, "deliveries": deliveries.value,
        "eventsReceived": (counters?.events ?? 0) - eventsBefore, "overruns": counters?.overruns ?? -1,
        "resyncs": counters?.resyncs ?? -1, "before": before.json, "after": after.json,
    ])
    for reachability in watched { reachability.stop() }
}

func churn(_ namespace: String, cycles: Int) {
    let environment = NetworkEnvironment(networkNamespacePath: namespace)
    let monitor: PathMonitor
    do {
        monitor = try PathMonitor(environment: environment)
        monitor.notificationQueue = DispatchQueue(label: "stress.path")
        try monitor.start()
    } catch { fail("cannot start the path monitor: \(error)") }
    func available() -> Set<String> { Set(monitor.currentPath.availableInterfaces.map(\.name)) }
    waitFor("veth0 available") { available() == ["veth0"] }
    let baseline = MonitorRegistry.tableSizes(for: environment)

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
        MonitorRegistry.tableSizes(for: environment).map { $0 == baseline! } ?? false
    }
    let after = Footprint.now
    emit([
        "mode": "churn", "cycles": cycles, "seenAvailable": seen, "availableAtEnd": available().sorted(),
        "tableInterfaces": baseline?.interfaces ?? -1, "before": before.json, "after": after.json,
    ])
    monitor.stop()
}

/// A list appended to from callbacks.
final class LockedList<Element>: @unchecked Sendable {
    // @unchecked: `items` is only touched under `lock`.
    private let lock = NSLock()
    private var items: [Element] = []
    func append(_ item: Element) { lock.withLock { items.append(item) } }
    var values: [Element] { lock.withLock { items } }
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

/// A value handed from a task to the waiting thread.
final class Handoff<T>: @unchecked Sendable {
    // @unchecked: written once before the semaphore is signalled, read after the wait.
    var value: T?
}

/// Runs `body` on Swift concurrency's pool and waits for it (the top level stays synchronous).
func blocking<T>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = Handoff<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        box.value = await body()
        done.signal()
    }
    done.wait()
    guard let value = box.value else { fail("the task gave nothing") }
    return value
}

/// Fills the descriptor table: lowers the soft RLIMIT_NOFILE to a little above the
/// highest descriptor in use (so that this takes a few dozen descriptors, not a
/// million), then opens /dev/null until EMFILE. Returns what it opened.
func exhaustDescriptors() -> [Int32] {
    let inUse = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    let wanted = rlim_t((inUse.max() ?? 64) + 64)
    if limit.rlim_cur > wanted {
        limit.rlim_cur = wanted
        guard setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            fail("setrlimit failed: errno \(errno)")
        }
    }
    var opened: [Int32] = []
    while true {
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            guard errno == EMFILE else { fail("open stopped with errno \(errno), not EMFILE") }
            return opened
        }
        opened.append(fd)
    }
}

/// What a Connectivity call gave: the error it threw (code, errno, description), or its verdict.
func outcome(_ body: () async throws(ConnectivityError) -> String) async -> [String: Any] {
    do throws(ConnectivityError) {
        return ["verdict": try await body()]
    } catch {
        return [
            "thrown": true, "code": error.code.description, "errno": error.errno.map { Int($0) } ?? -1,
            "description": error.description,
        ]
    }
}

/// Prints one JSON line at once (a crash after it still leaves it on stdout).
func emitLine(_ object: [String: Any]) {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    FileHandle.standardOutput.write(data + [0x0A])
}

func connectivityEMFILE(_ namespace: String, ownNamespace: Bool, free: Int) {
    let environment = ownNamespace ? NetworkEnvironment.default : NetworkEnvironment(networkNamespacePath: namespace)
    // Nothing listens on port 9: a check that runs ends noInternet(connectionRefused) at once.
    var configuration = ConnectivityConfiguration(
        endpoints: [
            ConnectivityEndpoint(url: URL(string: "http://127.0.0.1:9/generate_204")!, expectation: .status(204))
        ],
        environment: environment)
    configuration.probeTimeout = .seconds(2)
    configuration.checkDeadline = .seconds(4)
    let connectivity: Connectivity
    do { connectivity = try Connectivity(validating: configuration) } catch { fail("configuration: \(error)") }
    // A running monitor for the namespace: the checks join it, so the path is known
    // without new netlink sockets, and what runs out is the HTTP client's descriptors.
    let keeper: PathMonitor
    do {
        keeper = try PathMonitor(environment: environment)
        keeper.notificationQueue = DispatchQueue(label: "stress.path")
        try keeper.start()
    } catch { fail("cannot start the path monitor: \(error)") }
    waitFor("a usable path") { keeper.currentPath.status == .satisfied }
    // libdispatch makes its epoll instance on first use of its worker threads and
    // traps when it can't: out of the package's hands, so it is made beforehand
    // (Swift concurrency's pool and its timers run on those threads).
    blocking { try? await Task.sleep(for: .milliseconds(20)) }

    var filler = exhaustDescriptors()
    for _ in 0..<min(free, filler.count) { close(filler.removeLast()) }
    let check = blocking {
        await outcome { () async throws(ConnectivityError) in try await connectivity.checkConnectivity().verdict.name }
    }
    emitLine(["step": "check", "filled": filler.count, "free": free, "result": check])
    let notifier = blocking {
        await outcome { () async throws(ConnectivityError) in
            try connectivity.start()
            return "started"
        }
    }
    connectivity.stop()
    emitLine(["step": "startNotifier", "result": notifier])
    for fd in filler { close(fd) }
    let recovered = blocking {
        await outcome { () async throws(ConnectivityError) in try await connectivity.checkConnectivity().verdict.name }
    }
    emitLine(["step": "recovered", "result": recovered])
    keeper.stop()
    let clean = [check, notifier].allSatisfy {
        $0["code"] as? String == "systemCall" && $0["errno"] as? Int == Int(EMFILE)
    }
    exit(clean ? 0 : 1)
}

/// Start/stop cycles of one Connectivity instance: what a start makes (a path
/// monitor client, an HTTP client with its event loop, timers) must be gone after
/// its stop. Measured here rather than in the test process, whose RSS and
/// descriptors move with the tests running beside it.
func connectivityCycles(_ namespace: String, url: URL, cycles: Int) {
    var configuration = ConnectivityConfiguration(
        endpoints: [ConnectivityEndpoint(url: url, expectation: .status(204))],
        environment: NetworkEnvironment(networkNamespacePath: namespace))
    configuration.probeTimeout = .seconds(5)
    configuration.checkDeadline = .seconds(10)
    let connectivity: Connectivity
    do { connectivity = try Connectivity(validating: configuration) } catch { fail("configuration: \(error)") }
    var online = 0
    func run(_ count: Int) {
        for index in 0..<count {
            do { try connectivity.start() } catch { fail("start: \(error)") }
            if index % 10 == 0 {
                // Now and then a check runs to the end, so that probes happen too.
                waitFor("online", seconds: 30) { connectivity.isConnected }
                online += 1
            }
            connectivity.stop()
        }
    }
    run(100)  // Warm-up: caches, pools, lazily made threads.
    usleep(500_000)
    let before = Footprint.now
    run(cycles)
    // What the stops hand to other threads (event loops shutting down) ends soon after.
    let deadline = Date().addingTimeInterval(10)
    var after = Footprint.now
    while Date() < deadline, after.descriptors > before.descriptors || after.threads > before.threads + 1 {
        usleep(50_000)
        after = Footprint.now
    }
    emit([
        "mode": "connectivity-cycles", "cycles": cycles, "online": online, "before": before.json,
        "after": after.json,
    ])
}

func endlessChecks(_ namespace: String, url: URL, count: Int) {
    var configuration = ConnectivityConfiguration(
        endpoints: [ConnectivityEndpoint(url: url, expectation: .bodyContains("Success"))],
        environment: NetworkEnvironment(networkNamespacePath: namespace))
    configuration.probeTimeout = .seconds(5)
    configuration.checkDeadline = .seconds(10)
    let connectivity: Connectivity
    do { connectivity = try Connectivity(validating: configuration) } catch { fail("configuration: \(error)") }
    func check() -> String {
        let result = blocking {
            await outcome { () throws(ConnectivityError) in try await connectivity.checkConnectivity().verdict.name }
        }
        return result["verdict"] as? String ?? "\(result)"
    }
    _ = check()  // Warm-up: event loops, pools, caches.
    let before = Footprint.now
    let verdicts = (0..<count).map { _ in check() }
    // Each connection is closed on the client's event loop just after its verdict.
    let deadline = Date().addingTimeInterval(10)
    var after = Footprint.now
    while Date() < deadline, after.descriptors > before.descriptors {
        usleep(50_000)
        after = Footprint.now
    }
    emit(["mode": "endless-checks", "verdicts": verdicts, "before": before.json, "after": after.json])
}

/// A hostname started while the process is out of descriptors: getaddrinfo fails
/// (glibc says "Name or service not known" with errno EMFILE). That must be an
/// error (whenError, EMFILE), never a notReachable delivery; once descriptors are
/// back, the retry resolves it and the first delivery is the real answer.
func resolverEMFILE() {
    // The monitor runs already, so starting the hostname needs no new netlink socket.
    let keeper: Reachability
    let target: Reachability
    do {
        keeper = try Reachability()
        try keeper.start()
        target = try Reachability(hostname: "localhost")
    } catch { fail("set-up: \(error)") }
    let deliveries = LockedList<String>()
    let errors = LockedList<ReachabilityError>()
    let erred = DispatchSemaphore(value: 0)
    let delivered = DispatchSemaphore(value: 0)
    target.whenError = { _, error in
        errors.append(error)
        erred.signal()
    }
    // The notifier's closures (an observer added now would resolve the name at once,
    // before the descriptors run out).
    let record: Reachability.NetworkReachable = { reachability in
        deliveries.append(reachability.state.description)
        delivered.signal()
    }
    target.whenReachable = record
    target.whenUnreachable = record
    blocking { try? await Task.sleep(for: .milliseconds(20)) }  // libdispatch's epoll, made beforehand

    let filler = exhaustDescriptors()
    do { try target.start() } catch { fail("start: \(error)") }
    let gotError = erred.wait(timeout: .now() + 30) == .success
    let early = deliveries.values
    for fd in filler { close(fd) }
    let gotDelivery = delivered.wait(timeout: .now() + 30) == .success
    let error = errors.values.first
    let result: [String: Any] = [
        "mode": "resolver-emfile", "filled": filler.count, "errorReported": gotError,
        "errorCode": error.map { $0.code.description } ?? "none", "errno": error?.errno.map { Int($0) } ?? -1,
        "errorDescription": error?.description ?? "", "deliveriesWhileOut": early,
        "deliveries": deliveries.values, "delivered": gotDelivery,
    ]
    emitLine(result)
    withExtendedLifetime(keeper) {}
    let clean = gotError && error?.errno == EMFILE && early.isEmpty && gotDelivery
    exit(clean ? 0 : 1)
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    fail(
        "usage: ReachabilityStress storm|churn|connectivity-emfile|connectivity-cycles|endless-checks|resolver-emfile "
            + "NSPATH [CYCLES|namespace|default FREE|URL [CYCLES|COUNT]]"
    )
}
switch arguments[1] {
case "storm": storm(arguments[2])
case "churn": churn(arguments[2], cycles: arguments.count > 3 ? Int(arguments[3]) ?? 1000 : 1000)
case "connectivity-emfile":
    guard arguments.count == 5, ["namespace", "default"].contains(arguments[3]), let free = Int(arguments[4]) else {
        fail("usage: ReachabilityStress connectivity-emfile NSPATH namespace|default FREE")
    }
    connectivityEMFILE(arguments[2], ownNamespace: arguments[3] == "default", free: free)
case "connectivity-cycles":
    guard arguments.count >= 4, let url = URL(string: arguments[3]) else {
        fail("usage: ReachabilityStress connectivity-cycles NSPATH URL [CYCLES]")
    }
    connectivityCycles(arguments[2], url: url, cycles: arguments.count > 4 ? Int(arguments[4]) ?? 1000 : 1000)
case "endless-checks":
    guard arguments.count >= 4, let url = URL(string: arguments[3]) else {
        fail("usage: ReachabilityStress endless-checks NSPATH URL [COUNT]")
    }
    endlessChecks(arguments[2], url: url, count: arguments.count > 4 ? Int(arguments[4]) ?? 20 : 20)
case "resolver-emfile": resolverEMFILE()
default: fail("unknown mode \(arguments[1])")
}
