import Glibc
@_spi(Testing) package import ReachabilitySystem

/// A joinable POSIX thread running one closure. Foundation's `Thread` cannot be
/// joined, and the monitor must know its reader has exited before it returns
/// from `stop()`.
package final class JoinableThread: Sendable {
    private let handle: pthread_t

    /// Starts `body` on a new thread named `name` (at most 15 bytes are kept),
    /// made and named through `systemCalls`.
    package init(name: String, systemCalls: SystemCalls, _ body: @escaping @Sendable () -> Void)
        throws(ReachabilityError)
    {
        handle = try Self.create(name: name, detached: false, systemCalls: systemCalls, body)
    }

    /// Starts `body` on a new thread that is detached from the start: nobody joins
    /// it, and it cleans up after itself (no moment in which it exists joinable
    /// and unjoined, which a process exiting then would count as leaked).
    package static func detached(name: String, systemCalls: SystemCalls, _ body: @escaping @Sendable () -> Void)
        throws(ReachabilityError)
    {
        _ = try create(name: name, detached: true, systemCalls: systemCalls, body)
    }

    private static func create(
        name: String, detached: Bool, systemCalls: SystemCalls, _ body: @escaping @Sendable () -> Void
    ) throws(ReachabilityError) -> pthread_t {
        final class Box: Sendable {
            let name: String
            let systemCalls: SystemCalls
            let body: @Sendable () -> Void
            init(name: String, systemCalls: SystemCalls, body: @escaping @Sendable () -> Void) {
                self.name = name
                self.systemCalls = systemCalls
                self.body = body
            }
        }
        let context = Unmanaged.passRetained(Box(name: name, systemCalls: systemCalls, body: body)).toOpaque()
        let created = systemCalls.createThread(name: name, detached: detached, context: context) { raw in
            guard let raw else { return nil }
            let box = Unmanaged<Box>.fromOpaque(raw).takeRetainedValue()
            box.systemCalls.setThreadName(box.name)
            box.body()
            return nil
        }
        switch created {
        case .success(let thread):
            return thread
        case .failure(let failure):
            Unmanaged<Box>.fromOpaque(context).release()
            throw failure.reachabilityError
        }
    }

    /// True when called on this thread.
    package var isCurrent: Bool { pthread_equal(pthread_self(), handle) != 0 }

    /// Waits for the thread to exit. Never call it on the thread itself.
    package func join() { SystemCalls.join(handle) }

    /// Lets the thread clean up after itself (for a stop requested on the thread itself).
    package func detach() { SystemCalls.detach(handle) }
}
