// rwbutler/Connectivity's response validation: the validation modes, the validator
// protocol and its validators, and how URLs set through `connectivityURLs` are
// judged with them. A thin layer over ``ConnectivityEndpoint/Expectation/custom(_:)``.
public import Foundation

/// How rwbutler/Connectivity judges the answer of a URL set through
/// ``Connectivity/connectivityURLs``: `Connectivity.ValidationMode`.
///
/// `Sendable`: a plain enum.
public enum ConnectivityResponseValidationMode: Int, Sendable, Hashable, CaseIterable {
    /// The body contains ``Connectivity/expectedResponseString`` (the default).
    case containsExpectedResponseString
    /// The body, without leading and trailing whitespace, equals
    /// ``Connectivity/expectedResponseString``.
    case equalsExpectedResponseString
    /// The body matches ``Connectivity/expectedResponseRegEx`` (case-insensitive,
    /// `.` matching line breaks, whitespace and `#` comments allowed in the pattern).
    case matchesRegularExpression
    /// ``Connectivity/responseValidator`` decides.
    case custom
}

/// The modes of a ``ConnectivityResponseStringValidator``:
/// `ConnectivityResponseStringValidator.ValidationMode`.
///
/// `Sendable`: a plain enum.
public enum ConnectivityResponseStringValidationMode: Int, Sendable, Hashable, CaseIterable {
    /// The body contains the expected string.
    case containsExpectedResponseString
    /// The body, without leading and trailing whitespace, equals the expected string.
    case equalsExpectedResponseString
    /// The body matches the expected string as a regular expression.
    case matchesRegularExpression
}

/// Judges one answer of a connectivity URL, as rwbutler/Connectivity's protocol of
/// the same name, with the answer as a ``ProbeResponse``. Module
/// ConnectivityURLSession declares rwbutler's own, whose requirement is
/// `isResponseValid(urlRequest: URLRequest, response: URLResponse?, data: Data?)`,
/// as a refinement of this one: with `import ConnectivityURLSession` the name
/// means that one.
///
/// ```swift
/// final class StatusValidator: ConnectivityResponseValidator {
///     func isResponseValid(url: URL, response: ProbeResponse?, data: Data?) -> Bool {
///         guard let response else { return false }
///         return (200..<500).contains(response.status)
///     }
/// }
/// connectivity.validationMode = .custom
/// connectivity.responseValidator = StatusValidator()
/// ```
///
/// On Linux `URLResponse` and `URLRequest` live in FoundationNetworking, which this
/// module does not link (it would add about 30 shared libraries and 8 ms to the
/// start-up of every program using it), so here the answer comes as a
/// ``ProbeResponse`` (`status`, `headers`, `body`). A validator written for Apple
/// platforms compiles unchanged with `import ConnectivityURLSession`, whose
/// `ConnectivityResponseValidator` is rwbutler's. `response` is never nil here: the
/// probe got an answer.
///
/// Validators are called from a thread of the library's, one per probe, and may run
/// concurrently: a validator is `Sendable` (in Swift 6 mode a `final class` with
/// only `let` properties, or one that guards its state with a lock). One that
/// doesn't return within the probe timeout counts as a failed probe.
public protocol ConnectivityResponseValidator: AnyObject, Sendable {
    /// Whether `data`, the body `url` answered with (at most
    /// ``ConnectivityConfiguration/maximumBodySize`` bytes), shows the Internet is there.
    func isResponseValid(url: URL, response: ProbeResponse?, data: Data?) -> Bool
}

/// Module Connectivity's ``ConnectivityResponseValidator`` under a name that stays
/// its own where module ConnectivityURLSession's rwbutler protocol of that name
/// is imported too (which refines this one).
public typealias ProbeResponseValidator = ConnectivityResponseValidator

/// Valid when the body, decoded as UTF-8, contains ``expectedResponse``; any
/// status code counts, as in rwbutler/Connectivity.
///
/// `Sendable`: immutable.
public final class ConnectivityResponseContainsStringValidator: ConnectivityResponseValidator {
    /// The text the body must contain.
    public let expectedResponse: String

    /// A validator looking for `expectedResponse` (`"Success"`, what Apple's pages hold).
    public init(expectedResponse: String = "Success") {
        self.expectedResponse = expectedResponse
    }

    /// True when the body is UTF-8 and contains ``expectedResponse``.
    public func isResponseValid(url _: URL, response _: ProbeResponse?, data: Data?) -> Bool {
        guard let data, let text = String(data: data, encoding: .utf8) else { return false }
        return text.contains(expectedResponse)
    }
}

/// Valid when the body, decoded as UTF-8 and without leading and trailing
/// whitespace, equals ``expectedResponse``.
///
/// `Sendable`: immutable.
public final class ConnectivityResponseStringEqualityValidator: ConnectivityResponseValidator {
    /// The text the body must be.
    public let expectedResponse: String

    /// A validator expecting exactly `expectedResponse`.
    public init(expectedResponse: String) {
        self.expectedResponse = expectedResponse
    }

    /// True when the trimmed UTF-8 body equals ``expectedResponse``.
    public func isResponseValid(url _: URL, response _: ProbeResponse?, data: Data?) -> Bool {
        guard let data, let text = String(data: data, encoding: .utf8) else { return false }
        return expectedResponse == text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Valid when the body, decoded as UTF-8, matches a regular expression
/// (`NSRegularExpression`); a pattern that doesn't compile matches nothing.
///
/// `Sendable`: immutable.
public final class ConnectivityResponseRegExValidator: ConnectivityResponseValidator {
    /// rwbutler/Connectivity's default pattern: `Success` inside the `<BODY>` element.
    public static let defaultRegularExpression = ".*?<BODY>.*?Success.*?</BODY>.*"

    private let options: NSRegularExpression.Options
    private let regularExpression: String

    /// A validator matching `regEx` with `options` (default: case-insensitive, `.`
    /// matching line breaks, whitespace and comments allowed in the pattern).
    public init(
        regEx: String = ConnectivityResponseRegExValidator.defaultRegularExpression,
        options: NSRegularExpression.Options? = nil
    ) {
        self.options = options ?? [.caseInsensitive, .allowCommentsAndWhitespace, .dotMatchesLineSeparators]
        regularExpression = regEx
    }

    /// True when the UTF-8 body has a match.
    public func isResponseValid(url _: URL, response _: ProbeResponse?, data: Data?) -> Bool {
        guard let data, let text = String(data: data, encoding: .utf8),
            let expression = try? NSRegularExpression(pattern: regularExpression, options: options)
        else { return false }
        return expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }
}

/// One of the three string validators, chosen by a mode.
///
/// `Sendable`: immutable.
public final class ConnectivityResponseStringValidator: ConnectivityResponseValidator {
    /// `ConnectivityResponseStringValidator.ValidationMode`.
    public typealias ValidationMode = ConnectivityResponseStringValidationMode

    /// How ``expectedResponse`` is compared with the body.
    public let responseValidationMode: ValidationMode
    /// The text (or, for ``ConnectivityResponseStringValidationMode/matchesRegularExpression``,
    /// the pattern) the body is compared with.
    public let expectedResponse: String

    /// A validator comparing the body with `expectedResponse` as `validationMode` says.
    public init(validationMode: ValidationMode, expectedResponse: String) {
        responseValidationMode = validationMode
        self.expectedResponse = expectedResponse
    }

    /// The verdict of the validator the mode names.
    public func isResponseValid(url: URL, response: ProbeResponse?, data: Data?) -> Bool {
        let validator: any ConnectivityResponseValidator
        switch responseValidationMode {
        case .containsExpectedResponseString:
            validator = ConnectivityResponseContainsStringValidator(expectedResponse: expectedResponse)
        case .equalsExpectedResponseString:
            validator = ConnectivityResponseStringEqualityValidator(expectedResponse: expectedResponse)
        case .matchesRegularExpression:
            validator = ConnectivityResponseRegExValidator(regEx: expectedResponse)
        }
        return validator.isResponseValid(url: url, response: response, data: data)
    }
}

/// The rwbutler settings a ``ConnectivityConfiguration`` carries besides its own:
/// how the URLs set through `connectivityURLs` are validated, and the values kept
/// for rwbutler's getters.
struct RwbutlerSettings: Sendable {
    var validationMode: ConnectivityResponseValidationMode = .containsExpectedResponseString
    var expectedResponseString = "Success"
    var expectedResponseRegEx = ConnectivityResponseRegExValidator.defaultRegularExpression
    /// What ``Connectivity/responseValidator`` returns: the mode's validator, or the
    /// custom one (rwbutler replaces it whenever a mode or string is set).
    var responseValidator: any ConnectivityResponseValidator = ConnectivityResponseContainsStringValidator()
    /// The endpoints (by URL) that were set as plain URLs: their expectation is the
    /// validation above, as it is at each check.
    var urlEndpoints: Set<URL> = [] {
        didSet { requests = requests.filter { urlEndpoints.contains($0.key) } }
    }
    /// The method and headers of URL endpoints set as rwbutler `URLRequest`s (module
    /// ConnectivityURLSession); a URL without an entry is a plain `GET`.
    var requests: [URL: RwbutlerRequest] = [:]
    /// Headers sent to every URL endpoint: rwbutler's URLSession configuration's
    /// `httpAdditionalHeaders` (module ConnectivityURLSession).
    var sessionHeaders: [String: String] = [:]
    /// The polling interval kept while polling is off (rwbutler's `pollingInterval`).
    var pollingInterval: Double = 10
    /// How the status names the link: `.network` (by its type), rwbutler's default
    /// since 6.1.0, unless `framework` or `configureFramework(_:)` said otherwise.
    var framework: ConnectivityFramework = .network
    /// rwbutler's `callbackQueue`: ``Connectivity/notificationQueue`` unless the
    /// initializer was given one.
    var callbackQueue: DispatchQueue?
    /// rwbutler's `checkWhenApplicationDidBecomeActive`, kept for its getter.
    var checkWhenApplicationDidBecomeActive = true
    var bearerToken: String?
    var authorizationHeader: String?

    /// The validator a check uses: rwbutler's `ResponseValidatorFactory`.
    var validator: any ConnectivityResponseValidator {
        switch validationMode {
        case .containsExpectedResponseString:
            ConnectivityResponseContainsStringValidator(expectedResponse: expectedResponseString)
        case .equalsExpectedResponseString:
            ConnectivityResponseStringEqualityValidator(expectedResponse: expectedResponseString)
        case .matchesRegularExpression: ConnectivityResponseRegExValidator(regEx: expectedResponseRegEx)
        case .custom: responseValidator
        }
    }

    /// rwbutler's `updateValidator(for:)`: after a mode or string changed, the
    /// validator getter returns the mode's validator.
    mutating func validationChanged() {
        responseValidator = validator
    }

    /// The expectation of an endpoint set as a plain URL.
    var expectation: ConnectivityEndpoint.Expectation {
        let validator = validator
        return .custom { response in
            validator.isResponseValid(url: response.url, response: response, data: Data(response.body))
        }
    }

    /// A URL endpoint: the validation above, with the session's headers, then the
    /// request's (method and headers), then the Authorization header rwbutler sends,
    /// each replacing a header of the same name (compared without case).
    func endpoint(_ url: URL) -> ConnectivityEndpoint {
        var headers = sessionHeaders
        func set(_ name: String, _ value: String) {
            headers = headers.filter { $0.key.caseInsensitiveCompare(name) != .orderedSame }
            headers[name] = value
        }
        let request = requests[url]
        for (name, value) in request?.headers ?? [:] { set(name, value) }
        if let value = authorizationHeader ?? bearerToken.map({ "Bearer \($0)" }) { set("Authorization", value) }
        return ConnectivityEndpoint(
            url: url, expectation: expectation, headers: headers, method: request?.method ?? "GET")
    }

    /// `endpoints` with the URL endpoints given the current validation; in the
    /// `.custom` mode the validator judges every endpoint (rwbutler's validates every
    /// URL it checks), each keeping its method and headers.
    func resolve(_ endpoints: [ConnectivityEndpoint]) -> [ConnectivityEndpoint] {
        guard !urlEndpoints.isEmpty || validationMode == .custom else { return endpoints }
        return endpoints.map { endpoint -> ConnectivityEndpoint in
            if urlEndpoints.contains(endpoint.url) { return self.endpoint(endpoint.url) }
            guard validationMode == .custom else { return endpoint }
            var judged = endpoint
            judged.expectation = expectation
            return judged
        }
    }

    /// `urls` without the plain-HTTP ones when `httpsOnly` (rwbutler's `isHTTPSOnly`),
    /// but for those `current` already checks as endpoints of this package's own.
    func droppingPlainHTTP(_ urls: [URL], from current: [ConnectivityEndpoint], _ httpsOnly: Bool) -> [URL] {
        guard httpsOnly else { return urls }
        let own = Set(current.map(\.url).filter { !urlEndpoints.contains($0) })
        return urls.filter { $0.scheme?.lowercased() == "https" || own.contains($0) }
    }

    /// Endpoints for `urls`: an endpoint already checking one of them keeps its own
    /// expectation (so that `connectivityURLs.append(url)` leaves the others as they
    /// were); the others are URL endpoints. Returns the endpoints and the URL set.
    func endpoints(for urls: [URL], replacing current: [ConnectivityEndpoint]) -> (
        [ConnectivityEndpoint], Set<URL>
    ) {
        var kept: [URL: ConnectivityEndpoint] = [:]
        for endpoint in current where !urlEndpoints.contains(endpoint.url) && kept[endpoint.url] == nil {
            kept[endpoint.url] = endpoint
        }
        var urlSet: Set<URL> = []
        let endpoints = urls.map { url -> ConnectivityEndpoint in
            if let endpoint = kept[url] { return endpoint }
            urlSet.insert(url)
            return endpoint(url)
        }
        return (endpoints, urlSet)
    }
}
