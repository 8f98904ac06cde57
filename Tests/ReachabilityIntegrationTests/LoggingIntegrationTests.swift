import Connectivity
import Foundation
import Logging
import Reachability
import Testing

@_spi(Testing) @testable import ReachabilityCore

/// A swift-log handler that keeps every record, for the tests to read.
struct CapturingLogHandler: LogHandler {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    let records: LockedValue<[Record]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all: [String: String] = [:]
        for (key, value) in event.metadata ?? [:] { all[key] = "\(value)" }
        records.withLock { $0.append(Record(level: event.level, message: "\(event.message)", metadata: all)) }
    }

    /// A logger at `level` whose records land in the returned box.
    static func logger(level: Logger.Level = .trace) -> (Logger, LockedValue<[Record]>) {
        let records = LockedValue<[Record]>([])
        var logger = Logger(label: "reachability.tests") { _ in CapturingLogHandler(records: records) }
        logger.logLevel = level
        return (logger, records)
    }
}

/// The library logs what it gets past on its own to the environment's swift-log
/// Logger, and nothing without one.
@Suite("Logging to a swift-log Logger", .enabled(if: IntegrationGate.enabled), .ownThreads)
struct LoggingIntegrationTests {
    @Test("the namespace goes away: one info record naming it")
    func namespaceGone() async throws {
        let ns = try await offPool { try TestNamespace(named: "rtest-log") }
        let (logger, records) = CapturingLogHandler.logger()
        var environment = ns.environment
        environment.logger = logger
        let reachability = try Reachability(environment: environment)
        try reachability.start()
        _ = try await offPool { try Command.check(["ip", "netns", "del", ns.name ?? ""]) }
        try await eventually("the namespace loss logged") {
            records.withLock { $0.contains { $0.message.contains("namespace is gone") } }
        }
        let record = try #require(records.withLock { $0.first { $0.message.contains("namespace is gone") } })
        #expect(record.level == .info)
        #expect(record.metadata["namespace"] == ns.path)
        reachability.stop()
    }

    @Test("Connectivity: a failed probe is a debug record naming the URL; a status change an info record")
    func probes() async throws {
        let (ns, server) = try await ConnectivityIntegrationTests.setUp([
            "/generate_204": .respond(status: 204), "/broken": .respond(status: 500),
        ])
        let (logger, records) = CapturingLogHandler.logger(level: .debug)
        var configuration = ConnectivityIntegrationTests.configuration(
            ns,
            [
                ConnectivityEndpoint(url: server.url("/generate_204"), expectation: .status(204)),
                ConnectivityEndpoint(url: server.url("/broken"), expectation: .status(204)),
            ], threshold: 100)  // Both must answer before a verdict: neither probe is cut short.
        configuration.environment.logger = logger
        let connectivity = Connectivity(configuration: configuration)
        try connectivity.start()
        defer { connectivity.stop() }
        try await eventually("the first verdict logged") {
            records.withLock { $0.contains { $0.message == "connectivity changed" } }
        }
        let all = records.withLock { $0 }
        let failed = try #require(all.first { $0.message == "connectivity probe failed" })
        #expect(failed.level == .debug)
        #expect(failed.metadata["url"] == server.url("/broken").absoluteString)
        #expect(failed.metadata["error"]?.contains("500") == true, "\(failed.metadata)")
        #expect(!all.contains { $0.metadata["url"] == server.url("/generate_204").absoluteString })
        let changed = try #require(all.first { $0.message == "connectivity changed" })
        #expect(changed.level == .info)
        #expect(changed.metadata["verdict"]?.hasPrefix("limited") == true, "\(changed.metadata)")
    }

    @Test("the logger is not part of an environment's equality; none by default")
    func equality() {
        let (logger, _) = CapturingLogHandler.logger(level: .info)
        let (other, _) = CapturingLogHandler.logger(level: .trace)
        let plain = NetworkEnvironment(networkNamespacePath: "/proc/1/ns/net")
        var logged = plain
        logged.logger = logger
        var otherLogged = plain
        otherLogged.logger = other
        #expect(plain == logged && logged == otherLogged)
        #expect(Set([plain, logged, otherLogged]).count == 1)
        #expect(NetworkEnvironment.default.logger == nil, "nothing is logged by default")
    }
}
