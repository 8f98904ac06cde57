/// One RTM_GETROUTE question: "which way would a packet to `destination` go?"
/// With `outputInterface` and `fibMatch`, "which table entry would carry it out
/// of that interface?" (`ip route get fibmatch DEST oif IF`): without FIB_MATCH
/// the kernel answers an oif lookup as if the destination were on-link there.
@_spi(Testing) public struct LookupRequest: Sendable, Hashable {
    /// The address asked about (RTA_DST).
    public package(set) var destination: IPAddress
    package var source: IPAddress? = nil
    package var outputInterface: Int32? = nil
    package var fibMatch = false

    package init(
        destination: IPAddress, source: IPAddress? = nil, outputInterface: Int32? = nil, fibMatch: Bool = false
    ) {
        self.destination = destination
        self.source = source
        self.outputInterface = outputInterface
        self.fibMatch = fibMatch
    }
}

/// The kernel's answer to a lookup.
@_spi(Testing) public enum LookupResult: Sendable, Equatable {
    /// The kernel answered with an error: ENETUNREACH (no route), EHOSTUNREACH
    /// (unreachable route), EINVAL (blackhole), EACCES (prohibit), or another.
    case noRoute(errno: Int32)
    /// The route the kernel would use.
    case route(RouteMessage)

    /// Whether the answer is a route out of `link` (a multipath route: a next hop's).
    package func goesOut(of link: Int32) -> Bool {
        guard case .route(let route) = self else { return false }
        var found = false
        route.forEachOutputLink { found = found || $0 == link }
        return found
    }
}
