import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// `NetworkStatus(flags:)` against Apple's `networkStatusForFlags:`, restated here
/// independently of the implementation.
@Suite struct NetworkStatusTests {
    /// The six flags Apple's mapping reads.
    static let inputs: [ReachabilityFlags] = [
        .reachable, .connectionRequired, .interventionRequired, .connectionOnTraffic, .connectionOnDemand, .isWWAN,
    ]

    /// All 64 combinations of `inputs`.
    static let combinations: [ReachabilityFlags] = (0..<64).map { mask in
        inputs.enumerated().reduce(into: ReachabilityFlags()) { flags, entry in
            if mask & (1 << entry.offset) != 0 { flags.insert(entry.element) }
        }
    }

    /// Apple's sample code, `networkStatusForFlags:`, as a truth function.
    static func apple(_ flags: ReachabilityFlags) -> NetworkStatus {
        let reachable = flags.contains(.reachable)
        let required = flags.contains(.connectionRequired)
        let intervention = flags.contains(.interventionRequired)
        let onTraffic = flags.contains(.connectionOnTraffic)
        let onDemand = flags.contains(.connectionOnDemand)
        let wwan = flags.contains(.isWWAN)
        if !reachable { return .notReachable }
        if wwan { return .reachableViaWWAN }
        if !required { return .reachableViaWiFi }
        if (onTraffic || onDemand) && !intervention { return .reachableViaWiFi }
        return .notReachable
    }

    @Test func truthTableCoversEveryCombination() {
        #expect(Set(Self.combinations).count == 64)
    }

    @Test(arguments: combinations)
    func matchesApple(_ flags: ReachabilityFlags) {
        #expect(NetworkStatus(flags: flags) == Self.apple(flags), "flags \(flags)")
    }

    @Test(arguments: combinations)
    func flagsApartFromTheSixDoNotMatter(_ flags: ReachabilityFlags) {
        let extra = flags.union([.transientConnection, .isLocalAddress, .isDirect])
        #expect(NetworkStatus(flags: extra) == NetworkStatus(flags: flags), "flags \(flags)")
    }

    @Test(
        arguments: [
            (ReachabilityFlags(), NetworkStatus.notReachable),
            ([.isWWAN], .notReachable),
            ([.connectionRequired, .isWWAN], .notReachable),
            ([.reachable], .reachableViaWiFi),
            ([.reachable, .isDirect], .reachableViaWiFi),
            ([.reachable, .isWWAN], .reachableViaWWAN),
            ([.reachable, .connectionRequired], .notReachable),
            ([.reachable, .connectionRequired, .isWWAN], .reachableViaWWAN),
            ([.reachable, .connectionRequired, .connectionOnTraffic], .reachableViaWiFi),
            ([.reachable, .connectionRequired, .connectionOnDemand], .reachableViaWiFi),
            ([.reachable, .connectionRequired, .connectionOnTraffic, .interventionRequired], .notReachable),
            ([.reachable, .connectionRequired, .connectionOnDemand, .interventionRequired], .notReachable),
            ([.reachable, .connectionRequired, .interventionRequired], .notReachable),
            ([.reachable, .connectionRequired, .transientConnection], .notReachable),
        ] as [(ReachabilityFlags, NetworkStatus)])
    func spelledOutRows(_ flags: ReachabilityFlags, _ expected: NetworkStatus) {
        #expect(NetworkStatus(flags: flags) == expected, "flags \(flags)")
    }

    @Test func descriptionIsAppleCaseName() {
        #expect(NetworkStatus.allCases.map(\.description) == ["notReachable", "reachableViaWiFi", "reachableViaWWAN"])
    }
}
