@_spi(Testing) import ReachabilityBase

/// What a `Reachability` instance watches.
enum Target: Sendable, Hashable, CustomStringConvertible {
    /// The Internet (Apple's 0.0.0.0): the better of an IPv4 and an IPv6 lookup
    /// for a global unicast address.
    case internet
    /// One address (an IPv4-mapped IPv6 address is looked up as its IPv4 address).
    case address(IPAddress)
    /// A remote address reached from a given local address.
    case addressPair(local: IPAddress, remote: IPAddress)
    /// The local link (Apple's reachabilityForLocalWiFi, 169.254.0.0).
    case linkLocal
    /// A hostname with the addresses its latest resolution gave (empty: NXDOMAIN,
    /// no answer, or not resolved yet). Flags are the best over the addresses.
    case host(name: String, addresses: [IPAddress])

    /// The lookups this target needs, in the order `evaluate` expects their results.
    var lookups: [LookupRequest] {
        switch self {
        case .internet:
            return [
                LookupRequest(destination: IPAddress.internetProbeV4),
                LookupRequest(destination: IPAddress.internetProbeV6),
            ]
        case .address(let address):
            return [LookupRequest(destination: address.unmapped)]
        case .addressPair(let local, let remote):
            return [LookupRequest(destination: remote.unmapped, source: local.unmapped)]
        case .linkLocal:
            return []
        case .host(_, let addresses):
            return addresses.map { LookupRequest(destination: $0) }
        }
    }

    var description: String {
        switch self {
        case .internet: return "internet"
        case .address(let address): return address.description
        case .addressPair(let local, let remote): return "\(local) → \(remote)"
        case .linkLocal: return "link-local"
        case .host(let name, _): return name
        }
    }
}
