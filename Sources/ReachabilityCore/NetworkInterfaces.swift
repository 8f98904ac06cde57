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
}

/// A snapshot of the namespace's interfaces, for tools like `reachability interfaces`.
public enum NetworkInterfaces {
    /// Every interface with its state and addresses, by index. Default routes are
    /// found with per-interface `fibmatch` lookups, not by dumping the routing table.
    /// Throws ``ReachabilityError`` for an environment whose namespace can't be
    /// entered or whose paths are malformed (see ``NetworkEnvironment``), and when
    /// the netlink socket fails.
    public static func list(environment: NetworkEnvironment = .default) throws(ReachabilityError)
        -> [InterfaceDetails]
    {
        try environment.validate()
        return try OneShotEvaluator.run(environment: environment) { table, lookup throws(ReachabilityError) in
            let interfaces = table.interfaces.values.sorted { $0.index < $1.index }
            var requests: [LookupRequest] = []
            for interface in interfaces {
                for probe in [IPAddress.internetProbeV4, IPAddress.internetProbeV6] {
                    requests.append(LookupRequest(destination: probe, outputInterface: interface.index, fibMatch: true))
                }
            }
            let results = try lookup(requests)
            return interfaces.enumerated().map { offset, interface in
                var families: [IPAddress.Family] = []
                for (family, result) in zip([IPAddress.Family.ipv4, .ipv6], results[(offset * 2)..<(offset * 2 + 2)]) {
                    if case .route(let route) = result, route.type == RTN.unicast, route.destinationLength == 0 {
                        families.append(family)
                    }
                }
                let addresses = table.addresses(of: interface.index)
                    .sorted {
                        ($0.address.family == .ipv4 ? 0 : 1, $0.address.description) < (
                            $1.address.family == .ipv4 ? 0 : 1, $1.address.description
                        )
                    }
                    .map {
                        InterfaceDetails.Address(
                            address: $0.address, prefixLength: Int($0.prefixLength), isTentative: $0.isTentative,
                            isDADFailed: $0.isDADFailed)
                    }
                return InterfaceDetails(
                    interface: interface.publicInterface, operState: operStateName(interface.operState),
                    isUp: interface.isUp, hasCarrier: interface.hasCarrier, addresses: addresses,
                    defaultRouteFamilies: families)
            }
        }
    }

    static func operStateName(_ state: UInt8) -> String {
        switch state {
        case IFOper.up: "up"
        case IFOper.down: "down"
        case IFOper.dormant: "dormant"
        case IFOper.lowerLayerDown: "lowerlayerdown"
        case IFOper.testing: "testing"
        case IFOper.notPresent: "notpresent"
        default: "unknown"
        }
    }
}
