import Glibc
@_spi(Testing) package import ReachabilitySystem

/// A network namespace held open by descriptor: the monitor's sockets and every
/// resolution for it are made inside exactly this namespace, even if its path is
/// later removed or made to point at another one (`ip netns del X; ip netns add X`).
///
/// `Sendable`: immutable; the descriptor is closed when the last holder lets go.
package final class NetworkNamespace: Sendable {
    /// The descriptor of the namespace file (close-on-exec).
    package let fd: Int32
    /// What identifies the namespace (device and inode of its nsfs file).
    package let identity: FileIdentity
    /// The path it was opened from.
    package let path: String
    /// The system calls of the environment it was opened for: its own (closing,
    /// looking again) and those of the threads that enter it.
    package let systemCalls: SystemCalls

    private init(fd: Int32, identity: FileIdentity, path: String, systemCalls: SystemCalls) {
        self.fd = fd
        self.identity = identity
        self.path = path
        self.systemCalls = systemCalls
    }

    deinit {
        systemCalls.close(fd)
    }

    /// Opens the network namespace at `path` through `systemCalls`; throws
    /// ``ReachabilityError/Code/namespace`` when it is missing or not a network
    /// namespace, and ``ReachabilityError/Code/systemCall`` when the process is out
    /// of descriptors or memory (``openFailure(_:path:)``).
    package static func open(_ path: String, systemCalls: SystemCalls) throws(ReachabilityError) -> NetworkNamespace {
        let fd: Int32
        switch systemCalls.openNetworkNamespace(path) {
        case .success(let opened): fd = opened
        case .failure(let failure): throw openFailure(failure, path: path)
        }
        switch systemCalls.fileIdentity(fd) {
        case .success(let identity):
            return NetworkNamespace(fd: fd, identity: identity, path: path, systemCalls: systemCalls)
        case .failure(let failure):
            systemCalls.close(fd)
            throw openFailure(failure, path: path)
        }
    }

    /// What a failed open of the namespace file at `path` is reported as. EMFILE,
    /// ENFILE, ENOMEM and ENOBUFS say nothing about the namespace: they are the
    /// process's (``ReachabilityError/Code/systemCall``), so that no caller reads
    /// them as a namespace that is missing or gone (the CLI would say "deleted").
    /// Anything else is ``ReachabilityError/Code/namespace``.
    private static func openFailure(_ failure: SystemError, path: String) -> ReachabilityError {
        if SystemError.resourceErrors.contains(failure.errno) {
            return ReachabilityError(
                .systemCall, "network namespace \(path) can't be opened now (\(failure.call))", errno: failure.errno)
        }
        return ReachabilityError(
            .namespace, "network namespace \(path) is not usable (\(failure.call))", errno: failure.errno)
    }

    /// Whether `path` still names this namespace: false once it was deleted, or
    /// names another namespace now. A process out of descriptors or memory can't
    /// tell (EMFILE, ENFILE, ENOMEM, ENOBUFS): that is no sign of a deletion, and the
    /// answer is yes (the next look, at the next change in the directory, tells).
    package var isStillAtPath: Bool {
        let fd: Int32
        switch systemCalls.openNetworkNamespace(path) {
        case .success(let opened): fd = opened
        case .failure(let failure): return [EMFILE, ENFILE, ENOMEM, ENOBUFS].contains(failure.errno)
        }
        defer { systemCalls.close(fd) }
        guard case .success(let now) = systemCalls.fileIdentity(fd) else { return false }
        return now == identity
    }

    /// The process whose namespace this is, for a path of the form
    /// `/proc/PID/ns/net` or `/proc/PID/task/TID/ns/net` (nil for other paths and
    /// for `/proc/self`).
    package var owningProcess: Int32? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count >= 4, parts[0] == "proc", parts.last == "net", parts[parts.count - 2] == "ns",
            let pid = Int32(parts[1]), pid > 0
        else { return nil }
        return pid
    }

    /// NAME for `/run/netns/NAME` or `/var/run/netns/NAME` (what `ip netns` makes).
    package var name: String? { Self.name(of: path) }

    /// NAME for `/run/netns/NAME` or `/var/run/netns/NAME`.
    package static func name(of path: String) -> String? {
        for prefix in ["/run/netns/", "/var/run/netns/"] where path.hasPrefix(prefix) {
            let name = String(path.dropFirst(prefix.count))
            if !name.isEmpty, !name.contains("/"), name != ".", name != ".." { return name }
        }
        return nil
    }
}

extension JoinableThread {
    /// Runs `body` on a short-lived thread inside `environment`'s network namespace
    /// (or directly for the process's own), and returns its result after joining it.
    /// The namespace is opened (``NetworkEnvironment/openNamespace()``), the thread
    /// made and the namespace entered through the environment's system calls.
    ///
    /// The caller's thread never changes namespace, and neither does any thread
    /// that may later create others: a thread that called setns(2) or unshare(2)
    /// must never enqueue Dispatch work, since libdispatch may start a worker
    /// thread from it, and that worker would inherit the namespace. So `body` must
    /// not call user code or enqueue work; it returns a value instead.
    ///
    /// With `overlayEtc`, and a namespace path of the form `/run/netns/NAME`, the thread also
    /// gets a private mount namespace with `/etc/netns/NAME/*` bind-mounted over
    /// `/etc`, as `ip netns exec NAME` arranges (the resolver reads resolv.conf there).
    package static func inNamespace<T: Sendable>(
        _ environment: NetworkEnvironment, overlayEtc: Bool = false,
        _ body: @escaping @Sendable () throws(ReachabilityError) -> T
    ) throws(ReachabilityError) -> T {
        guard let namespace = try environment.openNamespace() else { return try body() }
        return try inNamespace(namespace, overlayEtc: overlayEtc, body)
    }

    /// The same, for a namespace held open by descriptor: the thread enters exactly
    /// that namespace, whatever its path names now, through the system calls it was
    /// opened with.
    package static func inNamespace<T: Sendable>(
        _ namespace: NetworkNamespace?, overlayEtc: Bool = false,
        _ body: @escaping @Sendable () throws(ReachabilityError) -> T
    ) throws(ReachabilityError) -> T {
        guard let namespace else { return try body() }
        let outcome = ResultBox<T>()
        let system = namespace.systemCalls
        let thread = try JoinableThread(name: "reachability-ns", systemCalls: system) {
            outcome.set(
                namespace.runEntered { () throws(ReachabilityError) -> T in
                    if overlayEtc, let name = namespace.name { overlayNetnsEtc(name, systemCalls: system) }
                    return try body()
                })
        }
        thread.join()
        return try outcome.get()
    }

    /// Bind-mounts `/etc/netns/NAME/*` over `/etc` in a private mount namespace of
    /// the calling thread (best effort: without them the process's /etc is used).
    private static func overlayNetnsEtc(_ name: String, systemCalls: SystemCalls) {
        let etc = "/etc/netns/\(name)"
        guard case .success(let entries) = systemCalls.directoryEntries(etc) else { return }
        let files = entries.filter { $0 != "." && $0 != ".." }
        guard !files.isEmpty, case .success = systemCalls.privateMounts() else { return }
        for file in files {
            _ = systemCalls.bindMount("\(etc)/\(file)", over: "/etc/\(file)")
        }
    }
}

extension NetworkNamespace {
    /// Moves the calling thread into this namespace (setns(2)).
    package func enterOnCurrentThread() throws(ReachabilityError) {
        if case .failure(let failure) = systemCalls.enterNetworkNamespace(fd: fd, path: path) {
            throw ReachabilityError(.namespace, "cannot enter network namespace \(path)", errno: failure.errno)
        }
    }

    /// Moves the calling thread into this namespace and runs `body` there: for a
    /// thread made to enter namespaces, which calls no user code and enqueues no work.
    package func runEntered<T: Sendable>(_ body: () throws(ReachabilityError) -> T) -> Result<T, ReachabilityError> {
        do throws(ReachabilityError) {
            try enterOnCurrentThread()
            return .success(try body())
        } catch {
            return .failure(error)
        }
    }
}

extension NetworkEnvironment {
    /// Moves the calling thread into this environment's network namespace, and
    /// returns the namespace it was in (nil for the process's own environment:
    /// nothing moves). For a thread the caller owns outright, such as an event loop
    /// that makes sockets for this environment: every thread the library itself
    /// uses stays where it is.
    ///
    /// Such a thread must not enqueue Dispatch work, resume a task or end a NIO
    /// event loop group while it is there: libdispatch may start a worker thread
    /// from it, and the worker, which inherits the namespace, then runs anyone's
    /// work, the user's callbacks included. So it goes back first, through the
    /// namespace returned; the way back is tried before leaving (setns(2) asks for
    /// the same rights to enter the namespace a thread is in already), so a thread
    /// that could not return never leaves.
    package func enterNetworkNamespaceOnCurrentThread() throws(ReachabilityError) -> NetworkNamespace? {
        try validate()
        guard let namespace = try openNamespace() else { return nil }
        let origin = try NetworkNamespace.open("/proc/thread-self/ns/net", systemCalls: systemCalls)
        try origin.enterOnCurrentThread()
        try namespace.enterOnCurrentThread()
        return origin
    }

    /// Opens the namespace ``networkNamespacePath`` names now (nil for the process's
    /// own): every client of the environment watches, enters and resolves in the
    /// namespace this returns. One that is not ``expectedNamespace`` is refused
    /// (``ReachabilityError/Code/namespace``).
    package func openNamespace() throws(ReachabilityError) -> NetworkNamespace? {
        guard let path = networkNamespacePath else { return nil }
        let namespace = try NetworkNamespace.open(path, systemCalls: systemCalls)
        if let expectedNamespace, namespace.identity != expectedNamespace {
            throw ReachabilityError(.namespace, "network namespace \(path) now names another namespace")
        }
        return namespace
    }
}
