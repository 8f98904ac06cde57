/// The one "first of a body or a deadline" race of the package (Reachability's
/// `waitUntilReachable`, Connectivity's probe timeouts, the CLI's waits).
///
/// Returns what `body` returns, or nil when `timeout` passes first; the loser is
/// cancelled, so a `body` iterating an `AsyncStream` ends at once. With no
/// `timeout` (nil), it waits for `body` alone. The timeout runs on `clock`.
package func firstResult<T: Sendable, C: Clock<Duration>>(
    within timeout: Duration?, clock: C = ContinuousClock(), _ body: @escaping @Sendable () async -> T?
) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        if let timeout {
            group.addTask {
                try? await clock.sleep(for: timeout)
                return nil
            }
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
