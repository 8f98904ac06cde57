package import CNetlink
package import Glibc

// Namespaces, mounts, inotify, pidfds, threads and the resolver: the calls around
// the monitor's sockets rather than on them.

// MARK: Namespaces and mounts

extension SystemCalls {
    /// Opens a network namespace file without blocking (a FIFO at the path can't
    /// hang us) and checks that it really is one (ioctl NS_GET_NSTYPE).
    package func openNetworkNamespace(_ path: String) -> Result<Int32, SystemError> {
        let fd: Int32
        switch open(path, flags: O_RDONLY | O_NONBLOCK) {
        case .success(let opened): fd = opened
        case .failure(let failure): return .failure(failure)
        }
        let (type, error) = perform(.ioctl, .path(path), retryingInterrupts: false) { cnl_namespace_type(fd) }
        guard type == Int32(CNL_CLONE_NEWNET) else {
            close(fd)
            // EINVAL: a namespace, but not a network one.
            return .failure(
                SystemError(call: "\(path) is not a network namespace; NS_GET_NSTYPE", errno: type < 0 ? error : EINVAL)
            )
        }
        return .success(fd)
    }

    /// (device, inode) of an open file.
    package func fileIdentity(_ fd: Int32) -> Result<FileIdentity, SystemError> {
        fstat(fd, subject: nil).map(\.identity)
    }

    /// Enters the network namespace held open by `fd` on the calling thread (setns(2)).
    package func enterNetworkNamespace(fd: Int32, path: String) -> Result<Void, SystemError> {
        let (rc, error) = perform(.setns, .path(path), retryingInterrupts: false) { cnl_setns_net(fd) }
        return rc == 0 ? .success(()) : .failure(SystemError(call: "setns(\(path))", errno: error))
    }

    /// Gives the calling thread a private mount namespace whose mounts don't
    /// propagate back (unshare(2) CLONE_NEWNS | CLONE_FS, then mount(2) MS_SLAVE |
    /// MS_REC on /), as `ip netns exec` does before its bind mounts.
    package func privateMounts() -> Result<Void, SystemError> {
        if let injected = injected(.unshare, nil) {
            return .failure(SystemError(call: "unshare(CLONE_NEWNS | CLONE_FS)", errno: injected))
        }
        if let injected = injected(.mount, .path("/")) {
            return .failure(SystemError(call: "mount(/, MS_SLAVE | MS_REC)", errno: injected))
        }
        return cnl_private_mounts() == 0
            ? .success(()) : .failure(SystemError(call: "unshare(CLONE_NEWNS), mount(/)", errno: Glibc.errno))
    }

    /// Bind-mounts `source` over `target` (mount(2) MS_BIND).
    package func bindMount(_ source: String, over target: String) -> Result<Void, SystemError> {
        let (rc, error) = perform(.mount, .path(target), retryingInterrupts: false) { cnl_bind_mount(source, target) }
        return rc == 0 ? .success(()) : .failure(SystemError(call: "mount(\(source), \(target))", errno: error))
    }

    /// A pidfd for process `pid` (pidfd_open(2)): readable once the process has exited.
    package func pidfdOpen(_ pid: Int32) -> Result<Int32, SystemError> {
        let (fd, error) = perform(.pidfdOpen, .process(pid), retryingInterrupts: false) { cnl_pidfd_open(pid) }
        return fd >= 0 ? .success(fd) : .failure(SystemError(call: "pidfd_open(\(pid))", errno: error))
    }
}

// MARK: inotify

extension SystemCalls {
    /// A new inotify instance (inotify_init1(2)), close-on-exec and non-blocking.
    package func inotify() -> Result<Int32, SystemError> {
        let (fd, error) = perform(.inotifyInit1, nil, retryingInterrupts: false) { cnl_inotify_init() }
        return fd >= 0 ? .success(fd) : .failure(SystemError(call: "inotify_init1", errno: error))
    }

    /// Watches a directory for files written, created, deleted or renamed in it
    /// (inotify_add_watch(2)); with `writes`, IN_MODIFY too: a file kept open and
    /// appended to (dhclient's lease) is never closed after writing.
    package func watchDirectory(_ inotify: Int32, _ path: String, writes: Bool = false) -> Result<Int32, SystemError> {
        let (wd, error) = perform(.inotifyAddWatch, .path(path), retryingInterrupts: false) {
            inotify_add_watch(inotify, path, cnl_inotify_directory_mask() | (writes ? UInt32(IN_MODIFY) : 0))
        }
        return wd >= 0 ? .success(wd) : .failure(SystemError(call: "inotify_add_watch(\(path))", errno: error))
    }

    /// Stops watching `wd` (inotify_rm_watch(2)). Not in the plan: it can't fail for
    /// a watch that was added, and a directory gone has removed it already.
    package func unwatch(_ inotify: Int32, _ wd: Int32) {
        _ = inotify_rm_watch(inotify, wd)
    }
}

// MARK: Threads

extension SystemCalls {
    /// The start routine of a thread: pthread_create's C function type.
    package typealias ThreadStart = @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?

    /// Starts a thread (pthread_create(3)) running `start` with `context`,
    /// detached from the start when `detached`. `name` names it in errors and for
    /// the fault plan.
    package func createThread(
        name: String, detached: Bool, context: UnsafeMutableRawPointer, _ start: ThreadStart
    ) -> Result<pthread_t, SystemError> {
        if let injected = injected(.pthreadCreate, .thread(name)) {
            return .failure(SystemError(call: "pthread_create(\(name))", errno: injected))
        }
        var thread = pthread_t()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        // pthread_create returns the error; it does not set errno.
        let rc = pthread_create(&thread, &attributes, start, context)
        return rc == 0 ? .success(thread) : .failure(SystemError(call: "pthread_create(\(name))", errno: rc))
    }

    /// Names the calling thread (prctl(2) PR_SET_NAME; at most 15 bytes are kept).
    /// A name is a courtesy to whoever reads `ps`: a failure is ignored.
    package func setThreadName(_ name: String) {
        guard injected(.prctl, .thread(name)) == nil else { return }
        _ = cnl_set_thread_name(name)
    }

    /// Waits for `thread` to exit (pthread_join(3)). Not in the plan: joining a
    /// joinable thread of our own can't fail.
    package static func join(_ thread: pthread_t) {
        _ = pthread_join(thread, nil)
    }

    /// Lets `thread` clean up after itself (pthread_detach(3)). Not in the plan.
    package static func detach(_ thread: pthread_t) {
        _ = pthread_detach(thread)
    }
}

// MARK: Names

extension SystemCalls {
    /// How getaddrinfo(3) failed: its return code (EAI_*) and errno as it was right
    /// after the call (glibc sets it with EAI_SYSTEM, and also when a resolver file
    /// or socket could not be opened).
    package struct AddressInfoFailure: Error, Sendable, Equatable {
        package var code: Int32
        package var errno: Int32
    }

    /// getaddrinfo(3) for `name` with the given family and socket type; `body` reads
    /// the list, which is freed (freeaddrinfo) when it returns. A plan's failure is
    /// EAI_SYSTEM with the plan's errno.
    package func getaddrinfo<T>(
        _ name: String, family: Int32, socketType: Int32, _ body: (UnsafePointer<addrinfo>?) -> T
    ) -> Result<T, AddressInfoFailure> {
        if let injected = injected(.getaddrinfo, .host(name)) {
            return .failure(AddressInfoFailure(code: EAI_SYSTEM, errno: injected))
        }
        var hints = addrinfo()
        hints.ai_family = family
        hints.ai_socktype = socketType
        var list: UnsafeMutablePointer<addrinfo>?
        Glibc.errno = 0
        let rc = Glibc.getaddrinfo(name, nil, &hints, &list)
        let error = Glibc.errno
        guard rc == 0 else { return .failure(AddressInfoFailure(code: rc, errno: error)) }
        defer { freeaddrinfo(list) }
        return .success(body(list.map { UnsafePointer($0) }))
    }

    /// The soft limit on open descriptors (getrlimit(2) RLIMIT_NOFILE); nil when it
    /// can't be read or is unlimited.
    package func descriptorLimit() -> Int? {
        if injected(.getrlimit, nil) != nil { return nil }
        var limit = rlimit()
        guard Glibc.getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max
        else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// How many descriptors the process has open (the entries of `/proc/self/fd`,
    /// less `.`, `..` and the one listing them); nil without /proc.
    package func openDescriptorCount() -> Int? {
        guard case .success(let names) = directoryEntries("/proc/self/fd") else { return nil }
        return max(0, names.count - 3)
    }

    /// The index of the interface named `name` in the calling thread's namespace
    /// (if_nametoindex(3): a socket and an ioctl).
    package func interfaceIndex(named name: String) -> Result<UInt32, SystemError> {
        if let injected = injected(.ifNameToIndex, .interface(name)) {
            return .failure(SystemError(call: "if_nametoindex(\(name))", errno: injected))
        }
        let index = if_nametoindex(name)
        return index != 0 ? .success(index) : .failure(SystemError(call: "if_nametoindex(\(name))", errno: Glibc.errno))
    }
}
