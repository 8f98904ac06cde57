@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// Decides when each hostname resolution runs. Pure: the resolver pool feeds it
/// requests, worker events and clock readings, and does what it answers.
///
/// The rules:
/// - Per name (and namespace), at most one resolution is in flight. A request
///   made while one runs is answered by the next one, which starts after it (the
///   network changed meanwhile: the running answer may be stale). Requests made
///   before a resolution starts share it.
/// - Per name, at most one start per ``Limits/minimumInterval``: a request within
///   that time of the last start waits for the interval to pass.
/// - Up to ``Limits/running`` resolutions run at once. One that has run for
///   ``Limits/stallAfter`` (a server that does not answer) stops counting, so
///   that others start beside it, up to ``Limits/threads`` threads in all.
/// - Names whose last resolution was quick start first, then names never
///   resolved, then names whose last one was slow; first come, first served within
///   each. A stalled name never delays a quick one.
/// - Local names (the pool found them in the hosts file, which the system
///   resolver reads first) have a lane of their own: they start before any other,
///   on up to ``Limits/localThreads`` threads beyond ``Limits/threads``, so that
///   no number of stalled names delays them.
///
/// Every operation costs O(log n) in the names waiting (plus the few running):
/// ten thousand names are scheduled in milliseconds.
struct ResolverSchedule<Waiter: Hashable & Sendable>: Sendable {
    struct Key: Hashable, Sendable {
        /// The namespace's identity; nil for the process's own.
        var namespace: FileIdentity?
        var name: String
        /// The system calls the resolution is made through (the requesting
        /// environment's; equal by fault plan): requests with different plans are
        /// resolved apart, so a test's injected failure reaches only its own.
        var systemCalls: SystemCalls = .live
    }

    struct Limits: Sendable, Equatable {
        var running = 16
        var threads = 64
        var stallAfter: Duration = .milliseconds(250)
        var minimumInterval: Duration = .seconds(1)
        /// A resolution that took this long makes its name slow.
        var slowAfter: Duration = .seconds(1)
        /// Idle names whose history is kept (for ordering and the interval).
        var rememberedNames = 4096
        /// Threads for local names, beyond ``threads``.
        var localThreads = 4
    }

    private enum Speed: Int, CaseIterable {
        case local = 0, quick = 1, unknown = 2, slow = 3
    }

    private struct Entry: Sendable {
        var lastStart: ContinuousClock.Instant?
        var lastDuration: Duration?
        /// Waiting for the next resolution to start (empty: none is wanted).
        var next: Set<Waiter> = []
        /// Answered by the resolution in flight.
        var current: Set<Waiter> = []
        /// In a ready queue or the deferred heap.
        var queued = false
        var isRunning = false
        /// In the hosts file, as of the last request.
        var isLocal = false

        var isIdle: Bool { !isRunning && next.isEmpty && current.isEmpty }
    }

    let limits: Limits
    private var entries: [Key: Entry] = [:]
    /// Startable names by speed, first come first served.
    private var ready: [FIFO<Key>] = Speed.allCases.map { _ in FIFO() }
    /// Names waiting for their interval to pass, earliest first.
    private var deferred = MinHeap<DeferredKey>()
    /// Resolutions in flight and when each started (at most ``Limits/threads``).
    private var runningSince: [Key: ContinuousClock.Instant] = [:]
    /// The resolutions in flight that run in the local lane.
    private var runningLocal: Set<Key> = []
    private var counter: UInt64 = 0
    private var pruneAbove: Int
    /// Worker threads alive (running a resolution or about to look for one).
    private(set) var threads = 0

    init(limits: Limits = Limits()) {
        self.limits = limits
        pruneAbove = limits.rememberedNames * 2
    }

    /// Resolutions in flight.
    var running: Int { runningSince.count }

    /// Whether `waiter` waits for `key` (queued or in flight).
    func isWaiting(_ waiter: Waiter, for key: Key) -> Bool {
        guard let entry = entries[key] else { return false }
        return entry.next.contains(waiter) || entry.current.contains(waiter)
    }

    /// Whether anyone waits for `key` (queued or in flight).
    func hasWaiters(_ key: Key) -> Bool {
        guard let entry = entries[key] else { return false }
        return !entry.next.isEmpty || !entry.current.isEmpty
    }

    /// `waiter` wants a resolution of `key` that starts from now on. Returns how
    /// many worker threads to start (already counted in ``threads``).
    mutating func request(_ key: Key, by waiter: Waiter, at now: ContinuousClock.Instant, local: Bool = false) -> Int {
        entries[key, default: Entry()].next.insert(waiter)
        entries[key]?.isLocal = local
        enqueueIfWanted(key, at: now)
        return startWorkers(at: now)
    }

    /// A worker looks for work: the key it should resolve now, or nil (it then
    /// exits, and the thread count drops).
    mutating func take(at now: ContinuousClock.Instant) -> Key? {
        promote(at: now)
        let key: Key
        if runningLocal.count < limits.localThreads, let local = ready[Speed.local.rawValue].pop() {
            key = local
            runningLocal.insert(key)
        } else if activeCount(at: now) < limits.running, running - runningLocal.count < limits.threads,
            let other = popReady(from: Speed.quick.rawValue)
        {
            key = other
        } else {
            threads -= 1
            return nil
        }
        entries[key]?.queued = false
        entries[key]?.isRunning = true
        entries[key]?.lastStart = now
        if let waiting = entries[key]?.next {
            entries[key]?.current = waiting
            entries[key]?.next = []
        }
        runningSince[key] = now
        return key
    }

    /// The resolution of `key` finished: returns the waiters it answers and how
    /// many worker threads to start (a waiting name may now be startable).
    mutating func finish(_ key: Key, at now: ContinuousClock.Instant) -> (waiters: Set<Waiter>, start: Int) {
        guard let since = runningSince.removeValue(forKey: key), entries[key] != nil else { return ([], 0) }
        runningLocal.remove(key)
        entries[key]?.lastDuration = now - since
        entries[key]?.isRunning = false
        let waiters = entries[key]?.current ?? []
        entries[key]?.current = []
        enqueueIfWanted(key, at: now)
        forgetIdleNames(at: now)
        return (waiters, startWorkers(at: now))
    }

    /// A thread asked for could not be started. Returns the waiters that can never
    /// be served now (no thread runs that would pick them up), which the pool fails.
    mutating func threadFailedToStart(at now: ContinuousClock.Instant) -> [Key: Set<Waiter>] {
        threads -= 1
        guard threads == 0 else { return [:] }
        var failed: [Key: Set<Waiter>] = [:]
        for (key, entry) in entries where !entry.next.isEmpty && !entry.isRunning {
            failed[key] = entry.next
            entries[key]?.next = []
            entries[key]?.queued = false
        }
        ready = Speed.allCases.map { _ in FIFO() }
        deferred = MinHeap()
        forgetIdleNames(at: now)
        return failed
    }

    /// When to look again even if nothing happens: a waiting name becomes
    /// startable, or a running resolution becomes stalled while others wait.
    /// Nil when nothing waits (no timer at all).
    func nextCheck(at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        var earliest: ContinuousClock.Instant?
        func consider(_ instant: ContinuousClock.Instant) {
            if earliest.map({ instant < $0 }) ?? true { earliest = instant }
        }
        let startableNow = ready.contains { !$0.isEmpty } || deferred.first.map { $0.notBefore <= now } ?? false
        if let first = deferred.first, first.notBefore > now { consider(first.notBefore) }
        if startableNow {
            for since in runningSince.values where since + limits.stallAfter > now {
                consider(since + limits.stallAfter)
            }
        }
        return earliest
    }

    /// Worker threads to start now (a timer fired): counted in ``threads``.
    mutating func startWorkers(at now: ContinuousClock.Instant) -> Int {
        let count = workersToStart(at: now)
        threads += count
        return count
    }

    /// Worker threads to start now: one per startable name no idle thread will
    /// take, within the limits.
    mutating func workersToStart(at now: ContinuousClock.Instant) -> Int {
        promote(at: now)
        let local = min(ready[Speed.local.rawValue].count, limits.localThreads - runningLocal.count)
        let others = ready.dropFirst().reduce(0) { $0 + $1.count }
        let otherRoom = min(limits.running - activeCount(at: now), limits.threads - (running - runningLocal.count))
        let idle = max(0, threads - running)
        let wanted = max(0, local) + max(0, min(others, otherRoom)) - idle
        return max(0, min(wanted, limits.threads + limits.localThreads - threads))
    }

    // MARK: Queues

    private struct DeferredKey: Comparable, Sendable {
        var notBefore: ContinuousClock.Instant
        var order: UInt64
        var key: Key
        static func < (lhs: Self, rhs: Self) -> Bool { (lhs.notBefore, lhs.order) < (rhs.notBefore, rhs.order) }
        static func == (lhs: Self, rhs: Self) -> Bool { lhs.notBefore == rhs.notBefore && lhs.order == rhs.order }
    }

    /// Puts `key` in a ready queue, or the deferred heap until its interval passes,
    /// if a resolution is wanted and none runs or waits already.
    private mutating func enqueueIfWanted(_ key: Key, at now: ContinuousClock.Instant) {
        guard let entry = entries[key], !entry.next.isEmpty, !entry.queued, !entry.isRunning else { return }
        entries[key]?.queued = true
        counter += 1
        if let last = entry.lastStart, last + limits.minimumInterval > now {
            deferred.push(DeferredKey(notBefore: last + limits.minimumInterval, order: counter, key: key))
        } else {
            ready[speed(of: entry).rawValue].append(key)
        }
    }

    /// Moves names whose interval has passed to their ready queue.
    private mutating func promote(at now: ContinuousClock.Instant) {
        while let first = deferred.first, first.notBefore <= now {
            _ = deferred.pop()
            guard let entry = entries[first.key] else { continue }
            ready[speed(of: entry).rawValue].append(first.key)
        }
    }

    private mutating func popReady(from first: Int) -> Key? {
        for index in ready.indices where index >= first {
            if let key = ready[index].pop() { return key }
        }
        return nil
    }

    private func speed(of entry: Entry) -> Speed {
        if entry.isLocal { return .local }
        guard let duration = entry.lastDuration else { return .unknown }
        return duration < limits.slowAfter ? .quick : .slow
    }

    /// Resolutions in flight outside the local lane that are not stalled.
    private func activeCount(at now: ContinuousClock.Instant) -> Int {
        runningSince.reduce(0) { $0 + (now - $1.value < limits.stallAfter && !runningLocal.contains($1.key) ? 1 : 0) }
    }

    /// Forgets idle names (no waiter, nothing running, interval over) once more
    /// than twice ``Limits/rememberedNames`` are known; amortized O(1).
    private mutating func forgetIdleNames(at now: ContinuousClock.Instant) {
        guard entries.count > pruneAbove else { return }
        let interval = limits.minimumInterval
        entries = entries.filter { _, entry in
            !(entry.isIdle && !entry.queued && (entry.lastStart.map { now - $0 > interval } ?? true))
        }
        pruneAbove = max(limits.rememberedNames, entries.count) * 2
    }
}

/// A first-in first-out queue with O(1) amortized append and pop.
struct FIFO<Element: Sendable>: Sendable {
    private var items: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }

    mutating func append(_ element: Element) { items.append(element) }

    mutating func pop() -> Element? {
        guard head < items.count else { return nil }
        let element = items[head]
        head += 1
        if head >= 64 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }
}

/// A binary min-heap.
struct MinHeap<Element: Comparable & Sendable>: Sendable {
    private var items: [Element] = []

    var first: Element? { items.first }

    mutating func push(_ element: Element) {
        items.append(element)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child] < items[parent] else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count && items[left] < items[smallest] { smallest = left }
            if right < items.count && items[right] < items[smallest] { smallest = right }
            guard smallest != parent else { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}
