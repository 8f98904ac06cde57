import Foundation
import Glibc
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityBase
@_spi(Testing) @testable import ReachabilityCore

/// The pure path evaluation: ordering, filters, reasons, gateways, families, DNS.
@Suite struct PathEvaluatorTests {
    static let v4 = IPAddress.internetProbeV4
    static let v6 = IPAddress.internetProbeV6

    /// eth0 (#2, wired), wlan0 (#3, Wi-Fi), wwan0 (#4, cellular), each with an IPv4 address.
    static func table() throws -> InterfaceTable {
        try TableBuilder()
            .link(
                1, "lo", flags: LinkFlags.usable | IFF.loopback, operState: IFOper.unknown,
                as: InterfaceClassification(.loopback)
            )
            .address(1, "127.0.0.1/8")
            .link(2, "eth0").address(2, "192.0.2.10/24")
            .link(3, "wlan0", as: InterfaceClassification(.wifi)).address(3, "198.51.100.10/24")
            .link(4, "wwan0", as: InterfaceClassification(.cellular)).address(4, "203.0.113.10/24")
            .table
    }

    static func defaultRoute(oif: Int32, gateway: String, metric: UInt32) throws -> LookupResult {
        var route = RouteMessage(
            family: AddressFamily.inet, type: RTN.unicast, table: 254, destinationLength: 0, outputInterface: oif,
            hasGateway: true, preferredSource: nil, priority: metric)
        route.gateway = try IPAddress(gateway)
        return .route(route)
    }

    /// Answers every lookup of `evaluator`: per-interface default routes from `routes`
    /// (index → (gateway, metric)), and the kernel's own choice: the lowest metric.
    static func answer(_ evaluator: PathEvaluator, _ table: InterfaceTable, routes: [Int32: (String, UInt32)]) throws
        -> ([LookupRequest], [LookupResult])
    {
        let requests = evaluator.lookups(for: table)
        let chosen = routes.min { $0.value.1 < $1.value.1 }
        let results = try requests.map { request -> LookupResult in
            guard request.destination.family == .ipv4 else { return Lookup.noRoute }
            if let oif = request.outputInterface {
                guard let (gateway, metric) = routes[oif] else { return Lookup.noRoute }
                return try defaultRoute(oif: oif, gateway: gateway, metric: metric)
            }
            guard let chosen else { return Lookup.noRoute }
            return try defaultRoute(oif: chosen.key, gateway: chosen.value.0, metric: chosen.value.1)
        }
        return (requests, results)
    }

    static func evaluator(required: InterfaceType? = nil, prohibited: Set<InterfaceType> = []) -> PathEvaluator {
        PathEvaluator(requiredInterfaceType: required, prohibitedInterfaceTypes: prohibited, options: .init())
    }

    @Test("Lookups: the two Internet probes, then fibmatch + oif per up non-loopback interface")
    func lookups() throws {
        let requests = Self.evaluator().lookups(for: try Self.table())
        #expect(requests.count == 2 + 3 * 2)
        #expect(requests.prefix(2).allSatisfy { $0.outputInterface == nil && !$0.fibMatch })
        #expect(requests.dropFirst(2).allSatisfy { $0.fibMatch && $0.outputInterface != nil })
        #expect(Set(requests.compactMap(\.outputInterface)) == [2, 3, 4])
    }

    @Test("Order: the kernel's choice first, then metric, then type; gateways in the same order")
    func ordering() throws {
        let table = try Self.table()
        let evaluator = Self.evaluator()
        let routes: [Int32: (String, UInt32)] = [
            3: ("198.51.100.1", 50), 2: ("192.0.2.1", 100), 4: ("203.0.113.1", 100),
        ]
        let (requests, results) = try Self.answer(evaluator, table, routes: routes)
        let path = evaluator.evaluate(requests: requests, results: results, in: table, dnsConfigured: true)
        #expect(path.status == .satisfied)
        #expect(path.availableInterfaces.map(\.name) == ["wlan0", "eth0", "wwan0"])
        #expect(path.gateways.map(\.description) == ["198.51.100.1", "192.0.2.1", "203.0.113.1"])
        #expect(path.usesInterfaceType(.wifi) && !path.isExpensive && path.supportsIPv4 && !path.supportsIPv6)
        #expect(path.supportsDNS)
        #expect(
            evaluator.evaluate(requests: requests, results: results, in: table, dnsConfigured: false).supportsDNS
                == false)
    }

    @Test("Filters: required type, prohibited types, and the unsatisfied reason they cause")
    func filters() throws {
        let table = try Self.table()
        let onlyCellular: [Int32: (String, UInt32)] = [4: ("203.0.113.1", 100)]
        for (evaluator, expected) in [
            (Self.evaluator(prohibited: [.cellular]), NetworkPath.UnsatisfiedReason.cellularDenied),
            (Self.evaluator(required: .wifi), .cellularDenied),
        ] {
            let (requests, results) = try Self.answer(evaluator, table, routes: onlyCellular)
            let path = evaluator.evaluate(requests: requests, results: results, in: table, dnsConfigured: true)
            #expect(path.status == .unsatisfied)
            #expect(path.unsatisfiedReason == expected)
            #expect(!path.supportsDNS)
            #expect(!path.availableInterfaces.contains { $0.type == .cellular })
        }
        let wifiOnly: [Int32: (String, UInt32)] = [3: ("198.51.100.1", 100)]
        let noWiFi = Self.evaluator(prohibited: [.wifi])
        let (requests, results) = try Self.answer(noWiFi, table, routes: wifiOnly)
        #expect(
            noWiFi.evaluate(requests: requests, results: results, in: table, dnsConfigured: true).unsatisfiedReason
                == .wifiDenied)
        // Nothing has a route at all: notAvailable.
        let (r2, res2) = try Self.answer(Self.evaluator(), table, routes: [:])
        #expect(
            Self.evaluator().evaluate(requests: r2, results: res2, in: table, dnsConfigured: true)
                == NetworkPath(
                    status: .unsatisfied, unsatisfiedReason: .notAvailable,
                    availableInterfaces: ["eth0", "wlan0", "wwan0"].enumerated().map {
                        NetworkInterface(
                            name: $0.element, index: $0.offset + 2,
                            type: [.wiredEthernet, .wifi, .cellular][$0.offset])
                    }))
    }

    @Test("A multipath route's gateway is the next hop's out of that interface")
    func multipathGateway() throws {
        var route = RouteMessage(
            family: AddressFamily.inet, type: RTN.unicast, table: 254, destinationLength: 0, outputInterface: nil,
            hasGateway: true, preferredSource: nil, priority: nil)
        route.nexthops = [
            .init(outputInterface: 2, gateway: try IPAddress("192.0.2.1")),
            .init(outputInterface: 3, gateway: try IPAddress("198.51.100.1")),
        ]
        #expect(route.gateway(via: 3)?.description == "198.51.100.1")
        #expect(route.gateway(via: 2)?.description == "192.0.2.1")
        #expect(route.gateway(via: 4) == nil)
    }

    @Test("DNS configuration: nameserver lines; systemd-resolved's stub needs upstream servers")
    func dnsConfiguration() throws {
        let dir = NSTemporaryDirectory() + "rtest-dns-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func file(_ name: String, _ text: String) throws -> String {
            try text.write(toFile: "\(dir)/\(name)", atomically: true, encoding: .utf8)
            return "\(dir)/\(name)"
        }
        let plain = try file("plain", "search example\nnameserver\t192.0.2.53\n")
        let none = try file("none", "# nameserver 192.0.2.53\nsearch example\n")
        let stub = try file("stub", "nameserver 127.0.0.53\noptions edns0\n")
        let upstream = try file("upstream", "nameserver 192.0.2.1\n")
        let upstreamEmpty = try file("upstream-empty", "# no servers\n")
        #expect(DNSConfiguration(resolvConf: plain).isConfigured)
        #expect(!DNSConfiguration(resolvConf: none).isConfigured)
        #expect(!DNSConfiguration(resolvConf: "\(dir)/missing").isConfigured)
        #expect(DNSConfiguration(resolvConf: stub, resolvedUpstream: upstream).isConfigured)
        #expect(!DNSConfiguration(resolvConf: stub, resolvedUpstream: upstreamEmpty).isConfigured)
        #expect(DNSConfiguration.nameservers(in: plain) == ["192.0.2.53"])
        // A FIFO or a directory where resolv.conf should be is "not configured",
        // at once: reading must not block an evaluation.
        let fifo = "\(dir)/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(!DNSConfiguration(resolvConf: fifo).isConfigured)
        #expect(!DNSConfiguration(resolvConf: dir).isConfigured)
    }

    @Test("resolv.conf over 1 MiB: its first MiB is read (the file is not refused); a nameserver line past it is not")
    func resolvConfOver1MiB() throws {
        let dir = NSTemporaryDirectory() + "rtest-dns-big-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let limit = DNSConfiguration.sizeLimit
        #expect(limit == 1 << 20)
        /// `before` bytes of comment lines, the line, then `after` bytes of comments.
        func file(_ name: String, _ line: String, at before: Int, then after: Int = 1 << 20) throws -> String {
            func comments(_ count: Int) -> String {
                count == 0 ? "" : "#" + String(repeating: "x", count: count - 2) + "\n"
            }
            let path = "\(dir)/\(name)"
            try (comments(before) + line + comments(after)).write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let server = "nameserver 192.0.2.53\n"
        let first = try file("first", server, at: 0)
        let ends = try file("ends", server, at: limit - server.utf8.count)  // its newline is the MiB's last byte
        let past = try file("past", server, at: limit)
        let cut = try file("cut", server, at: limit - "nameserver".utf8.count)  // the word alone fits
        #expect(DNSConfiguration(resolvConf: first).isConfigured, "2 MiB: not refused as too large")
        #expect(DNSConfiguration(resolvConf: ends).isConfigured)
        #expect(!DNSConfiguration(resolvConf: past).isConfigured)
        #expect(!DNSConfiguration(resolvConf: cut).isConfigured, "a line cut at the limit has no address")
        #expect(DNSConfiguration.nameservers(in: ends) == ["192.0.2.53"])
        #expect(DNSConfiguration.nameservers(in: past) == [])
        // Behind resolved's stub the upstream file has the same bound.
        let stub = try file("stub", "nameserver 127.0.0.53\n", at: 0, then: 0)
        #expect(DNSConfiguration(resolvConf: stub, resolvedUpstream: ends).isConfigured)
        #expect(!DNSConfiguration(resolvConf: stub, resolvedUpstream: past).isConfigured)
    }

    @Test("The nameserver rule is pure: it reads no file and asks for the upstream list only behind the stub")
    func nameserverRule() {
        var asked = 0
        let upstream: () -> String? = {
            asked += 1
            return "nameserver 192.0.2.1\n"
        }
        #expect(NameserverRule.isConfigured(resolvConf: "nameserver 192.0.2.53\n", resolvedUpstream: upstream))
        #expect(asked == 0)
        #expect(!NameserverRule.isConfigured(resolvConf: nil, resolvedUpstream: upstream))
        #expect(
            !NameserverRule.isConfigured(resolvConf: "nameserver\n#nameserver 1.2.3.4\n", resolvedUpstream: upstream))
        #expect(asked == 0)
        #expect(NameserverRule.isConfigured(resolvConf: "nameserver 127.0.0.53\n", resolvedUpstream: upstream))
        #expect(asked == 1)
        #expect(!NameserverRule.isConfigured(resolvConf: "nameserver 127.0.0.54\n", resolvedUpstream: { nil }))
        #expect(
            !NameserverRule.isConfigured(
                resolvConf: "nameserver 127.0.0.53\n", resolvedUpstream: { "nameserver 127.0.0.53\n" }))
        #expect(
            NameserverRule.nameservers(in: "nameserver  192.0.2.7 \r\nnameserver 2001:db8::1") == [
                "192.0.2.7", "2001:db8::1",
            ])
    }

    @Test("Wi-Fi: the lead's nl80211 signal is the path's link quality, its SSID part of the identity")
    func wirelessLead() throws {
        var table = try Self.table()
        let evaluator = Self.evaluator()
        let status = WirelessStatus(ssidBytes: Array("Cafe".utf8), signalDBm: -55)
        let first = table.setWireless(status, of: 3)
        let again = table.setWireless(status, of: 3)
        #expect(first)
        #expect(!again, "the same status is no change")
        let (requests, results) = try Self.answer(evaluator, table, routes: [3: ("198.51.100.1", 100)])
        let path = evaluator.evaluate(requests: requests, results: results, in: table, dnsConfigured: true)
        #expect(path.availableInterfaces.first?.name == "wlan0")
        #expect(path.linkQuality == .good)
        #expect(path.networkIdentity?.ssid == "Cafe")
        #expect(path.networkIdentity?.description.hasPrefix("wlan0 ssid \"Cafe\" via 198.51.100.1") == true)

        // Another network name behind the same gateway: another identity.
        _ = table.setWireless(WirelessStatus(ssidBytes: Array("Airport".utf8), signalDBm: -78), of: 3)
        let roamed = evaluator.evaluate(requests: requests, results: results, in: table, dnsConfigured: true)
        #expect(roamed.linkQuality == .minimal || roamed.linkQuality == .moderate)
        #expect(roamed.networkIdentity?.id != path.networkIdentity?.id)

        // A wired lead has no link quality, whatever the Wi-Fi link says.
        let (wiredRequests, wiredResults) = try Self.answer(
            evaluator, table, routes: [2: ("192.0.2.1", 10), 3: ("198.51.100.1", 100)])
        let wired = evaluator.evaluate(requests: wiredRequests, results: wiredResults, in: table, dnsConfigured: true)
        #expect(wired.availableInterfaces.first?.name == "eth0")
        #expect(wired.linkQuality == .unknown)
        #expect(wired.networkIdentity?.ssid == nil)
    }
}
