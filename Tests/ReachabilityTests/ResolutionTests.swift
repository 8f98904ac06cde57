import Foundation
import Reachability
@_spi(Testing) import ReachabilitySystem
import TestSupport
import Testing

@_spi(Testing) @testable import ReachabilityBase
@_spi(Testing) @testable import ReachabilityCore

/// The pure parts of hostname resolution: the schedule (coalescing, interval,
/// priority, stalls), which network changes are relevant to a name, IDNA and
/// numeric-shorthand handling, and IPv4-mapped addresses.
@Suite struct ResolutionTests {
    typealias Schedule = ResolverSchedule<Int>
    let start = ContinuousClock.now
    func key(_ name: String) -> Schedule.Key { Schedule.Key(namespace: nil, name: name) }

    @Test("One resolution in flight per name; a request during it asks for the next, not a second at once")
    func oneInFlight() {
        var schedule = Schedule()
        #expect(schedule.request(key("a"), by: 1, at: start) == 1)
        #expect(schedule.threads == 1)
        #expect(schedule.take(at: start) == key("a"))
        // While it runs: another request (a network change) waits for the next one.
        #expect(schedule.request(key("a"), by: 1, at: start) == 0)
        #expect(schedule.request(key("a"), by: 2, at: start) == 0)
        let done = schedule.finish(key("a"), at: start + .milliseconds(10))
        #expect(done.waiters == [1])
        #expect(done.start == 0, "the next one waits for the interval")
        #expect(schedule.isWaiting(1, for: key("a")) && schedule.isWaiting(2, for: key("a")))
        #expect(schedule.nextCheck(at: start + .milliseconds(10)) == start + .seconds(1))
        // The worker that finished finds nothing startable yet and exits.
        #expect(schedule.take(at: start + .milliseconds(10)) == nil)
        #expect(schedule.threads == 0)
        // After the interval: one resolution answers both.
        #expect(schedule.startWorkers(at: start + .seconds(1)) == 1)
        #expect(schedule.take(at: start + .seconds(1)) == key("a"))
        #expect(schedule.finish(key("a"), at: start + .milliseconds(1010)).waiters == [1, 2])
        #expect(!schedule.isWaiting(1, for: key("a")))
    }

    @Test("Local names have a lane of their own: they start past every stalled thread, within their own cap")
    func localLane() {
        var limits = Schedule.Limits()
        limits.threads = 3
        limits.running = 3
        limits.localThreads = 2
        var schedule = Schedule(limits: limits)
        // Three names take every common thread and stall.
        for name in ["s1", "s2", "s3"] { _ = schedule.request(key(name), by: 1, at: start) }
        #expect(schedule.threads == 3)
        for _ in 0..<3 { #expect(schedule.take(at: start) != nil) }
        let later = start + .seconds(5)
        // A common name waits for a thread; a local one starts at once, beyond the cap.
        #expect(schedule.request(key("slow-dns"), by: 1, at: later) == 0)
        #expect(schedule.request(key("localhost"), by: 1, at: later, local: true) == 1)
        #expect(schedule.take(at: later) == key("localhost"), "the local name, not the common one queued before it")
        #expect(schedule.threads == 4)
        // The local lane's own cap: two local names at once, the third waits.
        #expect(schedule.request(key("l2"), by: 1, at: later, local: true) == 1)
        #expect(schedule.take(at: later) == key("l2"))
        #expect(schedule.request(key("l3"), by: 1, at: later, local: true) == 0)
        // A local worker that finishes takes the waiting local name, never the common
        // one (its threads are all in use), then exits.
        #expect(schedule.finish(key("localhost"), at: later).waiters == [1])
        #expect(schedule.take(at: later) == key("l3"))
        #expect(schedule.finish(key("l2"), at: later).start == 0)
        #expect(schedule.take(at: later) == nil)
        #expect(schedule.threads == 4, "three stalled, one local")
        #expect(schedule.isWaiting(1, for: key("slow-dns")))
    }

    @Test("nsswitch's hosts line and the hosts file: which names are answered locally")
    func localNames() {
        #expect(
            LocalNames.filesFirst("passwd: files\nhosts:          files mdns4_minimal [NOTFOUND=return] dns\n")
                == .filesFirst(true))
        #expect(LocalNames.filesFirst("hosts:\tfiles dns # comment\n") == .filesFirst(true))
        #expect(LocalNames.filesFirst("hosts: resolve [!UNAVAIL=return] files dns\n") == .filesFirst(false))
        #expect(LocalNames.filesFirst("# hosts: files\nhosts: dns files\n") == .filesFirst(false))
        #expect(LocalNames.filesFirst("") == .filesFirst(false), "no nsswitch.conf: glibc asks DNS first")
        #expect(
            LocalNames.names("127.0.0.1 localhost\n::1\tip6-localhost ip6-loopback # x\n# 10.0.0.1 gone\nbad name\n")
                == .names(["localhost", "ip6-localhost", "ip6-loopback"]))
        // The process's own /etc: whatever this machine has, a name it lacks is not local.
        #expect(!LocalNames().contains("no-such-name.invalid", namespace: nil, systemCalls: .live))
    }

    /// A stand-in for /etc with nsswitch.conf listing `files` first and a hosts file
    /// naming `mylocal`; removed by the caller.
    static func etc(hosts: String = "127.0.0.1 localhost mylocal\n") throws -> String {
        let etc = NSTemporaryDirectory() + "rtest-etc-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: etc, withIntermediateDirectories: true)
        try "passwd: files\nhosts: files dns\n".write(toFile: etc + "/nsswitch.conf", atomically: true, encoding: .utf8)
        try hosts.write(toFile: etc + "/hosts", atomically: true, encoding: .utf8)
        return etc
    }

    @Test("A FIFO or a device as hosts or nsswitch.conf: no name is local (as without the file), no wait, no read")
    func localNamesFIFO() throws {
        let etc = try Self.etc()
        defer { try? FileManager.default.removeItem(atPath: etc) }
        let faults = SystemCallFaults()
        let system = SystemCalls(faults: faults)
        let names = LocalNames(etc: etc)
        #expect(names.contains("MyLocal", namespace: nil, systemCalls: system))
        for file in ["hosts", "nsswitch.conf"] {
            let saved = try String(contentsOfFile: "\(etc)/\(file)", encoding: .utf8)
            // A read of it would fail: the rule counts any.
            let reads = faults.inject(.read, errno: EIO, count: .always, matching: .path("\(etc)/\(file)"))
            let fifo = ScratchFiles.fifo(at: "\(etc)/\(file)")
            let local = ScratchFiles.result(releasing: [fifo]) {
                names.contains("mylocal", namespace: nil, systemCalls: system)
            }
            #expect(local == false, "\(file) a FIFO (nil: the read waited on it)")
            try FileManager.default.removeItem(atPath: fifo)
            try FileManager.default.createSymbolicLink(atPath: fifo, withDestinationPath: "/dev/zero")
            #expect(!names.contains("mylocal", namespace: nil, systemCalls: system), "\(file) is /dev/zero")
            #expect(faults.fired(reads) == 0, "\(file): neither is read")
            faults.remove(reads)
            try FileManager.default.removeItem(atPath: fifo)
            try saved.write(toFile: "\(etc)/\(file)", atomically: true, encoding: .utf8)
            #expect(names.contains("mylocal", namespace: nil, systemCalls: system), "\(file) a file again")
        }
    }

    @Test("A hosts file over 1 MiB lists no local name (whole or nothing): its names take the common lane")
    func localNamesOversizedHosts() throws {
        let line = "127.0.0.1 bigname\n"
        func hosts(_ size: Int) -> String {
            line + "#" + String(repeating: "x", count: size - line.utf8.count - 2) + "\n"
        }
        #expect(LocalNames.sizeLimit == 1 << 20)
        let etc = try Self.etc(hosts: hosts(LocalNames.sizeLimit + 1))
        defer { try? FileManager.default.removeItem(atPath: etc) }
        let faults = SystemCallFaults()
        let system = SystemCalls(faults: faults)
        let names = LocalNames(etc: etc)
        // A read of the hosts file would fail: the rule counts any.
        let reads = faults.inject(.read, errno: EIO, count: .always, matching: .path(etc + "/hosts"))
        #expect(!names.contains("bigname", namespace: nil, systemCalls: system), "1 MiB + 1 byte: no name")
        #expect(faults.fired(reads) == 0, "refused by its size, not a byte read")
        faults.remove(reads)
        try hosts(LocalNames.sizeLimit).write(toFile: etc + "/hosts", atomically: true, encoding: .utf8)
        #expect(names.contains("bigname", namespace: nil, systemCalls: system), "exactly 1 MiB: read whole")
    }

    @Test("Requests before a resolution starts share it")
    func coalescing() {
        var schedule = Schedule()
        #expect(schedule.request(key("a"), by: 1, at: start) == 1)
        #expect(schedule.request(key("a"), by: 2, at: start) == 0, "the thread already asked for will take it")
        #expect(schedule.request(key("a"), by: 1, at: start) == 0)
        #expect(schedule.take(at: start) == key("a"))
        #expect(schedule.finish(key("a"), at: start).waiters == [1, 2])
        #expect(schedule.take(at: start) == nil)
    }

    @Test("Stalled resolutions stop counting, so others start beside them up to the thread cap")
    func stallsDoNotBlock() {
        var limits = Schedule.Limits()
        limits.running = 2
        limits.threads = 4
        var schedule = Schedule(limits: limits)
        var asked = 0
        for name in ["s1", "s2", "s3", "s4", "s5", "quick"] { asked += schedule.request(key(name), by: 1, at: start) }
        #expect(asked == 2)
        #expect(schedule.take(at: start) == key("s1"))
        #expect(schedule.take(at: start) == key("s2"))
        // Half a second later both are stalled: two more threads may start.
        let later = start + .milliseconds(300)
        #expect(schedule.nextCheck(at: start) == start + limits.stallAfter)
        #expect(schedule.startWorkers(at: later) == 2)
        #expect(schedule.take(at: later) == key("s3"))
        #expect(schedule.take(at: later) == key("s4"))
        // The thread cap holds even though these stall too.
        #expect(schedule.workersToStart(at: later + .seconds(1)) == 0)
    }

    @Test("Names whose last resolution was quick go first; slow ones last")
    func priority() {
        var schedule = Schedule()
        // History: "slow" took 3 s, "fast" 5 ms.
        for (name, duration) in [("slow", Duration.seconds(3)), ("fast", .milliseconds(5))] {
            _ = schedule.request(key(name), by: 1, at: start)
            let taken = schedule.take(at: start)
            #expect(taken != nil)
            _ = schedule.finish(taken!, at: start + duration)
        }
        let now = start + .seconds(10)
        // The worker of the history above is still looking for work: two more threads.
        #expect(["slow", "new", "fast"].map { schedule.request(key($0), by: 1, at: now) }.reduce(0, +) == 2)
        #expect(schedule.threads == 3)
        #expect(schedule.take(at: now) == key("fast"))
        #expect(schedule.take(at: now) == key("new"))
        #expect(schedule.take(at: now) == key("slow"))
    }

    @Test("With no thread at all, waiters are failed rather than left waiting")
    func noThread() {
        var schedule = Schedule()
        #expect(schedule.request(key("a"), by: 7, at: start) == 1)
        #expect(schedule.threadFailedToStart(at: start) == [key("a"): [7]])
        #expect(!schedule.isWaiting(7, for: key("a")))
    }

    @Test("Which network changes are relevant to a name")
    func relevance() throws {
        let address = try IPAddress("198.51.100.10")
        func route(_ text: String, _ length: UInt8) throws -> RoutePrefix {
            RoutePrefix(family: AddressFamily.inet, length: length, destination: try IPAddress(text))
        }
        var cause = PassCause()
        #expect(!cause.isRelevant(toHostAt: [address]))
        cause.noteRoute(try route("10.9.0.0", 16))
        #expect(!cause.isRelevant(toHostAt: [address]), "a route covering none of its addresses")
        cause.noteRoute(try route("198.51.100.0", 28))
        #expect(cause.isRelevant(toHostAt: [address]))
        var defaultRoute = PassCause()
        defaultRoute.noteRoute(RoutePrefix(family: AddressFamily.inet, length: 0, destination: nil))
        #expect(defaultRoute.isRelevant(toHostAt: [address]))
        for change in [\PassCause.interfacesChanged, \.rulesChanged, \.resynced, \.resolverConfigurationChanged] {
            var other = PassCause()
            other[keyPath: change] = true
            #expect(other.isRelevant(toHostAt: []))
        }
        var storm = PassCause()
        for index in 0...PassCause.routeLimit { storm.noteRoute(try route("10.1.\(index % 256).0", 24)) }
        #expect(storm.manyRoutes && storm.routes.isEmpty && storm.isRelevant(toHostAt: [address]))
    }

    @Test("Round-robin answers are the same answer in another order")
    func sameAnswer() throws {
        let (a, b) = (try IPAddress("192.0.2.1"), try IPAddress("192.0.2.2"))
        #expect(Resolution.addresses([a, b]).sameAnswer(as: .addresses([b, a])))
        #expect(!Resolution.addresses([a]).sameAnswer(as: .addresses([b])))
        #expect(!Resolution.addresses([a]).sameAnswer(as: nil))
        #expect(Resolution.failed(code: -2).sameAnswer(as: .failed(code: -3)))
        #expect(!Resolution.failed(code: -2).sameAnswer(as: .addresses([])))
    }

    @Test("Punycode and IDNA lookup names (RFC 3492 vectors)")
    func punycode() {
        #expect(Punycode.encode("bücher".unicodeScalars.map(\.value)) == "bcher-kva")
        #expect(Punycode.encode("münchen".unicodeScalars.map(\.value)) == "mnchen-3ya")
        #expect(Punycode.encode("ليهمابتكلموشعربي؟".unicodeScalars.map(\.value)) == "egbpdaj6bu4bxfgehfvwxn")
        #expect(Punycode.encode("他们为什么不说中文".unicodeScalars.map(\.value)) == "ihqwcrb4cv8a8dqg056pqjye")
        #expect(Hostname.lookupName("bücher.example") == "xn--bcher-kva.example")
        #expect(Hostname.lookupName("BÜCHER.Example.") == "xn--bcher-kva.Example.")
        #expect(Hostname.lookupName("plain.example") == "plain.example")
    }

    @Test("A label too long once IDNA-encoded is refused")
    func encodedLength() {
        let long = String(repeating: "a", count: 60) + "ü.example"
        #expect(throws: ReachabilityError.self) { try Hostname.validate(long) }
    }

    @Test("inet_aton's numeric shorthands are refused as addresses; plain names and dotted quads are not affected")
    func numericShorthands() throws {
        for text in ["0x7f.0.0.1", "127.1", "2130706433", "0177.0.0.1", "0x7f000001"] {
            #expect(Hostname.legacyNumericIPv4(text) == (try IPAddress("127.0.0.1")), "\(text)")
            let error = #expect(throws: ReachabilityError.self) { try Reachability(hostname: text) }
            #expect(error?.code == .invalidAddress)
            #expect(error?.description.contains("127.0.0.1") == true)
        }
        for text in ["127.0.0.1", "example.com", "deadbeef", "x1"] {
            #expect(Hostname.legacyNumericIPv4(text) == nil, "\(text)")
        }
    }

    @Test("IPv4-mapped IPv6 addresses unmap to IPv4; others stay")
    func unmapped() throws {
        #expect(try IPAddress("::ffff:192.0.2.1").unmapped == IPAddress("192.0.2.1"))
        #expect(try IPAddress("::ffff:192.0.2.1").unmapped.family == .ipv4)
        #expect(try IPAddress("2001:db8::1").unmapped == IPAddress("2001:db8::1"))
        #expect(try IPAddress("::1").unmapped == IPAddress("::1"))
        #expect(try IPAddress("192.0.2.1").unmapped == IPAddress("192.0.2.1"))
        #expect(try Reachability(address: "::ffff:0.0.0.0").targetDescription == "internet")
        #expect(
            Target.address(try IPAddress("::ffff:10.1.2.3")).lookups.first?.destination == (try IPAddress("10.1.2.3")))
    }
}

/// The pool's threads and timer, with worker threads the test starts itself.
@Suite struct ResolverPoolTests {
    /// Worker closures the pool asked to run, run by the test when it chooses.
    final class Workers: Sendable {
        private let pending = LockedValue<[@Sendable () -> Void]>([])
        var spawn: ResolverPool.Spawn {
            { [pending] work throws(ReachabilityError) in pending.withLock { $0.append(work) } }
        }
        var count: Int { pending.withLock { $0.count } }
        /// Runs every pending worker on this thread, one after the other.
        func runHere() {
            for work in pending.withLock({ list in
                defer { list = [] }; return list
            }) {
                work()
            }
        }
        /// Runs every pending worker on a thread of its own.
        func runAll() {
            for work in pending.withLock({ list in
                defer { list = [] }; return list
            }) {
                Thread.detachNewThread { work() }
            }
        }
    }

    @Test("A name asked for again within its interval starts once the pool's clock has passed it, not before")
    func intervalOnTheClock() throws {
        let clock = ManualClock()
        let start = clock.now
        let workers = Workers()
        let lookups = LockedValue(0)
        let pool = ResolverPool(
            spawn: workers.spawn,
            lookup: { _, _, _ in
                lookups.withLock { $0 += 1 }
                return .success(.failed(code: -2))
            }, clock: clock)
        final class Requester: Sendable {}
        let requester = Requester()
        let id = ResolverPool.Requester(id: ObjectIdentifier(requester))
        let answers = LockedValue(0)
        func ask() { pool.resolve("a", in: nil, systemCalls: .live, for: id) { _ in answers.withLock { $0 += 1 } } }
        ask()
        workers.runHere()
        #expect(answers.withLock { $0 } == 1)
        // Asked again at once: no worker, a timer for when the interval has passed.
        ask()
        #expect(workers.count == 0)
        let due = try #require(clock.deadlines.first)
        #expect(clock.deadlines.count == 1)
        #expect(due - start >= .seconds(1), "the name's interval is 1 s")
        clock.advance(to: due - .nanoseconds(1))
        #expect(workers.count == 0 && pool.isWaiting(id))
        // The timer runs as the clock reaches it (on the pool's queue, before advance returns).
        clock.advance(to: due)
        #expect(workers.count == 1)
        workers.runHere()
        #expect(answers.withLock { $0 } == 2 && lookups.withLock { $0 } == 2)
        #expect(!pool.isWaiting(id) && clock.deadlines.isEmpty, "nothing waits, no timer")
        withExtendedLifetime(requester) {}
    }

    @Test("Names all requested before any worker runs still start beside a stalled one (the stall timer)")
    func burstBehindStalls() throws {
        var limits = ResolverSchedule<ResolverPool.Requester>.Limits()
        limits.running = 1
        limits.stallAfter = .milliseconds(50)
        let release = DispatchSemaphore(value: 0)
        let workers = Workers()
        let pool = ResolverPool(limits: limits, spawn: workers.spawn) { name, _, _ in
            if name == "stalled" { release.wait() }
            return .success(.failed(code: -2))
        }
        final class Requester: Sendable {}
        let (first, second) = (Requester(), Requester())
        let answered = LockedValue<[String]>([])
        // Both requests come before any worker runs: one worker is asked for.
        pool.resolve("stalled", in: nil, systemCalls: .live, for: .init(id: ObjectIdentifier(first))) { _ in }
        pool.resolve("quick", in: nil, systemCalls: .live, for: .init(id: ObjectIdentifier(second))) { _ in
            answered.withLock { $0.append("quick") }
        }
        #expect(workers.count == 1)
        workers.runAll()  // it takes "stalled" (first come) and blocks
        // The stall timer asks for a second worker: start it. Blocking sleeps, not
        // Task.sleep: on a loaded machine a suspended task can resume after the
        // deadline without a look at the workers asked for meanwhile. The last
        // round runs after the deadline, so a late wake-up still starts them.
        let deadline = ContinuousClock.now + .seconds(20)
        repeat {
            workers.runAll()
            usleep(10_000)
        } while answered.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline
        workers.runAll()
        for _ in 0..<100 where answered.withLock({ $0.isEmpty }) { usleep(10_000) }
        #expect(answered.withLock { $0 } == ["quick"], "the quick name waited behind the stalled one")
        release.signal()
    }
}
