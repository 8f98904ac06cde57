import Glibc
import ReachabilitySystem

/// The process-level rules of the `reachability` command, set up by ``start()``
/// before anything else runs:
///
/// - Signals: SIGINT and SIGTERM are blocked in every thread (the mask is set
///   while the process has one thread, and threads inherit it) and taken by one
///   thread of their own with sigwait(2). It exits with the running command's
///   status for a signal: 0 for `watch`, 128 + the signal (130, 143) for the
///   others, as coreutils do. It takes the output lock first, so no printed line
///   is cut in half. Nothing depends on the lifetime of a dispatch source.
/// - Output: every byte goes out through one raw write(2) loop under one lock
///   (``writeOut(_:)``, ``writeError(_:)``); nothing is buffered, so exiting with
///   `_exit` loses nothing and runs no exit-time destructors while other threads
///   still work. A failed write to stdout ends the command with status 1 and
///   `reachability: write error: …` on stderr (when that can be written).
/// - Descriptors: a closed 0, 1 or 2 is occupied by /dev/null opened read-only,
///   so no later socket takes the number (a write to such a stdout fails with
///   EBADF, as `cat` reports). The soft RLIMIT_NOFILE is raised to the hard limit
///   (at most 2^20), and the command exits 2 at once, naming the limit, when
///   fewer than ``descriptorsNeeded`` descriptors are free.
package enum CLIProcess {
    /// Free descriptors the commands need: netlink sockets, SwiftNIO's event loop
    /// (epoll, eventfd, timerfd), resolver and HTTP sockets, with room to spare.
    package static let descriptorsNeeded = 64

    /// Threads the async commands need beside the main and signal threads:
    /// libdispatch's manager and Swift concurrency's workers, the monitor's reader,
    /// with room to spare. `status` ran with 7 threads in all and hung with 6.
    package static let threadsNeeded = 6

    /// Exits 2, naming the limit, unless ``threadsNeeded`` more threads can be made:
    /// without them Swift concurrency's pool waits for a thread for ever (libdispatch
    /// retries), and the command would hang.
    package static func ensureThreads() {
        guard let failure = ThreadHeadroom.check(threadsNeeded) else { return }
        writeError(
            "reachability: cannot make the \(threadsNeeded) threads it needs: "
                + "\(String(cString: strerror(failure))); the limit on the user's processes and threads "
                + "(ulimit -u) is \(ThreadHeadroom.processLimit)\n")
        finish(2)
    }

    /// The largest soft descriptor limit set (Linux's default `fs.nr_open`).
    static let descriptorCap: rlim_t = 1 << 20

    /// Seconds an exit waits for a line being written before it exits anyway.
    static let exitLockWait = 2

    /// The output lock; also guards ``signalExitsZero``. Never destroyed.
    nonisolated(unsafe) private static let lock: UnsafeMutablePointer<pthread_mutex_t> = {
        let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        lock.initialize(to: pthread_mutex_t())
        pthread_mutex_init(lock, nil)
        return lock
    }()

    /// Whether a signal ends the running command with status 0 (`watch`).
    nonisolated(unsafe) private static var signalExitsZero = false

    /// The signals that end a command.
    private static var endingSignals: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        return set
    }

    /// Sets up signals, the standard descriptors and the descriptor limit. Must
    /// run first in `main`, while the process has a single thread.
    package static func start() {
        var blocked = endingSignals
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        _ = lock
        occupyStandardDescriptors()
        ensureDescriptors()
        startSignalThread()
    }

    /// Exits 2 when /proc is not there (a chroot, a mount namespace without it).
    /// libdispatch, which runs every command's queues and tasks, reads each of its
    /// worker threads' /proc/TID/stat once a second while work waits, and ends the
    /// process (SIGILL) when it can't: the command would die at random.
    package static func requireProc() {
        guard access("/proc/self/stat", F_OK) != 0 else { return }
        writeError(
            "reachability: /proc is not mounted: libdispatch, which runs this command's threads, reads it "
                + "(mount -t proc proc /proc)\n")
        finish(2)
    }

    /// From now on a signal ends the command with status 0 (`watch`: being
    /// interrupted is how it ends).
    package static func signalsExitZero() {
        pthread_mutex_lock(lock)
        signalExitsZero = true
        pthread_mutex_unlock(lock)
    }

    /// Parks the calling thread for good: signals are blocked, so pause(2) never
    /// returns (the loop is for form), and the thread wakes for nothing.
    package static func parkForever() -> Never {
        while true { pause() }
    }

    /// Ends the process with `status` once no line is being written.
    package static func finish(_ status: Int32) -> Never {
        lockForExit()
        _exit(status)
    }

    // MARK: Output

    /// Writes `text` to stdout; a failure ends the process with status 1 and a
    /// message on stderr (or death by SIGPIPE, as `cat`, when the reader went away).
    package static func writeOut(_ text: String) {
        var text = text
        text.withUTF8 { writeOut(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Writes `bytes` to stdout, as ``writeOut(_:)`` writes a string.
    package static func writeOut(bytes: UnsafeRawBufferPointer) {
        pthread_mutex_lock(lock)
        let error = writeAll(1, bytes)
        if error != 0 { failOutput(error) }
        pthread_mutex_unlock(lock)
    }

    /// Writes `text` to stderr; a failure is ignored (there is nowhere to report it).
    package static func writeError(_ text: String) {
        pthread_mutex_lock(lock)
        _ = writeAll(2, text)
        pthread_mutex_unlock(lock)
    }

    /// `reachability: write error: …` on stderr, then exit 1. The caller holds the lock.
    private static func failOutput(_ error: Int32) -> Never {
        _ = writeAll(2, "reachability: write error: \(String(cString: strerror(error)))\n")
        _exit(1)
    }

    /// Writes all of `text` to `fd`, retrying EINTR and partial writes. Returns 0
    /// or the errno of the failed write.
    private static func writeAll(_ fd: Int32, _ text: String) -> Int32 {
        var text = text
        return text.withUTF8 { writeAll(fd, UnsafeRawBufferPointer($0)) }
    }

    /// Writes all of `bytes` to `fd`, retrying EINTR and partial writes; 0 or the errno.
    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        guard let base = bytes.baseAddress else { return 0 }
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, base + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return written < 0 ? errno : EIO
            }
        }
        return 0
    }

    // MARK: Start-up

    /// Opens /dev/null read-only on each closed standard descriptor: a write to
    /// it fails (EBADF) instead of going into whatever socket would take the number.
    private static func occupyStandardDescriptors() {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) < 0 && errno == EBADF {
            // The lowest free number is `fd`: the lower ones are open by now.
            let opened = open("/dev/null", O_RDONLY)
            guard opened == fd else {
                let error = opened < 0 ? errno : EBADF
                if opened >= 0 { close(opened) }
                // Descriptor `fd` is still closed: a message goes out only if it's not stderr.
                if fd < 2 {
                    writeError(
                        "reachability: can't open /dev/null for closed descriptor \(fd): \(String(cString: strerror(error)))\n"
                    )
                }
                finish(2)
            }
        }
    }

    /// Raises the soft descriptor limit to the hard one (capped), then checks
    /// that ``descriptorsNeeded`` descriptors can be opened; exits 2 if not.
    private static func ensureDescriptors() {
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        if getrlimit(resource, &limit) == 0 {
            let wanted = min(limit.rlim_max, descriptorCap)
            if limit.rlim_cur < wanted {
                var raised = limit
                raised.rlim_cur = wanted
                if setrlimit(resource, &raised) == 0 { limit = raised }
            }
        }
        var probes: [Int32] = []
        probes.reserveCapacity(descriptorsNeeded)
        var failure: Int32 = 0
        while probes.count < descriptorsNeeded {
            let fd = fcntl(2, F_DUPFD_CLOEXEC, 3)
            guard fd >= 0 else {
                failure = errno
                break
            }
            probes.append(fd)
        }
        for fd in probes { close(fd) }
        guard probes.count < descriptorsNeeded else { return }
        let inUse = (0..<Int32(min(limit.rlim_cur, 65_536))).filter { fcntl($0, F_GETFD) >= 0 }.count
        let why =
            failure == EMFILE || failure == EINVAL  // EINVAL: the limit is below 4
            ? "limit \(limit.rlim_cur), \(inUse) in use; raise it with ulimit -n"
            : "\(String(cString: strerror(failure))) with \(inUse) in use"
        writeError("reachability: too few file descriptors: \(why)\n")
        finish(2)
    }

    /// Starts the thread that takes SIGINT and SIGTERM. Without it (thread
    /// creation failed) the signals are unblocked again: they then end the
    /// process by their default action rather than not at all.
    private static func startSignalThread() {
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            { _ in
                CLIProcess.takeSignals()
                return nil
            }, nil)
        if created == 0 {
            pthread_detach(thread)
        } else {
            var blocked = endingSignals
            pthread_sigmask(SIG_UNBLOCK, &blocked, nil)
        }
    }

    /// The signal thread: waits for SIGINT or SIGTERM, then exits with the
    /// command's status for it once the line being written (if any) is out.
    private static func takeSignals() {
        var set = endingSignals
        var signal: Int32 = 0
        while sigwait(&set, &signal) != 0 {}
        lockForExit()
        _exit(signalExitsZero ? 0 : 128 + signal)
    }

    /// Takes the output lock to exit, waiting at most ``exitLockWait`` seconds: a
    /// writer blocked on a full pipe whose reader stopped reading must not keep
    /// the process alive. The lock is never released (the caller exits).
    private static func lockForExit() {
        // pthread_mutex_clocklock (CLOCK_MONOTONIC) is not visible to Swift; a
        // wall-clock step only changes this rare wait's length.
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += exitLockWait
        while pthread_mutex_timedlock(lock, &deadline) == EINTR {}
    }
}
