// Alamofire's NetworkReachabilityManager (Source/Features/NetworkReachabilityManager.swift,
// Alamofire 5), over the core `Reachability`. Code written against it compiles with
// `import Alamofire` changed to `import ReachabilityCompat`.
public import Dispatch
public import Reachability

/// Alamofire's `NetworkReachabilityManager`: listens for reachability changes of
/// a host or of the Internet (Apple's 0.0.0.0 target) and reports them as a
/// ``NetworkReachabilityStatus``.
///
/// ```swift
/// let manager = NetworkReachabilityManager(host: "www.apple.com")
/// manager?.startListening { status in
///     print("Network Status Changed: \(status)")
/// }
/// ```
///
/// As in Alamofire: the listener gets the current status once after
/// ``startListening(onQueue:onUpdatePerforming:)``, then every change of status,
/// never the same status twice in a row; ``stopListening()`` then a new start
/// delivers the current status again. The status follows Alamofire's table, which
/// differs from Apple's `NetworkStatus` in one row: reachable + connectionRequired
/// + isWWAN is ``NetworkReachabilityStatus/notReachable`` here (Alamofire calls a
/// connection that must first be established unreachable), where Apple's
/// sample and `Reachability.currentReachabilityStatus` say reachable via WWAN.
///
/// On Linux:
/// - the listener runs on the library's serial queue unless you pass a queue
///   (Alamofire's default is `.main`, which a Linux daemon may never drain); an
///   explicit `.main` is honoured;
/// - `.reachable(.cellular)` is reported for a cellular (WWAN) modem, as on iOS
///   (Alamofire on macOS never reports cellular);
/// - a hostname's ``flags`` and ``status`` never wait on DNS: before the name's
///   first resolution they answer from the route the Internet takes (see
///   `Reachability.init(hostname:environment:notificationQueue:)`); the
///   listener's first status waits for that resolution;
/// - `flags` is never nil: the kernel always answers a route lookup, so
///   ``status`` is never ``NetworkReachabilityStatus/unknown``.
///
/// Swift 6 language mode: ``Listener`` is `@Sendable`, as in Alamofire 5.9 and
/// later, and ``startListening(onQueue:onUpdatePerforming:)`` keeps Alamofire's
/// `@preconcurrency`: a listener that captures main-actor or non-Sendable state
/// compiles without a diagnostic in Swift 5 mode and with a warning in Swift 6 mode
/// (a real one: the listener runs on another thread unless the queue is `.main`).
///
/// `@unchecked Sendable` because the class is `open` (as Alamofire's is) and so
/// can't be checked; all of its own mutable state is behind a lock.
open class NetworkReachabilityManager: @unchecked Sendable {
    /// The states of network reachability.
    public enum NetworkReachabilityStatus: Equatable, Sendable {
        /// It is unknown whether the network is reachable (``flags`` is nil: never on Linux).
        case unknown
        /// The network is not reachable.
        case notReachable
        /// The network is reachable over a connection of this type.
        case reachable(ConnectionType)

        /// The connection types the flags tell apart.
        public enum ConnectionType: Sendable {
            /// Ethernet, Wi-Fi, or any other link that is not cellular.
            case ethernetOrWiFi
            /// A cellular (WWAN) link.
            case cellular
        }

        /// Alamofire's mapping of flags to a status: not reachable unless the flags
        /// are "actually reachable" (reachable, and either no connection is required
        /// or it can be made automatically without user intervention); then
        /// cellular when isWWAN is set, else ethernetOrWiFi. (Internal in Alamofire.)
        public init(_ flags: SCNetworkReachabilityFlags) {
            guard flags.isActuallyReachable else {
                self = .notReachable
                return
            }
            self = flags.isCellular ? .reachable(.cellular) : .reachable(.ethernetOrWiFi)
        }
    }

    /// A closure called with the new status when it changes.
    public typealias Listener = @Sendable (NetworkReachabilityStatus) -> Void

    /// The manager for the Internet (Apple's 0.0.0.0 target). Its listener runs on
    /// the library's serial queue unless a queue is given (Alamofire's: `.main`).
    public static let `default` = NetworkReachabilityManager()

    // MARK: Properties

    /// Whether the network is reachable now, over any link.
    open var isReachable: Bool { isReachableOnCellular || isReachableOnEthernetOrWiFi }

    /// Whether the network is reachable now over a cellular link.
    open var isReachableOnCellular: Bool { status == .reachable(.cellular) }

    /// Whether the network is reachable now over Ethernet, Wi-Fi or another non-cellular link.
    open var isReachableOnEthernetOrWiFi: Bool { status == .reachable(.ethernetOrWiFi) }

    /// The serial queue on which reachability updates are worked out, before the
    /// listener is called on its own queue.
    public let reachabilityQueue = DispatchQueue(label: "reachability.compat.alamofire")

    /// The current flags: cached while listening, otherwise asked of the kernel
    /// afresh. Never nil on Linux (Apple's is nil when the flags can't be read).
    open var flags: SCNetworkReachabilityFlags? { reachability.flags }

    /// The current status, from ``flags``.
    open var status: NetworkReachabilityStatus {
        flags.map(NetworkReachabilityStatus.init) ?? .unknown
    }

    /// Not Alamofire's: this package's hold-down against a flapping link
    /// (Alamofire#2677), `Reachability.holdDown` of the instance behind the manager.
    /// A change reaches the listener, and ``flags`` and ``status`` while listening,
    /// only once it has lasted this long; off (nil) by default.
    public var holdDown: Duration? {
        get { reachability.holdDown }
        set { reachability.holdDown = newValue }
    }

    /// The core instance this manager listens through.
    let reachability: Reachability

    private struct State: Sendable {
        var listener: Listener?
        var listenerQueue: DispatchQueue?
        /// The status the listener was last given since the latest start.
        var previousStatus: NetworkReachabilityStatus?
        var observation: ReachabilityObservation?
        /// Counts starts and stops: deliveries of an earlier listening session are dropped.
        var session: UInt64 = 0
    }

    private let state = LockedValue(State())

    // MARK: Initialization

    /// Watches `host` (a hostname or an IP address literal, without a scheme).
    /// Returns nil for a malformed name or address (`""`, `"https://example.com"`,
    /// `"a b"`), or an `environment` that can't be used.
    public convenience init?(host: String, environment: NetworkEnvironment = .default) {
        guard let reachability = try? Reachability(hostname: host, environment: environment) else { return nil }
        self.init(reachability: reachability)
    }

    /// Watches the Internet: the address 0.0.0.0, which reachability treats as the
    /// general routing status of the host, IPv4 and IPv6. Returns nil only for an
    /// `environment` that can't be used.
    public convenience init?(environment: NetworkEnvironment = .default) {
        guard let reachability = try? Reachability(environment: environment) else { return nil }
        self.init(reachability: reachability)
    }

    private init(reachability: Reachability) {
        self.reachability = reachability
        reachability.notificationQueue = reachabilityQueue
    }

    deinit {
        stopListening()
    }

    // MARK: Listening

    /// Starts listening, after stopping and removing any existing listener. The
    /// listener is called on `queue` with the current status, then with each change
    /// of status. `queue` defaults to the library's serial queue (Alamofire's
    /// default is `.main`).
    ///
    /// Returns true when listening started, false when it couldn't (the netlink
    /// sockets could not be opened, or the watched namespace is gone); then nothing
    /// is delivered.
    @preconcurrency
    @discardableResult
    open func startListening(
        onQueue queue: DispatchQueue = Reachability.defaultNotificationQueue,
        onUpdatePerforming listener: @escaping Listener
    ) -> Bool {
        stopListening()
        let session = state.withLock { state -> UInt64 in
            state.listener = listener
            state.listenerQueue = queue
            return state.session
        }
        do {
            try reachability.start()
        } catch {
            stopListening()
            return false
        }
        // Running: the observer's first call is the current status (for a hostname,
        // once its first resolution is in); then every delivered state.
        let observation = reachability.addObserver { [weak self] state in
            self?.notifyListener(NetworkReachabilityStatus(state.flags), session: session)
        }
        let current = state.withLock { state -> Bool in
            guard state.session == session else { return false }
            state.observation = observation
            return true
        }
        if !current { observation.remove() }
        return current
    }

    /// Stops listening: removes the listener. A status already handed to the
    /// listener's queue is still delivered.
    open func stopListening() {
        let old = state.withLock { state -> (ReachabilityObservation?, Listener?) in
            defer {
                state.session += 1
                state.listener = nil
                state.listenerQueue = nil
                state.previousStatus = nil
                state.observation = nil
            }
            return (state.observation, state.listener)
        }
        old.0?.remove()
        reachability.stop()
        // The old listener is released here, after unlocking.
        withExtendedLifetime(old) {}
    }

    /// Hands `status` to the listener of `session` on its queue, unless it is the
    /// status it was last given. Runs on ``reachabilityQueue``.
    private func notifyListener(_ status: NetworkReachabilityStatus, session: UInt64) {
        let delivery = state.withLock { state -> (Listener, DispatchQueue)? in
            guard state.session == session, state.previousStatus != status,
                let listener = state.listener, let queue = state.listenerQueue
            else { return nil }
            state.previousStatus = status
            return (listener, queue)
        }
        guard let (listener, queue) = delivery else { return }
        queue.async { listener(status) }
    }
}

extension SCNetworkReachabilityFlags {
    /// Alamofire's reading of the flags (internal helpers in Alamofire).
    var isActuallyReachable: Bool {
        guard contains(.reachable) else { return false }
        let canConnectAutomatically = !isDisjoint(with: [.connectionOnDemand, .connectionOnTraffic])
        let canConnectWithoutUserInteraction = canConnectAutomatically && !contains(.interventionRequired)
        return !contains(.connectionRequired) || canConnectWithoutUserInteraction
    }

    /// The route goes over a cellular link (Alamofire: iOS, tvOS and visionOS
    /// only; Linux has modems, so here too).
    var isCellular: Bool { contains(.isWWAN) }
}
