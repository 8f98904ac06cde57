/// Which network is behind the path's preferred interface: the gateways (with
/// their link-layer addresses, once resolved) and the interface's address
/// prefixes. It changes when the network behind the same interface does — another
/// router (a new MAC at the same gateway address, as every home network's
/// 192.168.1.1 has), another gateway, a lease on another subnet — even while the
/// path stays satisfied, as VPN clients and apps with per-network state need.
///
/// Built from rtnetlink: the neighbor table (RTM_NEWNEIGH) for the gateways'
/// link-layer addresses, the routes' gateways, the addresses' prefixes; and for
/// Wi-Fi the SSID from nl80211 (generic netlink), read when the path is evaluated.
///
/// `Sendable`: a plain value.
public struct NetworkIdentity: Sendable, Hashable, CustomStringConvertible {
    /// A default-route gateway of the interface.
    public struct Gateway: Sendable, Hashable, CustomStringConvertible {
        /// The gateway's address (no zone).
        public var address: IPAddress
        /// Its link-layer address as `ip neigh` prints it (`02:00:00:00:00:01`),
        /// as the kernel's neighbor table has it: nil until the kernel resolved
        /// it, and again after the entry went (the link lost carrier) or failed.
        public var hardwareAddress: String?

        /// Creates a gateway.
        public init(address: IPAddress, hardwareAddress: String? = nil) {
            self.address = address
            self.hardwareAddress = hardwareAddress
        }

        /// `192.0.2.2` or `192.0.2.2 (02:00:00:00:00:02)`.
        public var description: String {
            hardwareAddress.map { "\(address) (\($0))" } ?? "\(address)"
        }
    }

    /// The interface the identity is of (the path's preferred one).
    public var interface: String
    /// Its default-route gateways, IPv4 first.
    public var gateways: [Gateway]
    /// The networks of its usable addresses (`192.0.2.0/24`, `2001:db8::/64`),
    /// IPv4 first, without duplicates (privacy addresses share their prefix).
    public var prefixes: [String]
    /// The Wi-Fi network's SSID (nl80211; octets that are not UTF-8 as `\xNN`),
    /// nil for other links or when nl80211 is unavailable.
    public var ssid: String?

    /// Creates an identity.
    public init(interface: String, gateways: [Gateway], prefixes: [String], ssid: String? = nil) {
        self.interface = interface
        self.gateways = gateways
        self.prefixes = prefixes
        self.ssid = ssid
    }

    /// A short stable digest of the identity (16 hex digits, FNV-1a 64 of its
    /// text): equal for the same network, different otherwise; the same in every
    /// process and run, so it can be stored (per-network settings, "seen before").
    public var id: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in description.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// `eth0 via 192.0.2.2 (02:00:00:00:00:02) on 192.0.2.0/24`, with `ssid "NAME"`
    /// after the interface for Wi-Fi.
    public var description: String {
        var text = interface
        if let ssid { text += " ssid \"\(ssid)\"" }
        if !gateways.isEmpty { text += " via " + gateways.map(\.description).joined(separator: ", ") }
        if !prefixes.isEmpty { text += " on " + prefixes.joined(separator: ", ") }
        return text
    }

    /// `02:00:00:00:00:02`, as `ip neigh` prints a link-layer address.
    package static func format(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined(separator: ":")
    }
}
