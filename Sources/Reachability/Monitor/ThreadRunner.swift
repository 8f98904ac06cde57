import CNetlink
import Glibc
import Synchronization

/// A joinable POSIX thread running one closure. Foundation's `Thread` cannot be
/// joined, and the monitor must know its reader has exited before it returns
/// from `stop()`.
final class JoinableThread: Sendable {
    private let handle: pthread_t

    /// Starts `body` on a new thread named `name` (at most 15 bytes are kept).
    init(name: String, _ body: @escaping @Sendable () -> Void) throws(ReachabilityError) {
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
        let rc = pthread_create(
            &thread, nil,
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
        handle = thread
    }

    /// True when called on this thread.
    var isCurrent: Bool { pthread_equal(pthread_self(), handle) != 0 }

    /// Waits for the thread to exit. Never call it on the thread itself.
    func join() { _ = pthread_join(handle, nil) }

    /// Lets the thread clean up after itself (for a stop requested on the thread itself).
    func detach() { _ = pthread_detach(handle) }

    /// Runs `body` on a short-lived thread inside the network namespace at `path`
    /// (the caller's thread never changes namespace), or directly when `path` is nil.
    static func inNamespace<T: Sendable>(
        _ path: String?, _ body: @escaping @Sendable () throws(ReachabilityError) -> T
    ) throws(ReachabilityError) -> T {
        guard let path else { return try body() }
        let outcome = ResultBox<T>()
        let thread = try JoinableThread(name: "reachability-ns") {
            switch Syscall.enterNetworkNamespace(path) {
            case .failure(let failure):
                outcome.set(
                    .failure(
                        ReachabilityError(.namespace, "cannot enter network namespace \(path)", errno: failure.errno)))
            case .success:
                do throws(ReachabilityError) { outcome.set(.success(try body())) } catch {
                    outcome.set(.failure(error))
                }
            }
        }
        thread.join()
        return try outcome.get()
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

/// A `Mutex` in a class, so that it can be shared by reference.
final class LockedValue<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R { try mutex.withLock { try body(&$0) } }
}
