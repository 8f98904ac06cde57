/// One answer for a target: its flags and the output interface the kernel chose.
///
/// This is what block observers and ``Reachability/updates`` receive: the state
/// that was delivered, not whatever is current when the callback reads it.
///
/// `Sendable`: a plain value.
public struct ReachabilityState: Sendable, Hashable, CustomStringConvertible {
    /// The flags.
    public var flags: ReachabilityFlags
    /// The output interface for the target, if there is a route.
    public var interface: NetworkInterface?

    /// Creates a state.
    public init(flags: ReachabilityFlags, interface: NetworkInterface?) {
        self.flags = flags
        self.interface = interface
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

    /// `"reachableViaWiFi -R ------- via eth0 (#2, wiredEthernet)"`.
    public var description: String {
        "\(status) \(flags)" + (interface.map { " via \($0)" } ?? "")
    }
}
