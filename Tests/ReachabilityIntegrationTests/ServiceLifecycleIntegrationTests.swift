import Connectivity
import Foundation
import Logging
import Reachability
import ReachabilityServiceLifecycle
import ServiceLifecycle
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// Reachability, PathMonitor and Connectivity run as swift-service-lifecycle
/// services in a `ServiceGroup`, in test namespaces.
@Suite(
    "Reachability, PathMonitor and Connectivity under ServiceGroup", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct ServiceLifecycleIntegrationTests {
    static let logger = Logger(label: "reachability.tests")

    @Test("graceful shutdown: the services run, deliver, and stop with the group; the shared monitor stops")
    func gracefulShutdown() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp(["/generate_204": .respond(status: 204)])
        let reachability = try Reachability(environment: ns.environment)
        let reached = LockedValue(0)
        reachability.whenReachable = { _ in reached.withLock { $0 += 1 } }
        let monitor = try PathMonitor(environment: ns.environment)
        let connectivity = Connectivity(
            configuration: ConnectivityIntegrationTests.configuration(
                ns, [ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204))]))
        let group = ServiceGroup(services: [reachability, monitor, connectivity], logger: Self.logger)
        let task = Task { try await group.run() }

        try await eventually("every service running and delivering") {
            reached.withLock { $0 } == 1 && monitor.currentPath.status == .satisfied && connectivity.isConnected
        }
        #expect(reachability.isRunning)
        #expect(monitor.isRunning)
        #expect(ns.environment.monitorCounters != nil)

        await group.triggerGracefulShutdown()
        try await task.value
        #expect(!reachability.isRunning)
        #expect(!monitor.isRunning)
        #expect(!connectivity.isRunning)
        try await eventually("the namespace's monitor stopped with its last client") {
            ns.environment.monitorCounters == nil
        }
    }

    @Test("cancelling the task that runs the group stops the services")
    func cancellation() async throws {
        let ns = try await offPool { try TestNamespace() }
        let reachability = try Reachability(environment: ns.environment)
        let monitor = try PathMonitor(environment: ns.environment)
        let group = ServiceGroup(services: [reachability, monitor], logger: Self.logger)
        let task = Task { try await group.run() }
        try await eventually("running") { reachability.isRunning && monitor.isRunning }
        task.cancel()
        _ = try? await task.value
        #expect(!reachability.isRunning)
        #expect(!monitor.isRunning)
    }

    @Test("the namespace goes away: the group ends with the services' namespace error")
    func namespaceGone() async throws {
        let ns = try await offPool { try TestNamespace(named: "rtest-svc") }
        let reachability = try Reachability(environment: ns.environment)
        let group = ServiceGroup(services: [reachability], logger: Self.logger)
        let task = Task { try await group.run() }
        try await eventually("running") { reachability.isRunning }
        _ = try await offPool { try Command.check(["ip", "netns", "del", ns.name ?? ""]) }
        let error = await #expect(throws: ReachabilityError.self) { try await task.value }
        #expect(error?.code == .namespace)
        #expect(!reachability.isRunning)
    }

    @Test("a service that can't start throws at once: an unusable Connectivity configuration")
    func cannotStart() async throws {
        var configuration = ConnectivityConfiguration.recommended
        configuration.endpoints = []
        let connectivity = Connectivity(configuration: configuration)
        let group = ServiceGroup(services: [connectivity], logger: Self.logger)
        await #expect(throws: ConnectivityError.self) { try await group.run() }
    }
}
