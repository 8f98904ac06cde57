import Dispatch
import Synchronization

/// What callbacks were called with, in order, for a test to await: the `n`th value
/// once it is there (the timeout only bounds a failure; nothing waits for a set time).
final class Recorder<Value: Sendable>: Sendable {
    private struct State {
        var values: [Value] = []
        var waiters: [UInt64: (index: Int, continuation: CheckedContinuation<Value?, Never>)] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    func record(_ value: Value) {
        let ready = state.withLock { state -> [CheckedContinuation<Value?, Never>] in
            state.values.append(value)
            let due = state.waiters.filter { $0.value.index < state.values.count }
            for id in due.keys { state.waiters[id] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in ready { continuation.resume(returning: value) }
    }

    /// Every value recorded so far.
    var values: [Value] { state.withLock { $0.values } }

    /// The value recorded `index`th (from 0); nil when none comes within `timeout`.
    func value(_ index: Int, within timeout: Duration = .seconds(10)) async -> Value? {
        await withCheckedContinuation { continuation in
            let id = state.withLock { state -> UInt64? in
                if index < state.values.count {
                    continuation.resume(returning: state.values[index])
                    return nil
                }
                state.nextWaiter += 1
                state.waiters[state.nextWaiter] = (index, continuation)
                return state.nextWaiter
            }
            guard let id else { return }
            Task {
                try? await Task.sleep(for: timeout)
                let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
                waiter?.continuation.resume(returning: nil)
            }
        }
    }
}

/// A serial queue that knows itself: ``isCurrent`` is true only on it.
struct MarkedQueue: Sendable {
    let queue: DispatchQueue
    private let key = DispatchSpecificKey<Bool>()

    init(_ label: String) {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: key, value: true)
    }

    var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }
}
