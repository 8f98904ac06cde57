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
            every path change and while not online. \
            Each connection has 10 s to send a complete request (16 KiB at most) and each \
            answer 10 s to be taken; at most 256 connections are open (fewer under a low \
            descriptor limit), and a new one closes the one that has waited longest for a \
            request. An HTTP/1.1 request needs one valid Host (else 400); on a loopback \
            address only `localhost` and IP addresses are served as the host (another name \
            gets 421: a DNS-rebinding web page reads nothing). SIGINT or SIGTERM ends it with status 0; when the watched namespace goes away it \
            says so on stderr and exits 1. It prints `listening on http://ADDR:PORT/metrics` \
            to stderr once it serves (PORT 0: a free port, printed there).

            The series (gauges unless named _total, counters, or _seconds, a histogram): \
            reachability_reachable{target} (1 when not notReachable), reachability_flags{target} \
            (the flags' bit value), reachability_status{target,status} (1 for the current \
            status), reachability_interface_info{target,interface,type}, \
            reachability_changes_total{target}, reachability_path_satisfied, \
            reachability_path_status{status}, reachability_path_expensive, \
            reachability_path_changes_total; with --connectivity \
            reachability_connectivity_verdict{verdict}, \
            reachability_connectivity_checks_total{verdict} and \
            reachability_connectivity_probe_duration_seconds{endpoint}; and the shared netlink \
            monitor's own counters, reachability_monitor_events_total, _overruns_total, \
            _resyncs_total, _failed_resyncs_total, _malformed_messages_total, \
            _evaluation_passes_total and _failed_passes_total. Every family has HELP and TYPE. \
            Scrape it as job "reachability" for the alerting rules installed in \
            share/reachability/prometheus/ (docs/OPERATIONS.md in the repository).

            With --all-namespaces, every network namespace on the host is watched as it comes \
            and goes (see `watch --all-namespaces`), and each series carries namespace (@host \
            for this one, NAME for /run/netns/NAME, the path for a --namespace-dir entry, else \
            net:[INODE]) and, where known, container_id; a namespace's series are removed when \
            it goes. /status is then {"namespaces": [{"namespace", "targets", "path", \
            "connectivity"}]}. --connectivity takes one namespace (--namespace).

            Exit status: 0 on SIGINT or SIGTERM, 1 when the watched namespace goes away, 2 for a \
            usage error or an address it cannot listen on.
            """)

    @Argument(help: "Hostnames, addresses or @internet (the Internet); none watches the Internet.")
    var targets: [String] = []

    @Option(help: ArgumentHelp("Where to serve: IPv4:PORT or [IPv6]:PORT.", valueName: "addr:port"))
    var listen = "127.0.0.1:9469"

    @Flag(help: "Also check for a validated Internet and export the verdict and probe times.")
    var connectivity = false

    @OptionGroup(title: "Connectivity options (with --connectivity)")
    var probes: ProbeOptions

    @OptionGroup var namespace: NamespaceOption

    @OptionGroup var all: AllNamespacesOption

    func validate() throws {
        _ = try ListenAddress(parsing: listen)
        try probes.requireConnectivity(connectivity)
        guard Set(targets).count == targets.count else { throw ValidationError("a TARGET is given twice") }
        try all.validate(with: namespace)
        if all.allNamespaces, connectivity {
            throw ValidationError(
                "--connectivity and --all-namespaces exclude each other: check one namespace with --namespace")
        }
    }

    /// What a running exporter keeps alive (see `Watch.running`).
    nonisolated(unsafe) private static var running: [AnyObject] = []

    func run() throws {
        if all.allNamespaces { try runAllNamespaces() }
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
        let pathMonitor = try PathMonitor(
            environment: environment, notificationQueue: DispatchQueue(label: "reachability.exporter.path"))
        pathMonitor.pathUpdateHandler = { path in
            metrics.record(path)
            board.setPath(Output.pathJSON(path))
        }
        try pathMonitor.start()
        var kept: [AnyObject] = watched.map(\.reachability) + [pathMonitor]
        if connectivity {
            var configuration = try probes.configuration()
            configuration.environment = environment
            let checker = try Connectivity(validating: configuration)
            // The verdict as published (hysteresis applied); every check counted.
            let updates = checker.updates
            let checks = checker.checks
            Task {
                for await result in updates {
                    metrics.recordVerdict(result)
                    board.setConnectivity(Check.json(result))
                }
            }
            Task {
                for await check in checks { metrics.recordCheck(check) }
            }
            try checker.start()
            kept.append(checker)
        }
        Self.running = kept

        try Self.serve(
            at: address, registry: registry, beforeScrape: { metrics.recordMonitorCounters(environment: environment) },
            status: board.json)
    }

    /// Serves /metrics, /status and /healthz at `address` until a signal ends the
    /// process. `beforeScrape` copies what no event records (the monitors' counters).
    static func serve(
        at address: ListenAddress, registry: PrometheusCollectorRegistry,
        beforeScrape: @escaping @Sendable () -> Void, status: @escaping @Sendable () -> String
    ) throws -> Never {
        let server = try MetricsServer.start(at: address) { path in
            switch path {
            case "/metrics":
                beforeScrape()
                // swift-metrics hands the registry no help texts: ReachabilityMetrics has them.
                return .init(
                    contentType: "text/plain; version=0.0.4; charset=utf-8",
                    body: ReachabilityMetrics.addingHelp(to: registry.emitToBuffer()))
            case "/healthz":
                return .init(contentType: "text/plain; charset=utf-8", body: Array("ok\n".utf8))
            case "/status":
                return .init(contentType: "application/json", body: Array((status() + "\n").utf8))
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
        running.append(server)
        CLIProcess.writeError("reachability: listening on http://\(server.boundAddress)/metrics\n")
        CLIProcess.parkForever()
    }

    // MARK: --all-namespaces

    /// Every namespace's targets and path, each namespace's series labelled with
    /// it (`namespace`, and `container_id` where known) and removed when it goes.
    private func runAllNamespaces() throws -> Never {
        CLIProcess.signalsExitZero()
        let address = try ListenAddress(parsing: listen)
        // A bad TARGET is bad input (exit 2), not a namespace that can't be exported.
        for target in targets { _ = try TargetArgument.make(target) }
        let registry = PrometheusCollectorRegistry()
        let factory = PrometheusMetricsFactory(registry: registry)
        let exported = ExportedNamespaces(targets: targets, factory: factory)
        let monitor = NetworkNamespaceMonitor(directories: all.directories)
        monitor.eventHandler = { exported.handle($0) }
        try monitor.start()
        Self.running = [monitor, exported]
        try Self.serve(
            at: address, registry: registry, beforeScrape: { exported.recordMonitorCounters() },
            status: exported.statusJSON)
    }
}

/// What `exporter --all-namespaces` runs per namespace: its targets, its path and
/// its series, from its appearance to its disappearance.
final class ExportedNamespaces: Sendable {
    struct Exported: Sendable {
        let environment: NetworkEnvironment
        let metrics: ReachabilityMetrics
        let board: StatusBoard
        let running: Running
    }

    private let follower: NamespaceFollower<Exported>

    init(targets: [String], factory: PrometheusMetricsFactory) {
        let names: [String?] = targets.isEmpty ? [nil] : targets.map(Optional.some)
        follower = NamespaceFollower(
            start: { try Self.start($0, targets: names, factory: factory) },
            stop: { entry in
                stopAll(entry.running)
                entry.metrics.forgetAll()
            })
    }

    /// On the namespace monitor's thread, one event at a time.
    func handle(_ event: NetworkNamespaceEvent) { follower.handle(event) }

    private static func start(
        _ namespace: NetworkNamespaceInfo, targets: [String?], factory: PrometheusMetricsFactory
    ) throws -> Exported {
        let labels =
            [("namespace", NamespaceLabel.name(namespace))]
            + (namespace.containerID.map { [("container_id", $0)] } ?? [])
        let metrics = ReachabilityMetrics(factory: factory, labels: labels)
        let board = StatusBoard(namespace: NamespaceLabel.json(namespace))
        do {
            let running = try Running.start(
                in: namespace, targets: targets,
                path: { path in
                    metrics.record(path)
                    board.setPath(Output.pathJSON(path))
                }
            ) { name, state in
                metrics.record(state, target: name)
                board.set(target: name, Output.json(target: name, state: state))
            }
            return Exported(environment: namespace.environment, metrics: metrics, board: board, running: running)
        } catch {
            metrics.forgetAll()
            throw error
        }
    }

    /// Copies each namespace's monitor counters (at a scrape).
    func recordMonitorCounters() {
        for (_, entry) in follower.current { entry.metrics.recordMonitorCounters(environment: entry.environment) }
    }

    /// `{"namespaces": [{"namespace": {...}, "targets": [...], "path": ...}]}`, by identity.
    @Sendable func statusJSON() -> String {
        "{\"namespaces\": [" + follower.current.map { $0.1.board.json() }.joined(separator: ", ") + "]}"
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
    /// The namespace's JSON object, under `--all-namespaces`.
    private let namespace: String?

    init(namespace: String? = nil) {
        self.namespace = namespace
    }

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
            (namespace.map { "{\"namespace\": \($0), " } ?? "{")
                + "\"targets\": [\(contents.targets.map { $0.1 }.joined(separator: ", "))], "
                + "\"path\": \(contents.path), \"connectivity\": \(contents.connectivity)}"
        }
    }
}

/// SwiftNIO's HTTP/1.1 server pipeline serving GET and HEAD for a few paths. The
/// answers are made from state kept up to date by events; nothing here does
/// network work of its own. The listener and every connection share one event loop
/// (the connection table is that loop's alone), and what a client can make the
/// server hold is bounded (``Limits``):
///
/// - Time: a connection has 10 s for a complete request, from its accept or from
///   the end of its previous answer (bytes arriving don't extend it), and each
///   answer must be written out within 10 s of its request; past either, it is closed.
/// - Bytes: a request, head and body, is at most 16 KiB (else 400); reads are 4 KiB,
///   one per turn. A connection whose answers aren't read becomes unwritable past
///   64 KiB queued: it is no longer read (`BackPressureHandler`) and gets no further
///   answer until they drain, so pipelined requests wait in the kernel, not here.
/// - Connections: at most 256, fewer when the descriptor limit leaves less room
///   (``connectionLimit()``). At the limit a new connection closes the one that has
///   waited longest for a request; it is refused only when every one is being answered.
/// - Descriptors: accept(2) failing with EMFILE or ENFILE (or for want of memory)
///   stops accepting for 250 ms, so it never spins, and sheds idle connections,
///   serving fewer from then on (``AcceptBackoff``).
/// - A malformed request gets a 400 with `Connection: close`, and the connection's
///   output is closed as soon as that is written (all of it once the client closes,
///   or 2 s later).
final class MetricsServer: Sendable {
    struct Response: Sendable {
        var contentType: String
        var body: [UInt8]
    }

    typealias Routes = @Sendable (String) -> Response?

    /// What one client, and all of them, can make the server hold.
    enum Limits {
        /// Connections open at once, at most.
        static let connections = 256
        /// Descriptors left for the rest of the process (monitor, resolver, probes,
        /// the runtime) when the descriptor limit sets the connection limit.
        static let descriptorReserve = 32
        /// For a complete request (head and body), from accept or the previous answer.
        static let requestTime = TimeAmount.seconds(10)
        /// For an answer to be written out (into the kernel), from its request's end.
        static let answerTime = TimeAmount.seconds(10)
        /// After a 400: how long the closed output waits for the client to close.
        static let linger = TimeAmount.seconds(2)
        /// A request's bytes, head and body.
        static let requestBytes = 16 * 1024
        /// One read.
        static let readBytes = 4 * 1024
        /// Queued answer bytes past which a connection is unwritable (and not read).
        static let writeBuffer = ChannelOptions.Types.WriteBufferWaterMark(low: 32 * 1024, high: 64 * 1024)
        /// How long accept waits after EMFILE or ENFILE.
        static let acceptBackoff = TimeAmount.milliseconds(250)
        /// After EMFILE or ENFILE the limit becomes this many fewer than the connections open...
        static let shedOnDescriptorShortage = 8
        /// ...but not below this (nor above what it was).
        static let connectionsAfterShortage = 8
    }

    private let channel: any Channel
    let boundAddress: String

    private init(channel: any Channel, boundAddress: String) {
        self.channel = channel
        self.boundAddress = boundAddress
    }

    static func start(at address: ListenAddress, routes: @escaping Routes) throws -> MetricsServer {
        let loopbackOnly = (try? IPAddress(address.host))?.isLoopback ?? false
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let limit = connectionLimit()
        let table = try loop.submit { NIOLoopBound(ConnectionTable(limit: limit), eventLoop: loop) }.wait()
        let bootstrap = ServerBootstrap(group: loop)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptBackoff(table: table))
                }
            }
            .childChannelInitializer { channel in
                let connection = Connection(channel: channel)
                guard table.value.admit(connection) else { return channel.close() }
                let bound = NIOLoopBound(connection, eventLoop: channel.eventLoop)
                channel.closeFuture.whenComplete { _ in
                    bound.value.closed()
                    table.value.remove(bound.value)
                }
                connection.start()
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(BackPressureHandler())
                    try pipeline.addHandler(RequestSizeLimit(connection: connection))
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(
                        HTTPHandler(routes: routes, connection: connection, loopbackOnly: loopbackOnly))
                }
            }
            .childChannelOption(.socketOption(.so_keepalive), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: Limits.writeBuffer)
            .childChannelOption(.maxMessagesPerRead, value: 1)
            .childChannelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: Limits.readBytes))
        let channel: any Channel
        do {
            channel = try bootstrap.bind(host: address.host, port: address.port).wait()
        } catch let error as IOError {
            // SwiftNIO's description carries the call and a stray parenthesis.
            let reason = String(cString: strerror(error.errnoCode))
            throw ExporterError(
                "cannot listen on \(address.host):\(address.port): \(reason) (errno \(error.errnoCode))")
        } catch {
            throw ExporterError("cannot listen on \(address.host):\(address.port): \(error)")
        }
        let port = channel.localAddress?.port ?? address.port
        let host = address.host.contains(":") ? "[\(address.host)]" : address.host
        return MetricsServer(channel: channel, boundAddress: "\(host):\(port)")
    }

    /// The connections the descriptor limit leaves room for: the soft RLIMIT_NOFILE
    /// less the descriptors open now (the monitor's, the runtime's) and
    /// ``Limits/descriptorReserve``; at most ``Limits/connections``, at least 1. One
    /// descriptor beyond stays free, so a new connection can be accepted and an idle one
    /// closed for it.
    static func connectionLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0,
            limit.rlim_cur < rlim_t(Int32.max)
        else { return Limits.connections }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        return max(1, min(Limits.connections, Int(limit.rlim_cur) - open - Limits.descriptorReserve))
    }

    /// The open connections, on the server's event loop.
    private final class ConnectionTable {
        private(set) var limit: Int
        private var open: [ObjectIdentifier: Connection] = [:]

        init(limit: Int) { self.limit = limit }

        /// Takes `connection` in; at the limit, closes the connection that has waited
        /// longest for a request to make room. False (refuse it) when every open one is
        /// being answered.
        func admit(_ connection: Connection) -> Bool {
            while open.count >= limit {
                guard closeLongestWaiting() else { return false }
            }
            open[ObjectIdentifier(connection)] = connection
            return true
        }

        func remove(_ connection: Connection) { open[ObjectIdentifier(connection)] = nil }

        /// accept(2) failed with EMFILE or ENFILE: serve fewer connections from now on,
        /// and close idle ones so that descriptors are free for the next accept and the
        /// rest of the process.
        func descriptorsRanOut() {
            limit = max(
                min(limit, Limits.connectionsAfterShortage), min(limit, open.count - Limits.shedOnDescriptorShortage))
            while open.count >= limit {
                guard closeLongestWaiting() else { return }
            }
        }

        private func closeLongestWaiting() -> Bool {
            guard let oldest = open.values.filter(\.isWaiting).min(by: { $0.waitingSince < $1.waitingSince })
            else { return false }
            open[ObjectIdentifier(oldest)] = nil
            oldest.channel.close(promise: nil)
            return true
        }
    }

    /// On the listener: when accept(2) fails for want of descriptors or memory, stops
    /// reading the listener for ``Limits/acceptBackoff`` and, for EMFILE and ENFILE,
    /// has the table shed idle connections. The failed connection stays in the kernel's
    /// queue, so the listener stays readable: accepting again at once fails again, for
    /// ever (a whole core). NIO's `AcceptBackoffHandler` doesn't help here:
    /// it delays the next `read()`, but after a failed accept NIO still has its read
    /// pending (2.101: `readPending` is cleared only by an accepted connection), keeps
    /// the listener registered and accepts again on the next wake-up. Turning
    /// `autoRead` off takes the listener out of epoll; turning it on again reads.
    private final class AcceptBackoff: ChannelInboundHandler {
        typealias InboundIn = any Channel

        private let table: NIOLoopBound<ConnectionTable>
        private var paused = false

        init(table: NIOLoopBound<ConnectionTable>) { self.table = table }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // Other errors (ECONNABORTED, a connection failing its set-up) concern one
            // connection, which is closed already.
            guard let error = error as? IOError, [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.errnoCode) else {
                return
            }
            if error.errnoCode == EMFILE || error.errnoCode == ENFILE { table.value.descriptorsRanOut() }
            guard !paused, (try? context.channel.syncOptions?.setOption(.autoRead, value: false)) != nil else {
                return
            }
            paused = true
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: Limits.acceptBackoff) {
                let (handler, context) = bound.value
                handler.paused = false
                try? context.channel.syncOptions?.setOption(.autoRead, value: true)
            }
        }
    }

    /// One connection's deadlines and request size, on the server's event loop: one
    /// timer, for the nearest of the request deadline (while waiting for a request),
    /// the oldest unwritten answer's deadline and, after a 400, the linger.
    private final class Connection {
        let channel: any Channel
        /// Since when it has waited for a request: its accept, or its last answer written out.
        private(set) var waitingSince = NIODeadline.now()
        /// By when each complete request's answer must be written out, oldest first.
        private var answerBy = CircularBuffer<NIODeadline>()
        private var closeBy: NIODeadline?
        private var timer: Scheduled<Void>?
        private var timerDeadline: NIODeadline?
        private var isClosed = false
        /// Bytes read since the last complete request.
        var requestBytes = 0

        init(channel: any Channel) { self.channel = channel }

        /// Waiting for a request (none complete and unanswered): the table may close it.
        var isWaiting: Bool { answerBy.isEmpty }

        func start() { rearm() }

        func requestEnded() {
            requestBytes = 0
            answerBy.append(.now() + Limits.answerTime)
            rearm()
        }

        func answerWritten() {
            if !answerBy.isEmpty { answerBy.removeFirst() }
            if answerBy.isEmpty { waitingSince = .now() }
            rearm()
        }

        func lingering() {
            closeBy = .now() + Limits.linger
            rearm()
        }

        func closed() {
            isClosed = true
            timer?.cancel()
            timer = nil
        }

        private func rearm() {
            var deadline = answerBy.first ?? waitingSince + Limits.requestTime
            if let closeBy { deadline = min(deadline, closeBy) }
            guard deadline != timerDeadline, !isClosed else { return }
            timer?.cancel()
            timerDeadline = deadline
            let channel = self.channel
            timer = channel.eventLoop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
        }
    }

    /// Counts the bytes of the request being read (the handler before the HTTP
    /// decoder); past ``Limits/requestBytes`` it drops the rest of the input and
    /// reports a header overflow (a 400, then close).
    private final class RequestSizeLimit: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer

        private let connection: Connection
        private var exceeded = false

        init(connection: Connection) { self.connection = connection }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !exceeded else { return }
            connection.requestBytes += unwrapInboundIn(data).readableBytes
            if connection.requestBytes > Limits.requestBytes {
                exceeded = true
                context.fireErrorCaught(HTTPParserError.headerOverflow)
            } else {
                context.fireChannelRead(data)
            }
        }
    }

    /// One request at a time per connection (the pipeline helper queues pipelined
    /// ones), and an answer only while the connection is writable.
    private final class HTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        private let routes: Routes
        private let connection: Connection
        private let loopbackOnly: Bool
        private var head: HTTPRequestHead?
        /// A complete request not answered yet: its connection is unwritable (its
        /// answers are not being read), or its predecessor's answer is being written.
        private var unanswered: HTTPRequestHead?
        private var answering = false

        init(routes: @escaping Routes, connection: Connection, loopbackOnly: Bool) {
            self.routes = routes
            self.connection = connection
            self.loopbackOnly = loopbackOnly
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): self.head = head
            case .body: break  // Discarded as it comes: nothing here takes a body.
            case .end:
                guard let head else { return }
                self.head = nil
                connection.requestEnded()
                unanswered = head
                answerIfWritable(context: context)
            }
        }

        func channelWritabilityChanged(context: ChannelHandlerContext) {
            answerIfWritable(context: context)
            context.fireChannelWritabilityChanged()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            guard error is HTTPParserError else { return context.fireErrorCaught(error) }
            // HTTPServerProtocolErrorHandler, before this, wrote a 400 with `Connection:
            // close`: close the output once it is out (the client sees its end), and all
            // of it when the client closes or the linger ends.
            head = nil
            connection.lingering()
            context.close(mode: .output, promise: nil)
        }

        /// Answers the waiting request, if the connection takes more bytes. Writing an
        /// answer's end makes the pipeline helper hand over the next queued request at
        /// once (from inside the write): that one is answered by this loop, not by a
        /// nested call.
        private func answerIfWritable(context: ChannelHandlerContext) {
            guard !answering else { return }
            answering = true
            defer { answering = false }
            while context.channel.isWritable, let request = unanswered {
                unanswered = nil
                respond(to: request, context: context)
            }
        }

        private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
            var status = HTTPResponseStatus.ok
            var headers = HTTPHeaders()
            var body: [UInt8]
            let target = RequestTarget.path(of: request, loopbackOnly: loopbackOnly)
            if case .failure(let refusal) = target {
                status = refusal.status
                body = Array((refusal.message + "\n").utf8)
                headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            } else if request.method != .GET && request.method != .HEAD {
                status = .methodNotAllowed
                headers.add(name: "Allow", value: "GET, HEAD")
                body = Array("method not allowed\n".utf8)
                headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            } else if case .success(let path) = target, let response = routes(path) {
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
            let bound = NIOLoopBound((context, connection), eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                let (context, connection) = bound.value
                connection.answerWritten()
                if !keepAlive { context.close(promise: nil) }
            }
        }
    }
}

/// A request's target and `Host` read as RFC 9112 §3.2 says.
enum RequestTarget {
    /// Why a request is not answered from the routes.
    struct Refusal: Error {
        var status: HTTPResponseStatus
        var message: String
    }

    /// The path `head` asks for (an origin-form target's, or an absolute-form one's,
    /// whose authority then stands for `Host`), or its refusal: 400 for an HTTP/1.1
    /// request without `Host`, for more than one, or one that is no `host[:port]`;
    /// 421 when the server listens on loopback only and the host is a name other than
    /// `localhost`: a web page whose DNS name was rebound to 127.0.0.1 reads nothing;
    /// 417 for an `Expect` other than `100-continue`.
    static func path(of head: HTTPRequestHead, loopbackOnly: Bool) -> Result<String, Refusal> {
        var target = Substring(head.uri)
        var authority: Substring?
        let start = target.prefix(8).lowercased()
        if let scheme = ["http://", "https://"].first(where: { start.hasPrefix($0) }) {
            let rest = target.dropFirst(scheme.count)
            let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
            authority = rest[..<end]
            target = rest[end...].hasPrefix("/") ? rest[end...] : "/" + rest[end...]
        }
        let hosts = head.headers["Host"]
        guard hosts.count <= 1 else { return .failure(Refusal(status: .badRequest, message: "more than one Host")) }
        guard !hosts.isEmpty || head.version.major == 1 && head.version.minor == 0 else {
            return .failure(Refusal(status: .badRequest, message: "no Host"))
        }
        for value in hosts + (authority.map { [String($0)] } ?? []) {
            guard let host = Self.host(of: value) else {
                return .failure(Refusal(status: .badRequest, message: "not host[:port]: \(quotedForMessage(value))"))
            }
            if loopbackOnly, !["localhost", "localhost."].contains(host.lowercased()), (try? IPAddress(host)) == nil {
                return .failure(
                    Refusal(status: .misdirectedRequest, message: "this server answers to localhost and addresses only")
                )
            }
        }
        // No body is read here: `100-continue` needs no 100 before the final answer (RFC 9110
        // §10.1.1); any other expectation can't be met.
        guard head.headers["Expect"].allSatisfy({ $0.lowercased() == "100-continue" }) else {
            return .failure(Refusal(status: .expectationFailed, message: "only 100-continue is expected here"))
        }
        return .success(String(target.prefix { $0 != "?" && $0 != "#" }))
    }

    /// The host of `host[:port]` (an IPv6 literal without its brackets), or nil when
    /// `value` is not that (RFC 3986's reg-name characters, an IPv6 literal, a port of
    /// up to 5 digits).
    static func host(of value: String) -> String? {
        var host = Substring(value)
        var port: Substring = ""
        let bracketed = value.hasPrefix("[")
        if bracketed {
            guard let close = value.firstIndex(of: "]") else { return nil }
            host = value[value.index(after: value.startIndex)..<close]
            let after = value[value.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { return nil }
            port = after.dropFirst()
            guard case .ipv6? = (try? IPAddress(String(host)))?.family else { return nil }
        } else if let colon = value.lastIndex(of: ":") {
            host = value[..<colon]
            port = value[value.index(after: colon)...]
        }
        let name = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=%")
        guard !host.isEmpty, bracketed || host.allSatisfy({ name.contains($0) }), port.count <= 5,
            port.allSatisfy({ ("0"..."9").contains($0) })
        else { return nil }
        return String(host)
    }
}

struct ExporterError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
