/// How good a wireless link is, in the buckets of Apple's `NWPath.LinkQuality`.
///
/// On Linux it comes from the Wi-Fi signal the kernel reports for the access point
/// (nl80211's station information: the averaged signal when the driver keeps one,
/// else the last frame's), bucketed by ``init(signalDBm:)``. A link whose signal is
/// not known (not Wi-Fi, not associated, a driver that does not report it, or a
/// kernel without nl80211) is ``unknown``.
///
/// `Sendable`: a plain value.
public enum LinkQuality: String, Sendable, Hashable, CaseIterable {
    /// No signal is known for the link.
    case unknown
    /// A weak signal: below −73 dBm; expect low rates, retries and drop-outs.
    case minimal
    /// A usable signal: −73 dBm up to (not including) −60 dBm.
    case moderate
    /// A strong signal: −60 dBm or more.
    case good

    /// The bucket of a Wi-Fi signal strength in dBm: ``good`` at −60 dBm or more,
    /// ``moderate`` at −73 dBm or more, else ``minimal``.
    ///
    /// The thresholds are Android's (AOSP `com.android.server.wifi.ScoringParams`,
    /// the 2.4 GHz column `rssi2 = {-83, -80, -73, -60}`: exit, entry, sufficient,
    /// good): Android calls −60 dBm a good signal and below −73 dBm an
    /// insufficient one. One band-independent rule is used; Android's 5 GHz column
    /// is 3 dB lower (−70 / −57 dBm), so a 5 GHz link is judged slightly strictly.
    /// A level of 0 dBm or more (a milliwatt received) is no plausible Wi-Fi
    /// reception but a driver's placeholder, so it is ``unknown``.
    ///
    /// - Parameter signalDBm: The received signal strength in dBm (negative).
    public init(signalDBm: Int) {
        switch signalDBm {
        case 0...: self = .unknown
        case Self.goodThreshold...: self = .good
        case Self.moderateThreshold...: self = .moderate
        default: self = .minimal
        }
    }

    /// The lowest signal, in dBm, that is ``good``.
    public static let goodThreshold = -60
    /// The lowest signal, in dBm, that is ``moderate``.
    public static let moderateThreshold = -73
}
