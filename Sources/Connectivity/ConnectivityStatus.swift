import Reachability

/// Whether the Internet is really there, and over what kind of link: the
/// statuses of rwbutler/Connectivity.
///
/// "Connected" means validated: at least ``ConnectivityConfiguration/successThreshold``
/// of the check endpoints gave the expected answer. "WithoutInternet" means the
/// link is up and has a route out, but the check failed (a captive portal, no
/// upstream, HTTPS blocked); ``ConnectivityResult/verdict`` says which.
///
/// The raw value is the case name (`"connectedViaWiFi"`), which the CLI prints;
/// rwbutler's is an `Int` (an `@objc` enum there).
///
/// `Sendable`: a plain enum.
public enum ConnectivityStatus: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// No check has finished yet.
    case determining
    /// Validated, over an interface that is not Wi-Fi, cellular or Ethernet (a
    /// VPN or tunnel, PPP, loopback).
    case connected
    /// Validated over Wi-Fi.
    case connectedViaWiFi
    /// Wi-Fi is up with a route out, but the check failed.
    case connectedViaWiFiWithoutInternet
    /// Validated over a cellular modem.
    case connectedViaCellular
    /// The cellular link is up with a route out, but the check failed.
    case connectedViaCellularWithoutInternet
    /// Validated over wired Ethernet (or a link that behaves like it: veth, bridge…).
    case connectedViaEthernet
    /// Ethernet is up with a route out, but the check failed.
    case connectedViaEthernetWithoutInternet
    /// No usable path out, or the check failed over a link of another kind.
    case notConnected

    /// True for the validated statuses: the Internet answered as expected.
    public var isConnected: Bool {
        switch self {
        case .connected, .connectedViaWiFi, .connectedViaCellular, .connectedViaEthernet: true
        default: false
        }
    }

    /// rwbutler/Connectivity's words for the status, e.g. `"Wi-Fi with Internet
    /// access"` for ``connectedViaWiFi``, `"No Connection"` for ``notConnected`` and
    /// `"Connectivity checks pending"` for ``determining``; the Ethernet ones follow
    /// the same pattern (`"Ethernet with Internet access"`). The case name, for
    /// machine-readable output, is `rawValue` (`"connectedViaWiFi"`).
    public var description: String {
        switch self {
        case .determining: "Connectivity checks pending"
        case .connected: "Internet access"
        case .connectedViaWiFi: "Wi-Fi with Internet access"
        case .connectedViaWiFiWithoutInternet: "Wi-Fi without Internet access"
        case .connectedViaCellular: "Cellular with Internet access"
        case .connectedViaCellularWithoutInternet: "Cellular without Internet access"
        case .connectedViaEthernet: "Ethernet with Internet access"
        case .connectedViaEthernetWithoutInternet: "Ethernet without Internet access"
        case .notConnected: "No Connection"
        }
    }

    /// The status for a check's outcome over an interface of `type`. Under
    /// ``ConnectivityFramework/systemConfiguration`` a link is cellular or Wi-Fi,
    /// as SCNetworkReachability tells them apart (Ethernet, VPNs and tunnels are
    /// Wi-Fi there); under ``ConnectivityFramework/network`` by its type, as
    /// `NWPath` tells them.
    static func make(
        validated: Bool, pathUsable: Bool, interfaceType: InterfaceType?, framework: ConnectivityFramework = .network
    ) -> ConnectivityStatus {
        guard pathUsable else { return .notConnected }
        if framework == .systemConfiguration {
            switch (interfaceType == .cellular, validated) {
            case (true, true): return .connectedViaCellular
            case (true, false): return .connectedViaCellularWithoutInternet
            case (false, true): return .connectedViaWiFi
            case (false, false): return .connectedViaWiFiWithoutInternet
            }
        }
        switch (interfaceType, validated) {
        case (.wifi, true): return .connectedViaWiFi
        case (.wifi, false): return .connectedViaWiFiWithoutInternet
        case (.cellular, true): return .connectedViaCellular
        case (.cellular, false): return .connectedViaCellularWithoutInternet
        case (.wiredEthernet, true): return .connectedViaEthernet
        case (.wiredEthernet, false): return .connectedViaEthernetWithoutInternet
        case (_, true): return .connected
        case (_, false): return .notConnected
        }
    }
}
