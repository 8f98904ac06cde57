import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// `ReachabilityFlags` bit values, letter string and names (DESIGN §2).
@Suite struct FlagsDescriptionTests {
    @Test(
        arguments: [
            (ReachabilityFlags.transientConnection, UInt32(1) << 0),
            (.reachable, 1 << 1),
            (.connectionRequired, 1 << 2),
            (.connectionOnTraffic, 1 << 3),
            (.interventionRequired, 1 << 4),
            (.connectionOnDemand, 1 << 5),
            (.isLocalAddress, 1 << 16),
            (.isDirect, 1 << 17),
            (.isWWAN, 1 << 18),
        ] as [(ReachabilityFlags, UInt32)])
    func rawValuesAreApples(_ flag: ReachabilityFlags, _ bit: UInt32) {
        #expect(flag.rawValue == bit)
    }

    @Test(
        arguments: [
            (ReachabilityFlags(), "-- -------"),
            ([.reachable], "-R -------"),
            ([.reachable, .isDirect], "-R ------d"),
            ([.reachable, .isLocalAddress, .isDirect], "-R -----ld"),
            ([.reachable, .isWWAN, .transientConnection], "WR -t-----"),
            ([.isWWAN], "W- -------"),
            ([.reachable, .connectionRequired, .transientConnection], "-R ct-----"),
            ([.reachable, .connectionRequired, .interventionRequired], "-R c-i----"),
            ([.connectionOnTraffic, .connectionOnDemand], "-- ---CD--"),
            (
                [
                    .transientConnection, .reachable, .connectionRequired, .connectionOnTraffic, .interventionRequired,
                    .connectionOnDemand, .isLocalAddress, .isDirect, .isWWAN,
                ], "WR ctiCDld"
            ),
        ] as [(ReachabilityFlags, String)])
    func description(_ flags: ReachabilityFlags, _ expected: String) {
        #expect(flags.description == expected)
        #expect("\(flags)" == expected)
    }

    @Test func bitsOutsideApplesSetDoNotChangeTheDescription() {
        let flags = ReachabilityFlags(rawValue: ReachabilityFlags.reachable.rawValue | 1 << 30)
        #expect(flags.description == "-R -------")
        #expect(flags.names == ["reachable"])
    }

    @Test func namesAreInBitOrder() {
        #expect(ReachabilityFlags().names.isEmpty)
        #expect(ReachabilityFlags([.isDirect, .reachable]).names == ["reachable", "isDirect"])
        #expect(
            ReachabilityFlags([.isWWAN, .transientConnection, .reachable]).names
                == ["transientConnection", "reachable", "isWWAN"])
        let all = ReachabilityFlags(rawValue: 0x7_003F)
        #expect(
            all.names == [
                "transientConnection", "reachable", "connectionRequired", "connectionOnTraffic",
                "interventionRequired", "connectionOnDemand", "isLocalAddress", "isDirect", "isWWAN",
            ])
    }
}
