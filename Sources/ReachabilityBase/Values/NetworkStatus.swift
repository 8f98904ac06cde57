/// Apple's three-way answer: not reachable, reachable over a non-cellular link
/// ("WiFi"), or reachable over cellular ("WWAN").
///
/// As on Apple systems, ``reachableViaWiFi`` means "not cellular": wired Ethernet,
/// Wi-Fi, a VPN and loopback all map to it. The real medium is reported separately
/// by `Reachability.interfaceType`.
///
/// `Sendable`: a plain enum.
public enum NetworkStatus: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// No packet for the target can leave this host now.
    case notReachable
    /// Reachable over a link that is not cellular.
    case reachableViaWiFi
    /// Reachable over a cellular (WWAN) link.
    case reachableViaWWAN

    /// Maps flags exactly as Apple's `networkStatusForFlags:` does:
    ///
    ///     if !reachable                                   → notReachable
    ///     status = notReachable
    ///     if !connectionRequired                          → status = reachableViaWiFi
    ///     if (onDemand || onTraffic) && !intervention     → status = reachableViaWiFi
    ///     if isWWAN                                       → status = reachableViaWWAN
    ///
    /// So `isWWAN` alone is ``notReachable``, and reachable + connectionRequired +
    /// isWWAN is ``reachableViaWWAN`` (as in Apple's sample and Reachability.swift).
    public init(flags: ReachabilityFlags) {
        guard flags.contains(.reachable) else {
            self = .notReachable
            return
        }
        var status = NetworkStatus.notReachable
        if !flags.contains(.connectionRequired) {
            status = .reachableViaWiFi
        }
        if !flags.isDisjoint(with: [.connectionOnDemand, .connectionOnTraffic])
            && !flags.contains(.interventionRequired)
        {
            status = .reachableViaWiFi
        }
        if flags.contains(.isWWAN) {
            status = .reachableViaWWAN
        }
        self = status
    }

    /// Apple's case name, e.g. `"reachableViaWiFi"`.
    public var description: String { rawValue }
}
