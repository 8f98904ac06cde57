import Glibc

/// Whether threads can still be made. When they can't (RLIMIT_NPROC, `ulimit -u`,
/// counts a user's threads; the kernel's `threads-max`; memory for stacks), thread
/// creation fails with EAGAIN, and what happens then is the maker's: libdispatch
/// sleeps and tries again for as long as it takes, so Swift concurrency's pool
/// waits for ever, and SwiftNIO traps. Asked before those are first needed, it
/// turns that into an error that names the limit.
package enum ThreadHeadroom {
    /// Makes `count` threads that exist at once (each waits until the last is
    /// made), then lets them end and joins them. nil when they could be made, else
    /// pthread_create's error (EAGAIN, ENOMEM).
    package static func check(_ count: Int) -> Int32? {
        guard count > 0 else { return nil }
        let gate = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(gate, 0, 0)
        defer {
            sem_destroy(gate)
            gate.deallocate()
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        // The smallest stack: these threads only wait.
        pthread_attr_setstacksize(&attributes, Int(PTHREAD_STACK_MIN))
        var threads: [pthread_t] = []
        threads.reserveCapacity(count)
        var failure: Int32?
        for _ in 0..<count {
            var thread = pthread_t()
            let result = pthread_create(
                &thread, &attributes,
                { gate in
                    while sem_wait(gate!.assumingMemoryBound(to: sem_t.self)) != 0 {}
                    return nil
                }, gate)
            guard result == 0 else {
                failure = result
                break
            }
            threads.append(thread)
        }
        for _ in threads { sem_post(gate) }
        for thread in threads { pthread_join(thread, nil) }
        return failure
    }

    /// The soft RLIMIT_NPROC, as `ulimit -u` shows it ("unlimited", or a number).
    package static var processLimit: String {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(__RLIMIT_NPROC.rawValue), &limit) == 0 else { return "unknown" }
        return limit.rlim_cur == rlim_t.max ? "unlimited" : "\(limit.rlim_cur)"
    }
}
