import Dispatch
import Glibc
@_spi(Testing) import ReachabilityBase
@_spi(Testing) import ReachabilitySystem

/// What one resolution of a name gave.
enum Resolution: Sendable, Equatable {
    /// The addresses (IPv4 and IPv6, deduplicated, in the resolver's order).
    case addresses([IPAddress])
    /// The name has no usable answer: NXDOMAIN, no data, or no server answered
    /// (`EAI_NONAME`, `EAI_NODATA`, `EAI_AGAIN`, `EAI_FAIL`, `EAI_ADDRFAMILY`).
    case failed(code: Int32)

    var addresses: [IPAddress] {
        if case .addresses(let list) = self { return list }
        return []
    }

    /// Whether two answers hold the same addresses, in whatever order (a
    /// round-robin name answers the same set in turns).
    func sameAnswer(as other: Resolution?) -> Bool {
        guard let other else { return false }
        switch (self, other) {
        case (.addresses(let left), .addresses(let right)): return Set(left) == Set(right)
        case (.failed, .failed): return true
        default: return false
        }
    }
}

/// Resolves hostnames with the system resolver (getaddrinfo: /etc/hosts,
/// resolv.conf, nsswitch) on worker threads of its own, so that no caller ever
/// waits on DNS. When to resolve what is ``ResolverSchedule``'s decision: one
/// resolution per name at a time, at most one start per second per name, quick
/// names before slow ones, and a stalled name never holds up the others; a name
/// in the hosts file (``LocalNames``) has a lane of its own, so no number of
/// stalled names delays it. Workers start on demand and exit when nothing is left:
/// no idle threads.
///
/// Descriptors are budgeted: a worker starts only while the process has room for
/// its lookup's descriptors (``descriptorsPerLookup`` each, counting the workers
/// alive) beyond ``reservedDescriptors`` kept free for the runtime (libdispatch
/// opens `/proc/TID/stat` for its pool and traps when it can't) and the monitor.
/// Past that, names wait for a worker to finish; with none running they fail with
/// EMFILE and are retried as any failed resolution is.
///
/// For another namespace each lookup runs on a short-lived thread inside it
/// (held by descriptor, so it is the namespace the monitor's sockets are in), and
/// for a named one (`/run/netns/NAME`) with `/etc/netns/NAME/*` over `/etc`, as
/// `ip netns exec NAME` arranges. Workers themselves never change namespace.
///
/// The pool is process-wide, and so are its worker threads (made through the live
/// system calls); each resolution is made through the system calls of the
/// environment that asked for it, which are part of what tells requests apart.
final class ResolverPool: Sendable {
    typealias Outcome = Result<Resolution, ReachabilityError>
    typealias Completion = @Sendable (Outcome) -> Void
    typealias Lookup = @Sendable (_ name: String, _ namespace: NetworkNamespace?, _ systemCalls: SystemCalls) -> Outcome
    typealias Key = ResolverSchedule<Requester>.Key

    /// Who asked: requests of one requester for one name are answered once per resolution.
    struct Requester: Hashable, Sendable {
        var id: ObjectIdentifier
    }

    private struct Waiting: Hashable {
        var key: Key
        var requester: Requester
    }

    private struct State {
        var schedule: ResolverSchedule<Requester>
        var completions: [Waiting: Completion] = [:]
        var namespaces: [Key: NetworkNamespace] = [:]
        /// When the pending timer fires; nil when none is pending.
        var timerDue: ContinuousClock.Instant?
        var resolutions = 0
    }

    /// The pool every `Reachability` uses.
    static let shared = ResolverPool()

    /// Starts a worker thread running the closure (tests start them when they choose).
    typealias Spawn = @Sendable (_ work: @escaping @Sendable () -> Void) throws(ReachabilityError) -> Void

    private let state: LockedValue<State>
    private let lookup: Lookup
    private let spawnThread: Spawn
    /// What the schedule is told the time is, and what its timer and a failed
    /// resolution's retry wait on (tests advance their own).
    let clock: any TimerClock
    private let timers = DispatchQueue(label: "reachability.resolver-timer")
    private let localNames = LocalNames()
    private let budget: DescriptorBudget

    /// Descriptors kept free for the runtime and the monitor.
    static let reservedDescriptors = 32
    /// Descriptors one getaddrinfo may hold at once (its socket, a file it reads).
    static let descriptorsPerLookup = 2

    /// The descriptors a worker could use now: the soft limit less those open and
    /// the reserve; nil when unknown (no limit applied).
    typealias DescriptorBudget = @Sendable () -> Int?

    init(
        limits: ResolverSchedule<Requester>.Limits = .init(), spawn: @escaping Spawn = ResolverPool.detachedThread,
        lookup: @escaping Lookup = ResolverPool.systemLookup,
        budget: @escaping DescriptorBudget = ResolverPool.liveBudget, clock: any TimerClock = ContinuousClock()
    ) {
        state = LockedValue(State(schedule: ResolverSchedule(limits: limits)))
        self.clock = clock
        self.spawnThread = spawn
        self.lookup = lookup
        self.budget = budget
    }

    /// The process's own budget, read through the live system calls.
    static let liveBudget: DescriptorBudget = {
        guard let limit = SystemCalls.live.descriptorLimit(), let open = SystemCalls.live.openDescriptorCount() else {
            return nil
        }
        return limit - open - reservedDescriptors
    }

    /// A detached thread named `reachability-dns` (the pool's own: the live system).
    static let detachedThread: Spawn = { work throws(ReachabilityError) in
        try JoinableThread.detached(name: "reachability-dns", systemCalls: .live, work)
    }

    /// Whether a resolution `requester` asked for has not answered yet.
    func isWaiting(_ requester: Requester) -> Bool {
        state.withLock { $0.completions.keys.contains { $0.requester == requester } }
    }

    /// Resolutions finished so far (for tests and diagnostics).
    var resolutionCount: Int { state.withLock { $0.resolutions } }

    /// Asks for a resolution of `name` in `namespace` (nil: the process's own),
    /// made through `systemCalls` (the requesting environment's), that starts from
    /// now on; `completion` runs on a worker thread with its outcome. Asking again
    /// before that resolution starts changes nothing; asking while one runs asks for
    /// the next.
    func resolve(
        _ name: String, in namespace: NetworkNamespace?, systemCalls: SystemCalls, for requester: Requester,
        completion: @escaping Completion
    ) {
        let key = Key(namespace: namespace?.identity, name: name, systemCalls: systemCalls)
        // File reads (cached): before the lock.
        let local = localNames.contains(name, namespace: namespace, systemCalls: systemCalls)
        let start = state.withLock { state -> Int in
            state.completions[Waiting(key: key, requester: requester)] = completion
            if let namespace, state.namespaces[key] == nil { state.namespaces[key] = namespace }
            return state.schedule.request(key, by: requester, at: clock.now, local: local)
        }
        spawn(start)
        armTimer()
    }

    // MARK: Workers

    private func spawn(_ count: Int) {
        guard count > 0 else { return }
        // The workers alive before these (their lookups' descriptors may not be open
        // yet, so they are counted against the budget whether or not they are).
        let alive = state.withLock { $0.schedule.threads } - count
        var room = budget().map { $0 / Self.descriptorsPerLookup - alive } ?? .max
        for _ in 0..<count {
            do throws(ReachabilityError) {
                guard room > 0 else {
                    throw ReachabilityError(
                        .systemCall,
                        "too few free descriptors for another resolver thread (\(Self.reservedDescriptors) are kept free)",
                        errno: EMFILE)
                }
                room -= 1
                try spawnThread { [self] in work() }
            } catch {
                // No thread: if nothing else runs, whoever waits would wait forever; fail them.
                let failed = state.withLock { state -> [(Completion, Key)] in
                    let failed = state.schedule.threadFailedToStart(at: clock.now)
                    var completions: [(Completion, Key)] = []
                    for (key, requesters) in failed {
                        for requester in requesters {
                            let waiting = Waiting(key: key, requester: requester)
                            if let completion = state.completions[waiting] { completions.append((completion, key)) }
                            if !state.schedule.isWaiting(requester, for: key) { state.completions[waiting] = nil }
                        }
                    }
                    return completions
                }
                for (completion, key) in failed { completion(.failure(error.resolving(key.name))) }
            }
        }
    }

    private func work() {
        while true {
            let job = state.withLock { state -> (Key, NetworkNamespace?)? in
                guard let key = state.schedule.take(at: clock.now) else { return nil }
                return (key, state.namespaces[key])
            }
            guard let (key, namespace) = job else {
                armTimer()
                return
            }
            // This resolution turns stalled in a moment if it gets no answer: others waiting
            // then start beside it (the timer is what notices).
            armTimer()
            let outcome = lookup(key.name, namespace, key.systemCalls)
            let (completions, start) = state.withLock { state -> ([Completion], Int) in
                state.resolutions += 1
                let (requesters, start) = state.schedule.finish(key, at: clock.now)
                var completions: [Completion] = []
                for requester in requesters {
                    let waiting = Waiting(key: key, requester: requester)
                    if let completion = state.completions[waiting] { completions.append(completion) }
                    if !state.schedule.isWaiting(requester, for: key) { state.completions[waiting] = nil }
                }
                if !state.schedule.hasWaiters(key) { state.namespaces[key] = nil }
                return (completions, start)
            }
            spawn(start)
            for completion in completions { completion(outcome) }
        }
    }

    /// Arms a one-shot timer for the schedule's next check (a name becoming
    /// startable, or a running resolution turning stalled); none while nothing waits.
    private func armTimer() {
        let due = state.withLock { state -> ContinuousClock.Instant? in
            guard let next = state.schedule.nextCheck(at: clock.now) else { return nil }
            if let pending = state.timerDue, pending <= next { return nil }
            state.timerDue = next
            return next
        }
        guard let due else { return }
        clock.schedule(after: max(.zero, due - clock.now) + .milliseconds(1), on: timers) { [self] in
            let start = state.withLock { state -> Int in
                // This timer is over, even if it fired a little before `due` by this
                // clock (Dispatch's clock is another one): the next armTimer() arms
                // again for what is still ahead. Comparing with `now` would leave
                // `timerDue` set with no timer behind it after such an early firing.
                if state.timerDue == due { state.timerDue = nil }
                return state.schedule.startWorkers(at: clock.now)
            }
            spawn(start)
            armTimer()
        }
    }

    // MARK: The system resolver

    /// getaddrinfo(3) for `name` through `systemCalls`, inside `namespace` when
    /// one is given (entered through the system calls it was opened with).
    static let systemLookup: Lookup = { name, namespace, systemCalls in
        do throws(ReachabilityError) {
            return .success(
                try JoinableThread.inNamespace(namespace, overlayEtc: true) { () throws(ReachabilityError) in
                    try ResolverPool.getaddrinfo(name, systemCalls: systemCalls)
                })
        } catch {
            return .failure(error)
        }
    }

    /// The most addresses kept of one name's answer, in the resolver's order: more
    /// than any real round-robin name has, and what each change's evaluation (one
    /// route lookup per address) and a probe's connection attempts can afford. A
    /// hostile answer (a hosts file or DNS server giving thousands) is cut here.
    static let addressLimit = 64

    /// getaddrinfo(3) for both families; the first ``addressLimit`` addresses,
    /// deduplicated in order, IPv4-mapped IPv6 addresses read as IPv4. "No such
    /// name" and "no answer" are a ``Resolution/failed(code:)``; a failure of the
    /// resolver itself (out of descriptors or memory) is thrown: it says nothing
    /// about the name.
    static func getaddrinfo(_ name: String, systemCalls: SystemCalls) throws(ReachabilityError) -> Resolution {
        let answer = systemCalls.getaddrinfo(name, family: AF_UNSPEC, socketType: Int32(SOCK_STREAM.rawValue)) { list in
            var addresses: [IPAddress] = []
            var seen: Set<IPAddress> = []
            var node = list
            while let entry = node?.pointee, addresses.count < addressLimit {
                if let sockaddr = entry.ai_addr,
                    let address = IPAddress(sockaddr: UnsafeRawPointer(sockaddr), length: Int(entry.ai_addrlen))?
                        .unmapped,
                    seen.insert(address).inserted
                {
                    addresses.append(address)
                }
                node = UnsafePointer(entry.ai_next)
            }
            return addresses
        }
        switch answer {
        case .success(let addresses): return .addresses(addresses)
        case .failure(let failure): return try Self.resolution(failing: failure, name: name)
        }
    }

    /// What a failed getaddrinfo says: no answer about the name, or (thrown) a
    /// failure of the resolver itself.
    private static func resolution(failing failure: SystemCalls.AddressInfoFailure, name: String)
        throws(ReachabilityError) -> Resolution
    {
        let (rc, error) = (failure.code, failure.errno)
        // glibc reports a resolver that could not open a file or socket (out of
        // descriptors or memory) as EAI_NONAME, "Name or service not known", with
        // errno set: that is no answer about the name.
        if SystemError.resourceErrors.contains(error) {
            throw ReachabilityError(
                .systemCall, "cannot resolve \(quotedForMessage(name)): getaddrinfo", errno: error)
        }
        switch rc {
        case EAI_NONAME, EAI_AGAIN, EAI_FAIL, Self.eaiNoData, Self.eaiAddressFamily:
            return .failed(code: rc)
        case EAI_SYSTEM:
            throw ReachabilityError(
                .systemCall, "cannot resolve \(quotedForMessage(name)): getaddrinfo", errno: error)
        case EAI_MEMORY:
            throw ReachabilityError(
                .systemCall, "cannot resolve \(quotedForMessage(name)): getaddrinfo", errno: ENOMEM)
        default:
            let reason = gai_strerror(rc).map { String(cString: $0) } ?? "error \(rc)"
            throw ReachabilityError(.systemCall, "cannot resolve \(quotedForMessage(name)): getaddrinfo: \(reason)")
        }
    }

    /// glibc's EAI_NODATA and EAI_ADDRFAMILY (GNU extensions the importer hides).
    static let eaiNoData: Int32 = -5
    static let eaiAddressFamily: Int32 = -9
}

extension ReachabilityError {
    /// This error as the reason `name` could not be resolved.
    func resolving(_ name: String) -> ReachabilityError {
        ReachabilityError(code, "cannot resolve \(quotedForMessage(name)): \(message)", errno: errno)
    }
}

extension IPAddress {
    /// Reads a `sockaddr_in` or `sockaddr_in6` of `length` bytes; nil for anything else.
    init?(sockaddr raw: UnsafeRawPointer, length: Int) {
        guard length >= MemoryLayout<sa_family_t>.size else { return nil }
        switch Int32(raw.loadUnaligned(as: sa_family_t.self)) {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            let address = raw.loadUnaligned(as: sockaddr_in.self)
            self.init(validBytes: withUnsafeBytes(of: address.sin_addr) { Array($0) }, scopeID: 0)
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            let address = raw.loadUnaligned(as: sockaddr_in6.self)
            self.init(validBytes: withUnsafeBytes(of: address.sin6_addr) { Array($0) }, scopeID: address.sin6_scope_id)
        default:
            return nil
        }
    }
}
