import Glibc

/// Reads the few sysfs facts classification needs. Injectable so tests can
/// present Wi-Fi and modem devices from a fake tree.
struct SysfsReader: Sendable {
    /// `/sys` or a fake root with the same layout (`class/net/IF/uevent`, …); nil reads nothing.
    var root: String?

    /// The udev DEVTYPE of the interface, from `class/net/IF/uevent`.
    func deviceType(of name: String) -> String? {
        guard let root, Self.isSafeName(name) else { return nil }
        guard let contents = Self.read("\(root)/class/net/\(name)/uevent") else { return nil }
        for line in contents.split(whereSeparator: \.isNewline) where line.hasPrefix("DEVTYPE=") {
            return String(line.dropFirst("DEVTYPE=".count))
        }
        return nil
    }

    /// True when `class/net/IF/phy80211` or `class/net/IF/wireless` exists.
    func isWireless(_ name: String) -> Bool {
        guard let root, Self.isSafeName(name) else { return false }
        return access("\(root)/class/net/\(name)/phy80211", F_OK) == 0
            || access("\(root)/class/net/\(name)/wireless", F_OK) == 0
    }

    /// Interface names never contain '/', and "." / ".." are not interfaces.
    private static func isSafeName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.utf8.contains(0)
    }

    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }
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
enum InterfaceClassifier {
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

    static func classify(_ link: LinkMessage, sysfs: SysfsReader) -> InterfaceClassification {
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
