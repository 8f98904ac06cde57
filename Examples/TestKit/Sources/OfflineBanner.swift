public import Reachability

/// An app's "You're offline" banner: shown while the Internet is unreachable, gone
/// when it comes back, and saying so when the app can't watch the network any more.
///
/// It takes the ``NetworkEnvironment`` to watch, so that its tests can give it a
/// simulated network's (ReachabilityTestKit) instead of the host's.
public final class OfflineBanner: Sendable {
    /// The text shown while the Internet is unreachable.
    public static let offline = "You're offline"
    /// The text shown when the network can no longer be watched.
    public static let unwatched = "Network status unavailable"

    private let reachability: Reachability

    /// Calls `onChange` on the library's notification queue with the banner's text
    /// (nil: hidden) when it starts and whenever it changes.
    public init(
        environment: NetworkEnvironment = .default, onChange: @escaping @Sendable (String?) -> Void
    ) throws(ReachabilityError) {
        reachability = try Reachability(environment: environment)
        reachability.whenReachable = { _ in onChange(nil) }
        reachability.whenUnreachable = { _ in onChange(Self.offline) }
        reachability.whenError = { _, error in
            if error.code == .namespace { onChange(Self.unwatched) }
        }
    }

    /// Starts watching.
    public func start() throws(ReachabilityError) {
        try reachability.startNotifier()
    }

    /// Stops watching.
    public func stop() {
        reachability.stopNotifier()
    }
}
