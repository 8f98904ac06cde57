import Foundation
import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Reachability

/// The probes' one transport: an HTTP/1.1 exchange over SwiftNIO (and NIOSSL for
/// HTTPS) on the namespace's probe event loop, so that every socket is made inside
/// the namespace; the endpoint's name resolved there too (``ProbeRunner/lookUp(_:environment:)``),
/// for the ``ProbeScope``'s family; within an interface scope, the socket bound to
/// it (`SO_BINDTOIFINDEX`); through an HTTP proxy as curl does. A name with
/// addresses of both families is connected to as RFC 8305 says (SwiftNIO's Happy
/// Eyeballs: IPv6 first, IPv4 250 ms later if that has not connected), so a
/// black-holed family costs a quarter second, not the probe.
///
/// Every probe, scoped or not, and the RFC 8908 API fetch go through it: the
/// request carries the same headers, the answer is capped the same way and judged
/// by the same code. (An HTTP client library would bring what probes never use —
/// HTTP/2, connection pools, redirects, decompression — and can set no socket
/// option on its connections.)
struct ProbeTransport: Sendable {
    let scope: ProbeScope
    let client: ProbeClient
    let environment: NetworkEnvironment
    /// The configuration's TLS context, for HTTPS endpoints.
    let tls: ProbeTLSContext

    /// `SO_BINDTOIFINDEX` (Linux 5.0): `SO_BINDTODEVICE` by interface index.
    static let bindToInterfaceIndex = NIOBSDSocket.Option(rawValue: 62)

    /// Why a scoped exchange ended without an answer (besides NIO's own errors).
    enum ExchangeError: Error, CustomStringConvertible {
        case closedEarly
        var description: String { "the connection closed before the answer ended" }
    }

    /// Fetches `endpoint` with `headers`, keeping at most `cap` bytes of body, going
    /// `route`: directly, or through an HTTP proxy as curl and URLSession do (a
    /// plain-HTTP request sent to the proxy whole, in absolute form; HTTPS through a
    /// `CONNECT` tunnel, TLS end to end). Cancelling the calling task closes the
    /// connection at once. What the network does is the result; the process out of
    /// descriptors (or memory) for the socket is thrown: no verdict can come of it.
    /// `reached` is set once the way to the endpoint is open: connected (to the
    /// endpoint, or to the proxy for plain HTTP), or the proxy's tunnel opened.
    func fetch(
        _ endpoint: ConnectivityEndpoint, headers: HTTPHeaders, cap: Int, timeout: Duration,
        route: ProxyRoute, reached: LockedValue<Bool>
    ) async throws(ConnectivityError) -> Result<ProbeResponse, ProbeFailure> {
        let url = endpoint.url
        guard let host = url.host, !host.isEmpty else { return .failure(.connectionFailed("the URL has no host")) }
        let port = url.port ?? (endpoint.isHTTPS ? 443 : 80)
        var proxy: ProxyServer?
        if case .proxy(let server) = route { proxy = server }
        let addresses: [IPAddress]
        switch try await resolve(proxy?.host ?? host) {
        case .success(let list): addresses = list
        case .failure(.cancelled): return .failure(.cancelled)
        case .failure(let failure):
            guard proxy != nil else { return .failure(failure) }
            return .failure(.proxyFailed(.unreachable("\(failure)")))
        }
        let loop = client.loops.next()
        var index: UInt32 = 0
        if let name = scope.interface {
            // Asked on the probe loop: that thread is in the namespace.
            index = (try? await client.value(loop.submit { if_nametoindex(name) })) ?? 0
            guard index != 0 else {
                return .failure(.networkUnreachable("no interface \(quotedForMessage(name)) in the namespace"))
            }
        }
        // Through a proxy, plain HTTP goes in absolute form (the proxy's to send on).
        let absolute = proxy != nil && !endpoint.isHTTPS
        var head = HTTPRequestHead(
            version: .http1_1, method: HTTPMethod(rawValue: endpoint.method),
            uri: absolute ? Self.absoluteTarget(url) : Self.target(url))
        let literal = (try? IPAddress(host)) != nil
        let bracketed = host.contains(":") ? "[\(host)]" : host
        let hostField = bracketed + (url.port.map { ":\($0)" } ?? "")
        head.headers.add(name: "Host", value: hostField)
        for (name, value) in headers { head.headers.replaceOrAdd(name: name, value: value) }
        if absolute, let authorization = proxy?.authorization {
            head.headers.add(name: "Proxy-Authorization", value: authorization)
        }
        let tunnel =
            proxy != nil && endpoint.isHTTPS ? ProxyTunnel(authority: "\(bracketed):\(port)", proxy: proxy!) : nil
        var tls: NIOSSLContext?
        if endpoint.isHTTPS {
            switch self.tls.context {
            case .success(let context): tls = context
            case .failure(let failure): return .failure(failure)
            }
        }
        var outcome = try await exchange(
            host: proxy?.host ?? host, addresses: addresses, port: proxy?.port ?? port, interfaceIndex: index,
            head: head, url: url, cap: cap, on: loop, tls: tls.map { ($0, literal ? nil : host) }, tunnel: tunnel,
            connectTimeout: TimeAmount(timeout), reached: reached)
        if proxy != nil, case .failure(let failure) = outcome {
            // The connection is to the proxy: failing to make it is the proxy's.
            switch failure {
            case .connectionRefused: outcome = .failure(.proxyFailed(.unreachable("connection refused")))
            case .networkUnreachable(let detail): outcome = .failure(.proxyFailed(.unreachable(detail)))
            default: break
            }
        }
        return outcome
    }

    /// The addresses to try for `host`: the literal itself, or the name's answers
    /// (inside the namespace), those of the scope's family only, in the resolver's order.
    /// Throws when the lookup could not be made for lack of descriptors or memory.
    func resolve(_ host: String) async throws(ConnectivityError) -> Result<[IPAddress], ProbeFailure> {
        if let literal = try? IPAddress(host) {
            guard scope.family == nil || literal.family == scope.family else {
                return .failure(.nameResolutionFailed("\(host) is not an \(scope) address"))
            }
            return .success([literal])
        }
        let answers: [IPAddress]
        switch await ProbeRunner.lookUp(host, environment: environment) {
        case nil: return .failure(.cancelled)
        case .noAnswer?: return .failure(.nameResolutionFailed("\(host) does not resolve"))
        case .exhausted(let error)?: throw error
        case .addresses(let list)?: answers = list
        }
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

    /// The request target a proxy is sent for plain HTTP: the whole URL, without a
    /// fragment or credentials.
    static func absoluteTarget(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url.absoluteString
        }
        components.fragment = nil
        components.user = nil
        components.password = nil
        if components.percentEncodedPath.isEmpty { components.percentEncodedPath = "/" }
        return components.string ?? url.absoluteString
    }

    /// One connection to `host` at one of `addresses` (Happy Eyeballs between the
    /// families; another address only when one could not be connected to), bound to
    /// the interface when `interfaceIndex` isn't 0; then the proxy's tunnel when
    /// there is one, the request, the answer. Throws when the socket can't be made
    /// for lack of descriptors or memory (``ProbeRunner/exhaustion(_:)``).
    private func exchange(
        host: String, addresses: [IPAddress], port: Int, interfaceIndex: UInt32, head: HTTPRequestHead, url: URL,
        cap: Int, on loop: any EventLoop, tls: (NIOSSLContext, String?)?, tunnel: ProxyTunnel?,
        connectTimeout: TimeAmount, reached: LockedValue<Bool>
    ) async throws(ConnectivityError) -> Result<ProbeResponse, ProbeFailure> {
        let answers: ResolvedAnswers
        do {
            answers = try ResolvedAnswers(addresses, port: port, loop: loop)
        } catch {
            return .failure(.connectionFailed("\(host) can't be connected to: \(error)"))
        }
        let promise = loop.makePromise(of: ProbeResponse.self)
        let channel = LockedValue<(any Channel)?>(nil)
        let cancelled = LockedValue(false)
        // Connected from the probe loop: NIO makes the socket on the thread that
        // calls connect, and only that thread is in the namespace.
        let connect: @Sendable () -> EventLoopFuture<any Channel> = {
            var bootstrap = ClientBootstrap(group: loop).connectTimeout(connectTimeout).resolver(answers)
            if interfaceIndex != 0 {
                bootstrap = bootstrap.channelOption(
                    ChannelOptions.socketOption(Self.bindToInterfaceIndex), value: SocketOptionValue(interfaceIndex))
            }
            // What follows the tunnel, when there is one (added once the proxy says 2xx).
            let exchange: @Sendable (ChannelPipeline.SynchronousOperations) throws -> Void = { pipeline in
                if let (context, serverName) = tls {
                    try pipeline.addHandler(NIOSSLClientHandler(context: context, serverHostname: serverName))
                }
                try pipeline.addHandler(HeadLimit())
                try pipeline.addHTTPClientHandlers()
                try pipeline.addHandler(ResponseCollector(head: head, url: url, cap: cap, promise: promise))
            }
            return bootstrap.channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tunnel {
                        try pipeline.addHandler(
                            ProxyTunnelHandler(tunnel: tunnel, promise: promise, tunnelOpen: reached, then: exchange))
                    } else {
                        try exchange(pipeline)
                    }
                }
            }.connect(host: host, port: port)
        }
        let result = await withTaskCancellationHandler {
            loop.flatSubmit(connect).whenComplete { result in
                switch result {
                case .success(let connected):
                    if tunnel == nil { reached.withLock { $0 = true } }
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
                return Result<ProbeResponse, any Error>.success(try await client.value(promise.futureResult))
            } catch {
                return .failure(error)
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
            promise.fail(CancellationError())
            channel.withLock { $0 }?.close(promise: nil)
        }
        switch result {
        case .success(let response): return .success(response)
        case .failure(let error as ProxyTunnelHandler.Refusal): return .failure(error.failure)
        case .failure(_) where Task.isCancelled: return .failure(.cancelled)
        case .failure(let error):
            if let exhausted = ProbeRunner.exhaustion(error) { throw exhausted }
            return .failure(ProbeRunner.classify(error))
        }
    }
}

/// A configuration's TLS context for its probes: made at the first HTTPS probe
/// that needs it (loading the trust roots is most of the cost) and kept with the
/// configuration, so that a check makes none and a configuration without HTTPS
/// endpoints never loads the roots. A failure is not kept: the next probe tries again.
final class ProbeTLSContext: Sendable {
    private let configuration: TLSConfiguration?
    private let made = LockedValue<NIOSSLContext?>(nil)

    /// For `configuration`, or the system's roots when nil.
    init(_ configuration: TLSConfiguration?) {
        self.configuration = configuration
    }

    /// The context, or why it can't be made (HTTPS probes then fail with that reason).
    var context: Result<NIOSSLContext, ProbeFailure> {
        made.withLock { made in
            if let made { return .success(made) }
            do {
                let context = try NIOSSLContext(configuration: configuration ?? .makeClientConfiguration())
                made = context
                return .success(context)
            } catch {
                return .failure(.tlsFailed(ProbeRunner.tlsSummary(String(describing: error))))
            }
        }
    }
}

/// The addresses already resolved (inside the namespace, for the scope's family),
/// answered to SwiftNIO's Happy Eyeballs connector as its A and AAAA queries.
private struct ResolvedAnswers: Resolver, Sendable {
    let ipv4: [SocketAddress]
    let ipv6: [SocketAddress]
    let loop: any EventLoop

    init(_ addresses: [IPAddress], port: Int, loop: any EventLoop) throws {
        var ipv4: [SocketAddress] = []
        var ipv6: [SocketAddress] = []
        for address in addresses {
            let socketAddress = try SocketAddress(ipAddress: address.description, port: port)
            if address.family == .ipv6 { ipv6.append(socketAddress) } else { ipv4.append(socketAddress) }
        }
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.loop = loop
    }

    func initiateAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        loop.makeSucceededFuture(ipv4)
    }

    func initiateAAAAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        loop.makeSucceededFuture(ipv6)
    }

    func cancelQueries() {}
}

/// Bounds what a server sends before its answer's body — the status line, the
/// header fields, and any interim (1xx) heads before the final one — to
/// ``limit`` bytes in all; past it the probe fails (``Exceeded``) and the
/// connection closes. SwiftNIO's decoder bounds the header fields (80 KiB), but
/// not a status line or a stream of interim answers.
final class HeadLimit: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// SwiftNIO's own limit for the header fields, for the whole head.
    static let limit = 80 * 1024

    struct Exceeded: Error, CustomStringConvertible {
        var description: String { "the answer's head is over \(HeadLimit.limit) bytes" }
    }

    private var seen = 0
    /// Bytes of the current line and of the current head, not counting CR.
    private var lineLength = 0
    private var headLength = 0
    /// Whether the current head is an interim answer: its status (bytes 9–11 of
    /// `HTTP/1.1 1xx`) starts with 1.
    private var interim = false
    private var done = false
    private var exceeded = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !exceeded else { return }
        guard !done else { return context.fireChannelRead(data) }
        unwrapInboundIn(data).withUnsafeReadableBytes { scan($0) }
        guard !exceeded else { return context.fireErrorCaught(Exceeded()) }
        context.fireChannelRead(data)
    }

    /// Counts `bytes` toward the limit until a final head ends.
    private func scan(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes {
            seen += 1
            guard seen <= Self.limit else {
                exceeded = true
                return
            }
            if byte == UInt8(ascii: "\n") {
                // A blank line after a status line ends a head; a final one ends the count.
                if lineLength == 0 && headLength > 0 {
                    guard interim else {
                        done = true
                        return
                    }
                    (headLength, interim) = (0, false)
                }
                lineLength = 0
            } else if byte != UInt8(ascii: "\r") {
                if headLength == 9 { interim = byte == UInt8(ascii: "1") }
                lineLength += 1
                headLength += 1
            }
        }
    }
}

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

    private var sent = false

    /// Added to a connected channel (after a proxy's tunnel): sends at once.
    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { send(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context)
        context.fireChannelActive()
    }

    private func send(_ context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
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
            promise.fail(ProbeTransport.ExchangeError.closedEarly)
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
            promise.fail(ProbeTransport.ExchangeError.closedEarly)
        }
        context.fireChannelInactive()
    }
}

/// A `CONNECT` to make through a proxy: the endpoint's `host:port`, and the
/// proxy's credentials.
struct ProxyTunnel: Sendable {
    var authority: String
    var proxy: ProxyServer
}

/// Asks the proxy for a tunnel (`CONNECT authority`), reads its answer's head (at
/// most ``headLimit`` bytes: a proxy that floods is cut off; one that trickles is
/// cut off by the probe's timeout), and on 2xx hands the connection to what follows
/// (`then`: TLS, HTTP, the request) and leaves the pipeline. Any other answer fails
/// the probe with the proxy's refusal.
final class ProxyTunnelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    /// The proxy turned the tunnel away, or answered what is not HTTP.
    struct Refusal: Error {
        var failure: ProbeFailure
    }

    /// The longest answer head taken from a proxy.
    static let headLimit = 16_384

    private let tunnel: ProxyTunnel
    private let promise: EventLoopPromise<ProbeResponse>
    private let then: @Sendable (ChannelPipeline.SynchronousOperations) throws -> Void
    private let tunnelOpen: LockedValue<Bool>
    private var received: [UInt8] = []
    /// Bytes of interim answers taken before `received`.
    private var interim = 0
    private var done = false

    /// `tunnelOpen` is set once the proxy said 2xx.
    init(
        tunnel: ProxyTunnel, promise: EventLoopPromise<ProbeResponse>, tunnelOpen: LockedValue<Bool>,
        then: @escaping @Sendable (ChannelPipeline.SynchronousOperations) throws -> Void
    ) {
        self.tunnel = tunnel
        self.promise = promise
        self.tunnelOpen = tunnelOpen
        self.then = then
    }

    func channelActive(context: ChannelHandlerContext) {
        var request = "CONNECT \(tunnel.authority) HTTP/1.1\r\nHost: \(tunnel.authority)\r\n"
        if let authorization = tunnel.proxy.authorization { request += "Proxy-Authorization: \(authorization)\r\n" }
        request += "\r\n"
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: request)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        let buffer = unwrapInboundIn(data)
        received += buffer.readableBytesView.prefix(max(0, Self.headLimit + 1 - interim - received.count))
        var end: Int
        var status: Int
        repeat {
            guard let found = Self.endOfHead(received) else {
                if interim + received.count > Self.headLimit {
                    fail(context, .connectionFailed("the proxy's answer to CONNECT is over \(Self.headLimit) bytes"))
                }
                return
            }
            guard let code = Self.status(received[..<found]) else {
                fail(context, .connectionFailed("the proxy's answer to CONNECT is not HTTP"))
                return
            }
            (end, status) = (found, code)
            // An interim answer (100 Continue) is not the answer; it counts toward the limit.
            if (100..<200).contains(status) {
                interim += end
                received.removeFirst(end)
            }
        } while (100..<200).contains(status)
        switch status {
        case 200..<300:
            // The server speaks first only after our TLS hello: bytes past the head
            // are a proxy that doesn't tunnel.
            guard end == received.count else {
                fail(context, .connectionFailed("the proxy sent data before the tunnel was used"))
                return
            }
            done = true
            tunnelOpen.withLock { $0 = true }
            do {
                try then(context.pipeline.syncOperations)
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            } catch {
                promise.fail(error)
                context.close(promise: nil)
            }
        // 401 too: only the proxy can answer a CONNECT (tinyproxy says 401 to wrong
        // credentials).
        case 401, 407: fail(context, .proxyFailed(.authenticationRequired))
        default: fail(context, .proxyFailed(.refused(status: status)))
        }
    }

    /// The index just past the head's blank line, if it has come.
    static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return index + 1
        }
        return nil
    }

    /// The status of `HTTP/1.x NNN …`, or nil.
    static func status(_ head: ArraySlice<UInt8>) -> Int? {
        let line = head.prefix { $0 != 13 && $0 != 10 }
        let text = String(decoding: line, as: UTF8.self)
        let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0", parts[1].count == 3,
            let code = Int(parts[1]), (100..<600).contains(code)
        else { return nil }
        return code
    }

    private func fail(_ context: ChannelHandlerContext, _ failure: ProbeFailure) {
        guard !done else { return }
        done = true
        promise.fail(Refusal(failure: failure))
        context.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !done else { return }
        done = true
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            promise.fail(
                Refusal(failure: .connectionFailed("the proxy closed the connection before answering CONNECT")))
        }
        context.fireChannelInactive()
    }
}
