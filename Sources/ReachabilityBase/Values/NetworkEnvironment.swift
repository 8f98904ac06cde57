public import Logging
@_spi(Testing) public import ReachabilitySystem

/// Where the library looks: which network namespace it watches and which sysfs
/// tree it reads interface details from.
///
/// The default is the process's own namespace and `/sys`. Give a namespace file
/// (`/proc/PID/ns/net`, `/run/netns/NAME`) to watch a container or a test network
/// from the host: the monitor's sockets are opened inside that namespace (entering
/// it needs `CAP_SYS_ADMIN`). `/sys` shows the interfaces of the namespace it was
/// mounted in, so for another namespace the sysfs steps of interface
/// classification are skipped unless you pass a `sysfsRoot` that matches it.
///
/// Every instance with an equal environment shares one process-wide monitor.
///
/// The initializer accepts any strings; a bad one surfaces as a thrown
/// ``ReachabilityError`` from whatever uses the environment (the `Reachability`
/// and `PathMonitor` initializers, `NetworkInterfaces.list(environment:)`):
/// ``ReachabilityError/Code/namespace`` for a namespace path that is not a network
/// namespace (or holds a NUL byte, or is over `PATH_MAX`),
/// ``ReachabilityError/Code/invalidArgument`` for a sysfs root that is empty, holds
/// a NUL byte or is over `PATH_MAX`.
///
/// `Sendable`: a plain value.
public struct NetworkEnvironment: Sendable, Hashable {
    /// The namespace file, or `nil` for the process's own namespace.
    public var networkNamespacePath: String?
    /// The sysfs root used for classification (`DEVTYPE`, `phy80211`), or `nil`
    /// to skip sysfs.
    public var sysfsRoot: String?
    /// The netlink event socket's receive buffer in bytes (4 MiB; the kernel may
    /// grant less). Not API: SPI `Testing`, for tests that make a storm overrun a
    /// tiny buffer (the kernel's minimum).
    @_spi(Testing) public var eventReceiveBuffer: Int = 4 << 20
    /// The system calls everything made for this environment goes through: the
    /// monitor and its sockets, the file readers and watches, the resolver check
    /// and its name resolutions (``SystemCalls/live`` by default). Not API: SPI
    /// `Testing`, for tests that make calls fail with a ``SystemCallFaults`` plan
    /// (DESIGN §10). Part of equality by the plan's identity: an environment with a
    /// plan never shares a monitor with one without it.
    @_spi(Testing) public var systemCalls: SystemCalls = .live
    /// The root under which DHCP lease files are read (systemd-networkd's
    /// `run/systemd/netif/leases`, dhclient's `var/lib/dhcp`…) for Android's
    /// `ANDROID_METERED` vendor option, which makes a path expensive; `/` for the
    /// process's own namespace, nil (none read) for another, whose interfaces the
    /// host's lease files don't describe — set it when they do.
    public var leaseRoot: String?
    /// Where the library logs what it gets past on its own: lost netlink events and
    /// the re-reads they cause (info), failed re-reads (info), malformed messages
    /// (info), the namespace going away (info), resolver failures (info), and with
    /// `Connectivity` each failed probe (debug) and each verdict change (info).
    /// `nil` (the default): it logs nothing, anywhere.
    ///
    /// The namespace's shared monitor logs to the logger of the environment that
    /// started it (the first instance to start). Not part of equality: instances
    /// that differ only in their loggers share a monitor.
    public var logger: Logger?
    /// A simulated network standing in for the kernel (ReachabilityTestKit's
    /// `SimulatedNetwork.environment`); nil: the kernel. Part of equality by identity.
    package var simulation: (any NetworkSimulation)?
    /// The namespace ``networkNamespacePath`` named when the environment was made
    /// for it (`NetworkNamespaceInfo.environment`: a holder's `/proc/PID/ns/net`):
    /// opened later, a path that names another one (the holder moved to another
    /// namespace) is refused, never watched in its place. Part of equality.
    package var expectedNamespace: FileIdentity?

    /// Watches the namespace in `networkNamespacePath` (nil: the process's own),
    /// reading sysfs from `sysfsRoot`, which defaults to `/sys` for the process's
    /// own namespace and to none for another.
    public init(
        networkNamespacePath: String? = nil, sysfsRoot: String? = nil, leaseRoot: String? = nil, logger: Logger? = nil
    ) {
        self.networkNamespacePath = networkNamespacePath
        self.sysfsRoot = sysfsRoot ?? (networkNamespacePath == nil ? "/sys" : nil)
        self.leaseRoot = leaseRoot ?? (networkNamespacePath == nil ? "/" : nil)
        self.logger = logger
    }

    /// Equal when they watch the same namespace path with the same sysfs root and
    /// buffer; the ``logger`` doesn't count.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.networkNamespacePath == rhs.networkNamespacePath && lhs.sysfsRoot == rhs.sysfsRoot
            && lhs.eventReceiveBuffer == rhs.eventReceiveBuffer && lhs.leaseRoot == rhs.leaseRoot
            && lhs.systemCalls == rhs.systemCalls && lhs.simulation === rhs.simulation
            && lhs.expectedNamespace == rhs.expectedNamespace
    }

    /// Hashes what ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(networkNamespacePath)
        hasher.combine(sysfsRoot)
        hasher.combine(eventReceiveBuffer)
        hasher.combine(leaseRoot)
        hasher.combine(systemCalls)
        if let simulation { hasher.combine(ObjectIdentifier(simulation)) }
        hasher.combine(expectedNamespace)
    }

    /// The process's own namespace and `/sys`.
    public static let `default` = NetworkEnvironment()
}

extension NetworkEnvironment {
    /// Rejects paths no system call could take as given: a NUL byte would cut the
    /// path short at the C boundary (`"/proc/1/ns/net\0x"` would open
    /// `/proc/1/ns/net`), a path over `PATH_MAX` (4096 bytes) can't be opened, and
    /// an empty sysfs root is no directory. Whether the namespace file really is a
    /// network namespace is checked when it is opened.
    package func validate() throws(ReachabilityError) {
        if let path = networkNamespacePath, let problem = Self.problem(with: path) {
            throw ReachabilityError(.namespace, "network namespace path \(quotedForMessage(path)) \(problem)")
        }
        if let root = sysfsRoot, let problem = root.isEmpty ? "is empty" : Self.problem(with: root) {
            throw ReachabilityError(.invalidArgument, "sysfs root \(quotedForMessage(root)) \(problem)")
        }
    }

    private static func problem(with path: String) -> String? {
        if path.utf8.contains(0) { return "contains a NUL byte" }
        if path.utf8.count >= 4096 { return "has \(path.utf8.count) bytes: too long (PATH_MAX is 4096, NUL included)" }
        return nil
    }
}
