import Dispatch
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// Opens monitors' sockets inside their namespaces in batches: one short-lived
/// `reachability-ns` thread at a time (per ``SystemCalls``) serves every setup asked
/// for while it runs, entering each one's namespace in turn, and ends when none is
/// left. Starts that come together (`status --all-namespaces` looks at 16 namespaces
/// at once, a program starts monitors from several threads) share one thread; a lone
/// start has one of its own, as ``JoinableThread/inNamespace(_:overlayEtc:_:)`` gives.
///
/// A setup only makes sockets and reads the kernel's dumps (each reply waited at most
/// `NetlinkSocket.replyTimeoutMilliseconds`), and, like every body a thread that
/// entered a namespace runs, it calls no user code and enqueues no work.
enum NamespaceEntry {
    private struct Job: Sendable {
        let namespace: NetworkNamespace
        let run: @Sendable () -> Void
        let fail: @Sendable (ReachabilityError) -> Void
    }

    /// The jobs waiting, by the system calls of their namespaces; an entry exists
    /// while its thread runs.
    private static let queues = LockedValue<[SystemCalls: [Job]]>([:])

    /// Runs `body` inside `namespace` (directly for the process's own) on the batch
    /// thread, and returns its result.
    static func run<T: Sendable>(
        in namespace: NetworkNamespace?, _ body: @escaping @Sendable () throws(ReachabilityError) -> T
    ) throws(ReachabilityError) -> T {
        guard let namespace else { return try body() }
        let outcome = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        let system = namespace.systemCalls
        let job = Job(
            namespace: namespace,
            run: {
                outcome.set(namespace.runEntered(body))
                done.signal()
            },
            fail: { error in
                outcome.set(.failure(error))
                done.signal()
            })
        let startsThread = queues.withLock { queues -> Bool in
            defer { queues[system, default: []].append(job) }
            return queues[system] == nil
        }
        if startsThread {
            do throws(ReachabilityError) {
                try JoinableThread.detached(name: "reachability-ns", systemCalls: system) { serve(system) }
            } catch {
                // No thread: every job queued meanwhile fails as this one does.
                let waiting = queues.withLock { $0.removeValue(forKey: system) ?? [] }
                for waiter in waiting { waiter.fail(error) }
            }
        }
        done.wait()
        return try outcome.get()
    }

    /// The batch thread: each job in turn, until none is left.
    private static func serve(_ system: SystemCalls) {
        while true {
            let job = queues.withLock { queues -> Job? in
                guard var jobs = queues[system], !jobs.isEmpty else {
                    queues[system] = nil
                    return nil
                }
                let job = jobs.removeFirst()
                queues[system] = jobs
                return job
            }
            guard let job else { return }
            job.run()
        }
    }
}
