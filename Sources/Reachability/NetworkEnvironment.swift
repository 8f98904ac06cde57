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
/// `Sendable`: a plain value.
public struct NetworkEnvironment: Sendable, Hashable {
    /// The namespace file, or `nil` for the process's own namespace.
    public var networkNamespacePath: String?
    /// The sysfs root used for classification (`DEVTYPE`, `phy80211`), or `nil`
    /// to skip sysfs.
    public var sysfsRoot: String?
    /// The netlink event socket's receive buffer in bytes (at least 1 MiB by default).
    var eventReceiveBuffer: Int = 4 << 20

    /// Watches the namespace in `networkNamespacePath` (nil: the process's own),
    /// reading sysfs from `sysfsRoot`, which defaults to `/sys` for the process's
    /// own namespace and to none for another.
    public init(networkNamespacePath: String? = nil, sysfsRoot: String? = nil) {
        self.networkNamespacePath = networkNamespacePath
        self.sysfsRoot = sysfsRoot ?? (networkNamespacePath == nil ? "/sys" : nil)
    }

    /// The process's own namespace and `/sys`.
    public static let `default` = NetworkEnvironment()
}

extension NetworkEnvironment {
    /// Moves the calling thread into this environment's network namespace (nothing
    /// for the process's own). For threads the caller owns outright, such as an
    /// event loop that only ever makes sockets for this environment: every thread
    /// the library itself uses stays where it is.
    package func enterNetworkNamespaceOnCurrentThread() throws(ReachabilityError) {
        guard let path = networkNamespacePath else { return }
        if case .failure(let failure) = Syscall.enterNetworkNamespace(path) {
            throw ReachabilityError(.namespace, "cannot enter network namespace \(path)", errno: failure.errno)
        }
    }
}
