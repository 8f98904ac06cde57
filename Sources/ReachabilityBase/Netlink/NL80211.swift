import Glibc
@_spi(Testing) import ReachabilitySystem

/// What nl80211 says about one wireless interface: the signal of the access point
/// it is associated with, that signal's ``LinkQuality`` bucket, and the SSID.
package struct WirelessStatus: Sendable, Hashable {
    /// NL80211_ATTR_IFTYPE (NL80211_IFTYPE_*: 2 station, 3 access point, 8 P2P
    /// client, …), when the kernel named it.
    package var interfaceType: UInt32?
    /// The SSID's raw octets (0...32, any bytes: an SSID need not be UTF-8), or nil
    /// when the kernel gave none or an empty one (not associated). Exact: use
    /// these, not ``ssid``, to tell networks apart.
    package var ssidBytes: [UInt8]?
    /// The MAC address of the station whose signal is reported: for a client
    /// interface, the access point (the BSSID); nil when there is none.
    package var accessPoint: [UInt8]?
    /// The signal in dBm (the driver's average when it keeps one, else the last
    /// received frame's), or nil: not a client interface, not associated, or a
    /// driver that does not report it.
    package var signalDBm: Int?

    /// The bucket of ``signalDBm`` (``LinkQuality/unknown`` without one).
    package var linkQuality: LinkQuality { signalDBm.map(LinkQuality.init(signalDBm:)) ?? .unknown }

    /// The SSID for display: the text when its octets are UTF-8 without control
    /// characters, else printable ASCII with every other byte as `\xNN` and a
    /// backslash as `\\` (as `iw` prints one). Two SSIDs may display alike; compare
    /// ``ssidBytes``.
    package var ssid: String? { ssidBytes.map(Self.display) }

    /// A status; an empty SSID is kept as none.
    package init(
        interfaceType: UInt32? = nil, ssidBytes: [UInt8]? = nil, accessPoint: [UInt8]? = nil, signalDBm: Int? = nil
    ) {
        self.interfaceType = interfaceType
        self.ssidBytes = ssidBytes.flatMap { $0.isEmpty ? nil : $0 }
        self.accessPoint = accessPoint
        self.signalDBm = signalDBm
    }

    /// The display form of SSID octets (see ``ssid``).
    package static func display(_ bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self),
            !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            return text
        }
        var escaped = ""
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\\"): escaped += "\\\\"
            case 0x20...0x7e: escaped.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16)
                escaped += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return escaped
    }
}

/// Reads a wireless interface's signal and SSID from nl80211 (generic netlink):
/// resolves the `nl80211` family with the controller (CTRL_CMD_GETFAMILY), asks
/// for the interface (NL80211_CMD_GET_INTERFACE: type, SSID), and for a client
/// interface (station, P2P client) dumps its stations (NL80211_CMD_GET_STATION
/// with NL80211_ATTR_IFINDEX) and takes the access point's: the first station that
/// is not a TDLS peer; its NL80211_STA_INFO_SIGNAL_AVG, else NL80211_STA_INFO_SIGNAL.
///
/// One short-lived socket per read, made inside the environment's namespace (on a
/// thread that enters it, see ``JoinableThread/inNamespace(_:overlayEtc:_:)``),
/// closed before returning. All of a read's exchanges share one deadline
/// (``defaultTimeout``); a dump is cut at 4,096 datagrams or 1,024 messages.
package enum WirelessInfo {
    /// Why there is no wireless status.
    package enum Unavailable: Error, Sendable, Hashable, CustomStringConvertible {
        /// The kernel has no `nl80211` generic netlink family (the controller answers
        /// ENOENT): no cfg80211, so no Wi-Fi device at all.
        case noNL80211
        /// nl80211 knows no wireless device of that index (ENODEV), or the driver
        /// can't describe it (EOPNOTSUPP): the interface is not Wi-Fi.
        case notWireless(errno: Int32)
        /// The read failed: the socket, the namespace, the deadline, or an answer
        /// that could not be parsed.
        case failed(ReachabilityError)

        /// Why, in a sentence for logs and the CLI.
        package var description: String {
            switch self {
            case .noNL80211: "no nl80211 in this kernel (no cfg80211)"
            case .notWireless(let errno):
                "not a wireless interface: \(ReachabilityError.strerror(errno)) (errno \(errno))"
            case .failed(let error): "reading nl80211 failed: \(error)"
            }
        }
    }

    /// How long one read may take, all exchanges together.
    package static let defaultTimeout: Duration = .seconds(2)
    /// Reads interface `interfaceIndex` of `environment`'s namespace. Never throws;
    /// returns within about `timeout` (plus entering the namespace).
    package static func read(
        interfaceIndex: Int32, environment: NetworkEnvironment = .default, timeout: Duration = defaultTimeout
    ) -> Result<WirelessStatus, Unavailable> {
        guard interfaceIndex > 0 else { return .failure(.notWireless(errno: GenlErrno.noDevice)) }
        do throws(ReachabilityError) {
            try environment.validate()
            return try JoinableThread.inNamespace(environment) {
                () throws(ReachabilityError) -> Result<WirelessStatus, Unavailable> in
                let socket = try NetlinkSocket(
                    receiveBuffer: 256 << 10, role: .nl80211, systemCalls: environment.systemCalls
                )
                let session = GenericNetlinkSession(
                    transport: socket, timeout: timeout, firstSequence: UInt32(truncatingIfNeeded: time(nil)))
                return read(interfaceIndex: interfaceIndex, session: session)
            }
        } catch {
            return .failure(.failed(error))
        }
    }

    /// The read over any transport (tests script the kernel's side).
    package static func read<Transport>(interfaceIndex: Int32, session: GenericNetlinkSession<Transport>) -> Result<
        WirelessStatus, Unavailable
    > {
        do throws(ReachabilityError) {
            if session.nl80211Family == nil, try session.resolveFamily(NL80211.familyName) == nil {
                return .failure(.noNL80211)
            }
            let interface: WirelessInterfaceMessage
            switch try session.nl80211(NL80211.cmdGetInterface, interfaceIndex: interfaceIndex, dump: false) {
            case .failed(let errno) where errno == GenlErrno.noDevice || errno == GenlErrno.notSupported:
                return .failure(.notWireless(errno: errno))
            case .failed(let errno):
                return .failure(
                    .failed(
                        ReachabilityError(.systemCall, "nl80211 GET_INTERFACE \(interfaceIndex) failed", errno: errno)))
            case .messages(let messages):
                guard case .interface(let found)? = messages.first, found.index == nil || found.index == interfaceIndex
                else {
                    return .failure(
                        .failed(
                            ReachabilityError(.netlinkProtocol, "nl80211 answered GET_INTERFACE with another interface")
                        ))
                }
                interface = found
            }
            var status = WirelessStatus(interfaceType: interface.type, ssidBytes: interface.ssid)
            guard interface.type == NL80211.iftypeStation || interface.type == NL80211.iftypeP2PClient else {
                return .success(status)
            }
            switch try session.nl80211(NL80211.cmdGetStation, interfaceIndex: interfaceIndex, dump: true) {
            case .failed(let errno) where errno == GenlErrno.notSupported:
                return .success(status)  // the driver lists no stations
            case .failed(let errno) where errno == GenlErrno.noDevice:
                return .failure(.notWireless(errno: errno))  // gone since GET_INTERFACE
            case .failed(let errno):
                return .failure(
                    .failed(
                        ReachabilityError(.systemCall, "nl80211 station dump of \(interfaceIndex) failed", errno: errno)
                    ))
            case .messages(let messages):
                let stations = messages.compactMap { message -> StationMessage? in
                    guard case .station(let station) = message, station.index == nil || station.index == interfaceIndex
                    else { return nil }
                    return station
                }
                if let accessPoint = stations.first(where: { !$0.isTDLSPeer }) {
                    status.accessPoint = accessPoint.address
                    status.signalDBm = accessPoint.bestSignal.map(Int.init)
                }
                return .success(status)
            }
        } catch {
            return .failure(.failed(error))
        }
    }
}
