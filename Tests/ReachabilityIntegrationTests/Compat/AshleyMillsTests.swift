import Foundation
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// ashleymills/Reachability.swift's documented behaviour (its README, its source and
/// its own test suite), against the real kernel in test namespaces.
@Suite("ashleymills/Reachability.swift compatibility", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct AshleyMillsTests {
    /// What the closures and the notification saw, in order.
    final class Calls: Sendable {
        private let state = LockedValue<[String]>([])
        func add(_ call: String) { state.withLock { $0.append(call) } }
        var all: [String] { state.withLock { $0 } }
        func wait(for what: String, _ predicate: @escaping @Sendable ([String]) -> Bool) async throws {
            try await eventually(what) { [state] in predicate(state.withLock { $0 }) }
        }
    }

    /// Watches the Internet in `environment`, ashleymills' way: the closures and a
    /// notification center of its own recorded in `calls`.
    private func watch(
        _ environment: NetworkEnvironment, calls: Calls, center: NotificationCenter = NotificationCenter()
    ) throws -> (Reachability, any NSObjectProtocol) {
        let reachability = try Reachability(environment: environment)
        reachability.notificationCenter = center
        reachability.whenReachable = { calls.add("reachable \($0.connection)") }
        reachability.whenUnreachable = { calls.add("unreachable \($0.connection)") }
        let token = center.addObserver(forName: .reachabilityChanged, object: reachability, queue: nil) { note in
            calls.add("notification \((note.object as? Reachability)?.connection.description ?? "without object")")
        }
        return (reachability, token)
    }

    @Test("Connection's descriptions are ashleymills' strings")
    func descriptions() {
        #expect(Reachability.Connection.unavailable.description == "No Connection")
        #expect(Reachability.Connection.wifi.description == "WiFi")
        #expect(Reachability.Connection.cellular.description == "Cellular")
        #expect("\(Reachability.Connection.wifi)" == "WiFi")
    }

    @Test(
        "whenReachable at start, whenUnreachable when the route goes, each followed by the notification on the instance's notificationCenter"
    )
    func closuresThenNotification() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let calls = Calls()
        let center = NotificationCenter()
        let (reachability, token) = try watch(ns.environment, calls: calls, center: center)
        defer { center.removeObserver(token) }
        // Nothing reaches the default center (another instance's observer would see it there).
        let stray = Calls()
        let defaultToken = NotificationCenter.default.addObserver(
            forName: .reachabilityChanged, object: reachability, queue: nil
        ) { _ in stray.add("default center") }
        defer { NotificationCenter.default.removeObserver(defaultToken) }

        #expect(reachability.connection == .wifi)  // veth is Ethernet: "WiFi" means "not cellular".
        try reachability.startNotifier()
        try await calls.wait(for: "the first delivery") { $0.count == 2 }
        #expect(calls.all == ["reachable WiFi", "notification WiFi"])

        try ns.ip("route del default")
        try await calls.wait(for: "unreachable") { $0.count == 4 }
        #expect(calls.all.suffix(2) == ["unreachable No Connection", "notification No Connection"])
        #expect(reachability.connection == .unavailable)

        reachability.stopNotifier()
        // A second instance, still running, marks when the monitor has taken the change.
        let marker = try Reachability(environment: ns.environment)
        let markerCalls = Calls()
        marker.whenReachable = { _ in markerCalls.add("reachable") }
        marker.whenUnreachable = { _ in markerCalls.add("unreachable") }
        try marker.startNotifier()
        try await markerCalls.wait(for: "the marker's first delivery") { $0 == ["unreachable"] }
        try ns.ip("route add default via 192.0.2.2 dev veth0")
        try await markerCalls.wait(for: "the marker reachable") { $0.last == "reachable" }
        #expect(calls.all.count == 4, "stopped: no delivery")
        marker.stopNotifier()
        #expect(stray.all.isEmpty)
    }

    @Test("allowsCellularConnection: a cellular route is .cellular, or .unavailable with whenUnreachable when false")
    func cellular() async throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute("wwan0", peer: "tower0")
        let sysfs = try fakeSysfs(["wwan0": "wwan"])
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let environment = NetworkEnvironment(networkNamespacePath: ns.path, sysfsRoot: sysfs)

        let allowed = Calls()
        let (cellular, allowedToken) = try watch(environment, calls: allowed)
        defer { cellular.notificationCenter.removeObserver(allowedToken) }
        #expect(cellular.allowsCellularConnection)
        #expect(cellular.connection == .cellular)
        try cellular.startNotifier()
        try await allowed.wait(for: "the first delivery") { $0.count == 2 }
        #expect(allowed.all == ["reachable Cellular", "notification Cellular"])

        let denied = Calls()
        let (noCellular, deniedToken) = try watch(environment, calls: denied)
        defer { noCellular.notificationCenter.removeObserver(deniedToken) }
        noCellular.allowsCellularConnection = false
        #expect(noCellular.connection == .unavailable)
        // The flags still say what the route is.
        #expect(noCellular.currentReachabilityStatus == .reachableViaWWAN)
        try noCellular.startNotifier()
        try await denied.wait(for: "the first delivery") { $0.count == 2 }
        #expect(denied.all == ["unreachable No Connection", "notification No Connection"])
    }

    /// ashleymills' own test suite: a valid host ends in whenReachable, an invalid one
    /// in whenUnreachable (here against a DNS server in the namespace).
    @Test("ashleymills' testValidHost and testInvalidHost, against a local DNS server")
    func validAndInvalidHost() async throws {
        let ns = try TestNamespace(named: "rtest-ashley")
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let dns = try DNSServer(in: ns, hosts: ["valid.rtest": "192.0.2.80"])
        defer { withExtendedLifetime(dns) {} }
        for (host, expected) in [("valid.rtest", "reachable WiFi"), ("invalidhost", "unreachable No Connection")] {
            let reachability = try Reachability(hostname: host, environment: ns.environment)
            let calls = Calls()
            reachability.whenReachable = { _ in calls.add("reachable \(reachability.connection)") }
            reachability.whenUnreachable = { _ in calls.add("unreachable \(reachability.connection)") }
            try reachability.startNotifier()
            try await calls.wait(for: "\(host)'s first delivery") { !$0.isEmpty }
            #expect(calls.all == [expected], "\(host)")
            reachability.stopNotifier()
        }
    }

    @Test(
        "notificationQueue: the one given; nil with targetQueue: a serial queue targeting it; by default the library's, not main"
    )
    func queues() async throws {
        let key = DispatchSpecificKey<String>()
        let target = DispatchQueue(label: "test.target")
        target.setSpecific(key: key, value: "target")
        let given = DispatchQueue(label: "test.given")
        given.setSpecific(key: key, value: "given")
        let seen = Calls()
        func record(_ reachability: Reachability, as name: String) throws {
            let note: Reachability.NetworkReachable = { _ in
                seen.add("\(name): \(DispatchQueue.getSpecific(key: key) ?? "other") main=\(Thread.isMainThread)")
            }
            reachability.whenReachable = note
            reachability.whenUnreachable = note
            try reachability.startNotifier()
        }
        let viaTarget = try Reachability(queueQoS: .utility, targetQueue: target, notificationQueue: nil)
        let viaGiven = try Reachability(queueQoS: .utility, targetQueue: target, notificationQueue: given)
        let byDefault = try Reachability(queueQoS: .default)
        let host = try Reachability(hostname: "localhost", queueQoS: .userInitiated, targetQueue: target)
        try record(viaTarget, as: "target")
        try record(viaGiven, as: "given")
        try record(byDefault, as: "default")
        try record(host, as: "host")
        try await seen.wait(for: "four first deliveries") { $0.count == 4 }
        #expect(
            Set(seen.all) == [
                "target: target main=false", "given: given main=false", "default: other main=false",
                "host: target main=false",
            ])
        #expect(byDefault.notificationQueue === Reachability.defaultNotificationQueue)
        for reachability in [viaTarget, viaGiven, byDefault, host] { reachability.stopNotifier() }
    }

    @Test("ReachabilityError's ashleymills cases match what each step throws, in catch and switch")
    func errorCases() throws {
        func kind(_ body: () throws -> Void) -> String {
            do {
                try body()
                return "no error"
            } catch ReachabilityError.failedToCreateWithHostname {
                return "hostname"
            } catch ReachabilityError.failedToCreateWithAddress {
                return "address"
            } catch ReachabilityError.unableToSetCallback {
                return "callback"
            } catch ReachabilityError.unableToSetDispatchQueue {
                return "queue"
            } catch ReachabilityError.unableToGetFlags {
                return "flags"
            } catch {
                return "other: \(error)"
            }
        }
        #expect(kind { _ = try Reachability(hostname: "bad host") } == "hostname")
        #expect(kind { _ = try Reachability(hostname: "999.1.1.1") } == "hostname")
        #expect(kind { _ = try Reachability(address: "not an address") } == "address")
        let missing = NetworkEnvironment(networkNamespacePath: "/nonexistent/ns/net")
        #expect(kind { _ = try Reachability(environment: missing) } == "address")
        #expect(kind { _ = try Reachability(hostname: "example.rtest", environment: missing) } == "hostname")

        // startNotifier: the namespace disappears between init and start.
        var ns: TestNamespace? = try TestNamespace()
        let reachability = try Reachability(environment: try #require(ns).environment)
        ns = nil
        #expect(kind { try reachability.startNotifier() } == "callback")

        // Typed throws: the same patterns in a do/catch of `throws(ReachabilityError)`.
        do throws(ReachabilityError) {
            _ = try Reachability(hostname: "")
            Issue.record("an empty hostname was accepted")
        } catch ReachabilityError.failedToCreateWithHostname {
        } catch {
            Issue.record("an empty hostname matched no ashleymills case: \(error)")
        }

        // Errors made with the case functions match themselves, and only themselves.
        let made: [(ReachabilityError, String)] = [
            (.failedToCreateWithAddress(sockaddr(), 1), "address"),
            (.failedToCreateWithHostname("x", 2), "hostname"), (.unableToSetCallback(3), "callback"),
            (.unableToSetDispatchQueue(4), "queue"), (.unableToGetFlags(5), "flags"),
        ]
        for (error, expected) in made {
            #expect(kind { throw error } == expected)
        }
        #expect(ReachabilityError.unableToGetFlags(5).errno == 5)
        #expect(kind { throw CocoaError(.fileNoSuchFile) }.hasPrefix("other"))
    }

    @Test("The deprecated members answer as ashleymills' did")
    @available(*, deprecated, message: "exercises deprecated API")
    func deprecatedMembers() throws {
        let ns = try TestNamespace()
        try ns.disableIPv6()
        try ns.ipv4WithDefaultRoute()
        let reachability = try Reachability(environment: ns.environment)
        #expect(reachability.isReachable)
        #expect(reachability.isReachableViaWiFi)
        #expect(!reachability.isReachableViaWWAN)
        #expect(reachability.currentReachabilityString == "WiFi")
        #expect(Reachability.Connection.none.description == "unavailable")
        reachability.reachableOnWWAN = false
        #expect(!reachability.allowsCellularConnection)
        try ns.ip("route del default")
        #expect(!reachability.isReachable)
        #expect(reachability.currentReachabilityString == "No Connection")
    }
}
