public import Connectivity
public import Reachability
public import ServiceLifecycle

// `Reachability`, `PathMonitor` and `Connectivity` as swift-service-lifecycle
// services: put them in a `ServiceGroup` next to an HTTP server, and they start
// with it and stop on graceful shutdown (SIGTERM through the group's
// `gracefulShutdownSignals`) or cancellation. This module is the only one that
// depends on ServiceLifecycle; the libraries themselves don't.
//
// ```swift
// let reachability = try Reachability()
// reachability.whenUnreachable = { _ in logger.warning("offline") }
// let group = ServiceGroup(
//     services: [reachability, try PathMonitor(), server],
//     gracefulShutdownSignals: [.sigterm], logger: logger)
// try await group.run()
// ```

extension Reachability: Service {
    /// Starts the notifier and runs until graceful shutdown or cancellation, then
    /// stops it (callbacks, observers and notifications work as usual meanwhile).
    /// Throws the `ReachabilityError` that stops the notifier by itself: the
    /// watched namespace went away, or the notifier could not start. If something
    /// else stops the notifier, `run()` returns.
    public func run() async throws {
        let updates = self.updates  // Made before the start: it gets the first state.
        try start()
        await withTaskCancellationOrGracefulShutdownHandler {
            for await _ in updates {}
        } onCancelOrGracefulShutdown: { [self] in
            stop()
        }
        stop()
        if let error = lastError, error.code == .namespace { throw error }
    }
}

extension PathMonitor: Service {
    /// Starts the monitor (unless it already runs) and runs
    /// until graceful shutdown or cancellation, then cancels it. Throws the
    /// `ReachabilityError` that stops the monitor by itself (its namespace went
    /// away) or that failed its start.
    public func run() async throws {
        let paths = self.updates
        if !isRunning { try start() }
        await withTaskCancellationOrGracefulShutdownHandler {
            for await _ in paths {}
        } onCancelOrGracefulShutdown: { [self] in
            stop()
        }
        stop()
        if let error = lastError { throw error }
    }
}

extension Connectivity: Service {
    /// Starts checking (`Connectivity/start()`, which throws for a
    /// configuration that can't work) and runs until graceful shutdown or
    /// cancellation, then stops the notifier.
    public func run() async throws {
        let updates = self.updates
        try start()
        await withTaskCancellationOrGracefulShutdownHandler {
            for await _ in updates {}
        } onCancelOrGracefulShutdown: { [self] in
            stop()
        }
        stop()
    }
}
