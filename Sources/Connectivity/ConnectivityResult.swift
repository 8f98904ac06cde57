public import Foundation
public import Reachability

/// What a connectivity check concluded.
///
/// `Sendable`: a plain value.
public enum Verdict: Sendable, Hashable, CustomStringConvertible {
    /// Enough endpoints gave the expected answer.
    case online
    /// Something between us and the Internet answers in its place: a redirect, a
    /// 511, a login page where an empty 204 was due, or an RFC 8908 API saying
    /// `"captive": true`. `loginURL` is the redirect's Location (or the API's
    /// `user-portal-url`), else the probe URL that was intercepted. A Location or
    /// portal URL is taken only when it is http or https, at most 8 KiB, without a
    /// user name or password, with a real host: a hostile `javascript:`, `file:` or
    /// `data:` URL is never the login URL.
    case captivePortal(loginURL: URL)
    /// Nothing useful came back.
    case noInternet(NoInternetReason)
    /// Some endpoints worked, not enough: e.g. plain HTTP goes through but HTTPS
    /// is blocked.
    case limited(LimitedReason)
    /// No usable path out: no link, no address, or no route.
    case notConnected
    /// The checks went through a proxy (``ConnectivityConfiguration/proxy``, by
    /// default the `http_proxy`/`https_proxy`/`all_proxy` environment) and the proxy
    /// turned them away: it wants credentials (407), refused (403, or a `CONNECT`
    /// answered other than 2xx), or could not be reached. Whether the Internet is
    /// behind it is unknown. A captive portal in front of the proxy is still
    /// ``captivePortal(loginURL:)``.
    case proxyFailed(ProxyFailure)

    /// `"online"`, `"captivePortal"`, `"noInternet"`, `"limited"`, `"notConnected"`
    /// or `"proxyFailed"`.
    public var name: String {
        switch self {
        case .online: "online"
        case .captivePortal: "captivePortal"
        case .noInternet: "noInternet"
        case .limited: "limited"
        case .notConnected: "notConnected"
        case .proxyFailed: "proxyFailed"
        }
    }

    /// The name, with the login URL or the reason when there is one:
    /// `captivePortal (login at http://portal.example/)`, `noInternet (timedOut)`.
    public var description: String {
        switch self {
        case .online, .notConnected: name
        case .captivePortal(let url): "captivePortal (login at \(url.absoluteString))"
        case .noInternet(let reason): "noInternet (\(reason))"
        case .limited(let reason): "limited (\(reason))"
        case .proxyFailed(let failure): "proxyFailed (\(failure))"
        }
    }
}

/// How a proxy turned a probe away. The proxy is never named here: its URL may
/// carry credentials.
///
/// `Sendable`: a plain enum.
public enum ProxyFailure: Sendable, Hashable, CustomStringConvertible {
    /// The proxy answered 407 Proxy Authentication Required (or 401 to `CONNECT`):
    /// no credentials were given (`http://user:password@proxy:port`), or it refused them.
    case authenticationRequired
    /// The proxy refused the request: 403 to a plain-HTTP request, or an answer
    /// other than 2xx to `CONNECT` (its status; nil when there was none to read).
    case refused(status: Int?)
    /// The connection to the proxy failed (refused, no route); the system's text.
    case unreachable(String)
    /// The proxy said nothing within the probe's limit: the connection to it was
    /// not made, or it took the connection and never answered the `CONNECT`. (A
    /// plain-HTTP request it took and never answered is `timedOut`: the wait may be
    /// the endpoint's.)
    case timedOut

    /// In words, e.g. `authentication required (407)` or `refused (403)`.
    public var description: String {
        switch self {
        case .authenticationRequired: "authentication required (407)"
        case .refused(let status?): "refused (\(status))"
        case .refused(nil): "refused the tunnel (CONNECT)"
        case .unreachable(let detail): "unreachable: \(detail)"
        case .timedOut: "timed out (no answer)"
        }
    }

    /// `"authenticationRequired"`, `"refused"`, `"unreachable"` or `"timedOut"`.
    public var name: String {
        switch self {
        case .authenticationRequired: "authenticationRequired"
        case .refused: "refused"
        case .unreachable: "unreachable"
        case .timedOut: "timedOut"
        }
    }
}

/// Why a check found no Internet: the most common failure among the endpoints.
///
/// `Sendable`: a plain enum.
public enum NoInternetReason: String, Sendable, Hashable, CustomStringConvertible {
    /// No answer within the time limit.
    case timedOut
    /// The endpoints' host names did not resolve.
    case nameResolutionFailed
    /// Connections were refused (a RST).
    case connectionRefused
    /// The network or host was unreachable (ICMP, or no route).
    case networkUnreachable
    /// The TLS handshake failed (a certificate not for that host, typically an
    /// intercepting proxy or portal).
    case tlsFailed
    /// HTTPS endpoints answered, but not as expected.
    case unexpectedResponse
    /// The connection failed for another reason (reset, closed early, bad HTTP).
    case connectionFailed
    /// The endpoints' names resolved to private or local addresses no public
    /// server has, or three or more vendors' names to one address: a captive
    /// portal's resolver, or a broken one.
    case dnsHijacked

    /// The case name, e.g. `"connectionRefused"`.
    public var description: String { rawValue }
}

/// Why a check found the Internet only partly there.
///
/// `Sendable`: a plain enum.
public enum LimitedReason: Sendable, Hashable, CustomStringConvertible {
    /// Plain-HTTP endpoints worked, every HTTPS endpoint failed.
    case httpsBlocked
    /// HTTPS endpoints worked, every plain-HTTP endpoint failed.
    case httpBlocked
    /// Fewer endpoints than the threshold asks for worked.
    case belowThreshold(succeeded: Int, required: Int)
    /// Strict mode (``ConnectivityConfiguration/requiresTwoVendors``): the threshold
    /// was met, but only one vendor's endpoints answered as expected.
    case unconfirmed

    /// In words, e.g. `HTTPS blocked` or `1 endpoints answered, 2 required`.
    public var description: String {
        switch self {
        case .httpsBlocked: "HTTPS blocked"
        case .httpBlocked: "plain HTTP blocked"
        case .belowThreshold(let succeeded, let required): "\(succeeded) endpoints answered, \(required) required"
        case .unconfirmed: "only one vendor's endpoints answered (strict mode wants two)"
        }
    }
}

/// Why one probe failed to get an HTTP answer.
///
/// `Sendable`: a plain enum.
public enum ProbeFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// No answer within the probe timeout or the check's deadline.
    case timedOut
    /// The endpoint's host name did not resolve; the resolver's error.
    case nameResolutionFailed(String)
    /// The connection was refused (a RST, `ECONNREFUSED`).
    case connectionRefused
    /// No route to the endpoint (`ENETUNREACH`, `EHOSTUNREACH`, `EADDRNOTAVAIL`);
    /// the system's text for the error.
    case networkUnreachable(String)
    /// The TLS handshake failed (often a certificate not for that host: an
    /// intercepting proxy or portal); the TLS library's reason, e.g.
    /// `CERTIFICATE_VERIFY_FAILED`.
    case tlsFailed(String)
    /// The connection failed for another reason (reset, closed early, a bad HTTP
    /// answer, the namespace could not be entered); the error, described.
    case connectionFailed(String)
    /// Cancelled: the path changed or the check ended first.
    case cancelled
    /// DNS hijacking: the endpoint's host name resolved to a private or local
    /// address, or to one address the names of three or more vendors resolved to
    /// (the detail says which: `name → address, a private or local address`, or
    /// `name → address, one address the names of 3 vendors (…) resolved to`). The
    /// endpoint counts as failed even if that address answered as expected.
    case dnsHijacked(String)
    /// The probe went through a proxy, and the proxy turned it away.
    case proxyFailed(ProxyFailure)

    /// One line, e.g. `timed out` or `TLS failed: CERTIFICATE_VERIFY_FAILED`.
    public var description: String {
        switch self {
        case .timedOut: "timed out"
        case .nameResolutionFailed(let detail): "name resolution failed: \(detail)"
        case .connectionRefused: "connection refused"
        case .networkUnreachable(let detail): "unreachable: \(detail)"
        case .tlsFailed(let detail): "TLS failed: \(detail)"
        case .connectionFailed(let detail): "connection failed: \(detail)"
        case .cancelled: "cancelled (the check ended first)"
        case .dnsHijacked(let detail): "DNS hijacked: \(detail)"
        case .proxyFailed(let failure): "proxy \(failure)"
        }
    }

    var reason: NoInternetReason {
        switch self {
        case .timedOut, .cancelled: .timedOut
        case .nameResolutionFailed: .nameResolutionFailed
        case .connectionRefused: .connectionRefused
        case .networkUnreachable: .networkUnreachable
        case .tlsFailed: .tlsFailed
        case .connectionFailed, .proxyFailed: .connectionFailed
        case .dnsHijacked: .dnsHijacked
        }
    }
}

/// One endpoint's outcome in a check.
///
/// `Sendable`: a plain value.
public struct EndpointResult: Sendable, Hashable {
    /// The endpoint's URL.
    public var url: URL
    /// True when it gave the expected answer.
    public var isValid: Bool
    /// The status code, when an HTTP answer came.
    public var httpStatus: Int?
    /// The `Location` of a redirect answer.
    public var location: String?
    /// The transport failure, when no HTTP answer came.
    public var failure: ProbeFailure?
    /// Why the answer was not the expected one, when it wasn't.
    public var mismatch: String?
    /// Time from the first attempt's start to the last attempt's end.
    public var duration: Duration
    /// Attempts made: a fast transport failure is tried once more.
    public var attempts: Int

    /// The failure or mismatch as one line; nil when valid.
    public var error: String? { failure.map(\.description) ?? mismatch }

    /// ``duration`` in milliseconds, rounded down (the CLI's `millis`); 0 for a
    /// negative duration and `Int.max` for one too long to count in milliseconds.
    /// Package access: a formatting aid of the CLI's; library users have ``duration``.
    package var milliseconds: Int {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = Int(seconds).multipliedReportingOverflow(by: 1000)
        let (total, carry) = whole.addingReportingOverflow(Int(attoseconds / 1_000_000_000_000_000))
        return overflow || carry ? .max : total
    }
}

/// The full outcome of a check: the verdict, the status it maps to, and what every
/// endpoint did.
///
/// `Sendable`: a plain value.
public struct ConnectivityResult: Sendable, Hashable {
    /// online, captivePortal, noInternet, limited, notConnected or proxyFailed.
    public var verdict: Verdict
    /// The rwbutler-style status (the interface type with the verdict).
    public var status: ConnectivityStatus
    /// The interface the path goes out of, when there is one.
    public var interface: NetworkInterface?
    /// Per-endpoint outcomes, in configuration order (empty when no probe ran).
    public var endpoints: [EndpointResult]
    /// What the RFC 8908 API said, when one was asked (configured or discovered) and
    /// answered.
    public var captivePortalAPI: CaptivePortalAPIResponse?
    /// The API URI the check used and where it came from: the configuration, or the
    /// file the host recorded the network's announcement in
    /// (``ConnectivityConfiguration/discoversCaptivePortalAPI``); nil when there was
    /// none. A discovered ``CaptivePortalAPISource/URI/unrestricted`` is reported
    /// here, and no API is asked.
    public var captivePortalAPISource: CaptivePortalAPISource? = nil
    /// When the check finished.
    public var date: Date
    /// Where the probes left (``ConnectivityConfiguration/scope``, or the scope
    /// given to `Connectivity.checkConnectivity(over:)`): ``ProbeScope/any`` for
    /// an ordinary check.
    public var scope: ProbeScope = .any

    /// True when the verdict is online.
    public var isConnected: Bool { verdict == .online }
}

/// The RFC 8908 captive-portal API's answer.
///
/// `Sendable`: a plain value.
public struct CaptivePortalAPIResponse: Sendable, Hashable {
    /// `captive`: true while the client must still log in.
    public var captive: Bool
    /// `user-portal-url`: where to log in.
    public var userPortalURL: URL?
    /// `venue-info-url`.
    public var venueInfoURL: URL?
    /// `seconds-remaining` (a negative or non-integer value is ignored: nil).
    public var secondsRemaining: Int?
    /// `bytes-remaining` (a negative or non-integer value is ignored: nil).
    public var bytesRemaining: Int?
    /// `can-extend-session`: true when the session can be extended at the portal
    /// (a non-boolean value is ignored: nil).
    public var canExtendSession: Bool?

    /// An answer with these fields (for tests and previews; checks parse the
    /// API's JSON with ``init(json:)``).
    public init(
        captive: Bool, userPortalURL: URL? = nil, venueInfoURL: URL? = nil, secondsRemaining: Int? = nil,
        bytesRemaining: Int? = nil, canExtendSession: Bool? = nil
    ) {
        self.captive = captive
        self.userPortalURL = userPortalURL
        self.venueInfoURL = venueInfoURL
        self.secondsRemaining = secondsRemaining
        self.bytesRemaining = bytesRemaining
        self.canExtendSession = canExtendSession
    }

    /// Parses the API's JSON (`application/captive+json`); nil unless it is a JSON
    /// object whose `captive` is a boolean (garbage, invalid UTF-8 and nesting
    /// deeper than the decoder's limit give nil, never a crash). A URL field is
    /// ignored (nil) unless it is an absolute http or https URL of at most 8 KiB
    /// with no user name or password and a host free of spaces and control
    /// characters — the rule a redirect's `Location` is held to as well; a
    /// `seconds-remaining` or `bytes-remaining` that is not a non-negative integer,
    /// and a `can-extend-session` that is not a boolean, are ignored too.
    public init?(json: [UInt8]) {
        guard let wire = try? JSONDecoder().decode(Wire.self, from: Data(json)) else { return nil }
        self.init(
            captive: wire.captive, userPortalURL: wire.userPortalURL, venueInfoURL: wire.venueInfoURL,
            secondsRemaining: wire.secondsRemaining, bytesRemaining: wire.bytesRemaining,
            canExtendSession: wire.canExtendSession)
    }

    private struct Wire: Decodable {
        var captive: Bool
        var userPortalURL: URL?
        var venueInfoURL: URL?
        var secondsRemaining: Int?
        var bytesRemaining: Int?
        var canExtendSession: Bool?

        enum CodingKeys: String, CodingKey {
            case captive
            case userPortalURL = "user-portal-url"
            case venueInfoURL = "venue-info-url"
            case secondsRemaining = "seconds-remaining"
            case bytesRemaining = "bytes-remaining"
            case canExtendSession = "can-extend-session"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            captive = try container.decode(Bool.self, forKey: .captive)
            func url(_ key: CodingKeys) -> URL? {
                guard let text = try? container.decodeIfPresent(String.self, forKey: key) else { return nil }
                return PortalURL.apiField(text)
            }
            userPortalURL = url(.userPortalURL)
            venueInfoURL = url(.venueInfoURL)
            let seconds = try? container.decodeIfPresent(Int.self, forKey: .secondsRemaining)
            secondsRemaining = seconds.flatMap { $0 >= 0 ? $0 : nil }
            let bytes = try? container.decodeIfPresent(Int.self, forKey: .bytesRemaining)
            bytesRemaining = bytes.flatMap { $0 >= 0 ? $0 : nil }
            canExtendSession = try? container.decodeIfPresent(Bool.self, forKey: .canExtendSession)
        }
    }
}
