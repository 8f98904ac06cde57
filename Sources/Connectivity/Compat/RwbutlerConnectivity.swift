// rwbutler/Connectivity's API on ``Connectivity``: its initializer, settable
// properties, getters, type names and notification, as thin layers over the core
// (`configuration`, `status`, the notifier). Code written for it compiles with
// `import Connectivity` unchanged; the differences on Linux are documented on each
// declaration and in docs/MIGRATING.md.
public import Foundation
import Reachability

extension Notification.Name {
    /// rwbutler/Connectivity's notification (`kNetworkConnectivityChangedNotification`):
    /// posted by a started ``Connectivity`` (the object) on its
    /// ``Connectivity/notificationQueue`` when its status changes, the first result
    /// included — as ``Connectivity/whenConnected`` and ``Connectivity/whenDisconnected``
    /// are called. ``connectivityDidChange`` is posted as well, also when only the
    /// verdict changes; both carry the ``ConnectivityResult`` in
    /// `userInfo[Connectivity.resultKey]`.
    public static let ConnectivityDidChange = Notification.Name("kNetworkConnectivityChangedNotification")

    /// rwbutler/Connectivity's other notification (`kNetworkReachabilityChangedNotification`,
    /// what its copy of Apple's Reachability posts): posted by a started
    /// ``Connectivity`` (the object; rwbutler's is its `Reachability`) on its
    /// ``Connectivity/notificationQueue`` when the path changes while its
    /// `framework` is `.systemConfiguration`, before the check the change starts —
    /// where rwbutler's watches SCNetworkReachability. Under `.network`, the default,
    /// rwbutler's watches `NWPathMonitor` and nothing posts it; here neither. Not
    /// posted for the first path after a start (SCNetworkReachability reports
    /// changes). Module Reachability's notification is `reachabilityChanged`, another name.
    public static let ReachabilityDidChange = Notification.Name("kNetworkReachabilityChangedNotification")
}

/// Which Apple framework rwbutler/Connectivity watches interfaces with
/// (`Connectivity.Framework`). On Linux the path always comes from the kernel
/// (rtnetlink, through `PathMonitor`); the framework decides how the status names
/// the link, as there (see `Connectivity.framework`).
///
/// `Sendable`: a plain enum.
public enum ConnectivityFramework: Int, Sendable, Hashable, CaseIterable {
    /// Apple's Network framework (`NWPathMonitor`).
    case network
    /// SystemConfiguration (`SCNetworkReachability`).
    case systemConfiguration
}

/// A percentage from 0 to 100, as rwbutler/Connectivity's `Connectivity.Percentage`:
/// values outside are clamped, and a share of nothing is 0 %.
///
/// ```swift
/// let threshold = Connectivity.Percentage(75.0)
/// let share = Connectivity.Percentage(UInt(3), outOf: UInt(4))   // 75 %
/// print(share >= threshold)                                     // true
/// ```
///
/// `Sendable`: a plain value.
public struct ConnectivityPercentage: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The percentage, from 0 to 100.
    public let value: Double

    /// `value`, clamped to 0...100 (NaN counts as 0).
    public init(_ value: Double) {
        self.value = value.isNaN ? 0 : min(100, max(0, value))
    }

    /// `value` out of `total` as a percentage; 0 when `total` is 0.
    public init(_ value: UInt, outOf total: UInt) {
        self.init(Double(value), outOf: Double(total))
    }

    /// `value` out of `total` as a percentage; 0 when `total` is not positive.
    public init(_ value: Double, outOf total: Double) {
        guard total > 0 else {
            self.init(0.0)
            return
        }
        self.init(value / total * 100)
    }

    /// Whether `lhs` is the smaller percentage.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.value < rhs.value }

    /// The value with a percent sign, e.g. `75.0 %`.
    public var description: String { "\(value) %" }
}

extension Connectivity {
    /// rwbutler's `startNotifier(queue:)`: ``start()`` without throwing, with
    /// deliveries on `queue` when one is given (it becomes ``notificationQueue``). A
    /// failure shows instead: ``status`` becomes notConnected, ``lastError`` says why,
    /// and ``whenDisconnected`` and the notifications run; ``isRunning`` stays
    /// false. A configuration that can't work doesn't stop it: it runs, and each
    /// check fails with ``lastError`` saying why, until the settings are put right.
    /// Unlike rwbutler's, `queue` defaults to ``notificationQueue``, not `.main`; and
    /// a second call while running does nothing (rwbutler's restarts).
    public func startNotifier(queue: DispatchQueue? = nil) {
        if let queue { notificationQueue = queue }
        do throws(ConnectivityError) {
            try start(validating: false)
        } catch {
            failStart(error)
        }
    }

    /// rwbutler's name of ``stop()``.
    public func stopNotifier() {
        stop()
    }

    /// rwbutler's name for ``ConnectivityFramework``.
    public typealias Framework = ConnectivityFramework
    /// rwbutler's name for ``ConnectivityPercentage``.
    public typealias Percentage = ConnectivityPercentage
    /// rwbutler's name for ``ConnectivityStatus``.
    public typealias Status = ConnectivityStatus
    /// rwbutler's name for ``ConnectivityResponseValidationMode``.
    public typealias ValidationMode = ConnectivityResponseValidationMode
    /// rwbutler's type of ``whenConnected``; `@Sendable` here: in Swift 6 mode a
    /// closure stored there can't capture non-`Sendable` state.
    public typealias NetworkConnected = @Sendable (Connectivity) -> Void
    /// rwbutler's type of ``whenDisconnected``; `@Sendable` as ``NetworkConnected``.
    public typealias NetworkDisconnected = @Sendable (Connectivity) -> Void

    /// rwbutler/Connectivity's process-wide setting: whether only HTTPS URLs are
    /// checked. Default true, as rwbutler's. While it is set, plain-HTTP URLs are
    /// dropped from `connectivityURLs` when set, and from a configuration's URLs by
    /// ``init(configuration:notificationQueue:)``; ``init(shouldUseHTTPS:)`` sets it.
    ///
    /// On Apple platforms turning it off sticks only where App Transport Security
    /// allows arbitrary loads; Linux has no such policy, so it sticks. Plain HTTP is
    /// what tells a captive portal apart (behind one, HTTPS only fails:
    /// WithoutInternet all the same, but the verdict is noInternet rather than
    /// captivePortal); ``ConnectivityConfiguration/recommended`` checks both.
    public static var isHTTPSOnly: Bool {
        get { httpsOnlyDefault.withLock { $0 } }
        set { httpsOnlyDefault.withLock { $0 = newValue } }
    }

    private static let httpsOnlyDefault = LockedValue(true)

    /// rwbutler's initializer, and `Connectivity()`: sets ``isHTTPSOnly``
    /// (process-wide) to `shouldUseHTTPS`, then checks rwbutler's URLs — Apple's two
    /// HTTPS success pages (``ConnectivityConfiguration/defaultConnectivityURLs``),
    /// or, without HTTPS, rwbutler's eight plain-HTTP ones — for `Success`, with
    /// rwbutler's instance defaults: a 50 % threshold, polling off (10 s once on,
    /// not only while offline), framework `.network` (the link named by its type,
    /// Ethernet included; rwbutler's since 6.1.0, though its README still says
    /// `.systemConfiguration`), 5 s request and resource timeouts (or the
    /// process-wide `urlSessionConfiguration` of module ConnectivityURLSession), and
    /// no check but at start, on path changes and when asked.
    ///
    /// Where rwbutler's fills its URL list before it sets ``isHTTPSOnly`` (so that
    /// its first `Connectivity(shouldUseHTTPS: false)` still checks the HTTPS pages),
    /// this one checks the list `shouldUseHTTPS` names.
    public convenience init(shouldUseHTTPS: Bool = true) {
        Connectivity.isHTTPSOnly = shouldUseHTTPS
        var configuration = ConnectivityConfiguration(
            connectivityURLs: Connectivity.defaultConnectivityURLs(shouldUseHTTPS: shouldUseHTTPS),
            pollingIsEnabled: false, pollWhileOfflineOnly: false)
        configuration.rwbutler.responseValidator = ConnectivityResponseContainsStringValidator()
        // rwbutler's instance reads the static urlSessionConfiguration; it sets nothing.
        self.init(
            configuration: Connectivity.withRwbutlerSessionDefaults(configuration), notificationQueue: nil,
            clock: ContinuousClock())
    }

    /// rwbutler's default URLs: Apple's two HTTPS success pages, or its eight
    /// plain-HTTP ones.
    static func defaultConnectivityURLs(shouldUseHTTPS: Bool) -> [URL] {
        guard !shouldUseHTTPS else { return ConnectivityConfiguration.defaultConnectivityURLs }
        return [
            "http://www.apple.com/library/test/success.html", "http://apple.com/library/test/success.html",
            "http://www.appleiphonecell.com/library/test/success.html",
            "http://www.itools.info/library/test/success.html", "http://www.ibook.info/library/test/success.html",
            "http://www.airport.us/library/test/success.html", "http://www.thinkdifferent.us/library/test/success.html",
            "http://captive.apple.com/hotspot-detect.html",
        ].map { URL(string: $0)! }
    }

    // MARK: What is checked

    /// rwbutler's list of URLs to check. Reading gives the URLs of the endpoints in
    /// use (HTTPS only with ``ConnectivityConfiguration/httpsOnly``). Setting replaces
    /// them: a URL already checked keeps its expectation (so appending to the list
    /// leaves the others alone), a new one is judged by ``validationMode``; while
    /// ``isHTTPSOnly`` is set, plain-HTTP URLs are dropped, as rwbutler's `didSet`
    /// drops them (but for endpoints of this package's own already checked, such as
    /// ``ConnectivityConfiguration/recommended``'s, which stay). An empty list can't
    /// work: checks then fail and ``lastError`` says why (rwbutler reports not
    /// connected).
    public var connectivityURLs: [URL] {
        get {
            let configuration = configuration
            return configuration.endpoints.filter { !configuration.httpsOnly || $0.isHTTPS }.map(\.url)
        }
        set {
            let httpsOnly = Connectivity.isHTTPSOnly
            updateConfiguration { configuration in
                let urls = configuration.rwbutler.droppingPlainHTTP(newValue, from: configuration.endpoints, httpsOnly)
                let (endpoints, urlSet) = configuration.rwbutler.endpoints(
                    for: urls, replacing: configuration.endpoints)
                configuration.endpoints = endpoints
                configuration.rwbutler.urlEndpoints = urlSet
            }
        }
    }

    /// The share of URLs that must pass for connected
    /// (``ConnectivityConfiguration/successThreshold``); default 50 %. As in
    /// rwbutler the rule is "passed share ≥ threshold", except that at least one
    /// URL must always pass (rwbutler's 0 % is connected with none), and that a list
    /// of both plain-HTTP and HTTPS URLs needs a pass over each scheme.
    public var successThreshold: Percentage {
        get { Percentage(configuration.successThreshold) }
        set { updateConfiguration { $0.successThreshold = newValue.value } }
    }

    /// How the answer of a URL set through ``connectivityURLs`` is judged; default
    /// ``ConnectivityResponseValidationMode/containsExpectedResponseString``. The
    /// default endpoints keep their own expectations. Setting it makes
    /// ``responseValidator`` the mode's validator (unless it is `.custom`), as
    /// rwbutler's does.
    public var validationMode: ValidationMode {
        get { configuration.rwbutler.validationMode }
        set { updateValidation { $0.validationMode = newValue } }
    }

    /// The text the contains and equals modes look for; default `"Success"`.
    public var expectedResponseString: String {
        get { configuration.rwbutler.expectedResponseString }
        set { updateValidation { $0.expectedResponseString = newValue } }
    }

    /// The pattern of the regular-expression mode; default
    /// ``ConnectivityResponseRegExValidator/defaultRegularExpression``.
    public var expectedResponseRegEx: String {
        get { configuration.rwbutler.expectedResponseRegEx }
        set { updateValidation { $0.expectedResponseRegEx = newValue } }
    }

    /// Changes one of rwbutler's validation settings; ``responseValidator`` then
    /// becomes the mode's validator, as rwbutler's does.
    private func updateValidation(_ change: (inout RwbutlerSettings) -> Void) {
        updateConfiguration {
            change(&$0.rwbutler)
            $0.rwbutler.validationChanged()
        }
    }

    /// The validator of the `.custom` mode (set it, then
    /// `validationMode = .custom`); reading it in another mode gives that mode's
    /// validator. See ``ConnectivityResponseValidator`` for the one change a
    /// validator written for Apple platforms needs.
    public var responseValidator: any ConnectivityResponseValidator {
        get { configuration.rwbutler.responseValidator }
        set { updateConfiguration { $0.rwbutler.responseValidator = newValue } }
    }

    /// Sent as `Authorization: Bearer …` to the URLs set through ``connectivityURLs``
    /// (an endpoint of your own carries its own headers), unless
    /// ``authorizationHeader`` is set.
    public var bearerToken: String? {
        get { configuration.rwbutler.bearerToken }
        set { updateConfiguration { $0.rwbutler.bearerToken = newValue } }
    }

    /// rwbutler's `authorizationHeader` (public since its 6.0): the whole value of the
    /// `Authorization` header sent to the URLs set through ``connectivityURLs``
    /// (`"Basic dXNlcjpwYXNz"`, a scheme of your own). It wins over ``bearerToken``
    /// when both are set, as rwbutler's requests have it (its doc comment says the
    /// reverse, its code this); nil: none.
    /// `ConnectivityConfiguration.configureAuthorizationHeader(with:)` sets it on a
    /// configuration.
    public var authorizationHeader: String? {
        get { configuration.rwbutler.authorizationHeader }
        set { updateConfiguration { $0.rwbutler.authorizationHeader = newValue } }
    }

    /// rwbutler's choice of Apple framework, which decides how ``status`` names the
    /// link (the path itself always comes from the kernel): `.network`, the default
    /// (rwbutler's since 6.1.0, for `Connectivity()` and a `ConnectivityConfiguration`
    /// alike), by the link's type as `NWPath` does (Wi-Fi, cellular, Ethernet, or
    /// plain `connected`/`notConnected` for others); `.systemConfiguration` as
    /// SCNetworkReachability does — cellular, or Wi-Fi for every other link,
    /// Ethernet and VPNs included, so ``isConnectedViaEthernet`` is never true.
    public var framework: Framework {
        get { configuration.rwbutler.framework }
        set { updateConfiguration { $0.rwbutler.framework = newValue } }
    }

    /// rwbutler's setting for checking when an iOS app becomes active: kept, and
    /// without effect (a Linux process never becomes active). Default true.
    public var checkWhenApplicationDidBecomeActive: Bool {
        get { configuration.rwbutler.checkWhenApplicationDidBecomeActive }
        set { updateConfiguration { $0.rwbutler.checkWhenApplicationDidBecomeActive = newValue } }
    }

    // MARK: When it checks

    /// Whether to check every ``pollingInterval`` seconds besides at start and on
    /// path changes (``ConnectivityConfiguration/pollingInterval`` set); default
    /// false for `Connectivity()`, true for a `ConnectivityConfiguration()`. Turning
    /// it on or off while running applies at once. Off, rwbutler's configurations
    /// check only at start, on path changes and when asked
    /// (``ConnectivityConfiguration/retriesWhileOffline`` off); this package's
    /// ``ConnectivityConfiguration/recommended`` also retries a failed check.
    public var isPollingEnabled: Bool {
        get { configuration.pollingInterval != nil }
        set {
            updateConfiguration {
                $0.pollingInterval = newValue ? Self.duration(seconds: $0.rwbutler.pollingInterval) : nil
            }
        }
    }

    /// The polling interval in seconds; default 10, kept while polling is off. A
    /// value that is not positive (or over a week) can't work: ``lastError`` says so.
    public var pollingInterval: Double {
        get {
            let configuration = configuration
            return configuration.pollingInterval?.secondsValue ?? configuration.rwbutler.pollingInterval
        }
        set {
            updateConfiguration {
                $0.rwbutler.pollingInterval = newValue
                if $0.pollingInterval != nil { $0.pollingInterval = Self.duration(seconds: newValue) }
            }
        }
    }

    /// With polling: poll only while not connected
    /// (``ConnectivityConfiguration/pollWhileOfflineOnly``); default false for
    /// `Connectivity()`, true for a `ConnectivityConfiguration()`, as rwbutler's.
    public var pollWhileOfflineOnly: Bool {
        get { configuration.pollWhileOfflineOnly }
        set { updateConfiguration { $0.pollWhileOfflineOnly = newValue } }
    }

    /// `seconds` as a duration for the configuration; one that can't work (not
    /// finite, not positive) becomes one the validation refuses, never a trap.
    static func duration(seconds: Double) -> Duration {
        guard seconds.isFinite, seconds > 0 else { return .zero }
        return seconds > 1e9 ? .seconds(Int64(1e9)) : .seconds(seconds)
    }

    // MARK: What it found

    /// Connected (validated) over Wi-Fi: ``status`` is ``ConnectivityStatus/connectedViaWiFi``
    /// (under `.systemConfiguration`, any link that is not cellular: see ``framework``).
    public var isConnectedViaWiFi: Bool { status == .connectedViaWiFi }
    /// Connected over a cellular modem: ``ConnectivityStatus/connectedViaCellular``.
    public var isConnectedViaCellular: Bool { status == .connectedViaCellular }
    /// Connected over Ethernet (or a link like it): ``ConnectivityStatus/connectedViaEthernet``;
    /// never under `.systemConfiguration`, as rwbutler's.
    public var isConnectedViaEthernet: Bool { status == .connectedViaEthernet }
    /// Wi-Fi is up, but the check failed: ``ConnectivityStatus/connectedViaWiFiWithoutInternet``.
    public var isConnectedViaWiFiWithoutInternet: Bool { status == .connectedViaWiFiWithoutInternet }
    /// The modem is up, but the check failed: ``ConnectivityStatus/connectedViaCellularWithoutInternet``.
    public var isConnectedViaCellularWithoutInternet: Bool { status == .connectedViaCellularWithoutInternet }
    /// Ethernet is up, but the check failed: ``ConnectivityStatus/connectedViaEthernetWithoutInternet``.
    public var isConnectedViaEthernetWithoutInternet: Bool { status == .connectedViaEthernetWithoutInternet }
}
