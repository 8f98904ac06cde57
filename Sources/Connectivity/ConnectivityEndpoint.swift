public import Foundation

/// One URL that a connectivity check fetches, and what a healthy answer looks like.
///
/// ```swift
/// let endpoint = ConnectivityEndpoint(
///     url: URL(string: "https://status.example.com/ping")!,
///     expectation: .bodyContains("pong"),
///     headers: ["Authorization": "Bearer \(token)"])
/// ```
///
/// Redirects are never followed: a 3xx is an answer, and on a plain-HTTP endpoint
/// it is the mark of a captive portal. Headers are sent to this endpoint only.
///
/// `Sendable`: a value; a custom validator must be `@Sendable`.
public struct ConnectivityEndpoint: Sendable, CustomStringConvertible {
    /// What a healthy answer looks like.
    ///
    /// `Sendable`: a plain enum; the custom validator is `@Sendable`.
    public enum Expectation: Sendable, CustomStringConvertible {
        /// The status code equals this (e.g. 204 for the `generate_204` endpoints).
        case status(Int)
        /// A 2xx answer whose body, without leading and trailing whitespace, equals this.
        case bodyEquals(String)
        /// A 2xx answer whose body contains this.
        case bodyContains(String)
        /// A 2xx answer whose body matches this regular expression
        /// (`NSRegularExpression` syntax; checked when the configuration is validated).
        case bodyMatches(String)
        /// A 2xx answer with this header; with a value, the header's value equals it.
        case header(name: String, value: String?)
        /// Your own judgement of the answer.
        case custom(@Sendable (ProbeResponse) -> Bool)

        /// A short summary, e.g. `status 204` or `body containing "Success"`.
        public var description: String {
            switch self {
            case .status(let code): "status \(code)"
            case .bodyEquals(let text): "body equal to \(text.debugDescription)"
            case .bodyContains(let text): "body containing \(text.debugDescription)"
            case .bodyMatches(let pattern): "body matching /\(pattern)/"
            case .header(let name, let value?): "header \(name): \(value)"
            case .header(let name, nil): "header \(name)"
            case .custom: "a custom validator"
            }
        }
    }

    /// The URL fetched (http or https).
    public var url: URL
    /// The method; `GET` by default.
    public var method: String
    /// What a healthy answer looks like.
    public var expectation: Expectation
    /// Extra request headers, sent to this endpoint only (e.g. `Authorization`).
    public var headers: [String: String]

    /// An endpoint that expects `expectation` from `url`.
    public init(url: URL, expectation: Expectation, headers: [String: String] = [:], method: String = "GET") {
        self.url = url
        self.expectation = expectation
        self.headers = headers
        self.method = method
    }

    /// Whether the endpoint is fetched over TLS.
    public var isHTTPS: Bool { url.scheme?.lowercased() == "https" }

    /// The method, URL and expectation, e.g.
    /// `GET http://captive.apple.com/hotspot-detect.html expecting body containing "Success"`.
    public var description: String { "\(method) \(url.absoluteString) expecting \(expectation)" }

    /// The vendors' public check endpoints used by default: plain-HTTP ones (a
    /// captive portal can only intercept those) and HTTPS ones (so that blocked
    /// HTTPS is told apart).
    public static let defaults: [ConnectivityEndpoint] = [
        // Android / ChromeOS.
        ConnectivityEndpoint(
            url: URL(string: "http://connectivitycheck.gstatic.com/generate_204")!, expectation: .status(204)),
        // Apple (iOS, macOS).
        ConnectivityEndpoint(
            url: URL(string: "http://captive.apple.com/hotspot-detect.html")!, expectation: .bodyContains("Success")),
        // Windows NCSI.
        ConnectivityEndpoint(
            url: URL(string: "http://www.msftconnecttest.com/connecttest.txt")!,
            expectation: .bodyEquals("Microsoft Connect Test")),
        // GNOME / NetworkManager.
        ConnectivityEndpoint(
            url: URL(string: "http://nmcheck.gnome.org/check_network_status.txt")!,
            expectation: .bodyContains("NetworkManager is online")),
        // Google over HTTPS.
        ConnectivityEndpoint(url: URL(string: "https://www.google.com/generate_204")!, expectation: .status(204)),
        // Apple over HTTPS.
        ConnectivityEndpoint(
            url: URL(string: "https://captive.apple.com/hotspot-detect.html")!, expectation: .bodyContains("Success")),
    ]
}

/// An HTTP answer as a probe saw it: status, headers and the body up to the cap.
///
/// `Sendable`: a plain value.
public struct ProbeResponse: Sendable, Hashable {
    /// The URL that was fetched.
    public var url: URL
    /// The status code.
    public var status: Int
    /// The headers in the order received (names as sent).
    public var headers: [HTTPHeader]
    /// The body, at most ``ConnectivityConfiguration/maximumBodySize`` bytes.
    public var body: [UInt8]
    /// True when the body went on past the cap and was not read further.
    public var isBodyTruncated: Bool

    /// A header name and value.
    public struct HTTPHeader: Sendable, Hashable {
        /// The header's name, as the server sent it.
        public var name: String
        /// The header's value.
        public var value: String
        /// A header with this name and value.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// An answer with these parts: for testing a
    /// ``ConnectivityEndpoint/Expectation/custom(_:)`` validator with made-up responses
    /// (probes build their own).
    public init(url: URL, status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], isBodyTruncated: Bool = false) {
        self.url = url
        self.status = status
        self.headers = headers
        self.body = body
        self.isBodyTruncated = isBodyTruncated
    }

    /// The first value of the header `name` (compared without case).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The body decoded as UTF-8 (invalid bytes replaced).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// True for 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

extension ConnectivityEndpoint.Expectation {
    /// Whether `response` is the healthy answer; if not, why not.
    func check(_ response: ProbeResponse) -> String? {
        switch self {
        case .status(let code):
            return response.status == code ? nil : "expected status \(code), got \(response.status)"
        case .custom(let validator):
            return validator(response) ? nil : "rejected by the custom validator (status \(response.status))"
        default:
            break
        }
        guard response.isSuccess else { return "expected a 2xx answer, got \(response.status)" }
        switch self {
        case .bodyEquals(let text):
            let body = response.bodyText.trimmingCharacters(in: .whitespacesAndNewlines)
            return !response.isBodyTruncated && body == text.trimmingCharacters(in: .whitespacesAndNewlines)
                ? nil : "the body is not \(text.debugDescription)"
        case .bodyContains(let text):
            return response.bodyText.contains(text) ? nil : "the body does not contain \(text.debugDescription)"
        case .bodyMatches(let pattern):
            guard let regex = try? NSRegularExpression(pattern: pattern) else { return "invalid pattern" }
            let text = response.bodyText
            let found = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
            return found ? nil : "the body does not match /\(pattern)/"
        case .header(let name, let value):
            guard let found = response.header(name) else { return "no \(name) header" }
            if let value, found != value {
                return "\(name) is \(found.debugDescription), not \(value.debugDescription)"
            }
            return nil
        case .status, .custom:
            return nil
        }
    }
}
