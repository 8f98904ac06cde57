import Reachability
// Inputs for the in-process benchmarks, built here from the library's internals
// reached through its `Testing` SPI (this is a package of its own).
@_spi(Testing) import ReachabilityCore

enum Messages {
    /// How many netlink messages a buffer holds (as one datagram or dump reply
    /// holds them).
    static func count(in bytes: [UInt8]) -> Int {
        NetlinkParser.parse(bytes).messages.count
    }

    /// RTM_NEWROUTE messages for 10.x.y.z/32 out of interface `outputInterface`
    /// (via IPv4 `gateway` when given), 52 bytes each (60 with a gateway), `count` of
    /// them back to back, as a storm delivers them. The numbers are the kernel's ABI
    /// (linux/rtnetlink.h).
    static func routes(count: Int, outputInterface: UInt32 = 2, gateway: [UInt8]? = nil) -> [UInt8] {
        let newRoute: UInt16 = 24  // RTM_NEWROUTE
        // RTA_DST, RTA_OIF, RTA_TABLE, RTA_GATEWAY
        let (dst, oif, table, via): (UInt16, UInt16, UInt16, UInt16) = (1, 4, 15, 5)
        let length: UInt32 = gateway == nil ? 52 : 60
        let (inet, main, boot, universe, unicast): (UInt8, UInt8, UInt8, UInt8, UInt8) = (2, 254, 3, 0, 1)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * Int(length))
        func u16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        for i in 0..<count {
            u32(length)
            u16(newRoute)
            u16(0)
            u32(UInt32(truncatingIfNeeded: i))
            u32(0)
            // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type; flags.
            bytes += [inet, 32, 0, 0, main, boot, universe, unicast]
            u32(0)
            u16(8)
            u16(dst)
            bytes += [
                10, UInt8(truncatingIfNeeded: i >> 16), UInt8(truncatingIfNeeded: i >> 8), UInt8(truncatingIfNeeded: i),
            ]
            u16(8)
            u16(oif)
            u32(outputInterface)
            u16(8)
            u16(table)
            u32(UInt32(main))
            if let gateway {
                u16(8)
                u16(via)
                bytes += gateway.prefix(4)
            }
        }
        return bytes
    }

    /// A prepared flags evaluation: an interface table built from `links` and
    /// `addresses` (netlink dump bytes) and a route answer via a gateway out of the
    /// first non-loopback link; the closure evaluates the flags of the Internet's IPv4
    /// probe address once.
    static func flagsEvaluation(links: [UInt8], addresses: [UInt8]) -> @Sendable () -> UInt32 {
        var table = InterfaceTable()
        for message in NetlinkParser.parse(links).messages + NetlinkParser.parse(addresses).messages {
            table.apply(message.message) { InterfaceClassifier.classify($0, sysfs: NoInterfaceFacts()) }
        }
        let index = table.interfaces.filter { !$0.isLoopback }.map(\.index).min() ?? 1
        let answer = routes(count: 1, outputInterface: UInt32(index), gateway: [10, 0, 0, 1])
        guard case .route(let route, _) = NetlinkParser.parse(answer).messages.first?.message else {
            fatalError("the route message builder made no route")
        }
        let frozen = table
        // The Internet's IPv4 probe is the first lookup a path asks for.
        let evaluator = PathEvaluator(requiredInterfaceType: nil, prohibitedInterfaceTypes: [], options: .init())
        let destination = evaluator.lookups(for: InterfaceTable())[0].destination
        return { FlagsEvaluator.evaluate(.route(route), destination: destination, in: frozen).flags.rawValue }
    }
}
