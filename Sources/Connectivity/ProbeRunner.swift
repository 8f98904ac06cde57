import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Runs one check: every endpoint probed concurrently (and the RFC 8908 API, when
/// configured), a fast transport failure tried once more, stopping as soon as the
/// ``CheckTally`` is decided or the deadline passes. Cancelling the calling task
/// cancels every probe in flight.
struct ProbeRunner: Sendable {
    let client: HTTPClient
    let endpoints: [ConnectivityEndpoint]
    let successThreshold: Double
    let captivePortalAPI: URL?
    let probeTimeout: Duration
    let checkDeadline: Duration
    let maximumBodySize: Int
    let userAgent: String
    let tlsConfiguration: TLSConfiguration?
    /// The pause before a fast failure's second attempt.
    static let retryDelay: Duration = .milliseconds(200)

    struct Outcome: Sendable {
        var verdict: Verdict
        var endpoints: [EndpointResult]
        var api: CaptivePortalAPIResponse?
    }

    private enum Event: Sendable {
        case attempt(Int, AttemptOutcome)
        case retryDue(Int)
        case api(APIOutcome)
        case deadline
    }

    func run() async -> Outcome {
        let clock = ContinuousClock()
        let deadline = clock.now + checkDeadline
        var tally = CheckTally(endpoints: endpoints, successThreshold: successThreshold, apiURL: captivePortalAPI)
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
                try? await clock.sleep(until: deadline)
                return .deadline
            }
            while !tally.isDecided, !Task.isCancelled, let event = await group.next() {
                let now = clock.now
                switch event {
                case .attempt(let index, let outcome):
                    let mayRetry = deadline - now > Self.retryDelay * 2
                    if tally.record(index, outcome, at: now, mayRetry: mayRetry) {
                        group.addTask {
                            try? await Task.sleep(for: Self.retryDelay)
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
        return Outcome(verdict: tally.verdict, endpoints: tally.results, api: api)
    }

    /// One attempt, bounded by `timeout` (the request, and the body read).
    func probe(_ endpoint: ConnectivityEndpoint, timeout: Duration) async -> AttemptOutcome {
        var building = HTTPClientRequest(url: endpoint.url.absoluteString)
        building.method = HTTPMethod(rawValue: endpoint.method)
        building.headers.add(name: "User-Agent", value: userAgent)
        building.headers.add(name: "Accept", value: "*/*")
        // Never an answer from a cache between us and the endpoint.
        building.headers.add(name: "Cache-Control", value: "no-cache, no-store, max-age=0")
        building.headers.add(name: "Pragma", value: "no-cache")
        building.headers.add(name: "Connection", value: "close")
        for (name, value) in endpoint.headers { building.headers.replaceOrAdd(name: name, value: value) }
        if endpoint.isHTTPS { building.tlsConfiguration = tlsConfiguration }
        let url = endpoint.url
        let cap = maximumBodySize
        let request = building
        let outcome = await Self.withTimeout(timeout) { () async -> AttemptOutcome in
            do {
                let response = try await client.execute(request, deadline: .now() + .init(timeout))
                var body: [UInt8] = []
                var truncated = false
                for try await chunk in response.body {
                    let room = cap - body.count
                    if chunk.readableBytes > room {
                        body += chunk.readableBytesView.prefix(room)
                        truncated = true
                        break  // Ends the stream: the connection is closed, the rest never read.
                    }
                    body += chunk.readableBytesView
                }
                return .answered(
                    ProbeResponse(
                        url: url, status: Int(response.status.code),
                        headers: response.headers.map { ProbeResponse.HTTPHeader(name: $0.name, value: $0.value) },
                        body: body, isBodyTruncated: truncated))
            } catch {
                return .failed(Self.classify(error))
            }
        }
        return outcome ?? .failed(Task.isCancelled ? .cancelled : .timedOut)
    }

    /// Fetches the RFC 8908 API (`application/captive+json`).
    func fetchAPI(_ url: URL, timeout: Duration) async -> APIOutcome {
        let endpoint = ConnectivityEndpoint(
            url: url, expectation: .status(200), headers: ["Accept": "application/captive+json"])
        guard case .answered(let response) = await probe(endpoint, timeout: timeout), response.isSuccess,
            !response.isBodyTruncated, let parsed = CaptivePortalAPIResponse(json: response.body)
        else { return .failed }
        return .answered(parsed)
    }

    /// `body`'s value, or nil when `timeout` passes first (`body` is then cancelled).
    static func withTimeout<T: Sendable>(
        _ timeout: Duration, _ body: @escaping @Sendable () async -> T
    ) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Maps AsyncHTTPClient's and NIO's errors to a ``ProbeFailure``.
    static func classify(_ error: any Error) -> ProbeFailure {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .deadlineExceeded, .connectTimeout, .readTimeout, .writeTimeout, .tlsHandshakeTimeout,
                .getConnectionFromPoolTimeout:
                return .timedOut
            case .cancelled:
                return .cancelled
            default:
                return .connectionFailed(String(describing: error))
            }
        case let error as NIOConnectionError:
            if let first = error.connectionErrors.first { return classify(first.error) }
            let resolution = [error.dnsAError, error.dnsAAAAError].compactMap { $0 }.first
            return .nameResolutionFailed(resolution.map { String(describing: $0) } ?? "no address for \(error.host)")
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return .connectionRefused
            case ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL: return .networkUnreachable(String(cString: strerror(error.errnoCode)))
            case ETIMEDOUT: return .timedOut
            default: return .connectionFailed(String(describing: error))
            }
        case let error as ChannelError:
            if case .connectTimeout = error { return .timedOut }
            return .connectionFailed(String(describing: error))
        case let error as SocketAddressError:
            return .nameResolutionFailed(String(describing: error))
        case let error as NIOSSLError:
            return .tlsFailed(String(describing: error))
        case let error as BoringSSLError:
            return .tlsFailed(String(describing: error))
        case let error as NIOSSLExtraError:
            return .tlsFailed(String(describing: error))
        case is CancellationError:
            return .cancelled
        default:
            return .connectionFailed(String(describing: error))
        }
    }
}
