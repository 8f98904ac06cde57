import Dispatch
@_spi(Testing) import ReachabilityBase

/// The `AsyncStream`s a notifier feeds: each keeps only the newest value, and
/// all of them finish when the notifier stops.
package struct StreamRegistry<Element: Sendable>: Sendable {
    private var continuations: [UInt64: AsyncStream<Element>.Continuation] = [:]
    private var nextID: UInt64 = 0

    package init() {}

    package mutating func add(_ continuation: AsyncStream<Element>.Continuation) -> UInt64 {
        nextID += 1
        continuations[nextID] = continuation
        return nextID
    }

    package mutating func remove(_ id: UInt64) -> AsyncStream<Element>.Continuation? {
        continuations.removeValue(forKey: id)
    }

    /// Runs a stream's removal, which takes its owner's lock, from an `onTermination`
    /// handler: later, on a global queue, never in the handler itself. The runtime
    /// calls the handler of a cancelled consumer holding that task's status lock, and a
    /// yield under the owner's lock (the reader thread's delivery) takes the same status
    /// lock: the two, each waiting for the other's lock, hung `check -i A -i B` for good.
    /// A terminated stream takes no more values, so yielding to it meanwhile is nothing.
    /// `removal` returns the continuation it removed: released here, after the lock.
    package static func removeLater(_ removal: @escaping @Sendable () -> AsyncStream<Element>.Continuation?) {
        DispatchQueue.global().async { withExtendedLifetime(removal()) {} }
    }

    /// Yielding runs no user code: safe under the owner's lock.
    package func yield(_ element: Element) {
        for continuation in continuations.values { continuation.yield(element) }
    }

    /// Removes every stream, for the caller to finish after unlocking (finishing
    /// runs termination handlers, which take the owner's lock).
    package mutating func takeAll() -> [AsyncStream<Element>.Continuation] {
        defer { continuations.removeAll() }
        return Array(continuations.values)
    }
}
