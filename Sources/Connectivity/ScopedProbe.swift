import Foundation
import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Reachability

/// One probe within a ``ProbeScope``: the endpoint's name resolved for the scope's
/// family, the socket bound to the scope's interface (`SO_BINDTOIFINDEX`), an
/// HTTP/1.1 exchange over SwiftNIO (and NIOSSL for HTTPS) on the namespace's probe
/// event loop, so that the socket is made inside the namespace.
///
/// AsyncHTTPClient has no way to set a socket option on its connections, hence a
/// bootstrap of our own for scoped probes; the request carries the same headers,
/// the answer is capped the same way and judged by the same code.
struct ScopedProbe: Sendable {
    let scope: ProbeScope
    let client: ProbeClient
    let environment: NetworkEnvironment
    /// For HTTPS endpoints; nil when the TLS configuration could not be made
    /// (HTTPS probes then fail with that reason).
    let sslContext: Result<NIOSSLContext, ProbeFailure>

    /// The transport for one check in `scope`; the TLS context is made here, once,
    /// when `needsTLS` (an HTTPS endpoint or API URL).
    static func make(
        scope: ProbeScope, client: ProbeClient, environment: NetworkEnvironment,
        tlsConfiguration: TLSConfiguration?, needsTLS: Bool
    ) -> ScopedProbe {
        var context: Result<NIOSSLContext, ProbeFailure> = .failure(.tlsFailed("no TLS context was made"))
        if needsTLS {
            do {
                context = .success(try NIOSSLContext(configuration: tlsConfiguration ?? .makeClientConfiguration()))
            } catch {
                context = .failure(.tlsFailed(ProbeRunner.tlsSummary(String(describing: error))))
            }
        }
        return ScopedProbe(scope: scope, client: client, environment: environment, sslContext: context)
    }

    /// `SO_BINDTOIFINDEX` (Linux 5.0): `SO_BINDTODEVICE` by interface index.
    static let bindToInterfaceIndex = NIOBSDSocket.Option(rawValue: 62)

    /// Why a scoped exchange ended without an answer (besides NIO's own errors).
    enum ExchangeError: Error, CustomStringConvertible {
        case closedEarly
        var description: String { "the connection closed before the answer ended" }
    }

    /// Fetches `endpoint` with `headers`, keeping at most `cap` bytes of body.
    /// Cancelling the calling task closes the connection at once.
    func fetch(
        _ endpoint: ConnectivityEndpoint, headers: HTTPHeaders, cap: Int, timeout: Duration
    ) async -> Result<ProbeResponse, ProbeFailure> {
        let url = endpoint.url
        guard let host = url.host, !host.isEmpty else { return .failure(.connectionFailed("the URL has no host")) }
        let port = url.port ?? (endpoint.isHTTPS ? 443 : 80)
        let addresses: [IPAddress]
        switch await resolve(host) {
        case .success(let list): addresses = list
        case .failure(let failure): return .failure(failure)
        }
        let loop = client.http.eventLoopGroup.next()
        var index: UInt32 = 0
        if let name = scope.interface {
            // Asked on the probe loop: that thread is in the namespace.
            index = (try? await loop.submit { if_nametoindex(name) }.get()) ?? 0
            guard index != 0 else {
                return .failure(.networkUnreachable("no interface \(quotedForMessage(name)) in the namespace"))
            }
        }
        var head = HTTPRequestHead(
            version: .http1_1, method: HTTPMethod(rawValue: endpoint.method), uri: Self.target(url))
        let literal = (try? IPAddress(host)) != nil
        let hostField = (host.contains(":") ? "[\(host)]" : host) + (url.port.map { ":\($0)" } ?? "")
        head.headers.add(name: "Host", value: hostField)
        for (name, value) in headers { head.headers.replaceOrAdd(name: name, value: value) }
        var tls: NIOSSLContext?
        if endpoint.isHTTPS {
            switch sslContext {
            case .success(let context): tls = context
            case .failure(let failure): return .failure(failure)
            }
        }
        var last: ProbeFailure = .connectionFailed("no address")
        for (position, address) in addresses.enumerated() {
            let outcome = await exchange(
                address: address, port: port, interfaceIndex: index, head: head, url: url, cap: cap, on: loop,
                tls: tls.map { ($0, literal ? nil : host) }, connectTimeout: TimeAmount(timeout))
            switch outcome {
            case .success: return outcome
            case .failure(let failure):
                last = failure
                // Another address only when this one could not be connected to.
                let connectFailure: Bool
                switch failure {
                case .connectionRefused, .networkUnreachable: connectFailure = true
                default: connectFailure = false
                }
                guard connectFailure, position < addresses.count - 1, !Task.isCancelled else { return outcome }
            }
        }
        return .failure(last)
    }

    /// The addresses to try for `host`: the literal itself, or the name's answers
    /// (inside the namespace), those of the scope's family only, in the resolver's order.
    func resolve(_ host: String) async -> Result<[IPAddress], ProbeFailure> {
        if let literal = try? IPAddress(host) {
            guard scope.family == nil || literal.family == scope.family else {
                return .failure(.nameResolutionFailed("\(host) is not an \(scope) address"))
            }
            return .success([literal])
        }
        guard let lookup = await ProbeRunner.lookUp(host, environment: environment) else { return .failure(.cancelled) }
        guard let answers = lookup else { return .failure(.nameResolutionFailed("\(host) does not resolve")) }
        let usable = answers.filter { scope.family == nil || $0.family == scope.family }
        guard !usable.isEmpty else {
            let family = scope.family == .ipv6 ? "IPv6" : "IPv4"
            return .failure(.nameResolutionFailed("\(host) has no \(family) address"))
        }
        return .success(usable)
    }

    /// The request target: the URL's path (percent-encoded as given, `/` when
    /// empty) and query.
    static func target(_ url: URL) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let path = components?.percentEncodedPath ?? ""
        let query = components?.percentEncodedQuery.map { "?\($0)" } ?? ""
        return (path.isEmpty ? "/" : path) + query
    }

    /// One connection to `address`: connect (bound to the interface), send the
    /// request, collect the answer.
    private func exchange(
        address: IPAddress, port: Int, interfaceIndex: UInt32, head: HTTPRequestHead, url: URL, cap: Int,
        on loop: any EventLoop, tls: (NIOSSLContext, String?)?, connectTimeout: TimeAmount
    ) async -> Result<ProbeResponse, ProbeFailure> {
        let socketAddress: SocketAddress
        do {
            socketAddress = try SocketAddress(ipAddress: address.description, port: port)
        } catch {
            return .failure(.connectionFailed("\(address) can't be connected to: \(error)"))
        }
        let promise = loop.makePromise(of: ProbeResponse.self)
        let channel = LockedValue<(any Channel)?>(nil)
        let cancelled = LockedValue(false)
        // Connected from the probe loop: NIO makes the socket on the thread that
        // calls connect, and only that thread is in the namespace.
        let connect: @Sendable () -> EventLoopFuture<any Channel> = {
            var bootstrap = ClientBootstrap(group: loop).connectTimeout(connectTimeout)
            if interfaceIndex != 0 {
                bootstrap = bootstrap.channelOption(
                    ChannelOptions.socketOption(Self.bindToInterfaceIndex), value: SocketOptionValue(interfaceIndex))
            }
            return bootstrap.channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let (context, serverName) = tls {
                        try pipeline.addHandler(NIOSSLClientHandler(context: context, serverHostname: serverName))
                    }
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(ResponseCollector(head: head, url: url, cap: cap, promise: promise))
                }
            }.connect(to: socketAddress)
        }
        return await withTaskCancellationHandler {
            loop.flatSubmit(connect).whenComplete { result in
                switch result {
                case .success(let connected):
                    let closeNow = cancelled.withLock { isCancelled -> Bool in
                        if !isCancelled { channel.withLock { $0 = connected } }
                        return isCancelled
                    }
                    if closeNow { connected.close(promise: nil) }
                case .failure(let error):
                    promise.fail(error)
                }
            }
            do {
                return .success(try await promise.futureResult.get())
            } catch {
                return .failure(Task.isCancelled ? .cancelled : ProbeRunner.classify(error))
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
            promise.fail(CancellationError())
            channel.withLock { $0 }?.close(promise: nil)
        }
    }
}

/// Sends the request once the connection is up, then collects the answer: the
/// head, and the body up to the cap (past it the connection is closed and the
/// answer stands, marked truncated). Lives on its channel's event loop.
private final class ResponseCollector: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    private let head: HTTPRequestHead
    private let url: URL
    private let cap: Int
    private let promise: EventLoopPromise<ProbeResponse>
    private var status: Int?
    private var headers: [ProbeResponse.HTTPHeader] = []
    private var body: [UInt8] = []
    private var finished = false

    init(head: HTTPRequestHead, url: URL, cap: Int, promise: EventLoopPromise<ProbeResponse>) {
        self.head = head
        self.url = url
        self.cap = cap
        self.promise = promise
    }

    func channelActive(context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !finished else { return }
        switch unwrapInboundIn(data) {
        case .head(let response):
            // An interim answer (100 Continue, 103 Early Hints) is not the answer.
            guard response.status.code >= 200 || response.status.code < 100 else { return }
            status = Int(response.status.code)
            headers = response.headers.map { ProbeResponse.HTTPHeader(name: $0.name, value: $0.value) }
        case .body(let buffer):
            let room = cap - body.count
            if buffer.readableBytes > room {
                body += buffer.readableBytesView.prefix(room)
                finish(context, truncated: true)
            } else {
                body += buffer.readableBytesView
            }
        case .end:
            finish(context, truncated: false)
        }
    }

    private func finish(_ context: ChannelHandlerContext, truncated: Bool) {
        guard !finished else { return }
        finished = true
        if let status {
            promise.succeed(
                ProbeResponse(url: url, status: status, headers: headers, body: body, isBodyTruncated: truncated))
        } else {
            promise.fail(ScopedProbe.ExchangeError.closedEarly)
        }
        context.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !finished else { return }
        finished = true
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !finished {
            finished = true
            promise.fail(ScopedProbe.ExchangeError.closedEarly)
        }
        context.fireChannelInactive()
    }
}
