// rwbutler/Connectivity's URLSession-typed API (`configureURLSession(_:)`,
// `urlSessionConfiguration`, `connectivityURLRequests`,
// `configureConnectivity(urlRequests:)`, the initializers taking them) over module
// Connectivity. A module of its own because on Linux `URLSessionConfiguration` and
// `URLRequest` live in FoundationNetworking, which costs every program linking it
// dozens of shared libraries loaded at start-up: module Connectivity (and the
// `reachability` CLI) stays without it. rwbutler code using this API changes
// `import Connectivity` to `import ConnectivityURLSession` (and adds
// `import FoundationNetworking` where it names those types itself, as any Linux
// port does). What has a meaning is mapped; the rest is ignored, as documented on
// each declaration.
@_exported public import Connectivity
public import Dispatch
public import Foundation
public import Reachability

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

extension ConnectivityConfiguration {
    /// rwbutler's default session configuration: a 5 s request and resource timeout,
    /// caches ignored. A new value at each read (rwbutler shares one instance).
    public static var defaultURLSessionConfiguration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.requestCachePolicy = .reloadIgnoringCacheData
        configuration.urlCache = nil
        configuration.timeoutIntervalForRequest = 5.0
        configuration.timeoutIntervalForResource = 5.0
        return configuration
    }

    /// rwbutler's default requests (6.1 and later): `GET` requests of Apple's two
    /// success pages over HTTPS (`defaultConnectivityURLs`).
    public static let defaultConnectivityURLRequests: [URLRequest] = defaultConnectivityURLs.map {
        URLRequest(url: $0)
    }

    /// rwbutler's initializer (5.2 to 6.0) with its `urlSessionConfiguration`: the
    /// rwbutler initializer of module Connectivity, then
    /// ``configureURLSession(_:)`` (what the session configuration means here is
    /// documented there). `callbackQueue` defaults to the library's serial queue,
    /// not `.main`; `connectivityQueue` and `checkWhenApplicationDidBecomeActive` are
    /// ignored; `environment` is this package's (the namespace to watch and probe from).
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
        urlSessionConfiguration: URLSessionConfiguration,
        validationMode: Connectivity.ValidationMode? = nil,
        environment: NetworkEnvironment = .default
    ) {
        self.init(
            callbackQueue: callbackQueue, checkWhenApplicationDidBecomeActive: checkWhenApplicationDidBecomeActive,
            connectivityQueue: connectivityQueue, connectivityURLs: connectivityURLs, pollingInterval: pollingInterval,
            pollingIsEnabled: pollingIsEnabled, pollWhileOfflineOnly: pollWhileOfflineOnly,
            responseValidator: responseValidator, successThreshold: successThreshold, validationMode: validationMode,
            environment: environment)
        self = configureURLSession(urlSessionConfiguration)
    }

    /// rwbutler's initializer (6.1 and later), which takes `URLRequest`s: as the
    /// initializer above, the requests set as ``configureConnectivity(urlRequests:)``
    /// sets them. Without `urlSessionConfiguration`, rwbutler's default
    /// (``defaultURLSessionConfiguration``: 5 s timeouts, which the configuration
    /// already has); with one, that one.
    ///
    /// `connectivityURLRequests` has no default here (rwbutler's is
    /// ``defaultConnectivityURLRequests``): a call that doesn't pass it is one of the
    /// initializers taking URLs, which check the same pages.
    public init(
        callbackQueue: DispatchQueue? = nil,
        checkWhenApplicationDidBecomeActive: Bool = true,
        connectivityQueue: DispatchQueue? = nil,
        connectivityURLRequests: [URLRequest],
        pollingInterval: Double = 10.0,
        pollingIsEnabled: Bool = true,
        pollWhileOfflineOnly: Bool = true,
        responseValidator: any ConnectivityResponseValidator = ConnectivityResponseStringValidator(
            validationMode: .containsExpectedResponseString, expectedResponse: "Success"),
        successThreshold: Connectivity.Percentage = Connectivity.Percentage(50.0),
        urlSessionConfiguration: URLSessionConfiguration? = nil,
        validationMode: Connectivity.ValidationMode? = nil,
        environment: NetworkEnvironment = .default
    ) {
        self.init(
            callbackQueue: callbackQueue, checkWhenApplicationDidBecomeActive: checkWhenApplicationDidBecomeActive,
            connectivityQueue: connectivityQueue, connectivityURLs: [], pollingInterval: pollingInterval,
            pollingIsEnabled: pollingIsEnabled, pollWhileOfflineOnly: pollWhileOfflineOnly,
            responseValidator: responseValidator, successThreshold: successThreshold, validationMode: validationMode,
            environment: environment)
        if let urlSessionConfiguration { self = configureURLSession(urlSessionConfiguration) }
        self = configureConnectivity(urlRequests: connectivityURLRequests)
    }

    /// Applies what a session configuration means for the probes:
    ///
    /// - `timeoutIntervalForRequest` becomes `probeTimeout`, and
    ///   `timeoutIntervalForResource` `checkDeadline` (the whole check, retries
    ///   included). A value that is not finite or not positive is ignored (the
    ///   setting keeps its value); one over a week, the limit of both, counts as a week.
    /// - `httpAdditionalHeaders` (`String` keys; values as text) are sent to the URLs
    ///   set through rwbutler's API (`configureConnectivity(urls:)`,
    ///   ``configureConnectivity(urlRequests:)``, `connectivityURLs`,
    ///   `connectivityURLRequests`), replacing those of an earlier session
    ///   configuration; a request's own header and the Authorization header of a
    ///   bearer token win over one of the same name. The vendors' default endpoints
    ///   get none.
    /// - Everything else is ignored: caches and `requestCachePolicy` (probes always
    ///   ask for a fresh answer), cookies (`httpShouldSetCookies`, the cookie
    ///   storage and policy), credentials, proxies, `allowsCellularAccess`,
    ///   `waitsForConnectivity`, connection limits, TLS versions, protocol classes.
    ///
    /// `Connectivity(configuration:)` then makes these settings the process-wide
    /// `Connectivity.urlSessionConfiguration`, as rwbutler's does.
    ///
    /// Returns a changed copy, as the other `configure…` methods here (rwbutler's
    /// changes the configuration object and returns it).
    public func configureURLSession(_ urlSessionConfiguration: URLSessionConfiguration) -> ConnectivityConfiguration {
        var configuration = self
        if let timeout = Self.duration(urlSessionConfiguration.timeoutIntervalForRequest) {
            configuration.probeTimeout = timeout
        }
        if let deadline = Self.duration(urlSessionConfiguration.timeoutIntervalForResource) {
            configuration.checkDeadline = deadline
        }
        var headers: [String: String] = [:]
        for (key, value) in urlSessionConfiguration.httpAdditionalHeaders ?? [:] {
            guard let name = key.base as? String else { continue }
            headers[name] = value as? String ?? String(describing: value)
        }
        configuration.rwbutlerSessionHeaders = headers
        return configuration
    }

    /// Checks `urlRequests` (rwbutler 6.1): each request's URL, with its HTTP method
    /// and headers, judged by the configured validation as a URL of
    /// `configureConnectivity(urls:)` (a plain `GET` of a URL already checked
    /// keeps that endpoint). A request without a URL is left out; for a URL given
    /// twice the last request counts. The rest of a `URLRequest` is ignored: its
    /// body, `timeoutInterval` (`probeTimeout` applies), cache policy, cookie and
    /// cellular settings.
    public func configureConnectivity(urlRequests: [URLRequest]) -> ConnectivityConfiguration {
        var configuration = self
        configuration.setRwbutlerRequests(urlRequests.compactMap(Self.request))
        return configuration
    }

    /// A session configuration showing ``probeTimeout``, ``checkDeadline`` and the
    /// session headers, over rwbutler's defaults.
    var urlSessionConfiguration: URLSessionConfiguration {
        let session = Self.defaultURLSessionConfiguration
        session.timeoutIntervalForRequest = probeTimeout.secondsValue
        session.timeoutIntervalForResource = checkDeadline.secondsValue
        let headers = rwbutlerSessionHeaders
        session.httpAdditionalHeaders = headers.isEmpty ? nil : headers
        return session
    }

    /// `seconds` as a setting: nil when not finite or not positive, at most a week.
    static func duration(_ seconds: TimeInterval) -> Duration? {
        guard seconds.isFinite, seconds > 0 else { return nil }
        return .seconds(min(seconds, 7 * 86_400))
    }

    /// A `URLRequest` as this package keeps it; nil without a URL.
    static func request(_ request: URLRequest) -> RwbutlerRequest? {
        guard let url = request.url else { return nil }
        return RwbutlerRequest(
            url: url, method: request.httpMethod ?? "GET", headers: request.allHTTPHeaderFields ?? [:])
    }
}

extension Connectivity {
    /// The session configuration of this instance's probes, as rwbutler's
    /// `urlSessionConfiguration`: reading it gives one with `ConnectivityConfiguration.probeTimeout`
    /// as `timeoutIntervalForRequest`, `ConnectivityConfiguration.checkDeadline` as
    /// `timeoutIntervalForResource` and the session headers as
    /// `httpAdditionalHeaders` (over rwbutler's defaults); setting one applies it as
    /// `ConnectivityConfiguration.configureURLSession(_:)` does, at the next check.
    ///
    /// rwbutler's is a static property, shared by every instance; here the static
    /// one is the default of the instances made afterwards, and this one is the
    /// instance's own. Changing the returned object changes nothing until it is set
    /// back.
    public var urlSessionConfiguration: URLSessionConfiguration {
        get { configuration.urlSessionConfiguration }
        set { updateRwbutlerConfiguration { $0 = $0.configureURLSession(newValue) } }
    }

    /// rwbutler's process-wide session configuration: setting it makes the
    /// `Connectivity()` and `Connectivity(shouldUseHTTPS:)` made afterwards start with
    /// it, applied as `ConnectivityConfiguration.configureURLSession(_:)` does.
    /// `Connectivity(configuration:)` sets it, as rwbutler's does, to the
    /// configuration's settings (rwbutler's defaults unless the configuration was
    /// given a session configuration) when the configuration checks rwbutler's URLs;
    /// that instance has the configuration's. Instances made before keep theirs (set
    /// theirs with the instance's `urlSessionConfiguration`), where rwbutler's read
    /// it at each check. Reading it gives rwbutler's defaults with it applied.
    public static var urlSessionConfiguration: URLSessionConfiguration {
        get { withRwbutlerSessionDefaults(ConnectivityConfiguration()).urlSessionConfiguration }
        set {
            // Applied once, now: only the values that came out are kept (a
            // URLSessionConfiguration is not Sendable).
            let applied = ConnectivityConfiguration().configureURLSession(newValue)
            rwbutlerSessionDefaults.withLock {
                $0 = RwbutlerSessionDefaults(
                    probeTimeout: applied.probeTimeout, checkDeadline: applied.checkDeadline,
                    headers: applied.rwbutlerSessionHeaders)
            }
        }
    }

    /// rwbutler's `responseValidator`, typed with its protocol (this module's
    /// ``ConnectivityResponseValidator``), so that what rwbutler code does with it
    /// compiles: `let validator: ConnectivityResponseValidator =
    /// connectivity.responseValidator`, `connectivity.responseValidator = MyValidator()`.
    /// It is module Connectivity's property of that name, which this one shadows: the
    /// validator of the `.custom` mode (set it, then `validationMode = .custom`);
    /// reading it in another mode gives that mode's validator, as rwbutler's does.
    ///
    /// A validator of module Connectivity's protocol alone (`ProbeResponseValidator`:
    /// one set where only Connectivity is imported, or through
    /// `configureResponseValidator(_:)`) is read back wrapped, so that it answers
    /// rwbutler's requirement (`===` and `is` then see the wrapper; setting the
    /// wrapper back sets the validator it wraps). To set one here, declare its
    /// conformance to ``ConnectivityResponseValidator`` too: it needs nothing else.
    public var responseValidator: any ConnectivityResponseValidator {
        get {
            let validator = probeResponseValidator
            return validator as? any ConnectivityResponseValidator ?? ProbeValidatorAdapter(validator)
        }
        set {
            probeResponseValidator = (newValue as? ProbeValidatorAdapter)?.validator ?? newValue
        }
    }

    /// The requests checked (rwbutler 6.1): reading gives one per endpoint in use,
    /// those set through rwbutler's API with the method and headers they were set
    /// with (not the Authorization header of `bearerToken`, added when sent).
    /// Setting replaces them as `connectivityURLs` does: each request's URL, method
    /// and headers, judged by `validationMode` (a plain `GET` of a URL already
    /// checked keeps its expectation); while `Connectivity.isHTTPSOnly` is set,
    /// plain-HTTP requests are dropped, as rwbutler drops them. What else a `URLRequest` carries is ignored (see
    /// `ConnectivityConfiguration.configureConnectivity(urlRequests:)`).
    public var connectivityURLRequests: [URLRequest] {
        get {
            configuration.rwbutlerRequests.map { request in
                var urlRequest = URLRequest(url: request.url)
                urlRequest.httpMethod = request.method
                for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
                return urlRequest
            }
        }
        set {
            let requests = newValue.compactMap(ConnectivityConfiguration.request)
            let httpsOnly = Connectivity.isHTTPSOnly
            updateRwbutlerConfiguration { configuration in
                let urls = Set(configuration.rwbutlerDroppingPlainHTTP(requests.map(\.url), httpsOnly))
                configuration.setRwbutlerRequests(requests.filter { urls.contains($0.url) })
            }
        }
    }
}

/// rwbutler/Connectivity's validator protocol (6.x): judges one answer from the
/// request, the `URLResponse` and the body. With `import ConnectivityURLSession` this
/// is the `ConnectivityResponseValidator` a program names, so a validator written for
/// Apple platforms compiles unchanged:
///
/// ```swift
/// final class StatusValidator: ConnectivityResponseValidator {
///     func isResponseValid(urlRequest: URLRequest, response: URLResponse?, data: Data?) -> Bool {
///         (response as? HTTPURLResponse)?.statusCode == 204
///     }
/// }
/// connectivity.responseValidator = StatusValidator()
/// connectivity.validationMode = .custom
/// ```
///
/// It refines module Connectivity's protocol (`ProbeResponseValidator`), so such a
/// validator goes wherever that one does (`configureResponseValidator(_:)`, the
/// initializers' `responseValidator:`), and `Connectivity.responseValidator` is of
/// this type here, as in rwbutler; the probe's answer reaches it as an
/// `HTTPURLResponse` (status and headers) and a `GET` request of the URL. The
/// package's validators (`ConnectivityResponseContainsStringValidator` and the
/// others) conform too, and every validator answers
/// `isResponseValid(urlRequest:response:data:)`.
///
/// Import this module alone (it re-exports Connectivity): a file that imports both
/// by name sees two protocols of this name and must write
/// `ConnectivityURLSession.ConnectivityResponseValidator`.
///
/// A validator implements `isResponseValid(urlRequest:response:data:)`; one that
/// implements neither that nor `isResponseValid(url:response:data:)` would call
/// itself forever. Validators are `Sendable` (see `ProbeResponseValidator`).
public protocol ConnectivityResponseValidator: ProbeResponseValidator {
    /// Whether `data`, the body of the answer to `urlRequest`, shows the Internet is there.
    func isResponseValid(urlRequest: URLRequest, response: URLResponse?, data: Data?) -> Bool
}

/// A validator of module Connectivity's protocol alone, as rwbutler's protocol sees it
/// (what `Connectivity.responseValidator` hands back for one).
///
/// `Sendable`: immutable.
final class ProbeValidatorAdapter: ConnectivityResponseValidator {
    /// The validator answering.
    let validator: any ProbeResponseValidator

    /// `validator`, wrapped.
    init(_ validator: any ProbeResponseValidator) {
        self.validator = validator
    }

    /// The wrapped validator's verdict on the request's URL and the response's status and headers.
    func isResponseValid(urlRequest: URLRequest, response: URLResponse?, data: Data?) -> Bool {
        validator.isResponseValid(urlRequest: urlRequest, response: response, data: data)
    }

    /// The wrapped validator's verdict.
    func isResponseValid(url: URL, response: ProbeResponse?, data: Data?) -> Bool {
        validator.isResponseValid(url: url, response: response, data: data)
    }
}

extension ConnectivityResponseValidator {
    /// Module Connectivity's requirement, answered by rwbutler's: the probe's answer
    /// as an `HTTPURLResponse` to a `GET` request of `url`.
    public func isResponseValid(url: URL, response: ProbeResponse?, data: Data?) -> Bool {
        isResponseValid(urlRequest: URLRequest(url: url), response: response.flatMap(HTTPURLResponse.init), data: data)
    }
}

extension ProbeResponseValidator {
    /// rwbutler's requirement, answered by module Connectivity's: the request's URL
    /// and the response's status and headers (an answer that is not an
    /// `HTTPURLResponse` counts as none). A request without a URL is not valid.
    public func isResponseValid(urlRequest: URLRequest, response: URLResponse?, data: Data?) -> Bool {
        guard let url = urlRequest.url else { return false }
        let probe = (response as? HTTPURLResponse).map { http in
            ProbeResponse(
                url: http.url ?? url, status: http.statusCode,
                headers: http.allHeaderFields.compactMap { name, value in
                    (name as? String).map { ProbeResponse.HTTPHeader(name: $0, value: "\(value)") }
                }, body: data.map { [UInt8]($0) } ?? [])
        }
        return isResponseValid(url: url, response: probe, data: data)
    }
}

extension HTTPURLResponse {
    /// A probe's answer as Foundation's: its URL, status and headers (a header given
    /// more than once joined with commas).
    convenience init?(_ probe: ProbeResponse) {
        var fields: [String: String] = [:]
        for header in probe.headers {
            let existing = fields.first { $0.key.caseInsensitiveCompare(header.name) == .orderedSame }
            if let existing {
                fields[existing.key] = existing.value + ", " + header.value
            } else {
                fields[header.name] = header.value
            }
        }
        self.init(url: probe.url, statusCode: probe.status, httpVersion: "HTTP/1.1", headerFields: fields)
    }
}

extension ConnectivityResponseContainsStringValidator: ConnectivityResponseValidator {}
extension ConnectivityResponseStringEqualityValidator: ConnectivityResponseValidator {}
extension ConnectivityResponseRegExValidator: ConnectivityResponseValidator {}
extension ConnectivityResponseStringValidator: ConnectivityResponseValidator {}
