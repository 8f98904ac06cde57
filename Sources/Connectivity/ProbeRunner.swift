import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Reachability
@_spi(Testing) import ReachabilitySystem

/// Runs one check: every endpoint probed concurrently (and the RFC 8908 API, when
/// configured), a fast transport failure tried once more, stopping as soon as the
/// ``CheckTally`` is decided or the deadline passes. Cancelling the calling task
/// cancels every probe in flight.
struct ProbeRunner: Sendable {
    let endpoints: [ConnectivityEndpoint]
    let successThreshold: Double
    let captivePortalAPI: URL?
    let probeTimeout: Duration
    let checkDeadline: Duration
    let maximumBodySize: Int
    let userAgent: String
    /// Where failed probes are logged (debug), if anywhere.
    var logger: Logger? = nil
    /// Where the endpoints' names are resolved for the DNS-hijack check, and whether
    /// to make it (``ConnectivityConfiguration/detectsDNSHijacking``).
    var environment: NetworkEnvironment = .default
    var detectsDNSHijacking = false
    var requiresTwoVendors = false
    /// What every probe of the check (and the API fetch) goes through: within the
    /// check's ``ProbeScope``, directly or through a proxy.
    let transport: ProbeTransport
    /// Which probes go through which proxy (``ConnectivityConfiguration/proxy``).
    var proxy = ProxyRules.direct
    /// The pause before a fast failure's second attempt.
    static let retryDelay: Duration = .milliseconds(200)
    /// What the deadline, the retry's pause and each probe's limit are measured on.
    var clock: any TimerClock = ContinuousClock()

    struct Outcome: Sendable {
        var verdict: Verdict
        var endpoints: [EndpointResult]
        var api: CaptivePortalAPIResponse?
        /// Why the check could not run, when a probe's socket could not be made:
        /// the verdict then means nothing, and callers throw or report this instead.
        var failure: ConnectivityError? = nil
    }

    private enum Event: Sendable {
        case attempt(Int, AttemptOutcome)
        case retryDue(Int)
        case api(APIOutcome)
        case deadline
    }

    func run() async -> Outcome {
        let deadline = clock.now + checkDeadline
        var tally = CheckTally(
            endpoints: endpoints, successThreshold: successThreshold, apiURL: captivePortalAPI,
            requiresTwoVendors: requiresTwoVendors)
        if detectsDNSHijacking {
            let limit = min(probeTimeout, deadline - clock.now)
            let hijacks: Hijacks
            do throws(ConnectivityError) {
                hijacks = try await hijackedEndpoints(within: limit)
            } catch {
                return Outcome(verdict: tally.verdict, endpoints: [], api: nil, failure: error)
            }
            for (index, detail) in hijacks.endpoints {
                tally.markHijacked(index, detail, sharedAddress: hijacks.sharedAddress.contains(index))
            }
        }
        var failure: ConnectivityError?
        await withTaskGroup(of: Event.self) { group in
            func launch(_ index: Int) {
                let now = clock.now
                tally.attemptStarted(index, at: now)
                let limit = min(probeTimeout, deadline - now)
                group.addTask { .attempt(index, await probe(endpoints[index], timeout: limit)) }
            }
            for index in endpoints.indices { launch(index) }
            if let captivePortalAPI {
                group.addTask { .api(await fetchAPI(captivePortalAPI, timeout: min(probeTimeout, checkDeadline))) }
            }
            group.addTask {
                try? await clock.sleep(until: deadline, tolerance: nil)
                return .deadline
            }
            while !tally.isDecided, failure == nil, !Task.isCancelled, let event = await group.next() {
                let now = clock.now
                switch event {
                case .attempt(_, .exhausted(let error)):
                    failure = error
                case .attempt(let index, let outcome):
                    let mayRetry = deadline - now > Self.retryDelay * 2
                    if tally.record(index, outcome, at: now, mayRetry: mayRetry) {
                        group.addTask {
                            try? await clock.sleep(for: Self.retryDelay)
                            return .retryDue(index)
                        }
                    }
                case .retryDue(let index):
                    if clock.now < deadline { launch(index) }
                case .api(let outcome):
                    tally.recordAPI(outcome)
                case .deadline:
                    tally.finishOpen(with: .timedOut, at: now)
                }
            }
            group.cancelAll()
        }
        // Whatever is still open was cut short: by the decision, or by cancellation.
        tally.finishOpen(with: .cancelled, at: clock.now)
        var api: CaptivePortalAPIResponse?
        if case .answered(let answer)? = tally.apiOutcome { api = answer }
        let outcome = Outcome(verdict: tally.verdict, endpoints: tally.results, api: api, failure: failure)
        if let logger, logger.logLevel <= .debug {
            for endpoint in outcome.endpoints where !endpoint.isValid {
                logger.debug(
                    "connectivity probe failed",
                    metadata: [
                        "url": "\(endpoint.url.absoluteString)", "error": "\(endpoint.error ?? "-")",
                        "attempts": "\(endpoint.attempts)",
                    ])
            }
        }
        return outcome
    }

    /// What the hijack check found: each hijacked endpoint with its detail
    /// (``ProbeFailure/dnsHijacked(_:)``), and which of them the shared-address
    /// rule caught (``sharedAddresses(_:vendors:)``).
    struct Hijacks: Sendable, Equatable {
        var endpoints: [Int: String] = [:]
        var sharedAddress: Set<Int> = []
    }

    /// The endpoints whose host name resolves (inside the namespace, as the probes'
    /// will) to a private or local address (`name → address, a private or local
    /// address`), or to an address the names of ``sharedAddressVendors`` or more
    /// vendors resolved to (``sharedAddresses(_:vendors:)``). Names are resolved at
    /// once, each at most `limit`; one that doesn't resolve in time is left to the
    /// probe. Endpoints given by address are not resolved. Throws when a lookup
    /// could not be made for lack of descriptors or memory.
    func hijackedEndpoints(within limit: Duration) async throws(ConnectivityError) -> Hijacks {
        var names: [String: [Int]] = [:]
        for (index, endpoint) in endpoints.enumerated() {
            // URL.host gives an IPv6 literal without its brackets. A name the probe
            // hands to a proxy is the proxy's to resolve, not this host's.
            guard let host = endpoint.url.host, !host.isEmpty, (try? IPAddress(host)) == nil,
                proxy.route(endpoint.url) == .direct
            else { continue }
            names[host.lowercased(), default: []].append(index)
        }
        guard !names.isEmpty else { return Hijacks() }
        let environment = environment
        let (answers, exhausted) = await withTaskGroup(of: (String, Lookup?).self) { group in
            for name in names.keys {
                group.addTask {
                    (name, await firstResult(within: limit) { await Self.lookUp(name, environment: environment) })
                }
            }
            var answers: [String: [IPAddress]] = [:]
            var exhausted: ConnectivityError?
            for await (name, lookup) in group {
                switch lookup {
                case .addresses(let addresses)?: answers[name] = addresses
                case .exhausted(let error)?: exhausted = exhausted ?? error
                case .noAnswer?, nil: break
                }
            }
            return (answers, exhausted)
        }
        if let exhausted { throw exhausted }
        var vendors: [String: String] = [:]
        for (name, indices) in names { vendors[name] = CheckTally.vendor(of: endpoints[indices[0]].url) }
        return Self.hijacks(names: names, answers: answers, vendors: vendors)
    }

    /// The hijack rule over resolved names, pure: `names` each with its endpoints'
    /// indices, `answers` each name's addresses, `vendors` each name's vendor. A
    /// private or local address is named first; else a shared one.
    static func hijacks(names: [String: [Int]], answers: [String: [IPAddress]], vendors: [String: String]) -> Hijacks {
        var hijacks = Hijacks()
        let shared = sharedAddresses(answers, vendors: vendors)
        for (name, indices) in names {
            let detail: String
            var isShared = false
            if let address = answers[name]?.first(where: \.isPrivateOrLocal) {
                detail = "\(name) → \(address), a private or local address"
            } else if let match = shared[name] {
                detail =
                    "\(name) → \(match.address), one address the names of \(match.vendors.count) vendors "
                    + "(\(match.vendors.joined(separator: ", "))) resolved to"
                isShared = true
            } else {
                continue
            }
            for index in indices {
                hijacks.endpoints[index] = detail
                if isShared { hijacks.sharedAddress.insert(index) }
            }
        }
        return hijacks
    }

    /// An address the names of several vendors resolved to, and those vendors (sorted).
    struct SharedAddress: Sendable, Hashable {
        var address: IPAddress
        var vendors: [String]
    }

    /// The names whose answers hold an address that the names of at least
    /// ``sharedAddressVendors`` vendors (registrable domains) resolved to, as a
    /// portal's resolver answers and real endpoints never do (two vendors may share
    /// a CDN's edge address; three or more on one address is no CDN). Any overlap of
    /// answer sets counts: for each address, the distinct vendors whose names'
    /// answers contain it, whatever else those answers hold. A name with several
    /// such addresses gets the first in its answer order.
    static func sharedAddresses(_ answers: [String: [IPAddress]], vendors: [String: String]) -> [String: SharedAddress]
    {
        var vendorsByAddress: [IPAddress: Set<String>] = [:]
        for (name, addresses) in answers {
            guard let vendor = vendors[name] else { continue }
            for address in Set(addresses) { vendorsByAddress[address, default: []].insert(vendor) }
        }
        let shared = vendorsByAddress.filter { $0.value.count >= sharedAddressVendors }
        guard !shared.isEmpty else { return [:] }
        var matches: [String: SharedAddress] = [:]
        for (name, addresses) in answers {
            guard let address = addresses.first(where: { shared[$0] != nil }), let sharing = shared[address] else {
                continue
            }
            matches[name] = SharedAddress(address: address, vendors: sharing.sorted())
        }
        return matches
    }

    /// How many vendors' names resolving to one address make it a hijack.
    static let sharedAddressVendors = 3

    /// What looking a name up gave.
    enum Lookup: Sendable {
        case addresses([IPAddress])
        /// The name doesn't resolve, or the resolver failed.
        case noAnswer
        /// Out of descriptors or memory for the lookup: no answer about the name.
        case exhausted(ConnectivityError)
    }

    /// `name`'s addresses inside `environment`'s namespace, or nil when the calling
    /// task is cancelled first: getaddrinfo blocks its thread for as long as the
    /// resolver's timeouts say and can't be stopped, so it runs on a thread of its
    /// own and a cancelled caller stops waiting for it (a task group waits for its
    /// children: an uncancellable child would hold the check past its deadline).
    static func lookUp(_ name: String, environment: NetworkEnvironment) async -> Lookup? {
        let first = FirstOf<Lookup?>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                first.begin(continuation)
                Thread.detachNewThread {
                    do throws(ReachabilityError) {
                        let addresses = try HostLookup.addresses(of: name, environment: environment)
                        first.finish(addresses.map(Lookup.addresses) ?? .noAnswer)
                    } catch {
                        first.finish(.exhausted(ConnectivityError(error, while: "a probe's lookup")))
                    }
                }
            }
        } onCancel: {
            first.finish(nil)
        }
    }

    /// One attempt, bounded by `timeout` (the connection, the request, and the body
    /// read), through ``transport``.
    func probe(_ endpoint: ConnectivityEndpoint, timeout: Duration) async -> AttemptOutcome {
        var headers = HTTPHeaders()
        headers.add(name: "User-Agent", value: userAgent)
        headers.add(name: "Accept", value: "*/*")
        // Never an answer from a cache between us and the endpoint.
        headers.add(name: "Cache-Control", value: "no-cache, no-store, max-age=0")
        headers.add(name: "Pragma", value: "no-cache")
        headers.add(name: "Connection", value: "close")
        for (name, value) in endpoint.headers { headers.replaceOrAdd(name: name, value: value) }
        let requestHeaders = headers
        let cap = maximumBodySize
        let route = proxy.route(endpoint.url)
        let transport = self.transport
        let client = transport.client
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        let clock = self.clock
        let reached = LockedValue(false)
        let outcome = await firstResult(within: timeout, clock: clock) { () async -> AttemptOutcome? in
            do {
                _ = try await client.value(client.entered)
            } catch {
                return .failed(.connectionFailed("cannot enter the network namespace: \(error)"))
            }
            let fetched: Result<ProbeResponse, ProbeFailure>
            do throws(ConnectivityError) {
                fetched = try await transport.fetch(
                    endpoint, headers: requestHeaders, cap: cap, timeout: timeout, route: route, reached: reached)
            } catch {
                return .exhausted(error)
            }
            switch fetched {
            case .success(let response):
                let authorized = requestHeaders.contains(name: "Authorization")
                if let failure = Self.proxyRefusal(
                    response, route: route, isHTTPS: endpoint.isHTTPS, sentAuthorization: authorized)
                {
                    return .failed(.proxyFailed(failure))
                }
                return await Self.judge(response, endpoint.expectation, within: deadline - .now(), clock: clock)
            case .failure(let failure):
                return .failed(failure)
            }
        }
        if let outcome { return outcome }
        if Task.isCancelled { return .failed(.cancelled) }
        // Out of time with the proxy's connection or tunnel not made: the proxy's silence.
        if case .proxy = route, !reached.withLock({ $0 }) {
            return .failed(.proxyFailed(.timedOut))
        }
        return .failed(.timedOut)
    }

    /// Judges `response` against `expectation`. A regular expression or a custom
    /// validator may run long (a backtracking pattern against a hostile 64 KiB
    /// body, or slow user code): those run on a thread of their own, and the probe stops
    /// waiting for them at `limit` (timedOut) — it can't stop them, but the check
    /// keeps its deadline.
    static func judge(
        _ response: ProbeResponse, _ expectation: ConnectivityEndpoint.Expectation, within limit: TimeAmount,
        clock: any TimerClock
    ) async -> AttemptOutcome {
        switch expectation {
        case .bodyMatches, .custom: break
        default: return .judged(response, mismatch: expectation.check(response))
        }
        let first = FirstOf<AttemptOutcome>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                first.begin(continuation)
                // A thread of its own: a runaway validator must not hold one of
                // the few threads of Swift's cooperative pool.
                Thread.detachNewThread { first.finish(.judged(response, mismatch: expectation.check(response))) }
                let timer = Task {
                    try? await clock.sleep(for: .nanoseconds(max(0, limit.nanoseconds)))
                    first.finish(.failed(.timedOut))
                }
                first.onFinish { timer.cancel() }
            }
        } onCancel: {
            first.finish(.failed(.cancelled))
        }
    }

    /// Fetches the RFC 8908 API (`application/captive+json`).
    func fetchAPI(_ url: URL, timeout: Duration) async -> APIOutcome {
        let endpoint = ConnectivityEndpoint(
            url: url, expectation: .status(200), headers: ["Accept": "application/captive+json"])
        guard case .judged(let response, nil) = await probe(endpoint, timeout: timeout),
            !response.isBodyTruncated, let parsed = CaptivePortalAPIResponse(json: response.body)
        else { return .failed }
        return .answered(parsed)
    }

    /// BoringSSL's reason (`WRONG_VERSION_NUMBER`, `CERTIFICATE_VERIFY_FAILED`…)
    /// out of NIOSSL's long description, else the description.
    static func tlsSummary(_ text: String) -> String {
        guard let marker = text.range(of: "OPENSSL_internal:") else { return text }
        return String(text[marker.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" })
    }

    /// The proxy's own refusal in an answer to a request sent through it: 407
    /// (only a proxy sends it); 401 to a plain-HTTP request that carried the
    /// proxy's credentials and none of the endpoint's (tinyproxy's answer to wrong
    /// ones: an endpoint that was sent no credentials asks for none); or 403 to a
    /// plain-HTTP request (the proxy's policy: check endpoints don't answer 403; a
    /// portal redirects or answers 200/511).
    static func proxyRefusal(
        _ response: ProbeResponse, route: ProxyRoute, isHTTPS: Bool, sentAuthorization: Bool = false
    ) -> ProxyFailure? {
        guard case .proxy(let server) = route else { return nil }
        if response.status == 407 { return .authenticationRequired }
        if response.status == 401 && !isHTTPS && server.authorization != nil && !sentAuthorization {
            return .authenticationRequired
        }
        if response.status == 403 && !isHTTPS { return .refused(status: 403) }
        return nil
    }

    /// The process out of descriptors or memory for a probe's socket (`EMFILE`,
    /// `ENFILE`, `ENOBUFS`, `ENOMEM`, also inside a failed connection's attempts),
    /// as the check's error; nil for any other failure. A probe that could not be
    /// made says nothing about the network: the check throws it (``run()``).
    static func exhaustion(_ error: any Error) -> ConnectivityError? {
        let code: Int32
        switch error {
        case let error as NIOConnectionError:
            return error.connectionErrors.lazy.compactMap { exhaustion($0.error) }.first
        case let error as IOError: code = error.errnoCode
        default: return nil
        }
        guard SystemError.resourceErrors.contains(code) else { return nil }
        return ConnectivityError(.systemCall, "no socket for a probe", errno: code)
    }

    /// Maps SwiftNIO's and NIOSSL's errors to a ``ProbeFailure``.
    static func classify(_ error: any Error) -> ProbeFailure {
        switch error {
        case let error as NIOConnectionError:
            if let first = error.connectionErrors.first { return classify(first.error) }
            // One wording with the scoped probes': the name, not SwiftNIO's error text.
            return .nameResolutionFailed("\(error.host) does not resolve")
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return .connectionRefused
            case ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL:
                return .networkUnreachable(String(cString: strerror(error.errnoCode)))
            case ETIMEDOUT: return .timedOut
            default: return .connectionFailed(String(describing: error))
            }
        case let error as ChannelError:
            if case .connectTimeout = error { return .timedOut }
            return .connectionFailed(String(describing: error))
        case let error as SocketAddressError:
            if case .unknown(let host, _) = error { return .nameResolutionFailed("\(host) does not resolve") }
            return .nameResolutionFailed(String(describing: error))
        case is NIOSSLError, is BoringSSLError, is NIOSSLExtraError:
            return .tlsFailed(tlsSummary(String(describing: error)))
        case is CancellationError:
            return .cancelled
        default:
            return .connectionFailed(String(describing: error))
        }
    }
}

/// Resumes a continuation with the first of several values; later ones are dropped.
final class FirstOf<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, Never>?
        var early: Value?
        var done = false
        var cleanup: (@Sendable () -> Void)?
    }
    private let state = LockedValue(State())

    func begin(_ continuation: CheckedContinuation<Value, Never>) {
        let early = state.withLock { state -> Value? in
            if let early = state.early { return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    func finish(_ value: Value) {
        let (continuation, cleanup) = state.withLock {
            state -> (CheckedContinuation<Value, Never>?, (@Sendable () -> Void)?) in
            guard !state.done else { return (nil, nil) }
            state.done = true
            if state.continuation == nil { state.early = value }
            defer {
                state.continuation = nil
                state.cleanup = nil
            }
            return (state.continuation, state.cleanup)
        }
        continuation?.resume(returning: value)
        cleanup?()
    }

    /// Runs `cleanup` once a value is in (at once if it already is).
    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.done { return true }
            state.cleanup = cleanup
            return false
        }
        if now { cleanup() }
    }
}
