// DTFoundation's DTReachability (Core/Source/DTReachability/DTReachability.h, 1.6 and
// later), over the core `Reachability`, with the names Swift gives its Objective-C
// API. Code written against it compiles with `import DTFoundation` changed to
// `import ReachabilityCompat`.
public import Dispatch
public import Reachability

/// The block a ``DTReachability`` observer is: called with the reachability
/// information of the monitored host.
///
/// `@Sendable`: it runs on the instance's notification queue. Swift imports
/// DTFoundation's Objective-C block as a plain closure, so a block that captures
/// main-actor or non-Sendable state compiles on Apple platforms; here it compiles
/// in Swift 5 mode and is an error in Swift 6 mode (pass `notificationQueue: .main`
/// and use `MainActor.assumeIsolated`, or hop with `DispatchQueue.main.async`).
public typealias DTReachabilityObserverBlock = @Sendable (DTReachabilityInformation) -> Void

/// What a ``DTReachability`` observer is called with: the flags of the monitored
/// host (DTFoundation's `DTReachabilityInformation`).
///
/// `Sendable`: immutable.
public final class DTReachabilityInformation: Sendable, CustomStringConvertible {
    /// The raw reachability flags.
    public let reachabilityFlags: SCNetworkReachabilityFlags

    /// Information for these flags (DTFoundation's is made only by DTReachability).
    public init(reachabilityFlags: SCNetworkReachabilityFlags) {
        self.reachabilityFlags = reachabilityFlags
    }

    /// Whether the host is reachable over the Internet: the flags say reachable
    /// and no connection is required first. (A method, as Swift imports
    /// DTFoundation's `-isReachable`.)
    public func isReachable() -> Bool {
        reachabilityFlags.contains(.reachable) && !reachabilityFlags.contains(.connectionRequired)
    }

    /// Whether the host is reachable (``isReachable()``) over a cellular data
    /// connection. DTFoundation has it on iOS only; Linux has modems, so here too.
    public func isWWAN() -> Bool {
        isReachable() && reachabilityFlags.contains(.isWWAN)
    }

    /// The flags' letter string, e.g. `"-R -------"`.
    public var description: String { reachabilityFlags.description }
}

/// DTFoundation's block-based reachability observation of a host (by default
/// `apple.com`): every observer block is called once with the current
/// information right after it is added, then each time the flags change.
///
/// ```swift
/// let observer = DTReachability.default().addReachabilityObserver { information in
///     print(information.isReachable() ? "Reachable" : "Not Reachable")
/// }
/// // later
/// DTReachability.default().removeReachabilityObserver(observer)
/// ```
///
/// An instance watches only while it has observers: its first observer starts the
/// notifier, removing its last stops it.
///
/// The Swift names of the Objective-C API: `+defaultReachability` is
/// ``default()``, `-initWithHostname:` is ``init(hostname:environment:notificationQueue:)``,
/// `-addReachabilityObserverWithBlock:` is `addReachabilityObserver(_:)`,
/// `-removeReachabilityObserver:` is `removeReachabilityObserver(_:)`,
/// `-setHostname:` is ``setHostname(_:)``. The selector spellings
/// ``defaultReachability()`` and `addReachabilityObserverWithBlock(_:)` work too.
///
/// On Linux:
/// - blocks run on the library's serial queue unless a queue is given
///   (DTFoundation calls them on the main run loop); the first call comes
///   asynchronously, not from inside `addReachabilityObserver` (that would wait
///   for DNS), and for a hostname waits for its first resolution;
/// - a block is called when the flags change, not when only the output interface
///   does;
/// - a hostname that is not valid (or an `environment` that can't be used) is
///   logged to standard error when the first observer is added, as DTFoundation
///   logs it; its observers are then never called, and ``lastError`` says why;
/// - there is no background/foreground handling (DTFoundation stops watching while
///   an iOS app is in the background).
///
/// `Sendable`: all mutable state is behind a lock.
public final class DTReachability: Sendable {
    /// The host DTFoundation watches when given none.
    static let defaultHostname = "apple.com"

    private static let shared = DTReachability()

    /// The shared instance, watching `apple.com` (Swift's name for
    /// `+defaultReachability`). Use it rather than instances of your own: each
    /// instance keeps its own table of observers.
    public static func `default`() -> DTReachability { shared }

    /// The shared instance; the Objective-C selector's spelling of ``default()``.
    public static func defaultReachability() -> DTReachability { shared }

    private struct Observer: Sendable {
        let token: DTReachabilityObservation
        let block: DTReachabilityObserverBlock
        var observation: ReachabilityObservation?
    }

    private struct State: Sendable {
        var hostname: String
        /// Nil when the hostname or the environment can't be used.
        var reachability: Reachability?
        var error: ReachabilityError?
        var observers: [ObjectIdentifier: Observer] = [:]
    }

    private let state: LockedValue<State>
    /// The namespace and sysfs tree this instance watches.
    public let environment: NetworkEnvironment
    private let notificationQueue: DispatchQueue?

    /// An instance watching `apple.com`, DTFoundation's default host.
    public convenience init() {
        self.init(hostname: Self.defaultHostname)
    }

    /// An instance watching `hostname` (an IP address literal works too) in
    /// `environment`, calling its observers on `notificationQueue` (default: the
    /// library's serial queue; DTFoundation's: the main run loop).
    public init(hostname: String, environment: NetworkEnvironment = .default, notificationQueue: DispatchQueue? = nil) {
        self.environment = environment
        self.notificationQueue = notificationQueue
        var initial = State(hostname: hostname)
        (initial.reachability, initial.error) = Self.makeReachability(hostname, environment, notificationQueue)
        state = LockedValue(initial)
    }

    private static func makeReachability(
        _ hostname: String, _ environment: NetworkEnvironment, _ queue: DispatchQueue?
    ) -> (Reachability?, ReachabilityError?) {
        do {
            return (try Reachability(hostname: hostname, environment: environment, notificationQueue: queue), nil)
        } catch {
            return (nil, error)
        }
    }

    /// The host being watched.
    public var hostname: String { state.withLock { $0.hostname } }

    /// Why this instance can't watch its host, if it can't: the hostname is not
    /// valid, or the environment can't be used, or the notifier failed to start
    /// (then tried again when the next first observer is added).
    public var lastError: ReachabilityError? {
        state.withLock { $0.error ?? $0.reachability?.lastError }
    }

    /// The core instance watching the host (nil when it can't be made).
    var reachability: Reachability? { state.withLock { $0.reachability } }

    // MARK: Observers

    /// Adds a block that is called once with the current information, then every
    /// time the flags change. The first observer starts watching. Keep the
    /// returned token to pass to `removeReachabilityObserver(_:)`.
    /// (`-addReachabilityObserverWithBlock:`.)
    @discardableResult
    public func addReachabilityObserver(_ observer: @escaping DTReachabilityObserverBlock)
        -> DTReachabilityObservation
    {
        let token = DTReachabilityObservation()
        state.withLock { state in
            if state.observers.isEmpty { start(&state) }
            state.observers[ObjectIdentifier(token)] = Observer(
                token: token, block: observer, observation: Self.attach(observer, to: state.reachability))
        }
        return token
    }

    /// The Objective-C selector's spelling of `addReachabilityObserver(_:)`.
    @discardableResult
    public func addReachabilityObserverWithBlock(_ observer: @escaping DTReachabilityObserverBlock)
        -> DTReachabilityObservation
    {
        addReachabilityObserver(observer)
    }

    /// Removes an observer: `observer` is the token `addReachabilityObserver(_:)`
    /// returned; anything else is ignored. Removing the last observer stops
    /// watching. A call of the block that has already begun may still finish.
    public func removeReachabilityObserver(_ observer: Any) {
        guard let token = observer as? DTReachabilityObservation else { return }
        let removed = state.withLock { state -> Observer? in
            guard let removed = state.observers.removeValue(forKey: ObjectIdentifier(token)) else { return nil }
            removed.observation?.remove()
            if state.observers.isEmpty { state.reachability?.stop() }
            return removed
        }
        // The block is released here, after unlocking.
        withExtendedLifetime(removed) {}
    }

    /// Watches `hostname` instead: the observers are called with its information
    /// from now on (first with its current information). Setting the same name does
    /// nothing.
    public func setHostname(_ hostname: String) {
        guard hostname != self.hostname else { return }
        let (reachability, error) = Self.makeReachability(hostname, environment, notificationQueue)
        let old = state.withLock { state -> (Reachability?, [Observer]) in
            guard hostname != state.hostname else { return (reachability, []) }
            let old = state.reachability
            let observers = Array(state.observers.values)
            for observer in observers { observer.observation?.remove() }
            old?.stop()
            state.hostname = hostname
            state.reachability = reachability
            state.error = error
            if !state.observers.isEmpty { start(&state) }
            for (key, observer) in state.observers {
                state.observers[key]?.observation = Self.attach(observer.block, to: reachability)
            }
            return (old, observers)
        }
        withExtendedLifetime(old) {}
    }

    /// Starts the notifier for the first observer; a failure is logged, as
    /// DTFoundation logs it, and kept in `error`.
    private func start(_ state: inout State) {
        guard let reachability = state.reachability else {
            let reason = state.error.map { ": \($0)" } ?? ""
            logToStandardError("DTReachability: no reachability can be created for hostname \(state.hostname)\(reason)")
            return
        }
        do {
            try reachability.start()
            state.error = nil
        } catch {
            state.error = error
            logToStandardError("DTReachability: could not start watching \(state.hostname): \(error)")
        }
    }

    /// Subscribes `block` to the core instance's states, calling it only when the
    /// flags differ from the ones it was last called with.
    private static func attach(
        _ block: @escaping DTReachabilityObserverBlock, to reachability: Reachability?
    ) -> ReachabilityObservation? {
        let last = LockedValue<SCNetworkReachabilityFlags?>(nil)
        return reachability?.addObserver { state in
            let changed = last.withLock { last -> Bool in
                defer { last = state.flags }
                return last != state.flags
            }
            if changed { block(DTReachabilityInformation(reachabilityFlags: state.flags)) }
        }
    }

    // MARK: Class methods (deprecated in DTFoundation)

    /// Adds an observer to the shared instance (``default()``).
    @available(*, deprecated, message: "use addReachabilityObserver on DTReachability.default")
    @discardableResult
    public static func addReachabilityObserver(_ observer: @escaping DTReachabilityObserverBlock)
        -> DTReachabilityObservation
    {
        shared.addReachabilityObserver(observer)
    }

    /// The Objective-C selector's spelling of the deprecated class method
    /// `addReachabilityObserver(_:)`.
    @available(*, deprecated, message: "use addReachabilityObserver on DTReachability.default")
    @discardableResult
    public static func addReachabilityObserverWithBlock(_ observer: @escaping DTReachabilityObserverBlock)
        -> DTReachabilityObservation
    {
        shared.addReachabilityObserver(observer)
    }

    /// Removes an observer from the shared instance (``default()``).
    @available(*, deprecated, message: "use removeReachabilityObserver on DTReachability.default")
    public static func removeReachabilityObserver(_ observer: Any) {
        shared.removeReachabilityObserver(observer)
    }
}

/// The opaque reference `DTReachability.addReachabilityObserver(_:)` returns
/// (DTFoundation returns the block as `id`, which Swift sees as `Any`): pass it to
/// `DTReachability.removeReachabilityObserver(_:)`.
///
/// `Sendable`: it has no state; it is compared by identity.
public final class DTReachabilityObservation: Sendable, Hashable {
    init() {}

    /// Two tokens are equal when they are the same token.
    public static func == (lhs: DTReachabilityObservation, rhs: DTReachabilityObservation) -> Bool {
        lhs === rhs
    }

    /// Hashes the token's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}
