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
struct ResolverSchedule<Waiter: Hashable>: Sendable where Waiter: Sendable {
    struct Key: Hashable, Sendable {
        /// The namespace's identity; nil for the process's own.
        var namespace: FileIdentity?
        var name: String
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
    }

    private enum Speed: Int, Comparable {
        case quick = 0, unknown = 1, slow = 2
        static func < (lhs: Speed, rhs: Speed) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    private struct Entry: Sendable {
        var lastStart: ContinuousClock.Instant?
        var lastDuration: Duration?
        /// When the resolution in flight started.
        var runningSince: ContinuousClock.Instant?
        /// Waiting for the next resolution to start (empty: none is wanted).
        var next: Set<Waiter> = []
        /// Answered by the resolution in flight.
        var current: Set<Waiter> = []
        /// Order of the oldest waiting request.
        var order: UInt64 = 0

        func speed(slowAfter: Duration) -> Speed {
            guard let lastDuration else { return .unknown }
            return lastDuration < slowAfter ? .quick : .slow
        }
        var isIdle: Bool { runningSince == nil && next.isEmpty && current.isEmpty }
    }

    let limits: Limits
    private var entries: [Key: Entry] = [:]
    private var counter: UInt64 = 0
    /// Worker threads alive (running a resolution or about to look for one).
    private(set) var threads = 0

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Resolutions in flight.
    var running: Int { entries.values.reduce(0) { $0 + ($1.runningSince == nil ? 0 : 1) } }

    /// Whether `waiter` waits for `key` (queued or in flight).
    func isWaiting(_ waiter: Waiter, for key: Key) -> Bool {
        guard let entry = entries[key] else { return false }
        return entry.next.contains(waiter) || entry.current.contains(waiter)
    }

    /// `waiter` wants a resolution of `key` that starts from now on. Returns how
    /// many worker threads to start (already counted in ``threads``).
    mutating func request(_ key: Key, by waiter: Waiter, at now: ContinuousClock.Instant) -> Int {
        var entry = entries[key] ?? Entry()
        if entry.next.isEmpty {
            counter += 1
            entry.order = counter
        }
        entry.next.insert(waiter)
        entries[key] = entry
        return startWorkers(at: now)
    }

    /// A worker looks for work: the key it should resolve now, or nil (it then
    /// exits, and the thread count drops).
    mutating func take(at now: ContinuousClock.Instant) -> Key? {
        var best: (key: Key, speed: Speed, order: UInt64)?
        for (key, entry) in entries where isStartable(entry, at: now) {
            let candidate = (key: key, speed: entry.speed(slowAfter: limits.slowAfter), order: entry.order)
            if let current = best, (current.speed, current.order) <= (candidate.speed, candidate.order) { continue }
            best = candidate
        }
        guard let best, var entry = entries[best.key], mayStartAnother(at: now) else {
            threads -= 1
            return nil
        }
        entry.runningSince = now
        entry.lastStart = now
        entry.current = entry.next
        entry.next = []
        entries[best.key] = entry
        return best.key
    }

    /// The resolution of `key` finished: returns the waiters it answers and how
    /// many worker threads to start (a waiting name may now be startable).
    mutating func finish(_ key: Key, at now: ContinuousClock.Instant) -> (waiters: Set<Waiter>, start: Int) {
        guard var entry = entries[key] else { return ([], 0) }
        if let since = entry.runningSince { entry.lastDuration = now - since }
        entry.runningSince = nil
        let waiters = entry.current
        entry.current = []
        entries[key] = entry
        forgetIdleNames(at: now)
        return (waiters, startWorkers(at: now))
    }

    /// A thread asked for could not be started. Returns the waiters that can never
    /// be served now (no thread runs that would pick them up), which the pool fails.
    mutating func threadFailedToStart(at now: ContinuousClock.Instant) -> [Key: Set<Waiter>] {
        threads -= 1
        guard threads == 0 else { return [:] }
        var failed: [Key: Set<Waiter>] = [:]
        for (key, entry) in entries where !entry.next.isEmpty {
            failed[key] = entry.next
            entries[key]?.next = []
        }
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
        let waiting = entries.values.filter { !$0.next.isEmpty && $0.runningSince == nil }
        guard !waiting.isEmpty else { return nil }
        for entry in waiting {
            if let notBefore = notBefore(entry), notBefore > now { consider(notBefore) }
        }
        if waiting.contains(where: { isStartable($0, at: now) }) {
            for entry in entries.values {
                if let since = entry.runningSince, since + limits.stallAfter > now {
                    consider(since + limits.stallAfter)
                }
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
    func workersToStart(at now: ContinuousClock.Instant) -> Int {
        let startable = entries.values.filter { isStartable($0, at: now) }.count
        let running = self.running
        let idle = max(0, threads - running)
        let active = entries.values.filter { entry in
            guard let since = entry.runningSince else { return false }
            return now - since < limits.stallAfter
        }.count
        let wanted = startable - idle
        let room = min(limits.running - active - idle, limits.threads - threads)
        return max(0, min(wanted, room))
    }

    private func notBefore(_ entry: Entry) -> ContinuousClock.Instant? {
        entry.lastStart.map { $0 + limits.minimumInterval }
    }

    private func isStartable(_ entry: Entry, at now: ContinuousClock.Instant) -> Bool {
        guard !entry.next.isEmpty, entry.runningSince == nil else { return false }
        return notBefore(entry).map { $0 <= now } ?? true
    }

    /// Whether a thread may start one more resolution: fewer than `running` are
    /// in flight and not stalled.
    private func mayStartAnother(at now: ContinuousClock.Instant) -> Bool {
        let active = entries.values.filter { entry in
            guard let since = entry.runningSince else { return false }
            return now - since < limits.stallAfter
        }.count
        return active < limits.running
    }

    private mutating func forgetIdleNames(at now: ContinuousClock.Instant) {
        guard entries.count > limits.rememberedNames else { return }
        let stale = entries.filter { _, entry in
            entry.isIdle && (entry.lastStart.map { now - $0 > limits.minimumInterval } ?? true)
        }
        for key in stale.keys.prefix(entries.count - limits.rememberedNames) { entries[key] = nil }
    }
}
