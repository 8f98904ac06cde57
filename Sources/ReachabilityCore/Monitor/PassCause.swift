@_spi(Testing) import ReachabilityBase

/// What made the monitor run an evaluation pass: the kernel and file events it
/// drained. The pass planner (``ReaderMachine``) decides from it which lookups to
/// ask again; hostname targets use it to decide whether the network changed in a
/// way that may change what their name resolves to.
struct PassCause: Sendable, Equatable {
    /// Links or addresses changed (the interface table), a link's carrier included.
    var interfacesChanged = false
    /// An address message said what the table already held: the kernel may have
    /// changed the address meanwhile without one (``ReaderDrain``). Not a network
    /// change to hostnames.
    var addressesRestated = false
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
    /// A device's or `all`'s IP settings changed (RTM_NEWNETCONF, RTM_DELNETCONF):
    /// `ignore_routes_with_linkdown` and others decide which routes the kernel uses,
    /// and changing them sends no route event.
    var netconfChanged = false
    /// A nexthop object was added, replaced or deleted (RTM_NEWNEXTHOP,
    /// RTM_DELNEXTHOP): the routes using it change without route events.
    var nexthopsChanged = false
    /// A gateway's link-layer address changed (the network identity); the routes
    /// and addresses did not.
    var gatewayNeighborChanged = false
    /// A Wi-Fi link's SSID or signal changed (read off the reader thread, §6.3):
    /// nothing the kernel routes by.
    var wirelessChanged = false
    /// An answer reached the end of its route's lifetime (``RouteMessage/remainingLifetime``).
    var answersExpired = false

    /// Route prefixes kept per pass; past this, a pass counts as a route storm.
    static let routeLimit = 64

    /// Adds what `other` says changed (a pass that failed hands its cause to its retry).
    mutating func add(_ other: PassCause) {
        interfacesChanged = interfacesChanged || other.interfacesChanged
        addressesRestated = addressesRestated || other.addressesRestated
        rulesChanged = rulesChanged || other.rulesChanged
        resynced = resynced || other.resynced
        resolverConfigurationChanged = resolverConfigurationChanged || other.resolverConfigurationChanged
        if other.manyRoutes { manyRoutes = true }
        for prefix in other.routes { noteRoute(prefix) }
        if manyRoutes { routes = [] }
        netconfChanged = netconfChanged || other.netconfChanged
        nexthopsChanged = nexthopsChanged || other.nexthopsChanged
        gatewayNeighborChanged = gatewayNeighborChanged || other.gatewayNeighborChanged
        wirelessChanged = wirelessChanged || other.wirelessChanged
        answersExpired = answersExpired || other.answersExpired
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

    /// The prefixes of the route events drained, when nothing else that moves a
    /// route's answer changed since the last pass; nil otherwise. A lookup's answer is
    /// a route whose prefix covers its destination, so a lookup none of these covers
    /// has the answer known before them (``ReaderMachine``'s "ask what moved").
    /// Each of these moves answers without a route event of its own, and its test
    /// fails without its guard here: a link, address or carrier change
    /// (`SilentRouteChangeTests.ipv6NextHopRevivedAtCarrierUp`,
    /// `.ipv4NextHopsKilledAfterAddress`); more route events than ``routeLimit``
    /// (their prefixes aren't kept: `ReachabilityIntegrationTests.routeStormAsksEverything`);
    /// a rule (`.policyRule`); a resync (`.overrunWithoutRoutesAsksEverything`); a device setting
    /// (`.ignoreLinkdownSettingIsAnEvent`); an address message that restates the
    /// table (`SilentRouteChangeTests.ipv6AddressKeptAtAdminDown`); a nexthop object
    /// (`SilentRouteChangeTests.nexthopDeletion`); a route lifetime's end
    /// (`SilentRouteChangeTests.ipv6RouteExpires`).
    /// What moves none — a resolver file, a gateway's link-layer address, a Wi-Fi
    /// SSID or signal — keeps every answer.
    var routesOnly: [RoutePrefix]? {
        guard !interfacesChanged, !addressesRestated, !manyRoutes, !rulesChanged, !resynced, !netconfChanged,
            !nexthopsChanged, !answersExpired
        else { return nil }
        return routes
    }

    /// Whether the pass's lookups wait for the change whose message was read to be
    /// complete (``NetlinkSocket/lookup(_:behindChanges:)``): after a link's, an
    /// address's or a nexthop's message the kernel goes on changing routes with no
    /// message of their own, and after lost events what came is unknown. A route's
    /// message comes once the route is in place, and an expiry or a Wi-Fi reading
    /// follows no change at all.
    var waitsForChanges: Bool {
        interfacesChanged || addressesRestated || nexthopsChanged || resynced
    }

    /// Whether a Wi-Fi link's SSID or signal is all that changed.
    var isWirelessOnly: Bool {
        var others = self
        others.wirelessChanged = false
        return wirelessChanged && others == PassCause()
    }

    /// Whether this pass may change what a hostname now resolving to `addresses`
    /// resolves to, or how it is reached: any link, address, rule, nexthop, resync
    /// or resolver-configuration change; a default route; or a route covering one
    /// of its addresses.
    func isRelevant(toHostAt addresses: [IPAddress]) -> Bool {
        if interfacesChanged || rulesChanged || nexthopsChanged || resynced || resolverConfigurationChanged
            || manyRoutes
        {
            return true
        }
        return routes.contains { route in route.isDefault || addresses.contains(where: route.covers) }
    }
}
