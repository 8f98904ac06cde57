import ArgumentParser
import Connectivity
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import Reachability
import ReachabilityCommands
import ReachabilityMetrics

struct Exporter: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve reachability as Prometheus metrics on /metrics, with /healthz and a JSON /status.",
        discussion: """
            Watches each TARGET (none: the Internet) and the path, as `watch` does, and serves \
            their state over HTTP: /metrics in Prometheus's text format, /healthz (\"ok\"), \
            /status (one JSON object: the targets' `watch --json` objects, the path and, with \
            --connectivity, the last check). The figures are updated by the kernel's events, \
            not by scrapes: a scrape costs no netlink work and never waits for one. With \
            --connectivity it also checks for a real Internet (see `reachability check`) after \
            every path change and while not online. The series are listed in the README. \
            SIGINT or SIGTERM ends it with status 0; when the watched namespace goes away it \
            says so on stderr and exits 1. It prints `listening on http://ADDR:PORT/metrics` \
            to stderr once it serves (PORT 0: a free port, printed there).
            """)

    @Argument(help: "Hostnames or addresses; none watches the Internet.")
    var targets: [String] = []

    @Option(help: ArgumentHelp("Where to serve: IPv4:PORT or [IPv6]:PORT.", valueName: "addr:port"))
    var listen = "127.0.0.1:9469"

    @Flag(help: "Also check for a validated Internet and export the verdict and probe times.")
    var connectivity = false

    @OptionGroup(title: "Connectivity options (with --connectivity)")
    var probes: ProbeOptions

    @OptionGroup var namespace: NamespaceOption

    func validate() throws {
        _ = try ListenAddress(parsing: listen)
        try probes.requireConnectivity(connectivity)
        guard Set(targets).count == targets.count else { throw ValidationError("a TARGET is given twice") }
    }

    /// What a running exporter keeps alive (see `Watch.running`).
    nonisolated(unsafe) private static var running: [AnyObject] = []

    func run() throws {
        CLIProcess.signalsExitZero()
        let environment = namespace.environment
        let address = try ListenAddress(parsing: listen)
        let registry = PrometheusCollectorRegistry()
        let metrics = ReachabilityMetrics(factory: PrometheusMetricsFactory(registry: registry))
        let board = StatusBoard()

        let watched = try (targets.isEmpty ? [nil] : targets.map(Optional.some)).map {
            try TargetArgument.make($0, environment: environment)
        }
        for (name, reachability) in watched {
            TargetArgument.exitOnErrors(reachability, resolverFailure: nil)
            // On the reader thread, as the pass that changed the state ends: the
            // gauges move with the kernel's events, and a scrape reads them.
            reachability.deliverSynchronously { state in
                metrics.record(state, target: name)
                board.set(target: name, Output.json(target: name, state: state))
            }
            try reachability.start()
        }
        let pathMonitor = try PathMonitor(environment: environment)
        pathMonitor.pathUpdateHandler = { path in
            metrics.record(path)
            board.setPath(Output.pathJSON(path))
        }
        try pathMonitor.start(queue: DispatchQueue(label: "reachability.exporter.path"))
        var kept: [AnyObject] = watched.map(\.reachability) + [pathMonitor]
        if connectivity {
            var configuration = try probes.configuration()
            configuration.environment = environment
            let checker = try Connectivity(validating: configuration)
            let updates = checker.updates
            Task {
                for await result in updates {
                    metrics.record(result)
                    board.setConnectivity(Check.json(result))
                }
            }
            try checker.start()
            kept.append(checker)
        }
        Self.running = kept

        let server = try MetricsServer.start(at: address) { path in
            switch path {
            case "/metrics":
                metrics.recordMonitorCounters(environment: environment)
                return .init(contentType: "text/plain; version=0.0.4; charset=utf-8", body: registry.emitToBuffer())
            case "/healthz":
                return .init(contentType: "text/plain; charset=utf-8", body: Array("ok\n".utf8))
            case "/status":
                return .init(contentType: "application/json", body: Array((board.json() + "\n").utf8))
            case "/":
                return .init(
                    contentType: "text/html; charset=utf-8",
                    body: Array(
                        """
                        <html><head><title>reachability exporter</title></head><body>
                        <h1>reachability exporter</h1>
                        <p><a href="/metrics">/metrics</a> <a href="/status">/status</a> <a href="/healthz">/healthz</a></p>
                        </body></html>\n
                        """.utf8))
            default:
                return nil
            }
        }
        Self.running.append(server)
        CLIProcess.writeError("reachability: listening on http://\(server.boundAddress)/metrics\n")
        CLIProcess.parkForever()
    }
}

/// `--listen`: an IPv4 address and port, or an IPv6 one in brackets.
struct ListenAddress: Equatable {
    var host: String
    var port: Int

    init(parsing text: String) throws {
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ValidationError("--listen \(quotedForMessage(text)) is not [IPv6]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
            guard case .ipv6? = try? IPAddress(String(host)).family else {
                throw ValidationError(
                    "--listen \(quotedForMessage(text)): \(quotedForMessage(String(host))) is not an IPv6 address")
            }
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw ValidationError("--listen \(quotedForMessage(text)) is not ADDRESS:PORT")
            }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
            guard case .ipv4? = try? IPAddress(String(host)).family else {
                throw ValidationError(
                    "--listen \(quotedForMessage(text)): \(quotedForMessage(String(host))) is not an IPv4 address (IPv6: [ADDRESS]:PORT)"
                )
            }
        }
        guard port.allSatisfy(\.isASCII), let number = Int(port), (0...65535).contains(number), !port.hasPrefix("+")
        else {
            throw ValidationError(
                "--listen \(quotedForMessage(text)): \(quotedForMessage(String(port))) is not a port (0-65535)")
        }
        self.host = String(host)
        self.port = number
    }
}

/// The latest JSON of each target, the path and the last check, for /status.
final class StatusBoard: Sendable {
    private struct Contents: Sendable {
        var targets: [(String, String)] = []
        var path = "null"
        var connectivity = "null"
    }

    private let contents = LockedValue(Contents())

    func set(target: String, _ json: String) {
        contents.withLock { contents in
            if let index = contents.targets.firstIndex(where: { $0.0 == target }) {
                contents.targets[index].1 = json
            } else {
                contents.targets.append((target, json))
            }
        }
    }

    func setPath(_ json: String) { contents.withLock { $0.path = json } }
    func setConnectivity(_ json: String) { contents.withLock { $0.connectivity = json } }

    func json() -> String {
        contents.withLock { contents in
            "{\"targets\": [\(contents.targets.map { $0.1 }.joined(separator: ", "))], "
                + "\"path\": \(contents.path), \"connectivity\": \(contents.connectivity)}"
        }
    }
}

/// SwiftNIO's HTTP/1.1 server pipeline serving GET and HEAD for a few paths. The
/// answers are made from state kept up to date by events; nothing here does
/// network work of its own. Connections idle for 30 s are closed, and at most 256
/// are open at once (more are closed as they come), so slow or many clients can't
/// exhaust descriptors.
final class MetricsServer: Sendable {
    struct Response: Sendable {
        var contentType: String
        var body: [UInt8]
    }

    typealias Routes = @Sendable (String) -> Response?

    static let maxConnections = 256
    private let channel: any Channel
    let boundAddress: String

    private init(channel: any Channel, boundAddress: String) {
        self.channel = channel
        self.boundAddress = boundAddress
    }

    static func start(at address: ListenAddress, routes: @escaping Routes) throws -> MetricsServer {
        // Open connections, counted from the event loops.
        let open = LockedValue(0)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let admitted = open.withLock { count in
                    guard count < maxConnections else { return false }
                    count += 1
                    return true
                }
                guard admitted else { return channel.close() }
                channel.closeFuture.whenComplete { _ in open.withLock { $0 -= 1 } }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(allTimeout: .seconds(30)))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(HTTPHandler(routes: routes))
                }
            }
            .childChannelOption(.socketOption(.so_keepalive), value: 1)
        let channel: any Channel
        do {
            channel = try bootstrap.bind(host: address.host, port: address.port).wait()
        } catch {
            throw ExporterError("cannot listen on \(address.host):\(address.port): \(error)")
        }
        let port = channel.localAddress?.port ?? address.port
        let host = address.host.contains(":") ? "[\(address.host)]" : address.host
        return MetricsServer(channel: channel, boundAddress: "\(host):\(port)")
    }

    /// One request at a time per connection (the pipeline helper queues pipelined ones).
    private final class HTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        private let routes: Routes
        private var head: HTTPRequestHead?

        init(routes: @escaping Routes) { self.routes = routes }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): self.head = head
            case .body: break  // Discarded as it comes: nothing here takes a body.
            case .end:
                guard let head else { return }
                self.head = nil
                respond(to: head, context: context)
            }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is IdleStateHandler.IdleStateEvent {
                context.close(promise: nil)
            } else {
                context.fireUserInboundEventTriggered(event)
            }
        }

        private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
            let path = String(request.uri.prefix { $0 != "?" && $0 != "#" })
            var status = HTTPResponseStatus.ok
            var headers = HTTPHeaders()
            var body: [UInt8]
            if request.method != .GET && request.method != .HEAD {
                status = .methodNotAllowed
                headers.add(name: "Allow", value: "GET, HEAD")
                body = Array("method not allowed\n".utf8)
                headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            } else if let response = routes(path) {
                body = response.body
                headers.add(name: "Content-Type", value: response.contentType)
            } else {
                status = .notFound
                body = Array("not found\n".utf8)
                headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            }
            headers.add(name: "Content-Length", value: String(body.count))
            headers.add(name: "Cache-Control", value: "no-store")
            let keepAlive = request.isKeepAlive
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            let head = HTTPResponseHead(version: request.version, status: status, headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if request.method != .HEAD {
                context.write(
                    wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
            }
            let ended = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if !keepAlive {
                let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                ended.whenComplete { _ in bound.value.close(promise: nil) }
            }
        }
    }
}

struct ExporterError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
