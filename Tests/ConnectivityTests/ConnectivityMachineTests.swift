import Foundation
import Reachability
import Testing

@testable import Connectivity

/// When to check and what to publish: hysteresis, backoff, generations, polling.
@Suite struct ConnectivityMachineTests {
    typealias Action = ConnectivityMachine.Action
    static let wifi = NetworkInterface(name: "wlan0", index: 3, type: .wifi)
    static let ethernet = NetworkInterface(name: "eth0", index: 2, type: .wiredEthernet)
    static func path(_ interface: NetworkInterface?) -> NetworkPath {
        guard let interface else { return .unsatisfied }
        return NetworkPath(status: .satisfied, availableInterfaces: [interface])
    }
    let date = Date(timeIntervalSince1970: 0)

    static func published(_ actions: [Action]) -> [ConnectivityResult] {
        actions.compactMap { if case .publish(let result) = $0 { result } else { nil } }
    }

    static func started(_ actions: [Action]) -> UInt64? {
        actions.lazy.compactMap { if case .startCheck(let generation) = $0 { generation } else { nil } }.first
    }

    static func scheduled(_ actions: [Action]) -> (Duration, UInt64)? {
        actions.lazy.compactMap {
            if case .schedule(let delay, let generation) = $0 { (delay, generation) } else { nil }
        }
        .first
    }

    func finish(_ machine: inout ConnectivityMachine, _ generation: UInt64, _ verdict: Verdict) -> [Action] {
        machine.checkFinished(generation: generation, verdict: verdict, endpoints: [], api: nil, at: date)
    }

    @Test func determiningUntilTheFirstCheckThenConnectedViaTheInterfaceType() throws {
        var machine = ConnectivityMachine(settings: .init())
        #expect(machine.status == .determining)
        let actions = machine.pathChanged(Self.path(Self.wifi), at: date)
        #expect(Self.published(actions).isEmpty)
        let generation = try #require(Self.started(actions))
        let done = finish(&machine, generation, .online)
        #expect(Self.published(done).map(\.status) == [.connectedViaWiFi])
        #expect(machine.status == .connectedViaWiFi)
        #expect(Self.scheduled(done) == nil, "no polling configured")
    }

    @Test func noUsablePathIsNotConnectedAtOnceWithoutAProbe() {
        var machine = ConnectivityMachine(settings: .init())
        let actions = machine.pathChanged(.unsatisfied, at: date)
        #expect(Self.started(actions) == nil)
        #expect(Self.published(actions).map(\.verdict) == [.notConnected])
        #expect(machine.status == .notConnected)
    }

    @Test func pathLossCancelsTheCheckAndAStaleResultIsDropped() throws {
        var machine = ConnectivityMachine(settings: .init())
        let generation = try #require(Self.started(machine.pathChanged(Self.path(Self.ethernet), at: date)))
        let down = machine.pathChanged(.unsatisfied, at: date)
        #expect(down.contains(.cancelCheck))
        #expect(Self.published(down).map(\.status) == [.notConnected])
        // The cancelled check's result arrives anyway: no late online.
        #expect(finish(&machine, generation, .online).isEmpty)
        #expect(machine.status == .notConnected)
    }

    @Test func olderCheckNeverOverwritesANewerOne() throws {
        var machine = ConnectivityMachine(settings: .init())
        let first = try #require(Self.started(machine.pathChanged(Self.path(Self.ethernet), at: date)))
        let second = try #require(Self.started(machine.pathChanged(Self.path(Self.wifi), at: date)))
        #expect(second != first)
        _ = finish(&machine, second, .captivePortal(loginURL: URL(string: "http://portal.test/")!))
        #expect(finish(&machine, first, .online).isEmpty)
        #expect(machine.status == .connectedViaWiFiWithoutInternet)
    }

    @Test func hysteresisNeedsTwoFailuresToLeaveOnlineAndOneSuccessToReturn() throws {
        var machine = ConnectivityMachine(settings: .init(failuresToGoOffline: 2))
        var generation = try #require(Self.started(machine.pathChanged(Self.path(Self.ethernet), at: date)))
        _ = finish(&machine, generation, .online)
        // First failure: held online, a confirmation check scheduled soon.
        let held = finish(&machine, generation, .noInternet(.timedOut))
        #expect(Self.published(held).isEmpty)
        #expect(machine.status == .connectedViaEthernet)
        let (delay, timerGeneration) = try #require(Self.scheduled(held))
        #expect(delay == .seconds(1))
        generation = try #require(Self.started(machine.timerFired(generation: timerGeneration)))
        // Second failure in a row: offline.
        let left = finish(&machine, generation, .noInternet(.timedOut))
        #expect(Self.published(left).map(\.status) == [.connectedViaEthernetWithoutInternet])
        // One success returns.
        let (_, retryGeneration) = try #require(Self.scheduled(left))
        generation = try #require(Self.started(machine.timerFired(generation: retryGeneration)))
        #expect(Self.published(finish(&machine, generation, .online)).map(\.status) == [.connectedViaEthernet])
    }

    @Test func everyResultTakenIsKeptEvenWhenNothingIsPublished() throws {
        var machine = ConnectivityMachine(settings: .init(failuresToGoOffline: 2))
        var generation = try #require(Self.started(machine.pathChanged(Self.path(Self.ethernet), at: date)))
        #expect(machine.taken == nil)
        _ = finish(&machine, generation, .online)
        #expect(machine.taken?.verdict == .online)
        #expect(machine.taken?.status == .connectedViaEthernet)
        // Held online: nothing published, but the check's own verdict is the one taken.
        let held = finish(&machine, generation, .noInternet(.timedOut))
        #expect(Self.published(held).isEmpty)
        #expect(machine.taken?.verdict == .noInternet(.timedOut))
        #expect(machine.taken?.status == .connectedViaEthernetWithoutInternet)
        #expect(machine.published?.verdict == .online)
        // The same verdict again after going offline: published once, taken each time.
        let (_, heldTimer) = try #require(Self.scheduled(held))
        generation = try #require(Self.started(machine.timerFired(generation: heldTimer)))
        let before = machine.results
        let left = finish(&machine, generation, .noInternet(.timedOut))
        #expect(Self.published(left).count == 1)
        let (_, leftTimer) = try #require(Self.scheduled(left))
        generation = try #require(Self.started(machine.timerFired(generation: leftTimer)))
        let again = finish(&machine, generation, .noInternet(.timedOut))
        #expect(Self.published(again).isEmpty)
        #expect(machine.results == before + 2)
        #expect(machine.taken?.verdict == .noInternet(.timedOut))
        // The path going away: notConnected taken.
        _ = machine.pathChanged(.unsatisfied, at: date)
        #expect(machine.taken?.verdict == .notConnected)
    }

    @Test func aSuccessBetweenFailuresResetsTheCount() throws {
        var machine = ConnectivityMachine(settings: .init(failuresToGoOffline: 2))
        let generation = try #require(Self.started(machine.pathChanged(Self.path(Self.ethernet), at: date)))
        for verdict in [Verdict.online, .noInternet(.timedOut), .online, .noInternet(.timedOut), .online] {
            _ = finish(&machine, generation, verdict)
            #expect(machine.status == .connectedViaEthernet)
        }
    }

    @Test func backoffDoublesToTheLimitWhileNotOnline() throws {
        var machine = ConnectivityMachine(
            settings: .init(offlineRetryInitial: .seconds(1), offlineRetryLimit: .seconds(8)))
        var generation = try #require(Self.started(machine.pathChanged(Self.path(Self.ethernet), at: date)))
        var delays: [Duration] = []
        for _ in 0..<6 {
            let (delay, timer) = try #require(Self.scheduled(finish(&machine, generation, .noInternet(.timedOut))))
            delays.append(delay)
            generation = try #require(Self.started(machine.timerFired(generation: timer)))
        }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8), .seconds(8)])
        // Online resets it.
        _ = finish(&machine, generation, .online)
        #expect(machine.nextRetryDelay == .seconds(1))
    }

    @Test("a check that could not run (no socket) publishes nothing, keeps online, and retries with the backoff")
    func checkThatCouldNotRun() throws {
        // Without retries while offline (rwbutler's way), only this retry brings the next check.
        var machine = ConnectivityMachine(
            settings: .init(
                offlineRetryInitial: .seconds(1), offlineRetryLimit: .seconds(8), retriesWhileOffline: false))
        var generation = try #require(Self.started(machine.pathChanged(Self.path(Self.ethernet), at: date)))
        _ = finish(&machine, generation, .online)
        generation = try #require(Self.started(machine.checkRequested().actions))
        let results = machine.results
        var delays: [Duration] = []
        for _ in 0..<3 {
            let actions = machine.checkCouldNotRun(generation: generation)
            #expect(Self.published(actions).isEmpty)
            let (delay, timer) = try #require(Self.scheduled(actions))
            delays.append(delay)
            generation = try #require(Self.started(machine.timerFired(generation: timer)))
        }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4)])
        #expect(machine.isOnline && machine.status == .connectedViaEthernet && machine.results == results)
        // A stale one does nothing.
        #expect(machine.checkCouldNotRun(generation: generation - 1).isEmpty)
    }

    @Test func pollingWhileOnlineUnlessOfflineOnly() throws {
        var polling = ConnectivityMachine(settings: .init(pollingInterval: .seconds(30)))
        let generation = try #require(Self.started(polling.pathChanged(Self.path(Self.wifi), at: date)))
        #expect(Self.scheduled(finish(&polling, generation, .online))?.0 == .seconds(30))

        var offlineOnly = ConnectivityMachine(
            settings: .init(pollingInterval: .seconds(30), pollWhileOfflineOnly: true))
        let other = try #require(Self.started(offlineOnly.pathChanged(Self.path(Self.wifi), at: date)))
        #expect(Self.scheduled(finish(&offlineOnly, other, .online)) == nil)
    }

    @Test func pollingIntervalCapsTheOfflineRetry() throws {
        var machine = ConnectivityMachine(
            settings: .init(
                offlineRetryInitial: .seconds(1), offlineRetryLimit: .seconds(60), pollingInterval: .seconds(3)))
        var generation = try #require(Self.started(machine.pathChanged(Self.path(Self.wifi), at: date)))
        var delays: [Duration] = []
        for _ in 0..<4 {
            let (delay, timer) = try #require(Self.scheduled(finish(&machine, generation, .noInternet(.timedOut))))
            delays.append(delay)
            generation = try #require(Self.started(machine.timerFired(generation: timer)))
        }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(3), .seconds(3)])
    }

    @Test func unrelatedPathChangeDoesNotRestartTheCheckInFlight() throws {
        var machine = ConnectivityMachine(settings: .init())
        let generation = try #require(Self.started(machine.pathChanged(Self.path(Self.ethernet), at: date)))
        // A container's veth appears: same primary interface, same gateways.
        let busier = NetworkPath(status: .satisfied, availableInterfaces: [Self.ethernet, Self.wifi])
        #expect(machine.pathChanged(busier, at: date).isEmpty)
        // The check in flight still counts.
        #expect(Self.published(finish(&machine, generation, .online)).map(\.status) == [.connectedViaEthernet])
        // Once idle, a change is checked again.
        #expect(Self.started(machine.pathChanged(Self.path(Self.ethernet), at: date)) != nil)
    }

    @Test func newPrimaryInterfaceForgetsTheHysteresis() throws {
        var machine = ConnectivityMachine(settings: .init(failuresToGoOffline: 2))
        let first = try #require(Self.started(machine.pathChanged(Self.path(Self.ethernet), at: date)))
        _ = finish(&machine, first, .online)
        // Unplugged; Wi-Fi behind a portal takes over: one failure is enough.
        let second = try #require(Self.started(machine.pathChanged(Self.path(Self.wifi), at: date)))
        let portal = Verdict.captivePortal(loginURL: URL(string: "http://portal.test/")!)
        #expect(Self.published(finish(&machine, second, portal)).map(\.status) == [.connectedViaWiFiWithoutInternet])
    }

    @Test func staleTimerDoesNothing() throws {
        var machine = ConnectivityMachine(settings: .init())
        let generation = try #require(Self.started(machine.pathChanged(Self.path(Self.wifi), at: date)))
        let (_, timer) = try #require(Self.scheduled(finish(&machine, generation, .noInternet(.timedOut))))
        _ = machine.pathChanged(Self.path(Self.ethernet), at: date)
        #expect(machine.timerFired(generation: timer).isEmpty)
    }

    @Test func stopMakesEverythingStale() throws {
        var machine = ConnectivityMachine(settings: .init())
        let generation = try #require(Self.started(machine.pathChanged(Self.path(Self.wifi), at: date)))
        #expect(machine.stop() == [.cancelCheck, .cancelTimer])
        #expect(finish(&machine, generation, .online).isEmpty)
        #expect(machine.status == .determining)
    }

    @Test func unchangedOutcomeIsNotPublishedTwice() throws {
        var machine = ConnectivityMachine(settings: .init(pollingInterval: .seconds(5)))
        let generation = try #require(Self.started(machine.pathChanged(Self.path(Self.wifi), at: date)))
        #expect(Self.published(finish(&machine, generation, .online)).count == 1)
        #expect(Self.published(finish(&machine, generation, .online)).isEmpty)
    }

    @Test func portalLoginURLChangeIsPublished() throws {
        var machine = ConnectivityMachine(settings: .init())
        let generation = try #require(Self.started(machine.pathChanged(Self.path(Self.wifi), at: date)))
        let first = Verdict.captivePortal(loginURL: URL(string: "http://a.test/")!)
        let second = Verdict.captivePortal(loginURL: URL(string: "http://b.test/")!)
        #expect(Self.published(finish(&machine, generation, first)).count == 1)
        #expect(Self.published(finish(&machine, generation, second)).map(\.verdict) == [second])
    }

    @Test(arguments: InterfaceType.allCases)
    func statusMapping(type: InterfaceType) {
        let validated = ConnectivityStatus.make(validated: true, pathUsable: true, interfaceType: type)
        let failed = ConnectivityStatus.make(validated: false, pathUsable: true, interfaceType: type)
        #expect(validated.isConnected)
        #expect(!failed.isConnected)
        switch type {
        case .wifi: #expect([validated, failed] == [.connectedViaWiFi, .connectedViaWiFiWithoutInternet])
        case .cellular: #expect([validated, failed] == [.connectedViaCellular, .connectedViaCellularWithoutInternet])
        case .wiredEthernet:
            #expect([validated, failed] == [.connectedViaEthernet, .connectedViaEthernetWithoutInternet])
        case .loopback, .other: #expect([validated, failed] == [.connected, .notConnected])
        }
        #expect(ConnectivityStatus.make(validated: true, pathUsable: false, interfaceType: type) == .notConnected)
    }

    @Test(arguments: InterfaceType.allCases)
    func systemConfigurationMapping(type: InterfaceType) {
        // rwbutler's SystemConfiguration path: cellular, or Wi-Fi for every other link.
        let validated = ConnectivityStatus.make(
            validated: true, pathUsable: true, interfaceType: type, framework: .systemConfiguration)
        let failed = ConnectivityStatus.make(
            validated: false, pathUsable: true, interfaceType: type, framework: .systemConfiguration)
        if type == .cellular {
            #expect([validated, failed] == [.connectedViaCellular, .connectedViaCellularWithoutInternet])
        } else {
            #expect([validated, failed] == [.connectedViaWiFi, .connectedViaWiFiWithoutInternet])
        }
        #expect(
            ConnectivityStatus.make(
                validated: true, pathUsable: false, interfaceType: type, framework: .systemConfiguration)
                == .notConnected)
    }

    @Test func withoutRetriesAFailedCheckSchedulesNothingUnlessPolling() throws {
        var machine = ConnectivityMachine(settings: .init(failuresToGoOffline: 1, retriesWhileOffline: false))
        let generation = try #require(Self.started(machine.pathChanged(Self.path(Self.ethernet), at: date)))
        let failed = finish(&machine, generation, .noInternet(.timedOut))
        #expect(Self.published(failed).map(\.status) == [.connectedViaEthernetWithoutInternet])
        #expect(Self.scheduled(failed) == nil, "no retry: only path changes, requests and polling check")

        // Polling while offline: the next check is the poll, never sooner.
        var polling = ConnectivityMachine(
            settings: .init(
                failuresToGoOffline: 1, pollingInterval: .seconds(10), pollWhileOfflineOnly: true,
                retriesWhileOffline: false))
        var next = try #require(Self.started(polling.pathChanged(Self.path(Self.ethernet), at: date)))
        for _ in 0..<3 {
            let (delay, timer) = try #require(Self.scheduled(finish(&polling, next, .noInternet(.timedOut))))
            #expect(delay == .seconds(10))
            next = try #require(Self.started(polling.timerFired(generation: timer)))
        }
        // Connected with offline-only polling: nothing more.
        #expect(Self.scheduled(finish(&polling, next, .online)) == nil)
    }

    @Test func withoutRetriesOneFailureLeavesOnlineAtOnce() throws {
        var machine = ConnectivityMachine(settings: .init(failuresToGoOffline: 1, retriesWhileOffline: false))
        let generation = try #require(Self.started(machine.pathChanged(Self.path(Self.wifi), at: date)))
        _ = finish(&machine, generation, .online)
        let failed = finish(&machine, generation, .noInternet(.timedOut))
        #expect(Self.published(failed).map(\.status) == [.connectedViaWiFiWithoutInternet])
        #expect(Self.scheduled(failed) == nil)
    }

    @Test func withoutRetriesPollingTurnedOnWhileOfflineWaitsTheInterval() throws {
        var machine = ConnectivityMachine(settings: .init(failuresToGoOffline: 1, retriesWhileOffline: false))
        let generation = try #require(Self.started(machine.pathChanged(Self.path(Self.wifi), at: date)))
        _ = finish(&machine, generation, .noInternet(.timedOut))
        var settings = machine.settings
        settings.pollingInterval = .seconds(7)
        #expect(Self.scheduled(machine.settingsChanged(settings))?.0 == .seconds(7))
        settings.pollingInterval = nil
        #expect(machine.settingsChanged(settings) == [.cancelTimer], "polling off again: no check is left pending")
    }
}
