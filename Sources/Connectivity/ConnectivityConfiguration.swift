import Dispatch
public import Foundation
import Glibc
import NIOSSL
public import Reachability
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// How a ``Connectivity`` checks: which endpoints, how many must pass, how long
/// to wait, and when to check again.
///
/// Two starting points:
///
/// - ``recommended``, this package's: the vendors' check endpoints
///   (``ConnectivityEndpoint/defaults``: Apple, Google, Microsoft, GNOME, over HTTP
///   and HTTPS, each with its own expected answer), captive-portal detection, two
///   failed checks to leave online, and a retry after 1 s (doubling to 60 s) while
///   the path is usable but the check fails. The `reachability` command uses it.
///   ``init(endpoints:successThreshold:environment:)`` gives the same settings with
///   endpoints of your own.
/// - `ConnectivityConfiguration()`, rwbutler/Connectivity's, exactly as its
///   documentation gives it: Apple's two HTTPS success pages
///   (``defaultConnectivityURLs``) checked for `Success`, a 50 % threshold,
///   polling every 10 s while offline only, 5 s request and resource timeouts, no
///   check the program didn't ask for beyond those, framework `.network` (see
///   `Compat/RwbutlerConfiguration.swift`).
///
/// ```swift
/// var configuration = ConnectivityConfiguration.recommended
/// configuration.successThreshold = 75
/// configuration.pollingInterval = .seconds(60)
/// let connectivity = try Connectivity(validating: configuration)
/// ```
///
/// rwbutler/Connectivity's fluent spelling works on either
/// (`ConnectivityConfiguration().configurePolling(interval: 5)`).
///
/// `Sendable`: a plain value.
public struct ConnectivityConfiguration: Sendable {
    /// The endpoints fetched by every check, concurrently: in ``recommended``,
    /// ``ConnectivityEndpoint/defaults``; in `ConnectivityConfiguration()`,
    /// rwbutler's two URLs. An empty list is a configuration error.
    public var endpoints: [ConnectivityEndpoint]
    /// The percentage (0–100) of endpoints that must give the expected answer for
    /// the check to count as online; at least one always must. Default 50.
    public var successThreshold: Double
    /// Use only the HTTPS endpoints (a captive portal can't fake those, but it then
    /// shows as noInternet rather than captivePortal). Default false.
    public var httpsOnly: Bool
    /// An RFC 8908 captive-portal API URL (from DHCP option 114 or an RA): when it
    /// answers `"captive": true`, the verdict is captivePortal with its
    /// `user-portal-url`, whatever the probes say. Default nil.
    public var captivePortalAPI: URL?
    /// With no ``captivePortalAPI``: ask the API the network announced on the path's
    /// interface (RFC 8910: DHCP option 114, RA option 37), as
    /// ``captivePortalDiscovery`` finds it; ``ConnectivityResult/captivePortalAPISource``
    /// says where it came from. Default true.
    public var discoversCaptivePortalAPI: Bool
    /// Where the announced API is looked for (``discoversCaptivePortalAPI``). Default
    /// ``CaptivePortalDiscovery/system``: the real lease and state files, read only
    /// when the ``environment`` is the process's own namespace (the files describe
    /// that namespace's interfaces); set other locations to read them for another.
    public var captivePortalDiscovery: CaptivePortalDiscovery
    /// Each probe's time limit. Default 5 s.
    public var probeTimeout: Duration
    /// The whole check's time limit, retries included. Default 10 s (5 s in
    /// `ConnectivityConfiguration()`, rwbutler's resource timeout).
    public var checkDeadline: Duration
    /// Bodies are read up to this many bytes and no further. Default 64 KiB.
    public var maximumBodySize: Int
    /// Consecutive failed checks needed to leave online (one success returns).
    /// Default 2 (1 in `ConnectivityConfiguration()`: rwbutler's checks each decide).
    public var failuresToGoOffline: Int
    /// Check again this often while started; nil checks only at start, on path
    /// changes and (with ``retriesWhileOffline``) while backing off. Default nil in
    /// ``recommended``, 10 s in `ConnectivityConfiguration()`.
    public var pollingInterval: Duration?
    /// With ``pollingInterval``: poll only while not online. Default false in
    /// ``recommended``, true in `ConnectivityConfiguration()`.
    public var pollWhileOfflineOnly: Bool
    /// While the path is usable but the check fails, check again on a timer of its
    /// own (``offlineRetryInitial``, doubling up to ``offlineRetryLimit``; with
    /// polling, at most the interval apart), and confirm a single failure while
    /// online (``failuresToGoOffline``) after ``offlineRetryInitial``. Off, checks
    /// run only at start, on path changes, when asked and when polling says so, as
    /// rwbutler's do. Default true in ``recommended``, false in
    /// `ConnectivityConfiguration()`.
    public var retriesWhileOffline: Bool
    /// While the path is usable but the check fails, check again after this delay,
    /// doubling up to ``offlineRetryLimit`` (``retriesWhileOffline``). Default 1 s.
    public var offlineRetryInitial: Duration
    /// The longest delay between checks while not online. Default 60 s.
    public var offlineRetryLimit: Duration
    /// The namespace and sysfs tree watched; probes are made from inside that
    /// namespace too. Default: the process's own.
    public var environment: NetworkEnvironment
    /// Sent as the `User-Agent` of every probe: no control characters, at most
    /// 8 KiB.
    public var userAgent: String
    /// A PEM file of root certificates to trust for HTTPS endpoints instead of the
    /// system's (a private check server). Default nil: the system's roots. It must
    /// be a regular file (not a FIFO or a device) of at most 16 MiB holding at
    /// least one certificate.
    public var trustedRootCertificatesPath: String?
    /// Before each check, resolve every endpoint's host name (as the probes will,
    /// inside the ``environment``'s namespace) and treat an answer that is a private,
    /// loopback, link-local or carrier-grade-NAT address (`IPAddress.isPrivateOrLocal`)
    /// as DNS hijacking: that endpoint fails with ``ProbeFailure/dnsHijacked(_:)`` even
    /// if it answers as expected, and a check that fails for it is
    /// ``Verdict/noInternet(_:)`` ``NoInternetReason/dnsHijacked`` (or captivePortal when
    /// a plain-HTTP probe was redirected). Endpoints given by address are not
    /// resolved. Default true; turn it off for check servers on a private network
    /// reached by name.
    public var detectsDNSHijacking: Bool
    /// Strict mode: online also needs expected answers from endpoints of two
    /// different vendors (two registrable domains, read as a host's last two labels;
    /// an address as itself), so that a portal that lets one vendor's check through
    /// can't pass for the Internet. Otherwise the verdict is
    /// ``LimitedReason/unconfirmed``. The endpoints must span two such domains.
    /// Default false.
    public var requiresTwoVendors: Bool
    /// Endpoints drawn at random for each check, ``fallbacksPerCheck`` at a time,
    /// on top of ``endpoints`` (as ChromeOS rotates its fallback URLs): a portal
    /// that lets a few well-known check URLs through can't know which will come.
    /// Checked like ``endpoints``; ``httpsOnly`` applies to them too. Default empty.
    public var fallbackEndpoints: [ConnectivityEndpoint]
    /// How many of ``fallbackEndpoints`` each check adds (at most their number).
    /// Default 1.
    public var fallbacksPerCheck: Int
    /// Where the probes leave: over one interface, over one address family, or
    /// both (``ProbeScope``). The notifier then calls the path usable only while
    /// that interface is among the path's available ones and the path carries that
    /// family; results carry the scope. Default ``ProbeScope/any``.
    public var scope: ProbeScope
    /// Whether probes go through an HTTP proxy, as URLSession's go through the
    /// system's: by default as the environment says (`http_proxy`, `https_proxy`,
    /// `all_proxy`, `no_proxy` and their upper-case forms, read as curl reads them;
    /// ``ProxySetting/environment``), or never (``ProxySetting/direct``), or through
    /// one proxy (``ProxySetting/server(_:noProxy:)``). Plain-HTTP probes are sent to
    /// the proxy whole; HTTPS ones go through a `CONNECT` tunnel; credentials in the
    /// proxy URL are sent as `Proxy-Authorization: Basic` and never printed. A proxy
    /// that can't be used (another scheme than `http://`, a bad port) is a
    /// configuration error naming the variable. Default ``ProxySetting/environment``.
    public var proxy: ProxySetting
    /// What the rwbutler/Connectivity surface adds (validation mode, URL endpoints,
    /// polling interval while polling is off…): see `Compat/RwbutlerValidation.swift`.
    var rwbutler = RwbutlerSettings()

    /// This package's settings (those of ``recommended``) with these endpoints.
    public init(
        endpoints: [ConnectivityEndpoint],
        successThreshold: Double = 50,
        environment: NetworkEnvironment = .default
    ) {
        self.endpoints = endpoints
        self.successThreshold = successThreshold
        self.environment = environment
        httpsOnly = false
        captivePortalAPI = nil
        discoversCaptivePortalAPI = true
        captivePortalDiscovery = .system
        probeTimeout = .seconds(5)
        checkDeadline = .seconds(10)
        maximumBodySize = 64 * 1024
        failuresToGoOffline = 2
        pollingInterval = nil
        pollWhileOfflineOnly = false
        retriesWhileOffline = true
        offlineRetryInitial = .seconds(1)
        offlineRetryLimit = .seconds(60)
        userAgent = "swift-reachability-connectivity/1"
        trustedRootCertificatesPath = nil
        detectsDNSHijacking = true
        requiresTwoVendors = false
        fallbackEndpoints = []
        fallbacksPerCheck = 1
        scope = .any
        proxy = .environment
    }

    /// This package's default: the vendors' endpoints (``ConnectivityEndpoint/defaults``)
    /// over HTTP and HTTPS, a 50 % threshold, captive-portal detection (plain-HTTP
    /// redirects, RFC 8908 APIs, DNS hijacking), 5 s probes within a 10 s check, two
    /// failed checks to leave online, a retry after 1 s doubling to 60 s while the
    /// path is usable but the check fails, no polling. What the `reachability`
    /// command checks with.
    public static var recommended: ConnectivityConfiguration {
        ConnectivityConfiguration(endpoints: ConnectivityEndpoint.defaults)
    }

    /// Checks every setting; throws ``ConnectivityError`` naming the first bad one
    /// (``Connectivity/init(validating:notificationQueue:)`` does the same; ``Connectivity/init(configuration:notificationQueue:)``
    /// takes any configuration and reports a bad one through ``Connectivity/lastError``).
    ///
    /// Besides the limits documented on each setting: endpoint and API URLs must
    /// be http or https with no user name or password, a host free of spaces and control characters, an
    /// explicit port from 1 to 65535, and at most 8 KiB of text; a method is 1 to
    /// 64 bytes of `A`–`Z` and `-`; a header is an RFC 9110 token name and a value
    /// without control characters, together at most 8 KiB; a `bodyEquals` or
    /// `bodyContains` text must fit in ``maximumBodySize`` (a longer one could
    /// never match); and the ``environment``'s paths must pass the checks every
    /// `Reachability` initializer makes (no NUL byte, not over `PATH_MAX`, a sysfs
    /// root that is not empty). Whether the namespace can be entered is found out
    /// by ``Connectivity/start()``, which throws when it can't.
    public func validate() throws(ConnectivityError) {
        _ = try validatedEndpoints()
    }

    /// The endpoints a check uses (``httpsOnly`` applied), after checking every
    /// setting; throws ``ConnectivityError`` naming the first bad one.
    func validatedEndpoints() throws(ConnectivityError) -> [ConnectivityEndpoint] {
        try validatedSettings().endpoints
    }

    /// The endpoints of one check: ``endpoints`` and ``fallbacksPerCheck`` of the
    /// ``fallbackEndpoints`` at random (both as validated).
    static func forOneCheck(_ endpoints: [ConnectivityEndpoint], fallbacks: [ConnectivityEndpoint], count: Int)
        -> [ConnectivityEndpoint]
    {
        endpoints + fallbacks.shuffled().prefix(max(0, count))
    }

    /// ``validatedEndpoints()`` and the trust roots, read once: the probes use these
    /// certificates, never the file again (it could have become a FIFO since).
    func validatedSettings() throws(ConnectivityError) -> (
        endpoints: [ConnectivityEndpoint], trustRoots: [NIOSSLCertificate]?, fallbacks: [ConnectivityEndpoint],
        proxy: ProxyRules
    ) {
        let proxyRules = try ProxyRules.make(proxy, environment: ProcessInfo.processInfo.environment)
        guard fallbacksPerCheck >= 0, fallbackEndpoints.isEmpty || fallbacksPerCheck <= fallbackEndpoints.count else {
            throw ConnectivityError(
                "fallbacksPerCheck \(fallbacksPerCheck) is not between 0 and the \(fallbackEndpoints.count) fallbackEndpoints"
            )
        }
        try scope.validate()
        guard successThreshold.isFinite, (0...100).contains(successThreshold) else {
            throw ConnectivityError("successThreshold \(successThreshold) is not a percentage (0–100)")
        }
        // URLs set through rwbutler's `connectivityURLs` get its validation here
        // (a custom validator judges every endpoint).
        let endpoints = rwbutler.resolve(endpoints)
        let fallbackEndpoints = rwbutler.resolve(fallbackEndpoints)
        try scope.requireEndpoint(in: endpoints + fallbackEndpoints)
        let week = Duration.seconds(7 * 86_400)
        for (name, value) in [
            ("probeTimeout", probeTimeout), ("checkDeadline", checkDeadline),
            ("offlineRetryInitial", offlineRetryInitial), ("offlineRetryLimit", offlineRetryLimit),
            ("pollingInterval", pollingInterval ?? .seconds(1)),
        ] {
            guard value > .zero, value <= week else {
                throw ConnectivityError("\(name) \(value) is not between zero and a week")
            }
        }
        guard maximumBodySize >= 0, maximumBodySize <= 16 << 20 else {
            throw ConnectivityError("maximumBodySize \(maximumBodySize) is not between 0 and 16 MiB")
        }
        guard failuresToGoOffline >= 1 else {
            throw ConnectivityError("failuresToGoOffline must be at least 1, not \(failuresToGoOffline)")
        }
        guard offlineRetryLimit >= offlineRetryInitial else {
            throw ConnectivityError("offlineRetryInitial must be at most offlineRetryLimit")
        }
        do throws(ReachabilityError) {
            try environment.validate()
        } catch {
            throw ConnectivityError("environment: \(error.message)")
        }
        if let captivePortalAPI { try Self.checkURL(captivePortalAPI, what: "captivePortalAPI") }
        if discoversCaptivePortalAPI { try captivePortalDiscovery.check() }
        let trustRoots = try trustedRootCertificatesPath.map { path throws(ConnectivityError) in
            try Self.loadTrustRoots(path, systemCalls: environment.systemCalls)
        }
        guard !userAgent.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw ConnectivityError("userAgent contains control characters")
        }
        guard userAgent.utf8.count <= Self.fieldLimit else {
            throw ConnectivityError("userAgent has \(userAgent.utf8.count) bytes, the limit is \(Self.fieldLimit)")
        }
        if requiresTwoVendors && Set((endpoints + fallbackEndpoints).map { CheckTally.vendor(of: $0.url) }).count < 2 {
            throw ConnectivityError("requiresTwoVendors needs endpoints of two vendors (domains); these are of one")
        }
        for endpoint in endpoints + fallbackEndpoints {
            try Self.checkURL(endpoint.url, what: "endpoint")
            let method = endpoint.method
            guard (1...64).contains(method.utf8.count),
                method.utf8.allSatisfy({ (0x41...0x5A).contains($0) || $0 == 0x2D })
            else {
                throw ConnectivityError(
                    "endpoint \(endpoint.url.absoluteString): \(quotedForMessage(method)) is not an HTTP method")
            }
            for (name, value) in endpoint.headers {
                // RFC 9110 field values: visible characters, obs-text, space and tab.
                let fieldValue = value.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 }
                guard Self.isToken(name), fieldValue else {
                    throw ConnectivityError(
                        "endpoint \(endpoint.url.absoluteString): bad header \(quotedForMessage(name))")
                }
                guard name.utf8.count + value.utf8.count + 2 <= Self.fieldLimit else {
                    throw ConnectivityError(
                        "endpoint \(endpoint.url.absoluteString): header \(quotedForMessage(name)) is over "
                            + "\(Self.fieldLimit) bytes")
                }
            }
            switch endpoint.expectation {
            case .bodyEquals(let text), .bodyContains(let text):
                guard text.utf8.count <= maximumBodySize else {
                    throw ConnectivityError(
                        "endpoint \(endpoint.url.absoluteString): the expected body text has \(text.utf8.count) "
                            + "bytes, more than maximumBodySize \(maximumBodySize): it could never match")
                }
            default: break
            }
            if case .bodyMatches(let pattern) = endpoint.expectation {
                do { _ = try NSRegularExpression(pattern: pattern) } catch {
                    throw ConnectivityError(
                        "endpoint \(endpoint.url.absoluteString): invalid regular expression /\(pattern)/")
                }
            }
            if case .status(let code) = endpoint.expectation, !(100...599).contains(code) {
                throw ConnectivityError("endpoint \(endpoint.url.absoluteString): \(code) is not an HTTP status")
            }
        }
        let chosen = httpsOnly ? endpoints.filter(\.isHTTPS) : endpoints
        guard !chosen.isEmpty else {
            throw ConnectivityError(
                httpsOnly && !endpoints.isEmpty
                    ? "httpsOnly is set and no endpoint uses https" : "no endpoints to check: the list is empty")
        }
        return (
            chosen, trustRoots, httpsOnly ? fallbackEndpoints.filter(\.isHTTPS) : fallbackEndpoints, proxyRules
        )
    }

    /// The longest URL, header line or user agent accepted: 8 KiB, what common
    /// servers take for one request or header line.
    static let fieldLimit = 8192

    /// The longest trust-roots file read: 16 MiB (the system bundle is well under 1 MiB).
    static let trustRootsLimit = 16 << 20

    static func checkURL(_ url: URL, what: String) throws(ConnectivityError) {
        // Probes never send a URL's credentials, and every URL is printed (results, the
        // exporter's labels): refused, and the message leaves them out.
        if url.user != nil || url.password != nil {
            var shown = URLComponents(url: url, resolvingAgainstBaseURL: false)
            shown?.user = nil
            shown?.password = nil
            let text = shown?.string ?? "the URL"
            throw ConnectivityError(
                "\(what) \(quotedForMessage(text)) has a user name or password: probes never send them; leave them out")
        }
        let text = url.absoluteString
        guard text.utf8.count <= fieldLimit else {
            throw ConnectivityError(
                "\(what) \(quotedForMessage(text)) has \(text.utf8.count) bytes, the limit is \(fieldLimit)")
        }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw ConnectivityError("\(what) \(quotedForMessage(text)) is not an http or https URL")
        }
        guard let host = url.host, !host.isEmpty else {
            throw ConnectivityError("\(what) \(quotedForMessage(text)) has no host")
        }
        // "http://%00/" or "http://a%20b/" decode to hosts no resolver takes.
        guard !host.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw ConnectivityError("\(what) \(quotedForMessage(text)) has a host with spaces or control characters")
        }
        // Foundation keeps "http://a:99999/" (port 99999) and "http://a:18446744073709551617/"
        // (port nil, which would mean the default port): neither can be connected to.
        if let port = explicitPort(of: text) {
            let number = port.allSatisfy({ ("0"..."9").contains($0) }) ? Int(port) : nil
            guard let number, (1...65535).contains(number) else {
                throw ConnectivityError(
                    "\(what) \(quotedForMessage(text)) has port \(quotedForMessage(String(port))), not 1 to 65535")
            }
        }
    }

    /// The port text of a URL's authority (`"8080"` in `http://u@h:8080/x`), nil
    /// when there is none or it is empty.
    private static func explicitPort(of text: String) -> Substring? {
        guard let start = text.range(of: "://")?.upperBound else { return nil }
        let rest = text[start...]
        let authority = rest[..<(rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex)]
        let hostPort = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        let afterHost = hostPort.lastIndex(of: "]").map { hostPort[hostPort.index(after: $0)...] } ?? hostPort
        guard let colon = afterHost.lastIndex(of: ":") else { return nil }
        let port = afterHost[afterHost.index(after: colon)...]
        return port.isEmpty ? nil : port
    }

    /// Reads and parses a trust-roots file: a regular file (a FIFO would block the
    /// open, `/dev/zero` would never end) of at most ``trustRootsLimit`` bytes
    /// holding at least one PEM certificate.
    static func loadTrustRoots(_ path: String, systemCalls: SystemCalls) throws(ConnectivityError)
        -> [NIOSSLCertificate]
    {
        let what = "trustedRootCertificatesPath \(quotedForMessage(path))"
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw ConnectivityError("\(what) is not a file path")
        }
        let bytes: [UInt8]
        switch systemCalls.readFile(path, limit: trustRootsLimit) {
        case .success(let file): bytes = file.bytes
        case .failure(.unreadable(let error)):
            let reason = strerror(error.errno).map { String(cString: $0) } ?? "errno \(error.errno)"
            throw ConnectivityError("\(what) can't be opened: \(reason)")
        case .failure(.notRegularFile): throw ConnectivityError("\(what) is not a regular file")
        case .failure(.tooLarge(let size)):
            throw ConnectivityError("\(what) has \(size) bytes, the limit is \(trustRootsLimit)")
        }
        let certificates = try? NIOSSLCertificate.fromPEMBytes(bytes)
        guard let certificates, !certificates.isEmpty else {
            throw ConnectivityError("\(what) is not a PEM file of certificates")
        }
        return certificates
    }

    /// RFC 9110 token characters.
    private static func isToken(_ text: String) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }
}
