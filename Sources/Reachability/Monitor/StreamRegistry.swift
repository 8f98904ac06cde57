/// The `AsyncStream`s a notifier feeds: each keeps only the newest value, and
/// all of them finish when the notifier stops.
struct StreamRegistry<Element: Sendable>: Sendable {
    private var continuations: [UInt64: AsyncStream<Element>.Continuation] = [:]
    private var nextID: UInt64 = 0

    mutating func add(_ continuation: AsyncStream<Element>.Continuation) -> UInt64 {
        nextID += 1
        continuations[nextID] = continuation
        return nextID
    }

    mutating func remove(_ id: UInt64) -> AsyncStream<Element>.Continuation? {
        continuations.removeValue(forKey: id)
    }

    /// Yielding runs no user code: safe under the owner's lock.
    func yield(_ element: Element) {
        for continuation in continuations.values { continuation.yield(element) }
    }

    /// Removes every stream, for the caller to finish after unlocking (finishing
    /// runs termination handlers, which take the owner's lock).
    mutating func takeAll() -> [AsyncStream<Element>.Continuation] {
        defer { continuations.removeAll() }
        return Array(continuations.values)
    }
}

/// A notifier core whose deliveries also feed async sequences.
protocol StreamingCore: AnyObject, Sendable {
    associatedtype Element: Sendable
    /// Runs `body` under the core's lock with its streams and its current value (nil
    /// while not running).
    func withStreams<R>(_ body: (inout StreamRegistry<Element>, Element?) -> R) -> R
}

extension StreamingCore {
    /// A new sequence: the current value first when running, then every delivery;
    /// only the newest is kept for a slow consumer.
    func makeStream() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(1))
        let id = withStreams { streams, current in
            if let current { continuation.yield(current) }
            return streams.add(continuation)
        }
        continuation.onTermination = { [weak self] _ in
            let removed = self?.withStreams { streams, _ in streams.remove(id) }
            withExtendedLifetime(removed) {}
        }
        return stream
    }
}
