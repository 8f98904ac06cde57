// The hooks module ConnectivityURLSession (rwbutler/Connectivity's URLSession-typed
// API) builds on: rwbutler's requests and session headers as plain values, so that
// this module never links FoundationNetworking. `package`: not part of the public API.
package import Foundation
import Reachability
package import ReachabilitySystem

/// One rwbutler `URLRequest` as this module keeps it: the URL, method and headers.
/// The session settings rwbutler's static `urlSessionConfiguration` carries here.
package struct RwbutlerSessionDefaults: Sendable {
    package var probeTimeout: Duration
    package var checkDeadline: Duration
    package var headers: [String: String]

    package init(probeTimeout: Duration, checkDeadline: Duration, headers: [String: String]) {
        self.probeTimeout = probeTimeout
        self.checkDeadline = checkDeadline
        self.headers = headers
    }
}

package struct RwbutlerRequest: Sendable, Hashable {
    /// The URL fetched.
    package var url: URL
    /// The HTTP method (`GET` for a plain URL).
    package var method: String
    /// The request's own headers.
    package var headers: [String: String]

    /// A request for `url` with this method and these headers.
    package init(url: URL, method: String = "GET", headers: [String: String] = [:]) {
        self.url = url
        self.method = method
        self.headers = headers
    }
}

extension ConnectivityConfiguration {
    /// Headers sent to the URLs set through rwbutler's API (its URLSession
    /// configuration's `httpAdditionalHeaders`); a request's own header, and the
    /// Authorization header of a bearer token, replace one of the same name.
    package var rwbutlerSessionHeaders: [String: String] {
        get { rwbutler.sessionHeaders }
        set { rwbutler.sessionHeaders = newValue }
    }

    /// `urls` without the plain-HTTP ones when `httpsOnly`, as `connectivityURLs`
    /// drops them.
    package func rwbutlerDroppingPlainHTTP(_ urls: [URL], _ httpsOnly: Bool) -> [URL] {
        rwbutler.droppingPlainHTTP(urls, from: endpoints, httpsOnly)
    }

    /// The endpoints as rwbutler requests (``httpsOnly`` applied): a URL set through
    /// rwbutler's API with the method and headers it was set with, any other
    /// endpoint with its own.
    package var rwbutlerRequests: [RwbutlerRequest] {
        endpoints.filter { !httpsOnly || $0.isHTTPS }.map { endpoint in
            guard rwbutler.urlEndpoints.contains(endpoint.url) else {
                return RwbutlerRequest(url: endpoint.url, method: endpoint.method, headers: endpoint.headers)
            }
            return rwbutler.requests[endpoint.url] ?? RwbutlerRequest(url: endpoint.url)
        }
    }

    /// Checks `requests` as ``configureConnectivity(urls:)`` checks URLs: a plain
    /// `GET` request of a URL already checked keeps that endpoint; any other is
    /// judged by the configured validation, sent with its method and headers (for
    /// a URL given twice, the last request's).
    package mutating func setRwbutlerRequests(_ requests: [RwbutlerRequest]) {
        let custom = Dictionary(
            requests.filter { $0.method != "GET" || !$0.headers.isEmpty }.map { ($0.url, $0) },
            uniquingKeysWith: { _, last in last })
        let (endpoints, urlSet) = rwbutler.endpoints(
            for: requests.map(\.url), replacing: self.endpoints.filter { custom[$0.url] == nil })
        rwbutler.urlEndpoints = urlSet
        rwbutler.requests = custom.filter { urlSet.contains($0.key) }
        self.endpoints = rwbutler.resolve(endpoints)
    }
}

extension Connectivity {
    /// What rwbutler's process-wide `Connectivity.urlSessionConfiguration` (module
    /// ConnectivityURLSession) holds: the probe timeout, check deadline and session
    /// headers of the instances made afterwards by ``init(shouldUseHTTPS:)``; set by
    /// that static property and by ``init(configuration:notificationQueue:)`` with
    /// rwbutler's URLs; nil until then (rwbutler's defaults).
    package static let rwbutlerSessionDefaults = LockedValue<RwbutlerSessionDefaults?>(nil)

    /// `configuration` with rwbutler's process-wide session settings applied, when
    /// it checks rwbutler URLs.
    package static func withRwbutlerSessionDefaults(
        _ configuration: ConnectivityConfiguration
    ) -> ConnectivityConfiguration {
        var configuration = configuration
        if !configuration.rwbutler.urlEndpoints.isEmpty, let defaults = rwbutlerSessionDefaults.withLock({ $0 }) {
            configuration.probeTimeout = defaults.probeTimeout
            configuration.checkDeadline = defaults.checkDeadline
            configuration.rwbutlerSessionHeaders = defaults.headers
        }
        return configuration
    }

    /// What rwbutler's `Connectivity(configuration:)` does to its static
    /// `urlSessionConfiguration`: it becomes the configuration's. Here, for a
    /// configuration checking rwbutler URLs, its probe timeout, check deadline and
    /// session headers become those of the `Connectivity()` made afterwards.
    static func adoptRwbutlerSessionSettings(of configuration: ConnectivityConfiguration) {
        guard !configuration.rwbutler.urlEndpoints.isEmpty else { return }
        let settings = RwbutlerSessionDefaults(
            probeTimeout: configuration.probeTimeout, checkDeadline: configuration.checkDeadline,
            headers: configuration.rwbutlerSessionHeaders)
        rwbutlerSessionDefaults.withLock { $0 = settings }
    }

    /// This module's `responseValidator`, for module ConnectivityURLSession, whose
    /// property of that name (typed with rwbutler's protocol) shadows it there.
    package var probeResponseValidator: any ConnectivityResponseValidator {
        get { responseValidator }
        set { responseValidator = newValue }
    }

    /// Changes the configuration as the other rwbutler setters do (atomically,
    /// applied at the next check).
    package func updateRwbutlerConfiguration(_ change: (inout ConnectivityConfiguration) -> Void) {
        updateConfiguration(change)
    }
}

extension Duration {
    /// The duration in seconds, as rwbutler's `TimeInterval`/`Double` settings give it.
    package var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
