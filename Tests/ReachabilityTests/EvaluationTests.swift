import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// One test per row of the DESIGN §2 table, on synthetic interface tables and
/// synthetic kernel answers. Evaluation is pure, so nothing here touches the kernel.
@Suite struct EvaluationTests {
    static let eth0 = Int32(2)
    static let remote4 = "198.51.100.7"
    static let remote6 = "2001:db8:1::7"

    /// lo plus eth0, up with carrier and an IPv4 and a global IPv6 address.
    static func standardTable() throws -> InterfaceTable {
        try TableBuilder()
            .link(
                1, "lo", flags: LinkFlags.usable | IFF.loopback, operState: IFOper.unknown,
                hardwareType: ARPHRD.loopback, as: InterfaceClassification(.loopback)
            )
            .address(1, "127.0.0.1/8")
            .address(1, "::1/128")
            .link(eth0, "eth0")
            .address(eth0, "192.0.2.10/24")
            .address(eth0, "2001:db8::10/64")
            .address(eth0, "fe80::10/64")
            .table
    }

    /// A table with only eth0 in the given state, with one address.
    static func eth0Table(
        flags: UInt32 = LinkFlags.usable, operState: UInt8 = IFOper.up,
        as classification: InterfaceClassification = InterfaceClassification(.wiredEthernet),
        address: String = "192.0.2.10/24", addressFlags: UInt32 = 0
    ) throws -> InterfaceTable {
        try TableBuilder()
            .link(eth0, "eth0", flags: flags, operState: operState, as: classification)
            .address(eth0, address, flags: addressFlags)
            .table
    }

    static func evaluate(_ destination: String, _ result: LookupResult, in table: InterfaceTable) throws
        -> ReachabilityState
    {
        Target.address(try IPAddress(destination)).evaluate([result], in: table)
    }

    // MARK: - No route

    /// ENETUNREACH (no route), EHOSTUNREACH (unreachable), EINVAL (blackhole), EACCES (prohibit).
    @Test(arguments: [Int32(101), 113, 22, 13])
    func kernelErrorGivesNone(_ errno: Int32) throws {
        let state = try Self.evaluate(Self.remote4, .noRoute(errno: errno), in: Self.standardTable())
        #expect(state == .unreachable)
    }

    @Test(arguments: [RTN.unreachable, RTN.blackhole, RTN.prohibit, RTN.throw])
    func rejectingRouteTypesGiveNone(_ type: UInt8) throws {
        let result = Lookup.route(type, oif: Self.eth0)
        #expect(try Self.evaluate(Self.remote4, result, in: Self.standardTable()).flags == [])
        let noInterface = Lookup.route(type, oif: nil)
        #expect(try Self.evaluate(Self.remote4, noInterface, in: Self.standardTable()) == .unreachable)
    }

    @Test func routeThroughAnUnknownInterfaceGivesNone() throws {
        let state = try Self.evaluate(Self.remote4, Lookup.route(oif: 99), in: Self.standardTable())
        #expect(state == .unreachable)
    }

    @Test func noLookupResultGivesNone() throws {
        #expect(Target.address(try IPAddress(Self.remote4)).evaluate([], in: try Self.standardTable()) == .unreachable)
    }

    // MARK: - Local

    @Test(arguments: ["127.0.0.1", "192.0.2.10", "::1"])
    func localRouteIsReachableLocalAndDirect(_ destination: String) throws {
        let family: IPAddress.Family = destination.contains(":") ? .ipv6 : .ipv4
        let state = try Self.evaluate(
            destination, Lookup.route(RTN.local, oif: 1, family: family), in: Self.standardTable())
        #expect(state.flags == [.reachable, .isLocalAddress, .isDirect])
        #expect(state.interface == NetworkInterface(name: "lo", index: 1, type: .loopback))
    }

    // MARK: - Unicast, usable

    @Test func unicastViaGatewayIsReachable() throws {
        let state = try Self.evaluate(
            Self.remote4, Lookup.route(oif: Self.eth0, gateway: true), in: Self.standardTable())
        #expect(state.flags == [.reachable])
        #expect(state.interface == NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet))
        #expect(NetworkStatus(flags: state.flags) == .reachableViaWiFi)
    }

    @Test func unicastOnLinkIsReachableAndDirect() throws {
        let state = try Self.evaluate("192.0.2.20", Lookup.route(oif: Self.eth0), in: Self.standardTable())
        #expect(state.flags == [.reachable, .isDirect])
        #expect(state.interface?.name == "eth0")
    }

    @Test func ipv6UnicastUsesTheGlobalAddress() throws {
        let result = Lookup.route(oif: Self.eth0, gateway: true, family: .ipv6)
        #expect(try Self.evaluate(Self.remote6, result, in: Self.standardTable()).flags == [.reachable])
    }

    @Test func cellularAddsWWANAndTransient() throws {
        let table = try Self.eth0Table(as: InterfaceClassification(.cellular))
        let state = try Self.evaluate(Self.remote4, Lookup.route(oif: Self.eth0, gateway: true), in: table)
        #expect(state.flags == [.reachable, .isWWAN, .transientConnection])
        #expect(state.interface?.type == .cellular)
        #expect(NetworkStatus(flags: state.flags) == .reachableViaWWAN)
    }

    @Test(arguments: [true, false])
    func vpnAddsTransient(_ gateway: Bool) throws {
        let table = try TableBuilder()
            .link(
                5, "tun0", flags: LinkFlags.usable | IFF.pointToPoint, operState: IFOper.unknown,
                hardwareType: ARPHRD.none, kind: "tun", as: InterfaceClassification(.other, virtualPrivate: true)
            )
            .address(5, "10.8.0.2/24")
            .table
        let state = try Self.evaluate(Self.remote4, Lookup.route(oif: 5, gateway: gateway), in: table)
        let direct: ReachabilityFlags = gateway ? [] : [.isDirect]
        #expect(state.flags == ReachabilityFlags([.reachable, .transientConnection]).union(direct))
        #expect(state.interface == NetworkInterface(name: "tun0", index: 5, type: .other))
    }

    // MARK: - Unicast, waking up

    @Test func onlyTentativeIPv6IsWakingUp() throws {
        let table = try TableBuilder()
            .link(Self.eth0, "eth0")
            .address(Self.eth0, "192.0.2.10/24")
            .address(Self.eth0, "fe80::10/64")
            .address(Self.eth0, "2001:db8::10/64", flags: IFA.fTentative)
            .table
        let v6 = try Self.evaluate(Self.remote6, Lookup.route(oif: Self.eth0, gateway: true, family: .ipv6), in: table)
        #expect(v6.flags == [.reachable, .connectionRequired, .transientConnection])
        #expect(NetworkStatus(flags: v6.flags) == .notReachable)
        // The IPv4 address on the same link is ready.
        let v4 = try Self.evaluate(Self.remote4, Lookup.route(oif: Self.eth0, gateway: true), in: table)
        #expect(v4.flags == [.reachable])
    }

    @Test func optimisticAddressIsUsable() throws {
        let table = try Self.eth0Table(address: "2001:db8::10/64", addressFlags: IFA.fTentative | IFA.fOptimistic)
        let state = try Self.evaluate(
            Self.remote6, Lookup.route(oif: Self.eth0, gateway: true, family: .ipv6), in: table)
        #expect(state.flags == [.reachable])
    }

    @Test func oneReadyAddressBeatsATentativeOne() throws {
        let table = try TableBuilder()
            .link(Self.eth0, "eth0")
            .address(Self.eth0, "2001:db8::10/64", flags: IFA.fTentative)
            .address(Self.eth0, "2001:db8::11/64")
            .table
        let state = try Self.evaluate(
            Self.remote6, Lookup.route(oif: Self.eth0, gateway: true, family: .ipv6), in: table)
        #expect(state.flags == [.reachable])
    }

    @Test func tentativeOnCellularAlsoSaysWWAN() throws {
        let table = try Self.eth0Table(
            as: InterfaceClassification(.cellular), address: "2001:db8::10/64", addressFlags: IFA.fTentative)
        let state = try Self.evaluate(
            Self.remote6, Lookup.route(oif: Self.eth0, gateway: true, family: .ipv6), in: table)
        #expect(state.flags == [.reachable, .connectionRequired, .transientConnection, .isWWAN])
    }

    @Test(arguments: [IFOper.down, IFOper.lowerLayerDown, IFOper.testing, IFOper.notPresent])
    func operstateSettlingIsWakingUp(_ operState: UInt8) throws {
        let table = try Self.eth0Table(operState: operState)
        let state = try Self.evaluate(Self.remote4, Lookup.route(oif: Self.eth0, gateway: true), in: table)
        #expect(state.flags == [.reachable, .connectionRequired, .transientConnection])
    }

    @Test func dormantNeedsIntervention() throws {
        let table = try Self.eth0Table(operState: IFOper.dormant, as: InterfaceClassification(.wifi))
        let state = try Self.evaluate(Self.remote4, Lookup.route(oif: Self.eth0, gateway: true), in: table)
        #expect(state.flags == [.reachable, .connectionRequired, .interventionRequired])
        #expect(NetworkStatus(flags: state.flags) == .notReachable)
    }

    @Test func dormantFlagWithUnknownOperstateIsNotUsable() throws {
        let table = try Self.eth0Table(flags: LinkFlags.usable | IFF.dormant, operState: IFOper.unknown)
        let state = try Self.evaluate(Self.remote4, Lookup.route(oif: Self.eth0, gateway: true), in: table)
        #expect(state.flags == [.reachable, .connectionRequired, .interventionRequired])
    }

    // MARK: - Unicast, down

    @Test(arguments: [LinkFlags.down, LinkFlags.noCarrier, IFF.lowerUp])
    func adminDownOrNoCarrierGivesNone(_ flags: UInt32) throws {
        let table = try Self.eth0Table(flags: flags, operState: IFOper.down)
        let state = try Self.evaluate(Self.remote4, Lookup.route(oif: Self.eth0, gateway: true), in: table)
        #expect(state.flags == [])
    }

    @Test(arguments: [LinkFlags.down, LinkFlags.noCarrier])
    func cellularDownGivesWWANAlone(_ flags: UInt32) throws {
        let table = try Self.eth0Table(
            flags: flags, operState: IFOper.lowerLayerDown, as: InterfaceClassification(.cellular))
        let state = try Self.evaluate(Self.remote4, Lookup.route(oif: Self.eth0, gateway: true), in: table)
        #expect(state.flags == [.isWWAN])
        #expect(NetworkStatus(flags: state.flags) == .notReachable)
    }

    @Test func noCarrierWithUnknownOperstateGivesNone() throws {
        let table = try Self.eth0Table(flags: IFF.up, operState: IFOper.unknown)
        let state = try Self.evaluate(Self.remote4, Lookup.route(oif: Self.eth0), in: table)
        #expect(state.flags == [])
    }

    // MARK: - Operstate UNKNOWN

    @Test func loopbackWithUnknownOperstateIsUsable() throws {
        // e.g. `ip route add 198.51.100.0/24 dev lo`: a unicast route over lo.
        let table = try TableBuilder()
            .link(
                1, "lo", flags: LinkFlags.usable | IFF.loopback, operState: IFOper.unknown,
                hardwareType: ARPHRD.loopback, as: InterfaceClassification(.loopback)
            )
            .address(1, "192.0.2.1/32", scope: RTScope.universe)
            .table
        let state = try Self.evaluate(Self.remote4, Lookup.route(oif: 1), in: table)
        #expect(state.flags == [.reachable, .isDirect])
        #expect(state.interface?.type == .loopback)
    }

    @Test func wireguardWithUnknownOperstateIsUsable() throws {
        let table = try TableBuilder()
            .link(
                7, "wg0", flags: IFF.up | IFF.running | IFF.lowerUp | IFF.pointToPoint, operState: IFOper.unknown,
                hardwareType: ARPHRD.none, kind: "wireguard", as: InterfaceClassification(.other, virtualPrivate: true)
            )
            .address(7, "2001:db8:ff::2/64")
            .table
        let state = try Self.evaluate(Self.remote6, Lookup.route(oif: 7, family: .ipv6), in: table)
        #expect(state.flags == [.reachable, .isDirect, .transientConnection])
    }

    // MARK: - Addresses that do not count

    @Test(arguments: [IFA.fDADFailed, IFA.fDADFailed | IFA.fTentative])
    func dadFailedAddressIsNotUsable(_ flags: UInt32) throws {
        let table = try Self.eth0Table(address: "2001:db8::10/64", addressFlags: flags)
        let state = try Self.evaluate(
            Self.remote6, Lookup.route(oif: Self.eth0, gateway: true, family: .ipv6), in: table)
        #expect(state.flags == [])
    }

    @Test func noAddressOfTheTargetFamilyGivesNone() throws {
        let table = try Self.eth0Table(address: "192.0.2.10/24")
        let state = try Self.evaluate(
            Self.remote6, Lookup.route(oif: Self.eth0, gateway: true, family: .ipv6), in: table)
        #expect(state.flags == [])
    }

    @Test func linkLocalIPv6DoesNotServeAGlobalTarget() throws {
        let table = try Self.eth0Table(address: "fe80::10/64")
        let global = try Self.evaluate(
            Self.remote6, Lookup.route(oif: Self.eth0, gateway: true, family: .ipv6), in: table)
        #expect(global.flags == [])
        let neighbour = try Self.evaluate("fe80::20%2", Lookup.route(oif: Self.eth0, family: .ipv6), in: table)
        #expect(neighbour.flags == [.reachable, .isDirect])
    }

    @Test func unnumberedLinkUsesTheKernelsPreferredSource() throws {
        let table = try TableBuilder()
            .link(Self.eth0, "eth0")
            .address(Self.eth0, "192.0.2.10/24")
            .link(5, "tun0", operState: IFOper.unknown, as: InterfaceClassification(.other, virtualPrivate: true))
            .table
        let source = try IPAddress("192.0.2.10")
        let state = try Self.evaluate(Self.remote4, Lookup.route(oif: 5, source: source), in: table)
        #expect(state.flags == [.reachable, .isDirect, .transientConnection])
        let unknownSource = try IPAddress("203.0.113.1")
        #expect(try Self.evaluate(Self.remote4, Lookup.route(oif: 5, source: unknownSource), in: table).flags == [])
    }

    // MARK: - Targets

    @Test func internetTakesTheBetterFamily() throws {
        let table = try TableBuilder()
            .link(Self.eth0, "eth0")
            .address(Self.eth0, "192.0.2.10/24")
            .address(Self.eth0, "2001:db8::10/64", flags: IFA.fTentative)
            .link(3, "wwan0", as: InterfaceClassification(.cellular))
            .address(3, "2001:db8:2::10/64")
            .table
        let v4Usable = Lookup.route(oif: Self.eth0, gateway: true)
        let v6Tentative = Lookup.route(oif: Self.eth0, gateway: true, family: .ipv6)
        let v6Cellular = Lookup.route(oif: 3, gateway: true, family: .ipv6)

        let cases: [([LookupResult], ReachabilityFlags, String?)] = [
            ([v4Usable, Lookup.noRoute], [.reachable], "eth0"),
            ([Lookup.noRoute, v6Cellular], [.reachable, .isWWAN, .transientConnection], "wwan0"),
            ([Lookup.noRoute, v6Tentative], [.reachable, .connectionRequired, .transientConnection], "eth0"),
            (
                [Lookup.route(oif: 99, gateway: true), v6Cellular], [.reachable, .isWWAN, .transientConnection], "wwan0"
            ),
            ([v4Usable, v6Tentative], [.reachable], "eth0"),
            ([v4Usable, v6Cellular], [.reachable], "eth0"),
            ([Lookup.noRoute, Lookup.noRoute], [], nil),
        ]
        for (results, flags, interface) in cases {
            let state = Target.internet.evaluate(results, in: table)
            #expect(state.flags == flags, "\(results)")
            #expect(state.interface?.name == interface, "\(results)")
        }
    }

    @Test func internetPrefersReachableOverWakingUpInEitherOrder() throws {
        let table = try TableBuilder()
            .link(Self.eth0, "eth0", operState: IFOper.down)
            .address(Self.eth0, "192.0.2.10/24")
            .link(3, "eth1")
            .address(3, "2001:db8::10/64")
            .table
        let settling = Lookup.route(oif: Self.eth0, gateway: true)
        let usable = Lookup.route(oif: 3, gateway: true, family: .ipv6)
        #expect(Target.internet.evaluate([settling, usable], in: table).flags == [.reachable])
        #expect(Target.internet.evaluate([settling, usable], in: table).interface?.name == "eth1")
    }

    @Test func internetNeedsBothAnswers() throws {
        let table = try Self.standardTable()
        #expect(Target.internet.evaluate([Lookup.route(oif: Self.eth0, gateway: true)], in: table) == .unreachable)
        #expect(Target.internet.lookups.count == 2)
        #expect(Target.internet.lookups.map(\.destination.family) == [.ipv4, .ipv6])
    }

    @Test func addressPairWithANonOwnedLocalAddressGivesNone() throws {
        let table = try Self.standardTable()
        let route = Lookup.route(oif: Self.eth0, gateway: true)
        let remote = try IPAddress(Self.remote4)
        let foreign = Target.addressPair(local: try IPAddress("192.0.2.99"), remote: remote)
        #expect(foreign.evaluate([route], in: table) == .unreachable)
        let owned = Target.addressPair(local: try IPAddress("192.0.2.10"), remote: remote)
        #expect(owned.evaluate([route], in: table).flags == [.reachable])
        #expect(owned.lookups == [LookupRequest(destination: remote, source: try IPAddress("192.0.2.10"))])
    }

    @Test func addressPairWithADADFailedLocalAddressGivesNone() throws {
        let table = try TableBuilder()
            .link(Self.eth0, "eth0")
            .address(Self.eth0, "2001:db8::10/64")
            .address(Self.eth0, "2001:db8::99/64", flags: IFA.fDADFailed | IFA.fTentative)
            .table
        let target = Target.addressPair(local: try IPAddress("2001:db8::99"), remote: try IPAddress(Self.remote6))
        #expect(
            target.evaluate([Lookup.route(oif: Self.eth0, gateway: true, family: .ipv6)], in: table) == .unreachable)
    }

    @Test func linkLocalTarget() throws {
        let usable = try Self.standardTable()
        #expect(Target.linkLocal.lookups.isEmpty)
        let state = Target.linkLocal.evaluate([], in: usable)
        #expect(state.flags == [.reachable, .isDirect])
        #expect(state.interface?.name == "eth0")

        let loopbackOnly = try TableBuilder()
            .link(
                1, "lo", flags: LinkFlags.usable | IFF.loopback, operState: IFOper.unknown,
                hardwareType: ARPHRD.loopback, as: InterfaceClassification(.loopback)
            )
            .address(1, "127.0.0.1/8")
            .table
        #expect(Target.linkLocal.evaluate([], in: loopbackOnly).flags == [])

        let down = try Self.eth0Table(flags: LinkFlags.noCarrier, operState: IFOper.down)
        #expect(Target.linkLocal.evaluate([], in: down).flags == [])

        let noAddress = TableBuilder().link(Self.eth0, "eth0").table
        #expect(Target.linkLocal.evaluate([], in: noAddress).flags == [])

        let onlyLinkLocalAddress = try Self.eth0Table(address: "169.254.7.7/16")
        #expect(Target.linkLocal.evaluate([], in: onlyLinkLocalAddress).flags == [.reachable, .isDirect])
    }

    @Test func linkLocalTargetPrefersAUsableInterface() throws {
        let table = try TableBuilder()
            .link(2, "eth0", flags: LinkFlags.noCarrier, operState: IFOper.down)
            .address(2, "192.0.2.10/24")
            .link(3, "wlan0", as: InterfaceClassification(.wifi))
            .address(3, "fe80::3/64")
            .table
        let state = Target.linkLocal.evaluate([], in: table)
        #expect(state.flags == [.reachable, .isDirect])
        #expect(state.interface == NetworkInterface(name: "wlan0", index: 3, type: .wifi))
    }

    // MARK: - From captured kernel messages

    @Test func capturedKernelStateEvaluatesAsDesigned() throws {
        var table = InterfaceTable()
        for name in [Fixture.links, Fixture.addresses] {
            let parsed = NetlinkParser.parse(try Fixture.bytes(name))
            #expect(parsed.malformed == nil)
            for message in parsed.messages {
                table.apply(message.message) { InterfaceClassifier.classify($0, sysfs: SysfsReader(root: nil)) }
            }
        }
        func lookup(_ name: String) throws -> LookupResult {
            switch try #require(NetlinkParser.parse(try Fixture.bytes(name)).messages.first?.message) {
            case .route(let route, deleted: false): return .route(route)
            case .error(let errno): return .noRoute(errno: errno)
            case let other: throw UnexpectedMessage(message: other)
            }
        }
        let veth0 = try #require(table.interfaces.first { $0.name == "veth0" })
        let expectedInterface = NetworkInterface(name: "veth0", index: Int(veth0.index), type: .wiredEthernet)

        let internet = Target.internet.evaluate(
            [try lookup(Fixture.routeGet), try lookup(Fixture.routeGetError)], in: table)
        #expect(internet.flags == [.reachable])
        #expect(internet.interface == expectedInterface)

        let onLink = try Self.evaluate("192.0.2.3", try lookup(Fixture.routeGetOnLink), in: table)
        #expect(onLink.flags == [.reachable, .isDirect])
        #expect(onLink.interface == expectedInterface)

        let local = try Self.evaluate("192.0.2.1", try lookup(Fixture.routeGetLocal), in: table)
        #expect(local.flags == [.reachable, .isLocalAddress, .isDirect])
        #expect(local.interface?.type == .loopback)
    }

    struct UnexpectedMessage: Error {
        var message: NetlinkMessage
    }
}
