import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityBase
@_spi(Testing) @testable import ReachabilityCore

/// A pass's lookups without a kernel: de-duplication, the answers back to each
/// plan, the gateways the answers name, and what a pass or a start leaves in the
/// monitor's state. What a pass asks is the machine's (ReaderMachineTests).
@Suite struct LookupBatchTests {
    static func request(_ text: String, oif: Int32? = nil) throws -> LookupRequest {
        var request = LookupRequest(destination: try IPAddress(text))
        request.outputInterface = oif
        return request
    }

    /// A distinct answer per number, to tell answers apart.
    static func answer(_ number: Int32) -> LookupResult { .noRoute(errno: number) }

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
        #expect(LookupBatch.gateways(requests, []).isEmpty)
        #expect(
            (1...6).filter { link in results.contains { $0.goesOut(of: Int32(link)) } } == [2, 3, 4, 5],
            "each answer's link, a multipath route's every hop's")
    }

    @Test("A pass begins: the table published only when asked, a new generation, counted")
    func beginPass() {
        var shared = NetlinkMonitor.Shared()
        let table = TableBuilder().link(2, "eth0").table
        shared.beginPass(publishing: nil, generation: 3)
        #expect(shared.table.interfaces.isEmpty && shared.generation == 3 && shared.statistics.evaluationPasses == 1)
        shared.beginPass(publishing: table, generation: 4)
        #expect(shared.table[2]?.name == "eth0" && shared.generation == 4 && shared.statistics.evaluationPasses == 2)
    }

    @Test("A start's gateways count until the next pass; the earliest end of its routes' lifetimes is the reader's")
    func recordStart() throws {
        let first = InterfaceTable.NeighborKey(index: 2, address: try IPAddress("192.0.2.254"))
        let second = InterfaceTable.NeighborKey(index: 3, address: try IPAddress("198.51.100.254"))
        let now = ContinuousClock.now
        var shared = NetlinkMonitor.Shared()
        shared.gatewayNeighbors = [first]
        #expect(!shared.recordStart([try Self.route(oif: 3, gateway: nil)], gateways: [second], at: now))
        #expect(shared.gatewayNeighbors == [first, second] && shared.startsExpire == nil)

        func living(_ seconds: Int64) throws -> LookupResult {
            guard case .route(var route) = try Self.route(oif: 3, gateway: nil) else { return Self.answer(0) }
            route.remainingLifetime = .seconds(seconds)
            return .route(route)
        }
        #expect(shared.recordStart([Self.answer(1), try living(30), try living(20)], gateways: [], at: now))
        #expect(shared.startsExpire == now + .seconds(20) + ReaderMachine.expiryMargin)
        #expect(!shared.recordStart([try living(25)], gateways: [], at: now), "later: nothing to tell the reader")
        #expect(shared.recordStart([try living(5)], gateways: [], at: now), "earlier: the reader must hear of it")
        #expect(shared.startsExpire == now + .seconds(5) + ReaderMachine.expiryMargin)
    }
}
