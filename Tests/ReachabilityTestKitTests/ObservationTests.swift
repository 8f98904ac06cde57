import Connectivity
import Dispatch
import Observation
import Reachability
import ReachabilityObservable
import ReachabilityTestKit
import Testing

/// The models' tracked properties change on the notification queue, and only those
/// whose values change.
@Suite(.timeLimit(.minutes(1))) struct ObservationTests {
    /// Tracks `read`, and records, when it changes, whether that happened on
    /// `queue` and what `read` gives once the change is done (read on `queue` after it).
    static func track<Value: Sendable>(
        _ read: @escaping @Sendable () -> Value, on queue: MarkedQueue, into changes: Recorder<(Bool, Value)>
    ) {
        withObservationTracking {
            _ = read()
        } onChange: {
            let onQueue = queue.isCurrent
            queue.queue.async { changes.record((onQueue, read())) }
        }
    }

    @Test func reachabilityModel() async throws {
        let network = SimulatedNetwork(.connected(via: .wifi))
        let queue = MarkedQueue("model")
        let reachability = try Reachability(environment: network.environment, notificationQueue: queue.queue)
        let model = ReachabilityModel(reachability)
        #expect(model.status == .reachableViaWiFi)  // As the getters read, before any delivery.
        try reachability.startNotifier()
        defer { reachability.stopNotifier() }

        let status = Recorder<(Bool, NetworkStatus)>()
        let type = Recorder<(Bool, InterfaceType?)>()
        let flags = Recorder<(Bool, ReachabilityFlags)>()
        Self.track({ model.status }, on: queue, into: status)
        Self.track({ model.interfaceType }, on: queue, into: type)
        Self.track({ model.flags }, on: queue, into: flags)

        // Flags change, the status and the interface type don't.
        network.update { $0.flags.insert(.isDirect) }
        let changedFlags = try #require(await flags.value(0))
        #expect(changedFlags == (true, [.reachable, .isDirect]))
        Self.track({ model.flags }, on: queue, into: flags)

        network.set(.disconnected)
        let changedStatus = try #require(await status.value(0))
        #expect(changedStatus == (true, .notReachable))
        let changedType = try #require(await type.value(0))
        #expect(changedType == (true, nil))
        #expect(await flags.value(1)?.1 == [])
        #expect(!model.isReachable && model.state == .unreachable)
    }

    @Test func pathModel() async throws {
        let network = SimulatedNetwork(.connected(via: .wiredEthernet))
        let queue = MarkedQueue("path model")
        let monitor = try PathMonitor(environment: network.environment, notificationQueue: queue.queue)
        let model = PathModel(monitor)
        try monitor.start()
        defer { monitor.stop() }
        let paths = Recorder<NetworkPath>()
        monitor.pathUpdateHandler = { paths.record($0) }
        _ = await paths.value(0)  // Started: what the model follows from now on is delivered on `queue`.

        let status = Recorder<(Bool, NetworkPath.Status)>()
        Self.track({ model.status }, on: queue, into: status)
        network.set(.disconnected)
        let changed = try #require(await status.value(0))
        #expect(changed == (true, .unsatisfied))
        #expect(model.availableInterfaces.isEmpty)

        // Stopped and started again, the model still follows.
        monitor.stop()
        try monitor.start()
        let expensive = Recorder<(Bool, Bool)>()
        Self.track({ model.isExpensive }, on: queue, into: expensive)
        network.set(.connected(via: .cellular))
        #expect(try #require(await expensive.value(0)) == (true, true))
    }

    @Test func connectivityModel() async throws {
        let network = SimulatedNetwork(.connected(via: .wifi))
        let queue = MarkedQueue("connectivity model")
        var configuration = ConnectivityConfiguration.recommended
        configuration.environment = network.environment
        configuration.failuresToGoOffline = 1
        configuration.retriesWhileOffline = false
        let connectivity = Connectivity(configuration: configuration, notificationQueue: queue.queue)
        let model = ConnectivityModel(connectivity)
        #expect(model.status == .determining && model.result == nil)

        let connected = Recorder<(Bool, Bool)>()
        Self.track({ model.isConnected }, on: queue, into: connected)
        try connectivity.start()
        defer { connectivity.stop() }
        #expect(try #require(await connected.value(0)) == (true, true))

        let verdict = Recorder<(Bool, Verdict?)>()
        Self.track({ model.verdict }, on: queue, into: verdict)
        network.update { $0.verdict = .limited(.httpsBlocked) }
        #expect(try #require(await verdict.value(0)) == (true, .limited(.httpsBlocked)))
        #expect(model.status == .connectedViaWiFiWithoutInternet)
    }
}
