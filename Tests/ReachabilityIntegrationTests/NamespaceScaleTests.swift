import Foundation
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// `--all-namespaces` at scale, in isolated worlds (``IsolatedWorld``): named
/// namespaces made and deleted at 100 a second for a minute under `watch` and the
/// exporter (every one seen, nothing left behind), and 10,000 at once under `status`
/// and `watch` (constant threads, a few descriptors and under 64 KB each).
@Suite(
    "reachability --all-namespaces at scale", .enabled(if: IntegrationGate.heavyEnabled), .ownThreads, .serialized)
struct NamespaceScaleTests {
    /// What a process holds, from /proc: descriptors, threads, RSS (kB), peak RSS (kB).
    struct Footprint: CustomStringConvertible {
        var descriptors: Int
        var threads: Int
        var rss: Int
        var peak: Int

        init(_ pid: Int32) throws {
            descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
            let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
            func field(_ name: String) throws -> Int {
                let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(name + ":") }, "\(name)")
                return try #require(
                    Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? ""))
            }
            threads = try field("Threads")
            rss = try field("VmRSS")
            peak = try field("VmHWM")
        }

        var description: String { "\(descriptors) fds, \(threads) threads, RSS \(rss) kB (peak \(peak) kB)" }
    }

    /// A CLI run inside a world with its stdout and stderr into a file (nothing to
    /// drain while it runs), and its pid as this process sees it (nsenter forks it).
    final class Logged: @unchecked Sendable {
        // @unchecked: set once in init; used by one test.
        let child: Child
        let file: String
        let pid: Int32

        init(_ world: IsolatedWorld, _ arguments: [String], wrapper: [String] = []) throws {
            file =
                FileManager.default.temporaryDirectory.appendingPathComponent(
                    "rtest-scale-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log"
                ).path
            child = try Child(
                world.enter + ["sh", "-c", #"f=$1; shift; exec "$@" >"$f" 2>&1"#, "sh", file] + wrapper + [CLI.path]
                    + arguments, captureOutput: false)
            pid = try NamespaceScaleTests.innerPid(child)
        }

        deinit {
            kill(pid, SIGTERM)
            child.wait()
            try? FileManager.default.removeItem(atPath: file)
        }

        var text: String { (try? String(contentsOfFile: file, encoding: .utf8)) ?? "" }
        var lines: [String] { text.split(separator: "\n").map(String.init) }
    }

    /// The CLI's pid under `nsenter` (its child), once it runs the CLI.
    static func innerPid(_ child: Child) throws -> Int32 {
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            let children =
                (try? String(contentsOfFile: "/proc/\(child.pid)/task/\(child.pid)/children", encoding: .utf8)) ?? ""
            if let pid = children.split(separator: " ").first.flatMap({ Int32($0) }),
                let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe"),
                exe.contains("reachability")
            {
                return pid
            }
            usleep(10_000)
        }
        throw CommandFailed(command: "the CLI under nsenter", status: -1, stderr: "never ran")
    }

    /// A churned name's events, seen whole (`renamed`: found unnamed first).
    static let seenWhole: [[String]?] = [["appeared", "disappeared"], ["renamed", "disappeared"]]

    /// The watch JSON lines' events: name → the events seen for it, in order.
    static func events(_ lines: [String]) -> [String: [String]] {
        var events: [String: [String]] = [:]
        for line in lines where line.contains("\"event\"") {
            guard let object = try? jsonObject(line), let event = object["event"] as? String,
                let name = namespaceName(object)
            else { continue }
            events[name, default: []].append(event)
        }
        return events
    }

    /// Waits until `condition` holds (polled every 100 ms) for at most `timeout`
    /// seconds: the seconds it took, or nil if it never held.
    static func within(_ timeout: Double, _ condition: () throws -> Bool) rethrows -> Double? {
        let start = Date()
        while true {
            if try condition() { return Date().timeIntervalSince(start) }
            guard Date().timeIntervalSince(start) < timeout else { return nil }
            usleep(100_000)
        }
    }

    /// Makes a namespace every `step` seconds and deletes the one made `live` steps
    /// before, `count` in all, through one `ip -force -batch -`, then deletes the rest;
    /// samples how many are in /run/netns every 100 steps. Its last line: figures.
    static let churn = #"""
        import os, subprocess, sys, time
        count, live, step, prefix = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
        ip = subprocess.Popen(["ip", "-force", "-batch", "-"], stdin=subprocess.PIPE, text=True)
        start = time.monotonic()
        late, low, high = 0.0, 1 << 30, 0
        for i in range(count):
            wait = start + i * step - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            else:
                late = max(late, -wait)
            lines = "netns add %s%d\n" % (prefix, i)
            if i >= live:
                lines += "netns del %s%d\n" % (prefix, i - live)
            ip.stdin.write(lines)
            ip.stdin.flush()
            if i % 100 == 99 and i >= live:
                n = len(os.listdir("/run/netns"))
                low, high = min(low, n), max(high, n)
        fed = time.monotonic() - start
        for i in range(max(0, count - live), count):
            ip.stdin.write("netns del %s%d\n" % (prefix, i))
        ip.stdin.close()
        status = ip.wait()
        left = len(os.listdir("/run/netns"))
        print("ip=%d fed=%.2fs done=%.2fs late=%.3fs live=%d..%d left=%d"
              % (status, fed, time.monotonic() - start, late, low, high, left), flush=True)
        """#

    @Test(
        "100 namespaces a second for 60 s under watch and the exporter: each appears and goes; fds, threads, RSS, series back"
    )
    func churn() throws {
        let count = 6000
        let world = try IsolatedWorld()
        let watch = try Logged(world, ["watch", "--all-namespaces", "--json"])
        let exporter = try Logged(world, ["exporter", "--all-namespaces", "--listen", "127.0.0.1:0"])
        var url = ""
        let listening = Self.within(30) {
            guard let line = exporter.lines.first(where: { $0.contains("listening on ") }),
                let range = line.range(of: "listening on ")
            else { return false }
            url = String(line[range.upperBound...])
            return true
        }
        #expect(listening != nil && url.hasSuffix("/metrics"), "the exporter's output: \(exporter.text)")
        func scrape() throws -> String {
            try world.check("curl -sS --max-time 10 '\(url)'")
        }
        #expect(
            Self.within(30) { watch.lines.contains { (try? jsonObject($0)).map { isTargetLine($0, "@host") } == true } }
                != nil, "@host's target line: \(watch.text)")

        // A warm-up (20 made and deleted, a scrape) before the baseline: what a first
        // namespace makes once and keeps (a pool thread, a cache) is not a leak.
        try world.check(
            "for i in $(seq 0 19); do ip netns add warm$i; done; for i in $(seq 0 19); do ip netns del warm$i; done")
        #expect(
            Self.within(15) { Self.seenWhole.contains(Self.events(watch.lines)["warm19"]) } != nil,
            "the warm-up seen: \(watch.lines.suffix(5))")
        _ = try scrape()
        sleep(3)
        let before = (watch: try Footprint(watch.pid), exporter: try Footprint(exporter.pid))
        print("churn: baseline watch \(before.watch); exporter \(before.exporter)")

        // The driver runs; the CLIs' RSS is sampled every 10 s meanwhile (growth with the
        // count of namespaces gone, not with the ~100 live, is something kept per namespace).
        let started = Date()
        let driverChild = try Child(
            world.enter + ["python3", "-c", Self.churn, "\(count)", "100", "0.01", "churn"], captureOutput: true)
        driverChild.closeInput()
        var samples: [(seconds: Int, watch: Int, exporter: Int)] = []
        var next = 10.0
        while driverChild.wait(timeout: next - Date().timeIntervalSince(started)) == nil {
            samples.append((Int(next), try Footprint(watch.pid).rss, try Footprint(exporter.pid).rss))
            next += 10
        }
        let (driverOut, driverErr) = driverChild.readAll()
        let driver = Command.Output(status: driverChild.wait(), stdout: driverOut, stderr: driverErr)
        let drove = Date().timeIntervalSince(started)
        print("churn: driver \(driver.stdout.trimmingCharacters(in: .newlines)) (\(String(format: "%.1f", drove)) s)")
        let sampled = samples.map { "\($0.seconds) s: watch \($0.watch) kB, exporter \($0.exporter) kB" }
        print("churn: RSS during it: \(sampled.joined(separator: "; "))")
        #expect(driver.status == 0 && driver.stdout.hasPrefix("ip=0 "), "the driver: \(driver)")
        #expect(driver.stdout.contains("left=0"), "every churned namespace deleted: \(driver.stdout)")

        // Every name: appeared, then disappeared, once each. A scan that found the
        // driver's `ip` in a namespace before it named it saw it unnamed first: that
        // name came as a rename (`net:[INODE]`, then the name) instead.
        let names = (0..<count).map { "churn\($0)" }
        var events: [String: [String]] = [:]
        let seen = Self.within(30) {
            events = Self.events(watch.lines)
            return names.allSatisfy { Self.seenWhole.contains(events[$0]) }
        }
        let missed = names.filter { !["appeared", "renamed"].contains(events[$0]?.first ?? "") }
        let stuck = names.filter { events[$0]?.last != "disappeared" }
        let odd = names.filter { events[$0] != nil && !Self.seenWhole.contains(events[$0]) }
        print(
            "churn: \(names.count - missed.count) of \(count) appeared, \(count - stuck.count) disappeared; "
                + "all seen \(seen.map { String(format: "%.1f s", $0) } ?? "never") after the driver")
        #expect(missed.isEmpty, "\(missed.count) never appeared: \(missed.prefix(20))")
        #expect(stuck.isEmpty, "\(stuck.count) never disappeared: \(stuck.prefix(20))")
        #expect(odd.isEmpty, "\(odd.count) with other events: \(odd.prefix(5).map { "\($0): \(events[$0]!)" })")
        // The driver's `ip` enters each namespace it makes (`netns add` unshares, then
        // goes back): now and then a scan of /proc finds it in one before its name is
        // mounted, and it is elsewhere when watch enters it. That namespace waits for
        // its name, quietly (NamespaceFollower): nothing is said on stderr.
        let errors = watch.lines.filter { $0.hasPrefix("reachability:") }
        print("churn: watch said \(errors.count) things on stderr")
        #expect(errors.isEmpty, "watch said: \(errors.prefix(5))")

        // Descriptors back to the baseline exactly, threads to it or fewer (the warm-up
        // made what is kept; a dispatch worker that served the warm-up's scrape may have
        // idled out since: the exporter was seen at 7, then 6).
        // RSS: within 16 MiB of the baseline after the churn. ~100 live namespaces at
        // ~34 kB each (tenThousand's figure) are 3.4 MB at any moment, and glibc keeps what
        // it freed (per-thread arenas): watch was seen at +8.6 MiB 10 s in, flat from
        // there (+0.8 MiB in the next 50 s), and +8.8 MiB after, above the 8 MiB first
        // tried. A namespace's monitor and series kept after it went (~34 kB) would be
        // 200 MB here: far past the bound. What the allocator keeps is not a bound to
        // hold (the exporter grew 0.3 to 1.8 kB per namespace gone from 30 s on, in
        // runs beside a build; 0.1 kB in 120 s alone): printed, not asserted.
        var after = (watch: before.watch, exporter: before.exporter)
        let settled = try Self.within(10) {
            after = (watch: try Footprint(watch.pid), exporter: try Footprint(exporter.pid))
            return after.watch.descriptors == before.watch.descriptors
                && after.watch.threads <= before.watch.threads
                && after.exporter.descriptors == before.exporter.descriptors
                && after.exporter.threads <= before.exporter.threads
        }
        let report =
            "watch \(before.watch) → \(after.watch); exporter \(before.exporter) → \(after.exporter); "
            + "settled \(settled.map { String(format: "%.1f s", $0) } ?? "not in 10 s") after every event was seen"
        print("churn: \(report)")
        #expect(after.watch.descriptors == before.watch.descriptors, "\(report)")
        #expect(after.watch.threads <= before.watch.threads, "\(report)")
        #expect(after.exporter.descriptors == before.exporter.descriptors, "\(report)")
        #expect(after.exporter.threads <= before.exporter.threads, "\(report)")
        #expect(after.watch.rss - before.watch.rss < 16 << 10, "\(report)")
        #expect(after.exporter.rss - before.exporter.rss < 16 << 10, "\(report)")
        if let half = samples.first(where: { $0.seconds == 30 }), let last = samples.last, last.seconds > half.seconds {
            let grew = (watch: last.watch - half.watch, exporter: last.exporter - half.exporter)
            let growth =
                "RSS from \(half.seconds) s to \(last.seconds) s: watch +\(grew.watch) kB, exporter +\(grew.exporter) kB "
                + "(samples: \(sampled.joined(separator: "; ")))"
            print("churn: \(growth)")
        } else {
            Issue.record("no RSS samples at 30 s and after: \(sampled)")
        }

        // No series of a churned namespace left; @host's still there.
        let metrics = try scrape()
        let stale = metrics.split(separator: "\n").filter {
            $0.contains("namespace=\"churn") || $0.contains("namespace=\"warm")
        }
        #expect(stale.isEmpty, "\(stale.count) stale series: \(stale.prefix(5))")
        #expect(
            metrics.contains("reachability_reachable{namespace=\"@host\""), "@host's series: \(metrics.prefix(2000))")
        print(
            "churn: /metrics \(metrics.count) bytes, \(stale.count) stale series; wall \(String(format: "%.1f", Date().timeIntervalSince(started))) s from the churn's start"
        )
        #expect(watch.child.isRunning && exporter.child.isRunning)
    }

    @Test(
        "10,000 named namespaces: a status row for each; watch (as many as the fd limit fits) sees each: same threads, ~3 fds, < 64 KB each"
    )
    func tenThousand() throws {
        let count = 10_000
        let world = try IsolatedWorld()
        // watch keeps about 3 descriptors a namespace: 10,000 need about 30,000. The CLI
        // raises its soft limit to the hard one, which root here can't raise (the
        // container lacks CAP_SYS_RESOURCE: `prlimit --nofile=65536:65536` is refused):
        // where it is short, watch gets the largest count (a multiple of 500) whose
        // 3 descriptors each fit with 1,000 to spare. status looks at 16 at once: it
        // gets all 10,000 whatever the limit.
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        let hard = Int(clamping: limit.rlim_max)
        let watched = min(count, (hard - 1000) / 3 / 500 * 500)
        print("10k: descriptor hard limit \(hard): watch over \(watched) namespaces")
        func targetLines(_ name: String, _ text: String) -> Bool {
            text.split(separator: "\n").contains {
                (try? jsonObject(String($0))).map { isTargetLine($0, name) } == true
            }
        }

        // With @host alone.
        let one: Footprint
        do {
            let watch = try Logged(world, ["watch", "--all-namespaces", "--json"])
            #expect(Self.within(30) { targetLines("@host", watch.text) } != nil, "\(watch.text)")
            sleep(3)  // a rescan or so
            one = try Footprint(watch.pid)
        }
        print("10k: watch with 1 namespace: \(one)")

        var clock = Date()
        try world.check("seq 0 \(count - 1) | sed 's/^/netns add s/' | ip -batch -")
        let made = Date().timeIntervalSince(clock)
        print("10k: made \(count) in \(String(format: "%.1f", made)) s")

        clock = Date()
        let status = try Command.run(
            world.enter + ["timeout", "-s", "KILL", "120", CLI.path, "status", "--all-namespaces"])
        let statusSeconds = Date().timeIntervalSince(clock)
        let rows = try CLIAllNamespacesTests.rows(status.stdout)
        let named = rows.filter { $0.key != "@host" }
        print("10k: status: exit \(status.status), \(rows.count) rows in \(String(format: "%.1f", statusSeconds)) s")
        #expect(status.status == 1, "no route in s0…: exit 1: \(status.stderr.prefix(500))")
        #expect(rows.count == count + 1, "\(rows.count) rows")
        #expect(rows["@host"]?[4] == "reachableViaWiFi", "\(rows["@host"] ?? [])")
        let notNot = named.filter { $0.value[4] != "notReachable" }.map(\.key).sorted()
        #expect(notNot.isEmpty, "\(notNot.count) rows not notReachable: \(notNot.prefix(5).map { rows[$0]! })")
        #expect(status.stderr.isEmpty, "\(status.stderr.prefix(500))")

        if watched < count {
            clock = Date()
            try world.check("seq \(watched) \(count - 1) | sed 's/^/netns del s/' | ip -batch -")
            print("10k: deleted \(count - watched) in \(String(format: "%.1f", Date().timeIntervalSince(clock))) s")
        }

        clock = Date()
        let watch = WatchLines(try world.spawnCLI(["watch", "--all-namespaces", "--json"]))
        let watchPid = try Self.innerPid(watch.child)
        var appeared: Set<String> = []
        var targets: Set<String> = []
        var firstSeconds = 0.0
        while appeared.count < watched + 1 || targets.count < watched + 1 {
            let line = try watch.next("\(appeared.count) appeared, \(targets.count) target lines", timeout: 60) { _ in
                true
            }
            guard let object = try? jsonObject(line), let name = namespaceName(object) else { continue }
            if appeared.isEmpty { firstSeconds = Date().timeIntervalSince(clock) }
            if object["event"] as? String == "appeared" { appeared.insert(name) }
            if isTargetLine(object, name) { targets.insert(name) }
        }
        let watchSeconds = Date().timeIntervalSince(clock)
        sleep(3)  // a rescan or so
        let many = try Footprint(watchPid)
        let perFds = Double(many.descriptors - one.descriptors) / Double(watched)
        let perKB = Double(many.rss - one.rss) / Double(watched)
        let report =
            "1 namespace: \(one); \(watched + 1): \(many); \(String(format: "%.2f", perFds)) fds and "
            + "\(String(format: "%.1f", perKB)) kB per namespace; every line in \(String(format: "%.1f", watchSeconds)) s "
            + "(the first after \(String(format: "%.1f", firstSeconds)) s)"
        print("10k: watch: \(report)")
        #expect(watchSeconds < 60, "\(report)")
        #expect(many.threads == one.threads, "constant threads: \(report)")
        #expect(perFds >= 2.5 && perFds <= 3.5, "about 3 descriptors a namespace: \(report)")
        #expect(perKB * 1024 < 64 * 1024, "under 64 KB a namespace: \(report)")
        #expect(watch.errors.isEmpty, "\(watch.errors.prefix(5))")
        kill(watchPid, SIGTERM)
        watch.child.wait()

        clock = Date()
        try world.check("seq 0 \(watched - 1) | sed 's/^/netns del s/' | ip -batch -")
        print("10k: deleted \(watched) in \(String(format: "%.1f", Date().timeIntervalSince(clock))) s")
    }
}
