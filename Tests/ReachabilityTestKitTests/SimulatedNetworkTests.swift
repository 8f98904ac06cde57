import Connectivity
import Dispatch
import Foundation
@_spi(Testing) import Reachability
@_spi(Testing) import ReachabilitySystem
import ReachabilityTestKit
import Testing

/// The simulated network drives the production API: what users' tests observe.
@Suite(.timeLimit(.minutes(1))) struct SimulatedReachabilityTests {
    let wifi = NetworkInterface(name: "wlan0", index: 3, type: .wifi)

    @Test func closuresRunOnTheNotificationQueueWithTheSimulatedState() async throws {
        let network = SimulatedNetwork(.connected(via: wifi))
        let queue = MarkedQueue("closures")
        let reachability = try Reachability(environment: network.environment, notificationQueue: queue.queue)
        let calls = Recorder<(String, NetworkStatus, String?, Bool)>()
        reachability.whenReachable = {
            calls.record(("reachable", $0.currentReachabilityStatus, $0.interface?.name, queue.isCurrent))
        }
        reachability.whenUnreachable = {
            calls.record(("unreachable", $0.currentReachabilityStatus, $0.interface?.name, queue.isCurrent))
        }
        try reachability.startNotifier()
        defer { reachability.stopNotifier() }

        let first = try #require(await calls.value(0))
        #expect(first == ("reachable", .reachableViaWiFi, "wlan0", true))
        network.set(.disconnected)
        let second = try #require(await calls.value(1))
        #expect(second == ("unreachable", .notReachable, nil, true))
        network.set(.connected(via: .cellular))
        let third = try #require(await calls.value(2))
        #expect(third == ("reachable", .reachableViaWWAN, "wwan0", true))
        #expect(reachability.flags == [.reachable, .isWWAN])
        #expect(reachability.interfaceType == .cellular)
    }

    @Test func onlyChangesAreDelivered() async throws {
        let network = SimulatedNetwork()
        let reachability = try Reachability(environment: network.environment)
        let states = Recorder<ReachabilityState>()
        let observation = reachability.addObserver { states.record($0) }
        defer { observation.remove() }
        try reachability.startNotifier()
        defer { reachability.stopNotifier() }
        #expect(await states.value(0)?.interface?.name == "eth0")

        // Neither the same state again nor a change of the path alone is a change of reachability…
        network.set(.connected(via: .wiredEthernet))
        network.update { $0.path = .unsatisfied }
        // …so the next delivery is this one.
        network.update { $0.flags.insert(.connectionRequired) }
        let next = try #require(await states.value(1))
        #expect(next.flags == [.reachable, .connectionRequired])
        #expect(next.connectionRequired)
    }

    @Test func updatesPostsAndGettersFollowTheNetwork() async throws {
        let network = SimulatedNetwork(.disconnected)
        let reachability = try Reachability(address: "192.0.2.1", environment: network.environment)
        // Stopped: the getters report the simulated network, not the host's.
        #expect(reachability.currentReachabilityStatus == .notReachable)
        network.set(.connected(via: wifi))
        #expect(reachability.currentReachabilityStatus == .reachableViaWiFi)

        let posts = Recorder<Bool>()
        let token = NotificationCenter.default.addObserver(
            forName: .reachabilityChanged, object: reachability, queue: nil
        ) { _ in posts.record(true) }
        defer { NotificationCenter.default.removeObserver(token) }
        let updates = reachability.updates
        try reachability.startNotifier()
        var iterator = updates.makeAsyncIterator()
        #expect(await iterator.next()?.status == .reachableViaWiFi)
        network.set(.disconnected)
        #expect(await iterator.next()?.status == .notReachable)
        #expect(await posts.value(1) == true)  // One post at the start, one for the change.
        reachability.stopNotifier()
        #expect(await iterator.next() == nil)
    }

    @Test func aHostnameTakesTheNetworksStateWithoutResolving() async throws {
        let network = SimulatedNetwork(.connected(via: wifi))
        let reachability = try Reachability(hostname: "example.com", environment: network.environment)
        let states = Recorder<ReachabilityState>()
        reachability.whenReachable = { states.record($0.state) }
        try reachability.startNotifier()
        defer { reachability.stopNotifier() }
        let first = try #require(await states.value(0))
        #expect(first.interface == wifi && !first.isProvisional)
        #expect(reachability.targetDescription == "example.com")
    }

    @Test func waitUntilReachableReturnsWhenTheNetworkComesBack() async throws {
        let network = SimulatedNetwork(.disconnected)
        let reachability = try Reachability(environment: network.environment)
        #expect(await reachability.waitUntilReachable(timeout: .milliseconds(10)) == false)
        network.set(.disconnected)  // No change, but the stopped waiter is forgotten.
        #expect(network.subscriberCount == 0)
        let waiting = Task { await reachability.waitUntilReachable(timeout: .seconds(30)) }
        // The change comes after the waiter's own instance has started watching.
        while network.subscriberCount == 0 && !Task.isCancelled { await Task.yield() }
        network.set(.connected(via: wifi))
        #expect(await waiting.value)
    }

    @Test func endingTheNetworkIsTheLossOfTheNamespace() async throws {
        let network = SimulatedNetwork()
        let reachability = try Reachability(environment: network.environment)
        let errors = Recorder<ReachabilityError.Code>()
        reachability.whenError = { _, error in errors.record(error.code) }
        let updates = reachability.updates
        try reachability.startNotifier()
        var iterator = updates.makeAsyncIterator()
        #expect(await iterator.next() != nil)

        network.end()
        #expect(await errors.value(0) == .namespace)
        #expect(await iterator.next() == nil)
        #expect(!reachability.isRunning)
        #expect(reachability.lastError?.code == .namespace)
        let restart = #expect(throws: ReachabilityError.self) { try reachability.startNotifier() }
        #expect(restart?.code == .namespace)
    }

    @Test func noSystemCallIsMade() async throws {
        let network = SimulatedNetwork()
        let faults = SystemCallFaults()
        var environment = network.environment
        environment.systemCalls = SystemCalls(faults: faults)
        let reachability = try Reachability(hostname: "example.com", environment: environment)
        let monitor = try PathMonitor(environment: environment)
        let states = Recorder<ReachabilityState>()
        let paths = Recorder<NetworkPath>()
        reachability.whenUnreachable = { states.record($0.state) }
        monitor.pathUpdateHandler = { paths.record($0) }
        try reachability.startNotifier()
        try monitor.start()
        network.set(.disconnected)
        #expect(await states.value(0) == .unreachable)
        #expect(await paths.value(1) == .unsatisfied)
        _ = reachability.flags
        _ = monitor.currentPath
        reachability.stopNotifier()
        monitor.stop()
        for call in SystemCallFaults.Call.allCases {
            #expect(faults.attempts(call) == 0, "\(call)")
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct SimulatedPathMonitorTests {
    @Test func handlerUpdatesAndTheEnd() async throws {
        let network = SimulatedNetwork(.connected(via: .wifi))
        let queue = MarkedQueue("paths")
        let monitor = try PathMonitor(environment: network.environment, notificationQueue: queue.queue)
        let paths = Recorder<(NetworkPath, Bool)>()
        monitor.pathUpdateHandler = { paths.record(($0, queue.isCurrent)) }
        let updates = monitor.updates
        try monitor.start()
        var iterator = updates.makeAsyncIterator()

        let first = try #require(await paths.value(0))
        #expect(first.0.status == .satisfied && first.0.usesInterfaceType(.wifi) && first.1)
        #expect(await iterator.next() == first.0)
        let cellular = NetworkPath(
            status: .satisfied, availableInterfaces: [NetworkInterface(name: "wwan0", index: 4, type: .cellular)],
            supportsIPv6: true, isExpensive: true)
        network.update { $0.path = cellular }
        #expect(await paths.value(1)?.0 == cellular)
        #expect(await iterator.next() == cellular)
        #expect(monitor.currentPath == cellular)

        network.end(message: "gone")
        // The end is a last unsatisfied path, then the sequences finish.
        #expect(await paths.value(2)?.0 == .unsatisfied)
        #expect(await iterator.next() == .unsatisfied)
        #expect(await iterator.next() == nil)
        #expect(monitor.lastError?.code == .namespace)
        #expect(monitor.lastError?.message == "gone")
        #expect(!monitor.isRunning)
    }
}

@Suite(.timeLimit(.minutes(1))) struct SimulatedInterfaceMonitorTests {
    @Test func thePathsInterfacesAndTheEnd() async throws {
        let network = SimulatedNetwork(.connected(via: .wiredEthernet))
        let monitor = try InterfaceMonitor(environment: network.environment)
        #expect(monitor.currentInterfaces.map(\.interface.name) == ["eth0"])
        let updates = monitor.updates
        try monitor.start()
        var iterator = updates.makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(first.map(\.interface.name) == ["eth0"])
        #expect(first.first?.isUp == true && first.first?.defaultRouteFamilies == [.ipv4])

        network.set(.disconnected)
        #expect(await iterator.next() == [])
        network.end()
        #expect(await iterator.next() == nil)
        #expect(monitor.lastError?.code == .namespace)
    }
}

@Suite(.timeLimit(.minutes(1))) struct SimulatedConnectivityTests {
    /// One check decides (no hysteresis), and no retry timer runs while offline.
    static func configuration(_ network: SimulatedNetwork) -> ConnectivityConfiguration {
        var configuration = ConnectivityConfiguration.recommended
        configuration.environment = network.environment
        configuration.failuresToGoOffline = 1
        configuration.retriesWhileOffline = false
        return configuration
    }

    @Test func theVerdictDecidesTheStatusWithoutProbing() async throws {
        let network = SimulatedNetwork(.connected(via: .wifi))
        let faults = SystemCallFaults()
        var configuration = Self.configuration(network)
        configuration.environment.systemCalls = SystemCalls(faults: faults)
        let connectivity = Connectivity(configuration: configuration)
        let calls = Recorder<(Bool, ConnectivityStatus)>()
        connectivity.whenConnected = { calls.record((true, $0.status)) }
        connectivity.whenDisconnected = { calls.record((false, $0.status)) }
        let results = connectivity.updates
        try connectivity.start()
        defer { connectivity.stop() }
        var iterator = results.makeAsyncIterator()

        #expect(try #require(await calls.value(0)) == (true, .connectedViaWiFi))
        #expect(await iterator.next()?.verdict == .online)

        let portal = try #require(URL(string: "http://portal.example/login"))
        network.update { $0.verdict = .captivePortal(loginURL: portal) }
        #expect(try #require(await calls.value(1)) == (false, .connectedViaWiFiWithoutInternet))
        #expect(await iterator.next()?.verdict == .captivePortal(loginURL: portal))

        network.set(.disconnected)
        #expect(try #require(await calls.value(2)) == (false, .notConnected))
        #expect(await iterator.next()?.verdict == .notConnected)

        network.set(.connected(via: .wiredEthernet))
        #expect(try #require(await calls.value(3)) == (true, .connectedViaEthernet))
        #expect(connectivity.isConnected)
        // A one-off check takes the verdict too.
        network.update { $0.verdict = .noInternet(.timedOut) }
        let oneOff: ConnectivityResult = try await connectivity.checkConnectivity()
        #expect(oneOff.verdict == .noInternet(.timedOut))
        #expect(faults.attempts(.socket) == 0 && faults.attempts(.open) == 0)
    }

    @Test func theEndIsNotConnectedAndANamespaceError() async throws {
        let network = SimulatedNetwork(.connected(via: .wiredEthernet))
        let connectivity = Connectivity(configuration: Self.configuration(network))
        let calls = Recorder<ConnectivityStatus>()
        connectivity.whenConnected = { calls.record($0.status) }
        connectivity.whenDisconnected = { calls.record($0.status) }
        try connectivity.start()
        defer { connectivity.stop() }
        #expect(await calls.value(0) == .connectedViaEthernet)
        network.end()
        #expect(await calls.value(1) == .notConnected)
        #expect(connectivity.lastError?.code == .namespace)
    }
}
