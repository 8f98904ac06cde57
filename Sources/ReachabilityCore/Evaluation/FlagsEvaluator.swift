@_spi(Testing) import ReachabilityBase

/// Turns the kernel's routing answer and the interface table into flags: the
/// table of DESIGN §2. Pure: no I/O, no clock, no state.
@_spi(Testing) public enum FlagsEvaluator {
    /// Which addresses on the output interface make it usable for a target.
    enum AddressRequirement: Equatable {
        /// An address of this family. For a global IPv6 target a link-local or
        /// host-scoped address does not count: it cannot source such traffic.
        case family(IPAddress.Family, globalTarget: Bool)
        /// Any address at all (the local-link target).
        case any

        func accepts(_ entry: InterfaceAddress) -> Bool {
            switch self {
            case .any:
                return entry.scope != RTScope.host
            case .family(let family, let globalTarget):
                guard entry.address.family == family, entry.scope != RTScope.host else { return false }
                if family == .ipv6 && globalTarget {
                    return entry.scope == RTScope.universe || entry.scope == RTScope.site
                }
                return true
            }
        }
    }

    /// How ready an interface's addresses are for the target.
    enum AddressReadiness: Equatable {
        case ready
        /// Only tentative (DAD) addresses: it resolves by itself.
        case tentative
        case none
    }

    /// Flags for one destination from one lookup.
    public static func evaluate(_ result: LookupResult, destination: IPAddress, in table: InterfaceTable)
        -> ReachabilityState
    {
        guard case .route(let route) = result else { return .unreachable }
        let interface = route.outputInterface.flatMap { table[$0] }
        switch route.type {
        case RTN.local:
            // One of this host's own addresses (loopback included).
            return ReachabilityState(
                flags: [.reachable, .isLocalAddress, .isDirect], interface: interface?.publicInterface)
        case RTN.unicast, RTN.broadcast, RTN.multicast, RTN.anycast:
            guard let interface else { return .unreachable }
            let requirement = AddressRequirement.family(
                destination.family, globalTarget: !destination.isLinkLocal && !destination.isMulticastLinkLocal)
            let readiness = readiness(
                of: interface, requirement: requirement, preferredSource: route.preferredSource, in: table)
            return evaluate(interface: interface, hasGateway: route.hasGateway, readiness: readiness)
        default:
            // unreachable, blackhole, prohibit, throw, nat, and anything unknown.
            return .unreachable
        }
    }

    /// Flags for a route over `interface`, given whether it has a gateway and
    /// how ready the interface's addresses are.
    static func evaluate(interface: InterfaceState, hasGateway: Bool, readiness: AddressReadiness)
        -> ReachabilityState
    {
        let cellular = interface.classification.type == .cellular
        let wwan: ReachabilityFlags = cellular ? [.isWWAN] : []
        let shown = interface.publicInterface
        // Admin-down or no carrier: nothing (isWWAN alone on a cellular link, as Apple does).
        guard interface.isUsable else { return ReachabilityState(flags: wwan, interface: shown) }
        if interface.operState == IFOper.dormant || interface.flags & IFF.dormant != 0 {
            // 802.1X / WPA authentication pending.
            return ReachabilityState(
                flags: ReachabilityFlags([.reachable, .connectionRequired, .interventionRequired]).union(wwan),
                interface: shown)
        }
        let settling = interface.operState != IFOper.up && interface.operState != IFOper.unknown
        switch readiness {
        case .none:
            return ReachabilityState(flags: wwan, interface: shown)
        case .tentative:
            return ReachabilityState(
                flags: ReachabilityFlags([.reachable, .connectionRequired, .transientConnection]).union(wwan),
                interface: shown)
        case .ready where settling:
            return ReachabilityState(
                flags: ReachabilityFlags([.reachable, .connectionRequired, .transientConnection]).union(wwan),
                interface: shown)
        case .ready:
            var flags: ReachabilityFlags = [.reachable]
            if !hasGateway { flags.insert(.isDirect) }
            if cellular { flags.formUnion([.isWWAN, .transientConnection]) }
            if interface.classification.isVirtualPrivate { flags.insert(.transientConnection) }
            return ReachabilityState(flags: flags, interface: shown)
        }
    }

    /// Whether the interface has a usable address for the target. When it has no
    /// address of the family at all (a route through an unnumbered link), the
    /// kernel's chosen source address decides.
    static func readiness(
        of interface: InterfaceState, requirement: AddressRequirement, preferredSource: IPAddress?,
        in table: InterfaceTable
    ) -> AddressReadiness {
        var candidates = table.addresses(of: interface.index).filter { requirement.accepts($0) && !$0.isDADFailed }
        if candidates.isEmpty, let source = preferredSource, let owner = table.owner(of: source),
            requirement.accepts(owner.address), !owner.address.isDADFailed
        {
            candidates = [owner.address]
        }
        if candidates.contains(where: { !$0.isTentative }) { return .ready }
        return candidates.isEmpty ? .none : .tentative
    }

    /// The local link: usable when some non-loopback interface could talk to a
    /// neighbour now, i.e. it is up with carrier and has a usable address.
    public static func evaluateLocalLink(in table: InterfaceTable) -> ReachabilityState {
        var best = ReachabilityState.unreachable
        for interface in table.interfaces where !interface.isLoopback {
            let readiness = readiness(of: interface, requirement: .any, preferredSource: nil, in: table)
            best = better(best, evaluate(interface: interface, hasGateway: false, readiness: readiness))
        }
        return best
    }

    /// reachable > reachable + connectionRequired > not reachable; ties keep `first`.
    static func better(_ first: ReachabilityState, _ second: ReachabilityState) -> ReachabilityState {
        func rank(_ state: ReachabilityState) -> Int {
            guard state.flags.contains(.reachable) else { return state.interface == nil ? 0 : 1 }
            return state.flags.contains(.connectionRequired) ? 2 : 3
        }
        return rank(second) > rank(first) ? second : first
    }
}

extension Target {
    /// Combines the lookup results (one per entry of `lookups`) with the
    /// interface table. Pure.
    func evaluate(_ results: [LookupResult], in table: InterfaceTable) -> ReachabilityState {
        switch self {
        case .internet:
            guard results.count == 2 else { return .unreachable }
            let v4 = FlagsEvaluator.evaluate(results[0], destination: IPAddress.internetProbeV4, in: table)
            let v6 = FlagsEvaluator.evaluate(results[1], destination: IPAddress.internetProbeV6, in: table)
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
}
