package import ReachabilitySystem

/// Hands a result from one thread to another that joins it.
package final class ResultBox<T: Sendable>: Sendable {
    private let value = LockedValue<Result<T, ReachabilityError>?>(nil)
    package init() {}
    package func set(_ result: Result<T, ReachabilityError>) { value.withLock { $0 = result } }
    package func get() throws(ReachabilityError) -> T {
        guard let result = value.withLock({ $0 }) else {
            throw ReachabilityError(.systemCall, "the worker thread ended without a result")
        }
        return try result.get()
    }
}

/// The package's one lock, defined with the system calls so that the fault plan
/// there uses it too.
package typealias LockedValue = ReachabilitySystem.LockedValue
