public import Reachability

/// Where a check's probes leave: over any interface and family the kernel picks
/// (``any``, the default), over one interface, over one address family, or both —
/// NetworkManager's per-device checks, with IPv4 and IPv6 told apart.
///
/// Over an interface, each probe's socket is bound to it (`SO_BINDTOIFINDEX`, the
/// index form of `SO_BINDTODEVICE`): the kernel routes it by that interface's
/// routes only, whatever the main table prefers, and the source address is one of
/// that interface's. Over a family, an endpoint's name is resolved for that family
/// only (inside the namespace, `/etc/netns/NAME/hosts` included) and the probe
/// connects to those addresses; endpoints given as an address of the other family
/// are left out of the check.
///
/// Names are resolved by the system resolver inside the namespace, over whatever
/// route its nameservers take: DNS is not per interface (a per-link resolver, as
/// systemd-resolved keeps, is not asked), so a portal's resolver on the preferred
/// link answers for every scope. A one-off check over an interface and a family
/// is notConnected unless that interface has a default route of that family; the
/// notifier's path test asks only whether any interface carries the family.
///
/// A scoped probe goes through the same transport as any (HTTP/1.1 over SwiftNIO,
/// TLS from NIOSSL with the same trust roots), its socket bound to the interface;
/// it sends the same headers and is judged the same way.
///
/// `Sendable`: a plain value.
public struct ProbeScope: Sendable, Hashable, CustomStringConvertible {
    /// The interface the probes leave through (its name in the configuration's
    /// namespace), or nil for whichever the kernel routes through.
    public var interface: String?
    /// The address family the probes use, or nil for whichever the endpoints resolve to.
    public var family: IPAddress.Family?

    /// A scope; both nil is ``any``.
    public init(interface: String? = nil, family: IPAddress.Family? = nil) {
        self.interface = interface
        self.family = family
    }

    /// No restriction: the kernel's choice, as an ordinary check.
    public static let any = ProbeScope()

    /// Whether neither the interface nor the family is fixed.
    public var isAny: Bool { interface == nil && family == nil }

    /// `eth0/IPv4`, `eth0`, `IPv6`, or `any`.
    public var description: String {
        let familyName = family.map { $0 == .ipv4 ? "IPv4" : "IPv6" }
        switch (interface, familyName) {
        case (let interface?, let family?): return "\(interface)/\(family)"
        case (let interface?, nil): return interface
        case (nil, let family?): return family
        case (nil, nil): return "any"
        }
    }

    /// Whether `endpoint` can be probed in this scope: one given by name can; one
    /// given by address only when it is of the scope's family.
    func admits(_ endpoint: ConnectivityEndpoint) -> Bool {
        guard let family, let host = endpoint.url.host, let address = try? IPAddress(host) else { return true }
        return address.family == family
    }

    /// Throws unless one of `endpoints` can be probed in this scope (``admits(_:)``).
    func requireEndpoint(in endpoints: [ConnectivityEndpoint]) throws(ConnectivityError) {
        guard let family, !endpoints.contains(where: admits) else { return }
        throw ConnectivityError(
            "scope \(self): every endpoint is an address of the other family; none can be probed over \(family)")
    }

    /// `path` as this scope sees it: usable only while the scope's interface is
    /// among the available ones (then the only one) and the path carries the
    /// scope's family; otherwise unsatisfied (`notAvailable`).
    func restrict(_ path: NetworkPath) -> NetworkPath {
        guard !isAny, path.status != .unsatisfied else { return path }
        var restricted = path
        if let interface {
            guard let match = path.availableInterfaces.first(where: { $0.name == interface }) else {
                return NetworkPath(status: .unsatisfied, unsatisfiedReason: .notAvailable)
            }
            restricted.availableInterfaces = [match]
        }
        switch family {
        case .ipv4? where !path.supportsIPv4, .ipv6? where !path.supportsIPv6:
            return NetworkPath(status: .unsatisfied, unsatisfiedReason: .notAvailable)
        default:
            return restricted
        }
    }

    /// Checks the interface name as the kernel would take it: 1 to 15 bytes
    /// (`IFNAMSIZ` − 1), no `/`, `:`, whitespace or control characters, not `.` or `..`.
    func validate() throws(ConnectivityError) {
        guard let interface else { return }
        let bytes = Array(interface.utf8)
        guard (1...15).contains(bytes.count), interface != ".", interface != "..",
            bytes.allSatisfy({ $0 > 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: ":") })
        else {
            throw ConnectivityError("scope: \(quotedForMessage(interface)) is not an interface name")
        }
    }
}
