import Testing

@testable import ReachabilityCore

/// The names issue 26 replaced (one start/stop vocabulary, `updates` for every
/// stream) still work, as deprecated spellings of the new ones. They are reached
/// through protocols the types conform to here, so the test calls them without a
/// deprecation warning in the build.
@Suite("Deprecated names forward to the new ones")
struct DeprecatedNamesTests {
    @Test("Reachability: isNotifierRunning is isRunning")
    func reachability() throws {
        let reachability = try Reachability(address: "127.0.0.1")
        let old: any OldReachabilityNames = reachability
        #expect(old.isNotifierRunning == false)
        #expect(old.isNotifierRunning == reachability.isRunning)
    }

    @Test("PathMonitor: paths is a stream of the monitor, cancel() stops; InterfaceMonitor: cancel() stops")
    func monitors() throws {
        let monitor = try PathMonitor()
        let old: any OldMonitorNames = monitor
        _ = (monitor as any OldPathNames).paths  // made while stopped: it waits for a start
        old.cancel()
        #expect(!monitor.isRunning)
        let interfaces = try InterfaceMonitor()
        (interfaces as any OldMonitorNames).cancel()
        #expect(!interfaces.isRunning)
    }
}

protocol OldReachabilityNames { var isNotifierRunning: Bool { get } }
protocol OldMonitorNames { func cancel() }
protocol OldPathNames { var paths: AsyncStream<NetworkPath> { get } }
extension Reachability: OldReachabilityNames {}
extension PathMonitor: OldMonitorNames, OldPathNames {}
extension InterfaceMonitor: OldMonitorNames {}
