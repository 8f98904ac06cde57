import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityBase
@_spi(Testing) @testable import ReachabilityCore

/// Neighbor-table messages (RTM_NEWNEIGH / RTM_DELNEIGH): parsing, and what the
/// interface table keeps of them for the network identity.
@Suite struct NeighborTests {
    /// One RTM_*NEIGH datagram: ndmsg (family, index, state), NDA_DST, NDA_LLADDR.
    static func datagram(
        type: UInt16 = 28, family: UInt8 = 2, index: Int32 = 3, state: UInt16 = 0x80,
        destination: [UInt8] = [192, 0, 2, 2], linkLayer: [UInt8]? = [2, 0, 0, 0, 0, 0xaa]
    ) -> [UInt8] {
        func attribute(_ kind: UInt16, _ payload: [UInt8]) -> [UInt8] {
            let length = UInt16(4 + payload.count)
            var bytes =
                withUnsafeBytes(of: length.littleEndian, Array.init)
                + withUnsafeBytes(of: kind.littleEndian, Array.init)
            bytes += payload
            while bytes.count % 4 != 0 { bytes.append(0) }
            return bytes
        }
        var body: [UInt8] = [family, 0, 0, 0] + withUnsafeBytes(of: index.littleEndian, Array.init)
        body += withUnsafeBytes(of: state.littleEndian, Array.init) + [0, 1]
        body += attribute(1, destination)
        if let linkLayer { body += attribute(2, linkLayer) }
        let length = UInt32(16 + body.count)
        var header =
            withUnsafeBytes(of: length.littleEndian, Array.init) + withUnsafeBytes(of: type.littleEndian, Array.init)
        header += [0, 0] + [UInt8](repeating: 0, count: 8)
        return header + body
    }

    static func message(_ bytes: [UInt8]) -> NetlinkMessage? {
        let result = NetlinkParser.parse(bytes)
        #expect(result.malformed == nil, "\(String(describing: result.malformed))")
        return result.messages.first?.message
    }

    @Test("RTM_NEWNEIGH and RTM_DELNEIGH parse: index, address, state, link-layer address")
    func parse() throws {
        guard case .neighbor(let neighbor, let deleted)? = Self.message(Self.datagram()) else {
            Issue.record("not a neighbor message")
            return
        }
        #expect(!deleted)
        #expect(neighbor.index == 3)
        #expect(neighbor.address == (try IPAddress("192.0.2.2")))
        #expect(neighbor.resolvedLinkLayerAddress == [2, 0, 0, 0, 0, 0xaa])
        guard case .neighbor(_, let gone)? = Self.message(Self.datagram(type: 29)) else {
            Issue.record("not a neighbor message")
            return
        }
        #expect(gone)
        // An incomplete entry has no resolved address; a bridge FDB entry is ignored.
        guard case .neighbor(let incomplete, _)? = Self.message(Self.datagram(state: 0x01, linkLayer: nil)) else {
            Issue.record("not a neighbor message")
            return
        }
        #expect(incomplete.resolvedLinkLayerAddress == nil)
        #expect(Self.message(Self.datagram(family: 7)) == .ignored(type: 28))
    }

    @Test("malformed neighbor messages are reported, never read past their end")
    func malformed() {
        let full = Self.datagram()
        for cut in [20, 27] {
            var bytes = Array(full[..<cut])
            bytes.replaceSubrange(0..<4, with: withUnsafeBytes(of: UInt32(cut).littleEndian, Array.init))
            #expect(NetlinkParser.parse(bytes).malformed != nil, "cut at \(cut)")
        }
        #expect(NetlinkParser.parse(Self.datagram(destination: [1, 2, 3])).malformed != nil, "NDA_DST of 3 bytes")
        #expect(
            NetlinkParser.parse(Self.datagram(linkLayer: [UInt8](repeating: 1, count: 40))).malformed != nil,
            "NDA_LLADDR of 40 bytes")
    }

    @Test("the table keeps resolved addresses of known links; deletion removes them, failure doesn't; bounded")
    func table() throws {
        var table = InterfaceTable()
        let link = LinkMessage(index: 3, name: "veth0", flags: IFF.up | IFF.lowerUp, hardwareType: 1, operState: 6)
        table.apply(.newLink(link)) { _ in InterfaceClassification(.wiredEthernet) }
        let gateway = try IPAddress("192.0.2.2")
        func apply(_ bytes: [UInt8]) -> Bool {
            table.apply(Self.message(bytes)!) { _ in InterfaceClassification(.wiredEthernet) }
        }
        #expect(apply(Self.datagram()))
        #expect(table.linkLayerAddress(of: gateway, on: 3) == [2, 0, 0, 0, 0, 0xaa])
        #expect(!apply(Self.datagram(state: 0x04)), "the same address, stale: no change")
        #expect(!apply(Self.datagram(state: 0x01, linkLayer: nil)), "being resolved again: what was known stands")
        #expect(apply(Self.datagram(linkLayer: [2, 0, 0, 0, 0, 0xbb])))
        #expect(apply(Self.datagram(type: 29)))
        #expect(table.linkLayerAddress(of: gateway, on: 3) == nil)
        #expect(apply(Self.datagram()))
        #expect(!apply(Self.datagram(state: 0x20, linkLayer: nil)), "failed: the last address stands")
        #expect(table.linkLayerAddress(of: gateway, on: 3) == [2, 0, 0, 0, 0, 0xaa])
        #expect(!apply(Self.datagram(index: 9)), "a link the table doesn't know")
        for host in 0..<(InterfaceTable.neighborLimit + 10) {
            _ = apply(
                Self.datagram(destination: [10, UInt8(host >> 16 & 0xFF), UInt8(host >> 8 & 0xFF), UInt8(host & 0xFF)]))
        }
        #expect(table.neighbors.count == InterfaceTable.neighborLimit)
        table.apply(.deletedLink(link)) { _ in InterfaceClassification(.wiredEthernet) }
        #expect(table.neighbors.isEmpty)
    }
}
