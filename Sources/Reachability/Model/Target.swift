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

    /// Global unicast addresses whose lookups stand for "the Internet". Nothing is
    /// ever sent to them: the kernel is only asked which way a packet would go.
    static let internetProbeV4 = IPAddress(validBytes: [8, 8, 8, 8], scopeID: 0)
    static let internetProbeV6 = IPAddress(
        validBytes: [0x20, 0x01, 0x48, 0x60, 0x48, 0x60, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0x88], scopeID: 0)

    /// The lookups this target needs, in the order `evaluate` expects their results.
    var lookups: [LookupRequest] {
        switch self {
        case .internet:
            return [LookupRequest(destination: Self.internetProbeV4), LookupRequest(destination: Self.internetProbeV6)]
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
