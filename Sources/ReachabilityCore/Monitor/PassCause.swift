/// What made the monitor run an evaluation pass: the kernel and file events it
/// drained. Hostname targets use it to decide whether the network changed in a
/// way that may change what their name resolves to.
struct PassCause: Sendable, Equatable {
    /// Links or addresses changed (the interface table).
    var interfacesChanged = false
    /// A policy rule was added or removed.
    var rulesChanged = false
    /// Events were lost (or a message was malformed) and everything was re-read.
    var resynced = false
    /// resolv.conf, hosts or nsswitch.conf changed.
    var resolverConfigurationChanged = false
    /// The prefixes of the route events drained, up to ``routeLimit``.
    var routes: [RoutePrefix] = []
    /// More than ``routeLimit`` route events came: treated as relevant to everything.
    var manyRoutes = false
    /// A route event covered a looked-up destination.
    var relevantRoute = false
    /// A device's or `all`'s IP settings changed (RTM_NEWNETCONF, RTM_DELNETCONF),
    /// `ignore_routes_with_linkdown` among them.
    var netconfChanged = false
    /// Links whose carrier alone changed (``InterfaceState/differsOnlyInCarrier(from:)``).
    var carrierChangedLinks: Set<Int32> = []
    /// The table changed in another way: a link appeared, went, or changed more
    /// than its carrier, or an address changed.
    var otherInterfaceChange = false
    /// A gateway's link-layer address changed (the network identity); the routes
    /// and addresses did not.
    var gatewayNeighborChanged = false

    /// Route prefixes kept per pass; past this, a pass counts as a route storm.
    static let routeLimit = 64

    /// Adds what `other` says changed (a pass that delivered nothing hands its cause
    /// to the next).
    mutating func add(_ other: PassCause) {
        interfacesChanged = interfacesChanged || other.interfacesChanged
        rulesChanged = rulesChanged || other.rulesChanged
        resynced = resynced || other.resynced
        resolverConfigurationChanged = resolverConfigurationChanged || other.resolverConfigurationChanged
        if other.manyRoutes { manyRoutes = true }
        for prefix in other.routes { noteRoute(prefix) }
        if manyRoutes { routes = [] }
        relevantRoute = relevantRoute || other.relevantRoute
        netconfChanged = netconfChanged || other.netconfChanged
        carrierChangedLinks.formUnion(other.carrierChangedLinks)
        otherInterfaceChange = otherInterfaceChange || other.otherInterfaceChange
        gatewayNeighborChanged = gatewayNeighborChanged || other.gatewayNeighborChanged
    }

    mutating func noteRoute(_ prefix: RoutePrefix) {
        guard !manyRoutes else { return }
        if routes.count < Self.routeLimit {
            guard !routes.contains(prefix) else { return }
            // A link going down brings a handful of route events: room for them at once.
            if routes.isEmpty { routes.reserveCapacity(8) }
            routes.append(prefix)
        } else {
            manyRoutes = true
            routes = []
        }
    }

    /// The links whose carrier changed, when that is all that changed since the
    /// last pass; nil otherwise. Such a pass may reuse the last pass's lookup
    /// answers, once the kernel confirms that those links' routes don't depend on
    /// their carrier (``NetlinkSocket/ignoresLinkdownRoutes(links:families:)``).
    var carrierOnlyLinks: Set<Int32>? {
        guard !carrierChangedLinks.isEmpty, !relevantRoute, nothingBeyondCarrierAndRoutes else { return nil }
        return carrierChangedLinks
    }

    /// No change but links' carrier and a few routes: no other link or address
    /// change, route storm, rule, resync, setting, resolver or gateway-neighbour
    /// change. What both ``carrierOnlyLinks`` and ``routesOnly`` rule out.
    private var nothingBeyondCarrierAndRoutes: Bool {
        !otherInterfaceChange && !manyRoutes && !rulesChanged && !resynced && !netconfChanged
            && !resolverConfigurationChanged && !gatewayNeighborChanged
    }

    /// The prefixes of the route events drained, when route events are all that
    /// changed since the last pass (no link, address, rule, setting, neighbour or
    /// resolver change, no resync, no more than ``routeLimit`` of them); nil
    /// otherwise. A lookup's answer is a route whose prefix covers its destination,
    /// so a lookup none of these covers has the answer known before them
    /// (``LookupBatch/unmoved(cause:known:)``).
    var routesOnly: [RoutePrefix]? {
        guard !routes.isEmpty, !interfacesChanged, carrierChangedLinks.isEmpty, nothingBeyondCarrierAndRoutes
        else { return nil }
        return routes
    }

    /// Whether this pass may change what a hostname now resolving to `addresses`
    /// resolves to, or how it is reached: any link, address, rule, resync or
    /// resolver-configuration change; a default route; or a route covering one of
    /// its addresses.
    func isRelevant(toHostAt addresses: [IPAddress]) -> Bool {
        if interfacesChanged || rulesChanged || resynced || resolverConfigurationChanged || manyRoutes { return true }
        return routes.contains { route in route.isDefault || addresses.contains(where: route.covers) }
    }
}
