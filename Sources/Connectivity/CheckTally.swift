import Foundation
import Reachability

/// One probe attempt's outcome: an HTTP answer, or no answer.
enum AttemptOutcome: Sendable {
    /// An answer, to be judged against the endpoint's expectation.
    case answered(ProbeResponse)
    /// An answer already judged: nil when it met the expectation, else why not.
    case judged(ProbeResponse, mismatch: String?)
    case failed(ProbeFailure)
    /// No attempt: its socket could not be made (``ProbeRunner/exhaustion(_:)``).
    case exhausted(ConnectivityError)
}

/// What the RFC 8908 API fetch gave.
enum APIOutcome: Sendable, Hashable {
    case answered(CaptivePortalAPIResponse)
    case failed
}

/// The bookkeeping of one check, free of I/O: records attempt outcomes, says
/// whether to retry and whether the check is decided, and turns the outcomes into
/// a verdict. The ``ProbeRunner`` drives it; unit tests drive it directly.
struct CheckTally: Sendable {
    private enum State: Sendable {
        case pending(attempts: Int)
        case done(EndpointResult)
    }

    let endpoints: [ConnectivityEndpoint]
    /// Endpoints that must be valid for online: the threshold's share, at least one.
    let required: Int
    /// The configured RFC 8908 API URL, if any: the check waits for its answer.
    let apiURL: URL?
    /// Attempts per endpoint: a fast transport failure is tried once more.
    static let maximumAttempts = 2

    private var states: [State]
    private var started: [ContinuousClock.Instant?]
    /// Endpoints whose host name the hijack check caught, with the detail
    /// (`name → address, why`).
    private(set) var hijacked: [Int: String] = [:]
    /// Whether the shared-address rule caught any endpoint: the resolver answers
    /// several vendors' names with one address, so no answer it gave can be
    /// trusted, and the check is no better than noInternet(dnsHijacked).
    private(set) var resolverHijacked = false
    private(set) var apiOutcome: APIOutcome?

    /// Strict mode: online needs expected answers from two vendors (see ``vendor(of:)``).
    let requiresTwoVendors: Bool

    init(
        endpoints: [ConnectivityEndpoint], successThreshold: Double, apiURL: URL? = nil,
        requiresTwoVendors: Bool = false
    ) {
        self.endpoints = endpoints
        self.apiURL = apiURL
        self.requiresTwoVendors = requiresTwoVendors
        let share = (successThreshold / 100 * Double(endpoints.count)).rounded(.up)
        required = max(1, min(endpoints.count, Int(share.isFinite ? share : 1)))
        states = Array(repeating: .pending(attempts: 0), count: endpoints.count)
        started = Array(repeating: nil, count: endpoints.count)
    }

    /// Notes that an attempt at endpoint `index` starts at `now` (the first one's
    /// start is where the endpoint's duration is measured from).
    mutating func attemptStarted(_ index: Int, at now: ContinuousClock.Instant) {
        if started[index] == nil { started[index] = now }
        if case .pending(let attempts) = states[index] { states[index] = .pending(attempts: attempts + 1) }
    }

    /// Notes that endpoint `index`'s host name resolved to a private or local
    /// address, or (`sharedAddress`) to an address three or more vendors' names
    /// resolved to (`detail`: `name → address, why`): whatever it answers, it fails
    /// with ``ProbeFailure/dnsHijacked(_:)``; a plain-HTTP redirect still names a
    /// portal. A shared address makes the verdict noInternet(dnsHijacked) whatever
    /// the other endpoints answer (``verdict``).
    mutating func markHijacked(_ index: Int, _ detail: String, sharedAddress: Bool = false) {
        hijacked[index] = detail
        if sharedAddress { resolverHijacked = true }
    }

    /// Records an attempt's outcome; returns true when the endpoint should be
    /// tried again (a fast transport failure, first attempt, check still open).
    mutating func record(
        _ index: Int, _ outcome: AttemptOutcome, at now: ContinuousClock.Instant, mayRetry: Bool
    ) -> Bool {
        guard case .pending(let attempts) = states[index] else { return false }
        let duration = started[index].map { now - $0 } ?? .zero
        let url = endpoints[index].url
        switch outcome {
        case .answered, .judged:
            let (response, mismatch): (ProbeResponse, String?)
            switch outcome {
            case .judged(let judged, let reason): (response, mismatch) = (judged, reason)
            case .answered(let answer): (response, mismatch) = (answer, endpoints[index].expectation.check(answer))
            case .failed, .exhausted: return false
            }
            let hijack = hijacked[index].map(ProbeFailure.dnsHijacked)
            states[index] = .done(
                EndpointResult(
                    url: url, isValid: mismatch == nil && hijack == nil, httpStatus: response.status,
                    location: (300..<400).contains(response.status) ? response.header("Location") : nil,
                    failure: hijack, mismatch: mismatch, duration: duration, attempts: attempts))
            return false
        case .failed(var failure):
            if let detail = hijacked[index], failure != .cancelled {
                failure = .dnsHijacked(detail)
            }
            var retryable = failure != .timedOut && failure != .cancelled && hijacked[index] == nil
            // A proxy's answer (407, 403, a refused CONNECT) would be the same again.
            if case .proxyFailed(let proxyFailure) = failure, proxyFailure.name != "unreachable" { retryable = false }
            if retryable && mayRetry && attempts < Self.maximumAttempts {
                return true
            }
            states[index] = .done(
                EndpointResult(
                    url: url, isValid: false, httpStatus: nil, location: nil, failure: failure, mismatch: nil,
                    duration: duration, attempts: attempts))
            return false
        case .exhausted:
            return false  // The runner ends the check with the error; no result of this endpoint's.
        }
    }

    /// Records the captive-portal API's answer.
    mutating func recordAPI(_ outcome: APIOutcome) {
        if apiOutcome == nil { apiOutcome = outcome }
    }

    /// Ends every open endpoint with `failure` (the deadline passed, or the check
    /// was cancelled); a missing API answer counts as failed.
    mutating func finishOpen(with failure: ProbeFailure, at now: ContinuousClock.Instant) {
        for index in states.indices {
            guard case .pending(let attempts) = states[index] else { continue }
            states[index] = .done(
                EndpointResult(
                    url: endpoints[index].url, isValid: false, httpStatus: nil, location: nil,
                    failure: hijacked[index].map(ProbeFailure.dnsHijacked) ?? failure,
                    mismatch: nil, duration: started[index].map { now - $0 } ?? .zero, attempts: attempts))
        }
        if apiURL != nil && apiOutcome == nil { apiOutcome = .failed }
    }

    var succeeded: Int {
        states.reduce(0) { count, state in
            if case .done(let result) = state, result.isValid { return count + 1 }
            return count
        }
    }

    private var pending: Int {
        states.reduce(0) { count, state in
            if case .pending = state { return count + 1 }
            return count
        }
    }

    /// Whether the verdict can no longer change: the API said captive; or the
    /// threshold is met with a success over each scheme in use (and the API, if
    /// any, has answered) and the resolver is not known to lie; or every endpoint
    /// is done. Failures never end a check early: an endpoint still open could be
    /// the redirect that names a portal, or the success that makes it limited
    /// rather than noInternet.
    var isDecided: Bool {
        if case .answered(let api)? = apiOutcome, api.captive { return true }
        if apiURL != nil && apiOutcome == nil { return false }
        return pending == 0 || (!resolverHijacked && succeeded >= required && eachSchemeSucceeded && confirmed)
    }

    /// Whether strict mode is satisfied: off, or expected answers came from two vendors.
    private var confirmed: Bool {
        guard requiresTwoVendors else { return true }
        var vendors = Set<String>()
        for (endpoint, state) in zip(endpoints, states) {
            if case .done(let result) = state, result.isValid { vendors.insert(Self.vendor(of: endpoint.url)) }
        }
        return vendors.count >= 2
    }

    /// A check endpoint's vendor, approximated by its host's registrable domain: the
    /// last two labels (`www.google.com` → `google.com`), or the address for one given
    /// by address.
    static func vendor(of url: URL) -> String {
        let host = (url.host ?? "").lowercased()
        if (try? IPAddress(host)) != nil { return host }
        let labels = host.split(separator: ".", omittingEmptySubsequences: true)
        return labels.suffix(2).joined(separator: ".")
    }

    /// Whether every scheme in use (plain HTTP, HTTPS) has a valid answer: online
    /// needs both, so that HTTPS blocked behind working HTTP is limited, not online.
    private var eachSchemeSucceeded: Bool {
        var used = (http: false, https: false)
        var valid = (http: false, https: false)
        for (endpoint, state) in zip(endpoints, states) {
            let ok: Bool
            if case .done(let result) = state { ok = result.isValid } else { ok = false }
            if endpoint.isHTTPS {
                used.https = true
                valid.https = valid.https || ok
            } else {
                used.http = true
                valid.http = valid.http || ok
            }
        }
        return (!used.http || valid.http) && (!used.https || valid.https)
    }

    /// The per-endpoint results, in configuration order (open ones omitted).
    var results: [EndpointResult] {
        states.compactMap { state in
            if case .done(let result) = state { return result }
            return nil
        }
    }

    /// The verdict from what has been recorded (call once decided or finished).
    var verdict: Verdict {
        let results = results
        let plain = zip(endpoints, states).compactMap { endpoint, state -> EndpointResult? in
            guard !endpoint.isHTTPS, case .done(let result) = state else { return nil }
            return result
        }
        // An answer that met its expectation is no interception, even when it can't
        // count (a hijacked name's address serving the expected 204).
        let intercepted = plain.filter {
            !$0.isValid && $0.mismatch != nil && $0.httpStatus.map(Self.looksIntercepted) == true
        }
        // A Location that fails the portal-URL rule (javascript:, credentials…) is
        // not shown: the probe URL that was intercepted is.
        let interceptionURL =
            intercepted.lazy.compactMap { result in
                result.location.flatMap { PortalURL.location($0, relativeTo: result.url) }
            }.first ?? intercepted.first?.url
        if case .answered(let api)? = apiOutcome, api.captive, let apiURL {
            return .captivePortal(loginURL: api.userPortalURL ?? interceptionURL ?? apiURL)
        }
        // A resolver that answers three vendors' names with one address answers for
        // a portal (or is broken): what the other endpoints answered can't outvote it.
        if resolverHijacked { return interceptionURL.map { .captivePortal(loginURL: $0) } ?? .noInternet(.dnsHijacked) }
        if succeeded >= required && eachSchemeSucceeded {
            if confirmed { return .online }
            if interceptionURL == nil { return .limited(.unconfirmed) }
        }
        if let interceptionURL { return .captivePortal(loginURL: interceptionURL) }
        if succeeded > 0 {
            let https = zip(endpoints, states).compactMap { endpoint, state -> EndpointResult? in
                guard endpoint.isHTTPS, case .done(let result) = state else { return nil }
                return result
            }
            let httpOK = plain.contains(where: \.isValid)
            let httpsOK = https.contains(where: \.isValid)
            if httpOK && !https.isEmpty && !httpsOK { return .limited(.httpsBlocked) }
            if httpsOK && !plain.isEmpty && !httpOK { return .limited(.httpBlocked) }
            return .limited(.belowThreshold(succeeded: succeeded, required: required))
        }
        if let failure = Self.dominantProxyFailure(results) { return .proxyFailed(failure) }
        return .noInternet(Self.dominantReason(results))
    }

    /// When probes went through a proxy that turned them away, the most common way
    /// it did (ties to the first seen); nil when none did. Nothing answered as
    /// expected and nothing was intercepted by then: the proxy is what stands in the
    /// way, not a missing Internet.
    static func dominantProxyFailure(_ results: [EndpointResult]) -> ProxyFailure? {
        var counts: [(failure: ProxyFailure, count: Int)] = []
        for result in results {
            guard case .proxyFailed(let failure)? = result.failure else { continue }
            if let index = counts.firstIndex(where: { $0.failure == failure }) {
                counts[index].count += 1
            } else {
                counts.append((failure, 1))
            }
        }
        var best: (failure: ProxyFailure, count: Int)?
        for entry in counts where entry.count > (best?.count ?? 0) { best = entry }
        return best?.failure
    }

    /// A plain-HTTP answer that only something in the way would give instead of
    /// the expected one: a redirect, 511 Network Authentication Required, or a
    /// 2xx with other content (a login page where `204` was due).
    static func looksIntercepted(_ status: Int) -> Bool {
        (200..<400).contains(status) || status == 511
    }

    /// The most common failure, ties to the more specific reason; but DNS
    /// hijacking whenever an endpoint saw it (it explains the other failures: the
    /// probes went to the wrong place).
    static func dominantReason(_ results: [EndpointResult]) -> NoInternetReason {
        if results.contains(where: { $0.failure?.reason == .dnsHijacked }) { return .dnsHijacked }
        let order: [NoInternetReason] = [
            .connectionRefused, .networkUnreachable, .nameResolutionFailed, .tlsFailed, .unexpectedResponse,
            .connectionFailed, .timedOut,
        ]
        var counts: [NoInternetReason: Int] = [:]
        for result in results where !result.isValid {
            counts[result.failure?.reason ?? .unexpectedResponse, default: 0] += 1
        }
        guard !counts.isEmpty else { return .timedOut }
        return order.max { lhs, rhs in
            let (left, right) = (counts[lhs] ?? 0, counts[rhs] ?? 0)
            if left != right { return left < right }
            return order.firstIndex(of: lhs)! > order.firstIndex(of: rhs)!
        }!
    }
}
