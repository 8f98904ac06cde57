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
}
