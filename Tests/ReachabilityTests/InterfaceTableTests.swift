import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityBase
@_spi(Testing) @testable import ReachabilityCore

/// `InterfaceTable.apply(_:classify:)`: what it stores, and when it reports a change.
@Suite struct InterfaceTableTests {
    static let wired = InterfaceClassification(.wiredEthernet)

    static func link(
        _ index: Int32 = 2, _ name: String? = "eth0", flags: UInt32 = LinkFlags.usable, operState: UInt8? = IFOper.up,
        kind: String? = nil
    ) -> LinkMessage {
        LinkMessage(
            index: index, name: name, flags: flags, hardwareType: ARPHRD.ether, operState: operState, kind: kind)
    }

    @Test func newLinkIsStoredAndReportedAsAChange() {
        var changed: Bool
        var table = InterfaceTable()
        changed = table.apply(.newLink(Self.link()), classify: { _ in Self.wired })
        #expect(changed)
        let state = table[2]
        #expect(state?.name == "eth0")
        #expect(state?.operState == IFOper.up)
        #expect(state?.classification == Self.wired)
        #expect(state?.isUp == true)
        #expect(state?.hasCarrier == true)
    }

    @Test func identicalNewLinkIsNoChange() {
        var changed: Bool
        var table = InterfaceTable()
        var classifications = 0
        let classify: (LinkMessage) -> InterfaceClassification = { _ in
            classifications += 1
            return Self.wired
        }
        changed = table.apply(.newLink(Self.link()), classify: classify)
        #expect(changed)
        let before = table
        changed = table.apply(.newLink(Self.link()), classify: classify)
        #expect(!changed)
        #expect(table == before)
        #expect(classifications == 1)
    }

    @Test func flagOrOperstateChangeIsAChangeWithoutReclassifying() {
        var changed: Bool
        var table = InterfaceTable()
        var classifications = 0
        let classify: (LinkMessage) -> InterfaceClassification = { _ in
            classifications += 1
            return Self.wired
        }
        table.apply(.newLink(Self.link()), classify: classify)
        changed = table.apply(.newLink(Self.link(flags: LinkFlags.noCarrier)), classify: classify)
        #expect(changed)
        #expect(table[2]?.hasCarrier == false)
        changed = table.apply(
            .newLink(Self.link(flags: LinkFlags.noCarrier, operState: IFOper.down)), classify: classify)
        #expect(changed)
        #expect(table[2]?.operState == IFOper.down)
        #expect(classifications == 1)
    }

    @Test func renameReclassifies() {
        var table = InterfaceTable()
        table.apply(.newLink(Self.link()), classify: { _ in Self.wired })
        let changed = table.apply(.newLink(Self.link(2, "wwan0"))) { link in
            #expect(link.name == "wwan0")
            return InterfaceClassification(.cellular)
        }
        #expect(changed)
        #expect(table[2]?.classification.type == .cellular)
    }

    @Test func partialNewLinkKeepsNameKindAndOperstate() {
        var changed: Bool
        var table = InterfaceTable()
        table.apply(.newLink(Self.link(kind: "veth")), classify: { _ in Self.wired })
        let partial = Self.link(2, nil, operState: nil, kind: nil)
        changed = table.apply(.newLink(partial), classify: { _ in InterfaceClassification(.other) })
        #expect(!changed)
        #expect(table[2]?.name == "eth0")
        #expect(table[2]?.kind == "veth")
        #expect(table[2]?.operState == IFOper.up)
        #expect(table[2]?.classification == Self.wired)
    }

    @Test func delLinkRemovesTheLinkAndItsAddresses() throws {
        var changed: Bool
        var table = try TableBuilder()
            .link(2, "eth0")
            .address(2, "192.0.2.10/24")
            .address(2, "2001:db8::10/64")
            .link(3, "eth1")
            .address(3, "198.51.100.1/24")
            .table
        changed = table.apply(.deletedLink(Self.link()), classify: { _ in Self.wired })
        #expect(changed)
        #expect(table[2] == nil)
        #expect(table.addresses(of: 2).isEmpty)
        #expect(table.owner(of: try IPAddress("192.0.2.10")) == nil)
        #expect(table[3]?.name == "eth1")
        #expect(table.addresses(of: 3).count == 1)
        changed = table.apply(.deletedLink(Self.link()), classify: { _ in Self.wired })
        #expect(!changed)
    }

    /// Links and address lists are kept in index order whatever order the kernel
    /// announces them in, and each is found by its index after inserts and removals
    /// anywhere in the list (the binary search's edges: first, last, between).
    @Test func linksAndAddressesStayInIndexOrder() throws {
        var table = InterfaceTable()
        let order: [Int32] = [7, 2, 9, 1, 5, 8, 3, 6, 4]
        for index in order {
            table.apply(.newLink(Self.link(index, "if\(index)")), classify: { _ in Self.wired })
            table.apply(
                .newAddress(try addressMessage(index, "192.0.2.\(index)/24")), classify: { _ in Self.wired })
        }
        #expect(table.interfaces.map(\.index) == Array(1...9))
        #expect(table.addresses.map(\.index) == Array(1...9))
        for index in order { #expect(table[index]?.name == "if\(index)") }
        #expect(table[0] == nil && table[10] == nil)
        for gone: Int32 in [1, 9, 5] {
            let changed = table.apply(.deletedLink(Self.link(gone)), classify: { _ in Self.wired })
            #expect(changed)
        }
        #expect(table.interfaces.map(\.index) == [2, 3, 4, 6, 7, 8])
        #expect(table.addresses.map(\.index) == [2, 3, 4, 6, 7, 8])
        // The last address of a link goes: so does its (empty) list.
        let removed = table.apply(.deletedAddress(try addressMessage(4, "192.0.2.4/24")), classify: { _ in Self.wired })
        #expect(removed)
        #expect(table.addresses.map(\.index) == [2, 3, 6, 7, 8])
        #expect(table.addresses(of: 4).isEmpty && table[4]?.name == "if4")
        #expect(try table.owner(of: IPAddress("192.0.2.8"))?.index == 8)
    }

    /// After a pass publishes the table, `separate()` gives the reader's table lists
    /// of its own (the next event changes them in place), equal to the published ones.
    @Test func separateCopiesSharedListsOnce() throws {
        var table = try TableBuilder().link(2, "eth0").address(2, "192.0.2.10/24").link(3, "eth1").table
        func base<T>(_ list: [T]) -> UnsafeRawPointer? {
            list.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        }
        let published = table
        #expect(base(table.interfaces) == base(published.interfaces))
        table.separate()
        #expect(table == published)
        #expect(base(table.interfaces) != base(published.interfaces))
        #expect(base(table.addresses) != base(published.addresses))
        let own = base(table.interfaces)
        table.separate()
        #expect(base(table.interfaces) == own)
        table.apply(.newLink(Self.link(3, "eth1", flags: LinkFlags.noCarrier)), classify: { _ in Self.wired })
        #expect(base(table.interfaces) == own)
        #expect(published[3]?.hasCarrier == true && table[3]?.hasCarrier == false)
    }

    /// An address of a link the table doesn't know is stale or forged: ignored, so
    /// such messages can't grow the table.
    @Test func addressOfUnknownLinkIsIgnored() throws {
        var table = InterfaceTable()
        for i in 0..<1000 {
            let changed = table.apply(
                .newAddress(try addressMessage(Int32(100 + i), "192.0.2.44/24")), classify: { _ in Self.wired })
            #expect(!changed)
        }
        #expect(table.addresses.isEmpty)
        #expect(table.owner(of: try IPAddress("192.0.2.44")) == nil)
    }

    @Test func addressesAreKeyedByAddressAndPrefix() throws {
        var changed: Bool
        var table = TableBuilder().link(2, "eth0").table
        let ready = try addressMessage(2, "2001:db8::10/64", flags: IFA.fTentative)
        changed = table.apply(.newAddress(ready), classify: { _ in Self.wired })
        #expect(changed)
        changed = table.apply(.newAddress(ready), classify: { _ in Self.wired })
        #expect(!changed)
        #expect(table.addresses(of: 2).first?.isTentative == true)

        let settled = try addressMessage(2, "2001:db8::10/64")
        changed = table.apply(.newAddress(settled), classify: { _ in Self.wired })
        #expect(changed)
        #expect(table.addresses(of: 2).count == 1)
        #expect(table.addresses(of: 2).first?.isTentative == false)

        let otherPrefix = try addressMessage(2, "2001:db8::10/128")
        changed = table.apply(.newAddress(otherPrefix), classify: { _ in Self.wired })
        #expect(changed)
        #expect(table.addresses(of: 2).count == 2)

        changed = table.apply(.deletedAddress(settled), classify: { _ in Self.wired })
        #expect(changed)
        changed = table.apply(.deletedAddress(settled), classify: { _ in Self.wired })
        #expect(!changed)
        #expect(table.addresses(of: 2).map(\.prefixLength) == [128])
        let owner = try #require(table.owner(of: try IPAddress("2001:db8::10")))
        #expect(owner.index == 2)
    }

    @Test func addressFlags() throws {
        let address = try IPAddress("2001:db8::1")
        func entry(_ flags: UInt32) -> InterfaceAddress {
            InterfaceAddress(address: address, prefixLength: 64, flags: flags, scope: RTScope.universe)
        }
        #expect(entry(IFA.fTentative).isTentative)
        #expect(!entry(IFA.fTentative | IFA.fOptimistic).isTentative)
        #expect(entry(IFA.fDADFailed | IFA.fTentative).isDADFailed)
        #expect(!entry(IFA.fNoDAD).isTentative)
    }

    @Test(arguments: [
        NetlinkMessage.route(
            RouteMessage(
                family: AddressFamily.inet, type: RTN.unicast, table: 254, destinationLength: 0, outputInterface: 2,
                hasGateway: true, preferredSource: nil, priority: nil), deleted: true),
        .rule(deleted: false), .error(errno: 0), .done, .overrun, .ignored(type: 99),
    ])
    func messagesWithoutLinkOrAddressStateAreNoChange(_ message: NetlinkMessage) throws {
        var changed: Bool
        var table = try TableBuilder().link(2, "eth0").address(2, "192.0.2.10/24").table
        let before = table
        changed = table.apply(message, classify: { _ in Self.wired })
        #expect(!changed)
        #expect(table == before)
    }

    @Test func bridgeLinkMessagesAreIgnoredByTheParser() throws {
        let afBridge: UInt8 = 7
        let bytes = NetlinkBuilder.newLink(index: 2, name: "eth0", family: afBridge)
        let parsed = NetlinkParser.parse(bytes)
        #expect(parsed.malformed == nil)
        #expect(parsed.messages.map(\.message) == [.ignored(type: NLMsgType.newLink)])

        var changed: Bool
        var table = TableBuilder().link(2, "eth0", flags: LinkFlags.noCarrier).table
        let before = table
        for message in parsed.messages {
            changed = table.apply(message.message, classify: { _ in InterfaceClassification(.other) })
            #expect(!changed)
        }
        #expect(table == before)

        let unspec = NetlinkParser.parse(NetlinkBuilder.newLink(index: 2, name: "eth0"))
        guard case .newLink(let link) = unspec.messages.first?.message else {
            Issue.record("AF_UNSPEC link not parsed: \(unspec)")
            return
        }
        #expect(link.name == "eth0")
    }
}
