/// One interface as `networkctl list` / `ip addr` would show it.
///
/// `Sendable`: a plain value.
public struct InterfaceDetails: Sendable, Hashable {
    /// An address on the interface.
    public struct Address: Sendable, Hashable, CustomStringConvertible {
        /// The address.
        public var address: IPAddress
        /// The prefix length.
        public var prefixLength: Int
        /// Still in duplicate address detection (IPv6).
        public var isTentative: Bool
        /// Duplicate address detection found a conflict.
        public var isDADFailed: Bool

        /// `"192.0.2.1/24"`, with ` tentative` or ` dadfailed` when so.
        public var description: String {
            "\(address)/\(prefixLength)" + (isTentative ? " tentative" : "") + (isDADFailed ? " dadfailed" : "")
        }

        package init(address: IPAddress, prefixLength: Int, isTentative: Bool, isDADFailed: Bool) {
            self.address = address
            self.prefixLength = prefixLength
            self.isTentative = isTentative
            self.isDADFailed = isDADFailed
        }
    }

    /// Name, index and type.
    public var interface: NetworkInterface
    /// RFC 2863 operational state, lowercase as `ip link` prints it: `up`, `down`,
    /// `dormant`, `lowerlayerdown`, `testing`, `notpresent`, `unknown`.
    public var operState: String
    /// Administratively up (IFF_UP).
    public var isUp: Bool
    /// The link has carrier (IFF_LOWER_UP).
    public var hasCarrier: Bool
    /// Its addresses, IPv4 first.
    public var addresses: [Address]
    /// The families for which a default route leaves through this interface.
    public var defaultRouteFamilies: [IPAddress.Family]

    /// Whether a default route (IPv4 or IPv6) leaves through this interface.
    public var hasDefaultRoute: Bool { !defaultRouteFamilies.isEmpty }

    package init(
        interface: NetworkInterface, operState: String, isUp: Bool, hasCarrier: Bool, addresses: [Address],
        defaultRouteFamilies: [IPAddress.Family]
    ) {
        self.interface = interface
        self.operState = operState
        self.isUp = isUp
        self.hasCarrier = hasCarrier
        self.addresses = addresses
        self.defaultRouteFamilies = defaultRouteFamilies
    }
}
