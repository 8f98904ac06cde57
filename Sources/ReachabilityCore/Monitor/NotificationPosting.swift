/// How the core posts its notifications without linking Foundation.
///
/// `ReachabilityCore` has no Foundation import, so that a program that uses only it
/// doesn't load Foundation (BENCHMARKS.md: 5–8 MB peak instead of 10–20). The
/// `Reachability` module, which re-exports this one and imports Foundation, installs
/// ``poster`` when it is linked into the process (a load-time constructor, before
/// `main`): from then on every delivery of an instance that posts also posts
/// `Notification.Name(name)` with the instance as `object` on its center
/// (`NotificationCenter.default` when the center is nil). Without that module
/// nothing is posted, and nothing could observe it.
package enum NotificationPosting {
    /// Posts `name` with `object` on `center` (nil: the default center).
    package typealias Poster =
        @Sendable (_ name: String, _ object: any AnyObject & Sendable, _ center: (any AnyObject & Sendable)?) -> Void

    /// The poster in a class, never a bare closure behind the lock: `withLock` hands
    /// its value `inout`, and a function value read through a generic `inout` is
    /// reabstracted and written back, two thunks deeper on every read. Read on every
    /// delivery, the stored closure grew without bound until a call overflowed the
    /// stack (a signal 11 in the suite's concurrency test).
    private final class Box: Sendable {
        let post: Poster
        init(_ post: @escaping Poster) { self.post = post }
    }

    private static let installed = LockedValue<Box?>(nil)

    /// The installed poster; nil while the `Reachability` module isn't linked.
    package static var poster: Poster? {
        get { installed.withLock { $0 }?.post }
        set { installed.withLock { $0 = newValue.map(Box.init) } }
    }

    /// The name `Notification.Name.reachabilityChanged` stands for.
    package static let reachabilityChanged = "reachabilityChanged"
}
