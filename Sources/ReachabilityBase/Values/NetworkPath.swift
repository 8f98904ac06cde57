/// What the network offers now, as NWPath describes it: is there a usable path
/// out, over which interfaces (in order of preference), with which gateways,
/// families and DNS, and at what cost.
///
/// `Sendable`: a plain value.
public struct NetworkPath: Sendable, Hashable, CustomStringConvertible {
    /// Whether the path can be used.
    public enum Status: String, Sendable, Hashable, CustomStringConvertible {
        /// An allowed interface is usable and has a route out.
        case satisfied
        /// No allowed interface can carry traffic out.
        case unsatisfied
        /// An allowed interface has a route out but is not usable yet (IPv6 DAD
        /// still running, link settling, 802.1X/WPA pending); it resolves by itself
        /// or with authentication.
        case requiresConnection

        /// The case name, e.g. `"satisfied"`.
        public var description: String { rawValue }
    }

    /// Why a path is unsatisfied (NWPath's names).
    public enum UnsatisfiedReason: String, Sendable, Hashable, CustomStringConvertible {
        /// No allowed interface has a usable route out.
        case notAvailable
        /// A cellular interface could carry the traffic, but the monitor's
        /// required or prohibited interface types exclude it.
        case cellularDenied
        /// A Wi-Fi interface could carry the traffic, but the monitor's required
        /// or prohibited interface types exclude it.
        case wifiDenied

        /// The case name, e.g. `"notAvailable"`.
        public var description: String { rawValue }
    }

    /// satisfied, unsatisfied, or requiresConnection.
    public var status: Status
    /// Why the path is unsatisfied; nil unless ``status`` is ``Status/unsatisfied``.
    public var unsatisfiedReason: UnsatisfiedReason?
    /// The usable interfaces the monitor allows, in order of preference: the one the
    /// kernel routes Internet traffic through first, then by default-route metric,
    /// then by type (wired, Wi-Fi, cellular, other); loopback only when required.
    public var availableInterfaces: [NetworkInterface]
    /// The default-route gateways of the available interfaces, in the same order
    /// (IPv4 before IPv6 for each interface).
    public var gateways: [IPAddress]
    /// An allowed interface has a usable IPv4 address and an IPv4 route out.
    public var supportsIPv4: Bool
    /// An allowed interface has a usable global IPv6 address and an IPv6 route out.
    public var supportsIPv6: Bool
    /// Nameservers are configured (resolv.conf, or systemd-resolved's upstream
    /// servers behind its 127.0.0.53 stub) and the path is not unsatisfied.
    public var supportsDNS: Bool
    /// The preferred interface is expensive: cellular, a phone's shared connection
    /// (USB tethering by the `rndis_host` or `ipheth` driver, Bluetooth PAN), or its
    /// DHCP lease says `ANDROID_METERED` (``NetworkEnvironment/leaseRoot``); unless
    /// overridden per interface with ``PathMonitorOptions/expensiveInterfaces``.
    public var isExpensive: Bool
    /// The preferred interface is marked constrained with
    /// ``PathMonitorOptions/constrainedInterfaces`` (false by default).
    public var isConstrained: Bool
    /// Which network is behind the preferred interface (``NetworkIdentity``); nil
    /// while the path is unsatisfied. A change of it alone is a path change: the
    /// monitor delivers it though the status stays satisfied.
    public var networkIdentity: NetworkIdentity?
    /// The preferred interface's link quality when it is Wi-Fi, from the signal
    /// nl80211 reports for the access point (``LinkQuality``), as of the last
    /// evaluation; ``LinkQuality/unknown`` otherwise or without nl80211. The kernel
    /// sends no event for a signal change: it is read afresh when the path is
    /// evaluated (any link, address, route or identity change).
    public var linkQuality: LinkQuality

    /// Creates a path (for tests and previews; monitors build their own).
    public init(
        status: Status, unsatisfiedReason: UnsatisfiedReason? = nil, availableInterfaces: [NetworkInterface] = [],
        gateways: [IPAddress] = [], supportsIPv4: Bool = false, supportsIPv6: Bool = false,
        supportsDNS: Bool = false, isExpensive: Bool = false, isConstrained: Bool = false,
        networkIdentity: NetworkIdentity? = nil, linkQuality: LinkQuality = .unknown
    ) {
        self.networkIdentity = networkIdentity
        self.linkQuality = linkQuality
        self.status = status
        self.unsatisfiedReason = unsatisfiedReason
        self.availableInterfaces = availableInterfaces
        self.gateways = gateways
        self.supportsIPv4 = supportsIPv4
        self.supportsIPv6 = supportsIPv6
        self.supportsDNS = supportsDNS
        self.isExpensive = isExpensive
        self.isConstrained = isConstrained
    }

    /// An unsatisfied path with nothing available.
    public static let unsatisfied = NetworkPath(status: .unsatisfied, unsatisfiedReason: .notAvailable)

    /// Whether traffic on this path goes over an interface of `type`: the
    /// preferred interface's type. Always false for an unsatisfied path.
    public func usesInterfaceType(_ type: InterfaceType) -> Bool {
        status != .unsatisfied && availableInterfaces.first?.type == type
    }

    /// `"satisfied via eth0 (#2, wiredEthernet), wlan0 (#3, wifi) ipv4 ipv6 dns"`.
    public var description: String {
        var text = "\(status)"
        if let unsatisfiedReason { text += " (\(unsatisfiedReason))" }
        if !availableInterfaces.isEmpty {
            text += " via " + availableInterfaces.map(\.description).joined(separator: ", ")
        }
        if supportsIPv4 { text += " ipv4" }
        if supportsIPv6 { text += " ipv6" }
        if supportsDNS { text += " dns" }
        if isExpensive { text += " expensive" }
        if isConstrained { text += " constrained" }
        return text
    }
}
