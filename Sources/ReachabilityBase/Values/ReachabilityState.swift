/// One answer for a target: its flags and the output interface the kernel chose.
///
/// This is what block observers and `Reachability.updates` receive: the state
/// that was delivered, not whatever is current when the callback reads it.
///
/// `Sendable`: a plain value.
public struct ReachabilityState: Sendable, Hashable, CustomStringConvertible {
    /// The flags.
    public var flags: ReachabilityFlags
    /// The output interface for the target, if there is a route.
    public var interface: NetworkInterface?
    /// True for a hostname's answer given before its first resolution: taken
    /// from the route the Internet target takes, not from the name's addresses.
    /// The notifier never delivers a provisional state; only the synchronous
    /// getters report one.
    public var isProvisional: Bool

    /// Creates a state.
    public init(flags: ReachabilityFlags, interface: NetworkInterface?, isProvisional: Bool = false) {
        self.flags = flags
        self.interface = interface
        self.isProvisional = isProvisional
    }

    /// Apple's status for these flags.
    public var status: NetworkStatus { NetworkStatus(flags: flags) }
    /// True unless the status is ``NetworkStatus/notReachable``.
    public var isReachable: Bool { status != .notReachable }
    /// True when the route exists but the interface is not usable yet.
    public var connectionRequired: Bool { flags.contains(.connectionRequired) }
    /// The medium of the output interface, if there is a route.
    public var interfaceType: InterfaceType? { interface?.type }

    /// No route, no interface.
    public static let unreachable = ReachabilityState(flags: [], interface: nil)

    /// `"reachableViaWiFi -R ------- via eth0 (#2, wiredEthernet)"`, with
    /// `" (provisional)"` appended for a provisional state.
    public var description: String {
        "\(status) \(flags)" + (interface.map { " via \($0)" } ?? "") + (isProvisional ? " (provisional)" : "")
    }
}
