import Foundation
import Reachability
@_spi(Testing) import ReachabilitySystem
import Testing

@testable import ReachabilityCommands
@_spi(Testing) @testable import ReachabilityCore

/// Which nameservers `wait --dns` asks: those the C library
/// would, the first 3 distinct in file order, however many lines resolv.conf has;
/// and what it says when none answered.
@Suite struct ResolverServersTests {
    @Test("the first 3 distinct addresses in file order; repeats and unparsable entries skipped; the rest counted")
    func firstThreeDistinct() {
        let text = """
            # a comment
            search example.test
            nameserver 192.0.2.1
            nameserver\t192.0.2.1
              nameserver not-an-address
            nameserver 2001:db8::1
            nameserver 2001:0db8::1
            nameserver
            nameservers 192.0.2.9
            nameserver 192.0.2.1 # trailing words
            nameserver 198.51.100.1\r
            nameserver 203.0.113.1
            """
        let (servers, notAsked) = ResolverCheck.serversToAsk(resolvConf: text)
        #expect(servers.map(\.text) == ["192.0.2.1", "2001:db8::1", "198.51.100.1"])
        #expect(notAsked == 5, "two repeats, the bad entry, 2001:0db8::1 (the same address), 203.0.113.1")
        #expect(ResolverCheck.maximumServers == 3)

        let identical = ResolverCheck.serversToAsk(
            resolvConf: String(repeating: "nameserver 192.0.2.53\n", count: 5000))
        #expect(identical.servers.map(\.text) == ["192.0.2.53"] && identical.notAsked == 4999)
        #expect(ResolverCheck.serversToAsk(resolvConf: "").servers.isEmpty)
        let bogus = ResolverCheck.serversToAsk(resolvConf: "nameserver bogus\nnameserver also-bogus")
        #expect(bogus.servers.isEmpty && bogus.notAsked == 2)
    }

    @Test(
        "the entries are the ones the path monitor's NameserverRule reads (same lines, same words)",
        arguments: [
            "nameserver 192.0.2.1\nnameserver 192.0.2.2\n", "\tnameserver   192.0.2.1  x\r\nnameserver 192.0.2.1",
            "nameserver\nnameserver \nNAMESERVER 192.0.2.1\nnameserver 192.0.2.3", "# nameserver 192.0.2.1\n",
            "options ndots:1\nnameserver 127.0.0.53\nnameserver ::1\nnameserver fe80::1%lo\nnameserver 10.0.0.1\n",
        ])
    func agreesWithNameserverRule(_ text: String) {
        let entries = NameserverRule.nameservers(in: text)
        let (servers, notAsked) = ResolverCheck.serversToAsk(resolvConf: text)
        #expect(servers.count + notAsked == entries.count, "\(entries)")
        var expected: [String] = []
        for entry in entries where expected.count < 3 && !expected.contains(entry) {
            if let address = try? IPAddress(entry), !expected.contains(where: { (try? IPAddress($0)) == address }) {
                expected.append(entry)
            }
        }
        #expect(servers.map(\.text) == expected)
    }

    @Test("10 nameservers that all refuse: 3 sockets, 3 reasons, 7 lines not asked, and the report says so")
    func refusedServers() throws {
        let lines = (1...10).map { "nameserver 192.0.2.\($0)\n" }.joined()
        let root = try LeaseFilesTests.root(["resolv.conf": lines])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let faults = SystemCallFaults()
        var environment = NetworkEnvironment()
        environment.systemCalls = SystemCalls(faults: faults)
        faults.inject(.connect, errno: ECONNREFUSED, count: .always)

        let report = try ResolverCheck.run(environment: environment, resolvConf: root + "/resolv.conf")
        #expect(faults.attempts(.socket) == 3)
        #expect(report.asked == ["192.0.2.1", "192.0.2.2", "192.0.2.3"])
        #expect(report.notAsked == 7)
        #expect(
            report.outcome
                == .noAnswer((1...3).map { "192.0.2.\($0): connect: \(ReachabilityError.strerror(ECONNREFUSED))" }))
        #expect(
            report.description
                == "\(report.outcome) (the first 3 distinct nameservers of \(root)/resolv.conf, as the C library "
                + "asks at most 3; 7 other nameserver lines not asked)")
    }

    @Test("the report of a file with no nameserver, or of one server with no lines left out, is the outcome alone")
    func plainReports() {
        let none = ResolverCheck.Report(
            outcome: .noServers(resolvConf: "/etc/resolv.conf"), resolvConf: "/etc/resolv.conf", asked: [],
            notAsked: 2)
        #expect(none.description == "no nameserver in /etc/resolv.conf")
        let one = ResolverCheck.Report(
            outcome: .noAnswer(["192.0.2.1: no reply within 1000 ms"]), resolvConf: "/etc/resolv.conf",
            asked: ["192.0.2.1"], notAsked: 0)
        #expect(one.description == "192.0.2.1: no reply within 1000 ms")
    }
}
