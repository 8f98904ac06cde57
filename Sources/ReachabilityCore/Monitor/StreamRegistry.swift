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
