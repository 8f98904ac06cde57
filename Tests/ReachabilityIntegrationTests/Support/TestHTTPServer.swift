import CNetlink
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Reachability
import ReachabilityBase

/// A real HTTP/1.1 server (SwiftNIO) for the Connectivity tests, listening inside
/// a test namespace (or the process's own) on an ephemeral port. Each path has a
/// behaviour that tests can change while it runs: a plain answer, a redirect, a
/// slow or silent server, an endless body. It records every request it gets.
final class TestHTTPServer: Sendable {
    /// What the server does for one path.
    enum Behaviour: Sendable {
        /// Answers at once.
        case respond(status: Int, headers: [String: String] = [:], body: String = "")
        /// Waits, then behaves as the inner behaviour.
        indirect case delayed(Duration, Behaviour)
        /// Answers 200 and streams a body that never ends, as fast as the client reads.
        case endlessBody
        /// Reads the request and never answers.
        case silent
        /// Each request gets the next of these, in turn.
        indirect case alternating([Behaviour])
    }

    struct Request: Sendable {
        var path: String
        var headers: [String: String]
        var method = "GET"
    }

    private struct State {
        var routes: [String: Behaviour]
        var requests: [Request] = []
        var endlessBytesSent = 0
        /// Endless answers still being written (their client has not hung up).
        var endlessOpen = 0
        /// Delayed answers not given because the client had hung up by then.
        var abandoned = 0
        var turns: [String: Int] = [:]
    }

    /// The server thread's name (the namespace-leak test knows it is the tests').
    static let threadName = "test-http"

    private let group: MultiThreadedEventLoopGroup
    /// The namespace the server's thread left for the test's.
    private let origin: NetworkNamespace?
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>
    let host: String
    let port: Int
    let scheme: String

    /// Starts listening on `host` (default 127.0.0.1) inside `namespace` (nil: the
    /// process's own). The listening socket is made on the server's own event loop
    /// thread after it entered the namespace; no other thread moves.
    /// With `tls` (PEM certificate and key files), it speaks HTTPS.
    init(
        in namespace: TestNamespace?, host: String = "127.0.0.1", port requestedPort: Int = 0,
        tls: (certificate: String, key: String)? = nil, routes: [String: Behaviour]
    ) throws {
        let sslContext = try tls.map { tls in
            try NIOSSLContext(
                configuration: .makeServerConfiguration(
                    certificateChain: try NIOSSLCertificate.fromPEMFile(tls.certificate).map { .certificate($0) },
                    privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.key, format: .pem))))
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let state = NIOLockedValueBox(State(routes: routes))
        let loop = group.next()
        let environment = namespace?.environment ?? .default
        var origin: NetworkNamespace?
        do {
            origin = try loop.submit {
                _ = cnl_set_thread_name(Self.threadName)
                return try environment.enterNetworkNamespaceOnCurrentThread()
            }.wait()
            channel = try loop.flatSubmit {
                ServerBootstrap(group: group)
                    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .childChannelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            if let sslContext {
                                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                            }
                            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                            try channel.pipeline.syncOperations.addHandler(Handler(state: state))
                        }
                    }
                    .bind(host: host, port: requestedPort)
            }.wait()
        } catch {
            Self.shutDown(group, from: origin)
            throw error
        }
        self.origin = origin
        self.group = group
        self.state = state
        self.host = host
        port = channel.localAddress?.port ?? 0
        scheme = tls == nil ? "http" : "https"
    }

    /// Makes a self-signed certificate for `address` (default 127.0.0.1) in
    /// `directory` with openssl; returns the certificate and key paths.
    static func selfSignedCertificate(
        in directory: String, address: String = "127.0.0.1"
    ) throws -> (certificate: String, key: String) {
        let certificate = "\(directory)/cert.pem"
        let key = "\(directory)/key.pem"
        try Command.check([
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=\(address)",
            "-addext", "subjectAltName=IP:\(address)",
        ])
        return (certificate, key)
    }

    deinit {
        try? channel.close().wait()
        Self.shutDown(group, from: origin)
    }

    /// Ends the server's thread, back in `origin` first: the shutdown ends with
    /// Dispatch work that the thread enqueues.
    private static func shutDown(_ group: MultiThreadedEventLoopGroup, from origin: NetworkNamespace?) {
        try? group.next().submit { try origin?.enterOnCurrentThread() }.wait()
        try? group.syncShutdownGracefully()
    }

    /// `http://HOST:PORT/PATH`.
    func url(_ path: String) -> URL { URL(string: "\(scheme)://\(host):\(port)\(path)")! }

    /// Changes what `path` does from now on.
    func set(_ path: String, _ behaviour: Behaviour) {
        state.withLockedValue { state in
            state.routes[path] = behaviour
            state.turns[path] = 0
        }
    }

    /// Every request so far, in arrival order.
    var requests: [Request] { state.withLockedValue { $0.requests } }

    /// Requests for `path` so far.
    func count(_ path: String) -> Int { state.withLockedValue { $0.requests.filter { $0.path == path }.count } }

    /// Delayed answers not given because the client had already hung up.
    var abandoned: Int { state.withLockedValue { $0.abandoned } }

    /// Body bytes the endless routes have written so far.
    var endlessBytesSent: Int { state.withLockedValue { $0.endlessBytesSent } }

    /// Endless answers still being written: their client has not hung up yet.
    var endlessOpen: Int { state.withLockedValue { $0.endlessOpen } }

    private final class Handler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let state: NIOLockedValueBox<State>
        var head: HTTPRequestHead?

        init(state: NIOLockedValueBox<State>) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
            case .body:
                break
            case .end:
                guard let head else { return }
                let path = String(head.uri.prefix { $0 != "?" })
                var headers: [String: String] = [:]
                for (name, value) in head.headers { headers[name.lowercased()] = value }
                let behaviour = state.withLockedValue { state -> Behaviour in
                    state.requests.append(Request(path: path, headers: headers, method: head.method.rawValue))
                    let route = state.routes[path] ?? .respond(status: 404, body: "no route")
                    guard case .alternating(let turns) = route, !turns.isEmpty else { return route }
                    let turn = state.turns[path, default: 0]
                    state.turns[path] = turn + 1
                    return turns[turn % turns.count]
                }
                perform(behaviour, context: context)
            }
        }

        private func perform(_ behaviour: Behaviour, context: ChannelHandlerContext) {
            switch behaviour {
            case .respond(let status, let extra, let body):
                var headers = HTTPHeaders()
                for (name, value) in extra { headers.add(name: name, value: value) }
                headers.add(name: "Content-Length", value: String(body.utf8.count))
                headers.add(name: "Connection", value: "close")
                let responseHead = HTTPResponseHead(
                    version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: headers)
                context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
                if !body.isEmpty {
                    context.write(
                        wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))),
                        promise: nil)
                }
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
            case .delayed(let delay, let then):
                let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                let state = state
                context.eventLoop.scheduleTask(in: .init(delay)) {
                    let (handler, context) = bound.value
                    guard context.channel.isActive else {
                        state.withLockedValue { $0.abandoned += 1 }
                        return
                    }
                    handler.perform(then, context: context)
                }
            case .endlessBody:
                state.withLockedValue { $0.endlessOpen += 1 }
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: "text/plain")
                context.writeAndFlush(
                    wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                    promise: nil)
                writeForever(
                    context: context, chunk: context.channel.allocator.buffer(repeating: 0x61, count: 16 * 1024))
            case .silent, .alternating:
                break
            }
        }

        /// Writes `chunk` again each time the last write completes, until the
        /// client goes away (the write then fails).
        private func writeForever(context: ChannelHandlerContext, chunk: ByteBuffer) {
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let state = state
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(chunk)))).whenComplete { result in
                guard case .success = result else {
                    state.withLockedValue { $0.endlessOpen -= 1 }  // The client went away.
                    return
                }
                state.withLockedValue { $0.endlessBytesSent += chunk.readableBytes }
                // Next write from a fresh event-loop tick: a write that completes at
                // once would otherwise recurse until the stack runs out.
                let (_, context) = bound.value
                context.eventLoop.execute {
                    let (handler, context) = bound.value
                    guard context.channel.isActive else {
                        state.withLockedValue { $0.endlessOpen -= 1 }
                        return
                    }
                    handler.writeForever(context: context, chunk: chunk)
                }
            }
        }
    }
}
