@_spi(Testing) import ReachabilityBase

/// The few facts classification needs beyond netlink: udev's DEVTYPE and whether
/// the device is wireless. Classification only asks; the monitor supplies them
/// (``SysfsReader`` reads `/sys` or a fake tree), tests and the fuzzer answer from
/// memory, so evaluation itself reads no file.
@_spi(Testing) public protocol InterfaceFacts: Sendable {
    /// The udev DEVTYPE of the interface named `name` (`wlan`, `wwan`, …), if any.
    func deviceType(of name: String) -> String?
    /// Whether the interface named `name` is a wireless device.
    func isWireless(_ name: String) -> Bool
    /// The kernel driver bound to the interface's device (`rndis_host`, `e1000e`…), if any.
    func driver(of name: String) -> String?
}

extension InterfaceFacts {
    /// No driver known, unless the facts say otherwise.
    public func driver(of name: String) -> String? { nil }
}

/// No facts: classification from netlink and names alone.
@_spi(Testing) public struct NoInterfaceFacts: InterfaceFacts {
    /// No facts to give.
    public init() {}
    /// Always nil: no DEVTYPE is known.
    public func deviceType(of name: String) -> String? { nil }
    /// Always false: no interface is known to be wireless.
    public func isWireless(_ name: String) -> Bool { false }
}

/// Classifies interfaces: netlink first, sysfs second, names last.
///
/// 1. loopback: IFF_LOOPBACK.
///
/// Tunnel and cellular kinds are final at step 2; an Ethernet-like kind (veth,
/// bridge, macvlan, …) gives way to a DEVTYPE of wlan/wwan or a wireless sysfs
/// entry (steps 3–4): the kind says how the link is built, those say the medium.
///
/// 2. IFLA_INFO_KIND: tunnels (GRE, IPIP, SIT, VTI, VXLAN, Geneve, …), WireGuard, tun → other (VPN); wwan, rmnet →
///    cellular; veth, bridge, bond, vlan, macvlan, … → wiredEthernet.
/// 3. udev DEVTYPE: wlan → wifi; wwan → cellular; bluetooth, ppp → other.
/// 4. `phy80211` or `wireless` in sysfs → wifi.
/// 5. ARPHRD_PPP, ARPHRD_NONE, ARPHRD_RAWIP → other (cellular if step 3 or 6 says so).
/// 6. names rmnet*, ccmni*, wwan* → cellular.
/// 7. ARPHRD_ETHER with no kind and no DEVTYPE → wiredEthernet.
@_spi(Testing) public enum InterfaceClassifier {
    static let vpnKinds: Set<String> = [
        "wireguard", "tun", "tap", "gre", "gretap", "ip6gre", "ip6gretap", "ipip", "ip6tnl", "sit", "vti", "vti6",
        "erspan", "ip6erspan", "fou", "openvpn", "ovpn", "xfrm", "ipsec", "l2tp", "ppp", "wg", "vxlan", "geneve",
    ]
    static let cellularKinds: Set<String> = ["wwan", "rmnet", "qmi_wwan", "mhi_net", "ccmni"]
    static let ethernetKinds: Set<String> = [
        "veth", "bridge", "bond", "team", "vlan", "macvlan", "macvtap", "ipvlan", "ipvtap",
        "dummy", "nlmon", "netkit", "hsr", "vrf",
    ]
    static let cellularNamePrefixes = ["rmnet", "ccmni", "wwan"]
    /// USB drivers of phones sharing their connection: Android's RNDIS tethering and
    /// the iPhone's Personal Hotspot over USB. (cdc_ncm and cdc_ether also drive
    /// plain USB Ethernet adapters and docks, so they don't count.)
    static let tetheringDrivers: Set<String> = ["rndis_host", "ipheth"]

    /// The type (and VPN-ness) of `link`, by the steps above; `sysfs` answers
    /// steps 3 and 4.
    public static func classify(_ link: LinkMessage, sysfs: some InterfaceFacts) -> InterfaceClassification {
        var classification = classifyType(link, sysfs: sysfs)
        guard classification.type != .loopback, !classification.isVirtualPrivate else { return classification }
        let name = link.name ?? ""
        if sysfs.deviceType(of: name)?.lowercased() == "bluetooth"
            || sysfs.driver(of: name).map(tetheringDrivers.contains) == true
        {
            classification.isTethered = true
        }
        return classification
    }

    /// The type (and VPN-ness) by the steps above.
    static func classifyType(_ link: LinkMessage, sysfs: some InterfaceFacts) -> InterfaceClassification {
        if link.flags & IFF.loopback != 0 || link.hardwareType == ARPHRD.loopback {
            return InterfaceClassification(.loopback)
        }
        let name = link.name ?? ""
        let nameSaysCellular = cellularNamePrefixes.contains { name.hasPrefix($0) }
        let kind = link.kind?.lowercased() ?? ""
        if vpnKinds.contains(kind) { return InterfaceClassification(.other, virtualPrivate: true) }
        if cellularKinds.contains(kind) { return InterfaceClassification(.cellular) }
        let deviceType = sysfs.deviceType(of: name)?.lowercased()
        // An Ethernet-like kind says how the link is built; udev's DEVTYPE and the
        // wireless sysfs entries say what medium it is. The medium wins.
        switch deviceType {
        case "wlan": return InterfaceClassification(.wifi)
        case "wwan": return InterfaceClassification(.cellular)
        default: break
        }
        if sysfs.isWireless(name) { return InterfaceClassification(.wifi) }
        if ethernetKinds.contains(kind) { return InterfaceClassification(.wiredEthernet) }
        switch deviceType {
        case "bluetooth": return InterfaceClassification(.other)
        case "ppp": return InterfaceClassification(.other, virtualPrivate: true)
        default: break
        }
        switch link.hardwareType {
        case ARPHRD.ppp, ARPHRD.none, ARPHRD.rawIP:
            if nameSaysCellular { return InterfaceClassification(.cellular) }
            return InterfaceClassification(.other, virtualPrivate: true)
        case ARPHRD.tunnel, ARPHRD.tunnel6, ARPHRD.sit, ARPHRD.ipGRE, ARPHRD.ip6GRE:
            return InterfaceClassification(.other, virtualPrivate: true)
        default:
            break
        }
        if nameSaysCellular { return InterfaceClassification(.cellular) }
        if link.hardwareType == ARPHRD.ether { return InterfaceClassification(.wiredEthernet) }
        if link.hardwareType == ARPHRD.ieee80211 { return InterfaceClassification(.wifi) }
        return InterfaceClassification(.other)
    }
}
