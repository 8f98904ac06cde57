package import Dispatch

/// The clock a shell that owns threads or tasks reads and schedules its wake-ups by
/// (the resolver pool's timer, a failed resolver's retry, Connectivity's timers),
/// as the pure machines it drives take `now`. ``ContinuousClock`` in production;
/// tests advance a `ManualClock` (Tests/TestSupport), so that what a rule forbids within an interval
/// is checked without waiting the interval out.
///
/// Its instants are ``ContinuousClock``'s, which the machines take.
package protocol TimerClock: Clock where Instant == ContinuousClock.Instant {
    /// Runs `work` on `queue` once `delay` has passed.
    func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void)
}

extension ContinuousClock: TimerClock {
    package func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
        let (seconds, attoseconds) = max(.zero, delay).components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: work)
    }
}
