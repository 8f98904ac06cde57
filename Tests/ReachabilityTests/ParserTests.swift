import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// `NetlinkParser` on datagrams captured from a real kernel (see
/// `Support/capture_fixtures.py`), and on malformed input, which must be reported,
/// never crash.
@Suite struct ParserTests {
    static let enetunreach: Int32 = 101
    static let mainTable: UInt32 = 254

    static func parse(_ fixture: String) throws -> NetlinkParser.Result {
        let result = NetlinkParser.parse(try Fixture.bytes(fixture))
        #expect(result.malformed == nil, "\(fixture): \(String(describing: result.malformed))")
        return result
    }

    static func links(_ result: NetlinkParser.Result) -> [LinkMessage] {
        result.messages.compactMap { if case .newLink(let link) = $0.message { link } else { nil } }
    }

    static func addresses(_ result: NetlinkParser.Result) -> [AddressMessage] {
        result.messages.compactMap { if case .newAddress(let address) = $0.message { address } else { nil } }
    }

    static func route(_ fixture: String) throws -> RouteMessage {
        let result = try parse(fixture)
        #expect(result.messages.count == 1)
        guard case .route(let route, deleted: false) = result.messages.first?.message else {
            throw ExpectedRoute(got: result.messages.first?.message)
        }
        return route
    }

    struct ExpectedRoute: Error {
        var got: NetlinkMessage?
    }

    /// veth0's index as the captured link dump gives it.
    static func veth0Index() throws -> Int32 {
        try #require(links(try parse(Fixture.links)).first { $0.name == "veth0" }).index
    }

    // MARK: - Captured kernel messages

    @Test func linkDump() throws {
        let result = try Self.parse(Fixture.links)
        #expect(result.messages.last?.message == .done)
        let sequences = Set(result.messages.map(\.sequence))
        #expect(sequences.count == 1)
        #expect(result.messages.allSatisfy { $0.flags & NLMsgFlag.multi != 0 })

        let links = Self.links(result)
        #expect(Set(links.map(\.name)) == ["lo", "veth0", "veth1"])
        let lo = try #require(links.first { $0.name == "lo" })
        #expect(lo.index == 1)
        #expect(lo.flags & IFF.loopback != 0)
        #expect(lo.hardwareType == ARPHRD.loopback)
        #expect(lo.operState == IFOper.unknown)
        #expect(lo.kind == nil)

        for name in ["veth0", "veth1"] {
            let veth = try #require(links.first { $0.name == name })
            #expect(veth.kind == "veth")
            #expect(veth.hardwareType == ARPHRD.ether)
            #expect(veth.flags & (IFF.up | IFF.lowerUp) == IFF.up | IFF.lowerUp)
            #expect(veth.operState == IFOper.up)
            #expect(veth.index > 1)
        }
        #expect(Set(links.map(\.index)).count == 3)
    }

    @Test func addressDump() throws {
        let result = try Self.parse(Fixture.addresses)
        #expect(result.messages.last?.message == .done)
        let links = Self.links(try Self.parse(Fixture.links))
        let index = Dictionary(uniqueKeysWithValues: links.map { ($0.name ?? "", $0.index) })
        let addresses = Self.addresses(result)
        func find(_ text: String) throws -> AddressMessage {
            let address = try IPAddress(text)
            return try #require(addresses.first { $0.address == address }, "\(text) in the dump")
        }

        let loopback = try find("127.0.0.1")
        #expect(loopback.index == index["lo"])
        #expect(loopback.prefixLength == 8)
        #expect(loopback.scope == RTScope.host)

        let veth0v4 = try find("192.0.2.1")
        #expect(veth0v4.index == index["veth0"])
        #expect(veth0v4.prefixLength == 24)
        #expect(veth0v4.scope == RTScope.universe)

        #expect(try find("192.0.2.2").index == index["veth1"])

        let nodad = try find("2001:db8::1")
        #expect(nodad.index == index["veth0"])
        #expect(nodad.prefixLength == 64)
        #expect(nodad.flags & IFA.fNoDAD != 0)
        #expect(nodad.flags & IFA.fTentative == 0)

        // Added after the link came up: still in duplicate address detection when captured.
        let tentative = try find("2001:db8::2")
        #expect(tentative.index == index["veth1"])
        #expect(tentative.flags & IFA.fTentative != 0)

        #expect(try find("::1").scope == RTScope.host)
        let linkLocal = addresses.filter { $0.address.isLinkLocal }
        #expect(!linkLocal.isEmpty)
        #expect(linkLocal.allSatisfy { $0.scope == RTScope.link && $0.prefixLength == 64 })
    }

    @Test func routeLookupViaGateway() throws {
        let route = try Self.route(Fixture.routeGet)
        #expect(route.family == AddressFamily.inet)
        #expect(route.type == RTN.unicast)
        #expect(route.table == Self.mainTable)
        #expect(route.destinationLength == 32)
        #expect(route.outputInterface == (try Self.veth0Index()))
        #expect(route.hasGateway)
        #expect(route.preferredSource == (try IPAddress("192.0.2.1")))
    }

    @Test func routeLookupOnLink() throws {
        let route = try Self.route(Fixture.routeGetOnLink)
        #expect(route.type == RTN.unicast)
        #expect(route.outputInterface == (try Self.veth0Index()))
        #expect(!route.hasGateway)
        #expect(route.preferredSource == (try IPAddress("192.0.2.1")))
    }

    @Test func routeLookupLocal() throws {
        let route = try Self.route(Fixture.routeGetLocal)
        #expect(route.type == RTN.local)
        #expect(route.outputInterface == 1)
        #expect(!route.hasGateway)
        #expect(route.preferredSource == (try IPAddress("192.0.2.1")))
    }

    @Test func routeLookupError() throws {
        let result = try Self.parse(Fixture.routeGetError)
        #expect(result.messages.map(\.message) == [.error(errno: Self.enetunreach)])
    }

    // MARK: - Truncation

    @Test(arguments: Fixture.all)
    func truncatedAtEveryOffset(_ fixture: String) throws {
        let bytes = try Fixture.bytes(fixture)
        let full = NetlinkParser.parse(bytes)
        let spans = messageSpans(bytes)
        try #require(spans.count == full.messages.count)
        for cut in 0...bytes.count {
            let result = NetlinkParser.parse(Array(bytes[..<cut]))
            let complete = spans.filter { $0.start + $0.length <= cut }.count
            let midMessage = spans.contains { $0.start < cut && cut < $0.start + $0.length }
            #expect(result.messages == Array(full.messages.prefix(complete)), "\(fixture) cut at \(cut)")
            #expect((result.malformed != nil) == midMessage, "\(fixture) cut at \(cut)")
            if let malformed = result.malformed {
                #expect(malformed.offset == spans[complete].start, "\(fixture) cut at \(cut)")
            }
        }
    }

    // MARK: - Bad lengths

    @Test func messageLengthLargerThanTheBuffer() throws {
        var bytes = try Fixture.bytes(Fixture.routeGet)
        bytes.replaceSubrange(0..<4, with: NetlinkBuilder.raw(UInt32(bytes.count + 4)))
        let result = NetlinkParser.parse(bytes)
        #expect(result.messages.isEmpty)
        #expect(result.malformed?.offset == 0)
    }

    @Test(arguments: [UInt32(0), 1, 4, 15])
    func messageLengthSmallerThanTheHeader(_ length: UInt32) throws {
        let done = NetlinkBuilder.message(type: NLMsgType.done, payload: NetlinkBuilder.raw(Int32(0)))
        let bad = NetlinkBuilder.message(type: NLMsgType.done, payload: [0, 0, 0, 0], length: length)
        let result = NetlinkParser.parse(done + bad + done)
        #expect(result.messages.map(\.message) == [.done])
        #expect(result.malformed?.offset == done.count)
    }

    @Test func shortMessageBodies() {
        let cases: [(UInt16, Int)] = [
            (NLMsgType.error, 3), (NLMsgType.newLink, 15), (NLMsgType.newAddr, 7), (NLMsgType.newRoute, 11),
        ]
        for (type, payloadSize) in cases {
            let bytes = NetlinkBuilder.message(type: type, payload: [UInt8](repeating: 0, count: payloadSize))
            let result = NetlinkParser.parse(bytes)
            #expect(result.messages.isEmpty, "type \(type)")
            #expect(result.malformed?.offset == 0, "type \(type)")
        }
    }

    @Test func errnoOfIntMinDoesNotTrap() {
        let bytes = NetlinkBuilder.message(type: NLMsgType.error, payload: NetlinkBuilder.raw(Int32.min))
        #expect(NetlinkParser.parse(bytes).messages.first?.message == .error(errno: Int32.max))
        let ack = NetlinkBuilder.message(type: NLMsgType.error, payload: NetlinkBuilder.raw(Int32(0)))
        #expect(NetlinkParser.parse(ack).messages.first?.message == .error(errno: 0))
    }

    // MARK: - Bad attributes

    @Test(arguments: [UInt16(200), 13, 0, 1, 3])
    func attributeLengthOutOfBounds(_ attributeLength: UInt16) {
        let payload =
            NetlinkBuilder.ifinfomsg(index: 2, flags: IFF.up)
            + NetlinkBuilder.attribute(IFLA.ifname, NetlinkBuilder.cString("eth0"), length: attributeLength)
        let bytes = NetlinkBuilder.message(type: NLMsgType.newLink, payload: payload)
        // A following message that must not be reached.
        let result = NetlinkParser.parse(bytes + NetlinkBuilder.newLink(index: 3, name: "eth1"))
        #expect(result.messages.isEmpty)
        #expect(result.malformed?.offset == 0)
    }

    @Test func attributeMayNotReadPastAnUnalignedMessageEnd() {
        // nlmsg_len 37 ends one byte into an IFLA_IFNAME whose nla_len claims four.
        // The three bytes after the message are not part of it (nor of the buffer).
        let payload =
            NetlinkBuilder.ifinfomsg(index: 2, flags: IFF.up) + NetlinkBuilder.raw(UInt16(8))
            + NetlinkBuilder.raw(IFLA.ifname) + Array("abcd".utf8)
        let message = NetlinkBuilder.message(type: NLMsgType.newLink, payload: payload, length: 37)
        #expect(message.count == 40)
        let result = message.withUnsafeBytes { NetlinkParser.parse(UnsafeRawBufferPointer(rebasing: $0[..<37])) }
        if case .newLink(let link) = result.messages.first?.message {
            Issue.record("parsed a name from bytes past the message: \(String(describing: link.name))")
        }
        #expect(result.malformed?.offset == 0)
    }

    @Test func zeroLengthAttributes() {
        // An empty attribute of a type the parser does not use is skipped.
        let unknown =
            NetlinkBuilder.ifinfomsg(index: 2, flags: IFF.up) + NetlinkBuilder.attribute(999, [])
            + NetlinkBuilder.attribute(IFLA.ifname, NetlinkBuilder.cString("eth0"))
        let skipped = NetlinkParser.parse(NetlinkBuilder.message(type: NLMsgType.newLink, payload: unknown))
        #expect(skipped.malformed == nil)
        guard case .newLink(let link) = skipped.messages.first?.message else {
            Issue.record("expected a link, got \(skipped.messages)")
            return
        }
        #expect(link.name == "eth0")

        // An empty IFLA_IFNAME, IFLA_OPERSTATE or IFA_FLAGS is malformed.
        let emptyName = NetlinkBuilder.ifinfomsg(index: 2, flags: IFF.up) + NetlinkBuilder.attribute(IFLA.ifname, [])
        let emptyOper =
            NetlinkBuilder.ifinfomsg(index: 2, flags: IFF.up) + NetlinkBuilder.attribute(IFLA.operstate, [])
        for payload in [emptyName, emptyOper] {
            let result = NetlinkParser.parse(NetlinkBuilder.message(type: NLMsgType.newLink, payload: payload))
            #expect(result.messages.isEmpty)
            #expect(result.malformed != nil)
        }
        let emptyFlags = NetlinkBuilder.newAddress(
            family: AddressFamily.inet, address: [192, 0, 2, 1], extra: NetlinkBuilder.attribute(IFA.flags, []))
        #expect(NetlinkParser.parse(emptyFlags).malformed != nil)
    }

    @Test func emptyLinkInfoIsAccepted() {
        let payload =
            NetlinkBuilder.ifinfomsg(index: 2, flags: IFF.up) + NetlinkBuilder.attribute(IFLA.linkinfo, [])
            + NetlinkBuilder.attribute(IFLA.ifname, NetlinkBuilder.cString("eth0"))
        let result = NetlinkParser.parse(NetlinkBuilder.message(type: NLMsgType.newLink, payload: payload))
        #expect(result.malformed == nil)
        guard case .newLink(let link) = result.messages.first?.message else {
            Issue.record("expected a link, got \(result.messages)")
            return
        }
        #expect(link.kind == nil)
    }

    @Test func nestedKindOverrunningItsNestIsMalformed() {
        let kind = NetlinkBuilder.attribute(IFLA.infoKind, NetlinkBuilder.cString("veth"), length: 40)
        let payload =
            NetlinkBuilder.ifinfomsg(index: 2, flags: IFF.up) + NetlinkBuilder.attribute(IFLA.linkinfo, kind)
            + NetlinkBuilder.attribute(IFLA.ifname, NetlinkBuilder.cString("a-long-enough-name-to-fill"))
        let result = NetlinkParser.parse(NetlinkBuilder.message(type: NLMsgType.newLink, payload: payload))
        #expect(result.messages.isEmpty)
        #expect(result.malformed != nil)
    }

    @Test(
        arguments: [
            (AddressFamily.inet, 5), (AddressFamily.inet, 3), (AddressFamily.inet, 16), (AddressFamily.inet6, 4),
            (AddressFamily.inet6, 15), (AddressFamily.inet6, 17), (AddressFamily.inet, 0),
        ] as [(UInt8, Int)])
    func wrongSizeAddress(_ family: UInt8, _ size: Int) {
        let bytes = NetlinkBuilder.newAddress(family: family, address: [UInt8](repeating: 0x20, count: size))
        let result = NetlinkParser.parse(bytes)
        #expect(result.messages.isEmpty)
        #expect(result.malformed?.offset == 0)
    }

    @Test(arguments: [2, 8])
    func wrongSizeAddressFlags(_ size: Int) {
        let bytes = NetlinkBuilder.newAddress(
            family: AddressFamily.inet, address: [192, 0, 2, 1],
            extra: NetlinkBuilder.attribute(IFA.flags, [UInt8](repeating: 0, count: size)))
        #expect(NetlinkParser.parse(bytes).malformed != nil)
    }

    @Test func addressMessageWithoutAnAddressIsMalformed() {
        let payload = NetlinkBuilder.ifaddrmsg(family: AddressFamily.inet, prefixLength: 24, index: 2)
        let result = NetlinkParser.parse(NetlinkBuilder.message(type: NLMsgType.newAddr, payload: payload))
        #expect(result.malformed != nil)
    }

    @Test func pointToPointAddressPrefersLocal() throws {
        let extra = NetlinkBuilder.attribute(IFA.local, [10, 0, 0, 1])
        let bytes = NetlinkBuilder.newAddress(family: AddressFamily.inet, address: [10, 0, 0, 2], extra: extra)
        guard case .newAddress(let address) = NetlinkParser.parse(bytes).messages.first?.message else {
            Issue.record("expected an address")
            return
        }
        #expect(address.address == (try IPAddress("10.0.0.1")))
    }

    @Test func wrongSizeRouteAttributes() {
        let oif = NetlinkBuilder.attribute(RTA.oif, [1, 0])
        let prefsrc = NetlinkBuilder.attribute(RTA.prefsrc, [192, 0, 2])
        let gateway = NetlinkBuilder.attribute(RTA.gateway, [])
        for attribute in [oif, prefsrc, gateway] {
            let payload = NetlinkBuilder.rtmsg(family: AddressFamily.inet, destinationLength: 32) + attribute
            let result = NetlinkParser.parse(NetlinkBuilder.message(type: NLMsgType.newRoute, payload: payload))
            #expect(result.messages.isEmpty)
            #expect(result.malformed != nil)
        }
    }

    @Test("RTM_*NETCONF and RTM_*NEXTHOP: their kind, whatever they carry (the monitor reads nothing of them)")
    func netconfAndNexthops() {
        typealias B = NetlinkBuilder
        let payload = B.padded([AddressFamily.inet6]) + B.attribute(1, B.raw(Int32(-1))) + B.attribute(6, [1, 0])
        let kinds: [(UInt16, NetlinkMessage)] = [
            (NLMsgType.newNetconf, .netconf), (NLMsgType.delNetconf, .netconf),
            (NLMsgType.newNexthop, .nexthop(deleted: false)), (NLMsgType.delNexthop, .nexthop(deleted: true)),
        ]
        for (type, message) in kinds {
            let parsed = NetlinkParser.parse(B.message(type: type, payload: payload))
            #expect(parsed.messages.map(\.message) == [message] && parsed.malformed == nil)
        }
    }

    @Test("RTA_CACHEINFO: rta_expires, ticks of 10 ms, is the route's remaining lifetime; none or none left is no end")
    func routeLifetime() throws {
        typealias B = NetlinkBuilder
        func route(cacheInfo: [UInt8]?) -> NetlinkParser.Result {
            var payload = B.rtmsg(family: AddressFamily.inet6, destinationLength: 0)
            if let cacheInfo { payload += B.attribute(RTA.cacheInfo, cacheInfo) }
            return NetlinkParser.parse(B.message(type: NLMsgType.newRoute, payload: payload))
        }
        // struct rta_cacheinfo: clntref, lastuse, expires (signed), error, used, id, ts, tsage.
        func cacheInfo(expires: Int32) -> [UInt8] {
            B.raw(UInt32(1)) + B.raw(UInt32(20)) + B.raw(expires) + Array(repeating: 0, count: 20)
        }
        func lifetime(_ result: NetlinkParser.Result) -> Duration?? {
            guard case .route(let route, _)? = result.messages.first?.message else { return nil }
            return .some(route.remainingLifetime)
        }
        #expect(lifetime(route(cacheInfo: cacheInfo(expires: 150))) == .some(.milliseconds(1500)))
        #expect(lifetime(route(cacheInfo: cacheInfo(expires: 0))) == .some(nil))
        #expect(lifetime(route(cacheInfo: cacheInfo(expires: -3))) == .some(nil))
        #expect(lifetime(route(cacheInfo: nil)) == .some(nil))
        #expect(route(cacheInfo: [1, 2, 3, 4, 5, 6, 7, 8]).malformed != nil, "too short for rta_expires")
    }

    // MARK: - Alignment and garbage

    @Test(arguments: Fixture.all)
    func unalignedBasePointer(_ fixture: String) throws {
        let bytes = try Fixture.bytes(fixture)
        let aligned = NetlinkParser.parse(bytes)
        for shift in 1...3 {
            let storage = [UInt8](repeating: 0xA5, count: shift) + bytes
            let result = storage.withUnsafeBytes { raw in
                NetlinkParser.parse(UnsafeRawBufferPointer(rebasing: raw[shift...]))
            }
            #expect(result.messages == aligned.messages, "shift \(shift)")
            #expect(result.malformed == aligned.malformed, "shift \(shift)")
        }
    }

    @Test func emptyBuffer() {
        let result = NetlinkParser.parse([UInt8]())
        #expect(result.messages.isEmpty)
        #expect(result.malformed == nil)
    }
}
