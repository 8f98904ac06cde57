public import CNetlink

/// A link as rtnetlink describes it (RTM_NEWLINK / RTM_DELLINK, family AF_UNSPEC).
@_spi(Testing) public struct LinkMessage: Sendable, Equatable {
    package var index: Int32
    package var name: String?
    package var flags: UInt32
    package var hardwareType: UInt16
    package var operState: UInt8?
    package var kind: String?
}

/// An interface address (RTM_NEWADDR / RTM_DELADDR).
@_spi(Testing) public struct AddressMessage: Sendable, Equatable {
    package var index: Int32
    package var address: IPAddress
    package var prefixLength: UInt8
    package var flags: UInt32
    package var scope: UInt8
}

/// A neighbor-table entry (RTM_NEWNEIGH / RTM_DELNEIGH): an IP address on a link
/// and, once resolved, its link-layer address.
@_spi(Testing) public struct NeighborMessage: Sendable, Equatable {
    package var index: Int32
    package var address: IPAddress
    /// NUD_* state bits.
    package var state: UInt16
    /// NDA_LLADDR, when the message carries one (at most 32 bytes).
    package var linkLayerAddress: [UInt8]?

    /// The link-layer address, when the state says it is a resolved one.
    package var resolvedLinkLayerAddress: [UInt8]? {
        state & NDA.validStates != 0 ? linkLayerAddress.flatMap { $0.isEmpty ? nil : $0 } : nil
    }
}

/// A route (RTM_NEWROUTE / RTM_DELROUTE, and the answer to an RTM_GETROUTE lookup).
@_spi(Testing) public struct RouteMessage: Sendable, Equatable {
    package var family: UInt8
    package var type: UInt8
    package var table: UInt32
    package var destinationLength: UInt8
    /// RTA_CACHEINFO's `rta_expires` when positive: ticks of 10 ms (USER_HZ) the route is
    /// still used for; 0 without a lifetime. (Four bytes where the layout has room: a
    /// route, and every answer holding one, is copied inline while it takes at most 128.)
    package var lifetimeTicks: UInt32 = 0
    /// RTA_DST: the prefix (nil for a default route, or in a lookup's answer without it).
    public package(set) var destination: IPAddress? = nil
    package var outputInterface: Int32?
    package var hasGateway: Bool
    package var preferredSource: IPAddress?
    package var priority: UInt32?
    /// RTA_GATEWAY (same family), or RTA_VIA's address (IPv4 over an IPv6 gateway).
    package var gateway: IPAddress? = nil
    /// RTA_MULTIPATH: each next hop's interface and gateway.
    package var nexthops: [Nexthop] = []

    /// How long the route is still used (RTA_CACHEINFO's `rta_expires`): set when it
    /// has a lifetime, as an IPv6 route from a Router Advertisement or one added with
    /// `expires` has. The kernel stops answering with it then, with no message until
    /// its garbage collection deletes it, up to `net.ipv6.route.gc_interval` later.
    package var remainingLifetime: Duration? {
        get { lifetimeTicks == 0 ? nil : .milliseconds(Int64(lifetimeTicks) * 10) }
        set {
            lifetimeTicks =
                newValue.map {
                    UInt32(clamping: $0.components.seconds * 100 + $0.components.attoseconds / 10_000_000_000_000_000)
                } ?? 0
        }
    }

    /// Calls `body` with each link the route goes out of: its own, and a multipath
    /// route's next hops' (without making an array: a pass asks it of every answer).
    package func forEachOutputLink(_ body: (Int32) -> Void) {
        if let outputInterface { body(outputInterface) }
        for nexthop in nexthops { body(nexthop.outputInterface) }
    }

    package struct Nexthop: Sendable, Equatable {
        package var outputInterface: Int32
        package var gateway: IPAddress?
    }

    /// Whether this route's prefix covers `address`: only then can adding or
    /// deleting it change the kernel's answer for that address (longest-prefix
    /// match only ever picks a covering route). A prefix we can't read covers all.
    package func covers(_ address: IPAddress) -> Bool { prefix.covers(address) }

    /// The route's destination prefix.
    package var prefix: RoutePrefix {
        RoutePrefix(family: family, length: destinationLength, destination: destination)
    }

    /// The gateway used out of `index`: the route's own, or its next hop's there.
    package func gateway(via index: Int32) -> IPAddress? {
        if let hop = nexthops.first(where: { $0.outputInterface == index }) { return hop.gateway }
        return outputInterface == index ? gateway : nil
    }
}

/// A route's destination prefix: what decides which addresses a route event can affect.
package struct RoutePrefix: Sendable, Hashable {
    package var family: UInt8
    package var length: UInt8
    /// RTA_DST (nil for a default route, or when the event carried none).
    package var destination: IPAddress?

    /// A default route (or one whose prefix could not be read): it covers every
    /// address of its family.
    package var isDefault: Bool { length == 0 || destination == nil }

    /// Whether the prefix covers `address`.
    package func covers(_ address: IPAddress) -> Bool {
        guard family == AddressFamily.inet || family == AddressFamily.inet6 else { return false }
        guard (family == AddressFamily.inet) == (address.family == .ipv4) else { return false }
        guard length > 0 else { return true }
        guard let destination else { return true }
        return address.hasPrefix(destination, length: Int(length))
    }
}

/// One parsed netlink message.
@_spi(Testing) public enum NetlinkMessage: Sendable, Equatable {
    /// RTM_NEWLINK: a link appeared or changed (also each entry of a link dump).
    case newLink(LinkMessage)
    /// RTM_DELLINK: a link went away.
    case deletedLink(LinkMessage)
    /// RTM_NEWADDR: an address was added or changed (also each entry of a dump).
    case newAddress(AddressMessage)
    /// RTM_DELADDR: an address was removed.
    case deletedAddress(AddressMessage)
    /// RTM_NEWROUTE or (`deleted`) RTM_DELROUTE, or the answer to a lookup.
    case route(RouteMessage, deleted: Bool)
    /// RTM_NEWNEIGH / RTM_DELNEIGH (IPv4 and IPv6 entries; bridge FDB entries are ignored).
    case neighbor(NeighborMessage, deleted: Bool)
    /// RTM_NEWRULE or (`deleted`) RTM_DELRULE: a policy rule changed.
    case rule(deleted: Bool)
    /// RTM_NEWNETCONF or RTM_DELNETCONF: a device's (or `all`'s) IP settings changed.
    case netconf
    /// RTM_NEWNEXTHOP or (`deleted`) RTM_DELNEXTHOP: a nexthop object changed.
    case nexthop(deleted: Bool)
    /// NLMSG_ERROR: `errno` 0 is an acknowledgement.
    case error(errno: Int32)
    /// NLMSG_DONE: the end of a dump.
    case done
    /// NLMSG_OVERRUN: the kernel lost data.
    case overrun
    /// A valid message of a type or family the monitor does not use.
    case ignored(type: UInt16)
}

/// A message with the header fields the socket layer matches on.
@_spi(Testing) public struct ParsedMessage: Sendable, Equatable {
    package var sequence: UInt32
    package var flags: UInt16
    /// The message itself.
    public package(set) var message: NetlinkMessage

    /// A message with its header's sequence number and flags.
    public init(sequence: UInt32, flags: UInt16, message: NetlinkMessage) {
        self.sequence = sequence
        self.flags = flags
        self.message = message
    }
}

/// Why a buffer could not be parsed completely.
@_spi(Testing) public struct MalformedMessage: Error, Sendable, Equatable, CustomStringConvertible {
    package var offset: Int
    package var reason: String
    /// "malformed netlink message at byte OFFSET: REASON".
    public var description: String { "malformed netlink message at byte \(offset): \(reason)" }

    /// Where in the buffer, and why.
    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }
}

/// The message walk every netlink datagram gets, rtnetlink's and generic netlink's:
/// each header checked with libmnl (`mnl_nlmsg_ok`) and as the unsigned length it
/// is, in 4-byte-aligned memory (copied there when `bytes` is not). SPI public and
/// `@inlinable`, as ``NetlinkParser/forEach(_:_:)`` is, so that the reader's closure is
/// specialized into the walk: the compiler inlines only public bodies across modules.
@_spi(Testing) public enum NetlinkDatagram {
    /// Calls `body` with each message of `bytes` in order, until a header is out of
    /// bounds or `body` returns a reason the message is malformed; returns where
    /// and why the walk stopped, nil when every message was read.
    @inlinable public static func forEachMessage(
        _ bytes: UnsafeRawBufferPointer, _ body: (UnsafePointer<nlmsghdr>) -> String?
    ) -> MalformedMessage? {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return nil }
        guard bytes.count <= Int(Int32.max) else {
            return MalformedMessage(offset: 0, reason: "buffer larger than 2 GiB")
        }
        if Int(bitPattern: base) % 4 == 0 { return walk(base, count: bytes.count, body) }
        var aligned = [UInt32](repeating: 0, count: (bytes.count + 3) / 4)
        return aligned.withUnsafeMutableBytes { copy in
            copy.copyMemory(from: bytes)
            // The copy has room for a whole number of words; only `bytes.count` are input.
            return walk(UnsafeRawPointer(copy.baseAddress!), count: bytes.count, body)
        }
    }

    @inlinable static func walk(
        _ base: UnsafeRawPointer, count: Int, _ body: (UnsafePointer<nlmsghdr>) -> String?
    ) -> MalformedMessage? {
        var remaining = Int32(count)
        var header = base.assumingMemoryBound(to: nlmsghdr.self)
        while remaining > 0 {
            let offset = count - Int(remaining)
            // libmnl compares `(int)nlmsg_len`: a length of 2^31 or more turns negative
            // and passes, so check it as the unsigned value it is, too.
            guard mnl_nlmsg_ok(header, remaining), header.pointee.nlmsg_len <= UInt32(remaining) else {
                return MalformedMessage(
                    offset: offset, reason: "header or length out of bounds (\(remaining) bytes left)")
            }
            if let reason = body(header) { return MalformedMessage(offset: offset, reason: reason) }
            header = UnsafePointer(mnl_nlmsg_next(header, &remaining))
        }
        return nil
    }
}

/// Parses the contents of one netlink datagram. Every length is checked (with
/// libmnl's `mnl_nlmsg_ok`, `mnl_attr_ok` and `mnl_attr_validate`) before it is
/// read; unknown attribute types are skipped; a malformed message stops parsing
/// and is reported, with the messages before it, so the caller can resync.
@_spi(Testing) public enum NetlinkParser {
    /// What a datagram held: its messages, and where parsing stopped when one
    /// was malformed.
    public struct Result: Sendable {
        /// The messages parsed, in order (those before a malformed one, if any).
        public package(set) var messages: [ParsedMessage] = []
        package var malformed: MalformedMessage?
    }

    /// Parses `bytes`, which may start at any alignment (it is copied when needed).
    package static func parse(_ bytes: UnsafeRawBufferPointer) -> Result {
        var result = Result()
        result.malformed = forEach(bytes) { message in
            result.messages.append(message)
            return true
        }
        return result
    }

    /// Parses `bytes` one message at a time, handing each to `body` as it is read
    /// (no array of them is made: the reader's drain and the lookups' answers take
    /// this path). `body` returns false to stop early. Returns where and why
    /// parsing stopped on a malformed message, nil otherwise.
    @inlinable public static func forEach(_ bytes: UnsafeRawBufferPointer, _ body: (ParsedMessage) -> Bool)
        -> MalformedMessage?
    {
        var stopped = false
        let malformed = NetlinkDatagram.forEachMessage(bytes) { header in
            if stopped { return nil }
            switch parseOne(header) {
            case .success(let message):
                let parsed = ParsedMessage(
                    sequence: header.pointee.nlmsg_seq, flags: header.pointee.nlmsg_flags, message: message)
                stopped = !body(parsed)
                return nil
            case .failure(let reason):
                return reason
            }
        }
        return stopped ? nil : malformed
    }

    /// Parses the contents of one netlink datagram held in `bytes`.
    public static func parse(_ bytes: [UInt8]) -> Result {
        bytes.withUnsafeBytes { parse($0) }
    }

    @usableFromInline enum One {
        case success(NetlinkMessage)
        case failure(String)
    }

    @usableFromInline static func parseOne(_ header: UnsafePointer<nlmsghdr>) -> One {
        let type = header.pointee.nlmsg_type
        switch type {
        case NLMsgType.done:
            return .success(.done)
        case NLMsgType.overrun:
            return .success(.overrun)
        case NLMsgType.noop:
            return .success(.ignored(type: type))
        case NLMsgType.error:
            guard mnl_nlmsg_get_payload_len(header) >= MemoryLayout<Int32>.size else {
                return .failure("NLMSG_ERROR shorter than its error code")
            }
            let code = mnl_nlmsg_get_payload(header).loadUnaligned(as: Int32.self)
            // The kernel sends negative errno values; take the magnitude without trapping on Int32.min.
            return .success(.error(errno: code == Int32.min ? Int32.max : abs(code)))
        case NLMsgType.newLink, NLMsgType.delLink:
            return parseLink(header, deleted: type == NLMsgType.delLink)
        case NLMsgType.newAddr, NLMsgType.delAddr:
            return parseAddress(header, deleted: type == NLMsgType.delAddr)
        case NLMsgType.newRoute, NLMsgType.delRoute:
            return parseRoute(header, deleted: type == NLMsgType.delRoute)
        case NLMsgType.newRule, NLMsgType.delRule:
            return .success(.rule(deleted: type == NLMsgType.delRule))
        case NLMsgType.newNetconf, NLMsgType.delNetconf:
            return .success(.netconf)
        case NLMsgType.newNexthop, NLMsgType.delNexthop:
            return .success(.nexthop(deleted: type == NLMsgType.delNexthop))
        case NLMsgType.newNeigh, NLMsgType.delNeigh:
            return parseNeighbor(header, deleted: type == NLMsgType.delNeigh)
        default:
            return .success(.ignored(type: type))
        }
    }

    /// Calls `body` for each attribute after a fixed header of `headerSize` bytes.
    /// Returns a failure reason when the header or an attribute is out of bounds.
    private static func forEachAttribute(
        _ header: UnsafePointer<nlmsghdr>, headerSize: Int, _ body: (UnsafePointer<nlattr>) -> String?
    ) -> String? {
        let aligned = cnl_align(headerSize)
        guard mnl_nlmsg_get_payload_len(header) >= aligned else {
            return "payload shorter than its \(headerSize)-byte family header"
        }
        // The message ends at nlmsg_len, not at its aligned tail (up to 3 bytes later,
        // possibly past the buffer): attributes must fit inside the message itself.
        let tail = UnsafeRawPointer(header) + Int(header.pointee.nlmsg_len)
        var attribute = UnsafeRawPointer(mnl_nlmsg_get_payload_offset(header, aligned))!
        while attribute < tail {
            let left = tail - attribute
            let pointer = attribute.assumingMemoryBound(to: nlattr.self)
            guard mnl_attr_ok(pointer, Int32(left)) else {
                return "attribute length out of bounds (\(left) bytes left)"
            }
            if let failure = body(pointer) { return failure }
            attribute = UnsafeRawPointer(mnl_attr_next(pointer))
        }
        return nil
    }

    private static func u32(_ attribute: UnsafePointer<nlattr>, _ name: String) -> Swift.Result<UInt32, Failure> {
        guard mnl_attr_validate(attribute, MNL_TYPE_U32) >= 0 else {
            return .failure(Failure("\(name) is not 4 bytes"))
        }
        return .success(mnl_attr_get_u32(attribute))
    }

    private struct Failure: Error {
        package var reason: String
        package init(_ reason: String) { self.reason = reason }
    }

    private static func string(_ attribute: UnsafePointer<nlattr>) -> String {
        let length = Int(mnl_attr_get_payload_len(attribute))
        let payload = UnsafeRawBufferPointer(start: mnl_attr_get_payload(attribute), count: length)
        let bytes = payload.prefix(while: { $0 != 0 })
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func address(_ attribute: UnsafePointer<nlattr>, family: UInt8) -> IPAddress? {
        let length = Int(mnl_attr_get_payload_len(attribute))
        let expected = family == AddressFamily.inet ? 4 : family == AddressFamily.inet6 ? 16 : -1
        guard length == expected, let payload = mnl_attr_get_payload(attribute) else { return nil }
        return IPAddress(networkOrder: payload, count: length, scopeID: 0)
    }

    /// `struct ndmsg { u8 family; u8 pad1; u16 pad2; s32 ifindex; u16 state; u8 flags; u8 type; }`
    /// (12 bytes), then NDA_DST and NDA_LLADDR among other attributes.
    private static func parseNeighbor(_ header: UnsafePointer<nlmsghdr>, deleted: Bool) -> One {
        let size = 12
        guard mnl_nlmsg_get_payload_len(header) >= size else { return .failure("neighbor message shorter than ndmsg") }
        guard let raw = mnl_nlmsg_get_payload(header) else { return .failure("neighbor message without a payload") }
        let payload = UnsafeRawPointer(raw)
        let family = payload.load(as: UInt8.self)
        guard family == AddressFamily.inet || family == AddressFamily.inet6 else {
            return .success(.ignored(type: header.pointee.nlmsg_type))
        }
        let index = payload.loadUnaligned(fromByteOffset: 4, as: Int32.self)
        let state = payload.loadUnaligned(fromByteOffset: 8, as: UInt16.self)
        var destination: IPAddress?
        var linkLayer: [UInt8]?
        let failure = forEachAttribute(header, headerSize: size) { attribute in
            switch mnl_attr_get_type(attribute) {
            case NDA.destination:
                guard let value = address(attribute, family: family) else {
                    return "NDA_DST of the wrong length for family \(family)"
                }
                destination = value
            case NDA.linkLayerAddress:
                let length = Int(mnl_attr_get_payload_len(attribute))
                guard length <= 32 else { return "NDA_LLADDR of \(length) bytes" }
                linkLayer = Array(UnsafeRawBufferPointer(start: mnl_attr_get_payload(attribute), count: length))
            default:
                break
            }
            return nil
        }
        if let failure { return .failure(failure) }
        guard let destination else { return .failure("neighbor message without NDA_DST") }
        let message = NeighborMessage(index: index, address: destination, state: state, linkLayerAddress: linkLayer)
        return .success(.neighbor(message, deleted: deleted))
    }

    private static func parseLink(_ header: UnsafePointer<nlmsghdr>, deleted: Bool) -> One {
        guard mnl_nlmsg_get_payload_len(header) >= MemoryLayout<ifinfomsg>.size else {
            return .failure("link message shorter than ifinfomsg")
        }
        let info = mnl_nlmsg_get_payload(header).loadUnaligned(as: ifinfomsg.self)
        // Bridge-port (AF_BRIDGE) and other per-family link messages are partial views.
        guard info.ifi_family == AddressFamily.unspec else {
            return .success(.ignored(type: header.pointee.nlmsg_type))
        }
        var link = LinkMessage(
            index: info.ifi_index, name: nil, flags: info.ifi_flags, hardwareType: info.ifi_type, operState: nil,
            kind: nil)
        let failure = forEachAttribute(header, headerSize: MemoryLayout<ifinfomsg>.size) { attribute in
            switch mnl_attr_get_type(attribute) {
            case IFLA.ifname:
                guard mnl_attr_validate(attribute, MNL_TYPE_STRING) >= 0 else { return "IFLA_IFNAME empty" }
                link.name = string(attribute)
            case IFLA.operstate:
                guard mnl_attr_validate(attribute, MNL_TYPE_U8) >= 0 else { return "IFLA_OPERSTATE is not 1 byte" }
                link.operState = mnl_attr_get_u8(attribute)
            case IFLA.linkinfo:
                guard mnl_attr_validate(attribute, MNL_TYPE_NESTED) >= 0 else { return "IFLA_LINKINFO is not nested" }
                return parseLinkInfo(attribute, into: &link)
            default:
                break
            }
            return nil
        }
        if let failure { return .failure(failure) }
        return .success(deleted ? .deletedLink(link) : .newLink(link))
    }

    private static func parseLinkInfo(_ nest: UnsafePointer<nlattr>, into link: inout LinkMessage) -> String? {
        let start = UnsafeRawPointer(mnl_attr_get_payload(nest))!
        let end = start + Int(mnl_attr_get_payload_len(nest))
        var attribute = start
        while attribute < end {
            let pointer = attribute.assumingMemoryBound(to: nlattr.self)
            guard mnl_attr_ok(pointer, Int32(end - attribute)) else { return "IFLA_LINKINFO attribute out of bounds" }
            if mnl_attr_get_type(pointer) == IFLA.infoKind {
                guard mnl_attr_validate(pointer, MNL_TYPE_STRING) >= 0 else { return "IFLA_INFO_KIND empty" }
                link.kind = string(pointer)
            }
            attribute = UnsafeRawPointer(mnl_attr_next(pointer))
        }
        return nil
    }

    private static func parseAddress(_ header: UnsafePointer<nlmsghdr>, deleted: Bool) -> One {
        guard mnl_nlmsg_get_payload_len(header) >= MemoryLayout<ifaddrmsg>.size else {
            return .failure("address message shorter than ifaddrmsg")
        }
        let info = mnl_nlmsg_get_payload(header).loadUnaligned(as: ifaddrmsg.self)
        guard info.ifa_family == AddressFamily.inet || info.ifa_family == AddressFamily.inet6 else {
            return .success(.ignored(type: header.pointee.nlmsg_type))
        }
        var local: IPAddress?
        var peer: IPAddress?
        var flags = UInt32(info.ifa_flags)
        let failure = forEachAttribute(header, headerSize: MemoryLayout<ifaddrmsg>.size) { attribute in
            switch mnl_attr_get_type(attribute) {
            case IFA.local, IFA.address:
                guard let value = address(attribute, family: info.ifa_family) else {
                    return "IFA_ADDRESS/IFA_LOCAL of the wrong length for family \(info.ifa_family)"
                }
                if mnl_attr_get_type(attribute) == IFA.local { local = value } else { peer = value }
            case IFA.flags:
                switch u32(attribute, "IFA_FLAGS") {
                case .success(let value): flags = value
                case .failure(let failure): return failure.reason
                }
            default:
                break
            }
            return nil
        }
        if let failure { return .failure(failure) }
        // IPv4 point-to-point addresses carry the peer in IFA_ADDRESS and our own in IFA_LOCAL.
        guard let own = local ?? peer else { return .failure("address message without IFA_ADDRESS") }
        let message = AddressMessage(
            index: Int32(bitPattern: info.ifa_index), address: own, prefixLength: info.ifa_prefixlen, flags: flags,
            scope: info.ifa_scope)
        return .success(deleted ? .deletedAddress(message) : .newAddress(message))
    }

    /// RTA_MULTIPATH: a run of `struct rtnexthop { u16 len; u8 flags; u8 hops; s32 ifindex; }`
    /// each followed by its own attributes (RTA_GATEWAY).
    private static func parseMultipath(_ attribute: UnsafePointer<nlattr>, family: UInt8)
        -> Swift.Result<[RouteMessage.Nexthop], Failure>
    {
        var hops: [RouteMessage.Nexthop] = []
        let start = UnsafeRawPointer(mnl_attr_get_payload(attribute))!
        let end = start + Int(mnl_attr_get_payload_len(attribute))
        var cursor = start
        let headerSize = 8
        while end - cursor >= headerSize {
            let length = Int(cursor.loadUnaligned(as: UInt16.self))
            guard length >= headerSize, length <= end - cursor else {
                return .failure(Failure("RTA_MULTIPATH next hop length \(length) out of bounds"))
            }
            var hop = RouteMessage.Nexthop(
                outputInterface: cursor.loadUnaligned(fromByteOffset: 4, as: Int32.self), gateway: nil)
            var nested = cursor + headerSize
            let hopEnd = cursor + length
            while nested < hopEnd {
                let pointer = nested.assumingMemoryBound(to: nlattr.self)
                guard mnl_attr_ok(pointer, Int32(hopEnd - nested)) else {
                    return .failure(Failure("RTA_MULTIPATH next hop attribute out of bounds"))
                }
                if mnl_attr_get_type(pointer) == RTA.gateway {
                    guard let value = address(pointer, family: family) else {
                        return .failure(Failure("next hop RTA_GATEWAY of the wrong length"))
                    }
                    hop.gateway = value
                }
                nested = UnsafeRawPointer(mnl_attr_next(pointer))
            }
            hops.append(hop)
            cursor += cnl_align(length)
        }
        return .success(hops)
    }

    private static func parseRoute(_ header: UnsafePointer<nlmsghdr>, deleted: Bool) -> One {
        guard mnl_nlmsg_get_payload_len(header) >= MemoryLayout<rtmsg>.size else {
            return .failure("route message shorter than rtmsg")
        }
        let info = mnl_nlmsg_get_payload(header).loadUnaligned(as: rtmsg.self)
        var route = RouteMessage(
            family: info.rtm_family, type: info.rtm_type, table: UInt32(info.rtm_table),
            destinationLength: info.rtm_dst_len, outputInterface: nil, hasGateway: false, preferredSource: nil,
            priority: nil)
        let failure = forEachAttribute(header, headerSize: MemoryLayout<rtmsg>.size) { attribute in
            switch mnl_attr_get_type(attribute) {
            case RTA.dst:
                guard let value = address(attribute, family: info.rtm_family) else {
                    // Other families (MPLS labels, …) carry other destinations: not ours.
                    if info.rtm_family == AddressFamily.inet || info.rtm_family == AddressFamily.inet6 {
                        return "RTA_DST of the wrong length for family \(info.rtm_family)"
                    }
                    break
                }
                route.destination = value
            case RTA.oif:
                switch u32(attribute, "RTA_OIF") {
                case .success(let value): route.outputInterface = Int32(bitPattern: value)
                case .failure(let failure): return failure.reason
                }
            case RTA.table:
                switch u32(attribute, "RTA_TABLE") {
                case .success(let value): route.table = value
                case .failure(let failure): return failure.reason
                }
            case RTA.priority:
                switch u32(attribute, "RTA_PRIORITY") {
                case .success(let value): route.priority = value
                case .failure(let failure): return failure.reason
                }
            case RTA.gateway:
                guard let value = address(attribute, family: info.rtm_family) else {
                    return "RTA_GATEWAY of the wrong length for family \(info.rtm_family)"
                }
                route.hasGateway = true
                route.gateway = value
            case RTA.via:
                // struct rtvia { __kernel_sa_family_t rtvia_family; __u8 rtvia_addr[]; }
                let length = Int(mnl_attr_get_payload_len(attribute))
                guard length >= 2 else { return "RTA_VIA shorter than its family" }
                let payload = UnsafeRawBufferPointer(start: mnl_attr_get_payload(attribute), count: length)
                let family = payload.loadUnaligned(as: UInt16.self)
                route.hasGateway = true
                let gateway = length - 2
                route.gateway =
                    gateway == 4 || gateway == 16
                    ? IPAddress(networkOrder: payload.baseAddress! + 2, count: gateway, scopeID: 0) : nil
                if family != UInt16(AddressFamily.inet) && family != UInt16(AddressFamily.inet6) { route.gateway = nil }
            case RTA.multipath:
                switch parseMultipath(attribute, family: info.rtm_family) {
                case .success(let hops):
                    route.nexthops = hops
                    route.hasGateway = route.hasGateway || hops.contains { $0.gateway != nil }
                case .failure(let failure): return failure.reason
                }
            case RTA.cacheInfo:
                // struct rta_cacheinfo: rta_expires (s32, clock ticks of USER_HZ, 100 a
                // second) follows rta_clntref and rta_lastuse.
                guard mnl_attr_get_payload_len(attribute) >= 12 else { return "RTA_CACHEINFO shorter than rta_expires" }
                let expires = UnsafeRawPointer(mnl_attr_get_payload(attribute)!).loadUnaligned(
                    fromByteOffset: 8, as: Int32.self)
                route.lifetimeTicks = UInt32(max(expires, 0))
            case RTA.prefsrc:
                // Only meaningful for IPv4/IPv6; other families have no source we track.
                if info.rtm_family == AddressFamily.inet || info.rtm_family == AddressFamily.inet6 {
                    guard let value = address(attribute, family: info.rtm_family) else {
                        return "RTA_PREFSRC of the wrong length for family \(info.rtm_family)"
                    }
                    route.preferredSource = value
                }
            default:
                break
            }
            return nil
        }
        if let failure { return .failure(failure) }
        return .success(.route(route, deleted: deleted))
    }
}
