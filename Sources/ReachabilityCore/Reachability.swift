public import Dispatch
@_exported @_spi(Testing) public import ReachabilityBase

/// Can this host reach a target now, over what kind of link — and tell me the
/// moment that changes. Apple's SCNetworkReachability / Reachability model, driven
/// by the Linux kernel's routing events.
///
/// ```swift
/// let reachability = try Reachability()          // the Internet
/// reachability.whenReachable = { r in print("up via", r.interfaceType ?? .other) }
/// reachability.whenUnreachable = { _ in print("down") }
/// try reachability.startNotifier()
/// ```
///
/// The flags come from the kernel's own answer for the target (an `RTM_GETROUTE`
/// lookup, which honours policy rules and VRFs and sends no packet) and the state
/// of the output interface. All instances of a namespace share one process-wide
/// netlink monitor and its one reader thread.
///
/// Callbacks and notifications run on ``notificationQueue``, a serial queue owned
/// by the library unless you pass one. A Linux daemon may never drain the main
/// queue, so `.main` is not the default; pass it if your program runs a main loop.
///
/// Every initializer checks its ``NetworkEnvironment`` first: a namespace file
/// that can't be opened as a network namespace throws
/// ``ReachabilityError/Code/namespace`` (for want of descriptors or memory,
/// ``ReachabilityError/Code/systemCall`` with the errno), a malformed sysfs root
/// ``ReachabilityError/Code/invalidArgument``.
///
/// `Sendable`: all mutable state is behind a lock, and callbacks are `@Sendable`.
public final class Reachability: Sendable {
    /// A closure called with the instance when it becomes reachable or unreachable.
    public typealias NetworkReachable = @Sendable (Reachability) -> Void

    /// A closure called with the instance and what went wrong; see ``whenError``.
    public typealias ErrorHandler = @Sendable (Reachability, ReachabilityError) -> Void

    /// The serial queue the library delivers on when none is given.
    public static let defaultNotificationQueue = DeliveryQueue.default

    let core: NotifierCore

    /// The namespace and sysfs tree this instance watches.
    public var environment: NetworkEnvironment { core.environment }

    private init(
        spec: NotifierSpec, environment: NetworkEnvironment, queue: DispatchQueue?,
        postsNotifications: Bool = true,
        resolver: ResolverPool = .shared
    ) throws(ReachabilityError) {
        // A missing or unreadable namespace file, or a path with a NUL byte, fails here, not later.
        try environment.validate()
        _ = try MonitorRegistry.Key(environment)
        core = NotifierCore(
            spec: spec, environment: environment, queue: queue ?? Self.defaultNotificationQueue,
            postsNotifications: postsNotifications, resolver: resolver)
        core.storage.withLock { $0.owner = self }
    }

    /// Watches a hostname resolved by `resolver` instead of the shared pool (tests
    /// script the resolver's answers and failures with one of their own).
    convenience init(
        hostname: String, environment: NetworkEnvironment = .default, notificationQueue: DispatchQueue? = nil,
        resolver: ResolverPool
    ) throws(ReachabilityError) {
        try self.init(
            spec: .hostname(Hostname.validate(hostname)), environment: environment, queue: notificationQueue,
            resolver: resolver)
    }

    private convenience init(target: Target, environment: NetworkEnvironment, queue: DispatchQueue?)
        throws(ReachabilityError)
    {
        try self.init(spec: .fixed(target), environment: environment, queue: queue)
    }

    deinit {
        core.stop()
    }

    // MARK: Targets

    /// Watches the Internet (Apple's 0.0.0.0 target): the better of the IPv4 and
    /// IPv6 routes to global unicast addresses.
    public convenience init(
        environment: NetworkEnvironment = .default, notificationQueue: DispatchQueue? = nil
    ) throws(ReachabilityError) {
        do throws(ReachabilityError) {
            try self.init(target: .internet, environment: environment, queue: notificationQueue)
        } catch {
            throw error.during(.creatingWithAddress)
        }
    }

    /// Watches one address, given as an IPv4 or IPv6 literal (`"192.0.2.1"`,
    /// `"2001:db8::1"`, `"fe80::1%eth0"`). `"0.0.0.0"` and `"::"` mean the Internet.
    /// Throws ``ReachabilityError/Code/invalidAddress``, naming the string, for
    /// anything else (hostnames included).
    public convenience init(
        address: String, environment: NetworkEnvironment = .default, notificationQueue: DispatchQueue? = nil
    ) throws(ReachabilityError) {
        do throws(ReachabilityError) {
            try self.init(address: IPAddress(address), environment: environment, notificationQueue: notificationQueue)
        } catch {
            throw error.during(.creatingWithAddress)
        }
    }

    /// Watches one address. The unspecified addresses mean the Internet. An
    /// IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) is looked up as the IPv4
    /// address it stands for, where an `AF_INET6` socket connecting to it goes.
    public convenience init(
        address: IPAddress, environment: NetworkEnvironment = .default, notificationQueue: DispatchQueue? = nil
    ) throws(ReachabilityError) {
        let target: Target = address.unmapped.isUnspecified ? .internet : .address(address)
        do throws(ReachabilityError) {
            try self.init(target: target, environment: environment, queue: notificationQueue)
        } catch {
            throw error.during(.creatingWithAddress)
        }
    }

    /// Watches `remoteAddress` as reached from `localAddress` (the lookup names the
    /// source, as `ip route get REMOTE from LOCAL` does). A local address this host
    /// does not own gives no flags. Both must be of the same family.
    public convenience init(
        localAddress: String, remoteAddress: String, environment: NetworkEnvironment = .default,
        notificationQueue: DispatchQueue? = nil
    ) throws(ReachabilityError) {
        do throws(ReachabilityError) {
            let local = try IPAddress(localAddress)
            let remote = try IPAddress(remoteAddress)
            guard local.unmapped.family == remote.unmapped.family else {
                throw ReachabilityError(
                    .invalidAddress,
                    "local address \(quotedForMessage(localAddress)) is \(local.unmapped.family) but remote address \(quotedForMessage(remoteAddress)) is \(remote.unmapped.family)"
                )
            }
            try self.init(
                target: .addressPair(local: local, remote: remote), environment: environment, queue: notificationQueue)
        } catch {
            throw error.during(.creatingWithAddress)
        }
    }

    /// Watches a hostname. It is resolved with the system resolver (getaddrinfo:
    /// /etc/hosts, resolv.conf, nsswitch) on the library's own threads: nothing
    /// the caller does, `currentReachabilityStatus` included, ever waits on DNS.
    /// The flags are the best over the resolved addresses; NXDOMAIN or no answer
    /// gives none. The notifier's first delivery waits for the first resolution,
    /// so an unknown host never produces a "reachable, then unreachable" pair.
    ///
    /// When the name is resolved again: when the network changes in a way that can
    /// change its answer or how it is reached — a link or address change, a policy
    /// rule, a route covering one of its addresses or a default route, a resync, or
    /// a change of resolv.conf, hosts or nsswitch.conf — never because its own new
    /// answer changed the state (a round-robin name would loop). At most one
    /// resolution per name is in flight, and at most one starts per second per name.
    /// A name whose server does not answer never delays the others.
    ///
    /// Before the first resolution, the synchronous getters (``flags``,
    /// ``currentReachabilityStatus``, ``state``) answer provisionally from the route
    /// the Internet target takes, as Apple's do, and ``ReachabilityState/isProvisional``
    /// says so.
    ///
    /// A failure of the resolver itself (out of descriptors or memory) is not an
    /// answer: the state stays, ``whenError`` is called, and the name is tried again.
    ///
    /// An IPv4 or IPv6 literal is treated as an address, with no DNS; text shaped
    /// like one that does not parse (`"999.1.1.1"`, `"::g"`, `"192.0.2.1%eth0"`), and
    /// the numeric shorthands only `inet_aton` reads (`"127.1"`, `"0x7f.0.0.1"`), throw
    /// ``ReachabilityError/Code/invalidAddress``. Invalid
    /// names (empty, over 253 bytes, a label over 63 bytes, spaces or control
    /// characters) throw ``ReachabilityError/Code/invalidHostname`` naming the input.
    /// Internationalized names are IDNA-encoded for the resolver (`bücher.example`
    /// is asked as `xn--bcher-kva.example`).
    ///
    /// With a ``NetworkEnvironment`` naming another namespace, the resolver runs
    /// inside it; for `/run/netns/NAME` it reads `/etc/netns/NAME/resolv.conf` and
    /// `hosts` when present, as `ip netns exec NAME` arranges.
    public convenience init(
        hostname: String, environment: NetworkEnvironment = .default, notificationQueue: DispatchQueue? = nil
    ) throws(ReachabilityError) {
        do throws(ReachabilityError) {
            let name = try Hostname.validate(hostname)
            if let address = Hostname.legacyNumericIPv4(name) {
                // getaddrinfo would read "0x7f.0.0.1" or "127.1" as an address without DNS;
                // only the forms inet_pton accepts are addresses here.
                throw ReachabilityError(
                    .invalidAddress,
                    "\(quotedForMessage(name)) is an old numeric shorthand for \(address) (inet_aton); only dotted-quad IPv4 literals are accepted: write \(address)"
                )
            }
            if Hostname.looksLikeAddress(name) {
                // "999.1.1.1" or "::g" is a malformed address, not a name to look up (no
                // hostname is all digits and dots, or contains ':').
                let literal = name.hasPrefix("[") && name.hasSuffix("]") ? String(name.dropFirst().dropLast()) : name
                let address = try IPAddress(literal)
                let target: Target = address.unmapped.isUnspecified ? .internet : .address(address)
                try self.init(target: target, environment: environment, queue: notificationQueue)
            } else {
                try self.init(spec: .hostname(name), environment: environment, queue: notificationQueue)
            }
        } catch {
            throw error.during(.creatingWithHostname)
        }
    }

    /// Watches the local link (Apple's `reachabilityForLocalWiFi`): reachable and
    /// isDirect when some non-loopback interface is up, has carrier and a usable
    /// address, so that neighbours on the link can be reached without a router.
    public static func forLinkLocal(
        environment: NetworkEnvironment = .default, notificationQueue: DispatchQueue? = nil
    ) throws(ReachabilityError) -> Reachability {
        do throws(ReachabilityError) {
            return try Reachability(target: .linkLocal, environment: environment, queue: notificationQueue)
        } catch {
            throw error.during(.creatingWithAddress)
        }
    }

    /// What this instance watches: `"internet"`, an address, `"local → remote"`,
    /// `"link-local"`, or the hostname.
    public var targetDescription: String { core.target.description }

    // MARK: State

    /// The current state: flags and output interface together.
    public var state: ReachabilityState { core.state }

    /// The current flags. With the notifier running this reads the cached state
    /// (kept current by kernel events); without it, it asks the kernel afresh.
    /// Never waits on DNS.
    public var flags: ReachabilityFlags { core.state.flags }

    /// Apple's status for the current flags.
    public var currentReachabilityStatus: NetworkStatus { NetworkStatus(flags: flags) }

    /// True when the route exists but the interface is not usable yet (IPv6 DAD
    /// in progress, link settling, or 802.1X/WPA authentication pending).
    public var connectionRequired: Bool { flags.contains(.connectionRequired) }

    /// The output interface the kernel chose for the target, if there is a route.
    public var interface: NetworkInterface? { core.state.interface }

    /// A hostname target's addresses as of its latest resolution: nil before the
    /// first one (and for targets that are not hostnames), empty when the name did
    /// not resolve (NXDOMAIN, no data, no answer).
    public var resolvedAddresses: [IPAddress]? {
        guard case .hostname = core.spec else { return nil }
        return core.currentResolution?.addresses
    }

    /// The latest error the notifier met: the resolver failing (a hostname's state
    /// then stays as it was), or the watched network namespace going away (the
    /// notifier has then stopped). Cleared by ``startNotifier()``.
    public var lastError: ReachabilityError? { core.lastError }

    /// The medium of the output interface, if there is a route.
    public var interfaceType: InterfaceType? { interface?.type }

    // MARK: Notifier

    /// Called on ``notificationQueue`` when the notifier starts in a reachable
    /// state, and whenever the state changes and is reachable.
    public var whenReachable: NetworkReachable? {
        get { core.storage.withLock { $0.whenReachable } }
        set { core.storage.replace(\.whenReachable, with: newValue) }
    }

    /// Called on ``notificationQueue`` when the notifier starts in an unreachable
    /// state, and whenever the state changes and is not reachable.
    public var whenUnreachable: NetworkReachable? {
        get { core.storage.withLock { $0.whenUnreachable } }
        set { core.storage.replace(\.whenUnreachable, with: newValue) }
    }

    /// Called on ``notificationQueue`` with an error the notifier can't resolve by
    /// itself:
    /// - the watched network namespace went away (`/run/netns/NAME` deleted, or
    ///   the process behind `/proc/PID/ns/net` exited): code
    ///   ``ReachabilityError/Code/namespace``; the notifier has stopped and every
    ///   ``updates`` sequence has finished;
    /// - the resolver failed for a reason that says nothing about the name (out of
    ///   descriptors or memory): code ``ReachabilityError/Code/systemCall``; the
    ///   state stays as it was and the name is tried again (after 1 s, doubling to 30 s).
    public var whenError: ErrorHandler? {
        get { core.storage.withLock { $0.whenError } }
        set { core.storage.replace(\.whenError, with: newValue) }
    }

    /// The serial queue callbacks and notifications run on. Changing it affects
    /// deliveries scheduled afterwards.
    public var notificationQueue: DispatchQueue {
        get { core.storage.withLock { $0.queue } }
        set { core.storage.withLock { $0.queue = newValue } }
    }

    /// A hold-down against a flapping link: how long a change must last before the
    /// notifier delivers it. Off by default (nil; nil or a duration of zero or less
    /// turns it off). Set it before or after ``startNotifier()``; it is kept across stop and
    /// start.
    ///
    /// ```swift
    /// let reachability = try Reachability()
    /// reachability.holdDown = .seconds(2)  // A Wi-Fi blip of 200 ms is never heard of.
    /// ```
    ///
    /// With one set, every change — to unreachable and back to reachable alike, and
    /// a change of flags or of the output interface — is held: it is delivered once
    /// the state has stayed away from the state delivered last for `holdDown`,
    /// measured from the latest change. A change that lasts is delivered once,
    /// `holdDown` after the state settled; a change back to the delivered state
    /// within the hold-down is never delivered; a link that keeps flapping faster
    /// than that delivers nothing until it settles. The start still delivers the
    /// current state at once.
    ///
    /// It applies to everything that delivers: ``whenReachable``,
    /// ``whenUnreachable``, observers, the notification and ``updates``. While the
    /// notifier runs, the getters (``state``, ``flags``,
    /// ``currentReachabilityStatus``, ``interface``…) report the delivered state too,
    /// so that a callback reading the instance sees what it was told; stopped, they
    /// evaluate afresh as always. ``waitUntilReachable(timeout:)`` doesn't wait for it.
    ///
    /// Changed while a change is held, the new value applies to that change from
    /// when it happened: it is delivered at once if it has lasted that long (or the
    /// hold-down is turned off), else when it has.
    public var holdDown: Duration? {
        get { core.holdDown }
        set { core.setHoldDown(newValue) }
    }

    /// Whether the notifier is running: from ``startNotifier()`` until ``stopNotifier()`` (or the
    /// loss of the watched namespace).
    public var isRunning: Bool { core.isRunning }

    /// Starts the notifier: joins the shared netlink monitor (starting it if this is
    /// the first instance), evaluates the target, and delivers the current state
    /// once to the closures and to NotificationCenter. After that it delivers only
    /// when the flags or the output interface change. Calling it while running
    /// does nothing. Throws when the netlink sockets cannot be opened.
    ///
    /// ``start()`` is the same, under the name every monitor of the package shares.
    public func startNotifier() throws(ReachabilityError) {
        do throws(ReachabilityError) {
            try core.start()
        } catch {
            throw error.during(.startingNotifier)
        }
    }

    /// Stops the notifier. Deliveries already queued are dropped, and every
    /// ``updates`` sequence finishes; the shared monitor stops when its last
    /// instance stops. Starting again delivers the current state again.
    public func stopNotifier() {
        core.stop()
    }

    /// ``startNotifier()``, under the name every monitor of the package shares.
    public func start() throws(ReachabilityError) { try startNotifier() }

    /// ``stopNotifier()``, under the name every monitor of the package shares.
    public func stop() { stopNotifier() }

    // MARK: Observers, updates, waiting

    /// Adds a block observer (DTReachability style). It is called on
    /// ``notificationQueue`` at once with the current state (while a hostname's
    /// first resolution is pending, with the first state once it is known), and
    /// then with every state the notifier delivers. Keep the returned token: pass it to
    /// ``removeObserver(_:)`` or call ``ReachabilityObservation/remove()`` — from
    /// any thread, including from inside the block — and no further call starts.
    public func addObserver(_ block: @escaping @Sendable (ReachabilityState) -> Void) -> ReachabilityObservation {
        ReachabilityObservation(core: core, id: core.addObserver(block))
    }

    /// Calls `sink` with every state the notifier delivers (the first one at the
    /// start, then each change), synchronously on the thread that decided it: the
    /// monitor's reader thread for kernel events. No queue hop, so the latency
    /// from the kernel event is the evaluation's alone. It runs under the
    /// instance's lock, in delivery order, while the reader waits: it must not
    /// call this instance or block for long. There is no removing it. For the
    /// CLI, whose `watch` writes a line per change and does nothing else.
    package func deliverSynchronously(_ sink: @escaping @Sendable (ReachabilityState) -> Void) {
        core.addSynchronousSink(sink)
    }

    /// Removes a block observer. Removing one twice does nothing.
    public func removeObserver(_ observation: ReachabilityObservation) {
        observation.remove()
    }

    /// The delivered states as an `AsyncSequence`: the current one first when the
    /// notifier is running, then every change. A slow consumer sees only the
    /// newest state, never a backlog. Each access makes a new sequence; it finishes
    /// when the notifier stops (a sequence made while stopped waits for the next
    /// start) or when the iterating task is cancelled.
    public var updates: AsyncStream<ReachabilityState> { core.makeStream() }

    /// Waits until the target is reachable (status not ``NetworkStatus/notReachable``):
    /// true as soon as it is — at once if it already is — or false at the deadline.
    /// For the "says no, then yes a moment later" case after a device wakes or a
    /// link comes up. Works whether or not this instance's notifier is running, and
    /// calls none of its callbacks. A zero or negative `timeout` returns at once:
    /// false, or true when the target is already reachable and that is seen first.
    /// A `timeout` of a century or more (up to `.seconds(Int64.max)`) means no
    /// deadline.
    public func waitUntilReachable(timeout: Duration) async -> Bool {
        let watcher: Reachability
        do {
            watcher = try Reachability(
                spec: core.spec, environment: core.environment, queue: Self.defaultNotificationQueue,
                postsNotifications: false, resolver: core.resolver)
            watcher.core.adopt(resolution: core.currentResolution)
            try watcher.start()
        } catch {
            return false
        }
        defer { watcher.stop() }
        let updates = watcher.updates
        // Task.sleep traps on a deadline past Int64.max seconds from the clock's
        // epoch: a timeout that long has no deadline at all.
        let deadline = timeout < Self.unboundedTimeout ? timeout : nil
        return await firstResult(within: deadline) {
            for await state in updates where state.isReachable { return true }
            return false
        } ?? false
    }

    /// Timeouts from this one up wait without a deadline: a century.
    static let unboundedTimeout: Duration = .seconds(100 * 365 * 86_400)

    /// The completion-handler form of ``waitUntilReachable(timeout:)``: `completion`
    /// runs on `queue` (default: ``notificationQueue``) with true or false.
    public func waitUntilReachable(
        timeout: Duration, queue: DispatchQueue? = nil, completion: @escaping @Sendable (Bool) -> Void
    ) {
        let queue = queue ?? notificationQueue
        Task {
            let reachable = await waitUntilReachable(timeout: timeout)
            queue.async { completion(reachable) }
        }
    }
}

/// The token of a block observer; see ``Reachability/addObserver(_:)``.
///
/// `Sendable`: it holds only the identity of the observer and a reference to
/// the notifier's locked state.
public final class ReachabilityObservation: Sendable, Hashable {
    private let core: NotifierCore
    private let id: UInt64

    init(core: NotifierCore, id: UInt64) {
        self.core = core
        self.id = id
    }

    /// Stops the observer. Called on the notification queue (from inside any
    /// callback), it takes effect at once; from another thread, a call that has
    /// already begun on the queue may still finish, and none starts afterwards.
    public func remove() {
        core.removeObserver(id)
    }

    /// Two tokens are equal when they are the same token (identity).
    public static func == (lhs: ReachabilityObservation, rhs: ReachabilityObservation) -> Bool {
        lhs === rhs
    }

    /// Hashes the token's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}

extension Reachability {
    /// ashleymills' `allowsCellularConnection` (the Compat layer of the `Reachability`
    /// module): false, a state reachable only over cellular goes to ``whenUnreachable``.
    package var allowsCellular: Bool {
        get { core.storage.withLock { $0.allowsCellular } }
        set { core.storage.withLock { $0.allowsCellular = newValue } }
    }

    /// False: this instance posts no notification, and a delivery with no closure
    /// or observer to call makes no hop to ``notificationQueue`` (the CLI, which
    /// writes its lines through ``deliverSynchronously(_:)`` and needs nothing else).
    package var postsNotifications: Bool {
        get { core.storage.withLock { $0.postsNotifications } }
        set { core.storage.withLock { $0.postsNotifications = newValue } }
    }

    /// The center this instance's notification is posted on; nil for the default
    /// one (``PostsReachabilityNotifications``: a `NotificationCenter`, which this module
    /// can't name).
    package var postingCenter: (any AnyObject & Sendable)? {
        get { core.storage.withLock { $0.notificationCenter } }
        set { core.storage.replace(\.notificationCenter, with: newValue) }
    }
}

extension Reachability: CustomStringConvertible {
    /// `"internet: reachableViaWiFi -R ------- via eth0 (#2, wiredEthernet)"`.
    public var description: String { "\(targetDescription): \(core.state)" }
}
