/// Entry points into the library's internals for the benchmarks (`Benchmarks/`, a
/// package of its own, built in release mode, so `@testable import` is out) and the
/// stress runs (`Tests/ReachabilityStress`). Not API: SPI `Benchmarks`, which only
/// `@_spi(Benchmarks) import Reachability` sees. Nothing here runs unless called.
@_spi(Benchmarks) public enum BenchmarkHooks {
    /// Parses a buffer of netlink messages (as one datagram or dump reply holds
    /// them); returns how many messages it held.
    public static func parseMessages(_ bytes: [UInt8]) -> Int {
        NetlinkParser.parse(bytes).messages.count
    }

    /// A prepared flags evaluation: an interface table built from `links` and
    /// `addresses` (netlink dump bytes) and a unicast route out of the first
    /// non-loopback link; the closure evaluates the flags for 8.8.8.8 once.
    public static func flagsEvaluation(links: [UInt8], addresses: [UInt8]) -> @Sendable () -> UInt32 {
        var table = InterfaceTable()
        for message in NetlinkParser.parse(links).messages + NetlinkParser.parse(addresses).messages {
            _ = table.apply(message.message) { InterfaceClassifier.classify($0, sysfs: NoInterfaceFacts()) }
        }
        let index = table.interfaces.values.filter { !$0.isLoopback }.map(\.index).min() ?? 1
        let route = RouteMessage(
            family: AddressFamily.inet, type: RTN.unicast, table: 254, destinationLength: 32,
            outputInterface: index, hasGateway: true, preferredSource: nil, priority: nil)
        let frozen = table
        let destination = Target.internetProbeV4
        return { FlagsEvaluator.evaluate(.route(route), destination: destination, in: frozen).flags.rawValue }
    }

    /// One RTM_NEWROUTE message for 10.x.y.z/32 out of interface 2 (52 bytes), as
    /// a storm delivers them; `count` of them back to back.
    public static func routeMessages(count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * 52)
        func u16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        for i in 0..<count {
            u32(52)
            u16(NLMsgType.newRoute)
            u16(0)
            u32(UInt32(truncatingIfNeeded: i))
            u32(0)
            // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type; flags.
            bytes += [AddressFamily.inet, 32, 0, 0, 254, 3, 253, RTN.unicast]
            u32(0)
            u16(8)
            u16(RTA.dst)
            bytes += [
                10, UInt8(truncatingIfNeeded: i >> 16), UInt8(truncatingIfNeeded: i >> 8), UInt8(truncatingIfNeeded: i),
            ]
            u16(8)
            u16(RTA.oif)
            u32(2)
            u16(8)
            u16(RTA.table)
            u32(254)
        }
        return bytes
    }
}

extension BenchmarkHooks {
    /// The counters of the monitor running for `environment` (nil when none runs):
    /// overruns, resyncs, events received, evaluation passes. For the stress checks
    /// that run in a process of their own (Tests/ReachabilityStress).
    package static func monitorCounters(
        for environment: NetworkEnvironment
    ) -> (overruns: Int, resyncs: Int, events: Int, passes: Int)? {
        guard let statistics = MonitorRegistry.running(for: environment)?.statistics else { return nil }
        return (statistics.overruns, statistics.resyncs, statistics.eventsReceived, statistics.evaluationPasses)
    }

    /// Interfaces and interface-address lists in the published table of the monitor
    /// running for `environment` (what must shrink back when interfaces go away).
    package static func tableSizes(for environment: NetworkEnvironment) -> (interfaces: Int, addressLists: Int)? {
        guard let monitor = MonitorRegistry.running(for: environment) else { return nil }
        let (table, _) = monitor.snapshot
        return (table.interfaces.count, table.addresses.count)
    }
}
