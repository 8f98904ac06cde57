// Network.framework's NWPathMonitor and the value types its paths carry (NWPath,
// NWInterface, NWEndpoint, IPv4Address, IPv6Address), over the core `PathMonitor`.
// Code written against them compiles with `import Network` changed to
// `import ReachabilityCompat`. Only what path monitoring uses is here: no
// connections, listeners or browsers, and no `IPAddress` protocol (the core
// module has an `IPAddress` type; a file importing both would see two).
public import Dispatch
public import Foundation
import Glibc
public import Reachability

/// The core module's interface type, named where `NWInterface.InterfaceType` hides it.
typealias CoreInterfaceType = InterfaceType

// MARK: - NWInterface

/// A network interface a path can use (Network's `NWInterface`).
///
/// `Sendable`: a plain value.
public struct NWInterface: Hashable, Sendable, CustomDebugStringConvertible {
    /// The medium of an interface (Network's `NWInterface.InterfaceType`).
    public enum InterfaceType: Hashable, Sendable {
        /// Anything else: VPNs and tunnels (WireGuard, tun, GRE, …), PPP, Bluetooth.
        case other
        /// Wi-Fi (802.11).
        case wifi
        /// A cellular modem (WWAN).
        case cellular
        /// Wired Ethernet, and the virtual links that behave like it (veth,
        /// bridge, bond, VLAN, macvlan).
        case wiredEthernet
        /// The loopback interface.
        case loopback
    }

    /// The kernel's name for it, e.g. `"eth0"`.
    public let name: String
    /// The kernel's interface index.
    public let index: Int
    /// Its medium.
    public let type: InterfaceType

    /// The interface the core reports.
    public init(_ interface: NetworkInterface) {
        name = interface.name
        index = interface.index
        type = InterfaceType(interface.type)
    }

    init(name: String, index: Int, type: InterfaceType) {
        self.name = name
        self.index = index
        self.type = type
    }

    /// The name, e.g. `"eth0"`.
    public var debugDescription: String { name }
}

extension NWInterface.InterfaceType {
    init(_ type: CoreInterfaceType) {
        switch type {
        case .wifi: self = .wifi
        case .cellular: self = .cellular
        case .wiredEthernet: self = .wiredEthernet
        case .loopback: self = .loopback
        case .other: self = .other
        }
    }

    var core: CoreInterfaceType {
        switch self {
        case .wifi: .wifi
        case .cellular: .cellular
        case .wiredEthernet: .wiredEthernet
        case .loopback: .loopback
        case .other: .other
        }
    }
}

// MARK: - Addresses

/// An IPv4 address (Network's `IPv4Address`).
///
/// `Sendable`: a plain value.
public struct IPv4Address: Hashable, Sendable, CustomDebugStringConvertible {
    /// The 4 bytes, in network order.
    public let rawValue: Data
    /// The interface the address is scoped to, if any.
    public let interface: NWInterface?

    /// An address from 4 bytes in network order; nil for any other count.
    public init?(_ rawValue: Data, _ interface: NWInterface? = nil) {
        guard rawValue.count == 4 else { return nil }
        self.rawValue = rawValue
        self.interface = interface
    }

    /// Parses a dotted-quad literal (`"192.0.2.1"`); nil for anything else.
    public init?(_ string: String) {
        guard let address = try? IPAddress(string), address.family == .ipv4 else { return nil }
        self.init(Data(address.bytes))
    }

    /// 0.0.0.0.
    public static let any = IPv4Address(Data([0, 0, 0, 0]))!
    /// 255.255.255.255.
    public static let broadcast = IPv4Address(Data([255, 255, 255, 255]))!
    /// 127.0.0.1.
    public static let loopback = IPv4Address(Data([127, 0, 0, 1]))!

    /// In 127.0.0.0/8.
    public var isLoopback: Bool { rawValue.first == 127 }
    /// In 169.254.0.0/16.
    public var isLinkLocal: Bool { rawValue.prefix(2) == Data([169, 254]) }
    /// In 224.0.0.0/4.
    public var isMulticast: Bool { (rawValue.first ?? 0) & 0xF0 == 0xE0 }

    /// The dotted-quad text, e.g. `"192.0.2.1"`.
    public var debugDescription: String { IPAddress(bytes: rawValue)?.description ?? "?" }
}

/// An IPv6 address (Network's `IPv6Address`).
///
/// `Sendable`: a plain value.
public struct IPv6Address: Hashable, Sendable, CustomDebugStringConvertible {
    /// The 16 bytes, in network order.
    public let rawValue: Data
    /// The interface a link-local address is scoped to, if any.
    public let interface: NWInterface?

    /// An address from 16 bytes in network order; nil for any other count.
    public init?(_ rawValue: Data, _ interface: NWInterface? = nil) {
        guard rawValue.count == 16 else { return nil }
        self.rawValue = rawValue
        self.interface = interface
    }

    /// Parses an RFC 4291 literal, optionally with a zone for a link-local address
    /// (`"fe80::1%eth0"`, `"fe80::1%2"`; the zone names an interface of this
    /// process's namespace, whose ``NWInterface/type`` is then not looked up and
    /// reads `.other`); nil for anything else.
    public init?(_ string: String) {
        guard let address = try? IPAddress(string), address.family == .ipv6 else { return nil }
        var interface: NWInterface?
        if address.scopeID != 0 {
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            let known = if_indextoname(address.scopeID, &name) != nil
            interface = NWInterface(
                name: known
                    ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    : "\(address.scopeID)",
                index: Int(address.scopeID),
                type: .other)
        }
        self.init(Data(address.bytes), interface)
    }

    /// ::.
    public static let any = IPv6Address(Data(repeating: 0, count: 16))!
    /// ::1.
    public static let loopback = IPv6Address(Data(repeating: 0, count: 15) + [1])!

    /// ::1.
    public var isLoopback: Bool { rawValue == Self.loopback.rawValue }
    /// In fe80::/10.
    public var isLinkLocal: Bool { rawValue.first == 0xFE && (rawValue.dropFirst().first ?? 0) & 0xC0 == 0x80 }
    /// In ff00::/8.
    public var isMulticast: Bool { rawValue.first == 0xFF }

    /// Two addresses are equal when their bytes and their interface index are.
    public static func == (lhs: IPv6Address, rhs: IPv6Address) -> Bool {
        lhs.rawValue == rhs.rawValue && lhs.interface?.index == rhs.interface?.index
    }

    /// Hashes the bytes and the interface index.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(rawValue)
        hasher.combine(interface?.index)
    }

    /// The canonical text, with `%name` of its interface when scoped, e.g. `"fe80::1%eth0"`.
    public var debugDescription: String {
        let text = IPAddress(bytes: rawValue)?.description ?? "?"
        return interface.map { "\(text)%\($0.name)" } ?? text
    }
}

// MARK: - NWEndpoint

/// Where a connection goes (Network's `NWEndpoint`). Path monitors report their
/// ``NWPath/gateways`` as `.hostPort` endpoints with port 0.
///
/// `Sendable`: a plain value.
public enum NWEndpoint: Hashable, Sendable, CustomDebugStringConvertible {
    /// A host and a port.
    case hostPort(host: Host, port: Port)
    /// A Bonjour service.
    case service(name: String, type: String, domain: String, interface: NWInterface?)
    /// A Unix domain socket path.
    case unix(path: String)
    /// A URL.
    case url(URL)

    /// A host: a name or an address (Network's `NWEndpoint.Host`).
    public enum Host: Hashable, Sendable, CustomDebugStringConvertible, ExpressibleByStringLiteral {
        /// A hostname, optionally scoped to an interface.
        case name(String, NWInterface?)
        /// An IPv4 address.
        case ipv4(IPv4Address)
        /// An IPv6 address.
        case ipv6(IPv6Address)

        /// An address when `string` is an IP literal, else a name.
        public init(_ string: String) {
            if let v4 = IPv4Address(string) {
                self = .ipv4(v4)
            } else if let v6 = IPv6Address(string) {
                self = .ipv6(v6)
            } else {
                self = .name(string, nil)
            }
        }

        /// A host from a string literal, as ``init(_:)``.
        public init(stringLiteral value: String) {
            self.init(value)
        }

        /// The interface the host is scoped to, if any.
        public var interface: NWInterface? {
            switch self {
            case .name(_, let interface): interface
            case .ipv4(let address): address.interface
            case .ipv6(let address): address.interface
            }
        }

        /// The name or address text.
        public var debugDescription: String {
            switch self {
            case .name(let name, _): name
            case .ipv4(let address): address.debugDescription
            case .ipv6(let address): address.debugDescription
            }
        }
    }

    /// A port number (Network's `NWEndpoint.Port`).
    public struct Port: Hashable, Sendable, RawRepresentable, ExpressibleByIntegerLiteral,
        CustomDebugStringConvertible
    {
        /// The port number.
        public let rawValue: UInt16

        /// A port from its number.
        public init?(rawValue: UInt16) {
            self.rawValue = rawValue
        }

        /// A port from an integer literal.
        public init(integerLiteral value: UInt16) {
            rawValue = value
        }

        /// A port from its decimal text; nil unless it is a number from 0 to 65535.
        public init?(_ string: String) {
            guard let value = UInt16(string) else { return nil }
            rawValue = value
        }

        /// Port 0: any port.
        public static let any: Port = 0
        /// Port 22.
        public static let ssh: Port = 22
        /// Port 25.
        public static let smtp: Port = 25
        /// Port 80.
        public static let http: Port = 80
        /// Port 110.
        public static let pop: Port = 110
        /// Port 143.
        public static let imap: Port = 143
        /// Port 443.
        public static let https: Port = 443
        /// Port 993.
        public static let imaps: Port = 993
        /// Port 1080.
        public static let socks: Port = 1080

        /// The number, e.g. `"443"`.
        public var debugDescription: String { "\(rawValue)" }
    }

    /// The interface the endpoint is scoped to, if any.
    public var interface: NWInterface? {
        switch self {
        case .hostPort(let host, _): host.interface
        case .service(_, _, _, let interface): interface
        case .unix, .url: nil
        }
    }

    /// `"192.0.2.1:0"`; an IPv6 host's port follows a dot, as Network's logs
    /// write it (`"fe80::1%eth0.0"`).
    public var debugDescription: String {
        switch self {
        case .hostPort(let host, let port):
            if case .ipv6 = host { return "\(host.debugDescription).\(port.rawValue)" }
            return "\(host.debugDescription):\(port.rawValue)"
        case .service(let name, let type, let domain, _): return "\(name).\(type).\(domain)"
        case .unix(let path): return path
        case .url(let url): return url.absoluteString
        }
    }
}

extension NWEndpoint.Host {
    /// A core address as a host, scoped to the interface among `interfaces` its
    /// zone names (a link-local gateway).
    init(_ address: IPAddress, interfaces: [NWInterface]) {
        let scope = address.scopeID == 0 ? nil : interfaces.first { $0.index == Int(address.scopeID) }
        switch address.family {
        case .ipv4: self = .ipv4(IPv4Address(Data(address.bytes))!)
        case .ipv6: self = .ipv6(IPv6Address(Data(address.bytes), scope)!)
        }
    }
}

// MARK: - NWPath

/// What the network offers now (Network's `NWPath`): whether a path out is
/// usable, over which interfaces, with which gateways, families and DNS, and at
/// what cost.
///
/// `Sendable`: a plain value.
public struct NWPath: Equatable, Sendable, CustomDebugStringConvertible {
    /// Whether the path can be used.
    public enum Status: Hashable, Sendable {
        /// An allowed interface is usable and has a route out.
        case satisfied
        /// No allowed interface can carry traffic out.
        case unsatisfied
        /// An allowed interface has a route out but is not usable yet (IPv6
        /// duplicate address detection running, link settling, 802.1X/WPA pending).
        case requiresConnection
    }

    /// Why a path is unsatisfied: Network's reasons, and one of this package's.
    /// Network's enum is not frozen, so code switching over it has an
    /// `@unknown default`, which covers ``monitorFailed`` too. (This package is
    /// built without library evolution, so such a switch compiles with a warning
    /// that it is not exhaustive; add a `case .monitorFailed:` to silence it.)
    public enum UnsatisfiedReason: Hashable, Sendable {
        /// No allowed interface has a usable route out (also the value of a path
        /// that is not unsatisfied, as in Network).
        case notAvailable
        /// A cellular interface could carry the traffic, but the monitor's
        /// interface types exclude it.
        case cellularDenied
        /// A Wi-Fi interface could carry the traffic, but the monitor's interface
        /// types exclude it.
        case wifiDenied
        /// Local network access is denied (an Apple privacy setting: never on Linux).
        case localNetworkDenied
        /// A required VPN is not active (an Apple setting: never on Linux).
        case vpnInactive
        /// Not Network's: the monitor could not be made or started (the netlink
        /// sockets could not be opened, or the watched namespace can't be entered);
        /// ``NWPathMonitor/lastError`` says why.
        case monitorFailed
    }

    /// satisfied, unsatisfied, or requiresConnection.
    public let status: Status
    /// Why the path is unsatisfied; ``UnsatisfiedReason/notAvailable`` when it is not.
    public let unsatisfiedReason: UnsatisfiedReason
    /// The usable interfaces the monitor allows, in order of preference.
    public let availableInterfaces: [NWInterface]
    /// The default-route gateways of the available interfaces, as `.hostPort`
    /// endpoints with port 0 (as Network reports them), IPv4 before IPv6 for each
    /// interface. Network scopes a link-local IPv6 gateway to its interface
    /// (`fe80::1%en0`); here it is scoped only when the core's address has a zone.
    public let gateways: [NWEndpoint]
    /// An allowed interface has a usable IPv4 address and an IPv4 route out.
    public let supportsIPv4: Bool
    /// An allowed interface has a usable global IPv6 address and an IPv6 route out.
    public let supportsIPv6: Bool
    /// Nameservers are configured and the path is not unsatisfied.
    public let supportsDNS: Bool
    /// The preferred interface is expensive (cellular, unless configured otherwise
    /// with `PathMonitorOptions.expensiveInterfaces`).
    public let isExpensive: Bool
    /// The preferred interface is marked constrained with
    /// `PathMonitorOptions.constrainedInterfaces` (Low Data Mode has no Linux
    /// counterpart).
    public let isConstrained: Bool

    /// The local endpoint of a connection's path: always nil for a monitor's path.
    public var localEndpoint: NWEndpoint? { nil }
    /// The remote endpoint of a connection's path: always nil for a monitor's path.
    public var remoteEndpoint: NWEndpoint? { nil }

    /// A path from the core's `NetworkPath`.
    public init(_ path: NetworkPath) {
        switch path.status {
        case .satisfied: status = .satisfied
        case .unsatisfied: status = .unsatisfied
        case .requiresConnection: status = .requiresConnection
        }
        switch path.unsatisfiedReason {
        case .cellularDenied: unsatisfiedReason = .cellularDenied
        case .wifiDenied: unsatisfiedReason = .wifiDenied
        case .notAvailable, nil: unsatisfiedReason = .notAvailable
        }
        let interfaces = path.availableInterfaces.map(NWInterface.init)
        availableInterfaces = interfaces
        gateways = path.gateways.map { .hostPort(host: NWEndpoint.Host($0, interfaces: interfaces), port: .any) }
        supportsIPv4 = path.supportsIPv4
        supportsIPv6 = path.supportsIPv6
        supportsDNS = path.supportsDNS
        isExpensive = path.isExpensive
        isConstrained = path.isConstrained
    }

    /// The path of a monitor that could not be made or started.
    private init(failed: Void) {
        status = .unsatisfied
        unsatisfiedReason = .monitorFailed
        availableInterfaces = []
        gateways = []
        supportsIPv4 = false
        supportsIPv6 = false
        supportsDNS = false
        isExpensive = false
        isConstrained = false
    }

    /// The path a monitor that could not be made or started reports.
    static let failed = NWPath(failed: ())

    /// Whether traffic on this path goes over an interface of `type`: the preferred
    /// interface's type. Always false for an unsatisfied path.
    public func usesInterfaceType(_ type: NWInterface.InterfaceType) -> Bool {
        status != .unsatisfied && availableInterfaces.first?.type == type
    }

    /// Close to Network's text: `"satisfied (Path is satisfied), interface: eth0,
    /// ipv4, dns, uses wiredEthernet"`, `"unsatisfied (No network route)"`.
    public var debugDescription: String {
        var parts: [String]
        switch status {
        case .satisfied: parts = ["satisfied (Path is satisfied)"]
        case .requiresConnection: parts = ["requiresConnection (Path requires a connection)"]
        case .unsatisfied:
            let reason =
                switch unsatisfiedReason {
                case .notAvailable: "No network route"
                case .cellularDenied: "Denied over cellular interface"
                case .wifiDenied: "Denied over Wi-Fi interface"
                case .localNetworkDenied: "Local network prohibited"
                case .vpnInactive: "VPN is inactive"
                case .monitorFailed: "Path monitor failed to start"
                }
            parts = ["unsatisfied (\(reason))"]
        }
        if let first = availableInterfaces.first { parts.append("interface: \(first.name)") }
        if supportsIPv4 { parts.append("ipv4") }
        if supportsIPv6 { parts.append("ipv6") }
        if supportsDNS { parts.append("dns") }
        if isExpensive { parts.append("expensive") }
        if isConstrained { parts.append("constrained") }
        if status != .unsatisfied, let first = availableInterfaces.first { parts.append("uses \(first.type)") }
        return parts.joined(separator: ", ")
    }
}

// MARK: - NWPathMonitor

/// Network's `NWPathMonitor`, over the core `PathMonitor`: watches the host's
/// network path and calls ``pathUpdateHandler`` on the start queue with the
/// current path, then with every change.
///
/// ```swift
/// let monitor = NWPathMonitor()
/// monitor.pathUpdateHandler = { path in
///     print(path.status == .satisfied ? "connected" : "no connection")
/// }
/// monitor.start(queue: DispatchQueue(label: "Monitor"))
/// ```
///
/// Neither the initializers nor ``start(queue:)`` throw, as in Network. On Linux
/// the netlink sockets can fail to open (a sandbox, the descriptor limit, a
/// namespace that can't be entered); then ``start(queue:)`` logs one line to
/// standard error, keeps the error in ``lastError`` and delivers an unsatisfied
/// path with reason `NWPath.UnsatisfiedReason.monitorFailed` on the queue.
/// The core `PathMonitor` throws instead.
///
/// `for await path in monitor` works as in Network: iterating starts the monitor
/// (on the library's serial queue) if it is not started, and the monitor is
/// cancelled when the last such loop ends; a monitor you started yourself stays
/// started.
///
/// Differences on Linux: a cancelled monitor can be started again (Network's
/// can't); ``NWPath/isConstrained`` and ``NWPath/isExpensive`` come from
/// `PathMonitorOptions` and the interface type; `localNetworkDenied` and
/// `vpnInactive` never occur.
///
/// Swift 6 language mode: ``pathUpdateHandler`` is `@Sendable`, as in Network, so
/// a handler that captures non-Sendable state needs a change there.
///
/// `Sendable`: all mutable state is behind a lock.
public final class NWPathMonitor: Sendable, AsyncSequence {
    /// Iterating a monitor yields paths.
    public typealias Element = NWPath

    private struct State: Sendable {
        var handler: (@Sendable (NWPath) -> Void)?
        /// Why the latest start failed, if it did.
        var startError: ReachabilityError?
    }

    /// Nil when it could not be made (``lastError`` says why).
    let monitor: PathMonitor?
    private let makeError: ReachabilityError?
    private let state = LockedValue(State())
    /// The namespace and sysfs tree this monitor watches.
    public let environment: NetworkEnvironment

    private init(environment: NetworkEnvironment, make: () throws(ReachabilityError) -> PathMonitor) {
        self.environment = environment
        do {
            monitor = try make()
            makeError = nil
        } catch {
            monitor = nil
            makeError = error
        }
        monitor?.pathUpdateHandler = { [state] path in
            let handler = state.withLock { $0.handler }
            handler?(NWPath(path))
        }
    }

    /// A monitor of every interface but loopback, in `environment` (default: this
    /// process's namespace), with the core's `options`.
    public convenience init(environment: NetworkEnvironment = .default, options: PathMonitorOptions = .init()) {
        self.init(environment: environment) { () throws(ReachabilityError) in
            try PathMonitor(environment: environment, options: options)
        }
    }

    /// A monitor of interfaces of `requiredInterfaceType` only: the path is
    /// satisfied only while one of them is usable and has a route out.
    public convenience init(
        requiredInterfaceType: NWInterface.InterfaceType, environment: NetworkEnvironment = .default,
        options: PathMonitorOptions = .init()
    ) {
        self.init(environment: environment) { () throws(ReachabilityError) in
            try PathMonitor(
                requiredInterfaceType: requiredInterfaceType.core, environment: environment, options: options)
        }
    }

    /// A monitor of every interface except loopback and those of `prohibitedInterfaceTypes`.
    public convenience init(
        prohibitedInterfaceTypes: [NWInterface.InterfaceType], environment: NetworkEnvironment = .default,
        options: PathMonitorOptions = .init()
    ) {
        self.init(environment: environment) { () throws(ReachabilityError) in
            try PathMonitor(
                prohibitedInterfaceTypes: prohibitedInterfaceTypes.map(\.core), environment: environment,
                options: options)
        }
    }

    /// Called on the start queue with the current path, then with every change.
    @preconcurrency
    public var pathUpdateHandler: (@Sendable (NWPath) -> Void)? {
        get { state.withLock { $0.handler } }
        set { state.replace(\.handler, with: newValue) }
    }

    /// The queue given to ``start(queue:)`` (or the library's, when a `for await`
    /// loop started the monitor), until ``cancel()``.
    public var queue: DispatchQueue? {
        guard let monitor, monitor.isRunning else { return nil }
        return monitor.notificationQueue
    }

    /// Why the monitor could not be made or started, or why it stopped by itself
    /// (the watched namespace went away); nil while all is well.
    public var lastError: ReachabilityError? {
        state.withLock { $0.startError } ?? makeError ?? monitor?.lastError
    }

    /// The current path: cached while started, else evaluated afresh; the
    /// `NWPath.UnsatisfiedReason.monitorFailed` path after a failed start.
    public var currentPath: NWPath {
        guard let monitor, state.withLock({ $0.startError }) == nil else { return .failed }
        return NWPath(monitor.currentPath)
    }

    /// Starts watching and calls ``pathUpdateHandler`` on `queue` with the current
    /// path, then with every change. Calling it while started does nothing. When
    /// the monitor can't start, the handler gets one unsatisfied path with reason
    /// `NWPath.UnsatisfiedReason.monitorFailed`, ``lastError`` says why, and one
    /// line goes to standard error.
    public func start(queue: DispatchQueue) {
        let failure = Self.start(monitor, makeError, on: queue)
        state.withLock { $0.startError = failure }
        guard let failure else { return }
        Self.logStartFailure(failure)
        queue.async { [state] in
            let handler = state.withLock { $0.handler }
            handler?(.failed)
        }
    }

    /// Stops watching; queued updates are dropped and `for await` loops end.
    public func cancel() {
        monitor?.stop()
    }

    private static func start(
        _ monitor: PathMonitor?, _ makeError: ReachabilityError?, on queue: DispatchQueue
    ) -> ReachabilityError? {
        guard let monitor else { return makeError }
        do {
            monitor.notificationQueue = queue
            try monitor.start()
            return nil
        } catch {
            return error
        }
    }

    private static func logStartFailure(_ error: ReachabilityError) {
        logToStandardError("NWPathMonitor could not start: \(error)")
    }

    // MARK: AsyncSequence

    /// Iterates the paths: the current one first, then every change. The core
    /// `PathMonitor`'s iteration: it starts the monitor if it is not started, and
    /// cancels it when the last loop that started it ends. A monitor that can't
    /// start yields one `NWPath.UnsatisfiedReason.monitorFailed` path and ends.
    public func makeAsyncIterator() -> Iterator {
        guard let monitor else {
            if let makeError { Self.logStartFailure(makeError) }
            return Iterator(paths: nil, pending: .failed)
        }
        let paths = monitor.makeAsyncIterator()
        // The core starts a stopped monitor before returning: not running now, it failed.
        guard !monitor.isRunning, let error = monitor.lastError else {
            state.withLock { $0.startError = nil }
            return Iterator(paths: paths, pending: nil)
        }
        state.withLock { $0.startError = error }
        Self.logStartFailure(error)
        return Iterator(paths: nil, pending: .failed)
    }

    /// The iterator of a `for await` loop over a monitor. It keeps the monitor
    /// alive while the loop runs.
    public struct Iterator: AsyncIteratorProtocol {
        fileprivate var paths: PathMonitor.Iterator?
        fileprivate var pending: NWPath?

        /// The next path; nil once the monitor is cancelled or the task is.
        public mutating func next() async -> NWPath? {
            if let pending {
                self.pending = nil
                return pending
            }
            guard let path = await paths?.next() else { return nil }
            return NWPath(path)
        }
    }
}
