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

    /// rwbutler's initializer, with its defaults: Apple's URLs
    /// (``defaultConnectivityURLs``) judged by `responseValidator` (contains
    /// `Success`), a 50 % threshold, and polling every 10 s while not connected.
    /// `ConnectivityConfiguration()` is this package's ``init(endpoints:successThreshold:environment:)``
    /// (the vendors' endpoints, no polling); any argument of rwbutler's picks this one.
    ///
    /// Differences on Linux: `callbackQueue` defaults to the library's serial queue
    /// rather than `.main` (a queue you pass is used); `connectivityQueue` and
    /// `checkWhenApplicationDidBecomeActive` are accepted and ignored (probes run on
    /// the HTTP client's event loop, and a Linux process doesn't become active);
    /// `urlSessionConfiguration` is not taken here (URLSession lives in
    /// FoundationNetworking, which this module doesn't link): set ``probeTimeout``,
    /// or import module ConnectivityURLSession, which adds the initializers taking
    /// it and `URLRequest`s, and `configureURLSession(_:)`.
    /// `environment` is this package's: the namespace to watch and probe from.
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
        notificationQueue = callbackQueue
        self = configurePolling(
            isEnabled: pollingIsEnabled, interval: pollingInterval, offlineOnly: pollWhileOfflineOnly)
        self = configureResponseValidator(responseValidator)
        if let validationMode { self = configureValidationMode(with: validationMode) }
        self = configureConnectivity(urls: connectivityURLs)
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

    /// rwbutler's choice of Apple framework: kept, and ignored on Linux.
    public func configureFramework(_ framework: Connectivity.Framework) -> Self {
        var configuration = self
        configuration.rwbutler.framework = framework
        return configuration
    }

    /// Sends `Authorization: Bearer token` to the URLs (nil: none).
    public func configureBearerToken(with token: String?) -> Self {
        var configuration = self
        configuration.rwbutler.bearerToken = token
        return configuration
    }

    /// Sends `Authorization: value` to the URLs, in place of a bearer token (nil: none).
    public func configureAuthorizationHeader(with value: String?) -> Self {
        var configuration = self
        configuration.rwbutler.authorizationHeader = value
        return configuration
    }

    /// Accepted and ignored: a Linux process never becomes active.
    public func configureShouldCheckWhenApplicationDidBecomeActive(_ enabled: Bool) {}
}
