public import Dispatch
public import Foundation
import NIOSSL
public import Reachability

/// How a ``Connectivity`` checks: which endpoints, how many must pass, how long
/// to wait, and when to check again.
///
/// ```swift
/// var configuration = ConnectivityConfiguration()
/// configuration.successThreshold = 75
/// configuration.pollingInterval = .seconds(60)
/// let connectivity = Connectivity(configuration: configuration)
/// ```
///
/// `Sendable`: a plain value.
public struct ConnectivityConfiguration: Sendable {
    /// The endpoints fetched by every check, concurrently. Default:
    /// ``ConnectivityEndpoint/defaults``. An empty list is a configuration error.
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
    /// Each probe's time limit. Default 5 s.
    public var probeTimeout: Duration
    /// The whole check's time limit, retries included. Default 10 s.
    public var checkDeadline: Duration
    /// Bodies are read up to this many bytes and no further. Default 64 KiB.
    public var maximumBodySize: Int
    /// Consecutive failed checks needed to leave online (one success returns).
    /// Default 2.
    public var failuresToGoOffline: Int
    /// Check again this often while started; nil (the default) checks only at
    /// start, on path changes and while backing off.
    public var pollingInterval: Duration?
    /// With ``pollingInterval``: poll only while not online. Default false.
    public var pollWhileOfflineOnly: Bool
    /// While the path is usable but the check fails, check again after this delay,
    /// doubling up to ``offlineRetryLimit``. Default 1 s.
    public var offlineRetryInitial: Duration
    /// The longest delay between checks while not online. Default 60 s.
    public var offlineRetryLimit: Duration
    /// The namespace and sysfs tree watched; probes are made from inside that
    /// namespace too. Default: the process's own.
    public var environment: NetworkEnvironment
    /// The queue `whenConnected`, `whenDisconnected` and notifications run on.
    /// Default: a private serial queue (pass `.main` if your program runs a main loop).
    public var callbackQueue: DispatchQueue?
    /// Sent as the `User-Agent` of every probe.
    public var userAgent: String
    /// A PEM file of root certificates to trust for HTTPS endpoints instead of the
    /// system's (a private check server). Default nil: the system's roots.
    public var trustedRootCertificatesPath: String?

    /// The defaults above.
    public init(
        endpoints: [ConnectivityEndpoint] = ConnectivityEndpoint.defaults,
        successThreshold: Double = 50,
        environment: NetworkEnvironment = .default
    ) {
        self.endpoints = endpoints
        self.successThreshold = successThreshold
        self.environment = environment
        httpsOnly = false
        captivePortalAPI = nil
        probeTimeout = .seconds(5)
        checkDeadline = .seconds(10)
        maximumBodySize = 64 * 1024
        failuresToGoOffline = 2
        pollingInterval = nil
        pollWhileOfflineOnly = false
        offlineRetryInitial = .seconds(1)
        offlineRetryLimit = .seconds(60)
        callbackQueue = nil
        userAgent = "swift-reachability-connectivity/1"
        trustedRootCertificatesPath = nil
    }

    /// Checks every setting; throws ``ConnectivityError`` naming the first bad one
    /// (``Connectivity/init(configuration:)`` does the same).
    public func validate() throws(ConnectivityError) {
        _ = try validatedEndpoints()
    }

    /// The endpoints a check uses (``httpsOnly`` applied), after checking every
    /// setting; throws ``ConnectivityError`` naming the first bad one.
    func validatedEndpoints() throws(ConnectivityError) -> [ConnectivityEndpoint] {
        guard successThreshold.isFinite, (0...100).contains(successThreshold) else {
            throw ConnectivityError("successThreshold \(successThreshold) is not a percentage (0–100)")
        }
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
        if let captivePortalAPI { try Self.checkURL(captivePortalAPI, what: "captivePortalAPI") }
        if let path = trustedRootCertificatesPath {
            let certificates = try? NIOSSLCertificate.fromPEMFile(path)
            guard let certificates, !certificates.isEmpty else {
                throw ConnectivityError(
                    "trustedRootCertificatesPath \(path.debugDescription) is not a PEM file of certificates")
            }
        }
        guard !userAgent.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw ConnectivityError("userAgent contains control characters")
        }
        for endpoint in endpoints {
            try Self.checkURL(endpoint.url, what: "endpoint")
            let method = endpoint.method
            guard !method.isEmpty, method.utf8.allSatisfy({ (0x41...0x5A).contains($0) || $0 == 0x2D }) else {
                throw ConnectivityError(
                    "endpoint \(endpoint.url.absoluteString): \(method.debugDescription) is not an HTTP method")
            }
            for (name, value) in endpoint.headers {
                // RFC 9110 field values: visible characters, obs-text, space and tab.
                let fieldValue = value.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 }
                guard Self.isToken(name), fieldValue else {
                    throw ConnectivityError(
                        "endpoint \(endpoint.url.absoluteString): bad header \(name.debugDescription)")
                }
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
        return chosen
    }

    private static func checkURL(_ url: URL, what: String) throws(ConnectivityError) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw ConnectivityError("\(what) \(url.absoluteString.debugDescription) is not an http or https URL")
        }
        guard let host = url.host, !host.isEmpty, url.absoluteString.utf8.count <= 8192 else {
            throw ConnectivityError("\(what) \(url.absoluteString.debugDescription) has no host")
        }
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

/// A configuration that can't work: the message names the setting.
///
/// `Sendable`: a plain value.
public struct ConnectivityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    init(_ message: String) { self.message = message }
    public var description: String { "invalid connectivity configuration: \(message)" }
}
