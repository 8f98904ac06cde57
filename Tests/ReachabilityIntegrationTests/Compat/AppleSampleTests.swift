import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// Apple's Reachability sample (`Reachability.h`): its factories, notification name and
/// status constants. The factories take no namespace, as the sample's don't: they watch
/// this process's own (nothing is sent; the answers are compared with the core's).
@Suite("Apple's Reachability sample compatibility", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct AppleSampleTests {
    @Test("reachabilityForInternetConnection and forInternetConnection watch the Internet, as Reachability() does")
    func internet() throws {
        let sample: Reachability = Reachability.reachabilityForInternetConnection()
        let imported: Reachability = Reachability.forInternetConnection()
        #expect(sample.targetDescription == "internet")
        #expect(imported.targetDescription == "internet")
        #expect(sample.flags == (try Reachability()).flags)
    }

    @Test("reachabilityWithHostName and Reachability(hostName:): the name, or nil for an invalid one")
    func hostName() throws {
        #expect(Reachability.reachabilityWithHostName("localhost")?.targetDescription == "localhost")
        #expect(Reachability(hostName: "svc.example")?.targetDescription == "svc.example")
        #expect(Reachability.reachabilityWithHostName("bad host") == nil)
        #expect(Reachability(hostName: "") == nil)
    }

    @Test(
        "reachabilityWithAddress and Reachability(address:) read sockaddr_in and sockaddr_in6; other families give nil")
    func address() throws {
        var inet = sockaddr_in()
        inet.sin_family = sa_family_t(AF_INET)
        inet.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian  // 127.0.0.1
        let loopback = withUnsafePointer(to: &inet) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Reachability.reachabilityWithAddress($0) }
        }
        #expect(loopback?.targetDescription == "127.0.0.1")
        #expect(loopback?.flags.contains(.isLocalAddress) == true)

        inet.sin_addr.s_addr = 0  // The sample's zero address: the Internet.
        let zero = withUnsafePointer(to: &inet) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Reachability(address: $0) }
        }
        #expect(zero?.targetDescription == "internet")

        var inet6 = sockaddr_in6()
        inet6.sin6_family = sa_family_t(AF_INET6)
        withUnsafeMutableBytes(of: &inet6.sin6_addr) { bytes in
            for (index, byte) in [0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1].enumerated() {
                bytes[index] = UInt8(byte)
            }
        }
        inet6.sin6_scope_id = 1  // lo
        let linkLocal = withUnsafePointer(to: &inet6) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Reachability.reachabilityWithAddress($0) }
        }
        #expect(linkLocal?.targetDescription == (try IPAddress("fe80::1%1")).description)

        var unix = sockaddr_un()
        unix.sun_family = sa_family_t(AF_UNIX)
        let other = withUnsafePointer(to: &unix) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Reachability.reachabilityWithAddress($0) }
        }
        #expect(other == nil)
    }

    @Test("reachabilityForLocalWiFi is the link-local target")
    func localWiFi() {
        #expect(Reachability.reachabilityForLocalWiFi()?.targetDescription == "link-local")
    }

    @Test("The status constants are NetworkStatus's cases, and the sample's switch over them compiles")
    func constants() {
        func text(_ status: NetworkStatus) -> String {
            switch status {
            case NotReachable: "Access Not Available"
            case ReachableViaWWAN: "Reachable WWAN"
            case ReachableViaWiFi: "Reachable WiFi"
            default: "unknown"
            }
        }
        #expect(NetworkStatus.allCases.map(text) == ["Access Not Available", "Reachable WiFi", "Reachable WWAN"])
    }

    @Test("kReachabilityChangedNotification names the notification the notifier posts, with the instance as object")
    func notification() async throws {
        #expect(Notification.Name(rawValue: kReachabilityChangedNotification) == .reachabilityChanged)
        let reachability: Reachability = Reachability.reachabilityForInternetConnection()
        let center = NotificationCenter()
        reachability.notificationCenter = center
        let posted = LockedValue<[ObjectIdentifier]>([])
        let token = center.addObserver(
            forName: Notification.Name(rawValue: kReachabilityChangedNotification), object: nil, queue: nil
        ) { note in
            if let object = note.object as? Reachability { posted.withLock { $0.append(ObjectIdentifier(object)) } }
        }
        defer { center.removeObserver(token) }
        try reachability.startNotifier()
        defer { reachability.stopNotifier() }
        try await eventually("the notification of the start") { !posted.withLock { $0.isEmpty } }
        #expect(posted.withLock { $0 } == [ObjectIdentifier(reachability)])
    }
}
