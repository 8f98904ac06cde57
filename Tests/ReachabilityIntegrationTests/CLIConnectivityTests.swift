import Foundation
import Reachability
import Testing

extension TestNamespace {
    /// ``cli(_:)`` on a thread of its own (it blocks until the CLI exits).
    func cliOffPool(_ arguments: [String]) async throws -> Command.Output {
        try await offPool { try self.cli(arguments) }
    }
}

/// `reachability check` and `reachability wait --connectivity`, run as built,
/// inside test namespaces, against SwiftNIO servers there.
@Suite("The reachability CLI's connectivity commands", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct CLIConnectivityTests {
    @Test("check --json: online exits 0, a portal exits 1 with its login URL, in the documented shape")
    func checkJSON() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp([
            "/generate_204": .respond(status: 204),
            "/portal": .respond(status: 302, headers: ["Location": "http://10.9.9.9/login"]),
        ])
        let online = try await ns.cliOffPool(["check", "--url", server.url("/generate_204").absoluteString, "--json"])
        #expect(online.status == 0, "\(online.stderr)")
        let object = try jsonObject(online.stdout)
        #expect(object["verdict"] as? String == "online")
        #expect(object["loginURL"] is NSNull)
        #expect(object["status"] as? String == "connectedViaEthernet")
        let endpoint = try #require((object["endpoints"] as? [[String: Any]])?.first)
        #expect(endpoint["url"] as? String == server.url("/generate_204").absoluteString)
        #expect(endpoint["ok"] as? Bool == true)
        #expect(endpoint["httpStatus"] as? Int == 204)
        #expect(endpoint["error"] is NSNull)
        #expect(endpoint["millis"] is Int)

        let portal = try await ns.cliOffPool(["check", "--url", server.url("/portal").absoluteString, "--json"])
        #expect(portal.status == 1)
        let verdict = try jsonObject(portal.stdout)
        #expect(verdict["verdict"] as? String == "captivePortal")
        #expect(verdict["loginURL"] as? String == "http://10.9.9.9/login")
        #expect(verdict["status"] as? String == "connectedViaEthernetWithoutInternet")
        let failed = try #require((verdict["endpoints"] as? [[String: Any]])?.first)
        #expect(failed["ok"] as? Bool == false && failed["httpStatus"] as? Int == 302)
        #expect((failed["error"] as? String)?.contains("302") == true)
    }

    @Test("check: --expect-body, --header and the text form; no path → notConnected without a probe")
    func checkText() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp([
            "/ncsi.txt": .respond(status: 200, body: "Microsoft NCSI")
        ])
        let output = try await ns.cliOffPool([
            "check", "--url", server.url("/ncsi.txt").absoluteString, "--expect-body", "Microsoft NCSI",
            "--header", "Authorization: Bearer t0ken",
        ])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.hasPrefix("verdict: online"))
        #expect(output.stdout.contains("ok    \(server.url("/ncsi.txt").absoluteString)"))
        #expect(server.requests.first?.headers["authorization"] == "Bearer t0ken")

        let (isolated, silent) = try await offPool {
            let isolated = try TestNamespace()
            return (isolated, try TestHTTPServer(in: isolated, routes: ["/generate_204": .respond(status: 204)]))
        }
        let none = try await isolated.cliOffPool([
            "check", "--url", silent.url("/generate_204").absoluteString, "--json",
        ])
        #expect(none.status == 1)
        #expect(try jsonObject(none.stdout)["verdict"] as? String == "notConnected")
        #expect(silent.requests.isEmpty)
    }

    @Test("check: a name that does not resolve says so in words, scoped or not, without SwiftNIO's error text")
    func unresolvableName() async throws {
        let (ns, _) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .respond(status: 204)])
        // The host's name servers refused at once inside the namespace: the lookup
        // fails now rather than timing out.
        let resolvConf = (try? String(contentsOfFile: "/etc/resolv.conf", encoding: .utf8)) ?? ""
        for line in resolvConf.split(separator: "\n") {
            let words = line.split(whereSeparator: \.isWhitespace)
            guard words.count >= 2, words[0] == "nameserver", !words[1].hasPrefix("127."),
                (try? IPAddress(String(words[1])))?.family == .ipv4
            else { continue }
            try await offPool { try ns.ip("route add prohibit \(words[1])/32") }
        }
        let url = "http://no-such-name.invalid/generate_204"
        for extra in [[], ["--interface", "veth0"]] {
            let output = try await ns.cliOffPool(["check", "--url", url, "--deadline", "5"] + extra)
            #expect(output.status == 1)
            #expect(output.stdout.contains("no-such-name.invalid does not resolve"), "\(extra): \(output.stdout)")
            #expect(!output.stdout.contains("SocketAddressError") && !output.stdout.contains("NIO"), "\(output.stdout)")
        }
    }

    @Test(
        "check and wait: bad options exit 2 with a message",
        arguments: [
            ["check", "--url", "ftp://x.test/"],
            ["check", "--url", "not a url at all"],
            ["check", "--url", "http://x.test/", "--expect-status", "204", "--expect-body", "ok"],
            ["check", "--expect-status", "204"],
            ["check", "--url", "http://x.test/", "--threshold", "101"],
            ["check", "--url", "http://x.test/", "--https-only"],
            ["check", "--url", "http://x.test/", "--expect-status", "1000"],
            ["check", "--url", "http://x.test/", "--header", "no colon"],
            ["check", "--url", "http://x.test/", "--header", "Bad Name: x"],
            ["check", "--url", "http://x.test/", "--probe-timeout", "-1"],
            ["check", "--url", "http://x.test/", "--deadline", "nan"],
            ["check", "--captive-api", "gopher://x.test/"],
            ["check", "--ca-file", "/nonexistent.pem"],
            ["wait", "--connectivity", "192.0.2.1"],
            ["wait", "--connectivity", "--ipv4"],
            ["wait", "--url", "http://x.test/"],
            ["wait", "--timeout", "1e300"],
            ["wait", "--connectivity", "--timeout", "-1"],
            ["status", "--timeout", "1e300"],
            ["check", "--url", "http://x.test/", "--probe-timeout", "1e300"],
        ])
    func badOptions(arguments: [String]) async throws {
        let output = try await offPool { try Command.run([CLI.path] + arguments) }
        #expect(output.status == 2, "\(arguments): \(output.stdout) \(output.stderr)")
        #expect(!output.stderr.isEmpty)
    }

    @Test("wait --connectivity: exits 0 once the endpoint turns healthy, 1 at the timeout when it never does")
    func waitConnectivity() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .respond(status: 500)])
        let url = server.url("/generate_204").absoluteString
        let waiting = try await offPool {
            try ns.spawn([CLI.path, "wait", "--connectivity", "--url", url, "--timeout", "20"])
        }
        try await eventually("the first check") { server.count("/generate_204") >= 1 }
        server.set("/generate_204", .respond(status: 204))
        #expect(try await offPool { waiting.wait() } == 0)

        server.set("/generate_204", .respond(status: 500))
        let started = ContinuousClock.now
        let timedOut = try await ns.cliOffPool(["wait", "--connectivity", "--url", url, "--timeout", "1.5"])
        #expect(timedOut.status == 1)
        #expect(ContinuousClock.now - started >= .milliseconds(1500))
    }

    @Test(
        "out of descriptors while probing (80 silent endpoints, 70 descriptors): check exits 2 naming EMFILE, no verdict",
        arguments: ["direct", "proxy", "hijack lookups"])
    func outOfDescriptorsWhileProbing(route: String) async throws {
        // Each silent probe (or lookup, its resolver never answering) holds a
        // descriptor until the probe timeout: the 80 can't all have one.
        let (ns, server, dns) = try await offPool { () throws -> (TestNamespace, TestHTTPServer, SilentDNSServer?) in
            guard route == "hijack lookups" else {
                let (ns, server) = try ConnectivityIntegrationTests.setUpBlocking([
                    "/silent": .silent, "http://proxied.rtest/silent": .silent,
                ])
                return (ns, server, nil)
            }
            let ns = try TestNamespace(named: "rtest-emfile")
            try ns.disableIPv6()
            try ns.ipv4WithDefaultRoute()
            return (ns, try TestHTTPServer(in: ns, routes: [:]), try SilentDNSServer(in: ns))
        }
        let proxy = server.url("/").absoluteString
        let urls = (1...80).flatMap { index -> [String] in
            switch route {
            case "direct": ["--url", server.url("/silent?n=\(index)").absoluteString]
            case "proxy": ["--url", "http://proxied.rtest/silent?n=\(index)"]
            default: ["--url", "http://n\(index).rtest/generate_204"]
            }
        }
        let options = route == "proxy" ? ["--proxy", proxy] : ["--no-proxy", "--namespace", ns.path]
        let output = try await offPool {
            try Command.run(
                ["nsenter", "--net=\(ns.path)", "--", "prlimit", "--nofile=70", "--", CLI.path, "check", "--json"]
                    + options + ["--probe-timeout", "2", "--deadline", "3"] + urls)
        }
        withExtendedLifetime(dns) {}
        #expect(output.status == 2, "exit \(output.status): \(output.stdout.prefix(600)) \(output.stderr)")
        #expect(output.stdout.isEmpty, "no verdict: \(output.stdout.prefix(600))")
        #expect(
            output.stderr.hasPrefix("reachability: cannot check connectivity: ")
                && output.stderr.contains("Too many open files (errno 24)"), "\(output.stderr)")
    }

    @Test(
        "NIO_SINGLETON_GROUP_LOOP_COUNT 0, negative, huge, not a number: check runs and answers",
        arguments: ["0", "-1", "1025", "100000", "2147483647", "99999999999999999999", "abc", "", " 2"])
    func singletonLoopCount(value: String) async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .respond(status: 204)])
        let output = try await offPool {
            try Command.run([
                "nsenter", "--net=\(ns.path)", "--", "env", "NIO_SINGLETON_GROUP_LOOP_COUNT=\(value)", CLI.path,
                "check",
                "--no-proxy", "--url", server.url("/generate_204").absoluteString,
            ])
        }
        #expect(output.status == 0, "\(value): \(output.stdout) \(output.stderr)")
        #expect(output.stdout.hasPrefix("verdict: online"), "\(value): \(output.stdout)")
    }
}
