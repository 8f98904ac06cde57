/// What is known about reaching a target: Apple's `SCNetworkReachabilityFlags`,
/// with the same member names and bit values so that code and logs carry over.
///
/// On Linux the flags come from the kernel's own routing decision for the target
/// (an `RTM_GETROUTE` lookup, as `ip route get` does) and the state of the output
/// interface. The article "How Linux state maps to each flag" in the DocC catalog
/// gives the full table. ``connectionOnTraffic`` and ``connectionOnDemand`` are
/// never set on Linux (modern Apple systems do not set them either); they exist so
/// that ``NetworkStatus/init(flags:)`` can follow Apple's mapping exactly.
///
/// `Sendable`: a plain value.
public struct ReachabilityFlags: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The bits, with Apple's `kSCNetworkReachabilityFlags…` values.
    public let rawValue: UInt32

    /// Creates flags from their raw bit values (`kSCNetworkReachabilityFlags…`).
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The route goes over a link that may come and go: a VPN, tunnel or PPP
    /// interface, a cellular modem, or an interface still being brought up.
    public static let transientConnection = ReachabilityFlags(rawValue: 1 << 0)
    /// A packet for the target would leave this host now (or, with
    /// ``connectionRequired``, once the interface finishes coming up).
    public static let reachable = ReachabilityFlags(rawValue: 1 << 1)
    /// The route exists but the interface is not usable yet: IPv6 duplicate
    /// address detection is running, the link state is settling, or (with
    /// ``interventionRequired``) 802.1X/WPA authentication is pending.
    public static let connectionRequired = ReachabilityFlags(rawValue: 1 << 2)
    /// Never set on Linux.
    public static let connectionOnTraffic = ReachabilityFlags(rawValue: 1 << 3)
    /// The link waits for something a person or a supplicant must do: the
    /// interface is DORMANT (802.1X / WPA authentication pending).
    public static let interventionRequired = ReachabilityFlags(rawValue: 1 << 4)
    /// Never set on Linux.
    public static let connectionOnDemand = ReachabilityFlags(rawValue: 1 << 5)
    /// The target is one of this host's own addresses (loopback included).
    public static let isLocalAddress = ReachabilityFlags(rawValue: 1 << 16)
    /// The target is on a directly attached network: the route has no gateway.
    public static let isDirect = ReachabilityFlags(rawValue: 1 << 17)
    /// The route goes over a cellular (WWAN) interface.
    public static let isWWAN = ReachabilityFlags(rawValue: 1 << 18)

    /// Every flag in bit order, with its Apple name.
    package static let named: [(ReachabilityFlags, String)] = [
        (.transientConnection, "transientConnection"), (.reachable, "reachable"),
        (.connectionRequired, "connectionRequired"), (.connectionOnTraffic, "connectionOnTraffic"),
        (.interventionRequired, "interventionRequired"), (.connectionOnDemand, "connectionOnDemand"),
        (.isLocalAddress, "isLocalAddress"), (.isDirect, "isDirect"), (.isWWAN, "isWWAN"),
    ]

    /// The names of the flags that are set, in bit order, e.g. `["reachable", "isDirect"]`.
    public var names: [String] { Self.named.filter { contains($0.0) }.map(\.1) }

    /// The familiar letter string `W R c t i C D l d` of Apple's sample code and
    /// Reachability.swift, `-` for a clear bit: `"-R ------d"` is reachable + isDirect.
    public var description: String {
        func letter(_ flag: ReachabilityFlags, _ character: Character) -> Character {
            contains(flag) ? character : "-"
        }
        return String([
            letter(.isWWAN, "W"), letter(.reachable, "R"), " ",
            letter(.connectionRequired, "c"), letter(.transientConnection, "t"),
            letter(.interventionRequired, "i"), letter(.connectionOnTraffic, "C"),
            letter(.connectionOnDemand, "D"), letter(.isLocalAddress, "l"), letter(.isDirect, "d"),
        ])
    }
}
