// rwbutler/Connectivity's `ConnectivityConfiguration` API (5.2 and later): its
// initializer and the fluent `configure…` methods, on this package's configuration
// value. rwbutler's is a class whose methods change it and return it; here each
// returns a changed copy, which is what the chained calls use.
public import Dispatch
public import Foundation
public import Reachability

extension ConnectivityConfiguration {
    /// rwbutler's default URLs: Apple's two success pages over HTTPS, checked for
    /// `Success`.
    public static let defaultConnectivityURLs: [URL] = [
        URL(string: "https://www.apple.com/library/test/success.html")!,
        URL(string: "https://captive.apple.com/hotspot-detect.html")!,
    ]

    /// rwbutler's initializer, with its defaults: `ConnectivityConfiguration()` is
    /// rwbutler's configuration. Apple's two HTTPS success pages
    /// (``defaultConnectivityURLs``) judged by `responseValidator` (contains
    /// `Success`), a 50 % threshold, polling every 10 s while not connected, 5 s
    /// request and resource timeouts (``probeTimeout``, ``checkDeadline``), framework
    /// `.network`; each check decides on its own (``failuresToGoOffline`` 1) and no
    /// check runs but at start, on a path change, when the program asks and when
    /// polling says so (``retriesWhileOffline`` off). This package's own settings
    /// are ``recommended``.
    ///
    /// A plain-HTTP URL is checked only while `Connectivity.isHTTPSOnly` is off:
    /// `Connectivity(configuration:)` drops them otherwise, as rwbutler's does.
    ///
    /// Differences on Linux: `callbackQueue` defaults to the library's serial queue
    /// rather than `.main` (pass `.main` where a main loop runs); `connectivityQueue`
    /// is accepted and ignored (probes run on the HTTP client's event loop);
    /// `checkWhenApplicationDidBecomeActive` is kept and has no effect (a Linux
    /// process doesn't become active); `urlSessionConfiguration` is taken by the
    /// initializers of module ConnectivityURLSession (URLSession lives in
    /// FoundationNetworking, which this module doesn't link), as is
    /// `configureURLSession(_:)`. `environment` is this package's: the namespace to
    /// watch and probe from.
    public init(
        callbackQueue: DispatchQueue? = nil,
        checkWhenApplicationDidBecomeActive: Bool = true,
        connectivityQueue: DispatchQueue? = nil,
        connectivityURLs: [URL] = ConnectivityConfiguration.defaultConnectivityURLs,
        pollingInterval: Double = 10.0,
        pollingIsEnabled: Bool = true,
        pollWhileOfflineOnly: Bool = true,
        responseValidator: any ConnectivityResponseValidator = ConnectivityResponseStringValidator(
            validationMode: .containsExpectedResponseString, expectedResponse: "Success"),
        successThreshold: Connectivity.Percentage = Connectivity.Percentage(50.0),
        validationMode: Connectivity.ValidationMode? = nil,
        environment: NetworkEnvironment = .default
    ) {
        self.init(endpoints: [], successThreshold: successThreshold.value, environment: environment)
        rwbutler.callbackQueue = callbackQueue
        probeTimeout = .seconds(5)
        checkDeadline = .seconds(5)
        failuresToGoOffline = 1
        retriesWhileOffline = false
        rwbutler.checkWhenApplicationDidBecomeActive = checkWhenApplicationDidBecomeActive
        self = configurePolling(
            isEnabled: pollingIsEnabled, interval: pollingInterval, offlineOnly: pollWhileOfflineOnly)
        self = configureResponseValidator(responseValidator)
        if let validationMode { self = configureValidationMode(with: validationMode) }
        self = configureConnectivity(urls: connectivityURLs)
    }

    /// This configuration without the plain-HTTP URLs set through rwbutler's API
    /// when `httpsOnly` (rwbutler's `isHTTPSOnly`); other endpoints are kept.
    func droppingPlainHTTPURLs(_ httpsOnly: Bool) -> Self {
        guard httpsOnly, !rwbutler.urlEndpoints.isEmpty else { return self }
        let kept = Set(rwbutler.droppingPlainHTTP(endpoints.map(\.url), from: endpoints, httpsOnly))
        var configuration = self
        configuration.endpoints = endpoints.filter { kept.contains($0.url) }
        configuration.rwbutler.urlEndpoints = rwbutler.urlEndpoints.intersection(kept)
        return configuration
    }

    /// Polling: every `interval` seconds while `isEnabled`, only while not connected
    /// when `offlineOnly` (rwbutler's defaults: on, 10 s, offline only).
    public func configurePolling(isEnabled: Bool = true, interval: Double = 10.0, offlineOnly: Bool = true) -> Self {
        var configuration = self
        configuration.rwbutler.pollingInterval = interval
        configuration.pollingInterval = isEnabled ? Connectivity.duration(seconds: interval) : nil
        configuration.pollWhileOfflineOnly = offlineOnly
        return configuration
    }

    /// The URLs set through ``configureConnectivity(urls:)`` (or rwbutler's
    /// initializer) are judged by `validation` with `expected` (a pattern for
    /// `.matchesRegularExpression`). The vendors' default endpoints keep their own
    /// expectations.
    public func configureResponseValidation(
        _ validation: ConnectivityResponseStringValidator.ValidationMode, expected: String
    ) -> Self {
        var configuration = self
        switch validation {
        case .containsExpectedResponseString:
            configuration.rwbutler.validationMode = .containsExpectedResponseString
            configuration.rwbutler.expectedResponseString = expected
        case .equalsExpectedResponseString:
            configuration.rwbutler.validationMode = .equalsExpectedResponseString
            configuration.rwbutler.expectedResponseString = expected
        case .matchesRegularExpression:
            configuration.rwbutler.validationMode = .matchesRegularExpression
            configuration.rwbutler.expectedResponseRegEx = expected
        }
        configuration.rwbutler.responseValidator = ConnectivityResponseStringValidator(
            validationMode: validation, expectedResponse: expected)
        return configuration
    }

    /// The URLs set through ``configureConnectivity(urls:)`` are judged by
    /// `responseValidator` (a ``ConnectivityResponseStringValidator`` sets the
    /// matching mode and text instead).
    public func configureResponseValidator(_ responseValidator: any ConnectivityResponseValidator) -> Self {
        if let strings = responseValidator as? ConnectivityResponseStringValidator {
            return configureResponseValidation(strings.responseValidationMode, expected: strings.expectedResponse)
        }
        var configuration = self
        configuration.rwbutler.validationMode = .custom
        configuration.rwbutler.responseValidator = responseValidator
        return configuration
    }

    /// The validation mode of the URLs (rwbutler 6): with `.custom`, the validator
    /// of ``configureResponseValidator(_:)`` decides.
    public func configureValidationMode(with validationMode: Connectivity.ValidationMode) -> Self {
        var configuration = self
        configuration.rwbutler.validationMode = validationMode
        if validationMode != .custom { configuration.rwbutler.validationChanged() }
        return configuration
    }

    /// Checks `urls`, each judged by the configured validation (rwbutler 6); they
    /// replace the endpoints, an endpoint already checking one of them keeping its
    /// expectation.
    public func configureConnectivity(urls: [URL]) -> Self {
        var configuration = self
        let (endpoints, urlSet) = rwbutler.endpoints(for: urls, replacing: endpoints)
        configuration.endpoints = endpoints
        configuration.rwbutler.urlEndpoints = urlSet
        return configuration
    }

    /// rwbutler's choice of Apple framework, which decides how the status names the
    /// link: `.network` by its type (Wi-Fi, cellular, Ethernet, or plain
    /// `connected`), `.systemConfiguration` as SCNetworkReachability does (cellular,
    /// or Wi-Fi for every other link, Ethernet included). The path itself always
    /// comes from the kernel.
    public func configureFramework(_ framework: Connectivity.Framework) -> Self {
        var configuration = self
        configuration.rwbutler.framework = framework
        return configuration
    }

    /// Sends `Authorization: Bearer token` to the URLs (nil: none), unless an
    /// authorization header is configured (``configureAuthorizationHeader(with:)``).
    public func configureBearerToken(with token: String?) -> Self {
        var configuration = self
        configuration.rwbutler.bearerToken = token
        return configuration
    }

    /// Sends `Authorization: value` to the URLs, in place of a bearer token (nil:
    /// none); `Connectivity.authorizationHeader` reads and changes it on an instance.
    public func configureAuthorizationHeader(with value: String?) -> Self {
        var configuration = self
        configuration.rwbutler.authorizationHeader = value
        return configuration
    }

    /// Accepted and ignored: a Linux process never becomes active (and rwbutler's
    /// changes its configuration object in place, which a value can't do from a
    /// non-mutating method: pass `checkWhenApplicationDidBecomeActive:` to the
    /// initializer to keep the setting).
    public func configureShouldCheckWhenApplicationDidBecomeActive(_ enabled: Bool) {}
}
