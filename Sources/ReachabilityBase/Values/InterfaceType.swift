/// The medium of a network interface, as NWInterface.InterfaceType names it.
///
/// Classified from netlink first (loopback flag, `IFLA_INFO_KIND`), then sysfs
/// (udev `DEVTYPE`, `phy80211`/`wireless`), then the hardware type and name; see
/// the DocC article for the exact order.
///
/// `Sendable`: a plain enum.
public enum InterfaceType: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Wi-Fi (802.11).
    case wifi
    /// A cellular modem (WWAN, rmnet, ccmni).
    case cellular
    /// Wired Ethernet, and the virtual links that behave like it: veth, bridge,
    /// bond, VLAN, macvlan.
    case wiredEthernet
    /// The loopback interface.
    case loopback
    /// Anything else: VPNs and tunnels (WireGuard, tun, GRE, …), PPP, Bluetooth.
    case other

    /// The case name, e.g. `"wiredEthernet"`.
    public var description: String { rawValue }
}

/// A network interface of the host: its kernel name and index, and its medium.
///
/// `Sendable`: a plain value.
public struct NetworkInterface: Sendable, Hashable, CustomStringConvertible {
    /// The kernel's name for it, e.g. `"eth0"`.
    public var name: String
    /// The kernel's interface index (`ifindex`).
    public var index: Int
    /// Its medium.
    public var type: InterfaceType

    /// Creates an interface description.
    public init(name: String, index: Int, type: InterfaceType) {
        self.name = name
        self.index = index
        self.type = type
    }

    /// `"eth0 (#2, wiredEthernet)"`.
    public var description: String { "\(name) (#\(index), \(type))" }
}
