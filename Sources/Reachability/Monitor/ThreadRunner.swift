import CNetlink
import Glibc

/// A joinable POSIX thread running one closure. Foundation's `Thread` cannot be
/// joined, and the monitor must know its reader has exited before it returns
/// from `stop()`.
final class JoinableThread: Sendable {
    private let handle: pthread_t

    /// Starts `body` on a new thread named `name` (at most 15 bytes are kept).
    init(name: String, _ body: @escaping @Sendable () -> Void) throws(ReachabilityError) {
        handle = try Self.create(name: name, detached: false, body)
    }

    /// Starts `body` on a new thread that is detached from the start: nobody joins
    /// it, and it cleans up after itself (no moment in which it exists joinable
    /// and unjoined, which a process exiting then would count as leaked).
    static func detached(name: String, _ body: @escaping @Sendable () -> Void) throws(ReachabilityError) {
        _ = try create(name: name, detached: true, body)
    }

    private static func create(name: String, detached: Bool, _ body: @escaping @Sendable () -> Void)
        throws(ReachabilityError) -> pthread_t
    {
        final class Box: Sendable {
            let name: String
            let body: @Sendable () -> Void
            init(name: String, body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        let context = Unmanaged.passRetained(Box(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        let rc = pthread_create(
            &thread, &attributes,
            { raw in
                guard let raw else { return nil }
                let box = Unmanaged<Box>.fromOpaque(raw).takeRetainedValue()
                _ = cnl_set_thread_name(box.name)
                box.body()
                return nil
            }, context)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            throw ReachabilityError(.systemCall, "pthread_create failed", errno: rc)
        }
        return thread
    }

    /// True when called on this thread.
    var isCurrent: Bool { pthread_equal(pthread_self(), handle) != 0 }

    /// Waits for the thread to exit. Never call it on the thread itself.
    func join() { _ = pthread_join(handle, nil) }

    /// Lets the thread clean up after itself (for a stop requested on the thread itself).
    func detach() { _ = pthread_detach(handle) }

    /// Runs `body` on a short-lived thread inside the network namespace at `path`
    /// (or directly when `path` is nil), and returns its result after joining it.
    ///
    /// The caller's thread never changes namespace, and neither does any thread
    /// that may later create others: a thread that called setns(2) or unshare(2)
    /// must never enqueue Dispatch work, since libdispatch may start a worker
    /// thread from it, and that worker would inherit the namespace. So `body` must
    /// not call user code or enqueue work; it returns a value instead.
    ///
    /// With `overlayEtc`, and `path` of the form `/run/netns/NAME`, the thread also
    /// gets a private mount namespace with `/etc/netns/NAME/*` bind-mounted over
    /// `/etc`, as `ip netns exec NAME` arranges (the resolver reads resolv.conf there).
    static func inNamespace<T: Sendable>(
        _ path: String?, overlayEtc: Bool = false, _ body: @escaping @Sendable () throws(ReachabilityError) -> T
    ) throws(ReachabilityError) -> T {
        guard let path else { return try body() }
        return try inNamespace(NetworkNamespace.open(path), overlayEtc: overlayEtc, body)
    }

    /// The same, for a namespace held open by
    /// descriptor: the thread enters exactly that namespace, whatever its path names now.
    static func inNamespace<T: Sendable>(
        _ namespace: NetworkNamespace?, overlayEtc: Bool = false,
        _ body: @escaping @Sendable () throws(ReachabilityError) -> T
    ) throws(ReachabilityError) -> T {
        guard let namespace else { return try body() }
        let outcome = ResultBox<T>()
        let thread = try JoinableThread(name: "reachability-ns") {
            switch Syscall.enterNetworkNamespace(fd: namespace.fd, path: namespace.path) {
            case .failure(let failure):
                outcome.set(
                    .failure(
                        ReachabilityError(
                            .namespace, "cannot enter network namespace \(namespace.path)", errno: failure.errno)))
            case .success:
                if overlayEtc, let name = namespace.name { overlayNetnsEtc(name) }
                do throws(ReachabilityError) { outcome.set(.success(try body())) } catch {
                    outcome.set(.failure(error))
                }
            }
        }
        thread.join()
        return try outcome.get()
    }

    /// Bind-mounts `/etc/netns/NAME/*` over `/etc` in a private mount namespace of
    /// the calling thread (best effort: without them the process's /etc is used).
    private static func overlayNetnsEtc(_ name: String) {
        let etc = "/etc/netns/\(name)"
        guard let directory = opendir(etc) else { return }
        defer { closedir(directory) }
        var files: [String] = []
        while let entry = readdir(directory) {
            let file = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if file != "." && file != ".." { files.append(file) }
        }
        guard !files.isEmpty, cnl_private_mounts() == 0 else { return }
        for file in files {
            _ = cnl_bind_mount("\(etc)/\(file)", "/etc/\(file)")
        }
    }
}

/// Hands a result from one thread to another that joins it.
final class ResultBox<T: Sendable>: Sendable {
    private let value = LockedValue<Result<T, ReachabilityError>?>(nil)
    func set(_ result: Result<T, ReachabilityError>) { value.withLock { $0 = result } }
    func get() throws(ReachabilityError) -> T {
        guard let result = value.withLock({ $0 }) else {
            throw ReachabilityError(.systemCall, "the worker thread ended without a result")
        }
        return try result.get()
    }
}

/// A value behind a lock, shared by reference.
///
/// A pthread mutex rather than `Synchronization.Mutex`: on Linux, `Mutex` locks with
/// raw futex calls that ThreadSanitizer cannot see, so TSan reports every access it
/// protects as a race (a correct `Mutex`-guarded counter is reported), and the
/// suite must run clean under TSan. The lock is never held while user code runs.
///
/// `@unchecked Sendable`: every access to `value` holds `mutex`.
final class LockedValue<Value: Sendable>: @unchecked Sendable {
    // The mutex pointer first: a zero-sized `value` would otherwise share its address.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        self.value = value
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
