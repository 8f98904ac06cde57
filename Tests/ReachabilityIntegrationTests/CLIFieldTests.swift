import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// The CLI in the field, run from the host's own namespace against a
/// named test namespace with `--namespace`, as an operator would: namespaces that
/// go away under `watch` and `wait`, a round-robin name under `watch`, the
/// "did you mean" hint for a mistyped subcommand.
@Suite("The CLI in the field: namespaces, round-robin names, typos", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLIFieldTests {
    /// A named namespace with veth0 (192.0.2.1/24, default route via 192.0.2.2) and
    /// veth2 (198.51.100.1/24), no IPv6, and a scripted DNS server.
    private func setUp(_ prefix: String) throws -> (TestNamespace, ScriptedDNSServer, String) {
        let ns = try TestNamespace(named: prefix)
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        try ns.addVeth("veth2", peer: "veth3", address: "198.51.100.1/24")
        return (ns, try ScriptedDNSServer(in: ns), try #require(ns.name))
    }

    /// Lines of `child`'s stdout until none comes for `quiet` seconds (or `limit` lines).
    private func lines(of child: Child, quiet: Double, limit: Int = 10_000) -> [String] {
        var seen: [String] = []
        while seen.count < limit, let line = child.nextLine(timeout: quiet) { seen.append(line) }
        return seen
    }

    @Test("--namespace NAME: status, interfaces and a hostname resolved with the namespace's own resolv.conf")
    func namespaceOption() throws {
        let (ns, dns, name) = try setUp("rtest-clins")
        try dns.set("svc.rtest", answers: [["198.51.100.9"]])
        let status = try Command.run([CLI.path, "status", "svc.rtest", "--namespace", name, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let object = try jsonObject(status.stdout)
        #expect((object["interface"] as? [String: Any])?["name"] as? String == "veth2")
        let byPath = try Command.run([CLI.path, "status", "192.0.2.9", "--namespace", ns.path])
        #expect(byPath.status == 0 && byPath.stdout.contains("veth0"), "\(byPath)")
        let interfaces = try Command.run([CLI.path, "interfaces", "--namespace", name, "--json"])
        #expect(interfaces.status == 0)
        let names = try #require(
            try JSONSerialization.jsonObject(with: Data(interfaces.stdout.utf8)) as? [[String: Any]]
        ).compactMap { $0["name"] as? String }
        #expect(Set(names) == ["lo", "veth0", "veth1", "veth2", "veth3"])
    }

    @Test("watch --namespace: the namespace deleted under it → a message and exit 1, not the old state forever")
    func watchNamespaceDeleted() throws {
        let (ns, dns, name) = try setUp("rtest-cliwg")
        defer { withExtendedLifetime((ns, dns)) {} }
        let watch = try Child([CLI.path, "watch", "--json", "--namespace", name], captureOutput: true)
        guard let line = watch.nextLine(timeout: 15) else {
            let status = watch.wait()
            Issue.record("no first line: exit \(status), \(watch.readAll())")
            return
        }
        let first = try jsonObject(line)
        #expect(first["reachable"] as? Bool == true)
        try Command.check(["ip", "netns", "del", name])
        #expect(watch.wait() == 1)
        let (_, stderr) = watch.readAll()
        #expect(stderr.contains("network namespace /run/netns/\(name) was deleted"), "\(stderr)")
    }

    @Test("wait --namespace and wait --connectivity --namespace: the namespace deleted → a message and exit 1")
    func waitNamespaceDeleted() throws {
        let (ns, dns, name) = try setUp("rtest-cliww")
        defer { withExtendedLifetime(dns) {} }
        try ns.ip("link set veth1 down")  // nothing is reachable: wait waits
        let wait = try Child([CLI.path, "wait", "--timeout", "60", "--namespace", name], captureOutput: true)
        // A silent endpoint keeps the connectivity wait waiting too.
        let connectivity = try Child(
            [
                CLI.path, "wait", "--connectivity", "--timeout", "60", "--namespace", name, "--url",
                "http://192.0.2.2:9/generate_204", "--probe-timeout", "1",
            ], captureOutput: true)
        try eventuallyBlocking("both waits watch the namespace") {
            [wait, connectivity].allSatisfy { $0.hasThread(named: "reachability-nl") }
        }
        try Command.check(["ip", "netns", "del", name])
        // 1 once watching; 2 when it went away while the command was still starting
        // (the reader thread exists a moment before the namespace is watched). Either
        // way it says why, at once: before the fix, a deletion in that moment went
        // unseen and the wait ran out its timeout silently.
        let waitStatus = wait.wait()
        let waitOutput = wait.readAll()
        #expect(waitStatus == 1 || waitStatus == 2, "\(waitStatus)")
        #expect(waitOutput.1.contains("was deleted"), "\(waitOutput)")
        let connectivityStatus = connectivity.wait()
        let connectivityOutput = connectivity.readAll()
        #expect(connectivityStatus == 1 || connectivityStatus == 2, "\(connectivityStatus)")
        #expect(connectivityOutput.1.contains("was deleted"), "\(connectivityOutput)")
    }

    @Test(
        "watch --connectivity and wait --connectivity with no path: the namespace deleted → a message and exit 1 at once",
        arguments: [["watch", "--json"], ["wait", "--timeout", "60"]])
    func connectivityNamespaceDeletedWithoutPath(_ command: [String]) throws {
        // No route at all: the verdict is notConnected from the start, so the
        // namespace's deletion changes no verdict (before the fix nothing noticed it:
        // watch ran on, wait ran out its timeout).
        let ns = try TestNamespace(named: "rtest-clicn")
        let name = try #require(ns.name)
        let child = try Child(
            [CLI.path] + command + [
                "--connectivity", "--namespace", name, "--url", "http://192.0.2.2:9/generate_204",
            ], captureOutput: true)
        if command[0] == "watch" {
            let first = child.nextLine(timeout: 15)
            #expect(first?.contains("notConnected") == true, "\(first ?? "no first line")")
        } else {
            try eventuallyBlocking("wait watches the namespace") { child.hasThread(named: "reachability-nl") }
        }
        try Command.check(["ip", "netns", "del", name])
        // A command that misses the deletion runs on (watch) or to its timeout (wait):
        // given 20 s, far more than noticing takes, it is then stopped and fails here.
        let ended = child.wait(timeout: 20)
        let missed = ended == nil
        if missed { child.signal(SIGKILL) }
        let status = ended ?? child.wait()
        let (_, stderr) = child.readAll()
        #expect(!missed, "still running 20 s after the namespace was deleted")
        // 1 once watching: "was deleted". 2 when it went away while the command was
        // still starting (its checker's reader thread, which the test waits for, comes a
        // moment before the namespace watch that ends the command is in place): then
        // the start itself fails, "was deleted" or, caught between `ip netns del`'s
        // unmount and unlink, "is not usable". Either way at once, saying which.
        #expect(status == 1 || status == 2, "\(status): \(stderr)")
        let deleted = stderr.contains("network namespace /run/netns/\(name) was deleted")
        let unusable = status == 2 && stderr.contains("network namespace /run/netns/\(name) is not usable")
        #expect(deleted || unusable, "\(stderr)")
    }

    @Test("A host named `internet` is a host; @internet (or no TARGET) is the Internet: status, watch, exporter labels")
    func internetIsAHostname() throws {
        let (ns, dns, name) = try setUp("rtest-cliin")
        defer { withExtendedLifetime(dns) {} }
        try ns.ip("route add unreachable 203.0.113.0/24")
        try ns.writeEtc("hosts", "127.0.0.1 localhost\n203.0.113.7 internet\n")
        for spelling in ["internet", "INTERNET"] {
            let host = try Command.run([CLI.path, "status", spelling, "--namespace", name, "--json"])
            #expect(host.status == 1, "\(spelling): \(host)")
            let object = try jsonObject(host.stdout)
            #expect(object["target"] as? String == spelling && object["status"] as? String == "notReachable")
            #expect(host.stderr.contains("is a hostname here; the Internet is @internet"), "\(host.stderr)")
        }
        for arguments in [["status", "@internet"], ["status"], ["@internet"]] {
            let route = try Command.run([CLI.path] + arguments + ["--namespace", name, "--json"])
            #expect(route.status == 0, "\(arguments): \(route)")
            #expect(try jsonObject(route.stdout)["target"] as? String == "@internet", "\(arguments)")
            #expect(!route.stderr.contains("note:"), "\(route.stderr)")
        }
        let watch = try Child(
            [CLI.path, "watch", "--json", "internet", "@internet", "--namespace", name], captureOutput: true)
        defer { watch.terminate() }
        var seen: [String: Bool] = [:]
        while seen.count < 2, let line = watch.nextLine(timeout: 15) {
            let object = try jsonObject(line)
            if let target = object["target"] as? String { seen[target] = object["reachable"] as? Bool }
        }
        #expect(seen == ["internet": false, "@internet": true])
        // The exporter's series: one label each, told apart.
        let exporter = try Child(
            [
                "sh", "-c", "exec \"$0\" \"$@\" 2>&1", CLI.path, "exporter", "--listen", "127.0.0.1:0", "internet",
                "@internet", "--namespace", name,
            ], captureOutput: true)
        defer { exporter.terminate() }
        var url: String?
        while url == nil, let line = exporter.nextLine(timeout: 30) {
            if let range = line.range(of: "listening on ") { url = String(line[range.upperBound...]) }
        }
        let metricsURL = try #require(url, "the exporter never listened")
        // A hostname's series appear with its first state, after its resolution.
        var metrics = try Command.run(["curl", "-sS", metricsURL])
        try eventuallyBlocking("the hostname's series") {
            metrics = (try? Command.run(["curl", "-sS", metricsURL])) ?? metrics
            return metrics.stdout.contains("reachability_reachable{target=\"internet\"}")
        }
        #expect(RunningExporter.value(metrics.stdout, "reachability_reachable{target=\"internet\"}") == 0, "\(metrics)")
        #expect(
            RunningExporter.value(metrics.stdout, "reachability_reachable{target=\"@internet\"}") == 1, "\(metrics)")
    }

    @Test("watch of a round-robin name: one line per real change, then quiet (not thousands)")
    func watchRoundRobin() throws {
        let (ns, dns, name) = try setUp("rtest-clirr")
        try dns.set("rr.rtest", answers: [["192.0.2.10"], ["198.51.100.10"]])
        let watch = try Child([CLI.path, "watch", "--json", "rr.rtest", "--namespace", name], captureOutput: true)
        #expect(watch.nextLine(timeout: 15) != nil, "the first line")
        let before = try dns.queries("rr.rtest")
        try ns.ip("addr add 203.0.113.1/24 dev veth2")
        let printed = lines(of: watch, quiet: 3)
        #expect(printed.count <= 3, "\(printed.count) lines after one change")
        let queries = try dns.queries("rr.rtest") - before
        #expect(queries <= 6, "\(queries) queries after one change")
        watch.signal(SIGTERM)
        #expect(watch.wait() == 0)
    }

    @Test("status of a name not resolved within --timeout: the provisional route state, marked, and exit 1")
    func statusProvisional() throws {
        let (ns, dns, name) = try setUp("rtest-cliprov")
        try dns.stall("slow.rtest")
        let result = try Command.run([
            CLI.path, "status", "slow.rtest", "--namespace", name, "--timeout", "1", "--json",
        ])
        #expect(result.status == 1, "\(result)")
        let object = try jsonObject(result.stdout)
        #expect(object["provisional"] as? Bool == true)
        #expect(object["status"] as? String == "reachableViaWiFi", "the Internet route's state")
        let text = try Command.run([CLI.path, "status", "slow.rtest", "--namespace", name, "--timeout", "1"])
        #expect(text.status == 1 && text.stdout.contains("(provisional)"), "\(text)")
        withExtendedLifetime(ns) {}
    }

    @Test("A mistyped subcommand that does not resolve gets a did-you-mean; a name that resolves does not")
    func didYouMean() throws {
        let (ns, _, name) = try setUp("rtest-clityp")
        for (typo, meant) in [("wacth", "watch"), ("stauts", "status"), ("interface", "interfaces"), ("chek", "check")]
        {
            let result = try Command.run([CLI.path, typo, "--namespace", name, "--timeout", "5"])
            #expect(result.status == 1, "\(typo): \(result)")
            #expect(result.stderr.contains("did you mean `reachability \(meant)`?"), "\(typo): \(result.stderr)")
        }
        try ns.writeEtc("hosts", "192.0.2.7 wacth\n")
        let real = try Command.run([CLI.path, "wacth", "--namespace", name])
        #expect(real.status == 0, "\(real)")
        #expect(!real.stderr.contains("did you mean"))
        let far = try Command.run([CLI.path, "nothing-like-it", "--namespace", name, "--timeout", "5"])
        #expect(far.status == 1 && !far.stderr.contains("did you mean"))
    }

    @Test("Interface names with terminal controls: \\xNN in text (interfaces, status, watch), \\uXXXX in JSON")
    func terminalControlsInInterfaceNames() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        // A name may hold any byte but `/`, `:` and whitespace: ESC [ 31 m turns the
        // terminal red, U+202E makes what follows read right to left.
        let (red, reversed) = ("e\u{1B}[31mRED", "r\u{202E}x")
        try ns.addVeth(red, peer: "p0", address: "192.0.2.1/24")
        try ns.addVeth(reversed, peer: "p1", address: "198.51.100.1/24")
        let (redShown, reversedShown) = (#"e\x1b[31mRED"#, #"r\xe2\x80\xaex"#)
        func clean(_ output: String) -> Bool { !output.unicodeScalars.contains { isTerminalControl($0) && $0 != "\n" } }

        let interfaces = try ns.cli(["interfaces"])
        #expect(interfaces.status == 0, "\(interfaces.stderr)")
        #expect(
            clean(interfaces.stdout) && interfaces.stdout.contains(redShown), "\(interfaces.stdout.debugDescription)")
        #expect(interfaces.stdout.contains(reversedShown), "\(interfaces.stdout.debugDescription)")
        let status = try ns.cli(["status", "198.51.100.9"])
        #expect(
            clean(status.stdout) && status.stdout.contains("interface:  \(reversedShown)"),
            "\(status.stdout.debugDescription)")

        let json = try ns.cli(["interfaces", "--json"])
        #expect(clean(json.stdout) && json.stdout.contains(#"e\u001b[31mRED"#) && json.stdout.contains(#"r\u202ex"#))
        let array = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]
        let names = try #require(array).compactMap { $0["name"] as? String }
        #expect(names.contains(red) && names.contains(reversed), "the JSON decodes to the names: \(names)")

        let watch = try ns.spawnCLI(["watch", "192.0.2.9"])
        defer { watch.terminate() }
        let line = watch.nextLine(timeout: 30) ?? ""
        #expect(clean(line) && line.contains(redShown), "\(line.debugDescription)")
    }
}
