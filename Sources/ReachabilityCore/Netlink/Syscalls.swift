import CNetlink
import Glibc

// Every system call of the netlink layer goes through these wrappers, so the
// error policy lives in one place: EINTR is retried, everything else is
// returned as an errno for the caller to map.

enum Syscall {
    /// The calling thread's errno.
    static var errno: Int32 { Glibc.errno }

    /// poll(2) on a few descriptors (negative ones are skipped); retries EINTR.
    /// Returns which are readable.
    static func poll(_ fds: [Int32], timeoutMilliseconds: Int32) -> Swift.Result<[Bool], SystemError> {
        var entries = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        while true {
            let count = entries.withUnsafeMutableBufferPointer {
                Glibc.poll($0.baseAddress, nfds_t($0.count), timeoutMilliseconds)
            }
            if count >= 0 {
                return .success(entries.map { $0.revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 })
            }
            if errno != Errno.intr { return .failure(SystemError(call: "poll", errno: errno)) }
        }
    }

    /// setsockopt(2) with an Int32 value.
    static func setOption(_ fd: Int32, level: Int32, name: Int32, value: Int32) -> Swift.Result<Void, SystemError> {
        var value = value
        let rc = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        return rc == 0 ? .success(()) : .failure(SystemError(call: "setsockopt(\(level), \(name))", errno: errno))
    }

    /// getsockopt(2) for an Int32 value.
    static func option(_ fd: Int32, level: Int32, name: Int32) -> Int32? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, level, name, &value, &length) == 0 ? value : nil
    }

    /// An eventfd(2), close-on-exec and non-blocking.
    static func eventfd() -> Swift.Result<Int32, SystemError> {
        let fd = cnl_eventfd()
        return fd >= 0 ? .success(fd) : .failure(SystemError(call: "eventfd", errno: errno))
    }

    /// Adds one to an eventfd counter (wakes a poller).
    static func signal(_ fd: Int32) {
        var one: UInt64 = 1
        while Glibc.write(fd, &one, 8) < 0 && errno == Errno.intr {}
    }

    /// Resets an eventfd counter.
    static func drain(_ fd: Int32) {
        var value: UInt64 = 0
        while Glibc.read(fd, &value, 8) < 0 && errno == Errno.intr {}
    }

    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)  // Linux closes the descriptor even when close reports EINTR.
    }

    /// Opens a network namespace file without blocking (a FIFO at the path can't
    /// hang us) and checks that it really is one.
    static func openNetworkNamespace(_ path: String) -> Swift.Result<Int32, SystemError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return .failure(SystemError(call: "open(\(path))", errno: errno)) }
        let type = cnl_namespace_type(fd)
        guard type == 0x4000_0000 /* CLONE_NEWNET */ else {
            let error = type < 0 ? errno : Int32(22)  // EINVAL: a namespace, but not a network one
            close(fd)
            return .failure(SystemError(call: "\(path) is not a network namespace; NS_GET_NSTYPE", errno: error))
        }
        return .success(fd)
    }

    /// Enters the network namespace behind `path` on the calling thread.
    static func enterNetworkNamespace(_ path: String) -> Swift.Result<Void, SystemError> {
        let fd: Int32
        switch openNetworkNamespace(path) {
        case .success(let opened): fd = opened
        case .failure(let failure): return .failure(failure)
        }
        defer { close(fd) }
        return enterNetworkNamespace(fd: fd, path: path)
    }

    /// Enters the network namespace held open by `fd` on the calling thread.
    static func enterNetworkNamespace(fd: Int32, path: String) -> Swift.Result<Void, SystemError> {
        cnl_setns_net(fd) == 0 ? .success(()) : .failure(SystemError(call: "setns(\(path))", errno: errno))
    }

    /// A pidfd for process `pid`: readable once the process has exited.
    static func pidfdOpen(_ pid: Int32) -> Swift.Result<Int32, SystemError> {
        let fd = cnl_pidfd_open(pid)
        return fd >= 0 ? .success(fd) : .failure(SystemError(call: "pidfd_open(\(pid))", errno: errno))
    }

    /// A new inotify instance, close-on-exec and non-blocking.
    static func inotify() -> Swift.Result<Int32, SystemError> {
        let fd = cnl_inotify_init()
        return fd >= 0 ? .success(fd) : .failure(SystemError(call: "inotify_init1", errno: errno))
    }

    /// Watches a directory for files written, created, deleted or renamed in it.
    static func watchDirectory(_ inotify: Int32, _ path: String, writes: Bool = false)
        -> Swift.Result<Int32, SystemError>
    {
        // IN_MODIFY (2) too when asked: a file kept open and appended to (dhclient's
        // lease) is never closed after writing.
        let wd = inotify_add_watch(inotify, path, cnl_inotify_directory_mask() | (writes ? 0x2 : 0))
        return wd >= 0 ? .success(wd) : .failure(SystemError(call: "inotify_add_watch(\(path))", errno: errno))
    }

    /// (device, inode) of a file: identifies a namespace behind any of its paths.
    static func fileIdentity(_ fd: Int32) -> Swift.Result<FileIdentity, SystemError> {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(SystemError(call: "fstat", errno: errno)) }
        return .success(FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
    }
}

struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
}

/// A failed system call: which one, and errno.
struct SystemError: Error, Sendable, Equatable {
    var call: String
    var errno: Int32

    var reachabilityError: ReachabilityError {
        ReachabilityError(.systemCall, "\(call) failed", errno: errno)
    }
}
