import Dispatch
import Glibc
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// The one thread (`reachability-nl`) that reads the sockets of every running
/// monitor, whatever its namespace: it waits in epoll_wait(2) on all of them, and
/// when one has news runs that monitor's step (``NetlinkMonitor/Reader``): its drain,
/// its pass, its lookups. A namespace that is idle costs no thread and no wake-up.
///
/// One per ``SystemCalls`` (the process has one: ``SystemCalls/live``; a test's
/// fault plan gets a thread of its own, so its faults reach its monitors' waits
/// only). It starts with the first monitor and ends with the last.
///
/// `@unchecked Sendable`: `readers` and `deadlines` belong to the thread; the
/// inbox is behind a lock.
final class ReaderThread: @unchecked Sendable {
    /// The running threads, by the system calls their monitors use.
    private static let threads = LockedValue<[SystemCalls: ReaderThread]>([:])

    let systemCalls: SystemCalls
    /// The file watch of every monitor of this thread (nil when inotify refused one:
    /// the monitors run without their watches, §10).
    let files: FileWatch?
    private let epoll: Int32
    private let wake: Int32
    /// What the file watch said, by monitor, until its step (on the thread only).
    private var touchedFiles: [UInt64: Set<FileWatch.Subject>] = [:]
    private var thread: JoinableThread?
    /// What other threads ask of the reader thread, taken at its next wake-up.
    private let inbox = LockedValue(Inbox())
    /// The registered readers, by token: touched on the reader thread only.
    private var readers: [UInt64: NetlinkMonitor.Reader] = [:]
    private static let nextToken = LockedValue<UInt64>(0)

    private struct Inbox {
        var added: [NetlinkMonitor.Reader] = []
        var removed: [(token: UInt64, done: DispatchSemaphore?)] = []
        var poked: Set<UInt64> = []
        /// How many readers are registered or being added (under the threads lock).
        var count = 0
        var exit = false
    }

    /// The epoll token of a reader's descriptor: the reader's token and which one
    /// (`files`: the thread's file watch had news for it).
    enum Descriptor: UInt64 {
        case events = 0
        case files = 1
        case process = 2
    }
    /// A poke: the reader is asked to look (a stop, a Wi-Fi read done, an earlier expiry).
    static let pokeBit: UInt64 = 1 << 3
    private static let wakeToken = UInt64.max
    private static let filesToken = UInt64.max - 1

    private init(systemCalls: SystemCalls) throws(ReachabilityError) {
        self.systemCalls = systemCalls
        switch systemCalls.epollCreate() {
        case .success(let fd): epoll = fd
        case .failure(let failure): throw failure.reachabilityError
        }
        switch systemCalls.eventfd() {
        case .success(let fd): wake = fd
        case .failure(let failure):
            systemCalls.close(epoll)
            throw failure.reachabilityError
        }
        if case .failure(let failure) = systemCalls.epollAdd(epoll, wake, token: Self.wakeToken) {
            systemCalls.close(wake)
            systemCalls.close(epoll)
            throw failure.reachabilityError
        }
        var files = try? FileWatch(systemCalls: systemCalls)
        if let watch = files, case .failure = systemCalls.epollAdd(epoll, watch.fd, token: Self.filesToken) {
            files = nil
        }
        self.files = files
    }

    deinit {
        systemCalls.close(wake)
        systemCalls.close(epoll)
    }

    /// A token for a new reader.
    static func token() -> UInt64 {
        nextToken.withLock { value in
            value += 1
            return value
        }
    }

    /// The thread of `systemCalls` (started if none runs), reserved for a monitor
    /// that will ``add(_:)`` its reader, or ``release()`` it. Throws when the thread or
    /// its descriptors can't be made.
    static func reserve(_ systemCalls: SystemCalls) throws(ReachabilityError) -> ReaderThread {
        let outcome: Result<ReaderThread, ReachabilityError> = threads.withLock { threads in
            let thread: ReaderThread
            if let running = threads[systemCalls] {
                thread = running
            } else {
                do throws(ReachabilityError) {
                    thread = try ReaderThread(systemCalls: systemCalls)
                    try thread.startThread()
                } catch {
                    return .failure(error)
                }
                threads[systemCalls] = thread
            }
            thread.inbox.withLock { $0.count += 1 }
            return .success(thread)
        }
        return try outcome.get()
    }

    /// Gives up a reservation that added no reader (its start failed).
    func release() {
        let idle = Self.threads.withLock { threads in
            inbox.withLock { $0.count -= 1 }
            return stopIfIdle(&threads)
        }
        idle?.join()
    }

    /// Adds `reader` (its thread reserved): its descriptors join the thread's set,
    /// and it is stepped from the thread's next wake-up on.
    func add(_ reader: NetlinkMonitor.Reader) throws(ReachabilityError) {
        var added: [Int32] = []
        for (descriptor, fd) in reader.descriptors {
            if case .failure(let failure) = systemCalls.epollAdd(
                epoll, fd, token: reader.token << 2 | descriptor.rawValue)
            {
                for fd in added { systemCalls.epollRemove(epoll, fd) }
                throw failure.reachabilityError
            }
            added.append(fd)
        }
        inbox.withLock { $0.added.append(reader) }
        systemCalls.signal(wake)
    }

    /// Removes the reader with `token`: once this returns (off the reader thread),
    /// the thread never steps it again. The last reader's removal ends the thread.
    func unregister(_ token: UInt64, descriptors: [Int32]) {
        for fd in descriptors { systemCalls.epollRemove(epoll, fd) }
        files?.remove(owner: token)
        let onThread = thread?.isCurrent == true
        let done = onThread ? nil : DispatchSemaphore(value: 0)
        inbox.withLock { $0.removed.append((token, done)) }
        systemCalls.signal(wake)
        done?.wait()
        let idle = Self.threads.withLock { threads in
            inbox.withLock { $0.count -= 1 }
            return stopIfIdle(&threads)
        }
        idle?.join()
    }

    /// Ends the thread when no reader is left (under the threads lock, so that no
    /// registration races with it); returns the thread to join, after unlocking
    /// (none when called on the thread itself, which then ends by itself).
    private func stopIfIdle(_ threads: inout [SystemCalls: ReaderThread]) -> JoinableThread? {
        guard inbox.withLock({ $0.count == 0 }), threads[systemCalls] === self else { return nil }
        threads[systemCalls] = nil
        inbox.withLock { $0.exit = true }
        systemCalls.signal(wake)
        guard let thread, !thread.isCurrent else {
            thread?.detach()
            return nil
        }
        return thread
    }

    /// Asks the thread to step the reader with `token` at once.
    func poke(_ token: UInt64) {
        inbox.withLock { _ = $0.poked.insert(token) }
        systemCalls.signal(wake)
    }

    /// Stops watching the reader's event socket (a storm pause), or starts again.
    func pauseEvents(of reader: NetlinkMonitor.Reader, _ paused: Bool) {
        if paused {
            systemCalls.epollRemove(epoll, reader.events.fd)
        } else {
            _ = systemCalls.epollAdd(epoll, reader.events.fd, token: reader.token << 2 | Descriptor.events.rawValue)
        }
    }

    private func startThread() throws(ReachabilityError) {
        thread = try JoinableThread(name: "reachability-nl", systemCalls: systemCalls) { [self] in run() }
    }

    /// The loop: wait for any descriptor, the inbox, or the soonest reader's time;
    /// then step the readers that have news or whose time came, and only those.
    private func run() {
        let tokens = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: 64)
        defer { tokens.deallocate() }
        var ready: [UInt64: UInt64] = [:]
        // The readers that asked to be stepped at a time (an expiry, a retry, a
        // pause's end; now, for datagrams read and not yet handed out): few.
        var timed: [UInt64: ContinuousClock.Instant] = [:]
        while true {
            var timeout: Int32 = -1
            if let soonest = timed.values.min() {
                let left = soonest - .now
                let parts = (left + .microseconds(999)).components
                timeout =
                    left <= .zero
                    ? 0 : Int32(clamping: parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000)
            }
            var lostEvents = false
            var woken = false
            switch systemCalls.epollWait(epoll, into: tokens, timeoutMilliseconds: timeout, subject: .monitor) {
            case .success(let count):
                for token in tokens[..<count] {
                    if token == Self.wakeToken {
                        woken = true
                    } else if token == Self.filesToken {
                        for (owner, subjects) in files?.drain() ?? [:] {
                            touchedFiles[owner, default: []].formUnion(subjects)
                            ready[owner, default: 0] |= 1 << Descriptor.files.rawValue
                        }
                    } else {
                        ready[token >> 2, default: 0] |= 1 << (token & 3)
                    }
                }
            case .failure:
                // Only ENOMEM is plausible: back off, then treat it as lost events.
                SystemCalls.sleep(microseconds: 100_000)
                lostEvents = true
            }
            // The inbox only when asked: a kernel event's wake-up makes no other call.
            if woken || lostEvents {
                systemCalls.drain(wake)
                if takeInbox(&ready, &timed, lostEvents: lostEvents) { return }
            }
            let now = ContinuousClock.now
            for (token, time) in timed where time <= now { ready[token, default: 0] |= 0 }
            for (token, bits) in ready {
                let files = touchedFiles.removeValue(forKey: token) ?? []
                guard let reader = readers[token] else { continue }
                timed[token] = reader.step(ready: bits, files: files)
            }
            ready.removeAll(keepingCapacity: true)
        }
    }

    /// Takes what other threads asked: readers added and removed, pokes; after a
    /// failed wait, every reader resyncs. Returns whether the thread is to end.
    private func takeInbox(
        _ ready: inout [UInt64: UInt64], _ timed: inout [UInt64: ContinuousClock.Instant], lostEvents: Bool
    ) -> Bool {
        let (added, removed, poked, exit) = inbox.withLock { inbox in
            defer {
                inbox.added = []
                inbox.removed = []
                inbox.poked = []
            }
            return (inbox.added, inbox.removed, inbox.poked, inbox.exit)
        }
        for reader in added { readers[reader.token] = reader }
        for (token, done) in removed {
            readers[token] = nil
            touchedFiles[token] = nil
            timed[token] = nil
            ready[token] = nil
            done?.signal()
        }
        if exit { return true }
        for token in poked where readers[token] != nil { ready[token, default: 0] |= Self.pokeBit }
        if lostEvents { for token in readers.keys { ready[token, default: 0] |= Self.lostBit } }
        return false
    }

    /// The wait failed: every reader resyncs.
    static let lostBit: UInt64 = 1 << 4
}
