import Glibc
@_spi(Testing) import ReachabilitySystem

/// A network namespace found by ``NetworkNamespaceMonitor``: its identity, the
/// paths that name it, and the processes that hold it.
///
/// `Sendable`: a plain value.
public struct NetworkNamespaceInfo: Sendable, Hashable {
    /// What tells namespaces apart: the device and inode of its nsfs file, as
    /// `stat /proc/PID/ns/net` shows them (`ls -l` shows `net:[INODE]`). The kernel
    /// may give a freed inode number to a later namespace.
    public struct ID: Sendable, Hashable, Comparable, CustomStringConvertible {
        /// The nsfs device.
        public let device: UInt64
        /// The namespace's inode number.
        public let inode: UInt64

        init(_ identity: FileIdentity) {
            device = identity.device
            inode = identity.inode
        }

        /// Makes an identity from its parts.
        public init(device: UInt64, inode: UInt64) {
            self.device = device
            self.inode = inode
        }

        /// `net:[INODE]`, as `readlink /proc/PID/ns/net` says.
        public var description: String { "net:[\(inode)]" }

        /// By device, then inode.
        public static func < (lhs: Self, rhs: Self) -> Bool { (lhs.device, lhs.inode) < (rhs.device, rhs.inode) }
    }

    /// The namespace's identity.
    public let id: ID
    /// The paths that name it in the directories watched (`/run/netns/blue`), sorted.
    public let names: [String]
    /// The first processes that hold it (lowest pids first: a container's init
    /// before what it started), at most four.
    public let holders: [NetworkNamespaceHolder]
    /// How many processes hold it (the ``holders`` are the first of them).
    public let holderCount: Int
    /// Whether it is the namespace of this process.
    public let isCurrent: Bool

    /// Makes an info from its parts (for tests and simulations).
    public init(id: ID, names: [String], holders: [NetworkNamespaceHolder], holderCount: Int, isCurrent: Bool) {
        self.id = id
        self.names = names
        self.holders = holders
        self.holderCount = holderCount
        self.isCurrent = isCurrent
    }

    /// The last part of its first named path (`blue` for `/run/netns/blue`), or nil
    /// when no watched directory names it.
    public var name: String? {
        names.first.map { path in String(path[(path.lastIndex(of: "/").map(path.index(after:)) ?? path.startIndex)...])
        }
    }

    /// The container id of its first holder that has one in its cgroup path
    /// (Docker, containerd, CRI-O, podman), or nil.
    public var containerID: String? { holders.lazy.compactMap(\.containerID).first }

    /// A path that opens it: its first name, else its first holder's
    /// `/proc/PID/ns/net`; nil for the process's own namespace.
    public var path: String? {
        if isCurrent { return nil }
        return names.first ?? holders.first.map { "/proc/\($0.pid)/ns/net" }
    }

    /// The environment that points `Reachability`, `PathMonitor`, `InterfaceMonitor`
    /// and `Connectivity` at it (through ``path``). A namespace held only by a
    /// process goes away for them when that process exits, even if others still
    /// hold it: the monitor then reports a ``NetworkNamespaceEvent/changed(_:)``
    /// with a new ``path``, or its disappearance. Only this namespace: when ``path``
    /// names another one by the time they open it (its holder moved to another
    /// namespace), they throw ``ReachabilityError/Code/namespace``.
    public var environment: NetworkEnvironment {
        var environment = NetworkEnvironment(networkNamespacePath: path)
        if path != nil { environment.expectedNamespace = identity }
        return environment
    }

    /// Whether ``path`` leads to this namespace now: not after its holder exited or
    /// moved to another namespace, or its name was deleted, since the scan that found it.
    /// Only a missing path or another namespace says no: a path it may not look at
    /// (EACCES) or no descriptor left is no sign that it moved.
    package var isAtPath: Bool {
        guard let path else { return true }
        switch SystemCalls.live.stat(path) {
        case .success(let status): return status.identity == identity
        case .failure(let failure): return failure.errno != ENOENT
        }
    }

    private var identity: FileIdentity { FileIdentity(device: id.device, inode: id.inode) }
}

/// A process that holds a network namespace (its `/proc/PID/ns/net`).
///
/// `Sendable`: a plain value.
public struct NetworkNamespaceHolder: Sendable, Hashable {
    /// Its process id (in the process's own PID namespace).
    public let pid: Int32
    /// Its command name (`/proc/PID/comm`); empty when it exited before it was read.
    public let command: String
    /// The container id its cgroup path carries (64 hex digits), if any.
    public let containerID: String?

    /// Makes a holder from its parts.
    public init(pid: Int32, command: String, containerID: String?) {
        self.pid = pid
        self.command = command
        self.containerID = containerID
    }
}

/// What a ``NetworkNamespaceMonitor`` reports.
public enum NetworkNamespaceEvent: Sendable, Hashable {
    /// A namespace came into view: named in a watched directory, or held by a process.
    case appeared(NetworkNamespaceInfo)
    /// Its names or its first holders changed (`ip netns attach`, a holder that
    /// exited while others hold it).
    case changed(NetworkNamespaceInfo)
    /// It went out of view: no watched name and no process holds it (what a
    /// descriptor still holds, this library's own included, is not seen).
    case disappeared(NetworkNamespaceInfo)

    /// The namespace the event is about.
    public var namespace: NetworkNamespaceInfo {
        switch self {
        case .appeared(let info), .changed(let info), .disappeared(let info): info
        }
    }
}
