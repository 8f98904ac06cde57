import Reachability

@_spi(Testing) @testable import ReachabilityCore

/// Builds raw rtnetlink bytes (host byte order, as the kernel sends them) for
/// parser tests that need a message the kernel would never send.
enum NetlinkBuilder {
    static let headerSize = 16

    /// Native-endian bytes of a fixed-width integer.
    static func raw<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value) { Array($0) }
    }

    static func padded(_ bytes: [UInt8]) -> [UInt8] {
        bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4)
    }

    /// One message: a 16-byte `nlmsghdr` and `payload`, padded to 4 bytes.
    /// `length` overrides `nlmsg_len` (default: header + payload, unpadded).
    static func message(
        type: UInt16, flags: UInt16 = 0, sequence: UInt32 = 1, payload: [UInt8], length: UInt32? = nil
    ) -> [UInt8] {
        let nlmsgLen = length ?? UInt32(headerSize + payload.count)
        let header = raw(nlmsgLen) + raw(type) + raw(flags) + raw(sequence) + raw(UInt32(0))
        return padded(header + payload)
    }

    /// One attribute: `nlattr` and `value`, padded. `length` overrides `nla_len`.
    static func attribute(_ type: UInt16, _ value: [UInt8], length: UInt16? = nil) -> [UInt8] {
        padded(raw(length ?? UInt16(4 + value.count)) + raw(type) + value)
    }

    /// A NUL-terminated string attribute value.
    static func cString(_ text: String) -> [UInt8] { Array(text.utf8) + [0] }

    /// `struct ifinfomsg`.
    static func ifinfomsg(
        family: UInt8 = AddressFamily.unspec, hardwareType: UInt16 = ARPHRD.ether, index: Int32, flags: UInt32
    ) -> [UInt8] {
        [family, 0] + raw(hardwareType) + raw(index) + raw(flags) + raw(UInt32(0))
    }

    /// `struct ifaddrmsg`.
    static func ifaddrmsg(family: UInt8, prefixLength: UInt8, flags: UInt8 = 0, scope: UInt8 = 0, index: UInt32)
        -> [UInt8]
    {
        [family, prefixLength, flags, scope] + raw(index)
    }

    /// `struct rtmsg`.
    static func rtmsg(family: UInt8, destinationLength: UInt8, table: UInt8 = 254, type: UInt8 = RTN.unicast)
        -> [UInt8]
    {
        [family, destinationLength, 0, 0, table, 4, 0, type] + raw(UInt32(0))
    }

    /// RTM_NEWLINK for an up Ethernet-like link with a name and optional kind.
    static func newLink(index: Int32, name: String, kind: String? = nil, family: UInt8 = AddressFamily.unspec)
        -> [UInt8]
    {
        var payload = ifinfomsg(family: family, index: index, flags: IFF.up | IFF.lowerUp)
        payload += attribute(IFLA.ifname, cString(name))
        payload += attribute(IFLA.operstate, [IFOper.up])
        if let kind {
            payload += attribute(IFLA.linkinfo, attribute(IFLA.infoKind, cString(kind)))
        }
        return message(type: NLMsgType.newLink, payload: payload)
    }

    /// RTM_NEWADDR with one IFA_ADDRESS of any byte count.
    static func newAddress(family: UInt8, address: [UInt8], index: UInt32 = 2, extra: [UInt8] = []) -> [UInt8] {
        let payload =
            ifaddrmsg(family: family, prefixLength: family == AddressFamily.inet ? 24 : 64, index: index)
            + attribute(IFA.address, address) + extra
        return message(type: NLMsgType.newAddr, payload: payload)
    }
}

/// Walks a buffer by `nlmsg_len`, independently of the parser: each message's
/// start and length.
func messageSpans(_ bytes: [UInt8]) -> [(start: Int, length: Int)] {
    var spans: [(Int, Int)] = []
    var offset = 0
    while offset + NetlinkBuilder.headerSize <= bytes.count {
        let length = Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) })
        guard length >= NetlinkBuilder.headerSize, offset + length <= bytes.count else { break }
        spans.append((offset, length))
        offset += (length + 3) & ~3
    }
    return spans
}
