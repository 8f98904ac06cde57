import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// A pass's lookups without a kernel: de-duplication, the answers back to each
/// plan, whether a carrier-only pass reuses the known answers, the gateways the
/// answers name, and what a pass leaves in the monitor's state. The real-kernel
/// tests (carrier loss with and without `ignore_routes_with_linkdown`) check the
/// same end to end.
@Suite struct LookupBatchTests {
    static func request(_ text: String, oif: Int32? = nil) throws -> LookupRequest {
        var request = LookupRequest(destination: try IPAddress(text))
        request.outputInterface = oif
        return request
    }

    /// Changes besides carrier and routes that rule out reusing or keeping answers.
    static var otherChanges: [(String, (inout PassCause) -> Void)] {
        [
            ("another interface change", { $0.otherInterfaceChange = true }),
            ("a route storm", { $0.manyRoutes = true }),
            ("a rule", { $0.rulesChanged = true }),
            ("a resync", { $0.resynced = true }),
            ("netconf", { $0.netconfChanged = true }),
            ("the resolver's files", { $0.resolverConfigurationChanged = true }),
            ("a gateway's neighbor", { $0.gatewayNeighborChanged = true }),
        ]
    }

    /// A distinct answer per number, to tell answers apart.
    static func answer(_ number: Int32) -> LookupResult { .noRoute(errno: number) }

    /// A carrier change alone on link 2.
    static var carrierOnly: PassCause {
        var cause = PassCause()
        cause.carrierChangedLinks = [2]
        cause.interfacesChanged = true
        return cause
    }

    static func route(oif: Int32?, gateway: String?, nexthops: [(Int32, String?)] = []) throws -> LookupResult {
        var route = RouteMessage(
            family: AddressFamily.inet, type: RTN.unicast, table: 254, destinationLength: 0, outputInterface: oif,
            hasGateway: gateway != nil, preferredSource: nil, priority: nil)
        route.gateway = try gateway.map { try IPAddress($0) }
        route.nexthops = try nexthops.map {
            RouteMessage.Nexthop(outputInterface: $0.0, gateway: try $0.1.map { try IPAddress($0) })
        }
        return .route(route)
    }

    @Test("A batch whose plans ask what the last batch's asked is that batch; any difference makes a new one")
    func reuseOfTheLastBatch() throws {
        let (a, b, c) = (try Self.request("192.0.2.1"), try Self.request("192.0.2.2"), try Self.request("2001:db8::1"))
        let plans = [[a, b], [b, c, a], [], [c]]
        let last = LookupBatch(plans)
        let same = LookupBatch(plans, unlessSameAs: last)
        #expect(same.requests == last.requests && same.planCount == 4)
        #expect(
            same.requests.withUnsafeBufferPointer { $0.baseAddress }
                == last.requests.withUnsafeBufferPointer {
                    $0.baseAddress
                }, "reused, not rebuilt")
        for changed in [
            [[a, b], [b, c, a], [], [a]], [[a, b], [b, c, a], [c]], [[a, b], [b, c], [], [c]],
            [[a, b], [b, c, a], [], [c], []], [[b, a], [b, c, a], [], [c]],
        ] {
            let batch = LookupBatch(changed, unlessSameAs: last)
            #expect(batch.planCount == changed.count)
            for (index, plan) in changed.enumerated() {
                #expect(batch.slots(ofPlan: index).map { batch.requests[$0] } == plan)
            }
        }
        #expect(LookupBatch(plans, unlessSameAs: nil).requests == last.requests)
        // Known answers to exactly the requests asked: all of them, as they were; in
        // another order or a part: searched, each its own.
        let known = KnownAnswers(
            slots: [a: 0, b: 1, c: 2], results: [Self.answer(1), Self.answer(2), Self.answer(3)], generation: 1)
        #expect(known.answers(for: [a, b, c]) == [Self.answer(1), Self.answer(2), Self.answer(3)])
        #expect(known.answers(for: [c, a]) == [Self.answer(3), Self.answer(1)])
        #expect(known.answers(for: [a, b, c, try Self.request("192.0.2.9")]) == nil)
    }

    @Test("Overlapping plans: each request asked once, in first-asked order; every plan's slots point at its own")
    func deduplication() throws {
        let (a, b, c) = (try Self.request("192.0.2.1"), try Self.request("192.0.2.2"), try Self.request("2001:db8::1"))
        let aOverEth0 = try Self.request("192.0.2.1", oif: 2)
        let plans = [[a, b], [b, c, a], [], [aOverEth0, a, a], [c]]
        let batch = LookupBatch(plans)
        #expect(batch.requests == [a, b, c, aOverEth0], "a lookup over an interface is another request")
        #expect(batch.slots == [a: 0, b: 1, c: 2, aOverEth0: 3])
        #expect(batch.planCount == 5)
        #expect(Array(batch.slots(ofPlan: 0)) == [0, 1])
        #expect(Array(batch.slots(ofPlan: 1)) == [1, 2, 0])
        #expect(batch.slots(ofPlan: 2).isEmpty)
        #expect(Array(batch.slots(ofPlan: 3)) == [3, 0, 0])
        #expect(Array(batch.slots(ofPlan: 4)) == [2])
        for (index, plan) in plans.enumerated() {
            #expect(batch.slots(ofPlan: index).map { batch.requests[$0] } == plan)
        }
        #expect(LookupBatch(plans).requests == batch.requests, "the order is stable")
        #expect(LookupBatch([[LookupRequest]]()).requests.isEmpty && LookupBatch([[a]]).planCount == 1)
    }

    @Test("The answers go back to each plan in its own order, shared answers to every plan that asked")
    func distribution() throws {
        let (a, b, c) = (try Self.request("192.0.2.1"), try Self.request("192.0.2.2"), try Self.request("192.0.2.3"))
        let batch = LookupBatch([[c, a], [a], [], [b, c, b]])
        #expect(batch.requests == [c, a, b])
        let answers = [Self.answer(3), Self.answer(1), Self.answer(2)]
        #expect(batch.answers(forPlan: 0, in: answers) == [Self.answer(3), Self.answer(1)])
        #expect(batch.answers(forPlan: 1, in: answers) == [Self.answer(1)])
        #expect(batch.answers(forPlan: 2, in: answers) == [])
        #expect(batch.answers(forPlan: 3, in: answers) == [Self.answer(2), Self.answer(3), Self.answer(2)])
    }

    @Test(
        "A carrier-only pass reuses the known answers, in the batch's order, after asking about its links and families")
    func reuseAllowed() throws {
        let (a, b, c) = (try Self.request("192.0.2.1"), try Self.request("192.0.2.2"), try Self.request("2001:db8::1"))
        let known = KnownAnswers(slots: [b: 0, a: 1], results: [Self.answer(2), Self.answer(1)], generation: 5)
        var asked: [(Set<Int32>, Set<UInt8>)] = []
        let batch = LookupBatch([[a], [b, a]])
        let outcome = batch.reuse(cause: Self.carrierOnly, known: known) { links, families in
            asked.append((links, families))
            return false
        }
        #expect(outcome == .reused([Self.answer(1), Self.answer(2)], gateways: []))
        #expect(asked.count == 1)
        #expect(asked.first?.0 == [2] && asked.first?.1 == [AddressFamily.inet])

        // Both families asked about: the netconf check covers both.
        var withV6 = known
        withV6.add([c], [Self.answer(6)], askedAt: 5, settled: true)
        var families: Set<UInt8> = []
        let both = LookupBatch([[a, c]]).reuse(cause: Self.carrierOnly, known: withV6) {
            families = $1
            return false
        }
        #expect(both?.answers == [Self.answer(1), Self.answer(6)])
        #expect(families == [AddressFamily.inet, AddressFamily.inet6])
    }

    @Test("No reuse without known answers, with a request not known, or when linkdown routes may be ignored")
    func reuseRefused() throws {
        let (a, b) = (try Self.request("192.0.2.1"), try Self.request("192.0.2.2"))
        let known = KnownAnswers(slots: [a: 0], results: [Self.answer(1)], generation: 5)
        var asked = 0
        let check: (Set<Int32>, Set<UInt8>) -> Bool = { _, _ in
            asked += 1
            return false
        }
        #expect(LookupBatch([[a]]).reuse(cause: Self.carrierOnly, known: nil, linkdownRoutesMayBeIgnored: check) == nil)
        #expect(
            LookupBatch([[a], [b]]).reuse(cause: Self.carrierOnly, known: known, linkdownRoutesMayBeIgnored: check)
                == nil)
        #expect(asked == 0, "the kernel is not asked when reuse is ruled out anyway")
        #expect(LookupBatch([[a]]).reuse(cause: Self.carrierOnly, known: known) { _, _ in true } == nil)
        #expect(
            LookupBatch([[a]]).reuse(cause: Self.carrierOnly, known: known, linkdownRoutesMayBeIgnored: check) != nil)
        #expect(asked == 1)
    }

    @Test(
        "No reuse unless only carrier changed: another link change, a covering route, a rule, netconf, a resync, the resolver, a gateway"
    )
    func reuseOnlyForCarrier() throws {
        let a = try Self.request("192.0.2.1")
        let known = KnownAnswers(slots: [a: 0], results: [Self.answer(1)], generation: 5)
        let changes =
            [
                ("nothing about carrier", { $0.carrierChangedLinks = [] }),
                ("a covering route", { $0.relevantRoute = true }),
            ] + Self.otherChanges
        for (what, change) in changes {
            var cause = Self.carrierOnly
            change(&cause)
            var asked = false
            let outcome = LookupBatch([[a]]).reuse(cause: cause, known: known) { _, _ in
                asked = true
                return false
            }
            #expect(outcome == nil && !asked, "\(what)")
        }
    }

    /// Route events alone, with these prefixes.
    static func routesOnly(_ prefixes: [(String?, UInt8)]) throws -> PassCause {
        var cause = PassCause()
        for (destination, length) in prefixes {
            let address = try destination.map { try IPAddress($0) }
            cause.noteRoute(
                RoutePrefix(
                    family: address?.family == .ipv6 ? AddressFamily.inet6 : AddressFamily.inet, length: length,
                    destination: address))
        }
        cause.relevantRoute = true
        return cause
    }

    @Test("Only routes changed: answers no drained prefix covers are kept, the covered ones asked")
    func unmovedAnswers() throws {
        let (a, b) = (try Self.request("192.0.2.1"), try Self.request("198.51.100.7"))
        let (c, d) = (try Self.request("2001:db8::1"), try Self.request("203.0.113.9"))
        let known = KnownAnswers(
            slots: [a: 0, b: 1, c: 2], results: [Self.answer(1), Self.answer(2), Self.answer(3)], generation: 5)
        let batch = LookupBatch([[a, c], [b]])

        // A route into 192.0.2.0/24: a is asked, b and c kept.
        let kept = try #require(batch.unmoved(cause: try Self.routesOnly([("192.0.2.0", 24)]), known: known))
        #expect(kept.answers == [Self.answer(1), Self.answer(3), Self.answer(2)] && kept.moved == [0])
        let outcome = batch.lookedUp([Self.answer(7)], at: kept.moved, keeping: kept.answers)
        #expect(outcome.answers == [Self.answer(7), Self.answer(3), Self.answer(2)])
        // Each new answer goes to its own request's place.
        let two = batch.lookedUp([Self.answer(8), Self.answer(9)], at: [1, 2], keeping: kept.answers)
        #expect(two.answers == [Self.answer(1), Self.answer(8), Self.answer(9)])

        // An IPv4 default route covers every IPv4 destination, not an IPv6 one; an
        // IPv6 default route the other way round; a host route its own destination only.
        #expect(batch.unmoved(cause: try Self.routesOnly([(nil, 0)]), known: known)?.moved == [0, 2])
        #expect(batch.unmoved(cause: try Self.routesOnly([("::", 0)]), known: known)?.moved == [1])
        #expect(batch.unmoved(cause: try Self.routesOnly([("198.51.100.7", 32)]), known: known)?.moved == [2])
        #expect(batch.unmoved(cause: try Self.routesOnly([("198.51.100.0", 31)]), known: known)?.moved == [])

        // Nothing kept: every request covered, no answers known, or one request's unknown.
        #expect(batch.unmoved(cause: try Self.routesOnly([(nil, 0), ("::", 0)]), known: known) == nil)
        #expect(batch.unmoved(cause: try Self.routesOnly([("192.0.2.0", 24)]), known: nil) == nil)
        #expect(LookupBatch([[a, d]]).unmoved(cause: try Self.routesOnly([("192.0.2.0", 24)]), known: known) == nil)
    }

    @Test(
        "Nothing kept unless only routes changed: a link, an address, a carrier, a storm, a rule, a resync, netconf, the resolver, a gateway"
    )
    func unmovedOnlyForRoutes() throws {
        let (a, c) = (try Self.request("192.0.2.1"), try Self.request("2001:db8::1"))
        let known = KnownAnswers(slots: [a: 0, c: 1], results: [Self.answer(1), Self.answer(2)], generation: 5)
        let batch = LookupBatch([[a, c]])
        let base = try Self.routesOnly([("192.0.2.0", 24)])
        #expect(batch.unmoved(cause: base, known: known)?.moved == [0])
        #expect(batch.unmoved(cause: PassCause(), known: known) == nil, "no route event: not a route-only pass")
        let changes =
            [
                ("the table", { $0.interfacesChanged = true }),
                ("a carrier", { $0.carrierChangedLinks = [2] }),
            ] + Self.otherChanges
        for (what, change) in changes {
            var cause = base
            change(&cause)
            #expect(batch.unmoved(cause: cause, known: known) == nil, "\(what)")
        }
        // A held pass's cause added to a route-only one (the stale-answer hold) brings its link change.
        var held = PassCause()
        held.interfacesChanged = true
        held.otherInterfaceChange = true
        var merged = base
        merged.add(held)
        #expect(batch.unmoved(cause: merged, known: known) == nil)
    }

    @Test("Gateways: the route's own out of its link, a multipath next hop's out of the asked link, zones dropped")
    func gateways() throws {
        let plain = try Self.request("198.51.100.1")
        let overWlan = try Self.request("198.51.100.1", oif: 3)
        let v6 = try Self.request("2001:db8::1")
        var linkLocal = RouteMessage(
            family: AddressFamily.inet6, type: RTN.unicast, table: 254, destinationLength: 0, outputInterface: 4,
            hasGateway: true, preferredSource: nil, priority: nil)
        linkLocal.gateway = try IPAddress("fe80::1%4")
        let requests = [plain, overWlan, v6, try Self.request("203.0.113.1"), try Self.request("203.0.113.2")]
        let results: [LookupResult] = [
            try Self.route(oif: 2, gateway: "192.0.2.1"),
            try Self.route(oif: nil, gateway: nil, nexthops: [(2, "192.0.2.1"), (3, "198.51.100.254")]),
            .route(linkLocal),
            try Self.route(oif: 5, gateway: nil),
            Self.answer(101),
        ]
        let gateways = LookupBatch.gateways(requests, results)
        #expect(
            gateways == [
                InterfaceTable.NeighborKey(index: 2, address: try IPAddress("192.0.2.1")),
                InterfaceTable.NeighborKey(index: 3, address: try IPAddress("198.51.100.254")),
                InterfaceTable.NeighborKey(index: 4, address: try IPAddress("fe80::1")),
            ])
        let batch = LookupBatch([requests])
        #expect(batch.lookedUp(results) == .lookedUp(results, gateways: gateways))
        #expect(LookupBatch.gateways(requests, []).isEmpty)
        #expect(
            (1...6).filter { link in results.contains { $0.goesOut(of: Int32(link)) } } == [2, 3, 4, 5],
            "each answer's link, a multipath route's every hop's")

        // Answers out of a link the table has down, or doesn't have, while another link
        // is usable: the kernel is still taking it down, and may answer over the other.
        let table = TableBuilder().link(2, "eth0").link(3, "wlan0").link(4, "eth1").link(5, "eth2").table
        #expect(!LookupBatch.mayMove(results, in: table))
        #expect(!LookupBatch.mayMove([Self.answer(101)], in: TableBuilder().table), "no route, no link")
        let down = TableBuilder().link(2, "eth0").link(3, "wlan0", flags: 0).link(4, "eth1").link(5, "eth2").table
        #expect(LookupBatch.mayMove(results, in: down), "a multipath hop's link is down")
        let noCarrier = TableBuilder().link(2, "eth0", flags: IFF.up).link(3, "wlan0").link(4, "eth1").link(5, "eth2")
            .table
        #expect(!LookupBatch.mayMove(results, in: noCarrier), "without carrier its routes stand")
        let gone = TableBuilder().link(2, "eth0").link(3, "wlan0").link(4, "eth1").table
        #expect(LookupBatch.mayMove(results, in: gone), "link 5 went away")
        // The only link down (loopback aside): no other answer can be reachable.
        let alone = TableBuilder().link(1, "lo", flags: LinkFlags.usable | IFF.loopback).link(2, "eth0", flags: 0).table
        let overEth0 = [try Self.route(oif: 2, gateway: "192.0.2.1")]
        #expect(!LookupBatch.mayMove(overEth0, in: alone))
        #expect(LookupBatch.mayMove(overEth0, in: TableBuilder().link(2, "eth0", flags: 0).link(3, "wlan0").table))
        let othersDown = TableBuilder().link(2, "eth0", flags: 0).link(3, "wlan0", flags: IFF.up).table
        #expect(!LookupBatch.mayMove(overEth0, in: othersDown), "the other link has no carrier")
    }

    @Test("A pass's outcome: reused answers still hold and count; the kernel's replace them; a failure forgets them")
    func recordPass() throws {
        let (a, b) = (try Self.request("192.0.2.1"), try Self.request("192.0.2.2"))
        let gateway = InterfaceTable.NeighborKey(index: 2, address: try IPAddress("192.0.2.254"))
        let batch = LookupBatch([[a, b], [b]])
        var shared = NetlinkMonitor.Shared()

        shared.record(
            .lookedUp([try Self.route(oif: 2, gateway: nil), Self.answer(2)], gateways: [gateway]), of: batch, at: 7,
            settled: true)
        #expect(shared.carriesAnswers(2) && !shared.carriesAnswers(3), "the link the answers go out of")
        shared.record(
            .lookedUp([Self.answer(1), Self.answer(2)], gateways: [gateway]), of: batch, at: 7, settled: true)
        #expect(!shared.carriesAnswers(2), "no route: no link")
        #expect(shared.knownAnswers?.generation == 7)
        #expect(shared.knownAnswers?.answers(for: [b, a]) == [Self.answer(2), Self.answer(1)])
        #expect(shared.gatewayNeighbors == [gateway])
        #expect(shared.statistics == MonitorStatistics(), "a looked-up pass counts nothing more")

        shared.record(.reused([Self.answer(1), Self.answer(2)], gateways: []), of: batch, at: 9, settled: true)
        #expect(shared.knownAnswers?.generation == 9, "they still hold at the reusing pass")
        #expect(shared.statistics.reusedAnswerPasses == 1 && shared.gatewayNeighbors.isEmpty)

        shared.gatewayNeighbors = [gateway]
        shared.record(
            .lookedUp([try Self.route(oif: 2, gateway: nil), Self.answer(2)], gateways: [gateway]), of: batch, at: 9,
            settled: true)
        #expect(shared.carriesAnswers(2))
        shared.record(.failed, of: batch, at: 10, settled: true)
        #expect(shared.knownAnswers == nil && shared.statistics.failedPasses == 1)
        #expect(shared.gatewayNeighbors == [gateway], "a failed pass names no gateways: the last stand")
        #expect(!shared.carriesAnswers(2), "no answer is known to hold: none ends a drain")
        #expect(LookupBatch.Outcome.failed.answers == nil)
    }

    @Test("A pass begins: the table published only when asked, a new generation, counted")
    func beginPass() {
        var shared = NetlinkMonitor.Shared()
        let table = TableBuilder().link(2, "eth0").table
        let first = shared.beginPass(publishing: nil, generation: 3, routesOnly: false, at: .now)
        #expect(!first, "its own lookups: unsettled")
        #expect(shared.table.interfaces.isEmpty && shared.generation == 3 && shared.statistics.evaluationPasses == 1)
        let second = shared.beginPass(publishing: table, generation: 4, routesOnly: false, at: .now)
        #expect(!second)
        #expect(shared.table[2]?.name == "eth0" && shared.generation == 4 && shared.statistics.evaluationPasses == 2)
    }

    @Test(
        "Answers settle a second after a pass caused by more than routes began; unsettled ones are never kept, a start's included"
    )
    func settling() throws {
        let (a, c) = (try Self.request("192.0.2.1"), try Self.request("2001:db8::1"))
        let batch = LookupBatch([[a, c]])
        let cause = try Self.routesOnly([("192.0.2.0", 24)])
        let start = ContinuousClock.now
        var shared = NetlinkMonitor.Shared()
        #expect(shared.answersSettled(at: start), "no change yet")
        let routes = shared.beginPass(publishing: nil, generation: 1, routesOnly: true, at: start)
        #expect(routes && shared.answersSettled(at: start), "a pass after routes alone doesn't unsettle")
        let link = shared.beginPass(publishing: nil, generation: 2, routesOnly: false, at: start)
        #expect(!link && !shared.answersSettled(at: start + .milliseconds(999)))
        let soon = shared.beginPass(publishing: nil, generation: 2, routesOnly: true, at: start + .milliseconds(999))
        #expect(!soon, "a pass after routes alone within the second: unsettled")
        #expect(shared.answersSettled(at: start + NetlinkMonitor.Shared.settleTime))

        // Looked up while unsettled: asked again by the next pass that asks the kernel.
        let answers = [Self.answer(1), Self.answer(2)]
        shared.record(.lookedUp(answers, gateways: []), of: batch, at: 2, settled: false)
        #expect(shared.knownAnswers?.settled == false)
        #expect(batch.unmoved(cause: cause, known: shared.knownAnswers) == nil)
        shared.record(.lookedUp(answers, gateways: []), of: batch, at: 3, settled: true)
        #expect(batch.unmoved(cause: cause, known: shared.knownAnswers)?.moved == [0])
        // Reused after a carrier change: as settled as they were.
        shared.record(.reused(answers, gateways: []), of: batch, at: 4, settled: false)
        #expect(shared.knownAnswers?.settled == true)
        shared.record(.lookedUp(answers, gateways: []), of: batch, at: 4, settled: false)
        shared.record(.reused(answers, gateways: []), of: batch, at: 4, settled: true)
        #expect(shared.knownAnswers?.settled == false, "a reuse doesn't settle them either")

        // A start's answers asked while unsettled unsettle the set they join.
        shared.generation = 5
        shared.record(.lookedUp(answers, gateways: []), of: batch, at: 5, settled: true)
        let d = try Self.request("203.0.113.9")
        shared.recordStart([d], [Self.answer(3)], gateways: [], askedAt: 5, began: start + .milliseconds(500))
        #expect(shared.knownAnswers?.settled == false)
        #expect(LookupBatch([[a, c, d]]).unmoved(cause: cause, known: shared.knownAnswers) == nil)
        shared.record(.lookedUp(answers, gateways: []), of: batch, at: 6, settled: true)
        shared.generation = 6
        shared.recordStart([d], [Self.answer(3)], gateways: [], askedAt: 6, began: start + .seconds(2))
        #expect(LookupBatch([[a, c, d]]).unmoved(cause: cause, known: shared.knownAnswers)?.moved == [0])
    }

    @Test("A start's answers join the known ones only at the same generation; its gateways count until the next pass")
    func recordStart() throws {
        let (a, b) = (try Self.request("192.0.2.1"), try Self.request("192.0.2.2"))
        let first = InterfaceTable.NeighborKey(index: 2, address: try IPAddress("192.0.2.254"))
        let second = InterfaceTable.NeighborKey(index: 3, address: try IPAddress("198.51.100.254"))
        var shared = NetlinkMonitor.Shared()
        shared.generation = 4
        shared.gatewayNeighbors = [first]
        shared.recordStart([a], [try Self.route(oif: 3, gateway: nil)], gateways: [second], askedAt: 3, began: .now)
        #expect(shared.gatewayNeighbors == [first, second])
        #expect(shared.knownAnswers == nil, "asked on an older table")
        #expect(!shared.carriesAnswers(3), "nor are its links")
        shared.recordStart([a], [Self.answer(1)], gateways: [], askedAt: 4, began: .now)
        #expect(shared.knownAnswers?.answers(for: [a]) == [Self.answer(1)])
        shared.recordStart([b], [Self.answer(2)], gateways: [], askedAt: 4, began: .now)
        #expect(shared.knownAnswers?.answers(for: [a, b]) == [Self.answer(1), Self.answer(2)])
        let c = try Self.request("192.0.2.3")
        shared.recordStart([c], [try Self.route(oif: 3, gateway: nil)], gateways: [], askedAt: 4, began: .now)
        #expect(shared.carriesAnswers(3), "a start's answers at the same generation join the known ones")
        shared.record(.lookedUp([Self.answer(2)], gateways: []), of: LookupBatch([[b]]), at: 5, settled: true)
        #expect(shared.gatewayNeighbors.isEmpty, "the next pass replaces them")
    }
}
