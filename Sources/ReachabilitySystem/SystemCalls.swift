import CNetlink
package import Glibc

// The library's one edge to the operating system (DESIGN §4.1, §10).
//
// What counts as a system call, and so is made here and nowhere else in the
// package: every call that asks the kernel for something and can fail with
// an errno the library acts on or reports, and the libc and libmnl wrappers around
// such calls. open, read, write, close, socket, bind, connect, send, recv, sendto,
// recvmmsg, poll, setsockopt, getsockopt, stat, fstat, access, readlink, realpath,
// opendir/readdir/closedir, ioctl, eventfd, inotify_init1, inotify_add_watch,
// pidfd_open, setns, unshare, mount, prctl, usleep, pthread_create/join/detach,
// if_nametoindex (a socket and an ioctl), getaddrinfo/freeaddrinfo (files and
// sockets of its own), libmnl's mnl_socket_* (socket, bind, sendto, close), and the
// CNetlink shims that make one of these (cnl_eventfd, cnl_setns_net,
// cnl_namespace_type, cnl_pidfd_open, cnl_inotify_init, cnl_private_mounts,
// cnl_bind_mount, cnl_set_thread_name).
//
// What does not count, and may be called anywhere: pure libc (strerror,
// gai_strerror, inet_pton, inet_ntop, timegm, memcpy, free), clock reads (time,
// clock_gettime, ContinuousClock), libmnl's message and attribute helpers
// (mnl_nlmsg_*, mnl_attr_*), the CNetlink constants (cnl_align, cnl_nlmsg_hdrlen,
// cnl_attr_hdrlen, cnl_inotify_directory_mask, cnl_inotify_overflow),
// pthread_self/pthread_equal, and the locks (pthread_mutex_*: a futex only when
// contended, with no errno the library could act on). No tool holds this line (the
// CNetlink module exports all of glibc): a call made elsewhere escapes the error
// policy and every fault test, so review keeps it.

/// The library's one wrapper layer over the system calls it makes
/// (DESIGN §4.1): every call of the package's modules goes through one of its methods.
///
/// Each method makes one call (or a fixed few, such as a directory listing) and
/// returns what the kernel said: a value, or a ``SystemError`` naming the call and
/// the errno read right after it. The error policy lives here and only here: EINTR
/// is retried for the calls that wait or move data (read, write, send, sendto,
/// recv, recvmmsg, poll); every other failure is handed back for the caller to map.
///
/// In a debug build (what tests build), it may carry a fault plan
/// (`SystemCallFaults`): each method asks the plan before its call, and a call the
/// plan fails is not made: it fails with the plan's errno, which goes through the
/// same policy (an injected EINTR is retried like a real one). ``live``, what every
/// ``NetworkEnvironment`` has unless a test sets a plan, asks none. A release build
/// has no plan: the type is empty and its methods make their calls.
///
/// Not API: SPI `Testing`. `Sendable`: an immutable reference to the plan.
@_spi(Testing) public struct SystemCalls: Sendable, Hashable {
    #if ENABLE_FAULT_INJECTION
        /// The plan asked before each call; nil for the live system.
        @_spi(Testing) public let faults: SystemCallFaults?

        /// Calls that ask `faults` first (nil: the live system).
        @_spi(Testing) public init(faults: SystemCallFaults? = nil) {
            self.faults = faults
        }

        /// Equal when they ask the same plan (by identity), or both none.
        @_spi(Testing) public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.faults === rhs.faults
        }

        /// Hashes the plan's identity.
        @_spi(Testing) public func hash(into hasher: inout Hasher) {
            hasher.combine(faults.map(ObjectIdentifier.init))
        }
    #else
        /// The live system.
        @_spi(Testing) public init() {}
    #endif

    /// The live system: no fault plan.
    @_spi(Testing) public static let live = SystemCalls()
}

/// A failed system call: which one (with what it was given), and errno.
///
/// The text is put together only when it is read: a read of netlink datagrams
/// that finds none fails with EAGAIN (at the end of a drain, when the last read
/// was full), and that failure must not cost a string.
package struct SystemError: Error, Sendable, Equatable {
    /// The call's name ("recvmmsg"), or empty when `subject` says it all.
    private let function: StaticString
    /// What it was given ("NETLINK_ROUTE events"), or the whole text.
    private let subject: String
    package var errno: Int32

    /// A call described by `call` as a whole ("setsockopt(fd, 1, 8)").
    package init(call: String, errno: Int32) {
        self.function = ""
        self.subject = call
        self.errno = errno
    }

    /// `function(subject)`, written out only when ``call`` is read.
    package init(_ function: StaticString, subject: SystemCallSubject, errno: Int32) {
        self.function = function
        self.subject = subject.description
        self.errno = errno
    }

    /// The call, with what it was given: "recvmmsg(NETLINK_ROUTE events)".
    package var call: String { function.utf8CodeUnitCount == 0 ? subject : "\(function)(\(subject))" }

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.call == rhs.call && lhs.errno == rhs.errno }

    /// errno values that mean the process or the host ran out of something (not the
    /// peer's or the file's fault).
    package static let resourceErrors: Set<Int32> = [EMFILE, ENFILE, ENOMEM, ENOBUFS]
}

/// (device, inode) of a file: identifies a namespace behind any of its paths.
package struct FileIdentity: Hashable, Sendable {
    package var device: UInt64
    package var inode: UInt64

    /// Makes an identity from its parts.
    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// What stat(2) said about a file, as far as the library asks.
package struct FileStatus: Sendable, Equatable {
    package var identity: FileIdentity
    package var isRegularFile: Bool
    /// In bytes.
    package var size: Int
    /// The last modification, in seconds since the epoch, and the nanoseconds after.
    package var modifiedSeconds: Int
    package var modifiedNanoseconds: Int

    package init(_ info: Glibc.stat) {
        identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        isRegularFile = info.st_mode & S_IFMT == S_IFREG
        size = Int(info.st_size)
        modifiedSeconds = Int(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int(info.st_mtim.tv_nsec)
    }
}

// MARK: The policy

extension SystemCalls {
    /// The errno the plan fails this call with, if it does: one nil check when live,
    /// nothing in a release build.
    @inline(__always)
    package func injected(_ call: SystemCall, _ subject: SystemCallSubject?) -> Int32? {
        #if ENABLE_FAULT_INJECTION
            guard let faults else { return nil }
            return faults.failure(of: call, subject: subject)
        #else
            return nil
        #endif
    }

    /// Makes one call that returns a negative value with errno on failure: the plan
    /// first (an injected failure replaces the call), errno read right after the
    /// call, EINTR retried when `retryingInterrupts`.
    @inline(__always)
    package func perform<R: BinaryInteger>(
        _ call: SystemCall, _ subject: SystemCallSubject?, retryingInterrupts: Bool, _ body: () -> R
    ) -> (result: R, errno: Int32) {
        while true {
            let result: R
            let error: Int32
            if let injected = injected(call, subject) {
                (result, error) = (-1, injected)
            } else {
                result = body()
                error = result < 0 ? Glibc.errno : 0
            }
            if result < 0, error == EINTR, retryingInterrupts { continue }
            return (result, error)
        }
    }
}

// MARK: Files and descriptors

extension SystemCalls {
    /// open(2) of `path` with `flags` (close-on-exec is added).
    package func open(_ path: String, flags: Int32) -> Result<Int32, SystemError> {
        let (fd, error) = perform(.open, .path(path), retryingInterrupts: false) { Glibc.open(path, flags | O_CLOEXEC) }
        return fd >= 0 ? .success(fd) : .failure(SystemError(call: "open(\(path))", errno: error))
    }

    /// read(2) into `buffer`, EINTR retried: how many bytes (0 at the end of a
    /// file). `subject` names what is read, for errors and the fault plan.
    package func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, subject: SystemCallSubject?) -> Result<
        Int, SystemError
    > {
        let (count, error) = perform(.read, subject, retryingInterrupts: true) {
            Glibc.read(fd, buffer.baseAddress, buffer.count)
        }
        return count >= 0
            ? .success(count) : .failure(SystemError(call: "read(\(subject?.description ?? "fd"))", errno: error))
    }

    /// write(2) of `bytes`, EINTR retried: how many bytes were written.
    package func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, subject: SystemCallSubject?) -> Result<
        Int, SystemError
    > {
        let (count, error) = perform(.write, subject, retryingInterrupts: true) {
            Glibc.write(fd, bytes.baseAddress, bytes.count)
        }
        return count >= 0
            ? .success(count) : .failure(SystemError(call: "write(\(subject?.description ?? "fd"))", errno: error))
    }

    /// close(2). Linux releases the descriptor even when close reports an error
    /// (EINTR included), so it is never retried and its error is ignored. The plan
    /// is asked (and counts the call), but the descriptor is closed all the same.
    package func close(_ fd: Int32) {
        _ = injected(.close, nil)
        _ = Glibc.close(fd)
    }

    /// fstat(2) of a descriptor.
    package func fstat(_ fd: Int32, subject: SystemCallSubject?) -> Result<FileStatus, SystemError> {
        var info = Glibc.stat()
        let (rc, error) = perform(.fstat, subject, retryingInterrupts: false) { Glibc.fstat(fd, &info) }
        return rc == 0
            ? .success(FileStatus(info))
            : .failure(SystemError(call: "fstat(\(subject?.description ?? "fd"))", errno: error))
    }

    /// stat(2) of `path` (symbolic links followed).
    package func stat(_ path: String) -> Result<FileStatus, SystemError> {
        var info = Glibc.stat()
        let (rc, error) = perform(.stat, .path(path), retryingInterrupts: false) { statFile(path, &info) }
        return rc == 0 ? .success(FileStatus(info)) : .failure(SystemError(call: "stat(\(path))", errno: error))
    }

    /// access(2): whether `path` exists (`F_OK`) or allows `mode`.
    package func access(_ path: String, mode: Int32 = F_OK) -> Result<Void, SystemError> {
        let (rc, error) = perform(.access, .path(path), retryingInterrupts: false) { Glibc.access(path, mode) }
        return rc == 0 ? .success(()) : .failure(SystemError(call: "access(\(path))", errno: error))
    }

    /// readlink(2): the target of the symbolic link at `path` (at most 4095 bytes).
    package func readlink(_ path: String) -> Result<String, SystemError> {
        var buffer = [CChar](repeating: 0, count: 4096)
        let (count, error) = perform(.readlink, .path(path), retryingInterrupts: false) {
            Glibc.readlink(path, &buffer, buffer.count - 1)
        }
        guard count >= 0 else { return .failure(SystemError(call: "readlink(\(path))", errno: error)) }
        return .success(String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// realpath(3): `path` with every symbolic link and `.`/`..` resolved.
    package func realpath(_ path: String) -> Result<String, SystemError> {
        if let injected = injected(.realpath, .path(path)) {
            return .failure(SystemError(call: "realpath(\(path))", errno: injected))
        }
        guard let resolved = Glibc.realpath(path, nil) else {
            return .failure(SystemError(call: "realpath(\(path))", errno: Glibc.errno))
        }
        defer { free(resolved) }
        return .success(String(cString: resolved))
    }

    /// The names in directory `path` (opendir, readdir, closedir), `.` and `..`
    /// included, from its first `limit` entries. A failing readdir ends the list.
    package func directoryEntries(_ path: String, limit: Int = .max) -> Result<[String], SystemError> {
        if let injected = injected(.opendir, .path(path)) {
            return .failure(SystemError(call: "opendir(\(path))", errno: injected))
        }
        guard let stream = Glibc.opendir(path) else {
            return .failure(SystemError(call: "opendir(\(path))", errno: Glibc.errno))
        }
        defer { Glibc.closedir(stream) }
        var names: [String] = []
        while names.count < limit, let entry = Glibc.readdir(stream) {
            names.append(
                withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) })
        }
        return .success(names)
    }
}

/// stat(2) at file scope, where the name means the function (inside `SystemCalls`
/// it means the method, and `Glibc.stat` the struct).
private func statFile(_ path: String, _ info: inout Glibc.stat) -> Int32 {
    stat(path, &info)
}

// MARK: Time

extension SystemCalls {
    /// Sleeps the calling thread (usleep(3)). Not in the plan: the library only
    /// ever pauses for a moment, and an interrupted pause is just a shorter one.
    package static func sleep(microseconds: UInt32) {
        _ = usleep(microseconds)
    }
}

/// Why ``SystemCalls/readFile(_:limit:wholeOrNothing:)`` gave no bytes.
package enum FileReadFailure: Error, Sendable, Equatable {
    /// open(2) or fstat(2) failed.
    case unreadable(SystemError)
    /// A directory, a FIFO, a device: not read at all (a FIFO would block, `/dev/zero`
    /// never end).
    case notRegularFile
    /// Over the limit, by its size or by what a read found (it grew meanwhile).
    case tooLarge(size: Int)
}

extension SystemCalls {
    /// Up to `limit` bytes of the regular file at `path`, and what fstat(2) said of it.
    /// With `wholeOrNothing`, a file over `limit` bytes is ``FileReadFailure/tooLarge(size:)``
    /// rather than its start; nothing past `limit + 1` bytes is read either way. A read
    /// that fails ends the file where it failed.
    package func readFile(_ path: String, limit: Int, wholeOrNothing: Bool = true)
        -> Result<(bytes: [UInt8], status: FileStatus), FileReadFailure>
    {
        guard !path.utf8.contains(0) else { return .failure(.notRegularFile) }
        let fd: Int32
        switch open(path, flags: O_RDONLY | O_NONBLOCK | O_NOCTTY) {
        case .success(let opened): fd = opened
        case .failure(let error): return .failure(.unreadable(error))
        }
        defer { close(fd) }
        let status: FileStatus
        switch fstat(fd, subject: .path(path)) {
        case .success(let found): status = found
        case .failure(let error): return .failure(.unreadable(error))
        }
        guard status.isRegularFile else { return .failure(.notRegularFile) }
        if wholeOrNothing && status.size > limit { return .failure(.tooLarge(size: status.size)) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        // Whole or nothing: one byte past the limit tells a file that grew meanwhile.
        let readLimit = wholeOrNothing ? limit + 1 : limit
        while bytes.count < readLimit {
            let wanted = min(chunk.count, readLimit - bytes.count)
            let outcome = chunk.withUnsafeMutableBytes {
                read(fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<wanted]), subject: .path(path))
            }
            guard case .success(let count) = outcome, count > 0 else { break }
            bytes += chunk[0..<count]
            // A regular file's short read is its end: no second read to learn it.
            if count < wanted { break }
        }
        if bytes.count > limit { return .failure(.tooLarge(size: bytes.count)) }
        return .success((bytes, status))
    }
}

/// Up to `limit` bytes of the regular file at `path` as UTF-8 (invalid bytes
/// replaced), read through `systemCalls`; nil when it can't be read or is empty
/// (``SystemCalls/readFile(_:limit:wholeOrNothing:)``).
package func readSmallFile(_ path: String, limit: Int, wholeOrNothing: Bool = false, systemCalls: SystemCalls)
    -> String?
{
    guard case .success(let file) = systemCalls.readFile(path, limit: limit, wholeOrNothing: wholeOrNothing),
        !file.bytes.isEmpty
    else { return nil }
    return String(decoding: file.bytes, as: UTF8.self)
}
