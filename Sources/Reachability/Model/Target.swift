/// One RTM_GETROUTE question: "which way would a packet to `destination` go?"
/// With `outputInterface` and `fibMatch`, "which table entry would carry it out
/// of that interface?" (`ip route get fibmatch DEST oif IF`): without FIB_MATCH
/// the kernel answers an oif lookup as if the destination were on-link there.
struct LookupRequest: Sendable, Hashable {
    var destination: IPAddress
    var source: IPAddress? = nil
    var outputInterface: Int32? = nil
    var fibMatch = false
}

/// The kernel's answer to a lookup.
enum LookupResult: Sendable, Equatable {
    /// The kernel answered with an error: ENETUNREACH (no route), EHOSTUNREACH
    /// (unreachable route), EINVAL (blackhole), EACCES (prohibit), or another.
    case noRoute(errno: Int32)
    /// The route the kernel would use.
    case route(RouteMessage)
}

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

    /// Combines the lookup results (one per entry of `lookups`) with the
    /// interface table. Pure.
    func evaluate(_ results: [LookupResult], in table: InterfaceTable) -> ReachabilityState {
        switch self {
        case .internet:
            guard results.count == 2 else { return .unreachable }
            let v4 = FlagsEvaluator.evaluate(results[0], destination: Self.internetProbeV4, in: table)
            let v6 = FlagsEvaluator.evaluate(results[1], destination: Self.internetProbeV6, in: table)
            return FlagsEvaluator.better(v4, v6)
        case .address(let address):
            guard let result = results.first else { return .unreachable }
            return FlagsEvaluator.evaluate(result, destination: address.unmapped, in: table)
        case .addressPair(let local, let remote):
            // A local address this host does not own can't be a source: nothing is reachable from it.
            guard let result = results.first, let owner = table.owner(of: local.unmapped), !owner.address.isDADFailed
            else {
                return .unreachable
            }
            return FlagsEvaluator.evaluate(result, destination: remote.unmapped, in: table)
        case .linkLocal:
            return FlagsEvaluator.evaluateLocalLink(in: table)
        case .host(_, let addresses):
            guard results.count == addresses.count else { return .unreachable }
            var best = ReachabilityState.unreachable
            for (address, result) in zip(addresses, results) {
                best = FlagsEvaluator.better(best, FlagsEvaluator.evaluate(result, destination: address, in: table))
            }
            return best
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
