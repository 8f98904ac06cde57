@_spi(Testing) import ReachabilityBase

/// Builds a `NetworkPath` from the interface table and the kernel's answers.
/// Pure: the reader thread and one-off evaluations call it with what they looked up.
@_spi(Testing) public struct PathEvaluator: Sendable, Hashable {
    var requiredInterfaceType: InterfaceType?
    var prohibitedInterfaceTypes: Set<InterfaceType>
    var options: PathMonitorOptions

    /// An evaluator for a monitor with these interface-type rules and options
    /// (``PathMonitor``'s initializer arguments).
    public init(
        requiredInterfaceType: InterfaceType?, prohibitedInterfaceTypes: Set<InterfaceType>, options: PathMonitorOptions
    ) {
        self.requiredInterfaceType = requiredInterfaceType
        self.prohibitedInterfaceTypes = prohibitedInterfaceTypes
        self.options = options
    }

    func allows(_ interface: InterfaceState) -> Bool {
        let type = interface.classification.type
        if let required = requiredInterfaceType { return type == required }
        return type != .loopback && !prohibitedInterfaceTypes.contains(type)
    }

    /// The lookups a path needs: the kernel's Internet choice for each family, and
    /// each up interface's own route out (fibmatch with oif, which names the table
    /// entry and its gateway and metric, or fails).
    public func lookups(for table: InterfaceTable) -> [LookupRequest] {
        var requests = [
            LookupRequest(destination: IPAddress.internetProbeV4),
            LookupRequest(destination: IPAddress.internetProbeV6),
        ]
        for interface in candidates(in: table) {
            for probe in [IPAddress.internetProbeV4, IPAddress.internetProbeV6] {
                requests.append(LookupRequest(destination: probe, outputInterface: interface.index, fibMatch: true))
            }
        }
        return requests
    }

    /// Up interfaces, loopback only when required, in index order.
    private func candidates(in table: InterfaceTable) -> [InterfaceState] {
        table.interfaces.filter { $0.isUp && (!$0.isLoopback || requiredInterfaceType == .loopback) }
    }

    /// What one interface offers.
    private struct Offer {
        var interface: InterfaceState
        var byFamily: [(family: IPAddress.Family, route: RouteMessage, state: ReachabilityState)]
        /// Up with carrier and a usable address: on the local link at least.
        var isAvailable: Bool

        var best: ReachabilityState {
            byFamily.map(\.state).reduce(.unreachable, FlagsEvaluator.better)
        }
        var metric: UInt32? { byFamily.compactMap { $0.route.priority ?? 0 }.min() }
        func satisfies(_ family: IPAddress.Family) -> Bool {
            byFamily.contains { $0.family == family && Self.isSatisfied($0.state) }
        }
        static func isSatisfied(_ state: ReachabilityState) -> Bool {
            state.flags.contains(.reachable) && !state.flags.contains(.connectionRequired)
        }
    }

    /// The path `table` and the kernel's answers give: `results[i]` answers
    /// `requests[i]` (the requests ``lookups(for:)`` made); `dnsConfigured` says
    /// whether nameservers are configured (the resolv.conf rule).
    public func evaluate(
        requests: [LookupRequest], results: [LookupResult], in table: InterfaceTable, dnsConfigured: Bool
    ) -> NetworkPath {
        var answers: [LookupRequest: LookupResult] = [:]
        for (request, result) in zip(requests, results) { answers[request] = result }

        let offers = candidates(in: table).map { interface in offer(interface, answers: answers, table: table) }
        let allowed = offers.filter { allows($0.interface) }

        // Where the kernel sends Internet traffic now: that interface leads.
        let internet = [IPAddress.internetProbeV4, IPAddress.internetProbeV6].map { probe in
            answers[LookupRequest(destination: probe)].map {
                FlagsEvaluator.evaluate($0, destination: probe, in: table)
            }
                ?? .unreachable
        }
        let primary: Int32? = FlagsEvaluator.better(internet[0], internet[1]).interface.map { Int32($0.index) }

        func rank(_ type: InterfaceType) -> Int {
            switch type {
            case .wiredEthernet: 0
            case .wifi: 1
            case .cellular: 2
            case .other: 3
            case .loopback: 4
            }
        }
        let available = allowed.filter(\.isAvailable).sorted { a, b in
            let aPrimary = primary.map { $0 == a.interface.index } ?? false
            let bPrimary = primary.map { $0 == b.interface.index } ?? false
            if aPrimary != bPrimary { return aPrimary }
            switch (a.metric, b.metric) {
            case (let x?, let y?) where x != y: return x < y
            case (.some, nil): return true
            case (nil, .some): return false
            default: break
            }
            let (ra, rb) = (rank(a.interface.classification.type), rank(b.interface.classification.type))
            return ra != rb ? ra < rb : a.interface.index < b.interface.index
        }

        let best = allowed.map(\.best).reduce(.unreachable, FlagsEvaluator.better)
        let status: NetworkPath.Status =
            Offer.isSatisfied(best) ? .satisfied : best.flags.contains(.reachable) ? .requiresConnection : .unsatisfied
        var reason: NetworkPath.UnsatisfiedReason?
        if status == .unsatisfied {
            reason = .notAvailable
            let denied = offers.filter { !allows($0.interface) && Offer.isSatisfied($0.best) }
            if denied.contains(where: { $0.interface.classification.type == .cellular }) {
                reason = .cellularDenied
            } else if denied.contains(where: { $0.interface.classification.type == .wifi }) {
                reason = .wifiDenied
            }
        }
        var gateways: [IPAddress] = []
        for offer in available {
            for entry in offer.byFamily {
                if let gateway = entry.route.gateway(via: offer.interface.index), !gateways.contains(gateway) {
                    gateways.append(gateway)
                }
            }
        }
        let lead: InterfaceState? = available.first?.interface
        let identity = status == .unsatisfied ? nil : available.first.map { identify($0, in: table) }
        let expensive = lead.map {
            options.expensiveInterfaces[$0.name]
                ?? ($0.classification.type == .cellular || $0.classification.isTethered || $0.isMeteredByLease == true)
        }
        return NetworkPath(
            status: status, unsatisfiedReason: reason,
            availableInterfaces: available.map { $0.interface.publicInterface }, gateways: gateways,
            supportsIPv4: allowed.contains { $0.satisfies(.ipv4) },
            supportsIPv6: allowed.contains { $0.satisfies(.ipv6) },
            supportsDNS: dnsConfigured && status != .unsatisfied,
            isExpensive: expensive ?? false,
            isConstrained: lead.map { options.constrainedInterfaces.contains($0.name) } ?? false,
            networkIdentity: identity,
            linkQuality: status == .unsatisfied ? .unknown : lead?.wireless?.linkQuality ?? .unknown)
    }

    /// The network behind `offer`'s interface: its gateways with their resolved
    /// link-layer addresses, and the networks of its usable global addresses.
    private func identify(_ offer: Offer, in table: InterfaceTable) -> NetworkIdentity {
        let index = offer.interface.index
        var gateways: [NetworkIdentity.Gateway] = []
        for entry in offer.byFamily {
            guard let address = entry.route.gateway(via: index)?.withoutZone,
                !gateways.contains(where: { $0.address == address })
            else { continue }
            let linkLayer = table.linkLayerAddress(of: address, on: index)
            gateways.append(.init(address: address, hardwareAddress: linkLayer.map(NetworkIdentity.format)))
        }
        var prefixes: [String] = []
        let usable = table.addresses(of: index).filter { $0.scope == 0 && !$0.isTentative && !$0.isDADFailed }
        for family in [IPAddress.Family.ipv4, .ipv6] {
            for entry in usable where entry.address.family == family {
                let prefix = "\(entry.address.network(prefixLength: Int(entry.prefixLength)))/\(entry.prefixLength)"
                if !prefixes.contains(prefix) { prefixes.append(prefix) }
            }
        }
        return NetworkIdentity(
            interface: offer.interface.name, gateways: gateways, prefixes: prefixes,
            ssid: offer.interface.wireless?.ssid)
    }

    private func offer(_ interface: InterfaceState, answers: [LookupRequest: LookupResult], table: InterfaceTable)
        -> Offer
    {
        var byFamily: [(IPAddress.Family, RouteMessage, ReachabilityState)] = []
        for probe in [IPAddress.internetProbeV4, IPAddress.internetProbeV6] {
            let request = LookupRequest(destination: probe, outputInterface: interface.index, fibMatch: true)
            guard case .route(let route)? = answers[request], route.type == RTN.unicast else { continue }
            let readiness = FlagsEvaluator.readiness(
                of: interface, requirement: .family(probe.family, globalTarget: true), preferredSource: nil,
                in: table)
            let gateway = route.gateway(via: interface.index) != nil || route.hasGateway
            let state = FlagsEvaluator.evaluate(interface: interface, hasGateway: gateway, readiness: readiness)
            byFamily.append((probe.family, route, state))
        }
        let local = FlagsEvaluator.evaluate(
            interface: interface, hasGateway: false,
            readiness: FlagsEvaluator.readiness(of: interface, requirement: .any, preferredSource: nil, in: table))
        return Offer(interface: interface, byFamily: byFamily, isAvailable: local.flags.contains(.reachable))
    }
}

/// Whether nameservers are configured, from the text of resolv.conf: its
/// `nameserver` lines; when they name only systemd-resolved's stub (127.0.0.53/54),
/// the upstream list resolved keeps. Pure: the caller reads the files
/// (``DNSConfiguration``), and the upstream text is asked for only when needed.
enum NameserverRule {
    static let resolvedStubs: Set<String> = ["127.0.0.53", "127.0.0.54"]

    static func isConfigured(resolvConf: String?, resolvedUpstream: () -> String?) -> Bool {
        let servers = nameservers(in: resolvConf ?? "")
        guard !servers.isEmpty else { return false }
        guard servers.allSatisfy(resolvedStubs.contains) else { return true }
        return !nameservers(in: resolvedUpstream() ?? "").filter { !resolvedStubs.contains($0) }.isEmpty
    }

    /// The addresses of the `nameserver` lines of a resolv.conf text.
    static func nameservers(in text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver" else { return nil }
            return String(words[1])
        }
    }
}
