package import Dispatch
import ReachabilityCore
import ReachabilitySystem

/// A clock that stands still until a test advances it: when ``advance(by:)`` reaches
/// their deadlines, in deadline order, scheduled work runs on its queue before the
/// call returns (so a test sees its effects at once) and sleepers are resumed.
package final class ManualClock: TimerClock {
    package typealias Instant = ContinuousClock.Instant
    package typealias Duration = Swift.Duration

    private struct Waiter {
        var deadline: Instant
        var wake: @Sendable () -> Void
        var cancel: (@Sendable () -> Void)?
    }

    private struct State {
        var now: Instant
        var waiters: [UInt64: Waiter] = [:]
        /// Sleepers not waiting yet: a cancellation meanwhile takes them out.
        var starting: Set<UInt64> = []
        var counter: UInt64 = 0
    }

    private let state: LockedValue<State>

    package init(now: Instant = .now) {
        state = LockedValue(State(now: now))
    }

    package var now: Instant { state.withLock { $0.now } }
    package var minimumResolution: Duration { .zero }

    /// The deadlines of the sleepers and scheduled work still waiting, earliest first.
    package var deadlines: [Instant] { state.withLock { $0.waiters.values.map(\.deadline).sorted() } }

    package func schedule(after delay: Duration, on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
        let due = state.withLock { state -> Bool in
            let deadline = state.now + max(.zero, delay)
            guard deadline > state.now else { return true }
            state.counter += 1
            state.waiters[state.counter] = Waiter(deadline: deadline, wake: { queue.sync(execute: work) })
            return false
        }
        if due { queue.async(execute: work) }
    }

    package func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state -> UInt64 in
            state.counter += 1
            state.starting.insert(state.counter)
            return state.counter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Bool? in
                    guard state.starting.remove(id) != nil else { return false }
                    if deadline <= state.now { return true }
                    state.waiters[id] = Waiter(
                        deadline: deadline, wake: { continuation.resume() },
                        cancel: { continuation.resume(throwing: CancellationError()) })
                    return nil
                }
                switch outcome {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: CancellationError())
                case nil: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                state.starting.remove(id) == nil ? state.waiters.removeValue(forKey: id) : nil
            }
            waiter?.cancel?()
        }
    }

    /// Moves the clock on by `duration` and wakes what is due by then.
    package func advance(by duration: Duration) {
        advance(to: now + duration)
    }

    /// Moves the clock on to `instant` (if it is ahead) and wakes what is due by then.
    package func advance(to instant: Instant) {
        let due = state.withLock { state -> [Waiter] in
            state.now = max(state.now, instant)
            let due = state.waiters.filter { $0.value.deadline <= state.now }
            for id in due.keys { state.waiters[id] = nil }
            return due.sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }.map(\.value)
        }
        for waiter in due { waiter.wake() }
    }
}
