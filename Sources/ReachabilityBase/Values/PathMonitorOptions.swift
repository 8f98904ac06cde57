/// Per-interface settings of a `PathMonitor`'s cost flags, and where it reads
/// the resolver's configuration (`PathMonitor.Options`).
///
/// `Sendable`: a plain value.
public struct PathMonitorOptions: Sendable, Hashable {
    /// isExpensive by interface name, overriding the default (cellular is
    /// expensive, everything else is not): e.g. `["usb0": true]` for a phone
    /// tethered over USB.
    public var expensiveInterfaces: [String: Bool]
    /// Interface names whose paths are constrained (none by default).
    public var constrainedInterfaces: Set<String>
    /// The resolv.conf that decides supportsDNS. Default: `/etc/resolv.conf`
    /// (for a `/run/netns/NAME` environment, `/etc/netns/NAME/resolv.conf`
    /// when it exists). A running monitor reads it at its start and again when it
    /// changes (it watches the file). A missing file means no DNS; an empty path, one with a
    /// NUL byte, or one naming something other than a regular file (a FIFO,
    /// `/dev/zero`, a directory) makes the `PathMonitor` initializers throw
    /// ``ReachabilityError/Code/invalidArgument``.
    public var resolvConfPath: String?

    /// Creates options; the defaults match NWPathMonitor's behaviour.
    public init(
        expensiveInterfaces: [String: Bool] = [:], constrainedInterfaces: Set<String> = [],
        resolvConfPath: String? = nil
    ) {
        self.expensiveInterfaces = expensiveInterfaces
        self.constrainedInterfaces = constrainedInterfaces
        self.resolvConfPath = resolvConfPath
    }
}
