import Foundation
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// `watch` of many names behind a resolver that never answers, run as shipped from the host's namespace with `--namespace NAME`, whose
/// `/etc/netns/NAME/resolv.conf` points at a UDP socket that reads nothing.
@Suite(
    "The CLI behind a silent resolver: stalled names, descriptor limits", .enabled(if: IntegrationGate.heavyEnabled),
    .ownThreads,
    .serialized)
struct CLIResolverLimitsTests {
    /// A named namespace whose only nameserver (127.0.0.1:53 inside it) never
    /// answers, with glibc's longest patience (30 s, 5 attempts: no stalled name
    /// fails during a test), and the silent server's process.
    private func silentResolver(_ prefix: String) throws -> (TestNamespace, Child, String) {
        let ns = try TestNamespace(named: prefix)
        try ns.ip("link set lo up")
        try ns.writeEtc("resolv.conf", "nameserver 127.0.0.1\noptions timeout:30 attempts:5\n")
        let sink = try ns.spawn(
            [
                "python3", "-c",
                "import socket,sys,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.bind(('127.0.0.1',53))\nprint('ready',flush=True)\ntime.sleep(3600)",
            ], captureOutput: true)
        guard sink.nextLine(timeout: 10) == "ready" else {
            throw CommandFailed(command: "the silent resolver", status: -1, stderr: "never bound")
        }
        return (ns, sink, try #require(ns.name))
    }

    private static func stalled(_ count: Int) -> [String] {
        (1...max(count, 1)).prefix(count).map { "never\($0).test" }
    }

    @Test(
        "localhost (in the hosts file) is printed at once behind 70, 200 and 1,000 names that never resolve",
        arguments: [70, 200, 1000])
    func localhostBehindStalledNames(_ count: Int) throws {
        let (ns, sink, name) = try silentResolver("rtest-clist")
        defer { withExtendedLifetime((ns, sink)) {} }
        // localhost last: before the fix it queued behind the stalled names for a
        // thread (64 of them, each held for glibc's timeout: here 150 s).
        let watch = try Child(
            [CLI.path, "watch", "--json"] + Self.stalled(count) + ["localhost", "--namespace", name],
            captureOutput: true)
        defer { watch.terminate() }
        guard let line = watch.nextLine(timeout: 30) else {
            Issue.record("no line within 30 s behind \(count) stalled names")
            return
        }
        let object = try jsonObject(line)
        #expect(object["target"] as? String == "localhost", "\(object)")
        #expect(object["reachable"] as? Bool == true)
        // And the stalled names still wait: nothing else was printed.
        #expect(watch.nextLine(timeout: 0.5) == nil)
        // The resolver's threads stayed bounded (the common cap 64 plus the local lane's 4).
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(watch.pid)/task").filter {
            ((try? String(contentsOfFile: "/proc/\(watch.pid)/task/\($0)/comm", encoding: .utf8)) ?? "")
                .hasPrefix("reachability-dn")
        }
        #expect(threads.count <= 68, "\(threads.count) resolver threads")
    }

    @Test("Every descriptor limit, 0, 70 or 200 stalled names: watch runs or exits 2 naming the limit, never a signal")
    func descriptorLimits() throws {
        let (ns, sink, name) = try silentResolver("rtest-clifd")
        defer { withExtendedLifetime((ns, sink)) {} }
        // Dense where the limit meets the start-up check (64 free) and the resolver's
        // budget; sparse elsewhere. Scripts/descriptor-sweep.py tries every limit.
        let limits = [16, 32, 48, 56] + Array(60...80) + [96, 128, 256]
        var runs: [(limit: Int, names: Int)] = []
        for limit in limits { for names in [0, 70, 200] { runs.append((limit, names)) } }
        var failures: [String] = []
        // Three at a time, each watched for 3 s (the trap came after about 1.8 s): a
        // few, so that the tests running beside this one keep their deadlines.
        for batch in stride(from: 0, to: runs.count, by: 3) {
            let children = try runs[batch..<min(batch + 3, runs.count)].map { run in
                let arguments = [CLI.path, "watch"] + Self.stalled(run.names) + ["--namespace", name]
                return (
                    run,
                    try Child(
                        ["sh", "-c", "ulimit -n \(run.limit) && exec \"$0\" \"$@\""] + arguments, captureOutput: true)
                )
            }
            let begun = ContinuousClock.now
            for (run, child) in children {
                let left = max(0, 3 - (ContinuousClock.now - begun) / .seconds(1))
                var status = child.wait(timeout: left)
                if status == nil {
                    child.signal(SIGINT)
                    status = child.wait(timeout: 10)
                }
                if status == nil { child.signal(SIGKILL) }
                let code = status ?? child.wait()
                let (_, stderr) = child.readAll()
                let described = "limit \(run.limit), \(run.names) names: exit \(code), \(stderr.prefix(300))"
                switch code {
                case 0: break  // ran until interrupted
                case 2 where stderr.contains("too few file descriptors"): break
                default: failures.append(described)
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of \(runs.count) runs: \(failures.joined(separator: "\n"))")
    }
}
