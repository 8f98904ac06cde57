import Reachability

@_spi(Testing) @testable import ReachabilityBase
@_spi(Testing) @testable import ReachabilityCore

/// Link flags of a typical interface in each state.
enum LinkFlags {
    /// Admin-up with carrier: IFF_UP | IFF_RUNNING | IFF_LOWER_UP.
    static let usable = IFF.up | IFF.running | IFF.lowerUp
    /// Admin-up, no carrier.
    static let noCarrier = IFF.up
    /// Admin-down.
    static let down: UInt32 = 0
}

/// Builds an `InterfaceTable` the way the monitor does, by applying synthetic
/// RTM_NEWLINK / RTM_NEWADDR messages, with the classification given directly.
///
///     let table = try TableBuilder()
///         .link(2, "eth0")
///         .address(2, "192.0.2.10/24")
///         .table
struct TableBuilder {
    private(set) var table = InterfaceTable()

    func link(
        _ index: Int32, _ name: String, flags: UInt32 = LinkFlags.usable, operState: UInt8 = IFOper.up,
        hardwareType: UInt16 = ARPHRD.ether, kind: String? = nil,
        as classification: InterfaceClassification = InterfaceClassification(.wiredEthernet)
    ) -> TableBuilder {
        var copy = self
        let link = LinkMessage(
            index: index, name: name, flags: flags, hardwareType: hardwareType, operState: operState, kind: kind)
        copy.table.apply(.newLink(link), classify: { _ in classification })
        return copy
    }

    /// Adds `"ADDRESS/PREFIX"`; the scope defaults to what the kernel gives:
    /// host for loopback, link for link-local, universe otherwise.
    func address(_ index: Int32, _ cidr: String, flags: UInt32 = 0, scope: UInt8? = nil) throws -> TableBuilder {
        var copy = self
        let message = try addressMessage(index, cidr, flags: flags, scope: scope)
        copy.table.apply(.newAddress(message), classify: { _ in InterfaceClassification(.other) })
        return copy
    }
}

/// An RTM_NEWADDR / RTM_DELADDR body for `"ADDRESS/PREFIX"`.
func addressMessage(_ index: Int32, _ cidr: String, flags: UInt32 = 0, scope: UInt8? = nil) throws
    -> AddressMessage
{
    let parts = cidr.split(separator: "/", maxSplits: 1)
    let address = try IPAddress(String(parts[0]))
    let prefix = parts.count == 2 ? UInt8(parts[1]) ?? 0 : (address.family == .ipv4 ? 32 : 128)
    let defaultScope =
        address.isLoopback ? RTScope.host : address.isLinkLocal ? RTScope.link : RTScope.universe
    return AddressMessage(
        index: index, address: address, prefixLength: prefix, flags: flags, scope: scope ?? defaultScope)
}

/// Synthetic answers to an RTM_GETROUTE lookup.
enum Lookup {
    static let enetunreach: Int32 = 101

    /// The kernel found no route (ENETUNREACH).
    static let noRoute = LookupResult.noRoute(errno: enetunreach)

    /// A route of `type` out of interface `oif`.
    static func route(
        _ type: UInt8 = RTN.unicast, oif: Int32?, gateway: Bool = false, family: IPAddress.Family = .ipv4,
        source: IPAddress? = nil
    ) -> LookupResult {
        .route(
            RouteMessage(
                family: family == .ipv4 ? AddressFamily.inet : AddressFamily.inet6, type: type, table: 254,
                destinationLength: family == .ipv4 ? 32 : 128, outputInterface: oif, hasGateway: gateway,
                preferredSource: source, priority: nil))
    }
}
