package import CNetlink

// Generic netlink (NETLINK_GENERIC) and the part of nl80211 the library reads.
// Values are from <linux/netlink.h>, <linux/genetlink.h> and <linux/nl80211.h>
// (checked against linux-libc-dev 6.1; these numbers are kernel ABI and never move).

/// NETLINK_GENERIC, the generic netlink bus (<linux/netlink.h>).
package let netlinkGeneric: Int32 = 16

/// The errno values the nl80211 reader tells apart (<asm-generic/errno-base.h>, <asm-generic/errno.h>).
package enum GenlErrno {
    static let noEntry: Int32 = 2  // ENOENT: no such generic netlink family
    static let noDevice: Int32 = 19  // ENODEV: no wireless device of that index
    static let notSupported: Int32 = 95  // EOPNOTSUPP: the driver does not implement the command
}

/// The generic netlink controller (<linux/genetlink.h>).
package enum GENL {
    /// GENL_ID_CTRL (NLMSG_MIN_TYPE): the controller's fixed family id.
    package static let controllerID: UInt16 = 16
    /// GENL_HDRLEN: `struct genlmsghdr { u8 cmd; u8 version; u16 reserved; }`.
    package static let headerSize = 4
    /// GENL_NAMSIZ: a family name's room, NUL included.
    package static let familyNameSize = 16
    package static let cmdNewFamily: UInt8 = 1  // CTRL_CMD_NEWFAMILY
    package static let cmdGetFamily: UInt8 = 3  // CTRL_CMD_GETFAMILY
    package static let attrFamilyID: UInt16 = 1  // CTRL_ATTR_FAMILY_ID (u16)
    package static let attrFamilyName: UInt16 = 2  // CTRL_ATTR_FAMILY_NAME (NUL-terminated string)
}

/// nl80211 (<linux/nl80211.h>).
package enum NL80211 {
    /// The generic netlink family name.
    package static let familyName = "nl80211"
    package static let cmdGetInterface: UInt8 = 5  // NL80211_CMD_GET_INTERFACE
    package static let cmdNewInterface: UInt8 = 7  // NL80211_CMD_NEW_INTERFACE (the answer)
    package static let cmdGetStation: UInt8 = 17  // NL80211_CMD_GET_STATION
    package static let cmdNewStation: UInt8 = 19  // NL80211_CMD_NEW_STATION (each dump entry)
    package static let attrIfindex: UInt16 = 3  // NL80211_ATTR_IFINDEX (u32)
    package static let attrIftype: UInt16 = 5  // NL80211_ATTR_IFTYPE (u32, enum nl80211_iftype)
    package static let attrMAC: UInt16 = 6  // NL80211_ATTR_MAC (6 bytes)
    package static let attrStaInfo: UInt16 = 21  // NL80211_ATTR_STA_INFO (nested NL80211_STA_INFO_*)
    package static let attrSSID: UInt16 = 52  // NL80211_ATTR_SSID (binary, 0...32 octets)
    package static let staInfoSignal: UInt16 = 7  // NL80211_STA_INFO_SIGNAL (u8 holding an s8 dBm)
    package static let staInfoSignalAverage: UInt16 = 13  // NL80211_STA_INFO_SIGNAL_AVG (u8 holding an s8 dBm)
    package static let staInfoFlags: UInt16 = 17  // NL80211_STA_INFO_STA_FLAGS (struct nl80211_sta_flag_update)
    /// NL80211_STA_FLAG_TDLS_PEER, a bit number of `nl80211_sta_flag_update.mask`/`.set`.
    package static let staFlagTDLSPeer: UInt32 = 6
    package static let iftypeStation: UInt32 = 2  // NL80211_IFTYPE_STATION
    package static let iftypeP2PClient: UInt32 = 8  // NL80211_IFTYPE_P2P_CLIENT
    /// IEEE80211_MAX_SSID_LEN.
    package static let maxSSIDLength = 32
    /// ETH_ALEN.
    package static let macLength = 6
}

/// A station of an nl80211 station dump (NL80211_CMD_NEW_STATION): for a client
/// interface, the access point it is associated with (and any TDLS peers).
package struct StationMessage: Sendable, Equatable {
    /// NL80211_ATTR_IFINDEX.
    package var index: Int32?
    /// NL80211_ATTR_MAC.
    package var address: [UInt8]?
    /// NL80211_STA_INFO_SIGNAL: the last received frame's signal, dBm.
    package var signal: Int8?
    /// NL80211_STA_INFO_SIGNAL_AVG: the driver's average, dBm.
    package var signalAverage: Int8?
    /// NL80211_STA_FLAG_TDLS_PEER is in the flags' mask and set.
    package var isTDLSPeer = false

    /// The signal to judge the link by: the average when there is one.
    package var bestSignal: Int8? { signalAverage ?? signal }
}

/// An nl80211 interface (NL80211_CMD_NEW_INTERFACE, the answer to GET_INTERFACE).
package struct WirelessInterfaceMessage: Sendable, Equatable {
    /// NL80211_ATTR_IFINDEX.
    package var index: Int32?
    /// NL80211_ATTR_IFTYPE (NL80211_IFTYPE_*).
    package var type: UInt32?
    /// NL80211_ATTR_SSID: the raw octets (0...32; not necessarily UTF-8).
    package var ssid: [UInt8]?
}

/// One parsed generic netlink message.
package enum GenericMessage: Sendable, Equatable {
    /// The controller's CTRL_CMD_NEWFAMILY: a family's id (and name).
    case family(id: UInt16, name: String?)
    /// NL80211_CMD_NEW_STATION.
    case station(StationMessage)
    /// NL80211_CMD_NEW_INTERFACE.
    case interface(WirelessInterfaceMessage)
    /// NLMSG_ERROR: `errno` 0 is an acknowledgement.
    case error(errno: Int32)
    /// NLMSG_DONE; `errno` is the dump's own failure (the kernel puts it in the
    /// message's int payload: 0, or a negative errno when the dump failed).
    case done(errno: Int32)
    /// NLMSG_OVERRUN.
    case overrun
    /// A valid message of another type or command.
    case ignored(type: UInt16, command: UInt8?)
}

/// A message with the header fields the exchange matches on.
package struct ParsedGenericMessage: Sendable, Equatable {
    package var sequence: UInt32
    package var message: GenericMessage
}

/// Parses generic netlink datagrams: the controller's answers and nl80211's
/// station and interface messages. As ``NetlinkParser``: every length is checked
/// with libmnl (`mnl_nlmsg_ok`, `mnl_attr_ok`, `mnl_attr_validate`) before it is
/// read, unknown attributes are skipped, a malformed message stops parsing and is
/// reported with the messages before it. At most ``maxAttributes`` attributes are
/// walked at any one level.
package enum GenericNetlinkParser {
    /// What a datagram held.
    package struct Result: Sendable {
        package var messages: [ParsedGenericMessage] = []
        package var malformed: MalformedMessage?
    }

    /// The most attributes read at one level of a message (the kernel sends about
    /// 40 in a station's STA_INFO); more is a malformed message.
    package static let maxAttributes = 1024

    /// Parses `bytes` (any alignment). `family` is nl80211's id, once resolved:
    /// messages of that type are read as nl80211 messages.
    package static func parse(_ bytes: [UInt8], nl80211 family: UInt16?) -> Result {
        var result = Result()
        result.malformed = bytes.withUnsafeBytes { raw in
            NetlinkDatagram.forEachMessage(raw) { header in
                switch parseOne(header, family: family) {
                case .success(let message):
                    result.messages.append(ParsedGenericMessage(sequence: header.pointee.nlmsg_seq, message: message))
                    return nil
                case .failure(let failure):
                    return failure.reason
                }
            }
        }
        return result
    }

    package struct Failure: Error {
        package var reason: String
        package init(_ reason: String) { self.reason = reason }
    }

    private static func parseOne(_ header: UnsafePointer<nlmsghdr>, family: UInt16?)
        -> Swift.Result<
            GenericMessage, Failure
        >
    {
        let type = header.pointee.nlmsg_type
        switch type {
        case NLMsgType.noop:
            return .success(.ignored(type: type, command: nil))
        case NLMsgType.overrun:
            return .success(.overrun)
        case NLMsgType.error:
            guard mnl_nlmsg_get_payload_len(header) >= MemoryLayout<Int32>.size else {
                return .failure(Failure("NLMSG_ERROR shorter than its error code"))
            }
            return .success(.error(errno: magnitude(mnl_nlmsg_get_payload(header).loadUnaligned(as: Int32.self))))
        case NLMsgType.done:
            // Old kernels send an empty NLMSG_DONE; newer ones carry the dump's status.
            guard mnl_nlmsg_get_payload_len(header) >= MemoryLayout<Int32>.size else {
                return .success(.done(errno: 0))
            }
            return .success(.done(errno: magnitude(mnl_nlmsg_get_payload(header).loadUnaligned(as: Int32.self))))
        case GENL.controllerID, family:
            guard mnl_nlmsg_get_payload_len(header) >= GENL.headerSize else {
                return .failure(Failure("generic netlink message shorter than genlmsghdr"))
            }
            let command = mnl_nlmsg_get_payload(header).load(as: UInt8.self)
            let tail = UnsafeRawPointer(header) + Int(header.pointee.nlmsg_len)
            let start = UnsafeRawPointer(mnl_nlmsg_get_payload_offset(header, GENL.headerSize))!
            if type == GENL.controllerID {
                guard command == GENL.cmdNewFamily else { return .success(.ignored(type: type, command: command)) }
                return parseFamily(start, tail)
            }
            switch command {
            case NL80211.cmdNewStation: return parseStation(start, tail)
            case NL80211.cmdNewInterface: return parseInterface(start, tail)
            default: return .success(.ignored(type: type, command: command))
            }
        default:
            return .success(.ignored(type: type, command: nil))
        }
    }

    /// The kernel sends negative errno values; the magnitude, without trapping on Int32.min.
    private static func magnitude(_ code: Int32) -> Int32 { code == Int32.min ? Int32.max : abs(code) }

    /// Calls `body` for each attribute from `start` to `end`; a failure reason when
    /// one is out of bounds, there are too many, or `body` says so.
    package static func forEachAttribute(
        _ start: UnsafeRawPointer, _ end: UnsafeRawPointer, in what: String,
        _ body: (UnsafePointer<nlattr>) -> String?
    ) -> String? {
        var attribute = start
        var count = 0
        while attribute < end {
            let left = end - attribute
            let pointer = attribute.assumingMemoryBound(to: nlattr.self)
            guard mnl_attr_ok(pointer, Int32(left)) else {
                return "\(what): attribute length out of bounds (\(left) bytes left)"
            }
            count += 1
            guard count <= maxAttributes else { return "\(what): more than \(maxAttributes) attributes" }
            if let failure = body(pointer) { return failure }
            attribute = UnsafeRawPointer(mnl_attr_next(pointer))
        }
        return nil
    }

    private static func payload(_ attribute: UnsafePointer<nlattr>) -> [UInt8] {
        let length = Int(mnl_attr_get_payload_len(attribute))
        return Array(UnsafeRawBufferPointer(start: mnl_attr_get_payload(attribute), count: length))
    }

    private static func u32(_ attribute: UnsafePointer<nlattr>) -> UInt32? {
        mnl_attr_validate(attribute, MNL_TYPE_U32) >= 0 ? mnl_attr_get_u32(attribute) : nil
    }

    /// CTRL_CMD_NEWFAMILY: CTRL_ATTR_FAMILY_ID (u16) and CTRL_ATTR_FAMILY_NAME.
    private static func parseFamily(_ start: UnsafeRawPointer, _ end: UnsafeRawPointer)
        -> Swift.Result<
            GenericMessage, Failure
        >
    {
        var id: UInt16?
        var name: String?
        let failure = forEachAttribute(start, end, in: "CTRL_CMD_NEWFAMILY") { attribute in
            switch mnl_attr_get_type(attribute) {
            case GENL.attrFamilyID:
                guard mnl_attr_validate(attribute, MNL_TYPE_U16) >= 0 else {
                    return "CTRL_ATTR_FAMILY_ID is not 2 bytes"
                }
                id = mnl_attr_get_u16(attribute)
            case GENL.attrFamilyName:
                let bytes = payload(attribute)
                guard bytes.count <= GENL.familyNameSize, bytes.last == 0 else {
                    return "CTRL_ATTR_FAMILY_NAME is not a NUL-terminated name of at most 15 bytes"
                }
                name = String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            default:
                break
            }
            return nil
        }
        if let failure { return .failure(Failure(failure)) }
        guard let id else { return .failure(Failure("CTRL_CMD_NEWFAMILY without CTRL_ATTR_FAMILY_ID")) }
        return .success(.family(id: id, name: name))
    }

    /// NL80211_CMD_NEW_STATION: the interface, the station's MAC, and in the
    /// nested NL80211_ATTR_STA_INFO its signal, average signal and flags.
    private static func parseStation(_ start: UnsafeRawPointer, _ end: UnsafeRawPointer)
        -> Swift.Result<
            GenericMessage, Failure
        >
    {
        var station = StationMessage()
        let failure = forEachAttribute(start, end, in: "NL80211_CMD_NEW_STATION") { attribute in
            switch mnl_attr_get_type(attribute) {
            case NL80211.attrIfindex:
                guard let value = u32(attribute) else { return "NL80211_ATTR_IFINDEX is not 4 bytes" }
                station.index = Int32(bitPattern: value)
            case NL80211.attrMAC:
                let bytes = payload(attribute)
                guard bytes.count == NL80211.macLength else { return "NL80211_ATTR_MAC of \(bytes.count) bytes" }
                station.address = bytes
            case NL80211.attrStaInfo:
                guard mnl_attr_validate(attribute, MNL_TYPE_NESTED) >= 0 else {
                    return "NL80211_ATTR_STA_INFO is not a nest"
                }
                let inner = UnsafeRawPointer(mnl_attr_get_payload(attribute))!
                let innerEnd = inner + Int(mnl_attr_get_payload_len(attribute))
                return forEachAttribute(inner, innerEnd, in: "NL80211_ATTR_STA_INFO") { item in
                    parseStationInfo(item, into: &station)
                }
            default:
                break
            }
            return nil
        }
        if let failure { return .failure(Failure(failure)) }
        return .success(.station(station))
    }

    private static func parseStationInfo(_ item: UnsafePointer<nlattr>, into station: inout StationMessage) -> String? {
        switch mnl_attr_get_type(item) {
        case NL80211.staInfoSignal, NL80211.staInfoSignalAverage:
            let average = mnl_attr_get_type(item) == NL80211.staInfoSignalAverage
            guard mnl_attr_validate(item, MNL_TYPE_U8) >= 0 else {
                return "NL80211_STA_INFO_SIGNAL\(average ? "_AVG" : "") is not 1 byte"
            }
            // A u8 on the wire holding the s8 dBm value.
            let value = Int8(bitPattern: mnl_attr_get_u8(item))
            if average { station.signalAverage = value } else { station.signal = value }
        case NL80211.staInfoFlags:
            // struct nl80211_sta_flag_update { u32 mask; u32 set; } (packed).
            guard mnl_attr_validate2(item, MNL_TYPE_BINARY, 8) >= 0 else {
                return "NL80211_STA_INFO_STA_FLAGS is not 8 bytes"
            }
            let raw = UnsafeRawPointer(mnl_attr_get_payload(item))!
            let bit: UInt32 = 1 << NL80211.staFlagTDLSPeer
            let mask = raw.loadUnaligned(as: UInt32.self)
            let set = raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
            station.isTDLSPeer = mask & set & bit != 0
        default:
            break
        }
        return nil
    }

    /// NL80211_CMD_NEW_INTERFACE: index, type and SSID.
    private static func parseInterface(_ start: UnsafeRawPointer, _ end: UnsafeRawPointer)
        -> Swift.Result<
            GenericMessage, Failure
        >
    {
        var interface = WirelessInterfaceMessage()
        let failure = forEachAttribute(start, end, in: "NL80211_CMD_NEW_INTERFACE") { attribute in
            switch mnl_attr_get_type(attribute) {
            case NL80211.attrIfindex:
                guard let value = u32(attribute) else { return "NL80211_ATTR_IFINDEX is not 4 bytes" }
                interface.index = Int32(bitPattern: value)
            case NL80211.attrIftype:
                guard let value = u32(attribute) else { return "NL80211_ATTR_IFTYPE is not 4 bytes" }
                interface.type = value
            case NL80211.attrSSID:
                let bytes = payload(attribute)
                guard bytes.count <= NL80211.maxSSIDLength else { return "NL80211_ATTR_SSID of \(bytes.count) bytes" }
                interface.ssid = bytes
            default:
                break
            }
            return nil
        }
        if let failure { return .failure(Failure(failure)) }
        return .success(.interface(interface))
    }
}

/// Builds generic netlink requests.
package enum GenericNetlinkRequest {
    /// CTRL_CMD_GETFAMILY for `name` (to GENL_ID_CTRL).
    package static func getFamily(_ name: String, sequence: UInt32) -> [UInt8] {
        build(
            type: GENL.controllerID, command: GENL.cmdGetFamily, version: 1, flags: NLMsgFlag.request,
            sequence: sequence
        ) {
            header in
            mnl_attr_put_strz(header, GENL.attrFamilyName, name)
        }
    }

    /// An nl80211 command about interface `index`: GET_INTERFACE (`dump` false) or
    /// the GET_STATION dump (`dump` true: NLM_F_DUMP with NL80211_ATTR_IFINDEX,
    /// which the kernel requires for a station dump).
    package static func nl80211(
        family: UInt16, command: UInt8, interfaceIndex: Int32, dump: Bool, sequence: UInt32
    ) -> [UInt8] {
        let flags = NLMsgFlag.request | (dump ? NLMsgFlag.dump : 0)
        return build(type: family, command: command, version: 0, flags: flags, sequence: sequence) { header in
            mnl_attr_put_u32(header, NL80211.attrIfindex, UInt32(bitPattern: interfaceIndex))
        }
    }

    private static func build(
        type: UInt16, command: UInt8, version: UInt8, flags: UInt16, sequence: UInt32,
        attributes: (UnsafeMutablePointer<nlmsghdr>) -> Void
    ) -> [UInt8] {
        var buffer = [UInt64](repeating: 0, count: 16)  // 128 bytes: header, genlmsghdr, one short attribute
        return buffer.withUnsafeMutableBytes { raw -> [UInt8] in
            let header = mnl_nlmsg_put_header(raw.baseAddress)!
            header.pointee.nlmsg_type = type
            header.pointee.nlmsg_flags = flags
            header.pointee.nlmsg_seq = sequence
            let genl = mnl_nlmsg_put_extra_header(header, GENL.headerSize)!
            genl.storeBytes(of: command, as: UInt8.self)
            genl.storeBytes(of: version, toByteOffset: 1, as: UInt8.self)
            attributes(header)
            return Array(raw[0..<Int(header.pointee.nlmsg_len)])
        }
    }
}

/// Where generic netlink requests go and answers come from: the kernel through a
/// ``NetlinkSocket``, or a script in tests.
package protocol GenericNetlinkTransport: AnyObject {
    /// Sends one request.
    func send(_ request: [UInt8]) throws(ReachabilityError)
    /// The next datagram from the kernel, waiting up to `timeoutMilliseconds`;
    /// nil when none came in that time.
    func receive(timeoutMilliseconds: Int32) throws(ReachabilityError) -> [UInt8]?
}

extension NetlinkSocket: GenericNetlinkTransport {
    package func send(_ request: [UInt8]) throws(ReachabilityError) {
        try request.withUnsafeBytes { raw in
            Swift.Result { () throws(ReachabilityError) in try self.send(raw) }
        }.get()
    }

    package func receive(timeoutMilliseconds: Int32) throws(ReachabilityError) -> [UInt8]? {
        guard try waitReadable(timeoutMilliseconds: timeoutMilliseconds) else { return nil }
        switch try receive() {
        case .datagram(let bytes): return Array(bytes)
        // Readable but nothing for us (a datagram from another sender was dropped).
        case .empty: return []
        case .overrun:
            throw ReachabilityError(.systemCall, "generic netlink answers overran the socket", errno: Errno.noBufs)
        }
    }
}

/// Request–answer exchanges over a ``GenericNetlinkTransport``, within one
/// deadline for all of them: an answer that never comes, or a dump that never
/// ends, fails with ``ReachabilityError/Code/timedOut`` at the deadline, and a
/// dump of more than ``maxDatagrams`` datagrams fails sooner.
package final class GenericNetlinkSession<Transport: GenericNetlinkTransport> {
    package let transport: Transport
    private let deadline: ContinuousClock.Instant
    /// The last sequence number used.
    package private(set) var sequence: UInt32
    /// nl80211's family id, once resolved.
    package private(set) var nl80211Family: UInt16?
    /// The most datagrams one exchange reads.
    package static var maxDatagrams: Int { 4096 }
    /// The most messages one nl80211 answer (a dump) may hold.
    package static var maxMessages: Int { 1024 }

    /// A session over `transport` whose exchanges all end within `timeout`, numbered
    /// after `firstSequence`; `nl80211Family`: the family id, when an earlier session
    /// over the same socket resolved it.
    package init(transport: Transport, timeout: Duration, firstSequence: UInt32, nl80211Family: UInt16? = nil) {
        self.transport = transport
        self.deadline = .now + timeout
        self.sequence = firstSequence
        self.nl80211Family = nl80211Family
    }

    private func nextSequence() -> UInt32 {
        sequence &+= 1
        return sequence
    }

    /// Resolves a family by name: its id, or nil when the controller answers ENOENT
    /// (no such family in this kernel). Only nl80211's id is kept for parsing.
    package func resolveFamily(_ name: String) throws(ReachabilityError) -> UInt16? {
        let seq = nextSequence()
        try transport.send(GenericNetlinkRequest.getFamily(name, sequence: seq))
        var id: UInt16?? = nil
        try collect(sequence: seq, what: "the \(name) family lookup") { message throws(ReachabilityError) in
            switch message {
            case .family(let found, _):
                id = .some(found)
            case .error(let errno) where errno == GenlErrno.noEntry:
                id = .some(nil)
            case .error(let errno):
                throw ReachabilityError(
                    .systemCall, "looking up the \(name) generic netlink family failed", errno: errno)
            default:
                return false
            }
            return true
        }
        let resolved = id ?? nil
        if name == NL80211.familyName { nl80211Family = resolved }
        return resolved
    }

    /// What one nl80211 request gave: its messages, or the kernel's error.
    package enum Answer {
        case messages([GenericMessage])
        case failed(errno: Int32)
    }

    /// Sends one nl80211 command for `interfaceIndex` and reads its answer: one
    /// message (`dump` false), or every message until NLMSG_DONE.
    package func nl80211(_ command: UInt8, interfaceIndex: Int32, dump: Bool) throws(ReachabilityError) -> Answer {
        guard let family = nl80211Family else {
            throw ReachabilityError(.netlinkProtocol, "nl80211 request before its family was resolved")
        }
        let seq = nextSequence()
        try transport.send(
            GenericNetlinkRequest.nl80211(
                family: family, command: command, interfaceIndex: interfaceIndex, dump: dump, sequence: seq))
        var messages: [GenericMessage] = []
        var failed: Int32?
        try collect(sequence: seq, what: "nl80211 command \(command)") { message throws(ReachabilityError) in
            switch message {
            case .error(let errno) where errno != 0, .done(let errno) where errno != 0:
                failed = errno
                return true
            case .done:
                return dump
            case .error, .overrun, .ignored, .family:
                return false
            case .station, .interface:
                guard messages.count < Self.maxMessages else {
                    throw ReachabilityError(
                        .netlinkProtocol, "nl80211 command \(command): over \(Self.maxMessages) messages")
                }
                messages.append(message)
                return !dump
            }
        }
        if let failed { return .failed(errno: failed) }
        return .messages(messages)
    }

    /// Reads datagrams until `body` says a message with sequence `sequence` ends
    /// the exchange. Messages of other sequence numbers are skipped.
    private func collect(
        sequence: UInt32, what: String, _ body: (GenericMessage) throws(ReachabilityError) -> Bool
    ) throws(ReachabilityError) {
        var datagrams = 0
        while true {
            let left = deadline - .now
            guard left > .zero else { break }
            guard datagrams < Self.maxDatagrams else {
                throw ReachabilityError(.netlinkProtocol, "\(what): no end after \(Self.maxDatagrams) datagrams")
            }
            datagrams += 1
            let (seconds, attoseconds) = left.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            // Nothing within the time left: the deadline has passed.
            guard let datagram = try transport.receive(timeoutMilliseconds: milliseconds) else { break }
            let parsed = GenericNetlinkParser.parse(datagram, nl80211: nl80211Family)
            for item in parsed.messages where item.sequence == sequence {
                if try body(item.message) { return }
            }
            if let malformed = parsed.malformed {
                throw ReachabilityError(.netlinkProtocol, "\(what): \(malformed)")
            }
        }
        throw ReachabilityError(.timedOut, "the kernel did not finish \(what) in time")
    }
}
