import Glibc
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityBase
@_spi(Testing) @testable import ReachabilityCore

/// Generic netlink messages as the kernel sends them, built byte by byte from
/// <linux/netlink.h>, <linux/genetlink.h> and <linux/nl80211.h> (host byte order).
enum GenlBytes {
    typealias B = NetlinkBuilder
    static let nl80211Family: UInt16 = 0x1c

    /// One generic netlink message: nlmsghdr, genlmsghdr (cmd, version, reserved), attributes.
    static func message(
        type: UInt16, command: UInt8, sequence: UInt32, flags: UInt16 = 0, attributes: [UInt8], length: UInt32? = nil
    ) -> [UInt8] {
        B.message(
            type: type, flags: flags, sequence: sequence, payload: [command, 1, 0, 0] + attributes, length: length)
    }

    /// CTRL_CMD_NEWFAMILY (1) from GENL_ID_CTRL (16): CTRL_ATTR_FAMILY_NAME (2),
    /// CTRL_ATTR_FAMILY_ID (1, u16), CTRL_ATTR_VERSION (3) and a nested
    /// CTRL_ATTR_OPS (6) that the parser skips.
    static func family(id: UInt16 = nl80211Family, name: String = "nl80211", sequence: UInt32) -> [UInt8] {
        let ops = B.attribute(1, B.attribute(1, B.raw(UInt32(17))) + B.attribute(2, B.raw(UInt32(0x0e))))
        let attributes =
            B.attribute(2, B.cString(name)) + B.attribute(1, B.raw(id)) + B.attribute(3, B.raw(UInt32(1)))
            + B.attribute(6, ops)
        return message(type: 16, command: 1, sequence: sequence, attributes: attributes)
    }

    /// NL80211_STA_INFO_* inside NL80211_ATTR_STA_INFO (21): INACTIVE_TIME (1, u32),
    /// SIGNAL (7, u8 holding an s8), SIGNAL_AVG (13), STA_FLAGS (17, mask and set).
    static func staInfo(signal: Int8? = nil, average: Int8? = nil, flags: (mask: UInt32, set: UInt32)? = nil)
        -> [UInt8]
    {
        var inner = B.attribute(1, B.raw(UInt32(120)))
        if let signal { inner += B.attribute(7, [UInt8(bitPattern: signal)]) }
        if let average { inner += B.attribute(13, [UInt8(bitPattern: average)]) }
        if let flags { inner += B.attribute(17, B.raw(flags.mask) + B.raw(flags.set)) }
        return inner
    }

    /// NL80211_CMD_NEW_STATION (19): NL80211_ATTR_IFINDEX (3), NL80211_ATTR_MAC (6),
    /// NL80211_ATTR_GENERATION (46), NL80211_ATTR_STA_INFO (21, nested).
    static func station(
        sequence: UInt32, index: UInt32 = 3, mac: [UInt8] = [2, 0, 0, 0, 0, 0xaa], staInfo: [UInt8]?
    ) -> [UInt8] {
        var attributes = B.attribute(3, B.raw(index)) + B.attribute(6, mac) + B.attribute(46, B.raw(UInt32(7)))
        if let staInfo { attributes += B.attribute(21, staInfo) }
        return message(type: nl80211Family, command: 19, sequence: sequence, flags: 0x2, attributes: attributes)
    }

    /// NL80211_CMD_NEW_INTERFACE (7): NL80211_ATTR_IFINDEX (3), NL80211_ATTR_IFNAME (4),
    /// NL80211_ATTR_IFTYPE (5, u32), NL80211_ATTR_WIPHY (1), NL80211_ATTR_SSID (52).
    static func interface(sequence: UInt32, index: UInt32 = 3, type: UInt32 = 2, ssid: [UInt8]? = Array("home".utf8))
        -> [UInt8]
    {
        var attributes =
            B.attribute(3, B.raw(index)) + B.attribute(4, B.cString("wlan0")) + B.attribute(5, B.raw(type))
            + B.attribute(1, B.raw(UInt32(0)))
        if let ssid { attributes += B.attribute(52, ssid) }
        return message(type: nl80211Family, command: 7, sequence: sequence, attributes: attributes)
    }

    /// NLMSG_DONE (3) with the dump's status: 0 or a negative errno.
    static func done(sequence: UInt32, errno: Int32 = 0) -> [UInt8] {
        B.message(type: 3, flags: 0x2, sequence: sequence, payload: B.raw(-errno))
    }

    /// NLMSG_ERROR (2): the negative errno, then the request's header (NETLINK_CAP_ACK).
    static func error(sequence: UInt32, errno: Int32) -> [UInt8] {
        B.message(type: 2, sequence: sequence, payload: B.raw(-errno) + [UInt8](repeating: 0, count: 16))
    }

    static func parse(_ bytes: [UInt8]) -> GenericNetlinkParser.Result {
        GenericNetlinkParser.parse(bytes, nl80211: nl80211Family)
    }

    static func only(_ bytes: [UInt8]) -> GenericMessage? {
        let result = parse(bytes)
        #expect(result.malformed == nil, "\(String(describing: result.malformed))")
        #expect(result.messages.count == 1)
        return result.messages.first?.message
    }
}

/// A scripted kernel side of a generic netlink socket: answers each request it is
/// sent with what `answer` returns for its type, command and sequence number.
final class ScriptedKernel: GenericNetlinkTransport {
    struct Request: Equatable {
        var type: UInt16
        var flags: UInt16
        var sequence: UInt32
        var command: UInt8
        var bytes: [UInt8]
    }
    var requests: [Request] = []
    private var queue: [[UInt8]] = []
    private let answer: (Request) -> [[UInt8]]
    /// When nothing is queued: produce another datagram (an endless dump), or nil
    /// after sleeping the time asked (a kernel that never answers).
    var whenIdle: ((Request) -> [UInt8]?)?

    init(_ answer: @escaping (Request) -> [[UInt8]]) { self.answer = answer }

    func send(_ request: [UInt8]) throws(ReachabilityError) {
        let parsed = request.withUnsafeBytes { raw in
            Request(
                type: raw.loadUnaligned(fromByteOffset: 4, as: UInt16.self),
                flags: raw.loadUnaligned(fromByteOffset: 6, as: UInt16.self),
                sequence: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self), command: request[16],
                bytes: request)
        }
        requests.append(parsed)
        queue += answer(parsed)
    }

    func receive(timeoutMilliseconds: Int32) throws(ReachabilityError) -> [UInt8]? {
        if !queue.isEmpty { return queue.removeFirst() }
        if let whenIdle, let last = requests.last, let more = whenIdle(last) { return more }
        usleep(UInt32(timeoutMilliseconds) * 1000)
        return nil
    }

    /// A kernel with nl80211 and one station interface (index 3) associated with
    /// an access point; `stations` answers the station dump.
    static func withStationInterface(type: UInt32 = 2, ssid: [UInt8]? = Array("home".utf8), stations: [[UInt8]])
        -> ScriptedKernel
    {
        ScriptedKernel { request in
            switch (request.type, request.command) {
            case (16, 3): return [GenlBytes.family(sequence: request.sequence)]
            case (GenlBytes.nl80211Family, 5):
                return [GenlBytes.interface(sequence: request.sequence, type: type, ssid: ssid)]
            case (GenlBytes.nl80211Family, 17):
                // One datagram of stations, then NLMSG_DONE in another.
                let seq = request.sequence
                return [stations.map { $0.withSequence(seq) }.reduce([], +), GenlBytes.done(sequence: seq)]
            default: return [GenlBytes.error(sequence: request.sequence, errno: EINVAL)]
            }
        }
    }

    static func read(_ kernel: ScriptedKernel, index: Int32 = 3, timeout: Duration = .seconds(2)) -> Result<
        WirelessStatus, WirelessInfo.Unavailable
    > {
        WirelessInfo.read(
            interfaceIndex: index,
            session: GenericNetlinkSession(transport: kernel, timeout: timeout, firstSequence: 100))
    }
}

extension Array where Element == UInt8 {
    /// The message with `nlmsg_seq` replaced.
    func withSequence(_ sequence: UInt32) -> [UInt8] {
        var copy = self
        copy.replaceSubrange(8..<12, with: NetlinkBuilder.raw(sequence))
        return copy
    }
}

@Suite struct LinkQualityTests {
    @Test("the bucket rule: good from -60 dBm, moderate from -73 dBm, minimal below, unknown at 0 dBm and above")
    func buckets() {
        #expect(LinkQuality(signalDBm: -30) == .good)
        #expect(LinkQuality(signalDBm: -60) == .good)
        #expect(LinkQuality(signalDBm: -61) == .moderate)
        #expect(LinkQuality(signalDBm: -73) == .moderate)
        #expect(LinkQuality(signalDBm: -74) == .minimal)
        #expect(LinkQuality(signalDBm: -95) == .minimal)
        #expect(LinkQuality(signalDBm: -128) == .minimal)
        #expect(LinkQuality(signalDBm: -1) == .good)
        #expect(LinkQuality(signalDBm: 0) == .unknown)
        #expect(LinkQuality(signalDBm: 20) == .unknown)
        #expect(LinkQuality.allCases.map(\.rawValue) == ["unknown", "minimal", "moderate", "good"])
        #expect(LinkQuality.goodThreshold == -60 && LinkQuality.moderateThreshold == -73)
    }
}

@Suite struct GenericNetlinkParserTests {
    typealias B = NetlinkBuilder

    @Test("requests: CTRL_CMD_GETFAMILY for nl80211, GET_INTERFACE and the GET_STATION dump, byte for byte")
    func requests() {
        let family = GenericNetlinkRequest.getFamily("nl80211", sequence: 9)
        let expected =
            B.raw(UInt32(32)) + B.raw(UInt16(16)) + B.raw(UInt16(0x1)) + B.raw(UInt32(9)) + B.raw(UInt32(0))
            + [3, 1, 0, 0] + B.raw(UInt16(12)) + B.raw(UInt16(2)) + Array("nl80211".utf8) + [0]
        #expect(family == expected)
        let dump = GenericNetlinkRequest.nl80211(family: 0x1c, command: 17, interfaceIndex: 5, dump: true, sequence: 10)
        #expect(
            dump
                == B.raw(UInt32(28)) + B.raw(UInt16(0x1c)) + B.raw(UInt16(0x301)) + B.raw(UInt32(10))
                + B.raw(UInt32(0)) + [17, 0, 0, 0] + B.raw(UInt16(8)) + B.raw(UInt16(3)) + B.raw(UInt32(5)))
        let get = GenericNetlinkRequest.nl80211(family: 0x1c, command: 5, interfaceIndex: 5, dump: false, sequence: 11)
        #expect(get[6..<8] == [0x1, 0x0][...], "a plain request, not a dump")
        #expect(get[16] == 5)
    }

    @Test("the controller's answer: the family id and name; other commands and families are ignored")
    func family() {
        #expect(GenlBytes.only(GenlBytes.family(id: 0x21, sequence: 4)) == .family(id: 0x21, name: "nl80211"))
        // Before nl80211's id is known, a message of that type is nothing to us.
        let station = GenlBytes.station(sequence: 1, staInfo: GenlBytes.staInfo(signal: -50))
        #expect(
            GenericNetlinkParser.parse(station, nl80211: nil).messages.first?.message
                == .ignored(type: 0x1c, command: nil))
        // Another controller command (CTRL_CMD_NEWMCAST_GRP, 7) is skipped.
        #expect(
            GenlBytes.only(GenlBytes.message(type: 16, command: 7, sequence: 1, attributes: []))
                == .ignored(type: 16, command: 7))
        // Without CTRL_ATTR_FAMILY_ID, or with one of the wrong size: malformed.
        let noID = GenlBytes.message(
            type: 16, command: 1, sequence: 1, attributes: B.attribute(2, B.cString("nl80211")))
        #expect(GenlBytes.parse(noID).malformed != nil)
        let wide = GenlBytes.message(type: 16, command: 1, sequence: 1, attributes: B.attribute(1, B.raw(UInt32(0x1c))))
        #expect(GenlBytes.parse(wide).malformed != nil)
        let unterminated = GenlBytes.message(
            type: 16, command: 1, sequence: 1,
            attributes: B.attribute(1, B.raw(UInt16(0x1c))) + B.attribute(2, Array("nl80211".utf8)))
        #expect(GenlBytes.parse(unterminated).malformed != nil)
    }

    @Test("NLMSG_ERROR and NLMSG_DONE carry their errno; an old empty NLMSG_DONE is 0")
    func errorsAndDone() {
        #expect(GenlBytes.only(GenlBytes.error(sequence: 1, errno: ENOENT)) == .error(errno: ENOENT))
        #expect(GenlBytes.only(GenlBytes.done(sequence: 1, errno: ENODEV)) == .done(errno: ENODEV))
        #expect(GenlBytes.only(GenlBytes.done(sequence: 1)) == .done(errno: 0))
        #expect(GenlBytes.only(B.message(type: 3, sequence: 1, payload: [])) == .done(errno: 0))
        #expect(GenlBytes.parse(B.message(type: 2, sequence: 1, payload: [1, 2])).malformed != nil)
    }

    @Test("a station: index, MAC, SIGNAL and SIGNAL_AVG as signed dBm, the average preferred; TDLS peers marked")
    func station() {
        guard
            case .station(let both)? = GenlBytes.only(
                GenlBytes.station(sequence: 1, staInfo: GenlBytes.staInfo(signal: -71, average: -58)))
        else {
            Issue.record("not a station")
            return
        }
        #expect(both.index == 3)
        #expect(both.address == [2, 0, 0, 0, 0, 0xaa])
        #expect(both.signal == -71 && both.signalAverage == -58)
        #expect(both.bestSignal == -58)
        #expect(!both.isTDLSPeer)

        // Only SIGNAL; the extreme bytes: 0x80 is -128 dBm, 0xff is -1 dBm.
        for (value, expected): (Int8, Int8) in [(-128, -128), (-1, -1), (-90, -90)] {
            guard
                case .station(let one)? = GenlBytes.only(
                    GenlBytes.station(sequence: 1, staInfo: GenlBytes.staInfo(signal: value)))
            else {
                Issue.record("not a station")
                return
            }
            #expect(one.bestSignal == expected)
            #expect(one.signalAverage == nil)
        }
        // No signal at all (a driver that does not report it), and no STA_INFO at all.
        #expect(
            GenlBytes.only(GenlBytes.station(sequence: 1, staInfo: GenlBytes.staInfo()))
                == .station(StationMessage(index: 3, address: [2, 0, 0, 0, 0, 0xaa])))
        #expect(
            GenlBytes.only(GenlBytes.station(sequence: 1, staInfo: nil))
                == .station(StationMessage(index: 3, address: [2, 0, 0, 0, 0, 0xaa])))
        // An empty nest is valid, too.
        #expect(GenlBytes.parse(GenlBytes.station(sequence: 1, staInfo: [])).malformed == nil)

        // STA_FLAGS: TDLS_PEER (bit 6) counts only when both in the mask and set.
        let tdls: UInt32 = 1 << 6
        for (flags, peer) in [((tdls | 2, tdls | 2), true), ((2, tdls), false), ((tdls, 2), false)] {
            guard
                case .station(let one)? = GenlBytes.only(
                    GenlBytes.station(sequence: 1, staInfo: GenlBytes.staInfo(signal: -40, flags: flags)))
            else {
                Issue.record("not a station")
                return
            }
            #expect(one.isTDLSPeer == peer, "\(flags)")
        }
    }

    @Test("malformed stations are reported, never read past their end")
    func malformedStation() {
        let good = GenlBytes.station(sequence: 1, staInfo: GenlBytes.staInfo(signal: -50, average: -52))
        #expect(GenlBytes.parse(good).malformed == nil)
        // Cut anywhere inside the message (nlmsg_len made to match): the nest or an attribute overruns.
        for cut in stride(from: 17, to: good.count, by: 1) where cut % 4 != 0 || cut < 20 {
            var bytes = Array(good[..<cut])
            bytes.replaceSubrange(0..<4, with: B.raw(UInt32(cut)))
            let result = GenlBytes.parse(bytes)
            #expect(result.malformed != nil || result.messages.count == 1, "cut at \(cut)")
        }
        // nlmsg_len beyond the datagram.
        let long = GenlBytes.station(sequence: 1, staInfo: GenlBytes.staInfo(signal: -50))
        var overlong = long
        overlong.replaceSubrange(0..<4, with: B.raw(UInt32(long.count + 8)))
        #expect(GenlBytes.parse(overlong).malformed != nil)
        // Shorter than genlmsghdr.
        #expect(GenlBytes.parse(B.message(type: 0x1c, sequence: 1, payload: [19, 0])).malformed != nil)
        // A nest whose inner attribute claims more than the nest holds.
        let lying = B.attribute(7, [0xc0], length: 12)
        #expect(GenlBytes.parse(GenlBytes.station(sequence: 1, staInfo: lying)).malformed != nil)
        // The nest itself claiming more than the message holds.
        let attributes = B.attribute(3, B.raw(UInt32(3))) + B.attribute(21, GenlBytes.staInfo(signal: -50), length: 200)
        #expect(
            GenlBytes.parse(GenlBytes.message(type: 0x1c, command: 19, sequence: 1, attributes: attributes)).malformed
                != nil)
        // A STA_INFO too short to be a nest (2 bytes).
        let notNest = B.attribute(3, B.raw(UInt32(3))) + B.attribute(21, [1, 2])
        #expect(
            GenlBytes.parse(GenlBytes.message(type: 0x1c, command: 19, sequence: 1, attributes: notNest)).malformed
                != nil)
        // Wrong sizes: SIGNAL of 2 bytes, SIGNAL_AVG of 4, STA_FLAGS of 4, MAC of 5, IFINDEX of 2.
        for inner in [
            B.attribute(7, [0xc0, 0]), B.attribute(13, B.raw(UInt32(0xc0))), B.attribute(17, B.raw(UInt32(0))),
        ] {
            #expect(GenlBytes.parse(GenlBytes.station(sequence: 1, staInfo: inner)).malformed != nil)
        }
        #expect(GenlBytes.parse(GenlBytes.station(sequence: 1, mac: [1, 2, 3, 4, 5], staInfo: nil)).malformed != nil)
        let shortIndex = B.attribute(3, [3, 0])
        #expect(
            GenlBytes.parse(GenlBytes.message(type: 0x1c, command: 19, sequence: 1, attributes: shortIndex)).malformed
                != nil)
        // More attributes than the cap at one level.
        let many = (0...GenericNetlinkParser.maxAttributes).map { _ in B.attribute(1, B.raw(UInt32(0))) }.reduce([], +)
        #expect(GenlBytes.parse(GenlBytes.station(sequence: 1, staInfo: many)).malformed != nil)
        // The messages before a malformed one are kept.
        let pair = GenlBytes.done(sequence: 1) + overlong
        #expect(GenlBytes.parse(pair).messages.count == 1)
        #expect(GenlBytes.parse(pair).malformed?.offset == 20)
    }

    @Test("the interface: type and SSID octets (32 bytes, empty, not UTF-8); 33 bytes is malformed")
    func interface() {
        #expect(
            GenlBytes.only(GenlBytes.interface(sequence: 1, ssid: Array("home".utf8)))
                == .interface(WirelessInterfaceMessage(index: 3, type: 2, ssid: Array("home".utf8))))
        let thirtyTwo = [UInt8](repeating: 0x41, count: 32)
        #expect(
            GenlBytes.only(GenlBytes.interface(sequence: 1, ssid: thirtyTwo))
                == .interface(WirelessInterfaceMessage(index: 3, type: 2, ssid: thirtyTwo)))
        #expect(
            GenlBytes.only(GenlBytes.interface(sequence: 1, ssid: []))
                == .interface(WirelessInterfaceMessage(index: 3, type: 2, ssid: [])))
        #expect(
            GenlBytes.only(GenlBytes.interface(sequence: 1, ssid: nil))
                == .interface(WirelessInterfaceMessage(index: 3, type: 2, ssid: nil)))
        let odd: [UInt8] = [0xff, 0x00, 0x41, 0x5c, 0xc3]
        #expect(
            GenlBytes.only(GenlBytes.interface(sequence: 1, ssid: odd))
                == .interface(WirelessInterfaceMessage(index: 3, type: 2, ssid: odd)))
        #expect(
            GenlBytes.parse(GenlBytes.interface(sequence: 1, ssid: [UInt8](repeating: 1, count: 33))).malformed != nil)
        let shortType = B.attribute(3, B.raw(UInt32(3))) + B.attribute(5, [2])
        #expect(
            GenlBytes.parse(GenlBytes.message(type: 0x1c, command: 7, sequence: 1, attributes: shortType)).malformed
                != nil)
    }

    @Test("the SSID shown: UTF-8 as is, otherwise printable ASCII with \\xNN escapes; empty is none")
    func ssidDisplay() {
        #expect(WirelessStatus(ssidBytes: Array("Café ☕".utf8)).ssid == "Café ☕")
        #expect(WirelessStatus(ssidBytes: [0xff, 0x00, 0x41, 0x5c, 0xc3]).ssid == "\\xff\\x00A\\\\\\xc3")
        #expect(WirelessStatus(ssidBytes: Array("tab\there".utf8)).ssid == "tab\\x09here")
        #expect(WirelessStatus(ssidBytes: [0xff]).ssidBytes == [0xff], "the octets are kept exactly")
        #expect(WirelessStatus(ssidBytes: []).ssid == nil)
        #expect(WirelessStatus(ssidBytes: []).ssidBytes == nil)
        let thirtyTwo = String(repeating: "x", count: 32)
        #expect(WirelessStatus(ssidBytes: Array(thirtyTwo.utf8)).ssid == thirtyTwo)
    }
}

@Suite struct WirelessReaderTests {
    static let ap: [UInt8] = [2, 0, 0, 0, 0, 0xaa]
    static let peer: [UInt8] = [2, 0, 0, 0, 0, 0xbb]

    @Test("a station interface: the access point's average signal, its bucket, the SSID and BSSID")
    func associated() throws {
        let kernel = ScriptedKernel.withStationInterface(stations: [
            // A TDLS peer first (stronger): not the access point.
            GenlBytes.station(sequence: 0, mac: Self.peer, staInfo: GenlBytes.staInfo(signal: -30, flags: (64, 64))),
            GenlBytes.station(sequence: 0, mac: Self.ap, staInfo: GenlBytes.staInfo(signal: -75, average: -66)),
        ])
        let status = try ScriptedKernel.read(kernel).get()
        #expect(status.signalDBm == -66)
        #expect(status.linkQuality == .moderate)
        #expect(status.ssid == "home")
        #expect(status.accessPoint == Self.ap)
        #expect(status.interfaceType == 2)
        // What was asked: the family, the interface, then the station dump for index 3.
        #expect(kernel.requests.map(\.type) == [16, GenlBytes.nl80211Family, GenlBytes.nl80211Family])
        #expect(kernel.requests.map(\.command) == [3, 5, 17])
        #expect(kernel.requests.map(\.flags) == [0x1, 0x1, 0x301])
        #expect(Set(kernel.requests.map(\.sequence)).count == 3)
        #expect(Array(kernel.requests[2].bytes[20...]) == NetlinkBuilder.attribute(3, NetlinkBuilder.raw(UInt32(3))))
    }

    @Test("SIGNAL only, no signal, no station (not associated), a P2P client")
    func signals() throws {
        let strong = ScriptedKernel.withStationInterface(stations: [
            GenlBytes.station(sequence: 0, mac: Self.ap, staInfo: GenlBytes.staInfo(signal: -45))
        ])
        #expect(try ScriptedKernel.read(strong).get().linkQuality == .good)
        let weak = ScriptedKernel.withStationInterface(
            type: 8,
            stations: [
                GenlBytes.station(sequence: 0, mac: Self.ap, staInfo: GenlBytes.staInfo(signal: -88))
            ])
        #expect(try ScriptedKernel.read(weak).get().linkQuality == .minimal)
        let silent = ScriptedKernel.withStationInterface(stations: [
            GenlBytes.station(sequence: 0, mac: Self.ap, staInfo: GenlBytes.staInfo())
        ])
        let unknown = try ScriptedKernel.read(silent).get()
        #expect(unknown.signalDBm == nil && unknown.linkQuality == .unknown)
        #expect(unknown.accessPoint == Self.ap)
        let alone = try ScriptedKernel.read(ScriptedKernel.withStationInterface(ssid: nil, stations: [])).get()
        #expect(alone == WirelessStatus(interfaceType: 2))
        #expect(alone.linkQuality == .unknown)
        // A station of another interface in the answer is not ours.
        let other = ScriptedKernel.withStationInterface(stations: [
            GenlBytes.station(sequence: 0, index: 9, mac: Self.ap, staInfo: GenlBytes.staInfo(signal: -45))
        ])
        #expect(try ScriptedKernel.read(other).get().signalDBm == nil)
    }

    @Test("an access-point interface: its SSID, no station dump, unknown quality")
    func accessPointMode() throws {
        let kernel = ScriptedKernel.withStationInterface(type: 3, stations: [])
        let status = try ScriptedKernel.read(kernel).get()
        #expect(status.ssid == "home" && status.linkQuality == .unknown && status.signalDBm == nil)
        #expect(kernel.requests.map(\.command) == [3, 5])
    }

    @Test("no nl80211 family (ENOENT): unavailable, nothing more asked; not a wireless device: notWireless")
    func unavailable() throws {
        let none = ScriptedKernel { [GenlBytes.error(sequence: $0.sequence, errno: ENOENT)] }
        #expect(ScriptedKernel.read(none) == .failure(.noNL80211))
        #expect(none.requests.count == 1)

        let wired = ScriptedKernel { request in
            request.type == 16
                ? [GenlBytes.family(sequence: request.sequence)]
                : [GenlBytes.error(sequence: request.sequence, errno: ENODEV)]
        }
        #expect(ScriptedKernel.read(wired) == .failure(.notWireless(errno: ENODEV)))

        // The dump fails in its NLMSG_DONE (the kernel's way for a dump's errors).
        let gone = ScriptedKernel { request in
            switch request.command {
            case 3 where request.type == 16: [GenlBytes.family(sequence: request.sequence)]
            case 5: [GenlBytes.interface(sequence: request.sequence)]
            default: [GenlBytes.done(sequence: request.sequence, errno: ENODEV)]
            }
        }
        #expect(ScriptedKernel.read(gone) == .failure(.notWireless(errno: ENODEV)))
        let unsupported = ScriptedKernel { request in
            switch request.command {
            case 3 where request.type == 16: [GenlBytes.family(sequence: request.sequence)]
            case 5: [GenlBytes.interface(sequence: request.sequence)]
            default: [GenlBytes.done(sequence: request.sequence, errno: EOPNOTSUPP)]
            }
        }
        #expect(
            try ScriptedKernel.read(unsupported).get()
                == WirelessStatus(interfaceType: 2, ssidBytes: Array("home".utf8)))

        let denied = ScriptedKernel { [GenlBytes.error(sequence: $0.sequence, errno: EPERM)] }
        guard case .failure(.failed(let error)) = ScriptedKernel.read(denied) else {
            Issue.record("EPERM is a failure")
            return
        }
        #expect(error.code == .systemCall && error.errno == EPERM)
        // An index no interface can have is not asked about.
        #expect(WirelessInfo.read(interfaceIndex: 0) == .failure(.notWireless(errno: ENODEV)))
    }

    @Test("answers of other sequence numbers are skipped; a malformed answer is a failure, not a trap")
    func stray() throws {
        let kernel = ScriptedKernel { request in
            let seq = request.sequence
            switch (request.type, request.command) {
            case (16, 3): return [GenlBytes.error(sequence: seq &- 50, errno: EPERM), GenlBytes.family(sequence: seq)]
            case (_, 5): return [GenlBytes.interface(sequence: seq)]
            default:
                let bad = GenlBytes.station(sequence: seq, staInfo: NetlinkBuilder.attribute(7, [1, 2]))
                return [bad, GenlBytes.done(sequence: seq)]
            }
        }
        guard case .failure(.failed(let error)) = ScriptedKernel.read(kernel) else {
            Issue.record("a malformed station is a failure")
            return
        }
        #expect(error.code == .netlinkProtocol)
        #expect(error.message.contains("NL80211_STA_INFO_SIGNAL"))
    }

    @Test("a kernel that never answers, or a dump that never ends: bounded by the deadline and the caps")
    func bounded() {
        let mute = ScriptedKernel { _ in [] }
        let start = ContinuousClock.now
        guard case .failure(.failed(let error)) = ScriptedKernel.read(mute, timeout: .milliseconds(300)) else {
            Issue.record("silence is a failure")
            return
        }
        let took = ContinuousClock.now - start
        #expect(error.code == .timedOut)
        // It waited for its deadline, and not much longer (generous: TSan, loaded CI).
        #expect(took >= .milliseconds(250) && took < .seconds(5), "\(took)")

        // An endless dump, fast: cut at the message cap.
        let dropDone = ScriptedKernel { request in
            switch request.command {
            case 3 where request.type == 16: [GenlBytes.family(sequence: request.sequence)]
            case 5: [GenlBytes.interface(sequence: request.sequence)]
            default: []
            }
        }
        dropDone.whenIdle = { request in
            guard request.command == 17 else { return nil }
            return GenlBytes.station(sequence: request.sequence, staInfo: GenlBytes.staInfo(signal: -50))
        }
        guard case .failure(.failed(let capped)) = ScriptedKernel.read(dropDone, timeout: .seconds(30)) else {
            Issue.record("an endless dump is a failure")
            return
        }
        #expect(capped.code == .netlinkProtocol)
        #expect(capped.message.contains("over 1024 messages"))

        // An endless trickle of datagrams without messages for us: cut at the deadline
        // or the datagram cap, whichever comes first.
        let trickle = ScriptedKernel { request in
            request.type == 16 ? [GenlBytes.family(sequence: request.sequence)] : []
        }
        trickle.whenIdle = { request in
            usleep(200)
            return GenlBytes.done(sequence: request.sequence &+ 7)
        }
        let began = ContinuousClock.now
        guard case .failure(.failed(let cut)) = ScriptedKernel.read(trickle, timeout: .milliseconds(400)) else {
            Issue.record("a trickle is a failure")
            return
        }
        #expect(cut.code == .timedOut || cut.code == .netlinkProtocol)
        #expect(ContinuousClock.now - began < .seconds(3))
    }
}
