public import Glibc

/// A value behind a lock, shared by reference.
///
/// A pthread mutex rather than `Synchronization.Mutex`: on Linux, `Mutex` locks with
/// raw futex calls that ThreadSanitizer cannot see, so TSan reports every access it
/// protects as a race (a correct `Mutex`-guarded counter is reported), and the
/// suite must run clean under TSan. The lock is never held while user code runs.
///
/// `@unchecked Sendable`: every access to `value` holds `mutex`.
///
/// Public (this module is re-exported by none: only the package's modules see it) and
/// `withLock` `@inlinable`, because the compiler inlines and specializes only a public
/// body in another module; a `package` one runs unspecialized, with its generic
/// metadata and dynamic exclusivity checks, on every pass of the event path.
public final class LockedValue<Value: Sendable>: @unchecked Sendable {
    // The mutex pointer first: a zero-sized `value` would otherwise share its address.
    @usableFromInline let mutex: UnsafeMutablePointer<Glibc.pthread_mutex_t>
    @usableFromInline var value: Value

    /// A lock around `value`.
    public init(_ value: Value) {
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

    /// Runs `body` on the value with the lock held.
    @inlinable public func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        Glibc.pthread_mutex_lock(mutex)
        defer { Glibc.pthread_mutex_unlock(mutex) }
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
