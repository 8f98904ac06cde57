@_spi(Testing) import ReachabilityBase

/// The interface list as an ``Evaluation``: one `fibmatch` lookup per interface and
/// family finds the default routes; everything else comes from the table. What
/// ``NetworkInterfaces/list(environment:)`` evaluates once and an
/// ``InterfaceMonitor`` after every kernel event.
struct InterfacesEvaluation: Evaluation {
    func lookups(for table: InterfaceTable) -> [LookupRequest] {
        table.interfaces.flatMap { interface in
            [IPAddress.internetProbeV4, IPAddress.internetProbeV6].map {
                LookupRequest(destination: $0, outputInterface: interface.index, fibMatch: true)
            }
        }
    }

    func state(from results: [LookupResult], for requests: [LookupRequest], in table: InterfaceTable)
        -> [InterfaceDetails]
    {
        return table.interfaces.enumerated().map { offset, interface in
            var families: [IPAddress.Family] = []
            let answers =
                results.indices.contains(offset * 2 + 1) ? Array(results[(offset * 2)..<(offset * 2 + 2)]) : []
            for (family, result) in zip([IPAddress.Family.ipv4, .ipv6], answers) {
                if case .route(let route) = result, route.type == RTN.unicast, route.destinationLength == 0 {
                    families.append(family)
                }
            }
            let addresses = table.addresses(of: interface.index)
                .sorted {
                    ($0.address.family == .ipv4 ? 0 : 1, $0.address.description) < (
                        $1.address.family == .ipv4 ? 0 : 1, $1.address.description
                    )
                }
                .map {
                    InterfaceDetails.Address(
                        address: $0.address, prefixLength: Int($0.prefixLength), isTentative: $0.isTentative,
                        isDADFailed: $0.isDADFailed)
                }
            return InterfaceDetails(
                interface: interface.publicInterface, operState: Self.operStateName(interface.operState),
                isUp: interface.isUp, hasCarrier: interface.hasCarrier, addresses: addresses,
                defaultRouteFamilies: families)
        }
    }

    static func operStateName(_ state: UInt8) -> String {
        switch state {
        case IFOper.up: "up"
        case IFOper.down: "down"
        case IFOper.dormant: "dormant"
        case IFOper.lowerLayerDown: "lowerlayerdown"
        case IFOper.testing: "testing"
        case IFOper.notPresent: "notpresent"
        default: "unknown"
        }
    }
}
