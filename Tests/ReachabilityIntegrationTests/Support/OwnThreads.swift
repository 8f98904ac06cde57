import Foundation
@_spi(Testing) import ReachabilityCore
import Testing

extension Trait where Self == OwnThreadsTrait {
    /// Runs each test of the suite on threads of the test run's own, not on the
    /// cooperative pool, at most ``OwnThreadsTrait/width`` such tests at once.
    ///
    /// Integration tests block: they spawn programs and wait for them, read pipes,
    /// wait on the kernel. The cooperative pool has one thread per core (two here),
    /// and it is also where every other test's awaits and the library's own tasks
    /// run: two tests blocked in long CLI runs held both threads for 20 s and more, and a test
    /// advancing a manual clock every 5 ms got one turn in 10 s.
    static var ownThreads: Self { OwnThreadsTrait() }
}

/// See ``Trait/ownThreads``.
struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    /// Integration tests running at once. Their premises are timings (a link flapping
    /// at 10 Hz under a 2 s hold-down, a resolver's 1-second rule): with every one of
    /// them at once on 2 cores, a stall of seconds broke one run in six; with 8 at
    /// once, the run takes as long (about 95 s).
    static let width = 8

    var isRecursive: Bool { true }

    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await Self.slots.acquire()
        defer { Self.slots.release() }
        try await withTaskExecutorPreference(BlockingTestExecutor.shared) { try await function() }
    }

    private static let slots = Slots(width: width)

    /// A counting semaphore whose waiters hold no thread.
    private final class Slots: Sendable {
        private struct State {
            var free: Int
            var waiting: [CheckedContinuation<Void, Never>] = []
        }
        private let state: LockedValue<State>

        init(width: Int) { state = LockedValue(State(free: width)) }

        func acquire() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let taken = state.withLock { state -> Bool in
                    guard state.free > 0 else {
                        state.waiting.append(continuation)
                        return false
                    }
                    state.free -= 1
                    return true
                }
                if taken { continuation.resume() }
            }
        }

        /// Hands the slot to the longest waiter, if any.
        func release() {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard !state.waiting.isEmpty else {
                    state.free += 1
                    return nil
                }
                return state.waiting.removeFirst()
            }
            next?.resume()
        }
    }
}

/// A task executor that never makes a job wait for a blocked thread: a job goes to
/// an idle thread if one waits, else to a new one. Threads stay for the next jobs.
final class BlockingTestExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = BlockingTestExecutor()

    // @unchecked: `jobs`, `head` and `idle` are read and written under `condition` only.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var head = 0
    /// Threads waiting for a job (a woken one stops counting once it runs).
    private var idle = 0

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        // Each waiting thread takes one job at most: a new thread for each job beyond them.
        let spawn = jobs.count - head > idle
        if !spawn { condition.signal() }
        condition.unlock()
        if spawn {
            let thread = Thread { [self] in run() }
            thread.name = "test-blocking"
            thread.start()
        }
    }

    private func run() {
        while true {
            condition.lock()
            while head == jobs.count {
                idle += 1
                condition.wait()
                idle -= 1
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            }
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
