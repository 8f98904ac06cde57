import Glibc

/// A value behind a lock, shared by reference.
///
/// A pthread mutex rather than `Synchronization.Mutex`: on Linux, `Mutex` locks with
/// raw futex calls that ThreadSanitizer cannot see, so TSan reports every access it
/// protects as a race (a correct `Mutex`-guarded counter is reported), and the
/// suite must run clean under TSan. The lock is never held while user code runs.
///
/// `@unchecked Sendable`: every access to `value` holds `mutex`.
package final class LockedValue<Value: Sendable>: @unchecked Sendable {
    // The mutex pointer first: a zero-sized `value` would otherwise share its address.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        self.value = value
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

extension LockedValue {
    /// Replaces one stored value (a callback, a handler) under the lock and releases
    /// the old one after unlocking: the old closure may hold the last reference to
    /// the owner, whose deinit takes this lock. The package's one closure swap.
    package func replace<Member: Sendable>(_ keyPath: WritableKeyPath<Value, Member>, with member: Member) {
        let old = withLock { value -> Member in
            defer { value[keyPath: keyPath] = member }
            return value[keyPath: keyPath]
        }
        withExtendedLifetime(old) {}
    }
}
