import Glibc

/// A network namespace held open by descriptor: the monitor's sockets and every
/// resolution for it are made inside exactly this namespace, even if its path is
/// later removed or made to point at another one (`ip netns del X; ip netns add X`).
///
/// `Sendable`: immutable; the descriptor is closed when the last holder lets go.
final class NetworkNamespace: Sendable {
    /// The descriptor of the namespace file (close-on-exec).
    let fd: Int32
    /// What identifies the namespace (device and inode of its nsfs file).
    let identity: FileIdentity
    /// The path it was opened from.
    let path: String

    private init(fd: Int32, identity: FileIdentity, path: String) {
        self.fd = fd
        self.identity = identity
        self.path = path
    }

    deinit {
        Syscall.close(fd)
    }

    /// Opens the network namespace at `path`; throws ``ReachabilityError/Code/namespace``
    /// when it is missing or not a network namespace.
    static func open(_ path: String) throws(ReachabilityError) -> NetworkNamespace {
        let fd: Int32
        switch Syscall.openNetworkNamespace(path) {
        case .success(let opened): fd = opened
        case .failure(let failure):
            throw ReachabilityError(
                .namespace, "network namespace \(path) is not usable (\(failure.call))", errno: failure.errno)
        }
        switch Syscall.fileIdentity(fd) {
        case .success(let identity):
            return NetworkNamespace(fd: fd, identity: identity, path: path)
        case .failure(let failure):
            Syscall.close(fd)
            throw ReachabilityError(.namespace, "network namespace \(path) is not usable", errno: failure.errno)
        }
    }

    /// Whether `path` still names this namespace: false once it was deleted, or
    /// names another namespace now.
    var isStillAtPath: Bool {
        guard case .success(let fd) = Syscall.openNetworkNamespace(path) else { return false }
        defer { Syscall.close(fd) }
        guard case .success(let now) = Syscall.fileIdentity(fd) else { return false }
        return now == identity
    }

    /// The process whose namespace this is, for a path of the form
    /// `/proc/PID/ns/net` or `/proc/PID/task/TID/ns/net` (nil for other paths and
    /// for `/proc/self`).
    var owningProcess: Int32? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count >= 4, parts[0] == "proc", parts.last == "net", parts[parts.count - 2] == "ns",
            let pid = Int32(parts[1]), pid > 0
        else { return nil }
        return pid
    }

    /// NAME for `/run/netns/NAME` or `/var/run/netns/NAME` (what `ip netns` makes).
    var name: String? { Self.name(of: path) }

    /// NAME for `/run/netns/NAME` or `/var/run/netns/NAME`.
    static func name(of path: String) -> String? {
        for prefix in ["/run/netns/", "/var/run/netns/"] where path.hasPrefix(prefix) {
            let name = String(path.dropFirst(prefix.count))
            if !name.isEmpty, !name.contains("/"), name != ".", name != ".." { return name }
        }
        return nil
    }
}
